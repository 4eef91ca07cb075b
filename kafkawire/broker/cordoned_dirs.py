"""``cordoned.log.dirs`` on the broker (KIP-1066), as a Kafka 4.3.1 broker uses it: the log
directories that take no new replica.

    cordoned = CordonedDirs(broker)     # broker: config, node_id, image(), log_dirs, lifecycle
    cordoned.on_metadata()              # after each image: log_dirs.cordoned kept, a heartbeat if it moved
    cordoned.heartbeat_ids()            # BrokerHeartbeat CordonedLogDirs (None: not sent)

The value is this broker's own dynamic config (a per-broker config: Kafka refuses it as a cluster
default), else server.properties; ``*`` is every log directory (AbstractKafkaConfig.cordonedLogDirs).
What follows it:

- new logs go to a directory not cordoned (kafkawire.broker.log_dirs, LogManager.nextLogDirs);
- AlterReplicaLogDirs refuses a cordoned destination with INVALID_REPLICA_ASSIGNMENT, and
  DescribeLogDirs answers isCordoned (from metadata.version 4.3-IV0), as ReplicaManager does;
- from metadata.version 4.3-IV0, once the broker has caught up with the metadata (past
  STARTING), every heartbeat carries the cordoned directories' ids, and a change is sent at once
  (BrokerLifecycleManager's CordonedDirEvent); the controller records them and places no new
  replica on a broker whose every directory is cordoned (kafkawire.controller.cluster).

One difference: Kafka 4.3.1's LogManager learns the set only from a dynamic change (its
DynamicLogConfig.reconfigure), so a value only in server.properties reaches the controller but
neither steers that broker's own choice of directory nor its DescribeLogDirs; kafkawire's broker
follows the static value too, as the setting's documentation describes it.
"""
from __future__ import annotations

import logging
import os

from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs, image_version

__all__ = ["CORDONED_LOG_DIRS", "CORDONED_LOG_DIRS_LEVEL", "CordonedDirs", "cordoned_supported"]

log = logging.getLogger(__name__)

CORDONED_LOG_DIRS = "cordoned.log.dirs"
CORDONED_LOG_DIRS_LEVEL = 30         # metadata.version 4.3-IV0 (MetadataVersion.isCordonedLogDirsSupported)
_ALL = "*"


def cordoned_supported(image) -> bool:
    return (getattr(image, "metadata_version", None) or 0) >= CORDONED_LOG_DIRS_LEVEL


def _entries(text: str) -> list[str]:
    return [e for e in (part.strip() for part in text.split(",")) if e]


class CordonedDirs:
    def __init__(self, broker):
        self.broker = broker
        self._version: tuple | None = None

    def configured(self, image) -> list[str]:
        """The entries as configured: this broker's dynamic value, else the static one."""
        text = None
        if getattr(image, "configs", None) is not None:
            text = dynamic_broker_configs(image, str(self.broker.node_id)).get(CORDONED_LOG_DIRS)
        return list(self.broker.config.cordoned_log_dirs) if text is None else _entries(text)

    def paths(self, image) -> frozenset[str]:
        """The cordoned directories, absolute (entries not among log.dirs ignored: the controller
        and the broker's own check refuse them before they get here)."""
        entries = self.configured(image)
        log_dirs = self.broker.log_dirs
        if _ALL in entries:
            return frozenset(log_dirs.paths)
        return frozenset(p for p in (os.path.abspath(e) for e in entries) if p in log_dirs.paths)

    def on_metadata(self) -> None:
        image = self.broker.image()
        version = image_version(image)
        if version == self._version:
            return
        self._version = version
        cordoned = self.paths(image)
        log_dirs = self.broker.log_dirs
        if cordoned == log_dirs.cordoned:
            return
        log.info("broker %d: cordoned log directories: %s", self.broker.node_id, ", ".join(sorted(cordoned)) or "none")
        log_dirs.cordoned = cordoned
        lifecycle = self.broker.lifecycle
        if lifecycle is not None:
            lifecycle.heartbeat_soon()

    def heartbeat_ids(self) -> list | None:
        """CordonedLogDirs for the next heartbeat: None (the field left out) before the broker
        caught up with the metadata or below metadata.version 4.3-IV0, as Kafka's broker sends it."""
        if not cordoned_supported(self.broker.image()):
            return None
        return self.broker.log_dirs.cordoned_ids()
