"""dump-log on a ``.timeindex`` whose entry cannot be checked against its log (issue 14).

Kafka's DumpLogSegments reads the batch each time index entry names and iterates its records;
when those records do not decode, or when the offset index gives a position outside the log
(FileRecords.slice refuses it), the exception kills Kafka's tool before it prints that entry.
Ours crashed with a Python traceback (CorruptRecordError, struct.error). Now it prints what
Kafka printed up to there, one ``Error:`` line naming the time index, the entry's byte, the
entry and the log byte, and exits 1 as Kafka's tool does. No Java here; the same files against
Kafka's tool: tests/interop/test_dump_log_time_index_faults_vs_kafka.py.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from dumplog_testlib import dump
from kafkawire.records import RecordBatchBuilder
from kafkawire.storage import LogSegment

TS = 1_700_000_000_000
SEGMENT = "00000000000000000000"
RECORD_COUNT_AT = 57          # in a v2 batch header
MODES = [(), ("--verify-index-only",)]


def make_segment(directory: Path, batches: int = 4):
    """A segment whose every batch is in the offset index: its (offset, position)s, and the time
    index's (timestamp, offset)s."""
    segment = LogSegment(directory, 0, index_interval_bytes=1, create=True)
    for i in range(batches):
        builder = RecordBatchBuilder(base_offset=i)
        builder.append(b"k%d" % i, b"v%d" % i, (), TS + i)
        segment.append(builder.build())
    segment.flush()
    entries = list(segment.offset_index)
    time_entries = list(segment.time_index)
    segment.close()
    assert len(time_entries) >= 3 and all(offset in dict(entries) for _, offset in time_entries)
    return entries, time_entries


def break_records_of_batch(directory: Path, position: int) -> None:
    """A record count of -1 (Kafka: InvalidRecordException, found invalid record count -1)."""
    log = directory / f"{SEGMENT}.log"
    raw = bytearray(log.read_bytes())
    struct.pack_into(">i", raw, position + RECORD_COUNT_AT, -1)
    log.write_bytes(bytes(raw))


def set_index_position(directory: Path, entry: int, position: int) -> None:
    index = directory / f"{SEGMENT}.index"
    raw = bytearray(index.read_bytes())
    struct.pack_into(">i", raw, entry * 8 + 4, position)
    index.write_bytes(bytes(raw))


def first_entry_only(time_index: Path, flags, time_entries) -> str:
    """Kafka's stdout: it dies on entry 1 before printing it."""
    timestamp, offset = time_entries[0]
    shown = "" if "--verify-index-only" in flags else f"timestamp: {timestamp} offset: {offset}\n"
    return f"Dumping {time_index}\n{shown}"


@pytest.mark.parametrize("flags", MODES, ids=str)
def test_records_that_do_not_decode(tmp_path, capsys, flags):
    entries, time_entries = make_segment(tmp_path)
    timestamp, offset = time_entries[1]
    position = dict(entries)[offset]
    break_records_of_batch(tmp_path, position)
    time_index = tmp_path / f"{SEGMENT}.timeindex"
    status, out, err = dump(capsys, *flags, "--files", time_index)
    assert (status, out) == (1, first_entry_only(time_index, flags, time_entries)), err
    assert "Traceback" not in err and err.count("\n") == 1
    assert err.startswith(f"Error: {time_index} at byte 12: time index entry 1 (timestamp {timestamp}, "
                          f"offset {offset}): ")
    assert f"the records of its batch (at byte {position} of {tmp_path / SEGMENT}.log) do not decode, at " \
           f"byte {position + RECORD_COUNT_AT}: found invalid record count -1 in magic v2 batch" in err


@pytest.mark.parametrize("flags", MODES, ids=str)
@pytest.mark.parametrize("position, refusal", [
    (-16777216, "Invalid position: -16777216 in read from FileRecords(size={size}, file={log}, start=0, "
                "end=2147483647)"),
    (10_000_000, "Slice from position 10000000 exceeds end position of FileRecords(size={size}, file={log}, "
                 "start=0, end=2147483647)"),
], ids=["negative", "past-the-end"])
def test_offset_index_position_outside_the_log(tmp_path, capsys, flags, position, refusal):
    entries, time_entries = make_segment(tmp_path)
    timestamp, offset = time_entries[1]
    set_index_position(tmp_path, [o for o, _ in entries].index(offset), position)
    time_index = tmp_path / f"{SEGMENT}.timeindex"
    log = tmp_path / f"{SEGMENT}.log"
    status, out, err = dump(capsys, *flags, "--files", time_index)
    assert (status, out) == (1, first_entry_only(time_index, flags, time_entries)), err
    assert "Traceback" not in err and err.count("\n") == 1
    assert err.startswith(f"Error: {time_index} at byte 12: time index entry 1 (timestamp {timestamp}, "
                          f"offset {offset}): its offset index gives position {position} for it")
    kafka_message = refusal.format(size=log.stat().st_size, log=log)
    assert f"(Kafka's DumpLogSegments dies here: java.lang.IllegalArgumentException: {kafka_message})" in err


def test_json_reports_the_error_and_goes_on_to_the_next_file(tmp_path, capsys):
    entries, time_entries = make_segment(tmp_path)
    break_records_of_batch(tmp_path, dict(entries)[time_entries[2][1]])
    time_index = tmp_path / f"{SEGMENT}.timeindex"
    index = tmp_path / f"{SEGMENT}.index"
    status, out, err = dump(capsys, "--json", "--files", f"{time_index},{index}")
    objs = [json.loads(line) for line in out.splitlines()]
    assert status == 1 and "Traceback" not in err
    assert [o["type"] for o in objs[:4]] == ["file", "timeIndexEntry", "timeIndexEntry", "error"]
    assert objs[3]["file"] == str(time_index) and objs[3]["position"] == 24
    assert "time index entry 2" in objs[3]["message"]
    assert objs[4] == {"type": "file", "file": str(index)}
    assert [(o["offset"], o["position"]) for o in objs[5:]] == entries


@pytest.mark.parametrize("flags", MODES, ids=str)
def test_log_that_cannot_be_framed_after_the_entry(tmp_path, capsys, flags):
    """Kafka's tool reads every batch from the looked-up position to the end of the log; a size
    below the minimum anywhere after it kills the tool on the first entry."""
    _, time_entries = make_segment(tmp_path)
    log = tmp_path / f"{SEGMENT}.log"
    end = log.stat().st_size
    log.write_bytes(log.read_bytes() + bytes(20))          # a zero size after the last batch
    time_index = tmp_path / f"{SEGMENT}.timeindex"
    status, out, err = dump(capsys, *flags, "--files", time_index)
    assert (status, out) == (1, f"Dumping {time_index}\n"), err
    assert "Traceback" not in err and err.count("\n") == 1
    timestamp, offset = time_entries[0]
    assert err.startswith(f"Error: {time_index} at byte 0: time index entry 0 (timestamp {timestamp}, "
                          f"offset {offset}): ")
    assert f"the size at byte {end} is 0" in err
    assert f"CorruptRecordException: Found record size 0 smaller than minimum record overhead (14) in file {log}.)" \
        in err
