"""AlterReplicaLogDirs (API 34) on the broker listeners: ReplicaManager.alterReplicaLogDirs, with
KafkaApis' check (ALTER on the cluster, else every partition CLUSTER_AUTHORIZATION_FAILED,
kafkawire.broker.authorization).

Per partition, Kafka's errors in Kafka's order: INVALID_TOPIC_EXCEPTION when its future log's
directory name (``<topic>-<partition>.<32 hex>-future``) would pass 255 characters;
LOG_DIR_NOT_FOUND when the path is not one of ``log.dirs`` as an absolute path (compared as
given, as LogManager.isLogDirOnline does); KAFKA_STORAGE_ERROR when that directory is not
there; INVALID_REPLICA_ASSIGNMENT when ``cordoned.log.dirs`` names it (KIP-1066);
KAFKA_STORAGE_ERROR when the replica is in a failed directory (HostedPartition.Offline);
REPLICA_NOT_AVAILABLE when the broker holds no replica of the partition yet, after noting
the directory for the replica's log to come (LogManager.preferredLogDirs: what
``kafka-reassign-partitions`` relies on when it moves a replica to another broker and directory);
NONE when the replica is in that directory already or its future log is made there
(KAFKA_STORAGE_ERROR instead while any log directory is offline, as Kafka's LogManager refuses to
create a future log then).

The move, as Kafka's: the future log is created in the new directory
(``<topic>-<partition>.<32 hex>-future``, kafkawire.broker.log_dir_copy) and the answer is NONE at
once; the replica keeps serving reads and writes while a task on the event loop copies it into the
future log as a follower would fetch it, then swaps the two when the future log has caught up (the
old one renamed ``-delete``, removed later by kafkawire.broker.log_deletion) and assigns the
replica to its new directory with AssignReplicasToDirs. A request for a replica being moved to
the same directory is NONE and changes nothing; to another directory, the copy under way is
dropped and a new one starts there; to the directory the replica is in, the copy is dropped
(Partition.futureReplicaDirChanged). A replica deleted or reassigned away during the copy loses its
future log; a broker stopped or killed mid-copy resumes it at the next start from the future log it
finds (``find_future_logs``).
"""
from __future__ import annotations

import logging
import os

from kafkawire.messages.alter_replica_log_dirs_response import (AlterReplicaLogDirPartitionResult,
                                                                AlterReplicaLogDirsResponse,
                                                                AlterReplicaLogDirTopicResult)
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from .log_dir_copy import FUTURE_SUFFIX, FutureLogs
from .log_dir_failure import is_offline_replica
from .partition import partition_dir_name

__all__ = ["AlterLogDirsApi", "ALTER_REPLICA_LOG_DIRS", "alter_replica_log_dirs_refusal"]

log = logging.getLogger(__name__)
ALTER_REPLICA_LOG_DIRS = 34
MAX_DIR_NAME = 255


class AlterLogDirsApi:
    """AlterReplicaLogDirs for ``broker`` (its ``log_dirs``, ``log_manager``); ``futures``: the copies under way."""

    def __init__(self, broker):
        self.broker = broker
        self.futures = FutureLogs(broker)

    def handlers(self) -> dict[int, ApiHandler]:
        """Kafka 4.3.1's versions: 1-2 (v0 was removed in Kafka 4.0)."""
        return {ALTER_REPLICA_LOG_DIRS: ApiHandler(self.alter_replica_log_dirs, min_version=1, max_version=2)}

    async def alter_replica_log_dirs(self, ctx, request) -> AlterReplicaLogDirsResponse:
        destinations: dict[tuple[str, int], str] = {}
        for d in request.dirs:                   # AlterReplicaLogDirsRequest.partitionDirs: the last path wins
            for t in d.topics:
                for index in t.partitions:
                    destinations[(t.name, index)] = d.path
        self._forget_stale_preferences()
        by_topic: dict[str, list] = {}
        for (topic, index), path in destinations.items():
            error = await self._alter_one(topic, index, path)
            by_topic.setdefault(topic, []).append(AlterReplicaLogDirPartitionResult(partition_index=index,
                                                                                    error_code=int(error)))
        return AlterReplicaLogDirsResponse(results=[AlterReplicaLogDirTopicResult(topic_name=name, partitions=parts)
                                                    for name, parts in by_topic.items()])

    def _forget_stale_preferences(self) -> None:
        """Noted directories of partitions the metadata no longer has (their topic deleted)."""
        image = self.broker.image()
        preferred = self.broker.log_dirs.preferred
        for topic, index in list(preferred):
            t = None if image is None else image.topics_by_name.get(topic)
            if t is None or index not in t.partitions:
                del preferred[(topic, index)]

    async def _alter_one(self, topic: str, index: int, path: str) -> int:
        if len(partition_dir_name(topic, index)) + 1 + 32 + len(FUTURE_SUFFIX) > MAX_DIR_NAME:
            return Errors.INVALID_TOPIC_EXCEPTION
        log_dirs = self.broker.log_dirs
        if path not in log_dirs.paths:
            return Errors.LOG_DIR_NOT_FOUND
        if path in log_dirs.offline or not os.path.isdir(path):
            log.warning("Unable to alter log dirs for %s-%d: log directory %s is offline", topic, index, path)
            return Errors.KAFKA_STORAGE_ERROR
        if path in log_dirs.cordoned:          # KIP-1066: ReplicaManager.alterReplicaLogDirs refuses it
            log.warning("Unable to alter log dirs for %s-%d: log directory %s is cordoned", topic, index, path)
            return Errors.INVALID_REPLICA_ASSIGNMENT
        partition = self.broker.log_manager.replica((topic, index))
        if partition is None:
            image = self.broker.image()
            t = None if image is None else image.topics_by_name.get(topic)
            if t is not None and is_offline_replica(self.broker, (topic, index), t):     # HostedPartition.Offline
                log.warning("Unable to alter log dirs for %s-%d: Partition %s-%d is offline", topic, index,
                            topic, index)
                return Errors.KAFKA_STORAGE_ERROR
            if t is not None and index in t.partitions:      # bounded by the metadata's partitions
                log_dirs.preferred[(topic, index)] = path
            return Errors.REPLICA_NOT_AVAILABLE
        log_dirs.preferred.pop((topic, index), None)
        futures = self.futures
        moving_to = futures.destination((topic, index))
        if moving_to == path:
            return Errors.NONE
        if moving_to is not None:                    # futureReplicaDirChanged: that copy stops
            futures.drop((topic, index), f"the replica is to go to {path} instead")
        if os.path.dirname(os.path.abspath(partition.log.directory)) == path:
            return Errors.NONE
        if log_dirs.offline:          # LogManager.getOrCreateLog: no future log while a directory is offline
            log.warning("Unable to alter log dirs for %s-%d: log directories %s are offline", topic, index,
                        ",".join(sorted(log_dirs.offline)))
            return Errors.KAFKA_STORAGE_ERROR
        try:
            futures.create(partition, path)
        except OSError as exc:       # the directory offline when it was creating the future log's files
            log.warning("Unable to alter log dirs for %s-%d: %s", topic, index, exc)
            return Errors.KAFKA_STORAGE_ERROR
        return Errors.NONE


def alter_replica_log_dirs_refusal(request, code: int) -> AlterReplicaLogDirsResponse:
    """AlterReplicaLogDirsRequest.getErrorResponse: every partition with ``code``."""
    by_topic: dict[str, list] = {}
    for d in request.dirs:
        for t in d.topics:
            by_topic.setdefault(t.name, []).extend(
                AlterReplicaLogDirPartitionResult(partition_index=i, error_code=int(code)) for i in t.partitions)
    return AlterReplicaLogDirsResponse(results=[AlterReplicaLogDirTopicResult(topic_name=name, partitions=parts)
                                                for name, parts in by_topic.items()])
