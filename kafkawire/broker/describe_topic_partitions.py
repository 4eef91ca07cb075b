"""DescribeTopicPartitions (75, KIP-966): the topics' partitions from the broker's metadata
image a page at a time, as Kafka's DescribeTopicPartitionsRequestHandler and
KRaftMetadataCache.describeTopicResponse answer it (``kafka-topics --describe`` uses it when the
broker advertises it, Metadata otherwise).

    api = DescribeTopicPartitionsApi(broker)        # broker.image()
    response = await api.handle(ctx, request)       # the ACL check: describe_topic_partitions_check

The page: the topics named (or, with none named, every topic) whose names sort at or after the
cursor's topic, in name order, at most ``min(ResponsePartitionLimit, 2000)`` partitions
(Kafka's max.request.partition.size.limit default; at least 1); the cursor's topic starts at the
cursor's partition. A topic whose partitions do not all fit ends the page with NextCursor at the
first partition left out; a full page before the next topic sets NextCursor at that topic's
partition 0. Each partition: leader (-1 unless the leader has an endpoint on the request's
listener), leader epoch, replicas, ISR, ELR, last known ELR and the offline replicas (a broker
unknown, fenced or without the listener, or the replica's directory not online on it:
kafkawire.broker.metadata_apis.offline_replicas). A named topic the image lacks is
UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name); with every topic asked,
none is answered with an error.

Refused: a cursor whose topic is not among the topics named, or a negative cursor partition:
INVALID_REQUEST on each topic named. ACLs: DESCRIBE on each topic; a named topic without it is
TOPIC_AUTHORIZATION_FAILED with a zero id (its existence not disclosed), an all-topics answer
leaves it out; every other topic answered carries the principal's authorized operations on it
(all of a topic's operations without an authorizer, as AuthHelper.authorizedOperations).
"""
from __future__ import annotations

import uuid

from kafkawire.messages.describe_topic_partitions_response import (Cursor, DescribeTopicPartitionsResponse,
                                                                    DescribeTopicPartitionsResponsePartition,
                                                                    DescribeTopicPartitionsResponseTopic)
from kafkawire.net.authorizer import RESOURCE_TOPIC, Op
from kafkawire.net.client_error_responses import describe_topic_partitions_error_response
from kafkawire.net.metadata_topic import TOPIC_OPERATIONS, legal_topic_name
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from .metadata_apis import INTERNAL_TOPICS, offline_replicas

__all__ = ["DescribeTopicPartitionsApi", "describe_topic_partitions_check", "DESCRIBE_TOPIC_PARTITIONS",
           "MAX_REQUEST_PARTITION_SIZE_LIMIT"]

DESCRIBE_TOPIC_PARTITIONS = 75
MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000       # max.request.partition.size.limit's default
ZERO_UUID = uuid.UUID(int=0)


class DescribeTopicPartitionsApi:
    def __init__(self, broker):
        self.broker = broker

    def handlers(self) -> dict[int, ApiHandler]:
        return {DESCRIBE_TOPIC_PARTITIONS: ApiHandler(self.handle)}

    async def handle(self, ctx, request, allowed=lambda name: True):
        """``allowed(name)``: whether the principal may DESCRIBE the topic (the ACL check passes its own)."""
        image = self.broker.image()
        every_topic = not request.topics
        cursor = request.cursor
        start_name = cursor.topic_name if cursor is not None else ""
        asked = sorted(image.topics_by_name) if every_topic and image is not None else \
            sorted({t.name for t in request.topics})
        names = [n for n in asked if n >= start_name]
        if cursor is not None and ((not every_topic and cursor.topic_name not in names) or cursor.partition_index < 0):
            return describe_topic_partitions_error_response(ctx, request, int(Errors.INVALID_REQUEST))
        refused = [] if every_topic else [n for n in names if not allowed(n)]
        refused_set = set(refused)
        limit = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, request.response_partition_limit), 1)
        response = self._page(image, [n for n in names if n not in refused_set and (not every_topic or allowed(n))],
                              ctx.listener_name, cursor, limit, every_topic)
        response.topics += [DescribeTopicPartitionsResponseTopic(
            error_code=int(Errors.TOPIC_AUTHORIZATION_FAILED), name=n, topic_id=ZERO_UUID, is_internal=False,
            partitions=[]) for n in refused]
        return response

    def _page(self, image, names, listener_name, cursor, limit, every_topic):
        response = DescribeTopicPartitionsResponse(topics=[], next_cursor=None)
        remaining = limit
        for name in names:
            if remaining == 0:
                response.next_cursor = Cursor(topic_name=name, partition_index=0)
                break
            topic = None if image is None else image.topics_by_name.get(name)
            if topic is None:
                if not every_topic:
                    response.topics.append(_unknown(name))
                continue
            start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
            end = min(len(topic.partitions), start + remaining)
            partitions = [_partition(image, i, topic.partitions[i], listener_name)
                          for i in range(start, end) if i in topic.partitions]
            response.topics.append(DescribeTopicPartitionsResponseTopic(
                name=name, topic_id=topic.id, is_internal=name in INTERNAL_TOPICS, partitions=partitions,
                topic_authorized_operations=TOPIC_OPERATIONS))
            if end < len(topic.partitions):
                response.next_cursor = Cursor(topic_name=name, partition_index=end)
                break
            remaining -= len(partitions)
        return response


def _unknown(name: str) -> DescribeTopicPartitionsResponseTopic:
    code = Errors.UNKNOWN_TOPIC_OR_PARTITION if legal_topic_name(name) else Errors.INVALID_TOPIC_EXCEPTION
    return DescribeTopicPartitionsResponseTopic(error_code=int(code), name=name, topic_id=ZERO_UUID,
                                                is_internal=name in INTERNAL_TOPICS, partitions=[],
                                                topic_authorized_operations=TOPIC_OPERATIONS)


def _partition(image, index: int, p, listener_name: str) -> DescribeTopicPartitionsResponsePartition:
    def has_endpoint(broker_id):
        broker = image.brokers.get(broker_id)
        return broker is not None and listener_name in broker.listeners
    return DescribeTopicPartitionsResponsePartition(
        partition_index=index, leader_id=p.leader if has_endpoint(p.leader) else -1, leader_epoch=p.leader_epoch,
        replica_nodes=list(p.replicas), isr_nodes=list(p.isr), eligible_leader_replicas=list(p.elr),
        last_known_elr=list(p.last_known_elr), offline_replicas=offline_replicas(image, p, listener_name))


def describe_topic_partitions_check(broker, api: DescribeTopicPartitionsApi, authorized_operations):
    """The handler's ACL rules (authorization.wrap's ``check``): DESCRIBE on each topic, the
    authorized operations of each described one."""
    async def check(ctx, request, may, handle):
        # a denial is logged for an all-topics request too (Kafka's check logs it either way)
        response = await api.handle(ctx, request, allowed=lambda name: may(Op.DESCRIBE, RESOURCE_TOPIC, name))
        for topic in response.topics:
            if topic.error_code != Errors.TOPIC_AUTHORIZATION_FAILED:
                topic.topic_authorized_operations = authorized_operations(may, RESOURCE_TOPIC, topic.name)
        return response
    return check
