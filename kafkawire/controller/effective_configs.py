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

from .topic_configs import TOPIC_CONFIG_KEYS

DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5
INTERNAL_CONFIGS = frozenset({"internal.segment.bytes"})
_HOURS, _MINUTES = 3_600_000, 60_000


def _same(name):
    return [(name, 1)]


def _log(name):
    return [("log." + name, 1)]


# ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS: (broker config, milliseconds per unit)
SYNONYMS: dict[str, list[tuple[str, int]]] = {
    "segment.bytes": _log("segment.bytes"),
    "segment.ms": [("log.roll.ms", 1), ("log.roll.hours", _HOURS)],
    "segment.jitter.ms": [("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _HOURS)],
    "segment.index.bytes": _log("index.size.max.bytes"),
    "flush.messages": _log("flush.interval.messages"),
    "flush.ms": [("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)],
    "retention.bytes": _log("retention.bytes"),
    "retention.ms": [("log.retention.ms", 1), ("log.retention.minutes", _MINUTES), ("log.retention.hours", _HOURS)],
    "max.message.bytes": _same("message.max.bytes"),
    "index.interval.bytes": _log("index.interval.bytes"),
    "delete.retention.ms": _same("log.cleaner.delete.retention.ms"),
    "min.compaction.lag.ms": _same("log.cleaner.min.compaction.lag.ms"),
    "max.compaction.lag.ms": _same("log.cleaner.max.compaction.lag.ms"),
    "file.delete.delay.ms": _log("segment.delete.delay.ms"),
    "min.cleanable.dirty.ratio": _same("log.cleaner.min.cleanable.ratio"),
    "cleanup.policy": _log("cleanup.policy"),
    "unclean.leader.election.enable": _same("unclean.leader.election.enable"),
    "min.insync.replicas": _same("min.insync.replicas"),
    "compression.type": _same("compression.type"),
    "compression.gzip.level": _same("compression.gzip.level"),
    "compression.lz4.level": _same("compression.lz4.level"),
    "compression.zstd.level": _same("compression.zstd.level"),
    "preallocate": _log("preallocate"),
    "message.timestamp.type": _log("message.timestamp.type"),
    "message.timestamp.before.max.ms": _log("message.timestamp.before.max.ms"),
    "message.timestamp.after.max.ms": _log("message.timestamp.after.max.ms"),
    "local.retention.ms": _log("local.retention.ms"),
    "local.retention.bytes": _log("local.retention.bytes"),
}


def _converted(value: str, unit_ms: int) -> str:
    if unit_ms == 1:
        return value
    try:
        return str(int(value.strip()) * unit_ms)
    except ValueError:
        return value


def _resolve(name: str, topic: dict, node: dict, cluster: dict, static: dict) -> tuple[str | None, int]:
    if name in topic:
        return topic[name], DYNAMIC_TOPIC_CONFIG
    synonyms = SYNONYMS.get(name, [])
    for configs, source in ((node, DYNAMIC_BROKER_CONFIG), (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG),
                            (static, STATIC_BROKER_CONFIG)):
        for synonym, unit in synonyms:
            if synonym in configs:
                return _converted(configs[synonym], unit), source
    return TOPIC_CONFIG_KEYS[name].default, DEFAULT_CONFIG


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
