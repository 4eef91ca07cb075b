"""A small port of cockroachdb/datadriven (etcd-io/raft's interaction tests) for pytest.

A test file is a sequence of cases::

    # comments and blank lines between cases are kept
    command arg key=value key=(a,b)
    ----
    expected output

The expected output ends at the first blank line. Output that contains blank lines is
written between two ``----`` lines and ends at a line ``----`` followed by ``----``. With
``pytest --rewrite`` the expected outputs are regenerated from what the code does now;
review the diff before committing it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Case:
    line: int
    command: str
    args: list[str]
    kwargs: dict[str, str]
    input: list[str] = field(default_factory=list)
    expected: str = ""
    preamble: list[str] = field(default_factory=list)   # comments and blank lines before it

    @property
    def text(self) -> str:
        return " ".join([self.command, *self.args, *(f"{k}={v}" for k, v in self.kwargs.items())])


_ARG = re.compile(r"(\w[\w-]*)=(\([^)]*\)|\S+)|(\S+)")


def parse_command(line: str) -> tuple[str, list[str], dict[str, str]]:
    parts = _ARG.findall(line)
    if not parts:
        raise ValueError(f"empty command line: {line!r}")
    command = parts[0][2] or parts[0][0]
    args, kwargs = [], {}
    for key, value, bare in parts[1:]:
        if bare:
            args.append(bare)
        else:
            kwargs[key] = value
    return command, args, kwargs


def parse(path: Path) -> tuple[list[Case], list[str]]:
    lines = path.read_text().split("\n")
    cases, preamble, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#"):
            preamble.append(line)
            i += 1
            continue
        command, args, kwargs = parse_command(line)
        case = Case(i + 1, command, args, kwargs, preamble=preamble)
        preamble = []
        i += 1
        while i < len(lines) and lines[i] != "----":
            case.input.append(lines[i])
            i += 1
        if i >= len(lines):
            raise ValueError(f"{path}:{case.line}: command {line!r} has no ---- separator")
        i += 1
        out = []
        if i < len(lines) and lines[i] == "----":   # the blank-line-friendly form
            i += 1
            while i < len(lines) and not (lines[i] == "----" and i + 1 < len(lines) and lines[i + 1] == "----"):
                out.append(lines[i])
                i += 1
            i += 2
        else:
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
        case.expected = "\n".join(out)
        cases.append(case)
    return cases, preamble


def render(cases: list[Case], trailer: list[str]) -> str:
    out = []
    for case in cases:
        out.extend(case.preamble)
        out.append(case.text)
        out.extend(case.input)
        out.append("----")
        if any(not line.strip() for line in case.expected.split("\n")) and case.expected:
            out.append("----")
            out.extend(case.expected.split("\n"))
            out.append("----")
            out.append("----")
        else:
            out.extend(case.expected.split("\n") if case.expected else [])
    out.extend(trailer)
    text = "\n".join(out)
    return text if text.endswith("\n") else text + "\n"


def tuple_arg(value: str) -> list[str]:
    """``(1,2,3)`` -> ["1", "2", "3"]; a bare value -> [value]."""
    value = value.strip()
    if value.startswith("(") and value.endswith(")"):
        inner = value[1:-1].strip()
        return [v.strip() for v in inner.split(",") if v.strip()] if inner else []
    return [value]


__all__ = ["Case", "parse", "render", "tuple_arg"]
