"""Cordoned log directories (KIP-1066) with a kafkawire process: a combined node with two log
directories, the first cordoned in server.properties, puts a new topic's logs in the second and
describes the first as cordoned; once ``cordoned.log.dirs=*`` is set dynamically for it, its
heartbeat tells the controller and CreateTopics places no replica on it (Kafka's
INVALID_REPLICATION_FACTOR message); uncordoned, topics are created again. One node, killed by pid.
"""
from __future__ import annotations

import os

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_log_dirs_request import DescribeLogDirsRequest
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)
from kafkawire.protocol.error_codes import Errors

from .test_combined_node import WAIT_S, combined_node


def set_cordoned(node, value: str) -> None:
    response = node.call(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=4, resource_name="1", configs=[AlterableConfig(
            name="cordoned.log.dirs", config_operation=0, value=value)])]), api_version=1)
    assert [(r.error_code, r.error_message) for r in response.responses] == [(Errors.NONE, None)]


def create(node, name: str, validate_only: bool = False):
    response = node.call(CreateTopicsRequest(timeout_ms=10_000, validate_only=validate_only, topics=[CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])]))
    return response.topics[0].error_code, response.topics[0].error_message


def test_a_cordoned_directory_gets_no_new_log_and_a_fully_cordoned_broker_no_new_replica(tmp_path):
    a, b = str(tmp_path / "logs-a"), str(tmp_path / "logs-b")
    with combined_node(tmp_path / "node", log_dirs=f"{a},{b}", cordoned_log_dirs=a) as node:
        node.create_topic("t", partitions=3)
        assert {"t-0", "t-1", "t-2"} <= set(os.listdir(b))
        assert not [d for d in os.listdir(a) if d.startswith("t-")]
        described = node.call(DescribeLogDirsRequest(topics=None), api_version=5).results
        assert sorted((r.log_dir, r.is_cordoned) for r in described) == [(a, True), (b, False)]

        set_cordoned(node, "*")
        refused = ("Unable to replicate the partition 1 time(s): All brokers are currently fenced, or have all their "
                   "log directories cordoned.")
        node.quorum.wait_until(lambda: create(node, "u", validate_only=True)[0] == Errors.INVALID_REPLICATION_FACTOR,
                               WAIT_S, "the controller to learn that every directory is cordoned")
        assert create(node, "u") == (Errors.INVALID_REPLICATION_FACTOR, refused)

        set_cordoned(node, "")
        node.quorum.wait_until(lambda: create(node, "u")[0] == Errors.NONE, WAIT_S,
                               "the controller to learn that the directories are uncordoned")
