"""The settings of one partition log, as Kafka's LogConfig resolves them for a topic: the topic's
own config (``retention.ms``, ``retention.bytes``, ``segment.ms``, ``segment.index.bytes``,
``file.delete.delay.ms``, ``cleanup.policy``, ``segment.bytes``, and the cleaner's
``delete.retention.ms``, ``min.compaction.lag.ms``, ``max.compaction.lag.ms``,
``min.cleanable.dirty.ratio``), else the broker's synonyms
(ServerTopicConfigSynonyms) set dynamically for this broker, then for every broker (ConfigRecords
of the broker resource), then in server.properties.

Some broker settings have several synonyms in Kafka's order of precedence: ``log.retention.ms``,
then ``log.retention.minutes``, then ``log.retention.hours``; ``log.roll.ms``, then
``log.roll.hours``. As in KafkaConfig, the dynamic levels are laid over server.properties first
and the precedence applies to the merged keys (a ``log.retention.ms`` anywhere wins over
``log.retention.hours`` anywhere), and a negative retention time is unlimited (-1).

    settings = log_settings(image, "orders", config)
    settings.retention_ms, settings.delete, settings.compact
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE

__all__ = ["LogSettings", "log_settings", "retention_time_ms", "roll_time_ms"]

LONG_MAX = (1 << 63) - 1
MS_PER_MINUTE = 60_000
MS_PER_HOUR = 60 * MS_PER_MINUTE

# server.properties field (ServerConfig) of each broker key read here
_FIELDS = {
    "log.retention.ms": "log_retention_ms", "log.retention.minutes": "log_retention_minutes",
    "log.retention.hours": "log_retention_hours", "log.retention.bytes": "log_retention_bytes",
    "log.roll.ms": "log_roll_ms", "log.roll.hours": "log_roll_hours",
    "log.index.size.max.bytes": "log_index_size_max_bytes", "log.segment.delete.delay.ms": "log_segment_delete_delay_ms",
    "log.cleanup.policy": "log_cleanup_policy", "log.segment.bytes": "log_segment_bytes",
    "log.cleaner.delete.retention.ms": "log_cleaner_delete_retention_ms",
    "log.cleaner.min.compaction.lag.ms": "log_cleaner_min_compaction_lag_ms",
    "log.cleaner.max.compaction.lag.ms": "log_cleaner_max_compaction_lag_ms",
    "log.cleaner.min.cleanable.ratio": "log_cleaner_min_cleanable_ratio",
}


@dataclass(frozen=True)
class LogSettings:
    """One topic's log settings (LogConfig): -1 retention is unlimited."""
    retention_ms: int = 7 * 24 * MS_PER_HOUR
    retention_bytes: int = -1
    segment_ms: int = 7 * 24 * MS_PER_HOUR
    segment_bytes: int = 1 << 30
    segment_index_bytes: int = 10 * 1024 * 1024
    file_delete_delay_ms: int = 60_000
    cleanup_policy: tuple[str, ...] = ("delete",)
    # the log cleaner's (kafkawire.broker.log_cleaner), for cleanup.policy compact
    delete_retention_ms: int = 24 * MS_PER_HOUR
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy


def retention_time_ms(ms: int | None, minutes: int | None, hours: int) -> int:
    """KafkaConfig.logRetentionTimeMillis: ms, else minutes, else hours; negative is -1."""
    millis = ms if ms is not None else minutes * MS_PER_MINUTE if minutes is not None else hours * MS_PER_HOUR
    return -1 if millis < 0 else millis


def roll_time_ms(ms: int | None, hours: int) -> int:
    """KafkaConfig.logRollTimeMillis: log.roll.ms, else log.roll.hours."""
    return ms if ms is not None else hours * MS_PER_HOUR


def _broker_values(image, config, node_id: int) -> dict:
    """The broker keys: server.properties, overlaid by the cluster-wide then this broker's dynamic values."""
    values = {key: getattr(config, field) for key, field in _FIELDS.items()}
    if image is None:
        return values
    for resource in ((BROKER_RESOURCE, ""), (BROKER_RESOURCE, str(node_id))):
        for key, raw in image.configs.get(resource, {}).items():
            if key in _FIELDS and raw is not None:
                parsed = _parse(raw, values[key])
                if parsed is not None:
                    values[key] = parsed
    return values


def _parse(raw: str, like):
    """``raw`` as the type of ``like`` (None when it does not parse: the controller checked it)."""
    if isinstance(like, tuple):
        return tuple(p.strip() for p in raw.split(",") if p.strip())
    try:
        return float(raw.strip()) if isinstance(like, float) else int(raw.strip())
    except ValueError:
        return None


def log_settings(image, topic: str, config) -> LogSettings:
    """The LogSettings of ``topic``'s partitions on the broker of ``config`` (a ServerConfig)."""
    b = _broker_values(image, config, config.node_id)
    own = {} if image is None else image.configs.get((TOPIC_RESOURCE, topic), {})

    def pick(name: str, default):
        raw = own.get(name)
        parsed = None if raw is None else _parse(raw, default)
        return default if parsed is None else parsed

    return LogSettings(
        retention_ms=pick("retention.ms", retention_time_ms(b["log.retention.ms"], b["log.retention.minutes"],
                                                            b["log.retention.hours"])),
        retention_bytes=pick("retention.bytes", b["log.retention.bytes"]),
        segment_ms=pick("segment.ms", roll_time_ms(b["log.roll.ms"], b["log.roll.hours"])),
        segment_bytes=pick("segment.bytes", b["log.segment.bytes"]),
        segment_index_bytes=pick("segment.index.bytes", b["log.index.size.max.bytes"]),
        file_delete_delay_ms=pick("file.delete.delay.ms", b["log.segment.delete.delay.ms"]),
        cleanup_policy=pick("cleanup.policy", tuple(b["log.cleanup.policy"])),
        delete_retention_ms=pick("delete.retention.ms", b["log.cleaner.delete.retention.ms"]),
        min_compaction_lag_ms=pick("min.compaction.lag.ms", b["log.cleaner.min.compaction.lag.ms"]),
        max_compaction_lag_ms=pick("max.compaction.lag.ms", b["log.cleaner.max.compaction.lag.ms"]),
        min_cleanable_dirty_ratio=pick("min.cleanable.dirty.ratio", float(b["log.cleaner.min.cleanable.ratio"])),
    )
