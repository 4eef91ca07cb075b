"""Kafka's one rule for a topic config's value (ServerTopicConfigSynonyms, KafkaConfigSchema,
LogConfig over KafkaConfig): the topic's own config; else the config's broker synonyms, in
their order (``log.roll.ms`` before ``log.roll.hours``), first as set dynamically for this
broker, then as set for every broker (the cluster default), then in server.properties; else
the default. A value under a synonym in hours or minutes is converted to milliseconds.

Who resolves with it: the controller's CreateTopics answer (KafkaConfigSchema, which reads the
image's broker configs as they are) and the broker (LogConfig over DynamicBrokerConfig, which
drops the dynamic values of keys that are not reconfigurable: only the first broker synonym of
a topic config is, so ``dynamic_broker_configs`` leaves out a dynamic ``log.retention.hours``).

    value, source = resolve_topic_config("retention.ms", topic, node, cluster, static) or (None, DEFAULT)
"""
from __future__ import annotations

from .image import BROKER_RESOURCE

__all__ = ["SYNONYMS", "NOT_DYNAMIC", "resolve_topic_config", "dynamic_broker_configs", "image_version",
           "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG", "STATIC_BROKER_CONFIG"]

# DescribeConfigs' ConfigSource of the level a value came from
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG = 1, 2, 3, 4
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

# A dynamic broker config the image holds under a name that is not dynamic (DynamicBrokerConfig
# drops it): only the first broker synonym of a topic config is reconfigurable.
NOT_DYNAMIC = frozenset(synonym for synonyms in SYNONYMS.values() for synonym, _ in synonyms[1:])


def dynamic_broker_configs(image, name: str) -> dict[str, str]:
    """What Kafka's DynamicBrokerConfig keeps of a broker resource's configs in the image
    (``name``: a broker id, or "" for the cluster default)."""
    return {k: v for k, v in image.configs.get((BROKER_RESOURCE, name), {}).items() if k not in NOT_DYNAMIC}


def image_version(image) -> tuple:
    """What says whether an image's dynamic configs may have changed since a reader last looked:
    the image object and its offset (an image may be updated in place, so identity alone is not
    enough)."""
    return id(image), getattr(getattr(image, "provenance", None), "offset", None)


def _converted(value: str, unit_ms: int) -> str:
    if unit_ms == 1:
        return value
    try:
        return str(int(value.strip()) * unit_ms)
    except ValueError:
        return value


def resolve_topic_config(name: str, topic: dict, node: dict, cluster: dict, static: dict) -> tuple[str, int] | None:
    """(value as a string, source) of topic config ``name``, or None when no level sets it (its
    default applies). ``topic``, ``node``, ``cluster``, ``static``: the configs of each level."""
    if name in topic:
        return topic[name], DYNAMIC_TOPIC_CONFIG
    synonyms = SYNONYMS.get(name, ())
    for configs, source in ((node, DYNAMIC_BROKER_CONFIG), (cluster, DYNAMIC_DEFAULT_BROKER_CONFIG),
                            (static, STATIC_BROKER_CONFIG)):
        for synonym, unit in synonyms:
            value = configs.get(synonym)
            if value is not None:
                return _converted(value, unit), source
    return None
