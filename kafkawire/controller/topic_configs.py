"""Kafka 4.3's topic configs (LogConfig's ConfigDef) as the controller validates them:
each name's type, default and validator, and ConfigDef's messages for a value that does not
parse or is out of range ("Invalid value X for configuration N: ...").

    validate_topic_configs({"retention.ms": "abc"})   # raises ConfigValueError with Kafka's message

What is left out: the remote-storage rules (remote.storage.enable needs the broker-wide remote
log system, which a controller alone does not know) and the compression levels' ranges beyond
the codec's own (gzip 1..9 or -1, lz4 1..17, zstd -131072..22, as CompressionType says).
"""
from __future__ import annotations

from kafkawire.metadata.config_def import LONG_MAX, ConfigKey, ConfigValueError, check_range, invalid, parse_type

_WEEK_MS = 7 * 24 * 3600 * 1000
TOPIC_CONFIG_KEYS: dict[str, ConfigKey] = {
    "segment.bytes": ConfigKey("INT", "1073741824", at_least=1024 * 1024),
    "segment.ms": ConfigKey("LONG", str(_WEEK_MS), at_least=1),
    "segment.jitter.ms": ConfigKey("LONG", "0", at_least=0),
    "segment.index.bytes": ConfigKey("INT", "10485760", at_least=4),
    "flush.messages": ConfigKey("LONG", str(LONG_MAX), at_least=1),
    "flush.ms": ConfigKey("LONG", str(LONG_MAX), at_least=0),
    "retention.bytes": ConfigKey("LONG", "-1"),
    "retention.ms": ConfigKey("LONG", str(_WEEK_MS), at_least=-1),
    "max.message.bytes": ConfigKey("INT", "1048588", at_least=0),
    "index.interval.bytes": ConfigKey("INT", "4096", at_least=0),
    "delete.retention.ms": ConfigKey("LONG", "86400000", at_least=0),
    "min.compaction.lag.ms": ConfigKey("LONG", "0", at_least=0),
    "max.compaction.lag.ms": ConfigKey("LONG", str(LONG_MAX), at_least=1),
    "file.delete.delay.ms": ConfigKey("LONG", "60000", at_least=0),
    "min.cleanable.dirty.ratio": ConfigKey("DOUBLE", "0.5", at_least=0, at_most=1),
    "cleanup.policy": ConfigKey("LIST", "delete", one_of=("compact", "delete")),
    "unclean.leader.election.enable": ConfigKey("BOOLEAN", "false"),
    "min.insync.replicas": ConfigKey("INT", "1", at_least=1),
    "compression.type": ConfigKey("STRING", "producer",
                                  one_of=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "compression.gzip.level": ConfigKey("INT", "-1", at_least=1, at_most=9),
    "compression.lz4.level": ConfigKey("INT", "9", at_least=1, at_most=17),
    "compression.zstd.level": ConfigKey("INT", "3", at_least=-131072, at_most=22),
    "preallocate": ConfigKey("BOOLEAN", "false"),
    "message.timestamp.type": ConfigKey("STRING", "CreateTime", one_of=("CreateTime", "LogAppendTime")),
    "message.timestamp.before.max.ms": ConfigKey("LONG", str(LONG_MAX), at_least=0),
    "message.timestamp.after.max.ms": ConfigKey("LONG", "3600000", at_least=0),
    "leader.replication.throttled.replicas": ConfigKey("LIST", "", throttled_replicas=True),
    "follower.replication.throttled.replicas": ConfigKey("LIST", "", throttled_replicas=True),
    "remote.storage.enable": ConfigKey("BOOLEAN", "false"),
    "local.retention.ms": ConfigKey("LONG", "-2", at_least=-2),
    "local.retention.bytes": ConfigKey("LONG", "-2", at_least=-2),
    "remote.log.copy.disable": ConfigKey("BOOLEAN", "false"),
    "remote.log.delete.on.disable": ConfigKey("BOOLEAN", "false"),
    "internal.segment.bytes": ConfigKey("INT", None),
}
# gzip's level validator also takes -1 (the codec's default).
_GZIP_DEFAULT_LEVEL = -1


def is_list(name: str) -> bool:
    key = TOPIC_CONFIG_KEYS.get(name)
    return key is not None and key.type == "LIST"


def default_value(name: str) -> str | None:
    key = TOPIC_CONFIG_KEYS.get(name)
    return None if key is None else key.default


def parse_value(name: str, value: str):
    """ConfigDef.parseType and the key's validator, for one topic config value."""
    key = TOPIC_CONFIG_KEYS[name]
    parsed = parse_type(name, key, value)
    _check(name, key, parsed)
    return parsed


def _check(name: str, key: ConfigKey, parsed) -> None:
    if name == "compression.gzip.level":
        if parsed > 9 or (parsed < 1 and parsed != _GZIP_DEFAULT_LEVEL):    # CompressionType.GZIP's rule
            raise invalid(name, parsed, f"Value must be between 1 and 9 or equal to {_GZIP_DEFAULT_LEVEL}")
        return
    check_range(name, key, parsed)
    if key.type == "LIST" and key.throttled_replicas:
        ok = all(_is_replica_pair(p) for p in parsed) or "".join(parsed) == "*"
        if not ok:
            shown = f"[{', '.join(parsed)}]"            # the value as Java's List.toString prints it
            raise invalid(name, shown, f"{name} must be the literal '*' or a list of replicas in the following "
                                        "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
    elif key.type == "LIST" and key.one_of:
        # ConfigDef.parseValue drops a ValidList's duplicates before its check, so none is refused
        for part in parsed:
            if not part:
                raise ConfigValueError(f"Configuration '{name}' values must not be empty.")
            if part not in key.one_of:
                raise invalid(name, part, f"String must be one of: {', '.join(key.one_of)}")


def _is_replica_pair(text: str) -> bool:
    left, sep, right = text.partition(":")
    return text == "" or (sep == ":" and left.isdigit() and right.isdigit())


def validate_topic_configs(configs: dict[str, str]) -> None:
    """LogConfig.validate for a topic's whole set of configs after a change: every name known,
    every value parsing and in range, and min.compaction.lag.ms <= max.compaction.lag.ms."""
    for name in configs:
        if name not in TOPIC_CONFIG_KEYS:
            raise ConfigValueError(f"Unknown topic config name: {name}")
    parsed = {name: parse_value(name, value) for name, value in configs.items()}
    low = parsed.get("min.compaction.lag.ms", 0)
    high = parsed.get("max.compaction.lag.ms", LONG_MAX)
    if low > high:
        raise ConfigValueError(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                               f"max.compaction.lag.ms ({high})")
