"""AlterReplicaLogDirs (API 34) on the broker listeners: ReplicaManager.alterReplicaLogDirs, with
KafkaApis' check (ALTER on the cluster, else every partition CLUSTER_AUTHORIZATION_FAILED,
kafkawire.broker.authorization).

Per partition, Kafka's errors in Kafka's order: INVALID_TOPIC_EXCEPTION when its future log's
directory name (``<topic>-<partition>.<32 hex>-future``) would pass 255 characters;
LOG_DIR_NOT_FOUND when the path is not one of ``log.dirs`` as an absolute path (compared as
given, as LogManager.isLogDirOnline does); KAFKA_STORAGE_ERROR when that directory is not
there; REPLICA_NOT_AVAILABLE when the broker holds no replica of the partition yet, after noting
the directory for the replica's log to come (LogManager.preferredLogDirs: what
``kafka-reassign-partitions`` relies on when it moves a replica to another broker and directory);
NONE when the replica is in that directory already or was moved there.

The move (kafkawire's, simpler than Kafka's): Kafka creates the future log, copies the replica
into it with a ReplicaAlterLogDirsThread while the replica keeps serving, then swaps them and
tells the controller (AssignReplicasToDirs). kafkawire moves the replica within the request: the
partition stops serving (its pending state writes finished, a cleaning of it given up; requests
for it are NOT_LEADER_OR_FOLLOWER, and Broker.on_metadata leaves it closed, until it opens again),
its log is flushed and closed, copied into ``<topic>-<partition>.<id>-future`` in the new
directory by a thread (each file fsynced; the event loop serves the other partitions meanwhile),
that copy renamed into place, then the old one renamed ``-delete`` (removed later,
kafkawire.broker.log_deletion); the partition then opens again from there with the same high
watermark, log start and recovery point, and Broker.on_metadata assigns it to its new directory
with AssignReplicasToDirs. The answer comes once the move is done (Kafka answers once the future
log exists); a second request for the same destination meanwhile is NONE. The partition is
unavailable for a time linear in its size (benchmarks/alter_log_dir_move.py), so this is meant for
small or idle partitions: requests waiting on its old object (acks=all, a fetch waiting for data)
are answered when they time out. A failed copy leaves the replica where it was
(KAFKA_STORAGE_ERROR), a replica deleted or reassigned away during the copy is deleted
(REPLICA_NOT_AVAILABLE); a ``-future`` directory left by a crash or a stop mid-copy is not resumed
(Kafka resumes the copy): the next start deletes it when the partition's own log is there
(``retire_partial_copies``).
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import uuid

from kafkawire.messages.alter_replica_log_dirs_response import (AlterReplicaLogDirPartitionResult,
                                                                AlterReplicaLogDirsResponse,
                                                                AlterReplicaLogDirTopicResult)
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from .log_deletion import delete_dir_name
from .partition import partition_dir_name

__all__ = ["AlterLogDirsApi", "ALTER_REPLICA_LOG_DIRS", "alter_replica_log_dirs_refusal", "retire_partial_copies"]

log = logging.getLogger(__name__)
ALTER_REPLICA_LOG_DIRS = 34
FUTURE_SUFFIX = "-future"
MAX_DIR_NAME = 255


def _future_dir_name(topic: str, index: int) -> str:
    return f"{partition_dir_name(topic, index)}.{uuid.uuid4().hex}{FUTURE_SUFFIX}"


class AlterLogDirsApi:
    """AlterReplicaLogDirs for ``broker`` (its ``log_dirs``, ``partitions``, ``replica_roles``, ``log_manager``)."""

    def __init__(self, broker):
        self.broker = broker
        self.moving: dict[tuple[str, int], str] = {}     # partition -> the directory its log is being copied to

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
        if (topic, index) in self.moving:            # being moved: done when it is going there already
            return Errors.NONE if self.moving[(topic, index)] == path else Errors.REPLICA_NOT_AVAILABLE
        partition = self.broker.log_manager.replica((topic, index))
        if partition is None:
            image = self.broker.image()
            t = None if image is None else image.topics_by_name.get(topic)
            if t is not None and index in t.partitions:      # bounded by the metadata's partitions
                log_dirs.preferred[(topic, index)] = path
            return Errors.REPLICA_NOT_AVAILABLE
        log_dirs.preferred.pop((topic, index), None)
        if os.path.dirname(os.path.abspath(partition.log.directory)) == path:
            return Errors.NONE
        try:
            return await self.move(partition, path)
        except OSError as exc:
            log.error("Unable to alter log dirs for %s-%d: %s", topic, index, exc)
            return Errors.KAFKA_STORAGE_ERROR

    async def move(self, partition, destination: str) -> int:
        """Move a hosted replica's log to ``destination`` (a log directory; see the module docstring);
        NONE, or REPLICA_NOT_AVAILABLE when the replica left this broker during the copy."""
        broker = self.broker
        key = (partition.topic, partition.partition)
        source = partition.log.directory
        broker.state_writes.wait(source)
        manager = broker.log_manager
        if manager.cleaner is not None:
            manager.cleaner.abort(partition)
        high_watermark = partition.high_watermark()
        if broker.partitions.get(key) is partition:
            del broker.partitions[key]
        else:                                # followed: its fetcher lets it go now
            high_watermark = broker.replica_roles.drop(key).high_watermark
        log_start, recovery_point = partition.log.log_start_offset, manager.recovery_points.get(key)
        try:
            partition.log.flush()
        finally:
            broker.close_partition(partition)
        future = os.path.join(destination, _future_dir_name(partition.topic, partition.partition))
        final = os.path.join(destination, partition_dir_name(*key))
        aside = os.path.join(os.path.dirname(source), delete_dir_name(partition_dir_name(*key)))
        self.moving[key] = destination          # Broker.on_metadata leaves it closed meanwhile
        try:
            await asyncio.to_thread(_copy_durably, source, future)
        except asyncio.CancelledError:          # the broker stops: the source stays; the copy is left
            self.moving.pop(key, None)
            raise
        except OSError:
            self.moving.pop(key, None)
            shutil.rmtree(future, ignore_errors=True)
            broker.on_metadata()             # opens it again where it was
            raise
        del self.moving[key]
        if not self._still_hosted(key, partition.topic_id):      # deleted or reassigned away meanwhile
            shutil.rmtree(future, ignore_errors=True)
            broker.log_deleter.delete(partition)
            return Errors.REPLICA_NOT_AVAILABLE
        try:
            # the copy takes its name before the source goes: a crash in between leaves two whole
            # logs (the first in log.dirs order opens), never none
            os.rename(future, final)
            _fsync_dir(destination)
            try:
                os.rename(source, aside)
            except OSError:
                shutil.rmtree(final, ignore_errors=True)
                raise
        except OSError:
            shutil.rmtree(future, ignore_errors=True)
            broker.on_metadata()             # opens it again where it was
            raise
        broker.log_deleter.schedule(aside)
        manager.keep_offsets(destination, key, high_watermark=high_watermark, log_start_offset=log_start,
                             recovery_point=recovery_point)
        log.info("broker %d: moved %s from %s to %s", broker.node_id, partition.name, os.path.dirname(source),
                 destination)
        broker.on_metadata()                 # opens it in its new directory and assigns it there
        return Errors.NONE

    def _still_hosted(self, key, topic_id) -> bool:
        image = self.broker.image()
        topic = None if image is None else image.topics_by_name.get(key[0])
        registration = None if topic is None or topic.id != topic_id else topic.partitions.get(key[1])
        return registration is not None and self.broker.node_id in registration.replicas


def retire_partial_copies(log_dirs) -> list[str]:
    """At start: each ``-future`` directory (a copy a crash or a stop cut short) whose partition's
    own log is in one of ``log_dirs`` is renamed ``-delete`` (the log deleter removes it); one
    without is left with a warning. The renamed paths."""
    renamed = []
    for log_dir in log_dirs:
        try:
            names = sorted(n for n in os.listdir(log_dir) if n.endswith(FUTURE_SUFFIX))
        except OSError as exc:
            log.warning("cannot list %s: %s", log_dir, exc)
            continue
        for name in names:
            partition_name = name[:-len(FUTURE_SUFFIX)].rpartition(".")[0]
            topic, _, index = partition_name.rpartition("-")
            if not topic or not index.isdigit():
                continue
            if not any(os.path.isdir(os.path.join(d, partition_name)) for d in log_dirs):
                log.warning("%s in %s: a copy whose log is nowhere else; left as it is", name, log_dir)
                continue
            aside = os.path.join(log_dir, delete_dir_name(partition_name))
            try:
                os.rename(os.path.join(log_dir, name), aside)
            except OSError as exc:
                log.warning("cannot set %s aside: %s", name, exc)
                continue
            log.info("%s in %s: a move cut short; renamed %s to be deleted", name, log_dir, os.path.basename(aside))
            renamed.append(aside)
    return renamed


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_durably(source: str, target: str) -> None:
    """The log directory copied, every file and the directory itself on disk before the source goes."""
    shutil.copytree(source, target)
    for name in os.listdir(target):
        path = os.path.join(target, name)
        if os.path.isfile(path):
            with open(path, "rb+") as f:
                os.fsync(f.fileno())
    _fsync_dir(target)


def alter_replica_log_dirs_refusal(request, code: int) -> AlterReplicaLogDirsResponse:
    """AlterReplicaLogDirsRequest.getErrorResponse: every partition with ``code``."""
    by_topic: dict[str, list] = {}
    for d in request.dirs:
        for t in d.topics:
            by_topic.setdefault(t.name, []).extend(
                AlterReplicaLogDirPartitionResult(partition_index=i, error_code=int(code)) for i in t.partitions)
    return AlterReplicaLogDirsResponse(results=[AlterReplicaLogDirTopicResult(topic_name=name, partitions=parts)
                                                for name, parts in by_topic.items()])
