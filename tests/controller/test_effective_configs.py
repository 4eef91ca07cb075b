"""The effective configs in a CreateTopics answer, compared with Kafka 4.3.1's controller's
answer to the same request (a KRaft controller, metadata.version 4.3, a broker registered;
CreateTopics v7 sent to the controller directly, its configs copied below)."""
import uuid

from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)

from .harness import Ctx, FakeQuorum, Running, add_controller, broker_request, heartbeat, run, until

DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, DEFAULT = 1, 2, 3, 5
# Kafka 4.3.1: name, value, read_only, config_source, is_sensitive
KAFKA_ANSWER = [
    ("cleanup.policy", "compact", False, 1, False), ("compression.gzip.level", "-1", False, 5, False),
    ("compression.lz4.level", "9", False, 5, False), ("compression.type", "producer", False, 5, False),
    ("compression.zstd.level", "3", False, 5, False), ("delete.retention.ms", "86400000", False, 5, False),
    ("file.delete.delay.ms", "60000", False, 5, False), ("flush.messages", "9223372036854775807", False, 5, False),
    ("flush.ms", "9223372036854775807", False, 5, False),
    ("follower.replication.throttled.replicas", "", False, 5, False), ("index.interval.bytes", "4096", False, 5, False),
    ("leader.replication.throttled.replicas", "", False, 5, False), ("local.retention.bytes", "-2", False, 5, False),
    ("local.retention.ms", "-2", False, 5, False), ("max.compaction.lag.ms", "9223372036854775807", False, 5, False),
    ("max.message.bytes", "1048588", False, 5, False), ("message.timestamp.after.max.ms", "3600000", False, 5, False),
    ("message.timestamp.before.max.ms", "9223372036854775807", False, 5, False),
    ("message.timestamp.type", "CreateTime", False, 5, False), ("min.cleanable.dirty.ratio", "0.5", False, 5, False),
    ("min.compaction.lag.ms", "0", False, 5, False), ("min.insync.replicas", "1", False, 3, False),
    ("preallocate", "false", False, 5, False), ("remote.log.copy.disable", "false", False, 5, False),
    ("remote.log.delete.on.disable", "false", False, 5, False), ("remote.storage.enable", "false", False, 5, False),
    ("retention.bytes", "-1", False, 5, False), ("retention.ms", "1000", False, 1, False),
    ("segment.bytes", "1073741824", False, 5, False), ("segment.index.bytes", "10485760", False, 5, False),
    ("segment.jitter.ms", "0", False, 5, False), ("segment.ms", "604800000", False, 5, False),
    ("unclean.leader.election.enable", "false", False, 5, False),
]


def create(name, configs):
    return CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=2, replication_factor=1, configs=[
        CreatableTopicConfig(name=k, value=v) for k, v in configs])], timeout_ms=5000)


def answers(requests, before=()):
    """CreateTopics answers of an active controller (node 1) with broker 2 registered, after the
    IncrementalAlterConfigs requests ``before``."""
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, mv=29)

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
            reply = await leader.handlers()[62].handle(Ctx(0), broker_request(2, log_dirs=[uuid.UUID(int=1002)]))
            await leader.handlers()[63].handle(Ctx(0), heartbeat(2, reply.broker_epoch, quorum.end_offset))
            for request in before:
                await leader.handlers()[44].handle(Ctx(1), request)
            return [(await leader.handlers()[19].handle(Ctx(7), r)).topics[0] for r in requests]
    return run(go())


def entries(result):
    return [(c.name, c.value, c.read_only, c.config_source, c.is_sensitive) for c in result.configs]


def test_the_answer_is_kafkas():
    (result,) = answers([create("t1", [("retention.ms", "1000"), ("cleanup.policy", "compact")])])
    assert (result.error_code, result.num_partitions, result.replication_factor, result.topic_config_error_code) == (
        0, 2, 1, 0)
    assert entries(result) == KAFKA_ANSWER


def test_dynamic_broker_configs_of_this_controller_and_the_cluster_default_count_under_their_synonyms():
    before = [IncrementalAlterConfigsRequest(resources=[
        AlterConfigsResource(resource_type=4, resource_name="1", configs=[
            AlterableConfig(name="log.retention.hours", config_operation=0, value="2")]),
        AlterConfigsResource(resource_type=4, resource_name="", configs=[
            AlterableConfig(name="log.segment.bytes", config_operation=0, value="2097152"),
            AlterableConfig(name="log.retention.ms", config_operation=0, value="5")]),
        AlterConfigsResource(resource_type=4, resource_name="2", configs=[     # another node: not counted
            AlterableConfig(name="log.flush.interval.messages", config_operation=0, value="7")])])]
    (result,) = answers([create("t", [("internal.segment.bytes", "1048576")])], before)
    got = {name: (value, source) for name, value, _, source, _ in entries(result)}
    assert got["retention.ms"] == ("7200000", DYNAMIC_BROKER)          # hours, as milliseconds
    assert got["segment.bytes"] == ("2097152", DYNAMIC_DEFAULT_BROKER)
    assert got["flush.messages"] == ("9223372036854775807", DEFAULT)
    assert got["internal.segment.bytes"] == ("1048576", DYNAMIC_TOPIC)  # internal: only when the topic sets it
