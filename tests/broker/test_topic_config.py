"""How the broker resolves a topic's config (kafkawire.broker.produce.topic_config), as Kafka's
LogConfig does: the topic's own value, else its broker synonym set dynamically for this broker,
then for every broker, else server.properties."""
from __future__ import annotations

from kafkawire.broker.produce import topic_config
from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage


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
