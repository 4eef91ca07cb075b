"""Many runs of Kafka's kafka-storage and kafka-features in one JVM (tests/interop/java/tools/
ToolRuns.java, compiled by javac against the Kafka jars), and the same runs of ours in-process,
so a test can compare dozens of invocations text for text.

    runs = KafkaToolRuns(tmp_dir)
    [kafka] = runs.run([("storage", "version-mapping", "--release-version", "3.9")])
    ours = run_ours("storage", "version-mapping", "--release-version", "3.9")
    assert kafka == ours          # ToolResult(status, out, err)
"""
from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.interop import kafka_dist

SOURCE = Path(__file__).parent / "java" / "tools" / "ToolRuns.java"


@dataclass(frozen=True)
class ToolResult:
    status: int
    out: str
    err: str

    def replace(self, old: str, new: str) -> "ToolResult":
        return ToolResult(self.status, self.out.replace(old, new), self.err.replace(old, new))


class ToolRunsUnavailable(RuntimeError):
    pass


class KafkaToolRuns:
    def __init__(self, work_dir: Path):
        javac = shutil.which("javac")
        if javac is None:
            raise ToolRunsUnavailable("javac is not on PATH (a JDK 17 compiles tests/interop/java/tools)")
        self.classes = Path(work_dir) / "tool-runs-classes"
        self.classes.mkdir(parents=True, exist_ok=True)
        result = subprocess.run([javac, "-nowarn", "-d", str(self.classes), "-cp", kafka_dist.classpath(),
                                 str(SOURCE)], capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise ToolRunsUnavailable(f"javac failed ({result.returncode}):\n{(result.stdout + result.stderr)[-3000:]}")

    def run(self, invocations: list[tuple[str, ...]], timeout: float = 300) -> list[ToolResult]:
        """Each invocation is ("storage" | "features", *arguments); one result per invocation."""
        for words in invocations:
            if any("\t" in w or "\n" in w for w in words):
                raise ValueError(f"an argument holds a tab or newline: {words!r}")
        stdin = "".join("\t".join(map(str, words)) + "\n" for words in invocations).encode()
        command = kafka_dist.java_command("ToolRuns")
        command[command.index("-cp") + 1] = f"{self.classes}:{kafka_dist.classpath()}"
        result = subprocess.run(command, input=stdin, capture_output=True, timeout=timeout)
        if result.returncode != 0:
            raise ToolRunsUnavailable(f"ToolRuns exited {result.returncode}:\n{result.stderr[-3000:].decode(errors='replace')}")
        return _parse(result.stdout, len(invocations))


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
