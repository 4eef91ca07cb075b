"""The broker configs a kafkawire node knows, as a broker's DescribeConfigs of its own id lists
them (ConfigHelper.createBrokerConfigEntry): each key's KafkaConfig default, its ConfigDef type
and whether it is read-only (not in DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS).

The keys: Kafka's keys among kafkawire.net.config.KNOWN_KEYS (kafkawire's own are not Kafka's
and are left out) and the broker synonyms of every topic config (``log.retention.ms``, ...),
which Kafka's DynamicLogConfig makes dynamic. Kafka's broker lists every key of KafkaConfig
(several hundred); a key kafkawire does not read is not listed.
"""
from __future__ import annotations

from kafkawire.net.config_keys import KNOWN_KEYS, REQUIRED

from .configs import BROKER_LIST_CONFIGS
from .describe_configs import CONFIG_TYPES, broker_config_type, broker_default
from .effective_configs import SYNONYMS

__all__ = ["broker_config_keys", "BrokerConfigKey"]

# ConfigDef types of the KNOWN_KEYS that are not INT (their comments in kafkawire.net.config).
_TYPES = {
    **{name: "LIST" for name in BROKER_LIST_CONFIGS},
    "process.roles": "LIST", "controller.quorum.voters": "LIST", "controller.quorum.bootstrap.servers": "LIST",
    "controller.quorum.auto.join.enable": "BOOLEAN", "auto.create.topics.enable": "BOOLEAN",
    "inter.broker.listener.name": "STRING", "metadata.log.dir": "STRING", "log.message.timestamp.type": "STRING",
    "max.connections.per.ip.overrides": "STRING", "broker.rack": "STRING", "replica.selector.class": "STRING",
    "log.cleaner.enable": "BOOLEAN", "log.cleaner.io.max.bytes.per.second": "DOUBLE",
    "transaction.partition.verification.enable": "BOOLEAN",
    "log.cleaner.io.buffer.load.factor": "DOUBLE",
    "offsets.topic.replication.factor": "SHORT",
    "transaction.state.log.replication.factor": "SHORT",
    "group.consumer.assignors": "LIST", "group.share.assignors": "LIST",
    "group.share.persister.class.name": "STRING",
    **{name: "LONG" for name in (
        "metadata.log.segment.ms", "metadata.max.retention.bytes", "metadata.max.retention.ms",
        "metadata.log.max.record.bytes.between.snapshots", "metadata.log.max.snapshot.interval.ms",
        "log.segment.delete.delay.ms", "offsets.retention.check.interval.ms", "connections.max.idle.ms",
        "queued.max.request.bytes", "metrics.sample.window.ms", "log.retention.check.interval.ms",
        "replica.high.watermark.checkpoint.interval.ms", "log.initial.task.delay.ms",
        "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size", "replica.lag.time.max.ms",
        "connections.max.reauth.ms")},
}
# DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS among the KNOWN_KEYS that are not topic-config synonyms
# (DynamicListenerConfig, SocketServer, metric.reporters).
_DYNAMIC = frozenset({"listeners", "listener.security.protocol.map", "max.connections", "max.connections.per.ip",
                      "max.connections.per.ip.overrides", "max.connection.creation.rate", "metric.reporters",
                      # LogCleaner.RECONFIGURABLE_CONFIGS (kafkawire reads them at start only)
                      "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
                      "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
                      # DYNAMIC_PRODUCER_STATE_MANAGER_CONFIGS (kafkawire.broker.txn_verify_setting)
                      "transaction.partition.verification.enable"})
_TOPIC_SYNONYMS = frozenset(synonym for synonyms in SYNONYMS.values() for synonym, _ in synonyms)


class BrokerConfigKey(tuple):
    """(default or None, DescribeConfigs config type, read-only)."""
    __slots__ = ()

    def __new__(cls, default: str | None, config_type: int, read_only: bool):
        return super().__new__(cls, (default, config_type, read_only))


def broker_config_keys() -> dict[str, BrokerConfigKey]:
    keys = {}
    for name, key in KNOWN_KEYS.items():
        if key.source == "kafkawire":
            continue
        default = None if key.default is REQUIRED else key.default
        # a topic config's broker synonym has the topic config's type (log.retention.ms is a LONG)
        config_type = broker_config_type(name) if name in _TOPIC_SYNONYMS else CONFIG_TYPES[_TYPES.get(name, "INT")]
        keys[name] = BrokerConfigKey(default, config_type, name not in _DYNAMIC and name not in _TOPIC_SYNONYMS)
    for name in _TOPIC_SYNONYMS:
        if name not in keys:
            keys[name] = BrokerConfigKey(broker_default(name), broker_config_type(name), False)
    return keys
