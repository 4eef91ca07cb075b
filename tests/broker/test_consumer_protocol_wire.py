"""KIP-848 consumer groups through the wire, on the session's embedded broker (kafkawire.testing):
librdkafka consumers with ``group.protocol=consumer`` share a topic's partitions, and one leaving
hands its partitions over, as with Kafka 4.3.1. Each step waits for a heartbeat (Kafka's default
``group.consumer.heartbeat.interval.ms``, 5 s): about 10 s in all.
"""
from __future__ import annotations

import time

import pytest

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.consumer_group_describe_request import ConsumerGroupDescribeRequest
from kafkawire.protocol.error_codes import Errors
from .test_leader_epoch_apis import call

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")
WAIT_S = 30
TOPIC, GROUP, PARTITIONS = "kip848", "kip848", 4


def consumer(node, name: str):
    c = confluent_kafka.Consumer({"bootstrap.servers": node.bootstrap_servers, "group.id": GROUP,
                                  "group.protocol": "consumer", "client.id": name, "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    return c


def wait_for_assignments(consumers, counts: list) -> list:
    """Poll every consumer until each holds ``counts[i]`` partitions; their partitions."""
    deadline = time.monotonic() + WAIT_S
    while True:
        held = [{tp.partition for tp in c.assignment()} for c in consumers]
        if [len(h) for h in held] == counts:
            return held
        assert time.monotonic() < deadline, f"assignments {held}, wanted sizes {counts}"
        for c in consumers:
            c.poll(0.05)


def test_two_consumers_share_the_partitions_and_one_leaving_hands_its_partitions_over(kafkawire_broker):
    node = kafkawire_broker
    versions = {k.api_key: (k.min_version, k.max_version) for k in call(
        node, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).api_keys}
    assert versions[68] == (0, 1) and versions[69] == (0, 1)
    admin = confluent_admin.AdminClient({"bootstrap.servers": node.bootstrap_servers})
    admin.create_topics([confluent_admin.NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(WAIT_S)
    first = consumer(node, "first")
    assert wait_for_assignments([first], [4]) == [{0, 1, 2, 3}]
    second = consumer(node, "second")
    a, b = wait_for_assignments([first, second], [2, 2])
    assert a | b == {0, 1, 2, 3}
    described = call(node, ConsumerGroupDescribeRequest(group_ids=[GROUP]), 0).groups[0]
    assert (described.error_code, described.group_state, described.assignor_name) == (Errors.NONE, "Stable",
                                                                                      "uniform")
    assert sorted(m.client_id for m in described.members) == ["first", "second"]
    second.close()                               # a leave heartbeat (epoch -1)
    assert wait_for_assignments([first], [4]) == [{0, 1, 2, 3}]
    first.close()
