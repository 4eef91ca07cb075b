"""kafka-python's producer and group consumer through a broker, for the node tests that check a
whole round trip (the one copy of the helper they share)."""
from __future__ import annotations

import time

__all__ = ["create_topic", "produce_records", "consume_in_group"]


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
    """CreateTopics through kafka-python's admin client (a broker forwards it to the active controller)."""
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
    try:
        admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor)])
    finally:
        admin.close()


def produce_records(bootstrap: str, topic: str, count: int, partitions: int) -> list[bytes]:
    """``count`` values sent with acks=all, spread over the partitions; the values, once all acknowledged."""
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    values = [b"v%d" % i for i in range(count)]
    sent = [producer.send(topic, value=value, partition=i % partitions) for i, value in enumerate(values)]
    assert all(f.get(timeout=60).offset >= 0 for f in sent)
    producer.close(timeout=10)
    return values


def consume_in_group(bootstrap: str, topic: str, count: int, group: str, timeout_s: float = 60) -> list[bytes]:
    """The values a group consumer subscribed to ``topic`` reads from the start, until ``count`` or the timeout."""
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             consumer_timeout_ms=1000)
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got += [m.value for m in consumer]
    consumer.close()
    return got
