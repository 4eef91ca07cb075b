"""A ``.timeindex`` whose entry cannot be checked against its log, dumped by Kafka 4.3.1's
DumpLogSegments and by ours (issue 14).

Three faults, each in a segment our writer makes: the records of an indexed batch do not decode
(a record count of -1), the offset index gives a negative position for an entry (Kafka's
FileRecords.slice refuses it), and a size of 0 after the last batch (Kafka's tool reads every
batch from the looked-up position to the end of the log and dies on it). Kafka's tool dies with
an exception before printing the entry (exit 1); ours printed a Python traceback. Now both print
the same stdout, both exit 1, and our one ``Error:`` line on stderr carries Kafka's exception
message where we know it word for word (the last two). Each tool gets its own copy.
"""
from __future__ import annotations

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from kafkawire.records import RecordBatchBuilder
from kafkawire.storage import LogSegment
from tests.interop.kafka_procs import DUMP_LOG_SEGMENTS

REPO = Path(__file__).resolve().parents[2]
SEGMENT = "00000000000000000000"
TS = 1_700_000_000_000


def make_segment(directory: Path):
    directory.mkdir(parents=True)
    segment = LogSegment(directory, 0, index_interval_bytes=1, create=True)
    for i in range(4):
        builder = RecordBatchBuilder(base_offset=i)
        builder.append(b"k%d" % i, b"v%d" % i, (), TS + i)
        segment.append(builder.build())
    segment.flush()
    entries, time_entries = list(segment.offset_index), list(segment.time_index)
    segment.close()
    return entries, time_entries


def patch(path: Path, at: int, value: int) -> None:
    raw = bytearray(path.read_bytes())
    struct.pack_into(">i", raw, at, value)
    path.write_bytes(bytes(raw))


def records_do_not_decode(directory: Path, entries, time_entries) -> None:
    patch(directory / f"{SEGMENT}.log", dict(entries)[time_entries[1][1]] + 57, -1)


def negative_position(directory: Path, entries, time_entries) -> None:
    entry = [offset for offset, _ in entries].index(time_entries[1][1])
    patch(directory / f"{SEGMENT}.index", entry * 8 + 4, -16777216)


def zero_size_at_the_end(directory: Path, entries, time_entries) -> None:
    log = directory / f"{SEGMENT}.log"
    log.write_bytes(log.read_bytes() + bytes(20))


FAULTS = {
    "records": (records_do_not_decode, "org.apache.kafka.common.InvalidRecordException: "
                                       "Found invalid record count -1 in magic v2 batch", False),
    "negative-position": (negative_position, "java.lang.IllegalArgumentException: Invalid position: -16777216 in "
                                             "read from FileRecords(size={size}, file={log}, start=0, "
                                             "end=2147483647)", True),
    "unframeable": (zero_size_at_the_end, "org.apache.kafka.common.errors.CorruptRecordException: Found record "
                                          "size 0 smaller than minimum record overhead (14) in file {log}.", True),
}


@pytest.mark.parametrize("flags", [(), ("--verify-index-only",)], ids=str)
@pytest.mark.parametrize("fault", FAULTS)
def test_time_index_entry_kafka_dies_on(kafka_tool, tmp_path, fault, flags):
    make_fault, exception, ours_quotes_it = FAULTS[fault]
    made = tmp_path / "made" / "t-0"
    make_fault(made, *make_segment(made))
    kafka_dir, our_dir = tmp_path / "kafka" / "t-0", tmp_path / "ours" / "t-0"
    shutil.copytree(made, kafka_dir)
    shutil.copytree(made, our_dir)
    name = f"{SEGMENT}.timeindex"
    kafka = kafka_tool(DUMP_LOG_SEGMENTS, *flags, "--files", kafka_dir / name, timeout=120)
    ours = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "dump-log", *flags, "--files",
                           str(our_dir / name)], cwd=REPO, capture_output=True, text=True, timeout=120)
    size = (made / f"{SEGMENT}.log").stat().st_size
    theirs_exception = exception.format(size=size, log=kafka_dir / f"{SEGMENT}.log")
    assert kafka.returncode == 1 and f'Exception in thread "main" {theirs_exception}\n' in kafka.stderr, \
        kafka.stderr[-2000:]
    assert ours.returncode == 1, ours.stderr
    assert ours.stdout == kafka.stdout.replace(str(kafka_dir), str(our_dir))
    assert "Traceback" not in ours.stderr and ours.stderr.count("\n") == 1
    assert ours.stderr.startswith(f"Error: {our_dir / name} at byte ")
    if ours_quotes_it:
        assert exception.format(size=size, log=our_dir / f"{SEGMENT}.log") in ours.stderr
