"""A new topic's effective configs, as Kafka's controller puts them in a CreateTopics answer
(ConfigurationControlManager.computeEffectiveTopicConfigs, KafkaConfigSchema): every topic
config sorted by name, its value taken from the first of the topic's own configs
(DYNAMIC_TOPIC_CONFIG), this controller's dynamic broker config (DYNAMIC_BROKER_CONFIG), the
cluster's dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG), this controller's static config
(STATIC_BROKER_CONFIG) and the topic config's default (DEFAULT_CONFIG); a broker-level value is
read under its broker synonyms (log.retention.hours as milliseconds, ...). An internal config
(internal.segment.bytes) is listed only when the topic sets it. None is sensitive or read-only.

Compared with Kafka 4.3.1's controller for the same request (tests/controller/test_effective_configs.py
holds its answer). The static config is what the caller passes: the controller node passes none
yet, so STATIC_BROKER_CONFIG never appears.
"""
from __future__ import annotations

from kafkawire.messages.create_topics_response import CreatableTopicConfigs
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.metadata.topic_config_synonyms import (  # noqa: F401 (the controller's modules import these here)
    DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, SYNONYMS,
    resolve_topic_config)

from .topic_configs import TOPIC_CONFIG_KEYS

DEFAULT_CONFIG = 5
INTERNAL_CONFIGS = frozenset({"internal.segment.bytes"})


def _resolve(name: str, topic: dict, node: dict, cluster: dict, static: dict) -> tuple[str | None, int]:
    """The shared rule (kafkawire.metadata.topic_config_synonyms), else the topic config's default."""
    return resolve_topic_config(name, topic, node, cluster, static) or (TOPIC_CONFIG_KEYS[name].default, DEFAULT_CONFIG)


def effective_topic_configs(image, controller_id: int, creation_configs: dict[str, str],
                            static_config: dict[str, str] | None = None) -> list[CreatableTopicConfigs]:
    node = image.configs.get((BROKER_RESOURCE, str(controller_id)), {})
    cluster = image.configs.get((BROKER_RESOURCE, ""), {})
    out = []
    for name in sorted(TOPIC_CONFIG_KEYS):
        if name in INTERNAL_CONFIGS and name not in creation_configs:
            continue
        value, source = _resolve(name, creation_configs, node, cluster, static_config or {})
        out.append(CreatableTopicConfigs(name=name, value=value, read_only=False, config_source=source,
                                         is_sensitive=False))
    return out
