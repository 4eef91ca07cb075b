"""A log directory's failure (KIP-858), as Kafka 4.3.1's LogDirFailureChannel,
ReplicaManager.handleLogDirFailure and LogManager.handleLogDirFailure handle it: an I/O error in a
directory takes it offline (writing a checkpoint, or ``storage_failure``: appending to, rolling,
reading, flushing or truncating a log there or deleting its segments, as Kafka's
maybeHandleIOException, with its message; ``open_failure``: opening or creating it;
``state_file_failure``: its leader-epoch checkpoint or a producer snapshot); its replicas
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

from kafkawire.metadata.registrations import UNASSIGNED
from kafkawire.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT
from kafkawire.storage.log import LogFlushError, SegmentRollError

__all__ = ["BrokerHalted", "LogTruncationError", "append_step", "fail_log_dir", "is_offline_replica",
           "open_failure", "skips_creation", "state_file_failure", "storage_failure"]

log = logging.getLogger(__name__)


class BrokerHalted(RuntimeError):
    """Kafka's Exit.halt(1) on a log directory failure: nothing is left to serve, or the metadata log is gone."""


# UnifiedLog / LocalLog's maybeHandleIOException messages, by the step that failed
_MESSAGES = {
    "append": "Error while appending records to {name} in dir {dir}",
    "roll": "Error while rolling log segment for {name} in dir {dir}",
    "read": "Exception while reading from {name} in dir {dir}",
    "flush": "Error while flushing log for {name} in dir {dir} with offset {end} (exclusive) and recovery point {end}",
    "truncate": "Error while truncating log to offset {offset} for {name} in dir {dir}",
    "truncate_fully": "Error while truncating the entire log for {name} in dir {dir}",
    "delete": "Error while deleting segments for {name} in dir {dir}",
    "rename": "Error while renaming dir for {name} in log dir {dir}",
}


class LogTruncationError(OSError):
    """An I/O error truncating a log to ``offset`` (``fully``: emptied, started again there), told
    apart as UnifiedLog.truncateTo and truncateFullyAndStartAt report it."""

    def __init__(self, error: OSError, offset: int, *, fully: bool):
        super().__init__(*((error.errno, error.strerror, error.filename) if error.errno is not None else (str(error),)))
        self.offset, self.fully = offset, fully


def append_step(error: OSError) -> str:
    """The step of an append that failed: the roll or the flush inside it, else the write (or a
    follower's truncation, whose error is an append's too in the replica fetcher)."""
    if isinstance(error, LogTruncationError):
        return "truncate_fully" if error.fully else "truncate"
    if isinstance(error, SegmentRollError):
        return "roll"
    return "flush" if isinstance(error, LogFlushError) else "append"


def storage_failure(broker, partition, step: str, error: OSError, *, future: bool = False) -> str:
    """An I/O error of ``step`` (a key of _MESSAGES) on ``partition``'s log: its log
    directory goes offline (LogDirFailureChannel) unless the partition is no longer hosted here (a
    log closed under a request, not a disk's failure; ``future``: a future log of
    AlterReplicaLogDirs, hosted as such); the KafkaStorageException's message, what the request is
    answered with as KAFKA_STORAGE_ERROR."""
    path = os.path.dirname(os.path.abspath(partition.log.directory))
    message = _MESSAGES[step].format(name=partition.name, dir=path, end=partition.log.log_end_offset,
                                     offset=getattr(error, "offset", None))
    manager = getattr(broker, "log_manager", None)
    if manager is not None and (future or manager.replica((partition.topic, partition.partition)) is partition):
        fail_log_dir(broker, path, error, message=message)
    else:
        log.warning("%s: %s (the log is no longer hosted here)", message, error)
    return message


def open_failure(broker, key, topic_id, log_dir: str, error: OSError, *, existed: bool) -> None:
    """An I/O error opening (``existed``: LogManager.loadLogs' "Error while loading log dir", as
    kafkawire opens a log when the metadata first names it, not all at start) or creating
    (getOrCreateLog's KafkaStorageException) the log of ``key`` ((topic, partition)) in ``log_dir``:
    the directory goes offline and the replica is one of its offline ones (HostedPartition.Offline,
    answered KAFKA_STORAGE_ERROR)."""
    path = os.path.abspath(log_dir)
    message = (f"Error while loading log dir {path}" if existed
               else f"Error while creating log for {key[0]}-{key[1]} in dir {path}")
    broker.offline_partitions[key] = topic_id
    fail_log_dir(broker, path, error, message=message)


def state_file_failure(broker, directory: str, job, error: OSError) -> None:
    """A partition's state file (kafkawire.broker.state_writes) in ``directory`` could not be
    written: its log directory goes offline, with the message of Kafka's write of that file
    (CheckpointFileWithFailureHandler for the leader-epoch checkpoint; a producer snapshot is
    written by UnifiedLog.roll). Not when the partition is no longer hosted here."""
    args = getattr(job, "args", ())
    file = os.path.abspath(args[0]) if args and isinstance(args[0], str) else error.filename
    path = os.path.dirname(os.path.abspath(directory))
    if path in broker.log_dirs.offline or not os.path.isdir(directory):
        return           # failed already, or the partition deleted or moved since (its directory renamed)
    if file and os.path.basename(file) == LEADER_EPOCH_CHECKPOINT:
        message = f"Error while writing to checkpoint file {file}"
    else:
        name = os.path.basename(directory)
        if name.endswith("-future"):          # an AlterReplicaLogDirs future log: named by its partition
            name = name.rpartition(".")[0]
        message = f"Error while rolling log segment for {name} in dir {path}"
    fail_log_dir(broker, path, error, message=message)


def skips_creation(broker, key, topic_id, assigned) -> bool:
    """Partition.createLogInAssignedDirectoryId: while a directory of this broker is offline, a
    replica the metadata assigns to a directory not online here (one that failed, or one unknown:
    it may be a directory that could not be read at start, the log still in it) is not opened in
    any directory (its requests are answered NOT_LEADER_OR_FOLLOWER, as Kafka's Partition without a
    log); nor is a replica whose log was in a failed directory. Kafka's warning, once per assignment."""
    log_dirs = broker.log_dirs
    if not log_dirs.offline:
        return False
    if broker.offline_partitions.get(key) == topic_id:
        return True
    known = log_dirs.by_id(assigned)
    if assigned == UNASSIGNED or (known is not None and known.path not in log_dirs.offline):
        log_dirs.creations_skipped.pop(key, None)
        return False
    if log_dirs.creations_skipped.get(key) != (topic_id, assigned):
        log_dirs.creations_skipped[key] = (topic_id, assigned)
        log.warning("[Partition %s-%d broker=%d] Skipping creation of log because there are potentially offline "
                    "log directories and log may already exist there. directoryId=%s, topicId=%s", key[0], key[1],
                    broker.node_id, assigned, topic_id)
    return True


def fail_log_dir(broker, path: str, reason, *, message: str | None = None) -> None:
    """``path`` failed (``reason``, the I/O error; ``message``: Kafka's text for it): its replicas
    offline, the broker halted when nothing is left online or the metadata log was there."""
    log_dirs = broker.log_dirs
    if path in log_dirs.offline:
        return
    log_dirs.offline.add(path)
    log.error("%s: %s", message or f"Disk error in log directory {path}", reason)     # LogDirFailureChannel
    log.warning("Stopping serving replicas in dir %s", path)                          # ReplicaManager
    alter = getattr(broker, "alter_log_dirs", None)
    moves_stopped = [] if alter is None else alter.futures.on_log_dir_failure(path)
    stopped = []
    for key, partition in list(broker.log_manager.replicas().items()):
        if os.path.dirname(os.path.abspath(partition.log.directory)) != path:
            continue
        stopped.append(key)
        broker.offline_partitions[key] = partition.topic_id
        if broker.partitions.get(key) is partition:
            del broker.partitions[key]
        else:
            broker.replica_roles.drop(key)
        broker.close_partition(partition)
    log.warning("Broker %d stopped fetcher for partitions %s and stopped moving logs for partitions %s because they "
                "are in the failed log directory %s.", broker.node_id, _names(stopped), _names(moves_stopped), path)
    paths = [d.path for d in log_dirs.dirs]
    if all(p in log_dirs.offline for p in paths):
        broker.halt(BrokerHalted(f"Shutdown broker because all log dirs in {', '.join(paths)} have failed"))
    elif os.path.abspath(path) == os.path.abspath(broker.config.metadata_log_dir):
        broker.halt(BrokerHalted(f"Shutdown broker because the metadata log dir {path} has failed"))
    elif broker.lifecycle is not None:
        broker.lifecycle.heartbeat_soon()


def _names(keys) -> str:
    return ",".join(f"{topic}-{index}" for topic, index in keys)


def is_offline_replica(broker, key, topic) -> bool:
    """Whether ``key`` ((topic name, partition)) of ``topic`` (an image topic) is a replica of a
    failed directory (Kafka's HostedPartition.Offline, answered KAFKA_STORAGE_ERROR)."""
    offline = getattr(broker, "offline_partitions", None)       # none without a failed directory
    return bool(offline) and offline.get(key) == topic.id
