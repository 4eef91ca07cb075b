"""A ``.timeindex`` whose ``.index`` is missing, dumped by Kafka 4.3.1's DumpLogSegments and by
ours (issue 20, item 9).

Kafka's tool opens the offset index before it reads the time index, in every mode, and a
missing one kills it after ``Dumping <file>`` (IllegalArgumentException: Invalid max index size:
-1, exit 1; it also leaves an empty ``.index`` behind). Ours prints the same stdout, one
``Error:`` line naming the missing file on stderr (the README's documented form of a Kafka
exception) and exits 1; it used to say ``passed sanity check.``. Each tool gets its own copy of
the directory, since Kafka's run creates the file.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafkawire.storage import LogSegment
from tests.interop.kafka_procs import DUMP_LOG_SEGMENTS
from tests.interop.test_dump_log_vs_kafka import _topic_batches

REPO = Path(__file__).resolve().parents[2]
SEGMENT = "00000000000000000000"


def segment_without_offset_index(directory: Path) -> Path:
    directory.mkdir(parents=True)
    segment = LogSegment(directory, 0, index_interval_bytes=1, create=True)
    for batch in _topic_batches():
        segment.append(batch)
    segment.flush()
    segment.close()
    (directory / f"{SEGMENT}.index").unlink()
    time_index = directory / f"{SEGMENT}.timeindex"
    assert time_index.stat().st_size > 0
    return time_index


@pytest.mark.parametrize("flags", [("--index-sanity-check",), ("--verify-index-only",), ()], ids=str)
def test_time_index_without_offset_index(kafka_tool, tmp_path, flags):
    made = segment_without_offset_index(tmp_path / "made" / "t-0")
    kafka_copy, our_copy = tmp_path / "kafka" / "t-0", tmp_path / "ours" / "t-0"
    shutil.copytree(made.parent, kafka_copy)
    shutil.copytree(made.parent, our_copy)
    kafka = kafka_tool(DUMP_LOG_SEGMENTS, *flags, "--files", kafka_copy / made.name, timeout=120)
    ours = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "dump-log", *flags, "--files", str(our_copy / made.name)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert kafka.returncode == 1 and "java.lang.IllegalArgumentException: Invalid max index size: -1" in kafka.stderr, \
        kafka.stderr[-2000:]
    assert kafka.stdout == f"Dumping {kafka_copy / made.name}\n"
    assert (ours.returncode, ours.stdout) == (1, f"Dumping {our_copy / made.name}\n"), ours.stderr
    assert ours.stderr.count("\n") == 1 and ours.stderr.startswith(f"Error: {our_copy / made.name}: ") \
        and f"{SEGMENT}.index does not exist" in ours.stderr
