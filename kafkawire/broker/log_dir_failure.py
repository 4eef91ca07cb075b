"""A log directory's failure (KIP-858), as Kafka 4.3.1's LogDirFailureChannel,
ReplicaManager.handleLogDirFailure and LogManager.handleLogDirFailure handle it: an I/O error
writing a checkpoint in a directory takes it offline; its replicas stop being served here (Kafka's
HostedPartition.Offline: their requests are answered KAFKA_STORAGE_ERROR), the next heartbeats
report it in OfflineLogDirs (the controller moves leadership off them) and no log opens there any
more. When no directory is left online, or the failed one holds the metadata log, the broker
halts, as Kafka's does (``Exit.halt(1)``): the broker's task ends with BrokerHalted, which stops
the node.
"""
from __future__ import annotations

import logging
import os

__all__ = ["BrokerHalted", "fail_log_dir", "is_offline_replica"]

log = logging.getLogger(__name__)


class BrokerHalted(RuntimeError):
    """Kafka's Exit.halt(1) on a log directory failure: nothing is left to serve, or the metadata log is gone."""


def fail_log_dir(broker, path: str, reason) -> None:
    """``path`` failed (``reason``, the I/O error): its replicas offline, the broker halted when
    nothing is left online or the metadata log was there."""
    log_dirs = broker.log_dirs
    if path in log_dirs.offline:
        return
    log_dirs.offline.add(path)
    log.error("broker %d: log directory %s failed (%s): stopping serving the replicas in it", broker.node_id,
              path, reason)
    for key, partition in list(broker.log_manager.replicas().items()):
        if os.path.dirname(os.path.abspath(partition.log.directory)) != path:
            continue
        broker.offline_partitions[key] = partition.topic_id
        if broker.partitions.get(key) is partition:
            del broker.partitions[key]
        else:
            broker.replica_roles.drop(key)
        broker.close_partition(partition)
    paths = [d.path for d in log_dirs.dirs]
    if all(p in log_dirs.offline for p in paths):
        broker.halt(BrokerHalted(f"Shutdown broker because all log dirs in {', '.join(paths)} have failed"))
    elif os.path.abspath(path) == os.path.abspath(broker.config.metadata_log_dir):
        broker.halt(BrokerHalted(f"Shutdown broker because the metadata log dir {path} has failed"))
    elif broker.lifecycle is not None:
        broker.lifecycle.heartbeat_soon()


def is_offline_replica(broker, key, topic) -> bool:
    """Whether ``key`` ((topic name, partition)) of ``topic`` (an image topic) is a replica of a
    failed directory (Kafka's HostedPartition.Offline, answered KAFKA_STORAGE_ERROR)."""
    offline = getattr(broker, "offline_partitions", None)       # none without a failed directory
    return bool(offline) and offline.get(key) == topic.id
