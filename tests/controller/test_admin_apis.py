"""DeleteTopics, CreatePartitions, IncrementalAlterConfigs and AlterConfigs on the active
controller: the records Kafka's QuorumController writes for them and its refusals (what the
real brokers of tests/interop/test_kafka_brokers_on_kafkawire.py forward, without Java)."""
import uuid

from kafkawire.messages.alter_configs_request import AlterableConfig as LegacyConfig
from kafkawire.messages.alter_configs_request import AlterConfigsRequest
from kafkawire.messages.alter_configs_request import AlterConfigsResource as LegacyResource
from kafkawire.messages.create_partitions_request import (CreatePartitionsAssignment, CreatePartitionsRequest,
                                                          CreatePartitionsTopic)
from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)
from kafkawire.metadata import decode_metadata_record
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, FakeQuorum, Running, add_controller, broker_request, heartbeat, run, until
from tests.counting import CountedName, counted_names

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def create(name, partitions=3, rf=2, configs=()):
    return CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf,
                                                      configs=[CreatableTopicConfig(name=k, value=v)
                                                               for k, v in configs])], timeout_ms=5000)


def incremental(*resources, validate_only=False):
    """resources: (type, name, [(config, op, value)])"""
    return IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
        AlterConfigsResource(resource_type=t, resource_name=n,
                             configs=[AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in cs])
        for t, n, cs in resources])


def legacy(*resources):
    return AlterConfigsRequest(resources=[
        LegacyResource(resource_type=t, resource_name=n, configs=[LegacyConfig(name=k, value=v) for k, v in cs])
        for t, n, cs in resources])


def scenario(setup, requests, *, brokers=(1, 2, 3), mv=29, **controller_options):
    """An active controller with ``brokers`` unfenced and the CreateTopics ``setup`` done; then
    ``requests`` as (api key, version, request). Returns (responses, records they wrote, controller)."""
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, mv=mv, **controller_options)

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
            for b in brokers:
                reply = await leader.handlers()[62].handle(Ctx(0), broker_request(b, log_dirs=[uuid.UUID(int=1000 + b)]))
                await leader.handlers()[63].handle(Ctx(0), heartbeat(b, reply.broker_epoch, quorum.end_offset))
            for request in setup:
                (result,) = (await leader.handlers()[19].handle(Ctx(7), request)).topics
                assert result.error_code == 0, result.error_message
            mark = len(quorum.entries)
            # a request may be a function of the controller (topic ids are random)
            responses = [await leader.handlers()[key].handle(Ctx(version, key), r(leader) if callable(r) else r)
                         for key, version, r in requests]
            records = [decode_metadata_record(v) for _, _, v in quorum.entries[mark:]]
            return responses, [r for r in records if r.type_name != "NoOpRecord"]
    responses, records = run(go())
    return responses, records, leader


def config_results(response):
    return [(r.resource_type, r.resource_name, Errors.for_code(r.error_code).name, r.error_message)
            for r in response.responses]


def config_records(records):
    return [(r.type_name, r.message.resource_type, r.message.resource_name, r.message.name, r.message.value)
            if r.type_name == "ConfigRecord" else (r.type_name,) for r in records]


# --- IncrementalAlterConfigs ---------------------------------------------------------------------

def test_setting_and_deleting_topic_configs_writes_config_records():
    request = incremental((TOPIC, "t", [("retention.ms", SET, "1000"), ("cleanup.policy", SET, "compact")]))
    (response,), records, leader = scenario([create("t", configs=[("segment.ms", "3600000")])],
                                            [(44, 1, request)])
    assert config_results(response) == [(TOPIC, "t", "NONE", None)]
    # keys in Kafka's HashMap order
    assert config_records(records) == [("ConfigRecord", TOPIC, "t", "cleanup.policy", "compact"),
                                       ("ConfigRecord", TOPIC, "t", "retention.ms", "1000")]
    assert leader.image.configs[(TOPIC, "t")] == {"segment.ms": "3600000", "cleanup.policy": "compact",
                                                  "retention.ms": "1000"}
    (response,), records, leader = scenario([create("t", configs=[("segment.ms", "3600000")])],
                                            [(44, 1, incremental((TOPIC, "t", [("segment.ms", DELETE, None),
                                                                               ("retention.ms", DELETE, None)])))])
    # an unchanged topic config (retention.ms was not set) writes nothing
    assert config_records(records) == [("ConfigRecord", TOPIC, "t", "segment.ms", None)]
    assert (TOPIC, "t") not in leader.image.configs


def test_append_and_subtract_work_on_list_configs_only():
    (ok, bad), records, leader = scenario([create("t")], [
        (44, 1, incremental((TOPIC, "t", [("cleanup.policy", APPEND, "compact")]))),
        (44, 1, incremental((TOPIC, "t", [("retention.ms", APPEND, "5")])))])
    assert config_results(ok) == [(TOPIC, "t", "NONE", None)]
    assert leader.image.configs[(TOPIC, "t")]["cleanup.policy"] == "delete,compact"    # appended to the default
    assert config_results(bad) == [(TOPIC, "t", "INVALID_CONFIG",
                                    "Can't APPEND to key retention.ms because its type is not LIST.")]


def test_append_splits_its_value_as_java_splits_it():
    """ConfigurationControlManager splits an APPEND's value with String.split(","): trailing empty
    parts dropped ("compact," appends compact alone), but a value of its own empty ("") is one
    empty part, appended as one; an unset broker config starts from KafkaConfig's default."""
    (first, second), _, leader = scenario([create("t")], [
        (44, 1, incremental((TOPIC, "t", [("cleanup.policy", APPEND, "compact,,")]))),
        (44, 1, incremental((BROKER, "", [("log.cleanup.policy", APPEND, "")])))])
    assert config_results(first) == [(TOPIC, "t", "NONE", None)]
    assert leader.image.configs[(TOPIC, "t")]["cleanup.policy"] == "delete,compact"
    assert config_results(second) == [(BROKER, "", "NONE", None)]
    # from KafkaConfig's default ("delete"), the one empty part appended
    assert leader.image.configs[(BROKER, "")]["log.cleanup.policy"] == "delete,"


def test_a_broker_config_is_written_even_when_unchanged_and_the_cluster_default_too():
    request = incremental((BROKER, "2", [("log.cleaner.threads", SET, "2")]), (BROKER, "", [("log.retention.ms", SET, "5")]))
    (first, second), records, _ = scenario([], [(44, 1, request), (44, 1, request)])
    assert config_results(first) == [(BROKER, "2", "NONE", None), (BROKER, "", "NONE", None)]
    assert config_records(records) == [("ConfigRecord", BROKER, "2", "log.cleaner.threads", "2"),
                                       ("ConfigRecord", BROKER, "", "log.retention.ms", "5")] * 2


def test_refusals_carry_kafkas_errors_and_messages():
    requests = [
        incremental((TOPIC, "missing", [("retention.ms", SET, "1")])),
        incremental((TOPIC, "t", [("retention.ms", SET, "abc")])),
        incremental((TOPIC, "t", [("retention.ms", SET, "-5")])),
        incremental((TOPIC, "t", [("no.such.config", SET, "1")])),
        incremental((TOPIC, "t", [("compression.type", SET, "brotli")])),
        incremental((TOPIC, "t", [("min.compaction.lag.ms", SET, "10"), ("max.compaction.lag.ms", SET, "5")])),
        incremental((TOPIC, "", [("retention.ms", SET, "1")])),
        incremental((BROKER, "7", [("log.cleaner.threads", SET, "2")])),
        incremental((BROKER, "x", [("log.cleaner.threads", SET, "2")])),
        incremental((BROKER, "-1", [("log.cleaner.threads", SET, "2")])),
        incremental((99, "t", [("retention.ms", SET, "1")])),
        incremental((TOPIC, "t", [("retention.ms", SET, "1")]), (TOPIC, "t", [("retention.ms", SET, "2")])),
        incremental((TOPIC, "t", [("retention.ms", SET, "x" * 32768)])),
    ]
    responses, records, _ = scenario([create("t")], [(44, 1, r) for r in requests])
    assert [config_results(r) for r in responses] == [
        [(TOPIC, "missing", "UNKNOWN_TOPIC_OR_PARTITION", "The topic 'missing' does not exist.")],
        [(TOPIC, "t", "INVALID_CONFIG", "Invalid value abc for configuration retention.ms: Not a number of type LONG")],
        [(TOPIC, "t", "INVALID_CONFIG", "Invalid value -5 for configuration retention.ms: Value must be at least -1")],
        [(TOPIC, "t", "INVALID_CONFIG", "Unknown topic config name: no.such.config")],
        [(TOPIC, "t", "INVALID_CONFIG", "Invalid value brotli for configuration compression.type: String must be "
                                        "one of: uncompressed, zstd, lz4, snappy, gzip, producer")],
        [(TOPIC, "t", "INVALID_CONFIG", "conflict topic config setting min.compaction.lag.ms (10) > "
                                        "max.compaction.lag.ms (5)")],
        [(TOPIC, "", "INVALID_REQUEST", "Default topic resources are not allowed.")],
        [(BROKER, "7", "BROKER_ID_NOT_REGISTERED", "No node with id 7 found.")],
        [(BROKER, "x", "INVALID_REQUEST", "Unable to parse broker name as a base 10 number.")],
        [(BROKER, "-1", "INVALID_REQUEST", "Invalid negative broker ID.")],
        [(99, "t", "UNSUPPORTED_VERSION", "Unknown resource type 99.")],
        [(TOPIC, "t", "INVALID_REQUEST", "Duplicate resource.")],
        [(TOPIC, "t", "INVALID_CONFIG", "The configuration value cannot be added because it exceeds the maximum "
                                        "value size of 32767 bytes.")],
    ]
    assert records == []


def test_validate_only_answers_without_writing():
    (response,), records, leader = scenario([create("t")], [
        (44, 1, incremental((TOPIC, "t", [("retention.ms", SET, "1000")]), validate_only=True))])
    assert config_results(response) == [(TOPIC, "t", "NONE", None)] and records == []
    assert (TOPIC, "t") not in leader.image.configs


def test_min_insync_replicas_with_elr_enabled_clears_the_elr_and_refuses_a_broker_level_change():
    requests = [(44, 1, incremental((TOPIC, "t", [("min.insync.replicas", SET, "2")]))),
                (44, 1, incremental((BROKER, "1", [("min.insync.replicas", SET, "2")]))),
                (44, 1, incremental((BROKER, "", [("min.insync.replicas", DELETE, None)])))]
    # metadata.version 29 bootstraps eligible.leader.replicas.version=1
    (ok, broker_level, remove_cluster), records, leader = scenario([create("t")], requests, mv=29)
    assert leader.image.finalized_features["eligible.leader.replicas.version"] == 1
    assert config_results(ok) == [(TOPIC, "t", "NONE", None)]
    assert [r.type_name for r in records] == ["ConfigRecord", "ClearElrRecord"]
    assert records[1].message.topic_name == "t"
    assert config_results(broker_level)[0][2:] == (
        "INVALID_CONFIG", "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    assert config_results(remove_cluster)[0][2:] == (
        "INVALID_CONFIG", "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    # below ELR's metadata version: plain config changes, no ClearElrRecord
    responses, records, leader = scenario([create("t")], requests, mv=20)
    assert "eligible.leader.replicas.version" not in leader.image.finalized_features
    assert [config_results(r)[0][2] for r in responses] == ["NONE", "NONE", "NONE"]
    assert [r.type_name for r in records] == ["ConfigRecord"] * 3


# --- AlterConfigs (legacy) -------------------------------------------------------------------------

def test_legacy_alter_configs_replaces_the_whole_config():
    (response,), records, leader = scenario([create("t", configs=[("segment.ms", "3600000"),
                                                                  ("retention.ms", "5")])],
                                            [(33, 2, legacy((TOPIC, "t", [("retention.ms", "5"),
                                                                          ("cleanup.policy", "compact")])))])
    assert config_results(response) == [(TOPIC, "t", "NONE", None)]
    # retention.ms unchanged: no record; segment.ms not named: deleted
    assert config_records(records) == [("ConfigRecord", TOPIC, "t", "cleanup.policy", "compact"),
                                       ("ConfigRecord", TOPIC, "t", "segment.ms", None)]
    assert leader.image.configs[(TOPIC, "t")] == {"retention.ms": "5", "cleanup.policy": "compact"}


# --- DeleteTopics ----------------------------------------------------------------------------------

def test_deleting_topics_by_name_and_by_id_writes_remove_topic_records():
    def request(leader):
        return DeleteTopicsRequest(topics=[DeleteTopicState(name="a"),
                                           DeleteTopicState(topic_id=leader.image.topics_by_name["b"].id)],
                                   timeout_ms=5000)

    (response,), records, leader = scenario([create("a", configs=[("retention.ms", "5")]), create("b")],
                                            [(20, 6, request)])
    assert [(r.name, Errors.for_code(r.error_code).name) for r in response.responses] == [("b", "NONE"), ("a", "NONE")]
    assert [r.type_name for r in records] == ["RemoveTopicRecord"] * 2
    assert leader.image.topics_by_name == {} and (TOPIC, "a") not in leader.image.configs


def test_delete_topics_refusals():
    unknown_id = uuid.UUID(int=77)
    request = DeleteTopicsRequest(topics=[DeleteTopicState(name="missing"), DeleteTopicState(topic_id=unknown_id),
                                          DeleteTopicState(name="dup"), DeleteTopicState(name="dup"),
                                          DeleteTopicState(), DeleteTopicState(name="x", topic_id=unknown_id)],
                                  timeout_ms=5000)
    (response,), records, _ = scenario([], [(20, 6, request)])
    assert [(r.name, r.topic_id, Errors.for_code(r.error_code).name, r.error_message) for r in response.responses] == [
        (None, uuid.UUID(int=0), "INVALID_REQUEST", "Neither topic name nor id were specified."),
        ("x", unknown_id, "INVALID_REQUEST", "You may not specify both topic name and topic id."),
        ("dup", uuid.UUID(int=0), "INVALID_REQUEST", "Duplicate topic name."),
        (None, unknown_id, "UNKNOWN_TOPIC_ID", "This server does not host this topic ID."),
        ("missing", uuid.UUID(int=0), "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition."),
    ]
    assert records == []


def test_delete_topics_before_v6_names_topics_in_topic_names():
    (response,), records, leader = scenario([create("a")], [(20, 5, DeleteTopicsRequest(topic_names=["a"],
                                                                                        timeout_ms=5000))])
    assert [(r.name, r.error_code) for r in response.responses] == [("a", 0)]
    assert [r.type_name for r in records] == ["RemoveTopicRecord"] and "a" not in leader.image.topics_by_name


def test_delete_topics_reads_a_request_of_many_names_in_linear_time():
    """Duplicates are found with sets, not by scanning lists: 4,000 distinct names (and one twice)
    make a few equality tests, not millions (the controller waits for the request meanwhile)."""
    from kafkawire.controller.state import ControllerState
    from kafkawire.controller.topic_deletion import delete_topics
    names = counted_names(4_000, "n") + [CountedName("n0")]
    records, response = delete_topics(ControllerState(), DeleteTopicsRequest(topic_names=names, timeout_ms=5000), 5)
    assert CountedName.comparisons < len(names)
    assert records == [] and [(r.name, r.error_message) for r in response.responses][:1] == [
        ("n0", "Duplicate topic name.")]
    assert len(response.responses) == 4_000


# --- CreatePartitions ------------------------------------------------------------------------------

def partitions(name, count, assignments=None, validate_only=False):
    return CreatePartitionsRequest(topics=[CreatePartitionsTopic(
        name=name, count=count,
        assignments=None if assignments is None else [CreatePartitionsAssignment(broker_ids=b) for b in assignments])],
        timeout_ms=5000, validate_only=validate_only)


def test_new_partitions_are_partition_records_after_the_existing_ones():
    (response,), records, leader = scenario([create("t", partitions=3, rf=2)], [(37, 3, partitions("t", 6))])
    assert [(r.name, r.error_code, r.error_message) for r in response.results] == [("t", 0, None)]
    topic = leader.image.topics_by_name["t"]
    assert [r.type_name for r in records] == ["PartitionRecord"] * 3
    assert [r.message.partition_id for r in records] == [3, 4, 5]
    for r in records:
        m = r.message
        assert m.topic_id == topic.id and len(m.replicas) == 2 and m.isr == m.replicas and m.leader == m.replicas[0]
        assert m.directories == [uuid.UUID(int=1000 + b) for b in m.replicas]
    assert sorted(topic.partitions) == list(range(6))


def test_manual_assignments_of_new_partitions():
    (response,), records, _ = scenario([create("t", partitions=1, rf=2)], [(37, 3, partitions("t", 3, [[3, 1], [2, 3]]))])
    assert response.results[0].error_code == 0
    assert [(r.message.partition_id, r.message.replicas, r.message.leader) for r in records] == [(1, [3, 1], 3),
                                                                                                (2, [2, 3], 2)]


def test_create_partitions_refusals():
    requests = [partitions("missing", 4), partitions("t", 3), partitions("t", 2), partitions("t", 5, [[1, 2]]),
                partitions("t", 4, [[1, 9]]), partitions("t", 4, [[1, 1]]), partitions("t", 4, [[1]]),
                partitions("t", 4, validate_only=True)]
    responses, records, _ = scenario([create("t", partitions=3, rf=2)], [(37, 3, r) for r in requests])
    assert [[(Errors.for_code(r.error_code).name, r.error_message) for r in resp.results] for resp in responses] == [
        [("UNKNOWN_TOPIC_OR_PARTITION", None)],
        [("INVALID_PARTITIONS", "Topic already has 3 partition(s).")],
        [("INVALID_PARTITIONS", "The topic t currently has 3 partition(s); 2 would not be an increase.")],
        [("INVALID_REPLICA_ASSIGNMENT", "Attempted to add 2 additional partition(s), but only 1 assignment(s) "
                                        "were specified.")],
        [("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes broker 9, but no such broker is "
                                        "registered.")],
        [("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes the broker 1 more than once.")],
        [("INVALID_REPLICA_ASSIGNMENT", "The manual partition assignment includes a partition with 1 replica(s), but "
                                        "this is not consistent with previous partitions, which have 2 replica(s).")],
        [("NONE", None)],
    ]
    assert records == []


def test_group_configs_are_validated_as_kafkas_controller_validates_them():
    group = 32
    requests = [
        incremental((group, "g", [("consumer.session.timeout.ms", SET, "50000"),
                                  ("consumer.heartbeat.interval.ms", SET, "6000")])),
        incremental((group, "g", [("consumer.session.timeout.ms", SET, "70000")])),
        incremental((group, "g", [("consumer.heartbeat.interval.ms", SET, "abc")])),
        incremental((group, "g", [("share.record.lock.duration.ms", SET, "999")])),
        incremental((group, "g", [("no.such.config", SET, "1")])),
        incremental((group, "", [("consumer.session.timeout.ms", SET, "50000")])),
        incremental((group, "g", [("consumer.session.timeout.ms", DELETE, None)])),
    ]
    responses, records, leader = scenario([], [(44, 1, r) for r in requests])
    assert [config_results(r) for r in responses] == [
        [(group, "g", "NONE", None)],
        [(group, "g", "INVALID_CONFIG", "consumer.session.timeout.ms must be less than or equal to "
                                        "group.consumer.max.session.timeout.ms")],
        [(group, "g", "INVALID_CONFIG", "Invalid value abc for configuration consumer.heartbeat.interval.ms: "
                                        "Not a number of type INT")],
        [(group, "g", "INVALID_CONFIG", "Invalid value 999 for configuration share.record.lock.duration.ms: "
                                        "Value must be at least 1000")],
        [(group, "g", "INVALID_CONFIG", "Unknown group config name: no.such.config")],
        [(group, "", "INVALID_REQUEST", "Default group resources are not allowed.")],
        [(group, "g", "NONE", None)],
    ]
    assert config_records(records) == [
        ("ConfigRecord", group, "g", "consumer.session.timeout.ms", "50000"),
        ("ConfigRecord", group, "g", "consumer.heartbeat.interval.ms", "6000"),
        ("ConfigRecord", group, "g", "consumer.session.timeout.ms", None)]
    assert leader.image.configs[(group, "g")] == {"consumer.heartbeat.interval.ms": "6000"}


def test_group_configs_are_checked_against_the_nodes_own_bounds():
    from kafkawire.metadata.group_configs import GroupBounds
    bounds = GroupBounds(consumer_min_session_timeout_ms=10_000, consumer_min_heartbeat_interval_ms=1_000)
    (wide, narrow), records, _ = scenario([], [
        (44, 1, incremental((32, "g", [("consumer.session.timeout.ms", SET, "20000"),
                                       ("consumer.heartbeat.interval.ms", SET, "2000")]))),
        (44, 1, incremental((32, "h", [("consumer.session.timeout.ms", SET, "5000")])))], group_bounds=bounds)
    assert config_results(wide) == [(32, "g", "NONE", None)]
    assert config_results(narrow) == [(32, "h", "INVALID_CONFIG", "consumer.session.timeout.ms must be greater "
                                                                  "than or equal to group.consumer.min.session.timeout.ms")]


def test_client_metrics_subscriptions_are_validated_as_kafkas_controller_validates_them():
    """The answers tests/interop/test_describe_configs_vs_kafka.py found equal to a Kafka 4.3.1
    controller's, kept here without Java."""
    sub = 16
    requests = [
        incremental((sub, "s", [("metrics", SET, "org.apache.kafka.producer."), ("interval.ms", SET, "1000"),
                                ("match", SET, "client_id=prod-.*")])),
        incremental((sub, "s", [("interval.ms", SET, "50")])),
        incremental((sub, "s", [("no.such", SET, "1")])),
        incremental((sub, "", [("interval.ms", SET, "200")])),
        incremental((sub, "s", [("match", SET, "client_id=")])),
        incremental((sub, "s", [("match", SET, "rack=x")])),
        incremental((sub, "s", [("match", SET, "client_id=[")])),
        incremental((sub, "s", [("metrics", SET, "a,,b")])),
        incremental((sub, "s", [("interval.ms", SET, "soon")])),
        incremental((sub, "s", [("metrics", APPEND, "a,a")])),           # duplicates dropped, not refused
        incremental((sub, "s", [("interval.ms", APPEND, "5")])),
    ]
    responses, records, leader = scenario([], [(44, 1, r) for r in requests])
    assert [config_results(r) for r in responses] == [
        [(sub, "s", "NONE", None)],
        [(sub, "s", "INVALID_REQUEST", "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 "
                                       "(1 hour)")],
        [(sub, "s", "INVALID_REQUEST", "Unknown client metrics configuration: no.such")],
        [(sub, "", "INVALID_REQUEST", "Subscription name can't be empty")],
        [(sub, "s", "INVALID_CONFIG", "Illegal client matching pattern: client_id=")],
        [(sub, "s", "INVALID_CONFIG", "Illegal client matching pattern: rack=x")],
        [(sub, "s", "INVALID_CONFIG", "Illegal client matching pattern: client_id=[")],
        [(sub, "s", "INVALID_CONFIG", "Configuration 'metrics' values must not be empty.")],
        [(sub, "s", "INVALID_CONFIG", "Invalid value soon for configuration interval.ms: Not a number of type INT")],
        [(sub, "s", "NONE", None)],
        [(sub, "s", "INVALID_CONFIG", "Can't APPEND to key interval.ms because its type is not LIST.")],
    ]
    assert leader.image.configs[(sub, "s")] == {"metrics": "org.apache.kafka.producer.,a", "interval.ms": "1000",
                                                "match": "client_id=prod-.*"}


BROKER_LOGGER = 8
LOGGER = "kafkawire.tests.controller_logger"


def test_a_controller_changes_its_own_log_levels_as_kafkas_controller_apis_does():
    """IncrementalAlterConfigs on BROKER_LOGGER <this node> sets or unsets the node's logger
    (RuntimeLoggerManager), answered after the controller's results and writing nothing; a
    validate-only change and a refused one change nothing; the legacy AlterConfigs refuses the type
    (authorizeAlterResource)."""
    import logging
    logger = logging.getLogger(LOGGER)
    try:
        responses, records, _ = scenario([create("t")], [
            (44, 1, incremental((BROKER_LOGGER, "1", [(LOGGER, SET, "DEBUG")]),
                                (TOPIC, "t", [("retention.ms", SET, "9")]))),
            (44, 1, incremental((BROKER_LOGGER, "1", [(LOGGER, SET, "ERROR")]), validate_only=True)),
            (44, 1, incremental((BROKER_LOGGER, "2", [(LOGGER, SET, "ERROR")]),
                                (BROKER_LOGGER, "1", [(LOGGER, SET, "LOUD")]),
                                (BROKER_LOGGER, "1", [("root", DELETE, None)]))),
            (33, 1, legacy((BROKER_LOGGER, "1", [(LOGGER, "ERROR")]))),
        ])
        assert logger.level == logging.DEBUG
        assert [config_results(r) for r in responses] == [
            [(TOPIC, "t", "NONE", None), (BROKER_LOGGER, "1", "NONE", None)],
            [(BROKER_LOGGER, "1", "NONE", None)],
            [(BROKER_LOGGER, "2", "INVALID_REQUEST", "Unexpected node id. Expected 1, but received 2"),
             (BROKER_LOGGER, "1", "INVALID_CONFIG", f"Cannot set the log level of {LOGGER} to LOUD as it is not a "
                                                    "supported log level. Valid log levels are DEBUG, ERROR, FATAL, "
                                                    "INFO, TRACE, WARN"),
             (BROKER_LOGGER, "1", "INVALID_REQUEST", "Removing the log level of the root logger is not allowed")],
            [(BROKER_LOGGER, "1", "INVALID_REQUEST", "Unexpected resource type BROKER_LOGGER.")],
        ]
        assert config_records(records) == [("ConfigRecord", TOPIC, "t", "retention.ms", "9")]
    finally:
        logger.setLevel(logging.NOTSET)


def test_a_controller_that_is_not_active_changes_its_log_levels_too():
    """With no other resource the request needs no write (QuorumController answers an empty change
    at once), so a standby controller applies it as well; with one, NOT_CONTROLLER for all."""
    import logging
    logger = logging.getLogger(LOGGER)
    standby = add_controller(FakeQuorum(), 1)

    async def go():
        async with Running(standby):
            alone = await standby.handlers()[44].handle(
                Ctx(1), incremental((BROKER_LOGGER, "1", [(LOGGER, SET, "WARN")])))
            both = await standby.handlers()[44].handle(Ctx(1), incremental(
                (TOPIC, "t", [("retention.ms", SET, "9")]), (BROKER_LOGGER, "1", [(LOGGER, SET, "DEBUG")])))
            return alone, both
    try:
        alone, both = run(go())
        assert config_results(alone) == [(BROKER_LOGGER, "1", "NONE", None)]
        assert [r[2] for r in config_results(both)] == ["NOT_CONTROLLER", "NOT_CONTROLLER"]
        assert logger.level == logging.DEBUG      # applied before the write, as ControllerApis does
    finally:
        logger.setLevel(logging.NOTSET)
