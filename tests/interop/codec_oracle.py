"""Kafka 4.3.1's own serializer as a long-lived JVM the codec tests talk to, line by line.

The Java side is tests/interop/java/codec/ (CodecVectors.java, RecordBatches.java): compiled by
``javac`` into a temporary folder against the jars of ``kafka_dist.classpath()``, run once per
test module, fed one JSON request per line and answering one JSON line each. Every answer is
awaited for a bounded time; the JVM is killed by its pid when the module ends.
"""
from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from pathlib import Path

from tests.interop import kafka_dist

JAVA_SOURCES = Path(__file__).resolve().parent / "java" / "codec"
ANSWER_TIMEOUT = 60.0     # seconds for one answer; the first ones include class loading


class OracleError(RuntimeError):
    """The Java side could not be built or started, died, or did not answer in time."""


def compile_sources(out_dir: Path) -> Path:
    javac = shutil.which("javac")
    if javac is None:
        raise OracleError("javac is not on PATH (a JDK 17 compiles tests/interop/java/codec)")
    sources = sorted(str(p) for p in JAVA_SOURCES.glob("*.java"))
    result = subprocess.run([javac, "-nowarn", "-d", str(out_dir), "-cp", kafka_dist.classpath(), *sources],
                            capture_output=True, text=True, timeout=180)
    if result.returncode != 0:
        raise OracleError(f"javac failed ({result.returncode}):\n{(result.stdout + result.stderr)[-4000:]}")
    return out_dir


class KafkaCodecOracle:
    """One JVM running CodecVectors; ``ask({"op": ...})`` returns its answer as a dict.

    Every request and its answer (the test vectors: our hex and JSON, Kafka's) are written, a
    line each, to ``transcript_path``."""

    def __init__(self, classes_dir: Path, log_path: Path, transcript_path: Path):
        self.log_path = log_path
        self.transcript_path = transcript_path
        self._transcript = open(transcript_path, "w", encoding="utf-8")
        self._log = open(log_path, "wb")
        command = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   f"-Dlog4j2.configurationFile={kafka_dist.LOG4J_TOOLS}",
                   "-cp", f"{classes_dir}:{kafka_dist.classpath()}", "CodecVectors"]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._log, bufsize=1, text=True, encoding="utf-8")
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        ready = self._next_line()
        if json.loads(ready) != {"ready": True}:
            raise OracleError(f"unexpected first line from CodecVectors: {ready[:200]!r}")
        self.requests = 0

    def _pump(self):
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _next_line(self) -> str:
        try:
            line = self._lines.get(timeout=ANSWER_TIMEOUT)
        except queue.Empty:
            raise OracleError(f"CodecVectors gave no answer within {ANSWER_TIMEOUT:.0f} s") from None
        if line is None:
            raise OracleError(f"CodecVectors exited ({self.process.poll()}); stderr: {self.stderr_tail()}")
        return line

    def stderr_tail(self, size: int = 3000) -> str:
        self._log.flush()
        return self.log_path.read_bytes()[-size:].decode("utf-8", "replace")

    def ask(self, request: dict) -> dict:
        self.requests += 1
        line = json.dumps(request)
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self._next_line()
        self._transcript.write(f"{line}\n{answer.rstrip()}\n")
        return json.loads(answer)

    def close(self):
        if self.process.poll() is None:
            self.process.kill()           # by its own pid: Popen.kill signals exactly this process
        self.process.wait(timeout=10)
        self._log.close()
        self._transcript.close()


class Mismatch(AssertionError):
    """One check of one test vector failed; the text says which and shows both sides."""


def expect(condition: bool, text) -> None:
    """Raise Mismatch with ``text`` (a string, or a callable making it only when needed)."""
    if not condition:
        raise Mismatch(text() if callable(text) else text)


def hex_diff(ours: bytes, theirs: bytes) -> str:
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return (f"first difference at byte {at} (ours {len(ours)} bytes, Kafka {len(theirs)}): "
            f"ours ...{ours[max(0, at - 8):at + 16].hex(' ')}, Kafka ...{theirs[max(0, at - 8):at + 16].hex(' ')}")


def ask(oracle: KafkaCodecOracle, request: dict, what: str) -> dict:
    """The oracle's answer; a Mismatch saying it could not ``what`` if Kafka threw."""
    answer = oracle.ask(request)
    expect(answer["ok"], lambda: f"Kafka could not {what}: {answer.get('error')}")
    return answer
