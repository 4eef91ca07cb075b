"""Helpers for the dump-log tests: run the command in-process, find the reference files."""
from __future__ import annotations

from pathlib import Path

from kafkawire.tools.cli import main

REPO = Path(__file__).resolve().parents[2]
KRAFT_DATA = REPO.parent / "shared" / "reference" / "kraft-data"


def dump(capsys, *argv) -> tuple[int, str, str]:
    """Run ``kafkawire dump-log ARGV`` and return (exit status, stdout, stderr)."""
    status = main(["dump-log", *map(str, argv)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def data_files(pattern: str = "*") -> list[Path]:
    """Every non-empty .log / .checkpoint under ../shared/reference/kraft-data."""
    if not KRAFT_DATA.is_dir():
        return []
    return [p for p in sorted(KRAFT_DATA.rglob(pattern)) if p.is_file() and p.stat().st_size > 0
            and (p.suffix == ".log" or p.name.endswith(".checkpoint"))
            and not p.name.endswith("-checkpoint")]


def is_metadata_file(path: Path) -> bool:
    return path.parent.name == "__cluster_metadata-0" or path.name == "bootstrap.checkpoint"
