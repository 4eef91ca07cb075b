"""DescribeConfigs (32) on our controller, without Java: an active controller (node 1) with
broker 2 registered, topics and dynamic broker configs set, then described. The values, sources
and synonyms below are Kafka 4.3.1's controller's answer to the same requests
(tests/interop/test_describe_configs_vs_kafka.py checks the whole answers field by field)."""
import uuid

from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)

from .harness import Ctx, FakeQuorum, Running, add_controller, broker_request, heartbeat, run, until
from .test_effective_configs import create

TOPIC, BROKER = 2, 4
TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT = 1, 2, 3, 5
UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC, INVALID_REQUEST = 3, 17, 42


def alter(kind, name, *configs):
    return IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=kind, resource_name=name,
        configs=[AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs])])


def resource(kind, name, keys=None):
    return DescribeConfigsResource(resource_type=kind, resource_name=name, configuration_keys=keys)


def described(*requests):
    """The DescribeConfigs v4 answers of node 1 after topic t (retention.ms=1000, cleanup.policy
    "compact, delete") and plain are created, the cluster default gets log.retention.hours=5 and
    log.segment.bytes=2097152, and node 1 gets log.roll.ms=7200000."""
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, mv=29)

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
            reply = await leader.handlers()[62].handle(Ctx(0), broker_request(2, log_dirs=[uuid.UUID(int=1002)]))
            await leader.handlers()[63].handle(Ctx(0), heartbeat(2, reply.broker_epoch, quorum.end_offset))
            for topic in (create("t", [("retention.ms", "1000"), ("cleanup.policy", "compact, delete")]),
                          create("plain", [])):
                assert (await leader.handlers()[19].handle(Ctx(7), topic)).topics[0].error_code == 0
            for change in (alter(BROKER, "", ("log.retention.hours", "5"), ("log.segment.bytes", "2097152")),
                           alter(BROKER, "1", ("log.roll.ms", "7200000"))):
                assert (await leader.handlers()[44].handle(Ctx(1), change)).responses[0].error_code == 0
            return [await leader.handlers()[32].handle(Ctx(4), r) for r in requests]
    return run(go())


def by_name(result):
    return {c.name: (c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms], c.config_type)
            for c in result.configs}


def test_a_topics_configs_with_their_sources_synonyms_and_types():
    t, plain, filtered = (r.results[0] for r in described(
        DescribeConfigsRequest(include_synonyms=True, resources=[resource(TOPIC, "t")]),
        DescribeConfigsRequest(include_synonyms=True, resources=[resource(TOPIC, "plain")]),
        DescribeConfigsRequest(include_synonyms=False, resources=[resource(TOPIC, "t", ["retention.ms", "nope"])])))
    assert (t.error_code, t.error_message, t.resource_type, t.resource_name) == (0, "", TOPIC, "t")
    configs = by_name(t)
    assert len(configs) == 33 and "internal.segment.bytes" not in configs
    assert configs["retention.ms"] == ("1000", TOPIC_CONFIG, [("retention.ms", "1000", TOPIC_CONFIG)], 5)
    assert configs["cleanup.policy"] == ("compact,delete", TOPIC_CONFIG,
                                         [("cleanup.policy", "compact,delete", TOPIC_CONFIG),
                                          ("log.cleanup.policy", "delete", DEFAULT)], 7)
    # Kafka's order: the HashMap AbstractConfig.nonInternalValues fills
    assert [c.name for c in t.configs][:4] == ["compression.type", "remote.log.delete.on.disable",
                                               "leader.replication.throttled.replicas", "remote.storage.enable"]
    configs = by_name(plain)
    # log.retention.hours is not a dynamic broker config: neither value nor synonym
    assert configs["retention.ms"] == ("604800000", DEFAULT, [], 5)
    assert configs["segment.bytes"] == ("2097152", DYNAMIC_DEFAULT, [("log.segment.bytes", "2097152", DYNAMIC_DEFAULT),
                                                                     ("log.segment.bytes", "1073741824", DEFAULT)], 3)
    assert configs["segment.ms"] == ("7200000", DYNAMIC_BROKER, [("log.roll.ms", "7200000", DYNAMIC_BROKER),
                                                                 ("log.roll.hours", "168", DEFAULT)], 5)
    assert configs["min.cleanable.dirty.ratio"] == ("0.5", DEFAULT, [("log.cleaner.min.cleanable.ratio", "0.5",
                                                                      DEFAULT)], 6)
    assert by_name(filtered) == {"retention.ms": ("1000", TOPIC_CONFIG, [], 5)}


def test_the_broker_default_and_this_controllers_dynamic_configs():
    default, own = (r.results[0] for r in described(
        DescribeConfigsRequest(include_synonyms=True, resources=[resource(BROKER, "")]),
        DescribeConfigsRequest(include_synonyms=True, resources=[resource(BROKER, "1")])))
    assert by_name(default) == {
        "log.segment.bytes": ("2097152", DYNAMIC_DEFAULT, [("log.segment.bytes", "2097152", DYNAMIC_DEFAULT)], 3),
        "min.insync.replicas": ("1", DYNAMIC_DEFAULT, [("min.insync.replicas", "1", DYNAMIC_DEFAULT)], 3)}
    assert by_name(own)["log.roll.ms"] == ("7200000", DYNAMIC_BROKER, [("log.roll.ms", "7200000", DYNAMIC_BROKER),
                                                                       ("log.roll.hours", "168", DEFAULT)], 5)
    assert by_name(own)["log.segment.bytes"] == ("2097152", DYNAMIC_DEFAULT, [
        ("log.segment.bytes", "2097152", DYNAMIC_DEFAULT), ("log.segment.bytes", "1073741824", DEFAULT)], 3)


def test_refusals_name_the_resource():
    answer, unknown_type = described(
        DescribeConfigsRequest(resources=[resource(TOPIC, "missing"), resource(TOPIC, "bad name!"),
                                          resource(BROKER, "9"), resource(BROKER, "x")]),
        DescribeConfigsRequest(resources=[resource(TOPIC, "t"), resource(99, "t")]))
    assert [(r.error_code, r.error_message, r.resource_name, r.configs) for r in answer.results] == [
        (UNKNOWN_TOPIC_OR_PARTITION, "", "missing", []),
        (INVALID_TOPIC, "Topic name is invalid: 'bad name!' contains one or more characters other than ASCII "
                        "alphanumerics, '.', '_' and '-'", "bad name!", []),
        (INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 9", "9", []),
        (INVALID_REQUEST, "Broker id must be an integer, but it is: x", "x", [])]
    # an unknown resource type fails the whole request
    assert [(r.error_code, r.resource_type, r.configs) for r in unknown_type.results] == [
        (INVALID_REQUEST, TOPIC, []), (INVALID_REQUEST, 99, [])]
    assert unknown_type.results[0].error_message.startswith("This most likely occurs because of a request")


def test_a_password_is_never_sent():
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, mv=29)

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
            change = alter(BROKER, "1", ("listener.name.external.ssl.key.password", "secret"))
            assert (await leader.handlers()[44].handle(Ctx(1), change)).responses[0].error_code == 0
            return await leader.handlers()[32].handle(Ctx(4), DescribeConfigsRequest(
                include_synonyms=True, resources=[resource(BROKER, "1")]))
    configs = by_name(run(go()).results[0])
    assert configs["listener.name.external.ssl.key.password"] == (
        None, DYNAMIC_BROKER, [("listener.name.external.ssl.key.password", None, DYNAMIC_BROKER)], 9)


def test_values_are_sent_as_java_prints_them_and_a_stored_value_that_does_not_parse_as_stored():
    from kafkawire.controller.describe_configs import _java_string
    assert [_java_string(v, k) for v, k in [(" 7 ", "LONG"), ("1", "DOUBLE"), ("compact, delete", "LIST"),
                                            ("TRUE", "BOOLEAN"), ("abc", "INT")]] == \
        ["7", "1.0", "compact,delete", "true", "abc"]


def test_a_groups_configs_in_kafkas_order_with_their_sources_and_synonyms():
    """The answer tests/interop/test_describe_configs_vs_kafka.py found equal to Kafka 4.3.1
    controller's (GroupConfig's names in nonInternalValues' HashMap order), kept here without Java;
    the static setting is this node's server.properties."""
    from kafkawire.controller.describe_configs import describe_configs
    from kafkawire.metadata.image import MetadataImage
    image = MetadataImage()
    image.configs[(32, "g")] = {"consumer.session.timeout.ms": "50000", "share.auto.offset.reset": "earliest"}
    request = DescribeConfigsRequest(include_synonyms=True, resources=[resource(32, "g"), resource(32, "")])
    group, unnamed = describe_configs(1, image, request, static={"group.consumer.heartbeat.interval.ms": "6000"}).results
    assert [c.name for c in group.configs] == [
        "consumer.session.timeout.ms", "consumer.assignment.interval.ms", "share.auto.offset.reset",
        "share.renew.acknowledge.enable", "streams.initial.rebalance.delay.ms", "share.session.timeout.ms",
        "streams.assignment.interval.ms", "share.heartbeat.interval.ms", "streams.heartbeat.interval.ms",
        "share.delivery.count.limit", "consumer.heartbeat.interval.ms", "share.record.lock.duration.ms",
        "share.assignment.interval.ms", "share.isolation.level", "streams.session.timeout.ms",
        "share.partition.max.record.locks", "streams.num.standby.replicas"]
    entries = by_name(group)
    assert entries["consumer.session.timeout.ms"] == ("50000", 8, [("consumer.session.timeout.ms", "50000", 8),
                                                                   ("group.consumer.session.timeout.ms", "45000", 5)], 3)
    assert entries["share.auto.offset.reset"] == ("earliest", 8, [("share.auto.offset.reset", "earliest", 8),
                                                                  ("share.auto.offset.reset", "latest", 5)], 2)
    assert entries["consumer.heartbeat.interval.ms"] == (
        "6000", 4, [("group.consumer.heartbeat.interval.ms", "6000", 4), ("group.consumer.heartbeat.interval.ms",
                                                                         "5000", 5)], 3)
    assert entries["share.renew.acknowledge.enable"] == ("true", 5, [("share.renew.acknowledge.enable", "true", 5)], 1)
    assert (unnamed.error_code, unnamed.error_message, unnamed.configs) == (INVALID_REQUEST,
                                                                             "Group name must not be empty", [])


def test_broker_loggers_are_this_nodes_loggers_and_levels():
    import logging

    from kafkawire.controller.describe_configs import describe_configs
    from kafkawire.metadata.image import MetadataImage
    logging.getLogger("kafkawire.tests.described_logger").setLevel(logging.WARNING)
    try:
        request = DescribeConfigsRequest(resources=[resource(8, "1"), resource(8, ""), resource(8, "2"),
                                                    resource(8, "x"), resource(8, "1", keys=["root", "nope"])])
        mine, empty, other, bad, filtered = describe_configs(1, MetadataImage(), request).results
    finally:
        logging.getLogger("kafkawire.tests.described_logger").setLevel(logging.NOTSET)
    entries = {c.name: (c.value, c.config_source, c.config_type, c.synonyms) for c in mine.configs}
    assert entries["kafkawire.tests.described_logger"] == ("WARN", 6, 0, [])
    assert "root" in entries and mine.error_code == 0
    assert [(r.error_code, r.error_message) for r in (empty, other, bad)] == [
        (INVALID_REQUEST, "Broker id must not be empty"),
        (INVALID_REQUEST, "Unexpected broker id, expected 1 but received 2"),
        (INVALID_REQUEST, "Broker id must be an integer, but it is: x")]
    assert [c.name for c in filtered.configs] == ["root"]
