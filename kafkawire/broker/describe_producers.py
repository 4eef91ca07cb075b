"""DescribeProducers (61) on the broker, as Kafka's KafkaApis.handleDescribeProducersRequest,
ReplicaManager.activeProducerState and UnifiedLog.activeProducers answer it: each requested
partition's idempotent producers (kafkawire.broker.producer_state) with their id, epoch, last
sequence and last timestamp; the coordinator epoch of the last marker written for it (-1 before
any) and the first offset of its open transaction (-1 without one) as the state keeps them.

Per topic first: an illegal name INVALID_TOPIC_EXCEPTION with Topic.validate's message, a topic
not in the metadata UNKNOWN_TOPIC_OR_PARTITION; then per partition: not in the topic
UNKNOWN_TOPIC_OR_PARTITION, not hosted here NOT_LEADER_OR_FOLLOWER (ReplicaManager.getPartitionOrError).
ACLs are not checked (the broker role has none yet, so never TOPIC_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from kafkawire.messages.describe_producers_response import (DescribeProducersResponse, PartitionResponse,
                                                            ProducerState, TopicResponse)
from kafkawire.net.metadata_topic import invalid_topic_message
from kafkawire.protocol.error_codes import Errors

from .log_dir_failure import is_offline_replica

__all__ = ["DescribeProducersApi", "active_producers"]


def active_producers(state) -> list[ProducerState]:
    """UnifiedLog.activeProducers of a kafkawire.broker.producer_state.ProducerState."""
    return [ProducerState(producer_id=pid, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                          last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                          current_txn_start_offset=e.current_txn_first_offset)
            for pid, e in state.producers.items()]


class DescribeProducersApi:
    """DescribeProducers for ``broker`` (its ``image()`` and ``partitions``)."""

    def __init__(self, broker):
        self.broker = broker

    async def describe_producers(self, ctx, request) -> DescribeProducersResponse:
        image = self.broker.image()
        topics = []
        for t in request.topics:
            topic = None if image is None else image.topics_by_name.get(t.name)
            invalid = invalid_topic_message(t.name)
            if invalid is not None:
                error = (Errors.INVALID_TOPIC_EXCEPTION, invalid)
            elif topic is None:
                error = (Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
            else:
                error = None
            partitions = [self._partition(topic, t.name, index, error) for index in t.partition_indexes]
            topics.append(TopicResponse(name=t.name, partitions=partitions))
        return DescribeProducersResponse(throttle_time_ms=0, topics=topics)

    def _partition(self, topic, name: str, index: int, topic_error) -> PartitionResponse:
        if topic_error is not None:
            code, message = topic_error
            return PartitionResponse(partition_index=index, error_code=code, error_message=message)
        partition = self.broker.partitions.get((name, index))
        if partition is None:
            code = Errors.NOT_LEADER_OR_FOLLOWER if index in topic.partitions else Errors.UNKNOWN_TOPIC_OR_PARTITION
            if is_offline_replica(self.broker, (name, index), topic):
                code = Errors.KAFKA_STORAGE_ERROR
            return PartitionResponse(partition_index=index, error_code=code)
        return PartitionResponse(partition_index=index, error_code=Errors.NONE,
                                 active_producers=active_producers(partition.producers))
