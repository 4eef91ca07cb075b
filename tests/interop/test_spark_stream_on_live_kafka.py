"""A Spark stream over a RUNNING Kafka 4.3.1 broker's log directory (issue 27, "Live logs").

One Kafka broker (256 MB heap) on one kafkawire controller. Topic ``stream``: 2 partitions,
16 KB segments (Kafka's ``internal.segment.bytes``: ``segment.bytes`` may not go below 1 MB),
``retention.bytes`` 48 KB checked every 200 ms, files removed 500 ms after retention renames
them ``.deleted``; the broker checkpoints its high watermark every 200 ms. A confluent-kafka
producer (acks=all, idempotent, batches under the segment size) writes values
``b"%010d" % seq`` + padding, paced to stay at most LAG records ahead of what the stream has
seen or skipped. ``spark.readStream.format("kafkawire")`` with
``liveLog=true`` and ``failOnDataLoss=false`` reads the broker's log.dirs (foreachBatch):

1. streaming while segments roll and retention deletes them;
2. the stream held inside a micro-batch while the producer runs ahead, until retention has
   deleted every offset below the high watermark checkpointed when it was held: the stream
   then loses records, and must say nothing else;
3. the broker killed (kill -9) mid-stream and restarted on the same log.dirs, the producer
   going on through it;
4. the producer stops; the stream catches up to the last acknowledged offset.

Checked:

* every row the stream saw is a record the producer had acknowledged, at the offset its
  acknowledgement named (so a record the stream saw before the kill was never truncated and
  replaced), no offset and no value twice, offsets rising per partition across micro-batches
  and within each;
* the records the stream never saw are accounted for one by one: each lies below the log
  start offset (the first segment not renamed ``.deleted``) sampled right after the
  micro-batch that went past it had read its rows, so retention had deleted it by then; every
  acknowledged record is either seen or so accounted for, and the stream did lose some (phase
  2), so the accounting is exercised;
* at the kill, every offset the stream had seen was below the high watermark then in
  ``replication-offset-checkpoint``;
* not a byte of the broker's files written by the reader: after every micro-batch, each
  closed segment's .log, .index and .timeindex (all but the two newest segments, which Kafka
  still trims at a roll) has the size, mtime and sha256 it had after the previous micro-batch
  of the same broker process (a restart's recovery rebuilds indexes, so comparisons do not
  span the kill). (The reader runs in Spark's Python workers, other processes, so the modes
  it opens files with are checked in tests/spark/test_spark_live_node.py instead.)

Every wait is for a condition and bounded (WAIT_S).
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from kafkawire.storage.state_files import read_offset_checkpoint
from tests.spark.conftest import spark_session  # noqa: F401  (the shared SparkSession fixture)

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC = "stream"
PARTITIONS = 2
TOPIC_CONFIG = {
    "internal.segment.bytes": str(16 * 1024),
    "retention.bytes": str(48 * 1024),
    "retention.ms": "-1",
    "file.delete.delay.ms": "500",
}
BROKER_PROPERTIES = {
    "replica.high.watermark.checkpoint.interval.ms": "200",
    "log.retention.check.interval.ms": "200",
    "broker.heartbeat.interval.ms": "500",
    "offsets.topic.num.partitions": "1",
    "num.partitions": "1",
}
CONTROLLER_PROPERTIES = {"broker.session.timeout.ms": "3000"}   # a restarted broker re-registers sooner
PAD = b"." * 400       # ~40 records a segment, ~120 a partition retained
CHUNK = 50             # records per produce-and-flush round
LAG = 150              # records the producer may run ahead of the stream (pacing on)
WAIT_S = 90


# --- the broker's files ---------------------------------------------------------------------------

def _segment_bases(partition_dir: Path) -> list[int]:
    """Base offsets of the segments Kafka has not renamed ``.deleted``, oldest first."""
    try:
        names = os.listdir(partition_dir)
    except FileNotFoundError:
        return []
    return sorted(int(n[:-4]) for n in names if n.endswith(".log") and n[:-4].isdigit())


def _log_starts(log_dir: Path) -> dict[int, int]:
    return {p: (_segment_bases(log_dir / f"{TOPIC}-{p}") or [0])[0] for p in range(PARTITIONS)}


def _checkpointed_hws(log_dir: Path) -> dict[int, int]:
    try:
        checkpoint = read_offset_checkpoint(log_dir / "replication-offset-checkpoint")
    except (OSError, ValueError):     # not written yet, or caught mid-rename
        return {}
    return {p: checkpoint[(TOPIC, p)] for p in range(PARTITIONS) if (TOPIC, p) in checkpoint}


def _closed_segment_files(log_dir: Path) -> dict[str, tuple[int, int, str]]:
    """{path: (size, mtime_ns, sha256)} of every segment file but the two newest segments' of
    each partition (a file retention renames meanwhile is left out)."""
    out = {}
    for p in range(PARTITIONS):
        directory = log_dir / f"{TOPIC}-{p}"
        for base in _segment_bases(directory)[:-2]:
            for suffix in (".log", ".index", ".timeindex"):
                path = directory / f"{base:020d}{suffix}"
                try:
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
                    stat = path.stat()
                except FileNotFoundError:
                    continue
                out[str(path)] = (stat.st_size, stat.st_mtime_ns, digest)
    return out


# --- the producer ---------------------------------------------------------------------------------

class PacedProducer(threading.Thread):
    """acks=all, idempotent; values ``%010d`` of 0, 1, 2, ... to partition seq % PARTITIONS, in
    rounds of CHUNK flushed; while ``paced``, no more than LAG records ahead of ``seen()``."""

    def __init__(self, bootstrap: str, seen):
        super().__init__(daemon=True)
        self.bootstrap, self.seen = bootstrap, seen
        self.paced = threading.Event()
        self.paced.set()
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.acked: dict[int, tuple[int, int]] = {}      # seq -> (partition, offset)
        self.errors: list = []
        self.sent = 0
        self.unflushed = None

    def _delivered(self, err, msg):
        with self.lock:
            if err is not None:
                self.errors.append(err)
            else:
                self.acked[int(msg.value()[:10])] = (msg.partition(), msg.offset())

    def run(self):
        producer = confluent_kafka.Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                                             "enable.idempotence": True, "linger.ms": 5,
                                             "batch.size": 8192,     # Kafka refuses a batch over the segment size
                                             "message.timeout.ms": WAIT_S * 1000})
        try:
            while not self.stopping.is_set():
                if self.paced.is_set() and self.sent - self.seen() >= LAG:
                    producer.poll(0.05)             # serves delivery reports while the stream catches up
                    continue
                for _ in range(CHUNK):
                    producer.produce(TOPIC, value=b"%010d" % self.sent + PAD, partition=self.sent % PARTITIONS,
                                     on_delivery=self._delivered)
                    self.sent += 1
                producer.flush(5)
        except Exception as exc:                    # reported by the test's waits
            self.errors.append(exc)
        finally:
            self.unflushed = producer.flush(WAIT_S)

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)

    def last_acked(self) -> dict[int, int]:
        """{partition: the highest offset acknowledged so far}."""
        with self.lock:
            offsets = list(self.acked.values())
        return {p: max((o for q, o in offsets if q == p), default=-1) for p in range(PARTITIONS)}

    def check(self):
        with self.lock:
            assert not self.errors, f"the producer failed: {self.errors[:3]}"


# --- the stream -----------------------------------------------------------------------------------

class Batches:
    """foreachBatch target. Per micro-batch id (a re-run replaces itself): the rows as collected
    ((partition, offset, seq)), the log start offsets and the closed segment files right after
    they were read, and the broker process they were read under. ``hold()`` makes the next
    micro-batch wait (before reading) until ``release()``."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.lock = threading.Lock()
        self.batches: dict[int, dict] = {}
        self.incarnation: int | None = 0     # the broker process; None while it is down or recovering
        self.gate = threading.Event()
        self.gate.set()
        self.held = threading.Event()
        self.held_hws: dict[int, int] = {}
        self.positions = {p: 0 for p in range(PARTITIONS)}   # next offset after the last row seen

    def __call__(self, frame, batch_id):
        if not self.gate.is_set():
            self.held_hws = _checkpointed_hws(self.log_dir)   # this batch ends at or below these
            self.held.set()
            if not self.gate.wait(WAIT_S):
                raise AssertionError(f"micro-batch {batch_id} held for more than {WAIT_S} s")
        rows = [(r.partition, r.offset, int(r.seq)) for r in
                frame.selectExpr("partition", "offset", "CAST(substring(value, 1, 10) AS STRING) AS seq").collect()]
        log_starts = _log_starts(self.log_dir)
        incarnation = self.incarnation
        files = _closed_segment_files(self.log_dir)
        with self.lock:
            self.batches[batch_id] = {"rows": rows, "log_starts": log_starts, "files": files,
                                      "incarnation": incarnation}
            for partition, offset, _ in rows:
                self.positions[partition] = max(self.positions[partition], offset + 1)

    def hold(self):
        self.held.clear()
        self.gate.clear()

    def release(self):
        self.gate.set()

    def ordered(self) -> list[dict]:
        with self.lock:
            return [self.batches[i] for i in sorted(self.batches)]

    def rows(self) -> list[tuple]:
        return [row for batch in self.ordered() for row in batch["rows"]]

    def count(self) -> int:
        with self.lock:
            return sum(len(b["rows"]) for b in self.batches.values())

    def next_offsets(self) -> dict[int, int]:
        with self.lock:
            return dict(self.positions)

    def passed(self) -> int:
        """Records the stream has seen or skipped."""
        return sum(self.next_offsets().values())


def _start_stream(spark, log_dir: Path, checkpoint: Path, batches: Batches):
    return (spark.readStream.format("kafkawire").option("subscribe", TOPIC).option("liveLog", "true")
            .option("startingOffsets", "earliest").option("failOnDataLoss", "false")
            .load(str(log_dir)).writeStream.foreachBatch(batches).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds").start())


def _waiter(cluster, query, producer):
    def wait(what: str, condition):
        def checked():
            if query.exception() is not None:
                raise AssertionError(f"the streaming query failed: {query.exception()}")
            producer.check()
            return condition()
        return cluster.wait_until(checked, WAIT_S, what)
    return wait


# --- the checks -----------------------------------------------------------------------------------

def _check_rows(batches: list[dict], acked: dict[int, tuple[int, int]]) -> dict[int, list[int]]:
    """Every row an acknowledged record at its acknowledged offset, none twice, offsets rising
    per partition; returns the offsets seen per partition, in the order seen."""
    seen: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    seqs = set()
    for batch in batches:
        for partition, offset, seq in batch["rows"]:
            assert acked.get(seq) == (partition, offset), \
                f"the stream saw seq {seq} at {TOPIC}-{partition}@{offset}; the producer's ack: {acked.get(seq)}"
            assert seq not in seqs, f"seq {seq} seen twice"
            seqs.add(seq)
            assert not seen[partition] or offset > seen[partition][-1], \
                f"{TOPIC}-{partition}: offset {offset} after {seen[partition][-1]}"
            seen[partition].append(offset)
    return seen


def _account_for_missing(batches: list[dict]) -> dict[int, int]:
    """{partition: records the stream skipped}; each skipped offset (between the last one seen
    and one a micro-batch saw) lies below the log start sampled right after that micro-batch."""
    missing = {p: 0 for p in range(PARTITIONS)}
    last = {p: -1 for p in range(PARTITIONS)}
    for n, batch in enumerate(batches):
        for partition, offset, _ in batch["rows"]:
            if offset > last[partition] + 1:
                start = batch["log_starts"][partition]
                assert offset - 1 < start, \
                    (f"micro-batch {n} skipped {TOPIC}-{partition} offsets {last[partition] + 1}..{offset - 1}, "
                     f"but the log then started at {start}: records that were still there")
                missing[partition] += offset - last[partition] - 1
            last[partition] = offset
    return missing


def _check_files_unchanged(batches: list[dict]) -> int:
    """Closed segment files equal from one micro-batch to the next under the same broker
    process; returns how many (file, pair of micro-batches) were compared."""
    compared = 0
    for before, after in zip(batches, batches[1:]):
        if before["incarnation"] is None or before["incarnation"] != after["incarnation"]:
            continue
        for path, state in before["files"].items():
            if path in after["files"]:
                assert after["files"][path] == state, f"{path} changed while the stream read: {state} -> " \
                                                      f"{after['files'][path]}"
                compared += 1
    return compared


def _hold_until_retention_passes(batches: Batches, producer: PacedProducer, log_dir: Path, wait) -> None:
    """Phase 2: a micro-batch held while the producer runs unpaced, until retention has
    deleted every offset below the high watermarks checkpointed when it was held (where that
    micro-batch ends at the latest); then 200 more rows."""
    batches.hold()
    wait("a micro-batch held", batches.held.is_set)
    producer.paced.clear()
    held_hws = dict(batches.held_hws)
    wait(f"retention past the high watermarks {held_hws} checkpointed when the stream was held",
         lambda: len(held_hws) == PARTITIONS and
         all(start > held_hws[p] for p, start in _log_starts(log_dir).items()))
    producer.paced.set()
    batches.release()
    after_hold = batches.count()
    wait("200 more rows after the hold", lambda: batches.count() >= after_hold + 200)


def _kill_and_restart(cluster, broker_id: int, batches: Batches, producer: PacedProducer, log_dir: Path,
                      wait) -> tuple[dict, dict]:
    """Phase 3: kill -9, restart on the same log.dirs, until the stream is past what the
    restarted broker acknowledged; returns (checkpointed high watermarks, stream positions) at
    the kill."""
    cluster.kill_broker(broker_id)
    hws_at_kill = _checkpointed_hws(log_dir)
    seen_at_kill = batches.next_offsets()
    acked_at_kill = producer.acked_count()
    batches.incarnation = None                    # recovery may rebuild indexes: compare nothing
    cluster.start_broker(broker_id)
    wait("200 more acknowledgements after the restart", lambda: producer.acked_count() >= acked_at_kill + 200)
    batches.incarnation = 1                       # the log is recovered: the broker appends again
    restarted = producer.last_acked()
    wait(f"the stream past {restarted}, acknowledged by the restarted broker",
         lambda: all(batches.next_offsets()[p] > restarted[p] for p in range(PARTITIONS)))
    return hws_at_kill, seen_at_kill


def _stop_producing(producer: PacedProducer, batches: Batches, wait) -> dict[int, int]:
    """Phase 4: every record acknowledged, and the stream at the end of each partition;
    returns {partition: log end offset}."""
    producer.stopping.set()
    producer.join(WAIT_S + 10)
    producer.check()
    assert producer.unflushed == 0 and producer.acked_count() == producer.sent, \
        f"{producer.sent} sent, {producer.acked_count()} acknowledged, {producer.unflushed} unflushed"
    ends = {p: 1 + offset for p, offset in producer.last_acked().items()}
    wait(f"the stream at the last acknowledged offsets {ends}", lambda: batches.next_offsets() == ends)
    return ends


def test_a_stream_over_a_live_kafka_broker_sees_each_committed_record_once_through_retention_and_a_kill(
        kafka_on_kafkawire, spark_session, tmp_path):  # noqa: F811
    began = time.monotonic()
    cluster = kafka_on_kafkawire(1, 1, controller_properties=CONTROLLER_PROPERTIES,
                                 broker_properties=BROKER_PROPERTIES)
    marks = [("cluster", time.monotonic())]
    broker_id = cluster.broker_ids[0]
    log_dir = cluster.brokers[broker_id].data_dir
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config=TOPIC_CONFIG)])[TOPIC].result(60)
    del admin                                  # no connection left retrying after the broker stops
    cluster.wait_until(lambda: all((log_dir / f"{TOPIC}-{p}").is_dir() for p in range(PARTITIONS)), WAIT_S,
                       f"the partition directories in {log_dir}")

    batches = Batches(log_dir)
    producer = PacedProducer(cluster.bootstrap_servers(), batches.passed)
    query = _start_stream(spark_session, log_dir, tmp_path / "stream-checkpoint", batches)
    producer.start()
    marks.append(("topic and stream", time.monotonic()))
    wait = _waiter(cluster, query, producer)
    try:
        wait("300 rows streamed and retention past offset 0 of every partition",      # phase 1
             lambda: batches.count() >= 300 and min(_log_starts(log_dir).values()) > 0)
        marks.append(("streaming", time.monotonic()))
        _hold_until_retention_passes(batches, producer, log_dir, wait)
        marks.append(("held", time.monotonic()))
        hws_at_kill, seen_at_kill = _kill_and_restart(cluster, broker_id, batches, producer, log_dir, wait)
        marks.append(("killed and restarted", time.monotonic()))
        ends = _stop_producing(producer, batches, wait)
        marks.append(("caught up", time.monotonic()))
    finally:
        batches.release()
        producer.stopping.set()
        query.stop()
    final_log_starts = _log_starts(log_dir)
    ordered = batches.ordered()

    seen = _check_rows(ordered, producer.acked)
    missing = _account_for_missing(ordered)
    for p in range(PARTITIONS):
        acked_here = sum(1 for q, _ in producer.acked.values() if q == p)
        assert len(seen[p]) + missing[p] == acked_here, \
            f"{TOPIC}-{p}: {len(seen[p])} seen + {missing[p]} deleted before the stream reached them != {acked_here}"
        assert seen[p][-1] == ends[p] - 1 and final_log_starts[p] <= seen[p][-1]
    assert all(missing.values()), f"the held stream lost no records: {missing}"
    assert all(seen_at_kill[p] <= hws_at_kill.get(p, 0) for p in range(PARTITIONS)), (seen_at_kill, hws_at_kill)
    compared = _check_files_unchanged(ordered)
    assert compared >= 50, f"only {compared} closed segment files compared between micro-batches"
    print(f"\n[spark stream on live kafka] {producer.sent} records acknowledged, {sum(map(len, seen.values()))} "
          f"streamed once each in {len(ordered)} micro-batches, {sum(missing.values())} deleted by retention "
          f"before the stream reached them ({missing}); log starts at the end {final_log_starts}; "
          f"high watermarks at the kill {hws_at_kill}, stream then at {seen_at_kill}; {compared} closed segment "
          f"files unchanged between micro-batches; {time.monotonic() - began:.1f} s: "
          + ", ".join(f"{name} {t - began:.1f}" for name, t in marks))
