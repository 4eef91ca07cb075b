"""Spark reads what real clients wrote through real Kafka 4.3.1 brokers on kafkawire controllers
(issue 16, scenario 5).

Three kafkawire controllers, three Kafka brokers. kafka-python and confluent-kafka (idempotent,
acks=all, with keys, headers and, for confluent-kafka, explicit create timestamps) produce to
``events``; a confluent-kafka transactional producer writes to ``events`` and ``ledger``,
committing some transactions and aborting others. A read_committed consumer reads every record
(topic, partition, offset, key, value, headers, timestamp).

Then the brokers are stopped cleanly, one after the other (SIGTERM: controlled shutdown; each
closes its logs, so no batch is half-appended and the files are what the broker served). Reading
while the brokers run would be fair too (Kafka appends to the page cache, which a reader of the
files sees), but a stopped cluster gives one fixed answer to compare.

``spark.read.format("kafkawire")`` with ``kafka.isolation.level=read_committed``:

* over each broker's log directory alone: every partition is on all three brokers (RF 3) and all
  replicas were in the ISR, so each broker's copy must equal exactly what the consumer read;
* over the three log directories together: every record the consumer read appears exactly three
  times (once per replica), all copies identical, and nothing else: deduplicated by
  (topic, partition, offset), it is exactly the consumer's records. The reader does not pick a
  replica itself; deduplicating is the query's, and it is honest only because the copies are
  checked identical;
* read_uncommitted over the same directories adds exactly the aborted records.

A stream (``spark.readStream``, read_committed, from the earliest offsets) over one broker's log
directory is started before the clients produce; once they are done it has seen each committed
record exactly once and no aborted one. (A stream reads one replica: the reader refuses a
topic-partition found in two directories, since its offsets are per topic-partition.)
"""
from __future__ import annotations

import collections
import threading
import time

import pytest

from tests.spark.conftest import spark_session  # noqa: F401  (the shared SparkSession fixture)

from .test_kafka_clients_on_kafkawire import create_topic, start_cluster

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")

PER_CLIENT = 200                # records from each of kafka-python and confluent-kafka
TRANSACTIONS = ("commit", "abort", "commit", "abort", "commit")
PER_TRANSACTION = 40            # records per transaction, spread over events and ledger
BASE_TIMESTAMP_MS = 1_700_000_000_000
CONFLUENT_CREATE_TIME = 1       # confluent-kafka's TIMESTAMP_CREATE_TIME; Kafka's id is 0


def produce(cluster) -> tuple[int, list[bytes], list[bytes]]:
    """Everything the clients produce; returns (acknowledged non-transactional records,
    committed transactional values, aborted transactional values)."""
    servers = cluster.bootstrap_servers()
    python_producer = kafka.KafkaProducer(bootstrap_servers=servers, acks="all", enable_idempotence=True)
    futures = [python_producer.send("events", key=f"k{i % 7}".encode(), value=f"kafka-python-{i}".encode(),
                                    headers=[("client", b"kafka-python"), ("seq", str(i).encode())])
               for i in range(PER_CLIENT)]
    python_producer.flush(60)
    python_producer.close()
    assert all(f.succeeded() for f in futures), [f.exception for f in futures if f.failed()][:3]

    delivered = []
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True})
    for i in range(PER_CLIENT):
        producer.produce("events", key=None if i % 10 == 0 else f"c{i % 5}", value=f"confluent-{i}",
                         headers=None if i % 3 == 0 else [("client", b"confluent"), ("dup", b"1"), ("dup", b"2")],
                         timestamp=BASE_TIMESTAMP_MS + i,
                         on_delivery=lambda err, msg: delivered.append(msg.value()) if err is None else None)
    assert producer.flush(60) == 0
    producer.close()
    assert len(delivered) == PER_CLIENT

    transactional = confluent_kafka.Producer({"bootstrap.servers": servers, "transactional.id": "spark-writer",
                                              "acks": "all"})
    transactional.init_transactions(60)
    committed, aborted = [], []
    for n, outcome in enumerate(TRANSACTIONS):
        transactional.begin_transaction()
        values = [f"tx{n}-{outcome}-{i}".encode() for i in range(PER_TRANSACTION)]
        for i, value in enumerate(values):
            transactional.produce("events" if i % 2 else "ledger", key=f"t{i % 3}", value=value,
                                  headers=[("txn", str(n).encode())])
        if outcome == "commit":
            transactional.commit_transaction(60)
            committed += values
        else:
            transactional.flush(60)
            transactional.abort_transaction(60)
            aborted += values
    transactional.close()
    return len(futures) + len(delivered), committed, aborted


def _headers(headers) -> tuple:
    return tuple((k, bytes(v) if v is not None else None) for k, v in headers or ())


def consume_records(cluster, topics, expected: int, idle_s: float = 5, timeout_s: float = 90) -> list[tuple]:
    """Every record of ``topics`` (read_committed, from the beginning) as
    (topic, partition, offset, key, value, headers, timestamp ms, timestamp type)."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers(), "group.id": f"spark-check-{time.monotonic_ns()}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "isolation.level": "read_committed"})
    records: list[tuple] = []
    try:
        consumer.subscribe(list(topics))
        deadline = time.monotonic() + timeout_s
        last_new = time.monotonic()
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                if len(records) >= expected and time.monotonic() - last_new >= idle_s:
                    break
                continue
            if message.error():
                continue
            kind, ms = message.timestamp()
            assert kind == CONFLUENT_CREATE_TIME, message.timestamp()
            records.append((message.topic(), message.partition(), message.offset(), message.key(),
                            message.value(), _headers(message.headers()), ms, 0))
            last_new = time.monotonic()
    finally:
        consumer.close()
    return records


def spark_records(spark, paths, isolation: str) -> list[tuple]:
    frame = (spark.read.format("kafkawire").option("subscribe", "events,ledger")
             .option("kafka.isolation.level", isolation).load(paths))
    rows = frame.selectExpr("topic", "partition", "offset", "key", "value", "headers",
                            "unix_millis(timestamp) AS ms", "timestampType").collect()
    return [(r.topic, r.partition, r.offset, None if r.key is None else bytes(r.key), bytes(r.value),
             tuple((h.key, None if h.value is None else bytes(h.value)) for h in r.headers or ()),
             r.ms, r.timestampType) for r in rows]


class StreamCollector:
    """foreachBatch target: (topic, partition, offset, value) by micro-batch id (a re-run batch
    replaces itself)."""

    def __init__(self):
        self.batches: dict = {}
        self.lock = threading.Lock()

    def __call__(self, frame, batch_id):
        rows = [(r.topic, r.partition, r.offset, bytes(r.value))
                for r in frame.select("topic", "partition", "offset", "value").collect()]
        with self.lock:
            self.batches[batch_id] = rows

    def rows(self) -> list[tuple]:
        with self.lock:
            return [r for rows in self.batches.values() for r in rows]


def start_stream(spark, log_dir: str, checkpoint, collector):
    return (spark.readStream.format("kafkawire").option("subscribe", "events,ledger")
            .option("startingOffsets", "earliest").option("kafka.isolation.level", "read_committed")
            .load(log_dir).writeStream.foreachBatch(collector).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="500 milliseconds").start())


def stream_rows(cluster, query, collector, count: int, settle_s: float = 5, timeout_s: float = 120) -> list:
    """The stream's rows once ``count`` arrived and ``settle_s`` more passed (time for a
    duplicate or an aborted record to show up)."""
    def arrived():
        if query.exception() is not None:
            raise AssertionError(f"the streaming query failed: {query.exception()}")
        return len(collector.rows()) >= count
    cluster.wait_until(arrived, timeout_s, f"{count} rows from the stream", interval_s=0.5)
    time.sleep(settle_s)
    return collector.rows()


def test_spark_reads_the_brokers_log_dirs_as_the_read_committed_consumer_read_them(kafka_on_kafkawire,
                                                                                     spark_session):  # noqa: F811
    cluster = start_cluster(kafka_on_kafkawire)
    create_topic(cluster, "events", 3, "min.insync.replicas=2")
    create_topic(cluster, "ledger", 2, "min.insync.replicas=2")
    streamed_dir = cluster.brokers[cluster.broker_ids[0]].data_dir
    cluster.wait_until(lambda: all((streamed_dir / f"{t}-{p}").is_dir() for t, n in (("events", 3), ("ledger", 2))
                                   for p in range(n)), 30, f"every partition's directory in {streamed_dir}")
    collector = StreamCollector()
    query = start_stream(spark_session, str(streamed_dir), cluster.base_dir / "stream-checkpoint", collector)
    try:
        plain, committed, aborted = produce(cluster)
        expected = plain + len(committed)
        consumed = consume_records(cluster, ("events", "ledger"), expected)
        streamed = stream_rows(cluster, query, collector, expected)
    finally:
        query.stop()
    assert collections.Counter(streamed) == collections.Counter(r[:3] + (r[4],) for r in consumed), \
        f"the stream saw {len(streamed)} rows ({len(set(streamed))} distinct); the consumer read {len(consumed)}"
    assert len(consumed) == expected and len({r[:3] for r in consumed}) == expected, \
        f"the consumer read {len(consumed)} records, expected {expected} distinct"
    assert not {r[4] for r in consumed} & set(aborted), "read_committed consumer saw aborted records"

    began = time.monotonic()
    for broker_id in cluster.broker_ids:
        assert cluster.stop_broker(broker_id, timeout_s=60) is not None, f"broker {broker_id} did not stop"
    stopped_s = time.monotonic() - began
    log_dirs = [str(cluster.brokers[b].data_dir) for b in cluster.broker_ids]

    began = time.monotonic()
    want = sorted(consumed)
    for broker_id, log_dir in zip(cluster.broker_ids, log_dirs):
        replica = sorted(spark_records(spark_session, log_dir, "read_committed"))
        assert replica == want, (f"broker {broker_id}'s log dir: {len(replica)} records, the consumer read "
                                 f"{len(want)}; first difference: "
                                 f"{next((a, b) for a, b in zip(replica + [None] * len(want), want) if a != b)}")

    together = spark_records(spark_session, log_dirs, "read_committed")
    copies = collections.Counter(together)
    assert all(n == len(log_dirs) for n in copies.values()), \
        [r for r, n in copies.items() if n != len(log_dirs)][:3]
    assert sorted(copies) == want
    by_position = {r[:3] for r in together}
    assert len(by_position) == len(want), "replicas disagree on some (topic, partition, offset)"

    uncommitted = spark_records(spark_session, log_dirs, "read_uncommitted")
    distinct = {r[:3]: r for r in uncommitted}
    extra = sorted(r[4] for r in distinct.values() if r not in copies)
    assert extra == sorted(aborted), f"read_uncommitted added {len(extra)} records, {len(aborted)} were aborted"
    spark_s = time.monotonic() - began

    print(f"\n[spark stream] started before producing, over broker {cluster.broker_ids[0]}'s log dir: "
          f"{len(streamed)} rows, each committed record once, no aborted one")
    print(f"\n[spark on kafka brokers] produced: {plain} non-transactional + {len(committed)} committed + "
          f"{len(aborted)} aborted; consumer (read_committed) read {len(consumed)}; Spark read_committed: "
          f"{len(want)} per broker log dir, {len(together)} over the three ({len(copies)} distinct, "
          f"{len(log_dirs)} identical copies each); read_uncommitted: {len(distinct)} distinct "
          f"({len(extra)} aborted). Brokers stopped in {stopped_s:.1f} s; Spark's five reads took {spark_s:.1f} s")
