"""Reading a running broker's log directory (liveLog, highWatermark): never past the high
watermark in replication-offset-checkpoint (nor the LSO below it for read_committed), never
a torn batch, never a byte written, segments deleted by retention mid-read skipped.

Logs are written by our Log writer, then given a checkpoint file and, where a broker would
be appending, a batch cut short after the high watermark. Almost everything is checked on
the planning and reading layer without Spark (read_direct runs the code Spark's tasks run);
one test reads through the shared SparkSession."""
from __future__ import annotations

import hashlib
import os

import pytest

pytest.importorskip("pyarrow", reason="kafkawire.spark builds Arrow batches: pip install -e '.[dev]'")

from kafkawire.records import CorruptRecordError, build_batch, build_end_txn_marker_batch  # noqa: E402
from kafkawire.spark import layout  # noqa: E402
from kafkawire.spark.filters import PushedFilters  # noqa: E402
from kafkawire.spark.options import OptionError, parse_options  # noqa: E402
from kafkawire.spark.plan import plan_batch  # noqa: E402
from kafkawire.spark.reader import default_names, read_task, settings_for  # noqa: E402
from kafkawire.spark.scan import scan_batches  # noqa: E402
from kafkawire.spark.watermarks import HighWatermarkError, parse_high_watermarks  # noqa: E402
from kafkawire.storage.state_files import StateFileError  # noqa: E402
from tests.spark.logdata import T0, numbered_batches, read_direct, segment_files, write_partition  # noqa: E402

CHECKPOINT = "replication-offset-checkpoint"
RECORDS = 120            # 30 batches of 4 records over several segments
HW = 80


def _checkpoint(log_dir, entries: dict) -> None:
    """Kafka's CheckpointFile form, as ReplicaManager writes it."""
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for (t, p), o in entries.items()]
    (log_dir / CHECKPOINT).write_text("\n".join(lines) + "\n")


def _append_torn(partition_dir, base_offset: int, keep: int = 61) -> None:
    """A batch the broker is appending: its header written, the rest not yet."""
    last = segment_files(partition_dir)[-1]
    with open(last, "ab") as f:
        f.write(build_batch([(b"k", b"in flight" * 20)], base_offset=base_offset)[:keep])


def _live_dir(root, *, hw=HW, torn=True):
    """orders-0 (RECORDS records, HW ``hw``, a torn batch at its end) and orders-1 (20
    records, created since the last checkpoint: no line for it)."""
    log_dir = root / "kafka-logs"
    write_partition(log_dir / "orders-0", numbered_batches(30, 4), segment_bytes=2500,
                    index_interval_bytes=256)
    write_partition(log_dir / "orders-1", numbered_batches(5, 4))
    _checkpoint(log_dir, {("orders", 0): hw})
    if torn:
        _append_torn(log_dir / "orders-0", RECORDS)
    return log_dir


def _offsets(rows, partition=0):
    return [r["offset"] for r in rows if r["partition"] == partition]


def _state(directory) -> dict:
    """Every file under ``directory``: size, mtime and content digest."""
    out = {}
    for dirpath, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(dirpath, name)
            st = os.stat(path)
            out[path] = (st.st_size, st.st_mtime_ns, hashlib.sha256(open(path, "rb").read()).digest())
    return out


def _stream_reader(path, **options):
    pytest.importorskip("pyspark", reason="the stream reader is a pyspark class")
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType
    from kafkawire.spark.source import KafkaWireStreamReader
    schema = StructType([StructField("offset", LongType()), StructField("value", BinaryType())])
    return KafkaWireStreamReader({"path": str(path), **options}, schema)


def _stream_offsets(reader, start, end):
    return [o for p in reader.partitions(start, end) for b in reader.read(p) for o in b.column("offset").to_pylist()]


# --- the high watermark ---------------------------------------------------------------------

def test_a_live_read_stops_at_the_high_watermark_and_writes_nothing(tmp_path):
    log_dir = _live_dir(tmp_path)
    assert len(segment_files(log_dir / "orders-0")) > 3
    before = _state(log_dir)
    rows = read_direct(log_dir, liveLog="true", maxPartitionBytes=300)   # many splits
    assert _offsets(rows) == list(range(HW))
    assert _offsets(rows, 1) == []          # no line in the checkpoint: nothing known committed
    # logEnd: every whole batch; the batch being appended is left for later, not corruption
    whole = read_direct(log_dir, liveLog="true", highWatermark="logEnd")
    assert _offsets(whole) == list(range(RECORDS)) and _offsets(whole, 1) == list(range(20))
    assert _offsets(read_direct(log_dir / "orders-0", highWatermark="checkpoint")) == list(range(HW))
    committed = read_direct(log_dir, liveLog="true", **{"kafka.isolation.level": "read_committed"})
    assert _offsets(committed) == list(range(HW))
    stream = _stream_reader(log_dir / "orders-0", liveLog="true", startingOffsets="latest")
    stream.latestOffset(stream.initialOffset())
    assert _state(log_dir) == before        # no byte, file or timestamp changed


def test_a_stream_advances_only_to_the_high_watermark(tmp_path):
    log_dir = _live_dir(tmp_path)
    reader = _stream_reader(log_dir, liveLog="true", startingOffsets="earliest")
    start = reader.initialOffset()
    assert start == {"orders": {"0": 0, "1": 0}}
    first = reader.latestOffset(start)
    assert first == {"orders": {"0": HW, "1": 0}}
    assert _stream_offsets(reader, start, first) == list(range(HW))
    _checkpoint(log_dir, {("orders", 0): 100, ("orders", 1): 8})   # the broker's next checkpoint
    second = reader.latestOffset(first)
    assert second == {"orders": {"0": 100, "1": 8}}
    assert sorted(_stream_offsets(reader, first, second)) == list(range(8)) + list(range(HW, 100))
    assert _stream_reader(log_dir, liveLog="true").initialOffset() == {"orders": {"0": 100, "1": 8}}


@pytest.mark.parametrize("text, offsets, cut_short", [
    ("0\n2\na 0 5\nb 1 7\n", {("a", 0): 5, ("b", 1): 7}, False),
    ("0\n2\na 0 5\nb 1 7", {("a", 0): 5}, True),          # last line without its newline
    ("0\n3\na 0 5\n", {("a", 0): 5}, True),               # lines the count promises are missing
    ("0\n", {}, True), ("", {}, True),                    # cut before the entries
    ("0\r\n1\r\na 0 5\r\n", {("a", 0): 5}, False),        # Windows line ends
])
def test_a_checkpoint_cut_short_keeps_its_complete_lines(text, offsets, cut_short):
    contents = parse_high_watermarks(text, "/d/replication-offset-checkpoint")
    assert (contents.offsets, contents.cut_short) == (offsets, cut_short)


@pytest.mark.parametrize("text, message", [
    ("1\n0\n", "unrecognised checkpoint version 1"),
    ("0\nx\n", "malformed size line 'x' (line 2 of /d/"),
    ("0\n1\na 0\n", "malformed entry 'a 0'"),
    ("0\n1\na 0 -3\n", "malformed entry"),
    ("0\n1\na 0 5\nb 0 6\n", "expected 1 entries in checkpoint file but found 2"),
])
def test_a_malformed_checkpoint_is_an_error_naming_file_and_line(text, message):
    with pytest.raises(StateFileError, match=message.replace("(", r"\(")):
        parse_high_watermarks(text, "/d/replication-offset-checkpoint")


def test_without_a_checkpoint_nothing_is_known_committed_unless_required(tmp_path):
    log_dir = _live_dir(tmp_path)
    with pytest.raises(HighWatermarkError, match=r"orders-1 \(highWatermark=required"):
        read_direct(log_dir, liveLog="true", highWatermark="required")
    (log_dir / CHECKPOINT).unlink()
    assert read_direct(log_dir, liveLog="true") == []
    with pytest.raises(HighWatermarkError, match=f"{log_dir / CHECKPOINT}: no such file"):
        read_direct(log_dir, liveLog="true", highWatermark="required")
    with pytest.raises(OptionError, match="highWatermark='hw': expected checkpoint, required or logEnd"):
        parse_options({"path": "/x", "highWatermark": "hw"}, streaming=False)


def test_a_live_read_starts_at_the_checkpointed_log_start_offset(tmp_path):
    """log-start-offset-checkpoint (DeleteRecords moved the log start inside the first
    segment): a consumer sees nothing below it, nor does a live read."""
    from kafkawire.spark.plan import PlanError
    log_dir = _live_dir(tmp_path)
    (log_dir / "log-start-offset-checkpoint").write_text("0\n1\norders 0 10\n")
    assert _offsets(read_direct(log_dir, liveLog="true")) == list(range(10, HW))
    assert _offsets(read_direct(log_dir)) == list(range(RECORDS))          # not live: as before
    asked = '{"orders": {"0": 5}}'
    with pytest.raises(PlanError, match="asks for offset 5, but the log now starts at 10"):
        read_direct(log_dir, liveLog="true", startingOffsets=asked)
    assert _offsets(read_direct(log_dir, liveLog="true", startingOffsets=asked,
                                failOnDataLoss="false")) == list(range(10, HW))
    reader = _stream_reader(log_dir, liveLog="true", startingOffsets="earliest")
    assert reader.initialOffset() == {"orders": {"0": 10, "1": 0}}


# --- torn and corrupt batches ---------------------------------------------------------------

def _flip_byte_in_batch_holding(partition_dir, offset: int):
    for log in segment_files(partition_dir):
        for position, batch in scan_batches(log):
            if batch.base_offset <= offset <= batch.last_offset:
                with open(log, "r+b") as f:
                    f.seek(position + 70)
                    byte = f.read(1)
                    f.seek(position + 70)
                    f.write(bytes([byte[0] ^ 0xFF]))
                return log, position
    raise AssertionError(f"no batch holds offset {offset}")


def test_corruption_below_the_high_watermark_is_an_error_and_above_it_is_never_read(tmp_path):
    log_dir = _live_dir(tmp_path)
    _flip_byte_in_batch_holding(log_dir / "orders-0", HW + 5)      # above: never read
    assert _offsets(read_direct(log_dir, liveLog="true")) == list(range(HW))
    log, position = _flip_byte_in_batch_holding(log_dir / "orders-0", HW - 10)
    with pytest.raises(CorruptRecordError) as info:
        read_direct(log_dir, liveLog="true")
    assert info.value.file == log and f"at byte {position + 17} in {log}" in str(info.value)


def test_a_torn_batch_below_the_high_watermark_is_corruption(tmp_path):
    """The checkpoint promises offsets the file does not hold whole (a disk that lost
    writes): an error naming the file and byte, where a write in progress above it is not."""
    log_dir = _live_dir(tmp_path, hw=RECORDS + 1)
    last = segment_files(log_dir / "orders-0")[-1]
    torn_at = os.path.getsize(last) - 61
    with pytest.raises(CorruptRecordError, match=f"at byte {torn_at} in {last}"):
        read_direct(log_dir, liveLog="true")
    _checkpoint(log_dir, {("orders", 0): RECORDS})
    assert _offsets(read_direct(log_dir, liveLog="true")) == list(range(RECORDS))


def test_read_committed_counts_a_marker_above_the_high_watermark_as_not_yet_written(tmp_path):
    def txn(pid, value):
        return build_batch([(None, value, [], T0)], is_transactional=True, producer_id=pid,
                           producer_epoch=0, base_sequence=0)

    def marker(pid):
        return build_end_txn_marker_batch(True, producer_id=pid, producer_epoch=0, coordinator_epoch=1,
                                          timestamp=T0)
    plain = build_batch([(None, b"plain", [], T0)])
    log_dir = tmp_path / "kafka-logs"
    write_partition(log_dir / "t-0", [txn(1, b"a"), plain, marker(1), txn(2, b"b"), plain, marker(2), plain])
    # offsets: 0 a, 1 plain, 2 COMMIT(1), 3 b, 4 plain, 5 COMMIT(2), 6 plain
    for hw, values in [(7, [b"a", b"plain", b"b", b"plain", b"plain"]),
                       (5, [b"a", b"plain"])]:      # 2's marker at 5 is not below the HW: open at 3
        _checkpoint(log_dir, {("t", 0): hw})
        rows = read_direct(log_dir, liveLog="true", includeAborted="false")
        assert [r["value"] for r in rows] == values


# --- segments deleted by retention while the query reads --------------------------------------

def _plan(path, **options):
    opts = parse_options({"path": str(path), **options}, streaming=False)
    return opts, plan_batch(opts, PushedFilters())


def _run(opts, tasks):
    settings = settings_for(default_names(opts), opts, PushedFilters())
    return [o for t in tasks for b in read_task(t, settings) for o in b.column("offset").to_pylist()]


def _retention_deletes_first_segment(partition_dir) -> int:
    """Kafka's retention: the segment is renamed ``.deleted`` (and removed a minute later);
    returns the new log start offset."""
    first, second = segment_files(partition_dir)[:2]
    for suffix in (".log", ".index", ".timeindex"):
        os.rename(first[:-4] + suffix, first[:-4] + suffix + ".deleted")
    return int(os.path.basename(second)[:20])


def test_a_segment_deleted_after_planning_is_skipped_as_the_log_start_moving(tmp_path):
    log_dir = _live_dir(tmp_path)
    _checkpoint(log_dir, {("orders", 0): HW, ("orders", 1): 12})
    opts, tasks = _plan(log_dir, liveLog="true")
    strict = _plan(log_dir, liveLog="true", startingOffsets='{"orders": {"0": 3}}')
    lenient = _plan(log_dir, liveLog="true", startingOffsets='{"orders": {"0": 3}}', failOnDataLoss="false")
    old = _plan(log_dir)
    log_start = _retention_deletes_first_segment(log_dir / "orders-0")
    write_partition(log_dir / "orders-1", numbered_batches(3, 4), roll=True)   # and a roll
    assert _run(opts, tasks) == list(range(log_start, HW)) + list(range(12))
    assert _run(*lenient) == list(range(log_start, HW)) + list(range(12))
    with pytest.raises(FileNotFoundError, match="deleted while the query read it .* failOnDataLoss=false"):
        _run(*strict)
    with pytest.raises(FileNotFoundError):
        _run(*old)                                          # not a live read: as before


def test_a_segment_deleted_while_planning_is_left_out(tmp_path, monkeypatch):
    log_dir = _live_dir(tmp_path)
    listed = layout.list_segments
    moved = []

    def list_then_delete(directory, files=layout.LOCAL):
        segments = listed(directory, files)
        if directory.endswith("orders-0") and not moved:   # retention, right after the listing
            moved.append(_retention_deletes_first_segment(directory))
        return segments

    monkeypatch.setattr(layout, "list_segments", list_then_delete)
    rows = read_direct(log_dir, liveLog="true", **{"kafka.isolation.level": "read_committed"})
    assert _offsets(rows) == list(range(moved[0], HW))
    # a stream's look at the log, the same way
    moved.clear()
    for suffix in (".log", ".index", ".timeindex"):
        for name in os.listdir(log_dir / "orders-0"):
            if name.endswith(suffix + ".deleted"):
                os.rename(log_dir / "orders-0" / name, log_dir / "orders-0" / name[:-len(".deleted")])
    reader = _stream_reader(log_dir / "orders-0", liveLog="true", failOnDataLoss="false",
                            **{"kafka.isolation.level": "read_committed"})
    end = reader.latestOffset({"orders": {"0": 0}})
    assert moved and end == {"orders": {"0": HW}}


# --- through Spark ------------------------------------------------------------------------------

def test_spark_reads_a_live_log_directory_up_to_its_high_watermark(spark, tmp_path):
    log_dir = _live_dir(tmp_path)
    before = _state(log_dir)
    df = spark.read.format("kafkawire").option("liveLog", "true").load(str(log_dir))
    rows = sorted((r["partition"], r["offset"]) for r in df.select("partition", "offset").collect())
    assert rows == [(0, o) for o in range(HW)]
    assert _state(log_dir) == before
