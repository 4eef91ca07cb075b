"""DeleteRecords (21) on the broker, as Kafka's KafkaApis.handleDeleteRecordsRequest,
ReplicaManager.deleteRecords and Partition.deleteRecordsOnLeader answer it: each partition's log
start offset moves up to the requested offset (-1: the high watermark), and the answer is the
partition's low watermark (with one replica, the leader's log start offset). The segments wholly
below it are deleted by the next retention pass (kafkawire.broker.log_manager), as in Kafka.

Per partition, in Kafka's order: not in the metadata UNKNOWN_TOPIC_OR_PARTITION; an internal
topic (``__consumer_offsets``, ...) INVALID_TOPIC_EXCEPTION; led elsewhere or not open here
NOT_LEADER_OR_FOLLOWER; ``cleanup.policy=compact`` without ``delete`` POLICY_VIOLATION; an offset
below -1 or above the high watermark OFFSET_OUT_OF_RANGE; every error with low watermark -1. An
offset below the log start changes nothing and answers the log start. With followers the answer waits
(Kafka's DelayedDeleteRecords, kafkawire.broker.delayed_delete_records) until the partition's
low watermark, the least log start offset of its replicas on live brokers (every replica, not
only the ISR), reached the requested offset, and is that low watermark; REQUEST_TIMED_OUT after
the request's ``timeout_ms``, with the low watermark of the moment the log start moved; a
leadership lost meanwhile NOT_LEADER_OR_FOLLOWER. With one replica nothing waits. The answer has one entry per topic, as
Kafka's groups the partitions of a topic named twice.
"""
from __future__ import annotations

from kafkawire.messages.delete_records_response import (DeleteRecordsPartitionResult, DeleteRecordsResponse,
                                                        DeleteRecordsTopicResult)
from kafkawire.protocol.error_codes import Errors

from .metadata_apis import INTERNAL_TOPICS
from .log_dir_failure import is_offline_replica

__all__ = ["DeleteRecordsApi"]

HIGH_WATERMARK = -1           # DeleteRecordsRequest.HIGH_WATERMARK
INVALID_LOW_WATERMARK = -1


class DeleteRecordsApi:
    """DeleteRecords for ``broker`` (its ``image()``, ``partitions``, ``node_id`` and ``log_manager``)."""

    def __init__(self, broker):
        self.broker = broker

    async def delete_records(self, ctx, request):
        image = self.broker.image()
        results: dict[str, dict[int, DeleteRecordsPartitionResult]] = {}
        waiting = []              # (partition, result, the offset every replica's log start must reach)
        for t in request.topics:
            topic = None if image is None else image.topics_by_name.get(t.name)
            by_index = results.setdefault(t.name, {})
            for p in t.partitions:
                code, low, required = self._delete(image, topic, t.name, p.partition_index, p.offset)
                result = by_index[p.partition_index] = DeleteRecordsPartitionResult(
                    partition_index=p.partition_index, low_watermark=low, error_code=code)
                partition = self.broker.partitions.get((t.name, p.partition_index))
                if code == Errors.NONE and partition.replicas is not None and partition.replicas.followers:
                    result.low_watermark = self.broker.replication.low_watermark(partition)
                    waiting.append((partition, result, required))
        if waiting:
            await self.broker.replication.wait_for_low_watermark(waiting, request.timeout_ms)
        return DeleteRecordsResponse(throttle_time_ms=0, topics=[
            DeleteRecordsTopicResult(name=name, partitions=list(parts.values())) for name, parts in results.items()])

    def _delete(self, image, topic, name: str, index: int, offset: int) -> tuple[int, int, int]:
        """(error code, low watermark, the offset asked for) of one partition."""
        if topic is None or index not in topic.partitions:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK, -1
        if name in INTERNAL_TOPICS:
            return Errors.INVALID_TOPIC_EXCEPTION, INVALID_LOW_WATERMARK, -1
        partition = self.broker.partitions.get((name, index))
        if is_offline_replica(self.broker, (name, index), topic):
            return Errors.KAFKA_STORAGE_ERROR, INVALID_LOW_WATERMARK, -1
        if topic.partitions[index].leader != self.broker.node_id or partition is None:
            return Errors.NOT_LEADER_OR_FOLLOWER, INVALID_LOW_WATERMARK, -1
        settings = self.broker.log_manager.settings(image, name)
        if settings.compact and not settings.delete:
            return Errors.POLICY_VIOLATION, INVALID_LOW_WATERMARK, -1
        high_watermark = partition.high_watermark()
        wanted = high_watermark if offset == HIGH_WATERMARK else offset
        if wanted < 0 or wanted > high_watermark:
            return Errors.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK, -1
        partition.maybe_increment_log_start_offset(wanted)
        return Errors.NONE, partition.log.log_start_offset, wanted
