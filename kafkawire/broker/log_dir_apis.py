"""OffsetForLeaderEpoch (23) and DescribeLogDirs (35) on the broker listeners, as Kafka's
KafkaApis.handleOffsetForLeaderEpochRequest (ReplicaManager and Partition.lastOffsetForLeaderEpoch)
and handleDescribeLogDirsRequest (ReplicaManager.describeLogDirs) answer them.

OffsetForLeaderEpoch: for each partition, where the requested leader epoch ends in the partition's
log (kafkawire.storage.leader_epoch_cache: the latest epoch ends at the log end, an older one where
the next known epoch starts, an unknown one past every known one is -1/-1), after fencing the
request's current leader epoch (FENCED_LEADER_EPOCH below ours, UNKNOWN_LEADER_EPOCH above; -1 is
not checked). A partition of the metadata not hosted here is NOT_LEADER_OR_FOLLOWER, one the
metadata does not have UNKNOWN_TOPIC_OR_PARTITION. Java consumers ask it after a leader change to
check their position was not truncated away (KIP-320).

DescribeLogDirs: each log directory of ``log.dirs`` (its absolute path, in that order), with the
size of each partition log in it that the request names (every one for a null topic list; names
it does not hold are left out, as Kafka leaves them out), offset lag max(high watermark - log
end, 0) as ReplicaManager.getLogEndOffsetLag's; a replica being moved to another directory
(kafkawire.broker.log_dir_copy) has a second entry in the destination directory, its future log:
``isFutureKey`` true, its size, and as offset lag the current log's end minus its end
(getLogEndOffsetLag of a future log, not bounded at 0), and from v4 the volume's total and usable bytes; a
directory that cannot be read is KAFKA_STORAGE_ERROR.
"""
from __future__ import annotations

import logging
import os

from kafkawire.messages.describe_log_dirs_response import (DescribeLogDirsPartition, DescribeLogDirsResponse,
                                                           DescribeLogDirsResult, DescribeLogDirsTopic)
from kafkawire.messages.offset_for_leader_epoch_response import (EpochEndOffset, OffsetForLeaderEpochResponse,
                                                                 OffsetForLeaderTopicResult)
from kafkawire.net.metadata_topic import epoch_error
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from .cordoned_dirs import cordoned_supported
from .log_manager import log_dir_paths
from .log_dir_failure import is_offline_replica

__all__ = ["LogDirApis", "OFFSET_FOR_LEADER_EPOCH", "DESCRIBE_LOG_DIRS"]

log = logging.getLogger(__name__)
OFFSET_FOR_LEADER_EPOCH, DESCRIBE_LOG_DIRS = 23, 35
NO_PARTITION_LEADER_EPOCH = -1
INVALID_OFFSET_LAG = -1          # DescribeLogDirsResponse.INVALID_OFFSET_LAG


class LogDirApis:
    """The two APIs for ``broker`` (its ``image()``, ``partitions``, ``node_id`` and ``log_dir``)."""

    def __init__(self, broker):
        self.broker = broker

    def handlers(self) -> dict[int, ApiHandler]:
        """Kafka 4.3.1's version ranges (v0-1 of OffsetForLeaderEpoch and v0 of DescribeLogDirs were
        removed in Kafka 4.0)."""
        return {
            OFFSET_FOR_LEADER_EPOCH: ApiHandler(self.offset_for_leader_epoch, min_version=2, max_version=4),
            DESCRIBE_LOG_DIRS: ApiHandler(self.describe_log_dirs, min_version=1, max_version=5),
        }

    # -- OffsetForLeaderEpoch --

    async def offset_for_leader_epoch(self, ctx, request) -> OffsetForLeaderEpochResponse:
        image = self.broker.image()
        topics = []
        for t in request.topics:
            topic = None if image is None else image.topics_by_name.get(t.topic)
            partitions = [self._epoch_end_offset(topic, p) for p in t.partitions]
            topics.append(OffsetForLeaderTopicResult(topic=t.topic, partitions=partitions))
        return OffsetForLeaderEpochResponse(topics=topics)

    def _epoch_end_offset(self, topic, p) -> EpochEndOffset:
        answer = EpochEndOffset(partition=p.partition)
        partition = self.broker.partitions.get((topic.name, p.partition)) if topic is not None else None
        if partition is None:
            known = topic is not None and p.partition in topic.partitions
            answer.error_code = Errors.NOT_LEADER_OR_FOLLOWER if known else Errors.UNKNOWN_TOPIC_OR_PARTITION
            if known and is_offline_replica(self.broker, (topic.name, p.partition), topic):
                answer.error_code = Errors.KAFKA_STORAGE_ERROR
            return answer
        answer.error_code = _fencing_error(p.current_leader_epoch, partition.leader_epoch)
        if answer.error_code != Errors.NONE:
            return answer
        try:
            answer.leader_epoch, answer.end_offset = partition.end_offset_for_epoch(p.leader_epoch)
        except OSError as exc:            # the checkpoint could not be written
            log.error("%s: %s", partition.name, exc)
            answer.error_code = Errors.KAFKA_STORAGE_ERROR
        return answer

    # -- DescribeLogDirs --

    async def describe_log_dirs(self, ctx, request) -> DescribeLogDirsResponse:
        return DescribeLogDirsResponse(results=self.log_dir_results(request.topics))

    def log_dir_results(self, requested_topics) -> list[DescribeLogDirsResult]:
        """One result per log directory."""
        replicas = self._replicas()
        by_dir: dict[str, dict] = {}
        for key, partition in replicas.items():
            by_dir.setdefault(os.path.dirname(os.path.abspath(partition.log.directory)), {})[key] = partition
        futures_by_dir: dict[str, dict] = {}
        alter = getattr(self.broker, "alter_log_dirs", None)
        for key, future in ({} if alter is None else alter.futures.futures).items():
            if key in replicas:
                lag = replicas[key].log.log_end_offset - future.log.log_end_offset
                futures_by_dir.setdefault(future.destination, {})[key] = (lag, future.partition)
        for key, future in ({} if alter is None else alter.futures.stalled).items():
            # its current log's directory failed: no lag (ReplicaManager.getLogEndOffsetLag's -1)
            futures_by_dir.setdefault(future.destination, {})[key] = (INVALID_OFFSET_LAG, future.partition)
        return [self._log_dir_result(requested_topics, path, by_dir.get(path, {}), futures_by_dir.get(path, {}))
                for path in log_dir_paths(self.broker)]

    def _replicas(self) -> dict:
        """Led here, and followed (Kafka lists every replica)."""
        replicas = dict(self.broker.partitions)
        replicas.update((key, f.partition) for key, f in self.broker.replica_roles.followers.items())
        return replicas

    def _log_dir_result(self, requested_topics, path: str | None = None, replicas: dict | None = None,
                        futures: dict | None = None):
        if path is None:                   # the first directory, with every replica (one log directory)
            path, replicas = log_dir_paths(self.broker)[0], self._replicas()
        try:
            if path in getattr(getattr(self.broker, "log_dirs", None), "offline", ()) or not os.path.isdir(path):
                raise FileNotFoundError(f"Log directory {path} is offline")
            volume = os.statvfs(path)
        except OSError as exc:
            log.warning("Unable to describe replica dirs for %s: %s", path, exc)
            return DescribeLogDirsResult(error_code=Errors.KAFKA_STORAGE_ERROR, log_dir=path)
        wanted = None if requested_topics is None else {(t.topic, index) for t in requested_topics
                                                          for index in t.partitions}
        by_topic: dict[str, list[DescribeLogDirsPartition]] = {}
        entries = [(key, False, partition, max(partition.high_watermark() - partition.log.log_end_offset, 0))
                   for key, partition in replicas.items()]
        entries += [(key, True, future, lag) for key, (lag, future) in (futures or {}).items()]
        for (name, index), is_future, partition, lag in sorted(entries, key=lambda e: (e[0], e[1])):
            if wanted is None or (name, index) in wanted:
                by_topic.setdefault(name, []).append(DescribeLogDirsPartition(
                    partition_index=index, partition_size=partition.log.size, offset_lag=lag,
                    is_future_key=is_future))
        return DescribeLogDirsResult(
            error_code=Errors.NONE, log_dir=path,
            topics=[DescribeLogDirsTopic(name=name, partitions=parts) for name, parts in by_topic.items()],
            total_bytes=volume.f_blocks * volume.f_frsize, usable_bytes=volume.f_bavail * volume.f_frsize,
            is_cordoned=self._is_cordoned(path))

    def _is_cordoned(self, path: str) -> bool:
        """ReplicaManager.describeLogDirs: from metadata.version 4.3-IV0, whether cordoned.log.dirs names it."""
        log_dirs = getattr(self.broker, "log_dirs", None)
        return log_dirs is not None and cordoned_supported(self.broker.image()) and path in log_dirs.cordoned


def _fencing_error(current_leader_epoch: int, ours: int) -> int:
    """Partition.checkCurrentLeaderEpoch: only -1 (NO_PARTITION_LEADER_EPOCH) is left unchecked."""
    if current_leader_epoch < NO_PARTITION_LEADER_EPOCH:
        return Errors.FENCED_LEADER_EPOCH
    return epoch_error(current_leader_epoch, ours)
