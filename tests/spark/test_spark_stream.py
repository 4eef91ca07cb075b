"""spark.readStream over logs that grow while the query runs: every record exactly once,
new batches and new segments picked up, a torn batch waited for, restarts resuming from
the checkpoint, and read_committed holding back what follows an open transaction.

Every wait is bounded (DEADLINE seconds); all files live in pytest's tmp dirs."""
from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[dev]'")

from kafkawire.records import build_batch, build_end_txn_marker_batch  # noqa: E402
from kafkawire.storage.log import Log  # noqa: E402
from tests.spark.logdata import numbered_batches, segment_files, write_partition  # noqa: E402

DEADLINE = 90.0


class Collector:
    """foreachBatch target: rows by micro-batch id (a re-run batch replaces itself, as
    Spark guarantees a batch id always holds the same rows)."""

    def __init__(self):
        self.batches: dict = {}
        self.lock = threading.Lock()

    def __call__(self, df, batch_id):
        rows = [(r["topic"], r["partition"], r["offset"], r["value"])
                for r in df.select("topic", "partition", "offset", "value").collect()]
        with self.lock:
            self.batches[batch_id] = rows

    def rows(self):
        with self.lock:
            return [r for rows in self.batches.values() for r in rows]


def _start(spark, path, checkpoint, collector, **options):
    reader = spark.readStream.format("kafkawire").option("startingOffsets", "earliest")
    for k, v in options.items():
        reader = reader.option(k, v)
    return (reader.load(str(path)).writeStream.foreachBatch(collector)
            .option("checkpointLocation", str(checkpoint)).trigger(processingTime="200 milliseconds").start())


def _wait_for(collector, query, count, settle: float = 0.0):
    """The rows once ``count`` have arrived, after ``settle`` more seconds in which a
    duplicate (or a record that should not be there yet) would have shown up."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        if query.exception() is not None:
            raise AssertionError(f"the streaming query failed: {query.exception()}")
        if len(collector.rows()) >= count:
            time.sleep(settle)
            return collector.rows()
        time.sleep(0.2)
    raise AssertionError(f"{len(collector.rows())} of {count} records arrived within {DEADLINE} s")


def _append_torn(path, batch: bytes):
    """Write the first half of a batch, as a broker caught mid-write leaves it; returns a
    function that writes the rest."""
    log = segment_files(path)[-1]
    with open(log, "ab") as f:
        f.write(batch[:len(batch) // 2])

    def finish():
        with open(log, "ab") as f:
            f.write(batch[len(batch) // 2:])
    return finish


def _append(root, expected, step):
    for partition in (0, 1):
        write_partition(root / f"live-{partition}", numbered_batches(3, 4, start=1000 * partition + 100 * step),
                        roll=(step == 3))
        expected[partition] += 12


def test_a_stream_sees_every_record_exactly_once_and_resumes_from_its_checkpoint(spark, tmp_path):
    root = tmp_path / "logs"
    expected = {0: 0, 1: 0}
    for partition in (0, 1):
        write_partition(root / f"live-{partition}", numbered_batches(2, 5, start=1000 * partition))
        expected[partition] += 10
    collector = Collector()
    query = _start(spark, root, tmp_path / "checkpoint", collector)
    try:
        _wait_for(collector, query, 20)
        for step in range(3):            # appends the running query picks up one by one
            _append(root, expected, step)
            _wait_for(collector, query, sum(expected.values()))
        for step in range(3, 6):         # appends racing the micro-batches, a new segment among them
            _append(root, expected, step)
            time.sleep(0.1)
        log = Log(root / "live-0")
        next_offset = log.log_end_offset
        log.close()
        finish = _append_torn(root / "live-0", build_batch([(b"k", b"torn-a"), (b"k", b"torn-b")],
                                                           base_offset=next_offset))
        rows = _wait_for(collector, query, sum(expected.values()), settle=1.5)   # triggers see the torn batch
        assert query.exception() is None and not [r for r in collector.rows() if r[3].startswith(b"torn")]
        finish()
        expected[0] += 2
        rows = _wait_for(collector, query, sum(expected.values()), settle=1.0)
    finally:
        query.stop()
    want = Counter(("live", p, o) for p, n in expected.items() for o in range(n))
    assert Counter(r[:3] for r in rows) == want
    assert len(collector.batches) >= 5                    # picked up as it grew
    assert len(segment_files(root / "live-0")) == 2       # across a segment roll
    assert [r[3] for r in rows if r[3].startswith(b"torn")] == [b"torn-a", b"torn-b"]

    # A new query on the same checkpoint resumes where the last one stopped.
    write_partition(root / "live-1", numbered_batches(1, 3, start=5000))
    restarted = Collector()
    query = _start(spark, root, tmp_path / "checkpoint", restarted)
    try:
        rows = _wait_for(restarted, query, 3, settle=1.0)
    finally:
        query.stop()
    assert sorted(r[:3] for r in rows) == [("live", 1, expected[1] + i) for i in range(3)]


def test_read_committed_stream_waits_for_the_open_transaction(spark, tmp_path):
    path = tmp_path / "txn-0"
    write_partition(path, [[(None, b"before")]])
    txn = build_batch([(None, b"in-txn")], is_transactional=True, producer_id=7, producer_epoch=0,
                      base_sequence=0)
    write_partition(path, [txn, [(None, b"after")]])           # offsets 1 (open txn), 2
    collector = Collector()
    query = _start(spark, path, tmp_path / "checkpoint", collector,
                   **{"kafka.isolation.level": "read_committed"})
    try:
        assert [r[3] for r in _wait_for(collector, query, 1, settle=1.5)] == [b"before"]   # the LSO is 1
        marker = build_end_txn_marker_batch(True, producer_id=7, producer_epoch=0, coordinator_epoch=0)
        write_partition(path, [marker])
        rows = _wait_for(collector, query, 3, settle=1.0)
    finally:
        query.stop()
    assert [(r[2], r[3]) for r in rows] == [(0, b"before"), (1, b"in-txn"), (2, b"after")]


# --- the stream reader's offsets, without a session ------------------------------------------

def _stream_reader(path, **options):
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType
    from kafkawire.spark.source import KafkaWireStreamReader
    schema = StructType([StructField("offset", LongType()), StructField("value", BinaryType())])
    return KafkaWireStreamReader({"path": str(path), **options}, schema)


def _offsets_read(reader, start, end):
    return [o for p in reader.partitions(start, end) for b in reader.read(p) for o in b.column("offset").to_pylist()]


def test_stream_offsets_limits_and_data_loss(tmp_path):
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
    from kafkawire.spark.plan import PlanError
    path = write_partition(tmp_path / "s-0", numbered_batches(10, 3), segment_bytes=300)
    assert len(segment_files(path)) > 2
    reader = _stream_reader(path, startingOffsets="earliest", maxOffsetsPerTrigger="7")
    start = reader.initialOffset()
    assert start == {"s": {"0": 0}} and reader.getDefaultReadLimit() == ReadMaxRows(7)
    first = reader.latestOffset(start, ReadMaxRows(7))
    assert first == {"s": {"0": 7}} and _offsets_read(reader, start, first) == list(range(7))
    rest = reader.latestOffset(first, ReadAllAvailable())
    assert rest == {"s": {"0": 30}} and _offsets_read(reader, first, rest) == list(range(7, 30))
    assert _stream_reader(path).initialOffset() == {"s": {"0": 30}}     # Spark's default: latest
    reader.prepareForTriggerAvailableNow()
    write_partition(path, numbered_batches(1, 3))
    assert reader.latestOffset(rest, ReadAllAvailable()) == rest        # AvailableNow: nothing later
    first_segment = segment_files(path)[0]
    for suffix in (".log", ".index", ".timeindex"):
        (tmp_path / "s-0" / (first_segment[-24:-4] + suffix)).unlink()  # retention deleted it
    with pytest.raises(PlanError, match="the stream is at offset 0 but the log now starts at"):
        _stream_reader(path).latestOffset(start, ReadAllAvailable())
    lenient = _stream_reader(path, failOnDataLoss="false")
    end = lenient.latestOffset(start, ReadAllAvailable())
    assert _offsets_read(lenient, start, end)[0] > 0 and end == {"s": {"0": 33}}


def test_a_stream_may_start_at_latest(tmp_path):
    from kafkawire.spark.source import KafkaWireDataSource
    path = write_partition(tmp_path / "s-0", numbered_batches(2, 3))
    source = KafkaWireDataSource({"path": str(path), "startingOffsets": "latest", "decode": "metadata"})
    assert "`recordType` string" in source.schema()       # asked before Spark says it is a stream
    assert _stream_reader(path, startingOffsets="latest").initialOffset() == {"s": {"0": 6}}


def test_min_partitions_cuts_a_micro_batch_into_at_least_k_partitions(tmp_path):
    """Spark's Kafka source applies minPartitions to each micro-batch too: one partition's
    micro-batch of B bytes is cut at multiples of B // k (at index entries), so k=6 gives at
    least 6 input partitions where the default gives one, reading the same offsets."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    path = write_partition(tmp_path / "s-0", numbered_batches(120, 10), index_interval_bytes=512)
    for options, at_least in (({}, 1), ({"minPartitions": "6"}, 6)):
        reader = _stream_reader(path, startingOffsets="earliest", **options)
        start = reader.initialOffset()
        end = reader.latestOffset(start, ReadAllAvailable())
        parts = reader.partitions(start, end)
        assert len(parts) >= at_least and (options or len(parts) == 1)
        assert _offsets_read(reader, start, end) == list(range(1200))


def test_planning_a_micro_batch_lists_each_partition_once_and_reuses_latest_offsets_layout(tmp_path,
                                                                                         monkeypatch):
    """partitions() after latestOffset: no new scan of the log directory or its checkpoints
    (the floors latestOffset used), and one segment listing per partition even when minPartitions
    cuts the micro-batch a second time."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from kafkawire.spark import layout, source
    path = write_partition(tmp_path / "s-0", numbered_batches(120, 10), index_interval_bytes=512)
    reader = _stream_reader(path, startingOffsets="earliest", minPartitions="6")
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    listings, scans = [], []
    real_list, real_discover = layout.list_segments, source.discover
    monkeypatch.setattr(layout, "list_segments", lambda *a: listings.append(1) or real_list(*a))
    monkeypatch.setattr(source, "discover", lambda *a, **k: scans.append(1) or real_discover(*a, **k))
    assert len(reader.partitions(start, end)) >= 6
    assert (len(listings), len(scans)) == (1, 0)
