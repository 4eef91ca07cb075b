"""A classic consumer and a KIP-848 consumer in one group through the wire, on the session's
embedded broker (kafkawire.testing): librdkafka with ``group.protocol=classic`` joins the consumer
group of a ``group.protocol=consumer`` member (served by the group's server assignor, as Kafka
4.3.1 serves it); between them every partition is read exactly once; when the consumer-protocol
member leaves, the group is downgraded to a classic group and the classic member takes it all.
"""
from __future__ import annotations

import time

import pytest

from kafkawire.messages.consumer_group_describe_request import ConsumerGroupDescribeRequest
from kafkawire.protocol.error_codes import Errors
from .test_leader_epoch_apis import call

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")
WAIT_S = 40
TOPIC, GROUP, PARTITIONS = "mixed-protocols", "mixed-protocols", 4


def consumer(node, name: str, protocol: str):
    settings = {"bootstrap.servers": node.bootstrap_servers, "group.id": GROUP, "group.protocol": protocol,
                "client.id": name, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if protocol == "classic":
        settings.update({"session.timeout.ms": 10_000, "heartbeat.interval.ms": 500,
                         "partition.assignment.strategy": "cooperative-sticky"})
    c = confluent_kafka.Consumer(settings)
    c.subscribe([TOPIC])
    return c


def poll_until(consumers, done, what: str, read: list) -> None:
    """Poll every consumer (collecting the records read into ``read``) until ``done()``."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, what
        for c in consumers:
            message = c.poll(0.05)
            if message is not None and message.error() is None:
                read.append((c, message.partition(), message.value()))


def held(c) -> set:
    return {tp.partition for tp in c.assignment()}


def test_a_classic_and_a_consumer_protocol_member_share_a_group_and_the_downgrade_hands_all_over(kafkawire_broker):
    node = kafkawire_broker
    admin = confluent_admin.AdminClient({"bootstrap.servers": node.bootstrap_servers})
    admin.create_topics([confluent_admin.NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(WAIT_S)
    modern, read = consumer(node, "modern", "consumer"), []
    poll_until([modern], lambda: len(held(modern)) == PARTITIONS, "the consumer member's 4 partitions", read)
    classic = consumer(node, "classic", "classic")
    poll_until([modern, classic], lambda: len(held(modern)) == len(held(classic)) == 2,
               f"2 partitions each, not {held(modern)} and {held(classic)}", read)
    assert held(modern) | held(classic) == set(range(PARTITIONS))
    described = call(node, ConsumerGroupDescribeRequest(group_ids=[GROUP]), 1).groups[0]
    assert described.error_code == Errors.NONE
    assert sorted((m.client_id, m.member_type) for m in described.members) == [("classic", 0), ("modern", 1)]
    producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap_servers})
    for p in range(PARTITIONS):
        producer.produce(TOPIC, value=f"first-{p}".encode(), partition=p)
    producer.flush(WAIT_S)
    poll_until([modern, classic], lambda: len(read) >= PARTITIONS, "every record read", read)
    assert sorted(p for _, p, _ in read) == list(range(PARTITIONS))      # each partition read once
    assert {p for c, p, _ in read if c is classic} == held(classic)      # by its owner
    committed = classic.commit(asynchronous=False)  # a classic OffsetCommit at its generation (the member epoch)
    assert {tp.partition for tp in committed if tp.error is None and tp.offset == 1} == held(classic)
    modern.close()                                  # the last consumer-protocol member: a downgrade
    poll_until([classic], lambda: len(held(classic)) == PARTITIONS, "the classic member's 4 partitions", read)
    groups = admin.describe_consumer_groups([GROUP])[GROUP].result(WAIT_S)
    assert groups.type == confluent_kafka.ConsumerGroupType.CLASSIC
    classic.close()
