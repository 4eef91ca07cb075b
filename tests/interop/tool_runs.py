"""Many runs of Kafka's kafka-storage, kafka-features and kafka-metadata-quorum in one JVM
(tests/interop/java/tools/ToolRuns.java, compiled by javac against the Kafka jars), and the same
runs of ours in-process, so a test can compare dozens of invocations text for text.

    runs = KafkaToolRuns(tmp_dir)
    [kafka] = runs.run([("storage", "version-mapping", "--release-version", "3.9")])
    ours = run_ours("storage", "version-mapping", "--release-version", "3.9")
    assert kafka == ours          # ToolResult(status, out, err)

    with runs.session(log4j=quiet_properties) as kafka:    # one JVM, one invocation at a time
        before = kafka.call("metadata-quorum", "--bootstrap-controller", address, "describe", "--status")

    run_in_shared_jvm("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", servers, "--list")

``run_in_shared_jvm`` runs any tool's main class (``ToolRuns`` "main CLASS ARGS") in one JVM kept for the
whole pytest process, instead of a JVM start (1-4 s of CPU) per run; kafka_procs.run_kafka_tool uses it
for the tools of kafka_procs.SHARED_JVM_TOOLS.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import os
import selectors
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.interop import kafka_dist

SOURCE = Path(__file__).parent / "java" / "tools" / "ToolRuns.java"
SHARED_LOG4J = Path(__file__).parent / "kafka" / "log4j2-shared-tools.properties"


@dataclass(frozen=True)
class ToolResult:
    status: int
    out: str
    err: str

    def replace(self, old: str, new: str) -> "ToolResult":
        return ToolResult(self.status, self.out.replace(old, new), self.err.replace(old, new))


class ToolRunsUnavailable(RuntimeError):
    pass


_compiled: dict[str, Path] = {}          # ToolRuns.java's sha256 -> its classes, once per pytest process


def _compiled_classes() -> Path:
    """ToolRuns.java compiled once per process (javac takes ~3 s of CPU) into a temporary directory."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    if digest in _compiled:
        return _compiled[digest]
    javac = shutil.which("javac")
    if javac is None:
        raise ToolRunsUnavailable("javac is not on PATH (a JDK 17 compiles tests/interop/java/tools)")
    classes = Path(tempfile.mkdtemp(prefix="kafkawire-tool-runs-"))
    atexit.register(shutil.rmtree, classes, ignore_errors=True)
    result = subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", kafka_dist.classpath(), str(SOURCE)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise ToolRunsUnavailable(f"javac failed ({result.returncode}):\n{(result.stdout + result.stderr)[-3000:]}")
    _compiled[digest] = classes
    return classes


class KafkaToolRuns:
    """ToolRuns.java, compiled (once per process; ``work_dir`` is no longer needed)."""

    def __init__(self, work_dir: Path | None = None):
        self.classes = _compiled_classes()

    def command(self, log4j: Path = kafka_dist.LOG4J_TOOLS) -> list[str]:
        command = kafka_dist.java_command("ToolRuns", log4j=log4j)
        # the jars first: a classpath that starts as the class-data-sharing archive's does uses it
        command[command.index("-cp") + 1] = f"{kafka_dist.classpath()}:{self.classes}"
        return command

    def run(self, invocations: list[tuple[str, ...]], timeout: float = 300) -> list[ToolResult]:
        """Each invocation is ("storage" | "features" | "metadata-quorum", *arguments); one
        result per invocation."""
        stdin = "".join(map(_invocation_line, invocations)).encode()
        result = subprocess.run(self.command(), input=stdin, capture_output=True, timeout=timeout)
        if result.returncode != 0:
            raise ToolRunsUnavailable(f"ToolRuns exited {result.returncode}:\n{result.stderr[-3000:].decode(errors='replace')}")
        return _parse(result.stdout, len(invocations))

    def session(self, log4j: Path = kafka_dist.LOG4J_TOOLS) -> "KafkaToolSession":
        return KafkaToolSession(self.command(log4j))


def _invocation_line(words: tuple[str, ...]) -> str:
    words = tuple(map(str, words))
    if any("\t" in w or "\n" in w for w in words):
        raise ValueError(f"an argument holds a tab or newline: {words!r}")
    return "\t".join(words) + "\n"


class KafkaToolSession:
    """One ToolRuns JVM kept running: ``call`` sends one invocation and waits for its answer, so a
    test can run Kafka's tool and then ours against the same state, many times, for one JVM
    start. What the JVM itself writes on stderr outside the tools' runs is dropped."""

    def __init__(self, command: list[str]):
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self._buffer = bytearray()        # appended in place: a dump's output can be tens of MB

    def call(self, *words: str, timeout: float = 120) -> ToolResult:
        if self.process.poll() is not None:
            raise ToolRunsUnavailable(f"ToolRuns exited {self.process.returncode}")
        self.process.stdin.write(_invocation_line(words).encode())
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        header = self._read_until(lambda: self._buffer.find(b"\n") + 1 or None, deadline, words)
        fields = dict(item.split("=") for item in header[:-1].decode().split())
        out_len, err_len = int(fields["out"]), int(fields["err"])
        body = self._read_until(lambda: out_len + err_len if len(self._buffer) >= out_len + err_len else None,
                                deadline, words)
        return ToolResult(int(fields["exit"]), body[:out_len].decode(), body[out_len:].decode())

    def _read_until(self, complete, deadline: float, words) -> bytes:
        """The first ``complete()`` bytes of the answer once ``complete()`` is not None."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while (size := complete()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ToolRunsUnavailable(f"ToolRuns did not answer {' '.join(words)} in time")
                if selector.select(remaining):
                    chunk = os.read(self.process.stdout.fileno(), 1 << 20)
                    if not chunk:
                        raise ToolRunsUnavailable(f"ToolRuns exited while running {' '.join(words)}")
                    self._buffer += chunk
        taken = bytes(self._buffer[:size])
        del self._buffer[:size]
        return taken

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "KafkaToolSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _SharedJvm:
    """One KafkaToolSession for the whole process, started at its first use, again when the process
    has moved to another directory (a tool's relative paths resolve in the JVM's) or after a run
    that timed out; closed at exit. One invocation at a time."""

    def __init__(self):
        self.lock = threading.Lock()
        self.session: KafkaToolSession | None = None
        self.cwd: str | None = None

    def run(self, main_class: str, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess | None:
        """The tool's result, or None when ToolRuns cannot be compiled."""
        with self.lock:
            if self.session is not None and (self.session.process.poll() is not None or os.getcwd() != self.cwd):
                self.session.close()
                self.session = None
            if self.session is None:
                try:
                    self.session = KafkaToolRuns().session(log4j=SHARED_LOG4J)
                except ToolRunsUnavailable:      # no javac (a JRE only): every tool in a JVM of its own
                    return None
                self.cwd = os.getcwd()
            try:
                result = self.session.call("main", main_class, *args, timeout=timeout)
            except ToolRunsUnavailable:
                self.session.process.kill()          # a tool stuck in the JVM: the next run starts another
                self.session.process.wait()
                raise
        return subprocess.CompletedProcess([main_class, *args], result.status, result.out, result.err)


_shared_jvm = _SharedJvm()
atexit.register(lambda: _shared_jvm.session and _shared_jvm.session.close())


def run_in_shared_jvm(main_class: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess | None:
    """Kafka's tool ``main_class`` with ``args`` in the process's shared ToolRuns JVM: its exit status
    (0 when main returns, else what it passes to Exit.exit), stdout and stderr (its log lines too:
    log4j2-shared-tools.properties follows System.setErr). None if javac is missing (run it in a JVM
    of its own then); ToolRunsUnavailable if it did not end within ``timeout``."""
    return _shared_jvm.run(main_class, tuple(map(str, args)), timeout)


def _parse(data: bytes, expected: int) -> list[ToolResult]:
    results, pos = [], 0
    while pos < len(data):
        end = data.index(b"\n", pos)
        fields = dict(item.split("=") for item in data[pos:end].decode().split())
        out_len, err_len = int(fields["out"]), int(fields["err"])
        out = data[end + 1:end + 1 + out_len].decode()
        err = data[end + 1 + out_len:end + 1 + out_len + err_len].decode()
        results.append(ToolResult(int(fields["exit"]), out, err))
        pos = end + 1 + out_len + err_len
    if len(results) != expected:
        raise ToolRunsUnavailable(f"ToolRuns answered {len(results)} of {expected} invocations")
    return results


def run_ours(tool: str, *args: str) -> ToolResult:
    """``kafkawire TOOL ARGS`` in this process: its exit status, stdout and stderr."""
    from kafkawire.tools.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([tool, *map(str, args)])
        except SystemExit as exc:          # an argparse refusal
            status = exc.code if isinstance(exc.code, int) else 1
    return ToolResult(status, out.getvalue(), err.getvalue())
