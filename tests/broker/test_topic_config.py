"""How the broker resolves a topic's config (kafkawire.broker.log_config), as Kafka's LogConfig
over KafkaConfig and DynamicBrokerConfig does: the topic's own value, else its broker synonyms
(in ServerTopicConfigSynonyms' order) set dynamically for this broker, then for every broker,
else server.properties; a dynamic value of a synonym that is not reconfigurable (every synonym
after the first, e.g. log.retention.hours) is dropped. One rule with the controller's
(kafkawire.metadata.topic_config_synonyms), each topic's result kept until the image changes."""
from __future__ import annotations

import dataclasses

from kafkawire.broker.log_config import TopicConfigs, log_settings, topic_config
from kafkawire.controller.effective_configs import _resolve
from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage, Provenance
from kafkawire.net.config import parse_server_config

HOUR = 3_600_000
CONFIG = parse_server_config("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                             "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
                             "controller.quorum.voters=1@127.0.0.1:9093\nlog.dirs=/tmp/unused\n")


def image_with(configs: dict) -> MetadataImage:
    image = MetadataImage()
    image.configs.update(configs)
    return image


def test_the_topics_own_value_wins():
    image = image_with({(TOPIC_RESOURCE, "t"): {"max.message.bytes": "200"},
                        (BROKER_RESOURCE, ""): {"message.max.bytes": "300"}})
    assert topic_config(image, "t", "max.message.bytes", 1048588, 1) == 200


def test_the_broker_synonym_set_for_this_broker_then_for_every_broker_then_the_file():
    per_broker = image_with({(BROKER_RESOURCE, "1"): {"log.message.timestamp.type": "LogAppendTime"},
                             (BROKER_RESOURCE, ""): {"log.message.timestamp.type": "CreateTime"}})
    assert topic_config(per_broker, "t", "message.timestamp.type", "CreateTime", 1) == "LogAppendTime"
    cluster = image_with({(BROKER_RESOURCE, ""): {"min.insync.replicas": "2"}})
    assert topic_config(cluster, "t", "min.insync.replicas", 1, 1) == 2
    assert topic_config(image_with({}), "t", "segment.bytes", 1 << 30, 1) == 1 << 30
    assert topic_config(None, "t", "segment.bytes", 7, 1) == 7


def test_a_value_that_does_not_parse_falls_through_instead_of_failing_the_produce():
    image = image_with({(TOPIC_RESOURCE, "t"): {"max.message.bytes": "lots"}})
    assert topic_config(image, "t", "max.message.bytes", 1048588, 1) == 1048588


def test_synonyms_at_several_levels_first_synonym_of_the_highest_level_then_the_files_order():
    """log.retention.ms set for this broker beats the file's log.retention.minutes; the cluster's
    log.roll.ms beats the file's log.roll.ms and log.roll.hours; nothing dynamic: the file's
    log.retention.minutes beats its log.retention.hours."""
    file_config = dataclasses.replace(CONFIG, log_retention_minutes=5, log_retention_hours=2, log_roll_ms=7,
                                      log_roll_hours=3)
    image = image_with({(BROKER_RESOURCE, "1"): {"log.retention.ms": "9"},
                        (BROKER_RESOURCE, ""): {"log.retention.ms": "10", "log.roll.ms": "11"}})
    settings = log_settings(image, "t", file_config)
    assert (settings.retention_ms, settings.segment_ms) == (9, 11)
    assert log_settings(image_with({}), "t", file_config).retention_ms == 5 * 60_000


def test_a_dynamic_synonym_that_is_not_reconfigurable_is_dropped_as_kafkas_broker_drops_it():
    """Only the first broker synonym is dynamic (DynamicLogConfig): log.retention.hours or
    log.roll.hours in a broker resource's ConfigRecords changes nothing on the broker."""
    image = image_with({(BROKER_RESOURCE, "1"): {"log.retention.hours": "1"},
                        (BROKER_RESOURCE, ""): {"log.roll.hours": "2", "log.retention.minutes": "3"}})
    file_config = dataclasses.replace(CONFIG, log_retention_minutes=30)
    settings = log_settings(image, "t", file_config)
    assert (settings.retention_ms, settings.segment_ms) == (30 * 60_000, 168 * HOUR)


def test_the_broker_and_the_controller_resolve_with_one_rule():
    """With reconfigurable keys only, the broker's value is the controller's (KafkaConfigSchema)."""
    topic = {"segment.bytes": "4096"}
    node, cluster = {"log.retention.ms": "9"}, {"log.roll.ms": "11", "log.retention.ms": "10"}
    image = image_with({(TOPIC_RESOURCE, "t"): topic, (BROKER_RESOURCE, "1"): node, (BROKER_RESOURCE, ""): cluster})
    settings = log_settings(image, "t", CONFIG)
    for name, value in (("retention.ms", settings.retention_ms), ("segment.ms", settings.segment_ms),
                        ("segment.bytes", settings.segment_bytes)):
        assert int(_resolve(name, topic, node, cluster, {})[0]) == value


def test_the_resolved_configs_are_kept_per_topic_until_the_image_changes():
    image = image_with({(TOPIC_RESOURCE, "t"): {"max.message.bytes": "200"}})
    configs = TopicConfigs(CONFIG)
    first = configs.produce_settings(image, "t")
    assert configs.produce_settings(image, "t") is first
    image.configs[(TOPIC_RESOURCE, "t")]["max.message.bytes"] = "300"
    image.provenance = Provenance(5, 1, -1)           # a batch applied to the image
    assert configs.produce_settings(image, "t").max_message_bytes == 300
    assert configs.log_settings(image, "t") is configs.log_settings(image, "t")


def test_a_broker_level_config_is_read_for_this_broker_then_for_every_broker_then_the_file():
    configs = TopicConfigs(CONFIG)
    image = image_with({(BROKER_RESOURCE, "1"): {"log.segment.delete.delay.ms": "5"},
                        (BROKER_RESOURCE, ""): {"log.segment.delete.delay.ms": "6"}})
    assert configs.broker_value(image, "log.segment.delete.delay.ms", 60_000) == 5
    del image.configs[(BROKER_RESOURCE, "1")]
    assert configs.broker_value(image, "log.segment.delete.delay.ms", 60_000) == 6
    assert configs.broker_value(None, "log.segment.delete.delay.ms", 60_000) == 60_000


def test_min_insync_replicas_and_log_configs_set_for_this_broker_beat_the_cluster_default_and_the_file():
    """DynamicBrokerConfig's per-broker layer (issue 29): min.insync.replicas set for node 1 is
    what Produce, replication and the metrics read on node 1 (TopicConfigs.produce_settings),
    over the cluster default and server.properties; node 2's value is not node 1's. The same for
    a log config read through its log.-prefixed synonym; a topic's own value still wins."""
    file_config = dataclasses.replace(CONFIG, min_insync_replicas=1, log_retention_bytes=100)
    image = image_with({(BROKER_RESOURCE, "1"): {"min.insync.replicas": "3", "log.retention.bytes": "300"},
                        (BROKER_RESOURCE, "2"): {"min.insync.replicas": "4", "log.retention.bytes": "400"},
                        (BROKER_RESOURCE, ""): {"min.insync.replicas": "2", "log.retention.bytes": "200"},
                        (TOPIC_RESOURCE, "own"): {"min.insync.replicas": "5"}})
    configs = TopicConfigs(file_config)
    assert configs.produce_settings(image, "t").min_insync_replicas == 3
    assert configs.log_settings(image, "t").retention_bytes == 300
    assert configs.produce_settings(image, "own").min_insync_replicas == 5
    on_node_2 = TopicConfigs(dataclasses.replace(file_config, node_id=2))
    assert on_node_2.produce_settings(image, "t").min_insync_replicas == 4
    del image.configs[(BROKER_RESOURCE, "1")]
    image.provenance = Provenance(5, 1, -1)           # a batch applied to the image
    assert configs.produce_settings(image, "t").min_insync_replicas == 2
    assert configs.log_settings(image, "t").retention_bytes == 200
