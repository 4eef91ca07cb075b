"""DescribeConfigs as a broker answers it (kafkawire.controller.describe_configs given the
node's server.properties settings and kafkawire.controller.broker_config_keys), sans I/O: a
topic's synonyms include STATIC_BROKER_CONFIG, and the broker's own id lists every key it knows
with the value and source of the first layer that sets it (dynamic for this broker, dynamic
default, server.properties, KafkaConfig's default), its type and read-only flag, as Kafka's
ConfigHelper.createBrokerConfigEntry lists a broker's KafkaConfig."""
from types import SimpleNamespace

from kafkawire.controller.broker_config_keys import broker_config_keys
from kafkawire.controller.describe_configs import describe_configs
from kafkawire.messages.describe_configs_request import DescribeConfigsRequest, DescribeConfigsResource
from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE

TOPIC, BROKER = 2, 4
DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT, TOPIC_CONFIG = 2, 3, 4, 5, 1
INT, LONG, LIST, BOOLEAN, SHORT = 3, 5, 7, 1, 4
STATIC_SETTINGS = {"log.segment.bytes": "2097152", "node.id": "1", "offsets.topic.replication.factor": "1"}


def describe(kind, name):
    image = SimpleNamespace(topics_by_name={"t": object()}, configs={
        (TOPIC_RESOURCE, "t"): {"retention.ms": "1000"},
        (BROKER_RESOURCE, ""): {"log.retention.ms": "5000"},
        (BROKER_RESOURCE, "1"): {"message.max.bytes": "2000000"}})
    request = DescribeConfigsRequest(include_synonyms=True, resources=[DescribeConfigsResource(
        resource_type=kind, resource_name=name, configuration_keys=None)])
    result = describe_configs(1, image, request, static=STATIC_SETTINGS, broker_keys=broker_config_keys()).results[0]
    assert result.error_code == 0, result.error_message
    return {c.name: c for c in result.configs}


def test_a_topics_configs_show_the_brokers_static_settings_as_static_broker_config():
    configs = describe(TOPIC, "t")
    segment = configs["segment.bytes"]
    assert (segment.value, segment.config_source) == ("2097152", STATIC)
    assert [(s.name, s.value, s.source) for s in segment.synonyms] == [
        ("log.segment.bytes", "2097152", STATIC), ("log.segment.bytes", "1073741824", DEFAULT)]
    assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("1000", TOPIC_CONFIG)


def test_the_brokers_own_id_lists_every_known_key_with_value_source_type_and_read_only_flag():
    configs = describe(BROKER, "1")
    assert set(broker_config_keys()) <= set(configs)
    assert "kafkawire.metrics.prometheus.listener" not in configs       # kafkawire's own key, not Kafka's
    entry = {name: (c.value, c.config_source, c.config_type, c.read_only) for name, c in configs.items()}
    assert entry["message.max.bytes"] == ("2000000", DYNAMIC_BROKER, INT, False)
    assert entry["log.retention.ms"] == ("5000", DYNAMIC_DEFAULT, LONG, False)
    assert entry["log.retention.hours"] == ("168", DEFAULT, INT, False)
    assert entry["log.segment.bytes"] == ("2097152", STATIC, INT, False)
    assert entry["node.id"] == ("1", STATIC, INT, True)
    assert entry["offsets.topic.replication.factor"] == ("1", STATIC, SHORT, True)
    assert entry["num.partitions"] == ("1", DEFAULT, INT, True)
    assert entry["log.segment.delete.delay.ms"] == ("60000", DEFAULT, LONG, False)
    assert entry["auto.create.topics.enable"][2:] == (BOOLEAN, True)
    assert entry["listeners"][2:] == (LIST, False)
    # Kafka's ConfigDef types of the broker role's log settings: a topic config's synonym has the
    # topic config's type, the others their own
    assert {name: entry[name][2] for name in ("log.retention.minutes", "log.roll.ms", "log.cleanup.policy",
                                              "log.retention.check.interval.ms", "log.flush.offset.checkpoint.interval.ms",
                                              "replica.high.watermark.checkpoint.interval.ms")} == {
        "log.retention.minutes": INT, "log.roll.ms": LONG, "log.cleanup.policy": LIST,
        "log.retention.check.interval.ms": LONG, "log.flush.offset.checkpoint.interval.ms": INT,
        "replica.high.watermark.checkpoint.interval.ms": LONG}
    assert [(s.name, s.source) for s in configs["message.max.bytes"].synonyms] == [
        ("message.max.bytes", DYNAMIC_BROKER), ("message.max.bytes", DEFAULT)]
