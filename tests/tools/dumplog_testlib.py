"""Helpers for the dump-log tests: run the command in-process, find the reference files."""
from __future__ import annotations

from pathlib import Path

from kafkawire.tools.cli import main
from tests.conftest import REFERENCE as SHARED_REFERENCE

REPO = Path(__file__).resolve().parents[2]
KRAFT_DATA = SHARED_REFERENCE / "kraft-data"


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


# Directory names D whose paths P/D/00000000000000000000.log have Java String.hashCodes at fixed
# distances from that of P/gapaaaa/..., whatever P is (equal length, so P's share cancels out;
# found by a meet-in-the-middle search over String.hashCode). HashMap's bucket in a table of 16
# is (h ^ h >>> 16) & 15, so:
SAME_HASH = ("gapaaaa", "gc2aaaa", "6tirmgw", "6tirmi9")    # distance 0: one bucket in any table
PLUS_2_TO_THE_20 = ("ivuqcmi", "ivw3cmi", "ix7qcmi", "ix93cmi")  # bits 0-19 kept: that bucket of 16, not of 32
PLUS_1_TO_8 = ("a3xrrxg", "axcncbu", "roognvp", "fewebur", "mgbtpxe", "ewkgcpk", "cctmtau", "szagb7p")
# Thirteen files, five of them (three at distance 0, two at 2**20) in one bucket of 16,
# interleaved among the others in the command-line order.
COLLIDING_DIRECTORIES = ("gapaaaa", *PLUS_1_TO_8[:3], "ivuqcmi", "gc2aaaa", *PLUS_1_TO_8[3:6], "ivw3cmi",
                         *PLUS_1_TO_8[6:], "6tirmgw")
# Nine files, eight of them in one bucket of 16 (alternately at distance 0 and 2**20): the
# eighth makes treeifyBin double the table, which splits them in two.
TREEIFYING_DIRECTORIES = (*(d for pair in zip(SAME_HASH, PLUS_2_TO_THE_20) for d in pair), PLUS_1_TO_8[0])


def gapped_logs(root: Path, directories=COLLIDING_DIRECTORIES) -> list[Path]:
    """One segment per directory under ``root``, offsets 0 then 5 (a gap --deep-iteration reports
    as ``0 is followed by 5``); the absolute paths, in ``directories``' order."""
    from kafkawire.records import build_batch
    data = build_batch([(None, b"a")], base_offset=0) + build_batch([(None, b"b")], base_offset=5)
    paths = []
    for name in directories:
        (root / name).mkdir(parents=True)
        path = (root / name / "00000000000000000000.log").absolute()
        path.write_bytes(data)
        paths.append(path)
    return paths


def non_consecutive_files(stderr: str) -> list[str]:
    """The files of the ``Non-consecutive offsets in <file>`` reports, in the order printed."""
    prefix = "Non-consecutive offsets in "
    return [line[len(prefix):] for line in stderr.splitlines() if line.startswith(prefix)]
