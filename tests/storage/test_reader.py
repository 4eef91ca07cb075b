"""kafkawire.storage.reader (issue 25): a log directory is read without writing a byte.

The reader gives the records our Log and the strict batch reader give; a torn or in-progress
tail ends the reading without an error; it stops at the high watermark of
replication-offset-checkpoint when asked; and after any reading every file's sha256, size and
mtime, every directory's listing and mtime are what they were, no file is opened for writing
and nothing is created, renamed, removed or locked, even on a directory with no write bit."""
from __future__ import annotations

import builtins
import hashlib
import io
import os
import shutil
from pathlib import Path

import pytest

from kafkawire.records import CorruptRecordError, build_batch, iter_batches
from kafkawire.storage import Log
from kafkawire.storage.reader import (LogDirectoryReader, PartitionReader, parse_partition_dir_name,
                                      parse_retired_dir_name, read_log_directory, read_segment)
from kafkawire.storage.snapshot import SnapshotId, SnapshotWriter
from kafkawire.storage.state_files import write_offset_checkpoint
from tests.conftest import REFERENCE as SHARED_REFERENCE

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "data" / "dump_log_coordinators"
KRAFT_DATA = SHARED_REFERENCE / "kraft-data"


def fingerprint(root: Path) -> dict:
    """path -> (kind, sha256 or listing, size, mtime_ns, mode) of everything under root, root too."""
    out = {}
    for path in [root, *sorted(root.rglob("*"))]:
        st = path.lstat()
        if path.is_dir():
            out[str(path)] = ("dir", tuple(sorted(os.listdir(path))), None, st.st_mtime_ns, st.st_mode)
        else:
            out[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), st.st_size, st.st_mtime_ns,
                              st.st_mode)
    return out


def record_tuples(records) -> list[tuple]:
    return [(r.offset, r.timestamp, bytes(r.key) if r.key is not None else None,
             bytes(r.value) if r.value is not None else None,
             tuple((k, bytes(v) if v is not None else None) for k, v in (r.headers or ()))) for r in records]


def _batch(base: int, n: int, size: int = 100) -> bytes:
    return build_batch([(f"k{base + i}".encode(), bytes([i % 251]) * size, [("h", b"v")], 1_700_000_000_000 + base + i)
                        for i in range(n)], base_offset=base)


def written_log_dir(tmp_path: Path) -> Path:
    """A log directory with topic ``orders`` partition 0 (four segments) and a snapshot-holding
    ``__cluster_metadata-0``, written by our Log; closed again."""
    log_dir = tmp_path / "logs"
    partition = log_dir / "orders-0"
    with Log(partition, segment_bytes=1200, index_interval_bytes=300) as log:
        offset = 0
        for n in (3, 2, 4, 1, 3, 2, 5):
            log.append(_batch(offset, n))
            offset += n
        log.flush()
    metadata = log_dir / "__cluster_metadata-0"
    metadata.mkdir()
    with SnapshotWriter(metadata, SnapshotId(5, 1), last_contained_log_timestamp=7) as writer:
        writer.append([])
    return log_dir


def test_reader_reads_the_records_our_log_reads(tmp_path):
    log_dir = written_log_dir(tmp_path)
    expected_copy = tmp_path / "for-log"
    shutil.copytree(log_dir / "orders-0", expected_copy)     # Log(...) may write: it gets a copy
    with Log(expected_copy) as log:
        expected = record_tuples(r for b in log.batches() for r in b)
    reader = read_log_directory(log_dir)
    assert reader.partitions() == [("__cluster_metadata", 0), ("orders", 0)]
    partition = reader.partition("orders", 0)
    assert len(partition.segment_bases) > 2
    assert record_tuples(partition.records()) == expected
    assert [r[0] for r in expected] == list(range(20))
    assert partition.tail is None


def test_reading_changes_no_file_and_creates_nothing(tmp_path):
    log_dir = written_log_dir(tmp_path)
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("orders", 0): 9})
    before = fingerprint(tmp_path)
    _read_everything(log_dir)
    assert fingerprint(tmp_path) == before


def _read_everything(log_dir: Path) -> None:
    for upto in ("end", "high_watermark", 4):
        reader = read_log_directory(log_dir, upto=upto)
        for topic, n in reader.partitions():
            if upto == "high_watermark" and topic == "__cluster_metadata":
                continue
            partition = reader.partition(topic, n)
            list(partition.records(include_control=True))
            for base in partition.segment_bases:
                partition.offset_index(base)
                partition.time_index(base)
            for snapshot in partition.snapshots():
                list(partition.read_snapshot(snapshot).records())
            partition.leader_epochs()
        reader.high_watermarks()
        reader.meta_properties()
    for segment in sorted(log_dir.rglob("*.log")):
        list(read_segment(segment).records())


def test_no_file_is_opened_for_writing_and_nothing_is_created_or_locked(tmp_path, monkeypatch):
    """Every open of the reader is read-only (patched builtins.open, io.open, os.open), and
    the calls that create, rename, remove, truncate or lock are never made."""
    log_dir = written_log_dir(tmp_path)
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("orders", 0): 9})
    modes, flags = [], []
    real_open, real_os_open = builtins.open, os.open

    def checked_open(file, mode="r", *args, **kwargs):
        modes.append(mode)
        return real_open(file, mode, *args, **kwargs)

    def checked_os_open(path, flag, *args, **kwargs):
        flags.append(flag)
        return real_os_open(path, flag, *args, **kwargs)

    def forbidden(name):
        def call(*args, **kwargs):
            raise AssertionError(f"the reader called {name}{args}")
        return call

    monkeypatch.setattr(builtins, "open", checked_open)
    monkeypatch.setattr(io, "open", checked_open)
    monkeypatch.setattr(os, "open", checked_os_open)
    for name in ("mkdir", "makedirs", "rename", "replace", "remove", "unlink", "rmdir", "truncate", "ftruncate",
                 "utime", "chmod", "link", "symlink", "fsync"):
        monkeypatch.setattr(os, name, forbidden(f"os.{name}"))
    import fcntl
    for name in ("flock", "lockf", "fcntl"):
        monkeypatch.setattr(fcntl, name, forbidden(f"fcntl.{name}"))
    _read_everything(log_dir)
    monkeypatch.undo()
    assert modes and set(modes) == {"rb"}, modes
    writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    assert all(not flag & writing for flag in flags), flags


def test_a_directory_without_write_permission_reads_the_same(tmp_path):
    log_dir = written_log_dir(tmp_path)
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("orders", 0): 9})
    expected = record_tuples(read_log_directory(log_dir).partition("orders", 0).records())
    modes = {p: p.stat().st_mode for p in [log_dir, *log_dir.rglob("*")]}
    for path in modes:
        path.chmod(modes[path] & ~0o222)
    try:
        before = fingerprint(log_dir)
        assert record_tuples(read_log_directory(log_dir).partition("orders", 0).records()) == expected
        _read_everything(log_dir)
        assert fingerprint(log_dir) == before
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


def test_a_torn_tail_is_the_end_not_an_error(tmp_path):
    log_dir = written_log_dir(tmp_path)
    partition = log_dir / "orders-0"
    active = max(partition.glob("*.log"))
    whole = record_tuples(read_log_directory(log_dir).partition("orders", 0).records())
    torn = _batch(20, 3)
    for cut in (5, 30, len(torn) - 1):                     # inside the header, the records, the last byte
        data = active.read_bytes()
        active.write_bytes(data + torn[:cut])
        reader = read_log_directory(partition).partition("orders", 0)
        assert record_tuples(reader.records()) == whole
        assert reader.tail is not None and reader.tail.position == len(data) and reader.tail.available == cut
        active.write_bytes(data)


def test_an_in_progress_last_batch_is_the_end_but_corruption_before_it_raises(tmp_path):
    """The last entry of the active segment may be mid-write (CRC not matching yet, or the zeros
    of a preallocated file): the end. The same damage before another batch is corruption."""
    log_dir = written_log_dir(tmp_path)
    active = max((log_dir / "orders-0").glob("*.log"))
    data = active.read_bytes()
    whole = record_tuples(read_log_directory(log_dir).partition("orders", 0).records())
    half_written = bytearray(_batch(20, 2))
    half_written[-10:] = bytes(10)                          # its last bytes not there yet
    active.write_bytes(data + half_written)
    reader = read_log_directory(log_dir).partition("orders", 0)
    assert record_tuples(reader.records()) == whole and "CRC" in reader.tail.reason.upper()
    active.write_bytes(data + bytes(4096))                  # preallocated
    assert record_tuples(reader.records()) == whole and reader.tail.position == len(data)
    active.write_bytes(data + half_written + _batch(22, 1))
    with pytest.raises(CorruptRecordError) as raised:
        list(reader.records())
    assert raised.value.position is not None and raised.value.position >= len(data) and str(active) in str(raised.value)


def test_a_closed_segment_s_bad_or_torn_last_batch_raises(tmp_path):
    """Only the active (last) segment can be in the middle of a write: a closed one that ends
    inside a batch, or whose last batch fails its CRC, is corrupt."""
    log_dir = written_log_dir(tmp_path)
    first = min((log_dir / "orders-0").glob("*.log"))
    data = first.read_bytes()
    flipped = bytearray(data)
    flipped[-1] ^= 0xFF
    for damaged, reason in ((bytes(flipped), "CRC"), (data[:-1], "not the active")):
        first.write_bytes(damaged)
        with pytest.raises(CorruptRecordError, match=reason):
            list(read_log_directory(log_dir).partition("orders", 0).records())


def test_upto_the_high_watermark_or_an_offset(tmp_path):
    log_dir = written_log_dir(tmp_path)
    with pytest.raises(LookupError, match="replication-offset-checkpoint"):
        read_log_directory(log_dir, upto="high_watermark").partition("orders", 0)
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("orders", 0): 9})
    reader = read_log_directory(log_dir, upto="high_watermark").partition("orders", 0)
    assert reader.high_watermark == 9
    assert [r.offset for r in reader.records()] == list(range(9))   # batches end at 2, 4, 8, 9
    assert [r.offset for r in PartitionReader(log_dir / "orders-0", upto=10).records()] == list(range(10))
    assert [r.offset for r in PartitionReader(log_dir / "orders-0", upto=0).records()] == []
    with pytest.raises(ValueError, match="upto"):
        read_log_directory(log_dir, upto="committed")


def test_a_partition_directory_alone_is_read_with_its_parent_s_checkpoint(tmp_path):
    log_dir = written_log_dir(tmp_path)
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("orders", 0): 5})
    reader = LogDirectoryReader(log_dir / "orders-0", upto="high_watermark")
    assert reader.partitions() == [("orders", 0)]
    assert [r.offset for r in reader.partition("orders", 0).records()] == list(range(5))
    (log_dir / "orders-0.0123abc-delete").mkdir()
    shutil.copytree(log_dir / "orders-0", log_dir / "orders-0.0123456789abcdef0123456789abcdef-stray")
    assert read_log_directory(log_dir).partitions() == [("__cluster_metadata", 0), ("orders", 0)]


def test_the_snapshot_and_indexes_read_as_the_writers_left_them(tmp_path):
    log_dir = written_log_dir(tmp_path)
    metadata = read_log_directory(log_dir).partition("__cluster_metadata", 0)
    assert metadata.snapshots() == [SnapshotId(5, 1)]
    assert metadata.read_snapshot().header.last_contained_log_timestamp == 7
    partition = read_log_directory(log_dir).partition("orders", 0)
    with Log(shutil.copytree(log_dir / "orders-0", tmp_path / "copy")) as log:
        for segment in log.segments[:-1]:           # the closed ones: Log rebuilds the active one's
            assert list(partition.offset_index(segment.base_offset)) == list(segment.offset_index)
            assert list(partition.time_index(segment.base_offset)) == list(segment.time_index)


@pytest.mark.parametrize("name", ["__consumer_offsets-0", "__transaction_state-0", "__share_group_state-0",
                                  "__consumer_offsets-broken"])
def test_kafka_written_segments_read_as_the_strict_reader_reads_them(tmp_path, name):
    """Segments Kafka 4.3.1 wrote (tests/data/dump_log_coordinators): the records the strict
    reader gives, up to where it stops; the broken one raises where iter_batches raises."""
    copy = shutil.copytree(CORPUS / name, tmp_path / name)
    before = fingerprint(copy)
    data = (copy / "00000000000000000000.log").read_bytes()
    strict, error = [], None
    try:
        for batch in iter_batches(data):
            strict += record_tuples(batch)
    except CorruptRecordError as exc:
        error = exc
    segment = read_segment(copy / "00000000000000000000.log")
    if error is None:
        assert record_tuples(segment.records(include_control=True)) == strict
    else:
        got = []
        with pytest.raises(CorruptRecordError):
            for record in segment.records(include_control=True):
                got.append(record)
        assert record_tuples(got) == strict
    assert fingerprint(copy) == before


def test_kraft_data_directories_read_as_the_strict_reader_reads_them(tmp_path):
    """Every partition directory of ../shared/reference/kraft-data (real brokers' and controllers'
    log directories), copied: the records iter_batches reads from each segment, files unchanged."""
    if not KRAFT_DATA.exists():
        pytest.skip(f"reference data not available: {KRAFT_DATA} is missing (it lives in ../shared)")
    check_directories_read_as_the_strict_reader_reads_them(KRAFT_DATA, tmp_path)


def check_directories_read_as_the_strict_reader_reads_them(source: Path, tmp_path: Path) -> int:
    """The check above on every partition directory under source (tests/interop/
    test_held_out_claims_on_kafka_data.py runs it on the directory Kafka wrote in the run); returns
    how many partitions."""
    copy = shutil.copytree(source, tmp_path / "kraft-data")
    before = fingerprint(copy)
    partitions = {p.parent for p in copy.rglob("*.log") if p.name[:-4].isdigit()}
    assert partitions
    for directory in sorted(partitions):
        expected = []
        for segment in sorted(directory.glob("*.log")):
            it = iter_batches(segment.read_bytes())
            expected += [r for batch in it if not batch.is_control for r in record_tuples(batch)]
        assert record_tuples(PartitionReader(directory).records()) == expected, directory
    assert fingerprint(copy) == before
    return len(partitions)


@pytest.mark.parametrize("chunk", [17, 64, 257, 1000])
def test_batches_across_read_windows_are_read_whole(tmp_path, monkeypatch, chunk):
    """The reader reads a segment a window at a time; a batch cut by a window's end is read
    again whole from the next window, never taken for a torn tail."""
    from kafkawire.storage import reader
    log_dir = written_log_dir(tmp_path)
    expected = record_tuples(read_log_directory(log_dir).partition("orders", 0).records())
    monkeypatch.setattr(reader, "_CHUNK", chunk)
    partition = read_log_directory(log_dir).partition("orders", 0)
    assert record_tuples(partition.records()) == expected and partition.tail is None


def test_a_segment_deleted_while_reading_is_skipped_and_named(tmp_path):
    """Retention may delete a segment between the listing and its reading: the reader goes on
    with the next one and names the one it could not read."""
    log_dir = written_log_dir(tmp_path)
    partition = read_log_directory(log_dir).partition("orders", 0)
    first = partition.segment_path(partition.segment_bases[0])
    first_offsets = {r.offset for r in read_segment(first).records()}
    os.rename(first, first + ".deleted")
    offsets = [r.offset for r in partition.records()]
    assert [r.offset for r in partition.records()] == offsets and partition.vanished == [first]
    assert offsets == [o for o in range(20) if o not in first_offsets] and offsets[0] > 0


def test_a_record_that_cannot_be_read_is_located_in_its_file(tmp_path, monkeypatch):
    """Batches are read a window at a time; an error inside a batch's records names the byte
    in the segment file, not in the window. (A batch whose CRC holds but whose record count
    lies is what a faulty producer writes; the CRC check is off to reach it.)"""
    from kafkawire.storage import reader
    monkeypatch.setattr(reader, "_CHUNK", 64)
    log_dir = written_log_dir(tmp_path)
    first = min((log_dir / "orders-0").glob("*.log"))
    data = bytearray(first.read_bytes())
    second_batch = next(b for i, b in enumerate(iter_batches(bytes(data))) if i == 1)
    count_at = second_batch.position + 57                     # records count: the last header field
    data[count_at:count_at + 4] = (1000).to_bytes(4, "big")
    first.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError) as raised:
        list(read_segment(first, verify_crc=False).records())
    assert raised.value.file == str(first)
    assert second_batch.position < raised.value.position <= second_batch.end_position


UUID_HEX = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("name, retired, live", [
    ("orders-3", None, ("orders", 3)),
    (f"orders-3.{UUID_HEX}-delete", ("orders", 3, "delete"), None),
    (f"my-topic-12.{UUID_HEX}-future", ("my-topic", 12, "future"), None),
    (f"orders-0.{UUID_HEX}-stray", ("orders", 0, "stray"), None),
    (f"orders-0.{UUID_HEX}-gone", None, None),                 # not one of Kafka's suffixes
    (f"orders-0.{UUID_HEX.upper()}-delete", None, None),      # Kafka writes the uuid in lower case
    (f"orders-0.{UUID_HEX[:-1]}-delete", None, None),          # 31 hex digits
    (f"orders.{UUID_HEX}-delete", None, None),                 # no partition
    ("orders", None, None),
])
def test_partition_directory_names_live_and_retired(name, retired, live):
    """The one reading of retired names (``-delete``, ``-future``, ``-stray``: LocalLog's suffixes),
    which the broker's stray scan and kafkawire.spark's layout share; a live name is never retired."""
    assert parse_retired_dir_name(name) == retired
    assert parse_partition_dir_name(name) == live
