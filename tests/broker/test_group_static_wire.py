"""Static membership (KIP-345) through the wire, on the session's embedded broker
(kafkawire.testing): a librdkafka consumer with ``group.instance.id`` restarts and takes its own
place in the group, as with Kafka 4.3.1.
"""
from __future__ import annotations

import time

import pytest

from kafkawire.messages.describe_groups_request import DescribeGroupsRequest
from kafkawire.messages.heartbeat_request import HeartbeatRequest
from kafkawire.protocol.error_codes import Errors

from .wire import call      # a raw request to the session's broker

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")
WAIT_S = 30
TOPIC, GROUP, INSTANCE = "static-members", "static-members", "instance-1"


def produce(node, *values: bytes) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap_servers})
    for value in values:
        producer.produce(TOPIC, value, partition=0)
    assert producer.flush(WAIT_S) == 0


def read(consumer, count: int) -> list:
    got, deadline = [], time.monotonic() + WAIT_S
    while len(got) < count:
        assert time.monotonic() < deadline, f"timed out with {got}"
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got.append(message.value())
    return got


def static_consumer(node):
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": node.bootstrap_servers, "group.id": GROUP, "group.instance.id": INSTANCE,
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 45_000})
    consumer.subscribe([TOPIC])
    return consumer


def test_a_restarted_static_consumer_replaces_its_old_member_id_which_is_then_fenced(kafkawire_broker):
    """The restarted instance reads on at once under a new member id (its old id is not waited
    for: a static member's close sends no LeaveGroup), the group lists only the new id, and the
    old id's Heartbeat is FENCED_INSTANCE_ID."""
    node = kafkawire_broker
    admin = confluent_admin.AdminClient({"bootstrap.servers": node.bootstrap_servers})
    admin.create_topics([confluent_admin.NewTopic(TOPIC, 1, 1)])[TOPIC].result(WAIT_S)
    produce(node, b"first")
    first = static_consumer(node)
    assert read(first, 1) == [b"first"]
    first.commit(asynchronous=False)
    old_id = first.memberid()
    first.close()
    produce(node, b"second")
    restarted = static_consumer(node)
    assert read(restarted, 1) == [b"second"]
    group, = call(node, DescribeGroupsRequest(groups=[GROUP]), api_version=5).groups
    assert group.group_state == "Stable"
    assert [(m.member_id, m.group_instance_id) for m in group.members] == [(restarted.memberid(), INSTANCE)]
    assert restarted.memberid() != old_id
    fenced = call(node, HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=old_id,
                                         group_instance_id=INSTANCE), api_version=4)
    assert fenced.error_code == Errors.FENCED_INSTANCE_ID
    restarted.close()
