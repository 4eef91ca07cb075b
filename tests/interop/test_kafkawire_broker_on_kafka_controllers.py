"""Two kafkawire broker-only nodes (process.roles=broker) on an Apache Kafka 4.3.1 controller
(issue 29): they follow Kafka's metadata log as raft observers, register with Kafka's active
controller and are unfenced; kafka-python creates a topic of replication factor 2 through one
(forwarded to Kafka's controller), produces with acks=all (the other broker replicating) and
consumes in a group; a Metadata request creates a topic (asked of Kafka's controller on the
client's behalf, in an Envelope); DescribeQuorum at Kafka's controller lists them as observers, never voters; once one of them
cordons its log directories (KIP-1066), Kafka's controller places no new replica on it.
One Kafka JVM (the controller), two kafkawire processes; every wait bounded."""
from __future__ import annotations

import asyncio
import time

import pytest

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.raft.node.local_quorum import LocalQuorum, describe_quorum
from kafkawire.storage.state_files import random_uuid, uuid_to_kafka
from tests.broker.kafka_python_roundtrip import consume_in_group, create_topic, produce_records
from tests.broker.wire import call

kafka = pytest.importorskip("kafka")

KAFKA_CONTROLLER, BROKERS = 9, [1, 2]
INVALID_REPLICATION_FACTOR = 38
WAIT_S = 90


def test_two_kafkawire_broker_only_nodes_replicate_and_serve_clients_on_a_kafka_controller(kafka_controller, tmp_path):
    cluster_id = uuid_to_kafka(random_uuid())
    controller = kafka_controller(KAFKA_CONTROLLER, cluster_id, "--standalone", properties={
        "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"})
    # voters=0: LocalQuorum's nodes are the brokers (1 and 2), formatted --no-initial-controllers.
    quorum = LocalQuorum(tmp_path / "kafkawire", voters=0, extra_nodes=2, cluster_id=cluster_id, properties={
        "process.roles": "broker",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.quorum.bootstrap.servers": controller.controller_address,
        "broker.heartbeat.interval.ms": "500", "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"})
    for node_id in BROKERS:
        quorum.node_properties[node_id] = {"listeners": f"PLAINTEXT://127.0.0.1:{quorum.ports[node_id]}"}
    bootstrap = ",".join(f"127.0.0.1:{quorum.ports[i]}" for i in BROKERS)
    began = time.monotonic()
    quorum.format()
    for node_id in BROKERS:
        quorum.start(node_id)
    try:
        def unfenced():
            quorum._check_alive(BROKERS)
            try:
                response = call(quorum.address(BROKERS[0]),
                                DescribeClusterRequest(include_cluster_authorized_operations=False), timeout_ms=2000)
            except Exception:              # not listening yet
                return False
            return [b.broker_id for b in response.brokers] == BROKERS
        quorum.wait_until(unfenced, WAIT_S, "the kafkawire brokers to be unfenced by Kafka's controller")
        print(f"\nkafkawire brokers unfenced by Kafka's controller {time.monotonic() - began:.1f} s after format")

        view = asyncio.run(describe_quorum(("127.0.0.1", controller.controller_port)))
        assert [v.replica_id for v in view.voters] == [KAFKA_CONTROLLER]
        assert sorted(o.replica_id for o in view.observers) == BROKERS

        create_topic(bootstrap, "orders", partitions=2, replication_factor=2)

        def auto_created():          # asked on the client's behalf: an Envelope'd CreateTopics v7 to Kafka's controller
            metadata = call(quorum.address(BROKERS[0]), MetadataRequest(
                topics=[MetadataRequestTopic(name="made-on-demand")], allow_auto_topic_creation=True), api_version=12)
            return metadata.topics[0].error_code == 0
        quorum.wait_until(auto_created, WAIT_S, "a topic a Metadata request asked for, created by Kafka's controller")
        sent = produce_records(bootstrap, "orders", 20, partitions=2)
        metadata = call(quorum.address(BROKERS[1]), MetadataRequest(
            topics=[MetadataRequestTopic(name="orders")], allow_auto_topic_creation=False), api_version=12)
        assert [(sorted(p.replica_nodes), sorted(p.isr_nodes)) for p in metadata.topics[0].partitions] == \
            [(BROKERS, BROKERS)] * 2          # each partition replicated to the other broker, in sync
        assert sorted(consume_in_group(bootstrap, "orders", 20, "readers")) == sorted(sent)
        cordoned_broker_gets_no_replica(quorum)
        for node_id in BROKERS:              # controlled shutdown, answered by Kafka's controller
            assert quorum.stop(node_id) == 0
            assert "the controller has allowed us to shut down" in quorum.log_tail(node_id, 40)
    except BaseException:
        for node_id in BROKERS:
            print(f"--- kafkawire broker {node_id} log tail\n{quorum.log_tail(node_id, 40)}")
        raise
    finally:
        for node_id in BROKERS:
            quorum.kill(node_id)


def create(quorum, name: str, partitions: int, replication_factor: int, validate_only: bool = False):
    response = call(quorum.address(BROKERS[1]), CreateTopicsRequest(timeout_ms=10_000, validate_only=validate_only,
                    topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=replication_factor,
                                           assignments=[], configs=[])]))
    return response.topics[0].error_code, response.topics[0].error_message


def cordoned_broker_gets_no_replica(quorum) -> None:
    """KIP-1066 judged by Kafka's controller: ``cordoned.log.dirs=*`` set dynamically on broker 1
    (through it, forwarded); its heartbeats' CordonedLogDirs make Kafka's controller place no
    new replica on it: a replication factor of 2 cannot be met, and new partitions all go to broker 2."""
    altered = call(quorum.address(BROKERS[0]), IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=4, resource_name=str(BROKERS[0]), configs=[AlterableConfig(
            name="cordoned.log.dirs", config_operation=0, value="*")])]), api_version=1)
    assert [(r.error_code, r.error_message) for r in altered.responses] == [(0, None)]
    quorum.wait_until(lambda: create(quorum, "cordoned", 1, 2, validate_only=True)[0] == INVALID_REPLICATION_FACTOR,
                      WAIT_S, "Kafka's controller to see broker 1's directories all cordoned")
    assert create(quorum, "cordoned", 1, 2) == (INVALID_REPLICATION_FACTOR, (
        "Unable to replicate the partition 2 time(s): The target replication factor of 2 cannot be reached because "
        "only 1 broker(s) are registered or some brokers have all their log directories cordoned."))
    assert create(quorum, "cordoned", 4, 1) == (0, None)

    def placed():
        metadata = call(quorum.address(BROKERS[1]), MetadataRequest(
            topics=[MetadataRequestTopic(name="cordoned")], allow_auto_topic_creation=False), api_version=12)
        return sorted(r for p in metadata.topics[0].partitions for r in p.replica_nodes)
    quorum.wait_until(lambda: len(placed()) == 4, WAIT_S, "the cordoned topic in the metadata")
    assert placed() == [BROKERS[1]] * 4
