"""A log directory's failure (KIP-858), as Kafka 4.3.1's LogDirFailureChannel,
ReplicaManager.handleLogDirFailure and LogManager.handleLogDirFailure handle it: an I/O error in a
directory takes it offline (writing a checkpoint, or ``storage_failure``: appending to, rolling,
reading or flushing a log there, as Kafka's maybeHandleIOException, with its message); its replicas
stop being served here (Kafka's HostedPartition.Offline: their requests are answered
KAFKA_STORAGE_ERROR), the next heartbeats
report it in OfflineLogDirs (the controller moves leadership off them) and no log opens there any
more. When no directory is left online, or the failed one holds the metadata log, the broker
halts, as Kafka's does (``Exit.halt(1)``): the broker's task ends with BrokerHalted, which stops
the node.
"""
from __future__ import annotations

import logging
import os

from kafkawire.storage.log import LogFlushError, SegmentRollError

__all__ = ["BrokerHalted", "append_step", "fail_log_dir", "is_offline_replica", "storage_failure"]

log = logging.getLogger(__name__)


class BrokerHalted(RuntimeError):
    """Kafka's Exit.halt(1) on a log directory failure: nothing is left to serve, or the metadata log is gone."""


# UnifiedLog / LocalLog's maybeHandleIOException messages, by the step that failed
_MESSAGES = {
    "append": "Error while appending records to {name} in dir {dir}",
    "roll": "Error while rolling log segment for {name} in dir {dir}",
    "read": "Exception while reading from {name} in dir {dir}",
    "flush": "Error while flushing log for {name} in dir {dir} with offset {end} (exclusive) and recovery point {end}",
}


def append_step(error: OSError) -> str:
    """The step of an append that failed: the roll or the flush inside it, else the write."""
    if isinstance(error, SegmentRollError):
        return "roll"
    return "flush" if isinstance(error, LogFlushError) else "append"


def storage_failure(broker, partition, step: str, error: OSError, *, future: bool = False) -> str:
    """An I/O error of ``step`` ("append", "roll", "read" or "flush") on ``partition``'s log: its log
    directory goes offline (LogDirFailureChannel) unless the partition is no longer hosted here (a
    log closed under a request, not a disk's failure; ``future``: a future log of
    AlterReplicaLogDirs, hosted as such); the KafkaStorageException's message, what the request is
    answered with as KAFKA_STORAGE_ERROR."""
    path = os.path.dirname(os.path.abspath(partition.log.directory))
    message = _MESSAGES[step].format(name=partition.name, dir=path, end=partition.log.log_end_offset)
    manager = getattr(broker, "log_manager", None)
    if manager is not None and (future or manager.replica((partition.topic, partition.partition)) is partition):
        fail_log_dir(broker, path, error, message=message)
    else:
        log.warning("%s: %s (the log is no longer hosted here)", message, error)
    return message


def fail_log_dir(broker, path: str, reason, *, message: str | None = None) -> None:
    """``path`` failed (``reason``, the I/O error; ``message``: Kafka's text for it): its replicas
    offline, the broker halted when nothing is left online or the metadata log was there."""
    log_dirs = broker.log_dirs
    if path in log_dirs.offline:
        return
    log_dirs.offline.add(path)
    log.error("%s: %s", message or f"Disk error in log directory {path}", reason)     # LogDirFailureChannel
    log.warning("Stopping serving replicas in dir %s", path)                          # ReplicaManager
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
