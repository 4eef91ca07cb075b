"""Client traffic that makes a Kafka broker write its coordinator topics: offsets and group
metadata to ``__consumer_offsets`` (a classic consumer group with kafka-python, a KIP-848
``consumer`` group and a manually assigned one with confluent-kafka), transaction state to
``__transaction_state`` (a committed and an aborted transaction, and offsets sent to one),
and share-group state to ``__share_group_state`` (Kafka's console share consumer in a share
group, which also writes the share group's records to ``__consumer_offsets``), so that dump-log's coordinator decoders can be compared with Kafka's on real files.

Every wait is bounded; the clients are closed before returning.
"""
from __future__ import annotations

import time

TOPIC = "coordinator-traffic"
MESSAGES = 6


def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=20000, max_block_ms=30000)
    try:
        for i in range(MESSAGES):
            producer.send(TOPIC, key=f"k{i}".encode(), value=f"v{i}".encode())
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)


def _classic_group(bootstrap: str) -> None:
    """kafka-python in group ``classic-group``: join, consume, commit, leave."""
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id="classic-group",
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=1000, request_timeout_ms=30000)
    try:
        seen, deadline = 0, time.monotonic() + 60
        while seen < MESSAGES and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                seen += len(records)
        consumer.commit()
        if seen < MESSAGES:
            raise AssertionError(f"the classic group consumed {seen} of {MESSAGES} messages in 60 s")
    finally:
        consumer.close()


def _confluent_groups(bootstrap: str) -> None:
    """confluent-kafka in a KIP-848 ``consumer`` group, and with a manual assignment."""
    from confluent_kafka import Consumer, TopicPartition
    modern = Consumer({"bootstrap.servers": bootstrap, "group.id": "modern-group", "group.protocol": "consumer",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        modern.subscribe([TOPIC])
        seen, deadline = 0, time.monotonic() + 60
        while seen < MESSAGES and time.monotonic() < deadline:
            message = modern.poll(1.0)
            if message is not None and message.error() is None:
                seen += 1
        if seen < MESSAGES:
            raise AssertionError(f"the consumer-protocol group consumed {seen} of {MESSAGES} messages in 60 s")
        modern.commit(asynchronous=False)
    finally:
        modern.close()
    manual = Consumer({"bootstrap.servers": bootstrap, "group.id": "manual-group", "enable.auto.commit": False})
    try:
        manual.commit(offsets=[TopicPartition(TOPIC, 0, 3)], asynchronous=False)
    finally:
        manual.close()


def _transactions(bootstrap: str) -> None:
    """One committed transaction (with offsets sent to it) and one aborted."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "txn-producer"})
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-group"})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce(TOPIC, key=b"tk", value=b"committed")
        producer.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 2)], group.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        producer.begin_transaction()
        producer.produce(TOPIC, key=b"tk", value=b"aborted")
        producer.flush(30)
        producer.abort_transaction(30)
    finally:
        group.close()


def _share_group(bootstrap: str) -> None:
    """Kafka's console share consumer reads the topic in share group ``share-group`` (no Python
    client speaks the share protocol); the group starts from the earliest offset."""
    from tests.interop.kafka_procs import run_kafka_tool
    run_kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, "--alter", "--entity-type",
                   "groups", "--entity-name", "share-group", "--add-config", "share.auto.offset.reset=earliest",
                   check=True, timeout=60)
    consumed = run_kafka_tool("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server",
                              bootstrap, "--topic", TOPIC, "--group", "share-group", "--max-messages", str(MESSAGES),
                              "--timeout-ms", "30000", check=True, timeout=90)
    if len(consumed.stdout.splitlines()) != MESSAGES:
        raise AssertionError(f"the share consumer printed {consumed.stdout!r}, not {MESSAGES} messages")


# What a broker needs to host the share coordinator's topic on its own.
SHARE_STATE_PROPERTIES = {"share.coordinator.state.topic.replication.factor": "1",
                          "share.coordinator.state.topic.min.isr": "1",
                          "share.coordinator.state.topic.num.partitions": "1"}


def fill_coordinator_topics(bootstrap: str) -> None:
    _produce(bootstrap)
    _classic_group(bootstrap)
    _confluent_groups(bootstrap)
    _transactions(bootstrap)
    _share_group(bootstrap)
