"""A data directory Apache Kafka 4.3.1 writes during the run, and the clients' traffic that made it:
what the ../shared corpora (real KRaft data, Kafka-written topic logs, real client captures) hold,
made on a fresh clone. The session fixture ``kafka_written`` (tests/interop/conftest.py) makes it
once; tests/interop/test_readers_on_kafka_written_data.py and test_held_out_claims_on_kafka_data.py
read it.

One JVM (process.roles=broker,controller, 256 MB heap) is formatted --standalone, with a snapshot
after every new metadata record (metadata.log.max.record.bytes.between.snapshots=1). While dumpcap
captures the broker's port:
- kafka-python creates one topic per compression.type (the broker recompresses with Java's
  codecs), produces 300 records to each, commits and aborts a transaction;
- a compacted topic gets keyed records and tombstones until Kafka rolls a segment, and Kafka's log
  cleaner compacts it (its cleaned segments, the tombstones' delete horizon, its checkpoint);
- confluent-kafka produces (zstd, idempotent), kcat lists the metadata and consumes;
- Kafka's Java clients (ProducerPerformance's producer, ConsoleConsumer in a classic group,
  TopicCommand's Admin) produce, consume and describe, in the tests' shared tool JVM.
Then the node is stopped with SIGTERM (a clean shutdown writes producer snapshots).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.interop import tool_runs
from tests.interop.broker_judges import wait_until
from tests.interop.kafka_procs import KafkaNode, KafkaProcessError, run_in_own_jvm
from tests.peers import kcat, loopback_capture, until_captured

CLUSTER_ID = "S2Fma2FXcml0dGVuRGF0YQ"
CODECS = ("uncompressed", "gzip", "snappy", "lz4", "zstd")
RECORDS = 300
TXN_TOPIC = "txn"
CLIENTS_TOPIC = "clients"
COMPACTED_TOPIC = "compacted"
JAVA_TOPIC = "java"
JAVA_RECORDS = 200
JAVA_GROUP = "java-group"
NODE_PROPERTIES = {
    "metadata.log.max.record.bytes.between.snapshots": "1",
    # a NoOpRecord (so a snapshot) every 5 s rather than every 0.5 s: tens of snapshots, not hundreds
    "metadata.max.idle.interval.ms": "5000",
    "num.partitions": "1", "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1", "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",        # the Java consumer's classic group forms at once
    # The log cleaner (KafkaNode turns it off): on, looking for work every 100 ms, with buffers a
    # 256 MB heap can hold.
    "log.cleaner.enable": "true", "log.cleaner.backoff.ms": "100", "log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024),
    "log.cleaner.io.buffer.size": "65536",
}


def _create_and_produce(bootstrap: str) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    compacted = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"}
    try:
        admin.create_topics([NewTopic(f"codec-{codec}", 1, 1, topic_configs={"compression.type": codec})
                             for codec in CODECS] + [NewTopic(TXN_TOPIC, 1, 1), NewTopic(CLIENTS_TOPIC, 1, 1),
                                                     NewTopic(JAVA_TOPIC, 1, 1),
                                                     NewTopic(COMPACTED_TOPIC, 1, 1, topic_configs=compacted)],
                            timeout_ms=30000)
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=4096,
                             request_timeout_ms=30000, max_block_ms=30000)
    try:
        for codec in CODECS:
            futures = [producer.send(f"codec-{codec}", key=b"k%d" % (n % 7), value=b"value %06d " % n + b"z" * 50)
                       for n in range(RECORDS)]
            producer.flush(timeout=30)
            for future in futures:
                future.get(timeout=30)
    finally:
        producer.close(timeout=10)
    txn = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kafkawire-evidence",
                        request_timeout_ms=30000, max_block_ms=30000)
    try:
        txn.init_transactions()
        for commit in (True, False):
            txn.begin_transaction()
            for n in range(10):
                txn.send(TXN_TOPIC, value=b"txn %d" % n)
            txn.flush(timeout=30)           # so that the aborted records reach the log too
            txn.commit_transaction() if commit else txn.abort_transaction()
    finally:
        txn.close(timeout=10)


def compacted_partition(node: KafkaNode) -> Path:
    return node.data_dir / f"{COMPACTED_TOPIC}-0"


def _compact(node: KafkaNode) -> None:
    """The same keys (and a tombstone) again and again until Kafka has rolled the segment twice
    (segment.ms=100: a roll happens on an append once the segment is that old), then a wait until
    the cleaner has compacted everything before the active segment: two segments of the same keys
    into one record per key."""
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=node.broker_address, acks="all", linger_ms=0,
                             request_timeout_ms=30000, max_block_ms=30000)
    sent = [0]

    def segments():
        return sorted(compacted_partition(node).glob("*.log"))

    def rolled_twice():
        for key in range(5):
            producer.send(COMPACTED_TOPIC, key=b"key-%d" % key, value=None if key == 0 else b"v%d" % sent[0])
        producer.flush(timeout=30)
        sent[0] += 1
        return len(segments()) >= 3
    try:
        wait_until(rolled_twice, "Kafka to roll the compacted topic's segment twice", 60)
    finally:
        producer.close(timeout=10)
    active_base = int(segments()[-1].name[:20])

    def cleaned():
        checkpoint = node.data_dir / "cleaner-offset-checkpoint"
        return checkpoint.exists() and f"{COMPACTED_TOPIC} 0 {active_base}" in checkpoint.read_text().splitlines()
    wait_until(cleaned, "Kafka's log cleaner to compact the topic up to its active segment", 60)


def _other_clients(bootstrap: str) -> None:
    """confluent-kafka produces (zstd, idempotent), kcat lists the metadata and consumes a topic."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "zstd", "enable.idempotence": True})
    for n in range(50):
        producer.produce(CLIENTS_TOPIC, value=b"confluent %d" % n)
    assert producer.flush(30) == 0, "confluent-kafka did not deliver within 30 s"
    for args in (["-L"], ["-C", "-t", "codec-gzip", "-o", "beginning", "-c", "20", "-e"]):
        result = subprocess.run([kcat(), "-b", bootstrap, *args], capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr


def _java_tool(main_class: str, *args: str) -> subprocess.CompletedProcess:
    """Kafka's tool in the shared tool JVM (one JVM for the run's tools), or in one of its own
    when javac is missing."""
    result = tool_runs.run_in_shared_jvm(main_class, *args, timeout=120)
    if result is None:
        result = run_in_own_jvm(main_class, args, 120, None)
    if result.returncode != 0:
        raise KafkaProcessError(f"{main_class} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return result


def _java_clients(bootstrap: str) -> None:
    """Kafka 4.3.1's own clients: ProducerPerformance's producer (lz4, acks=all),
    ConsoleConsumer in a classic group (JoinGroup, SyncGroup, OffsetCommit, LeaveGroup) and
    TopicCommand's Admin client."""
    _java_tool("org.apache.kafka.tools.ProducerPerformance", "--topic", JAVA_TOPIC,
               "--num-records", str(JAVA_RECORDS), "--record-size", "100", "--throughput", "-1",
               "--command-property", f"bootstrap.servers={bootstrap}", "acks=all", "compression.type=lz4")
    consumed = _java_tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bootstrap,
                          "--topic", JAVA_TOPIC, "--from-beginning", "--max-messages", str(JAVA_RECORDS),
                          "--group", JAVA_GROUP, "--timeout-ms", "60000")
    assert len(consumed.stdout.splitlines()) == JAVA_RECORDS, consumed.stderr[-2000:]
    _java_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--describe",
               "--topic", JAVA_TOPIC)


def _every_client(node: KafkaNode) -> None:
    _create_and_produce(node.broker_address)
    _compact(node)
    _other_clients(node.broker_address)
    _java_clients(node.broker_address)


def _clients_captured(node: KafkaNode) -> str | None:
    """Run every client with dumpcap capturing the broker's port; why there is no capture, or None."""
    try:
        with loopback_capture(node.broker_port, node.directory / "clients.pcapng"):
            _every_client(node)
            until_captured(node.broker_port, node.directory / "clients.pcapng")
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:
        _every_client(node)         # the data directory's checks still need the data
        return str(exc)
    return None


def snapshots(metadata_dir: Path) -> list[Path]:
    return [p for p in metadata_dir.glob("*.checkpoint") if p.name != "bootstrap.checkpoint"]


def write_kafka_data(directory: Path) -> KafkaNode:
    """The stopped node, after the work above; ``capture_problem`` says why there is no capture."""
    node = KafkaNode(directory, 1, "broker,controller", properties=NODE_PROPERTIES)
    try:
        node.format(CLUSTER_ID, "--standalone")
        node.start()
        node.wait_ready()
        node.capture_problem = _clients_captured(node)
        wait_until(lambda: snapshots(node.metadata_dir), "a metadata snapshot", 60)
        code = node.stop(timeout_s=60)
        assert code in (0, 143), f"Kafka exited with {code} after SIGTERM:\n{node.log_tail(60)}"
    except BaseException:
        print(f"\n--- Kafka log tail: {node.log_path}\n{node.log_tail(80)}")
        raise
    finally:
        node.kill()
    return node
