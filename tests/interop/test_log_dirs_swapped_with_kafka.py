"""Issue 29's judge "our broker starts on a log directory a Kafka 4.3.1 broker wrote, and a Kafka
broker starts on ours": one combined node's directory (its metadata log, a topic, __consumer_offsets,
__transaction_state, the checkpoints) handed from one implementation to the other and back.

1. A Kafka 4.3.1 combined node takes, from confluent-kafka, plain idempotent records, a committed
   and an aborted transaction, and a group's commit; it is stopped.
2. `kafkawire server-start` runs on the same server.properties and directory: it serves what
   Kafka wrote (read_committed: the committed records only, at Kafka's offsets), the group's
   committed offset, and takes the same traffic again (the transactional id goes on from Kafka's
   state); stopped with SIGTERM.
3. Kafka starts on the directory kafkawire wrote to and serves both rounds and the new commit.

Every wait is bounded; each process is killed by pid at teardown.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid

import pytest

from kafkawire.storage.state_files import random_uuid, uuid_to_kafka
from tests.broker.wire import registered
from tests.interop.kafka_procs import KafkaNode
from tests.interop.swap_state import wait_kafka_started

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")
pytestmark = pytest.mark.slow

TOPIC, GROUP, TXN_ID = "swapped", "swapped-group", "swapped-tx"
WAIT_S = 60


def produce_round(bootstrap: str, tag: str) -> None:
    """5 idempotent records, a committed and an aborted transaction of 3 each; then the group
    reads 5 records from its committed position and commits."""
    plain = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(5):
        plain.produce(TOPIC, f"{tag}-plain-{i}".encode(), partition=0)
    assert plain.flush(WAIT_S) == 0
    txn = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID})
    txn.init_transactions(WAIT_S)
    for outcome in ("committed", "aborted"):
        txn.begin_transaction()
        for i in range(3):
            txn.produce(TOPIC, f"{tag}-{outcome}-{i}".encode(), partition=0)
        txn.flush(WAIT_S)
        if outcome == "committed":
            txn.commit_transaction(WAIT_S)
        else:
            txn.abort_transaction(WAIT_S)
    member = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                       "auto.offset.reset": "earliest", "enable.auto.commit": False})
    member.subscribe([TOPIC])
    read, deadline = 0, time.monotonic() + WAIT_S
    while read < 5 and time.monotonic() < deadline:
        message = member.poll(0.5)
        read += message is not None and message.error() is None
    assert read == 5
    member.commit(asynchronous=False)
    member.close()


def served(bootstrap: str) -> tuple[list[tuple[int, str]], int]:
    """Every record a read_committed consumer reads from the partition's start to its end, and
    the group's committed offset."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}",
                                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, confluent_kafka.OFFSET_BEGINNING)])
    got, deadline = [], time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error() is not None:
            assert message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF, message.error()
            break
        got.append((message.offset(), message.value().decode()))
    consumer.close()
    group = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    [committed] = group.committed([confluent_kafka.TopicPartition(TOPIC, 0)], timeout=30)
    group.close()
    return got, committed.offset


def expected(*tags: str) -> list[str]:
    return [f"{tag}-{kind}-{i}" for tag in tags for kind, count in (("plain", 5), ("committed", 3))
            for i in range(count)]


def start_kafkawire(node: KafkaNode) -> subprocess.Popen:
    """`kafkawire server-start` on the Kafka node's own server.properties, once it serves."""
    log = open(node.directory / "kafkawire.log", "a")
    process = subprocess.Popen([sys.executable, "-m", "kafkawire.tools.cli", "server-start", str(node.config_path)],
                               stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    deadline = time.monotonic() + WAIT_S
    while registered(node.broker_address) != [1]:
        tail = (node.directory / "kafkawire.log").read_text()[-3000:]
        assert process.poll() is None, f"kafkawire exited {process.returncode}:\n{tail}"
        assert time.monotonic() < deadline, f"kafkawire did not serve within {WAIT_S} s:\n{tail}"
        time.sleep(0.2)
    return process


def test_kafkawire_serves_a_kafka_brokers_directory_and_kafka_serves_it_back(kafka_libs, tmp_path):
    node = KafkaNode(tmp_path / "node", 1, "broker,controller", properties={
        "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"})
    kafkawire = None
    try:
        node.format(uuid_to_kafka(random_uuid()), "--standalone")
        node.start()
        node.wait_ready()
        admin = confluent_admin.AdminClient({"bootstrap.servers": node.broker_address})
        for future in admin.create_topics([confluent_admin.NewTopic(TOPIC, 1, 1)]).values():
            future.result(WAIT_S)
        produce_round(node.broker_address, "kafka")
        by_kafka = served(node.broker_address)
        assert [v for _, v in by_kafka[0]] == expected("kafka") and by_kafka[1] == 5
        assert node.stop(timeout_s=WAIT_S) is not None, node.log_tail()

        kafkawire = start_kafkawire(node)
        assert served(node.broker_address) == by_kafka          # Kafka's offsets, markers and group offsets
        produce_round(node.broker_address, "kafkawire")
        by_kafkawire = served(node.broker_address)
        assert [v for _, v in by_kafkawire[0]] == expected("kafka", "kafkawire") and by_kafkawire[1] == 15
        kafkawire.send_signal(signal.SIGTERM)
        assert kafkawire.wait(timeout=WAIT_S) == 0

        since = len(node.log_text())
        node.start()
        wait_kafka_started(node, since)            # not wait_ready: the first start's line is in the log
        assert served(node.broker_address) == by_kafkawire
    finally:
        if kafkawire is not None and kafkawire.poll() is None:
            kafkawire.kill()
            kafkawire.wait(timeout=30)
        node.kill()
