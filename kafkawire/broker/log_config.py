"""A topic's configs on the broker, as Kafka's LogConfig resolves them over the broker's
KafkaConfig: kafkawire.metadata.topic_config_synonyms' rule (the topic's own config, else the
broker synonyms set dynamically for this broker, then for every broker, then in
server.properties) over what DynamicBrokerConfig keeps of the dynamic levels (the first broker
synonym of each config: a dynamic ``log.retention.hours`` is dropped, as Kafka's broker drops
it). The server.properties level and the defaults are the ServerConfig's values, which apply
KafkaConfig's synonym order (``log.retention.ms``, then ``.minutes``, then ``.hours``); a
negative broker retention time is unlimited (-1). The log cleaner's topic configs
(``delete.retention.ms``, ``min.compaction.lag.ms``, ``max.compaction.lag.ms``,
``min.cleanable.dirty.ratio``) are among the LogSettings.

``TopicConfigs`` keeps each topic's resolved settings until the metadata image moves on (Produce
reads seven configs per partition):

    configs = TopicConfigs(config)
    configs.log_settings(image, "orders").retention_ms
    configs.produce_settings(image, "orders").max_message_bytes
    configs.broker_value(image, "log.segment.delete.delay.ms", config.log_segment_delete_delay_ms)
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkawire.metadata.image import TOPIC_RESOURCE
from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs, resolve_topic_config
from kafkawire.records import GZIP, LZ4, ZSTD

__all__ = ["LogSettings", "ProduceSettings", "TopicConfigs", "log_settings", "topic_config", "retention_time_ms",
           "roll_time_ms", "flush_time_ms"]

LONG_MAX = (1 << 63) - 1
MS_PER_MINUTE = 60_000
MS_PER_HOUR = 60 * MS_PER_MINUTE
LOG_APPEND_TIME = "LogAppendTime"


@dataclass(frozen=True)
class LogSettings:
    """One topic's log settings (LogConfig): -1 retention is unlimited."""
    retention_ms: int = 7 * 24 * MS_PER_HOUR
    retention_bytes: int = -1
    segment_ms: int = 7 * 24 * MS_PER_HOUR
    segment_jitter_ms: int = 0
    segment_bytes: int = 1 << 30
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096         # the bytes between two index entries of a segment
    flush_messages: int = LONG_MAX           # the offsets between two flushes of a log (LONG_MAX: never)
    flush_ms: int = LONG_MAX                 # the time between two, which the log flusher applies
    file_delete_delay_ms: int = 60_000
    cleanup_policy: tuple[str, ...] = ("delete",)
    # the log cleaner's (kafkawire.broker.log_cleaner), for cleanup.policy compact
    delete_retention_ms: int = 24 * MS_PER_HOUR
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5

    @property
    def roll_ms(self) -> int:
        """LogConfig.maxSegmentMs: a compacted topic's segments roll by max.compaction.lag.ms too."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    @property
    def roll_jitter_bound_ms(self) -> int:
        """The bound of a segment's random roll jitter (LogConfig.randomSegmentJitter): 0 is none."""
        return min(self.segment_jitter_ms, self.segment_ms)

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy


@dataclass(frozen=True)
class ProduceSettings:
    """The configs Produce checks a topic's batches against (LogConfig)."""
    min_insync_replicas: int
    log_append_time: bool                # message.timestamp.type is LogAppendTime
    max_message_bytes: int
    compression_type: str
    compression_levels: tuple            # (codec of kafkawire.records, compression.<codec>.level), ...
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int
    compacted: bool                      # cleanup.policy has compact


def retention_time_ms(ms: int | None, minutes: int | None, hours: int) -> int:
    """KafkaConfig.logRetentionTimeMillis: ms, else minutes, else hours; negative is -1."""
    millis = ms if ms is not None else minutes * MS_PER_MINUTE if minutes is not None else hours * MS_PER_HOUR
    return -1 if millis < 0 else millis


def roll_time_ms(ms: int | None, hours: int) -> int:
    """KafkaConfig.logRollTimeMillis (log.roll.ms, else log.roll.hours) and logRollTimeJitterMillis
    (log.roll.jitter.ms, else log.roll.jitter.hours)."""
    return ms if ms is not None else hours * MS_PER_HOUR


def flush_time_ms(ms: int | None, scheduler_ms: int) -> int:
    """KafkaConfig.logFlushIntervalMs: log.flush.interval.ms, else log.flush.scheduler.interval.ms."""
    return ms if ms is not None else scheduler_ms


def _parse(raw: str, like):
    """``raw`` as the type of ``like`` (None when it does not parse: the controller checked it)."""
    if isinstance(like, str):
        return raw
    if isinstance(like, tuple):
        return tuple(p.strip() for p in raw.split(",") if p.strip())
    try:
        return float(raw.strip()) if isinstance(like, float) else int(raw.strip())
    except ValueError:
        return None


class _Levels:
    """The configs of one topic at each level, read from one image."""
    __slots__ = ("topic", "node", "cluster")

    def __init__(self, image, topic: str, node_id: int):
        self.topic = {} if image is None else image.configs.get((TOPIC_RESOURCE, topic), {})
        self.node = {} if image is None else dynamic_broker_configs(image, str(node_id))
        self.cluster = {} if image is None else dynamic_broker_configs(image, "")

    def value(self, name: str, default):
        """Topic config ``name``, else ``default`` (server.properties' value, or KafkaConfig's default).
        A value that does not parse as the default's type is ignored (the controller validated it)."""
        found = resolve_topic_config(name, self.topic, self.node, self.cluster, {})
        if found is None:
            return default
        parsed = _parse(found[0], default)
        return default if parsed is None else parsed


def topic_config(image, topic: str, name: str, default, node_id: int):
    """One topic config as broker ``node_id`` resolves it (``default``: its value from server.properties)."""
    return _Levels(image, topic, node_id).value(name, default)


def log_settings(image, topic: str, config) -> LogSettings:
    """The LogSettings of ``topic``'s partitions on the broker of ``config`` (a ServerConfig)."""
    levels, c = _Levels(image, topic, config.node_id), config
    retention_ms = levels.value("retention.ms", retention_time_ms(c.log_retention_ms, c.log_retention_minutes,
                                                                  c.log_retention_hours))
    return LogSettings(
        retention_ms=-1 if retention_ms < 0 else retention_ms,     # KafkaConfig: a negative time is unlimited
        retention_bytes=levels.value("retention.bytes", c.log_retention_bytes),
        segment_ms=levels.value("segment.ms", roll_time_ms(c.log_roll_ms, c.log_roll_hours)),
        segment_jitter_ms=levels.value("segment.jitter.ms", roll_time_ms(c.log_roll_jitter_ms, c.log_roll_jitter_hours)),
        segment_bytes=levels.value("segment.bytes", c.log_segment_bytes),
        segment_index_bytes=levels.value("segment.index.bytes", c.log_index_size_max_bytes),
        index_interval_bytes=levels.value("index.interval.bytes", c.log_index_interval_bytes),
        flush_messages=levels.value("flush.messages", c.log_flush_interval_messages),
        flush_ms=levels.value("flush.ms", flush_time_ms(c.log_flush_interval_ms, c.log_flush_scheduler_interval_ms)),
        file_delete_delay_ms=levels.value("file.delete.delay.ms", c.log_segment_delete_delay_ms),
        cleanup_policy=levels.value("cleanup.policy", tuple(c.log_cleanup_policy)),
        delete_retention_ms=levels.value("delete.retention.ms", c.log_cleaner_delete_retention_ms),
        min_compaction_lag_ms=levels.value("min.compaction.lag.ms", c.log_cleaner_min_compaction_lag_ms),
        max_compaction_lag_ms=levels.value("max.compaction.lag.ms", c.log_cleaner_max_compaction_lag_ms),
        min_cleanable_dirty_ratio=levels.value("min.cleanable.dirty.ratio", float(c.log_cleaner_min_cleanable_ratio)),
    )


def produce_settings(image, topic: str, config) -> ProduceSettings:
    """The ProduceSettings of ``topic`` on the broker of ``config``."""
    levels, c = _Levels(image, topic, config.node_id), config
    return ProduceSettings(
        min_insync_replicas=levels.value("min.insync.replicas", c.min_insync_replicas),
        log_append_time=levels.value("message.timestamp.type", c.log_message_timestamp_type) == LOG_APPEND_TIME,
        max_message_bytes=levels.value("max.message.bytes", c.message_max_bytes),
        compression_type=levels.value("compression.type", c.compression_type),
        compression_levels=((GZIP, levels.value("compression.gzip.level", c.compression_gzip_level)),
                            (LZ4, levels.value("compression.lz4.level", c.compression_lz4_level)),
                            (ZSTD, levels.value("compression.zstd.level", c.compression_zstd_level))),
        timestamp_before_max_ms=levels.value("message.timestamp.before.max.ms", c.log_message_timestamp_before_max_ms),
        timestamp_after_max_ms=levels.value("message.timestamp.after.max.ms", c.log_message_timestamp_after_max_ms),
        compacted="compact" in levels.value("cleanup.policy", tuple(c.log_cleanup_policy)),
    )


class TopicConfigs:
    """The broker's resolved topic configs, each topic's kept until the image changes (another
    image object, or a batch applied to it: its ``provenance`` is replaced then)."""

    def __init__(self, config):
        self.config = config
        self._image = self._provenance = None
        self._log: dict[str, LogSettings] = {}
        self._produce: dict[str, ProduceSettings] = {}
        self._broker: dict[str, object] = {}

    def _current(self, image) -> None:
        provenance = getattr(image, "provenance", None)
        if image is not self._image or provenance is not self._provenance:
            self._image, self._provenance = image, provenance
            self._log.clear()
            self._produce.clear()
            self._broker.clear()

    def cached_broker_value(self, image, key: str, default):
        """``broker_value``, kept until the image changes (read once per partition per publish)."""
        self._current(image)
        if key not in self._broker:
            self._broker[key] = self.broker_value(image, key, default)
        return self._broker[key]

    def log_settings(self, image, topic: str) -> LogSettings:
        return self._cached(self._log, log_settings, image, topic)

    def produce_settings(self, image, topic: str) -> ProduceSettings:
        return self._cached(self._produce, produce_settings, image, topic)

    def _cached(self, cache: dict, resolve, image, topic: str):
        self._current(image)
        settings = cache.get(topic)
        if settings is None:
            settings = cache[topic] = resolve(image, topic, self.config)
        return settings

    def broker_value(self, image, key: str, default):
        """A broker config as this broker reads it: set dynamically for it, then for every broker,
        else ``default`` (server.properties)."""
        if image is None:
            return default
        for configs in (dynamic_broker_configs(image, str(self.config.node_id)), dynamic_broker_configs(image, "")):
            raw = configs.get(key)
            parsed = None if raw is None else _parse(raw, default)
            if parsed is not None:
                return parsed
        return default
