"""Issue 29's client judges that no other broker test covers: aiokafka (its admin client creates
the topic, an idempotent acks=all producer, a consumer in a group committing its offsets; a
transactional producer committing and aborting, read back read_committed) and kcat's balanced consumer (`-G`,
librdkafka's group consumer) against the session's embedded broker. What each group committed
is read back by kafka-python, so a group that only seemed to work (records read, nothing
committed at the coordinator) fails.
"""
from __future__ import annotations

import asyncio
import shutil
import subprocess
import time

import pytest

# What the entry point does for an installed kafkawire; harmless on top of it (same name).
pytest_plugins = ["kafkawire.testing.pytest_plugin"]

kafka = pytest.importorskip("kafka")
WAIT_S = 60


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    """The group's committed offsets of ``topic``, as kafka-python's OffsetFetch reads them."""
    reader = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {p: reader.committed(kafka.TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        reader.close()


def test_aiokafka_produces_idempotently_and_a_group_member_reads_and_commits(kafkawire_broker):
    aiokafka = pytest.importorskip("aiokafka")
    bootstrap = kafkawire_broker.bootstrap_servers
    topic, group = "aiokafka-orders", "aiokafka-group"
    values = [b"order-%d" % i for i in range(40)]

    async def produce_and_consume():
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
        finally:
            await admin.close()
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                                             compression_type="gzip", linger_ms=5)
        await producer.start()
        try:
            sent = [await producer.send_and_wait(topic, value, partition=i % 2) for i, value in enumerate(values)]
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                             auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        got: dict[int, list[tuple[int, bytes]]] = {0: [], 1: []}
        try:
            deadline = time.monotonic() + WAIT_S
            while sum(map(len, got.values())) < len(values) and time.monotonic() < deadline:
                for tp, messages in (await consumer.getmany(timeout_ms=500)).items():
                    got[tp.partition] += [(m.offset, m.value) for m in messages]
            await consumer.commit()
        finally:
            await consumer.stop()
        return sent, got

    sent, got = asyncio.run(produce_and_consume())
    assert [(m.partition, m.offset) for m in sent] == [(i % 2, i // 2) for i in range(len(values))]
    assert got == {p: [(i // 2, v) for i, v in enumerate(values) if i % 2 == p] for p in (0, 1)}
    assert committed(bootstrap, group, topic, 2) == {0: 20, 1: 20}


def test_aiokafkas_transactional_producer_commits_and_aborts_and_read_committed_sees_the_commit(kafkawire_broker):
    aiokafka = pytest.importorskip("aiokafka")
    bootstrap, topic = kafkawire_broker.bootstrap_servers, "aiokafka-payments"

    async def transactions_then_read():
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="aiokafka-payer")
        await producer.start()
        try:
            for outcome in ("commit", "abort", "commit"):
                await producer.begin_transaction()
                for i in range(3):
                    await producer.send_and_wait(topic, f"{outcome}-{i}".encode(), partition=0)
                if outcome == "commit":
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                             enable_auto_commit=False, isolation_level="read_committed")
        await consumer.start()
        partition = aiokafka.TopicPartition(topic, 0)
        consumer.assign([partition])
        got: list[bytes] = []
        try:
            deadline = time.monotonic() + WAIT_S
            while len(got) < 6 and time.monotonic() < deadline:
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    got += [m.value for m in messages]
            end = (await consumer.end_offsets([partition]))[partition]
        finally:
            await consumer.stop()
        return got, end

    got, end = asyncio.run(transactions_then_read())
    assert got == [b"commit-0", b"commit-1", b"commit-2"] * 2
    assert end == 12                        # 9 records and 3 markers: read_committed skipped 3 and the markers


def test_kcats_balanced_consumer_reads_every_record_in_a_group_and_commits_at_close(kafkawire_broker):
    if shutil.which("kcat") is None:
        from tests.conftest import unavailable
        unavailable("kcat is not installed")
    bootstrap = kafkawire_broker.bootstrap_servers
    topic, group = "kcat-group-orders", "kcat-group"
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(30):
        producer.send(topic, b"line %d" % i, partition=0).get(timeout=WAIT_S)     # auto-created, one partition
    producer.close(timeout=10)
    # -G: librdkafka's group consumer (JoinGroup, SyncGroup, OffsetFetch, heartbeats), -e: exit once
    # every assigned partition is read to its end; the offsets are committed at close.
    consumed = subprocess.run(["kcat", "-b", bootstrap, "-G", group, topic, "-o", "beginning", "-e", "-q",
                               "-f", "%p %o %s\n"], text=True, capture_output=True, timeout=WAIT_S)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout == "".join(f"0 {i} line {i}\n" for i in range(30)), consumed.stderr
    assert committed(bootstrap, group, topic, 1) == {0: 30}
