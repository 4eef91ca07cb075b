"""The admin APIs on kafkawire's broker listener (issue 29), on the session's embedded node
(kafkawire.testing): kafka-python's KafkaAdminClient creates a topic, adds partitions, alters
and describes configs and deletes the topic, whose partition directories are renamed
``-delete`` and removed ``log.segment.delete.delay.ms`` later; and every version the broker
advertises of each forwarded API and of DescribeConfigs is answered without an error.
"""
from __future__ import annotations

import asyncio
import os
import time
import uuid

import pytest

from kafkawire.messages.alter_configs_request import AlterConfigsRequest
from kafkawire.messages.alter_partition_reassignments_request import AlterPartitionReassignmentsRequest
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kafkawire.messages.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                   IncrementalAlterConfigsRequest)
from kafkawire.messages.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors

from .broker_api_table import KAFKA_BROKER_APIS
from .wire import call

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

kafka = pytest.importorskip("kafka")
WAIT_S = 30
# Kafka 4.3.1's broker: API key -> versions on a broker listener, of the APIs tested here
BROKER_RANGES = {key: KAFKA_BROKER_APIS[key] for key in (19, 20, 32, 33, 37, 43, 44, 45, 46, 55)}


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_kafka_pythons_admin_client_creates_alters_describes_and_deletes_and_the_logs_go(kafkawire_broker):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=kafkawire_broker.bootstrap_servers, request_timeout_ms=20_000)
    try:
        admin.create_topics([NewTopic("admin-orders", 1, 1)])
        admin.create_partitions({"admin-orders": NewPartitions(3)})
        # this broker's dynamic config: a deleted topic's logs go at once
        admin.alter_configs([ConfigResource(ConfigResourceType.BROKER, "1",
                                            configs={"log.segment.delete.delay.ms": "0"})])
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "admin-orders", configs={"retention.ms": "5000"})])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "admin-orders"),
                                            ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
        topic, broker = described["topic"]["admin-orders"], described["broker"]["1"]
        assert topic["retention.ms"]["value"] == "5000"
        assert topic["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert (topic["file.delete.delay.ms"]["value"], topic["file.delete.delay.ms"]["config_source"]) == (
            "0", "DYNAMIC_BROKER_CONFIG")
        assert broker["log.segment.delete.delay.ms"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
        assert broker["offsets.topic.replication.factor"]["config_source"] == "STATIC_BROKER_CONFIG"
        assert (broker["node.id"]["read_only"], broker["message.max.bytes"]["read_only"]) == (True, False)
        assert broker["log.retention.hours"]["value"] == "168"
        wait_for(lambda: all(os.path.isdir(os.path.join(kafkawire_broker.log_dir, f"admin-orders-{p}"))
                             for p in range(3)), "the three partition logs")
        admin.delete_topics(["admin-orders"])
        wait_for(lambda: not [n for n in os.listdir(kafkawire_broker.log_dir) if n.startswith("admin-orders")],
                 "the deleted topic's directories to be removed")
    finally:
        admin.close()


def versioned_requests(version: int, tag: str, topic_id: uuid.UUID) -> dict:
    """One request of each API, aimed so that it succeeds at ``version``."""
    made = f"admin-v-{tag}"
    return {
        19: CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name=made, num_partitions=1, replication_factor=1, assignments=[], configs=[])]),
        20: DeleteTopicsRequest(timeout_ms=10_000, topic_names=["admin-versions-doomed"]) if version < 6 else
        DeleteTopicsRequest(timeout_ms=10_000, topics=[DeleteTopicState(name="admin-versions-doomed")]),
        32: DescribeConfigsRequest(include_synonyms=True, include_documentation=version >= 3, resources=[
            DescribeConfigsResource(resource_type=2, resource_name="admin-versions", configuration_keys=None),
            DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=None)]),
        33: AlterConfigsRequest(validate_only=True, resources=[]),
        37: CreatePartitionsRequest(timeout_ms=10_000, validate_only=True, topics=[CreatePartitionsTopic(
            name="admin-versions", count=2, assignments=None)]),
        43: ElectLeadersRequest(election_type=0, topic_partitions=[], timeout_ms=10_000),
        44: IncrementalAlterConfigsRequest(validate_only=True, resources=[AlterConfigsResource(
            resource_type=2, resource_name="admin-versions", configs=[AlterableConfig(
                name="retention.ms", config_operation=0, value="1000")])]),
        45: AlterPartitionReassignmentsRequest(timeout_ms=10_000, topics=[]),
        46: ListPartitionReassignmentsRequest(timeout_ms=10_000, topics=None),
        55: DescribeQuorumRequest(topics=[TopicData(topic_name="__cluster_metadata",
                                                    partitions=[PartitionData(partition_index=0)])]),
    }


def error_codes(response) -> list[int]:
    """Every ErrorCode field of a response, nested ones included."""
    codes = []
    for field in type(response)._FIELDS:
        value = getattr(response, field.py_name, None)
        if field.py_name == "error_code":
            codes.append(value)
        for child in value if isinstance(value, list) else [value]:
            if hasattr(type(child), "_FIELDS"):
                codes += error_codes(child)
    return codes


def test_every_advertised_version_of_the_admin_apis_is_answered_without_an_error(kafkawire_broker):
    bootstrap = kafkawire_broker.bootstrap_servers
    call(bootstrap, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name="admin-versions", num_partitions=1, replication_factor=1, assignments=[], configs=[])]), 7)
    advertised = {k.api_key: (k.min_version, k.max_version) for k in call(bootstrap, ApiVersionsRequest(
        client_software_name="kafkawire-tests", client_software_version="1"), 3).api_keys}
    assert {key: advertised.get(key) for key in BROKER_RANGES} == BROKER_RANGES
    topic_id = call(bootstrap, MetadataRequest(topics=[MetadataRequestTopic(name="admin-versions")]), 12).topics[0].topic_id
    for key, (low, high) in BROKER_RANGES.items():
        for version in range(low, high + 1):
            if key == 20:          # something to delete each time
                call(bootstrap, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
                    name="admin-versions-doomed", num_partitions=1, replication_factor=1, assignments=[],
                    configs=[])]), 7)
            response = call(bootstrap, versioned_requests(version, f"{key}-{version}", topic_id)[key], version)
            assert set(error_codes(response)) <= {Errors.NONE}, (key, version, response)


def test_the_acl_apis_without_an_authorizer_answer_security_disabled(kafkawire_broker):
    """AclApis without authorizer.class.name: DescribeAcls is the broker's own answer ("... on the
    broker"), CreateAcls and DeleteAcls are forwarded and answered by the controller's AclApis."""
    from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
    from kafkawire.messages.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
    from kafkawire.messages.describe_acls_request import DescribeAclsRequest

    bootstrap = kafkawire_broker.bootstrap_servers
    disabled = int(Errors.SECURITY_DISABLED)
    described = call(bootstrap, DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None,
                                                    pattern_type_filter=1, principal_filter=None, host_filter=None,
                                                    operation=1, permission_type=1), 3)
    assert (described.error_code, described.error_message) == (disabled, "No Authorizer is configured on the broker")
    created = call(bootstrap, CreateAclsRequest(creations=[AclCreation(
        resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a", host="*", operation=3,
        permission_type=3)]), 3)
    assert [(r.error_code, r.error_message) for r in created.results] == [(disabled, "No Authorizer is configured.")]
    deleted = call(bootstrap, DeleteAclsRequest(filters=[DeleteAclsFilter(
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
        host_filter=None, operation=1, permission_type=1)]), 3)
    assert [(r.error_code, r.error_message) for r in deleted.filter_results] == [
        (disabled, "No Authorizer is configured.")]


def test_a_dynamic_config_change_the_brokers_thread_pool_would_refuse_is_answered_by_the_broker(kafkawire_broker):
    """Over the wire, the broker checks a change against its own current config (server.properties,
    then the stored dynamic configs) as Kafka's DynamicBrokerConfig.validate does: num.io.threads
    8 (Kafka's default) may at most double (kafkawire.metadata.dynamic_reconfiguration)."""
    def change(value: str):
        return call(kafkawire_broker.bootstrap_servers, IncrementalAlterConfigsRequest(validate_only=True, resources=[
            AlterConfigsResource(resource_type=4, resource_name="1", configs=[AlterableConfig(
                name="num.io.threads", config_operation=0, value=value)])]), 1).responses[0]
    refused = change("17")
    assert (refused.error_code, refused.error_message) == (
        Errors.INVALID_REQUEST, "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count "
        "update validation failed for num.io.threads=17, value should not be greater than double the current value 8 "
        "for configuration Invalid dynamic configuration")
    assert change("16").error_code == Errors.NONE
