"""The latest offsets of the partitions DescribeShareGroupOffsets computes a lag for, found as
Kafka 4.3.1's NetworkPartitionMetadataClient finds them: one ListOffsets (latest,
read_uncommitted: the high watermark) to each leader for its partitions, wherever it runs.

    latest = LatestOffsets(broker, peers)        # peers: a kafkawire.broker.inter_broker_client pool
    {(topic name, partition): (error code, offset)} = await latest.of(image, [(name, partition)])

A partition without a leader, or whose leader has no endpoint on the inter-broker listener, is
LEADER_NOT_AVAILABLE; one the leader's answer leaves out, UNKNOWN_TOPIC_OR_PARTITION. A request
that is disconnected or times out is sent again up to ``RETRIES`` times, ``backoff_ms`` apart
(1 s doubling up to 30 s, 20% jitter, Kafka's), then its partitions get NETWORK_EXCEPTION or
REQUEST_TIMED_OUT; another failure (authentication, no common version) is UNKNOWN_SERVER_ERROR
at once, as Kafka's client answers. The leader that is this broker is asked in process, through
its own ListOffsets handler (Kafka's broker sends itself the request over the network).
"""
from __future__ import annotations

import asyncio
import logging

from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.net.backoff import ExponentialBackoff
from kafkawire.net.client import (AuthenticationFailed, ProtocolError, RequestTimedOut, TransportError,
                                  UnsupportedVersion)
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import RequestContext

__all__ = ["LatestOffsets", "RETRIES", "backoff_ms"]

log = logging.getLogger(__name__)
LATEST_TIMESTAMP = -1
READ_UNCOMMITTED = 0
CONSUMER_REPLICA_ID = -1
RETRIES = 5                               # NetworkPartitionMetadataClient.MAX_RETRY_ATTEMPTS
BACKOFF_MS, BACKOFF_MAX_MS, JITTER = 1_000, 30_000, 0.2


# NetworkPartitionMetadataClient's ExponentialBackoffManager: 1 s doubling to 30 s, 20% jitter
_BACKOFF = ExponentialBackoff(BACKOFF_MS, 2, BACKOFF_MAX_MS, JITTER)


def backoff_ms(attempt: int) -> float:
    """The wait before retry number ``attempt`` (counted from 1, as Kafka's manager counts it
    before asking its backoff): 2 s, 4 s, ... up to 30 s, never past it."""
    return _BACKOFF.backoff_ms(attempt)


class LatestOffsets:
    def __init__(self, broker, peers):
        self.broker = broker
        self.peers = peers
        self.sleep = asyncio.sleep              # a test passes one that does not wait

    async def of(self, image, partitions) -> dict:
        """{(topic name, partition): (error code, latest offset)} of ``partitions``."""
        answers: dict = {}
        by_leader: dict[int, list] = {}
        for name, index in partitions:
            topic = image.topics_by_name.get(name)
            registration = None if topic is None else topic.partitions.get(index)
            leader = -1 if registration is None else registration.leader
            if leader < 0 or (leader != self.broker.node_id and self._endpoint(leader) is None):
                answers[(name, index)] = (Errors.LEADER_NOT_AVAILABLE, -1)
            else:
                by_leader.setdefault(leader, []).append((name, index))
        for answered in await asyncio.gather(*(self._ask(leader, keys) for leader, keys in by_leader.items())):
            answers.update(answered)
        return answers

    def _endpoint(self, node_id: int):
        roles = getattr(self.broker, "replica_roles", None)
        return None if roles is None else roles.endpoint_of(node_id)

    async def _ask(self, leader: int, keys: list) -> dict:
        topics: dict[str, list] = {}
        for name, index in keys:
            topics.setdefault(name, []).append(ListOffsetsPartition(
                partition_index=index, current_leader_epoch=-1, timestamp=LATEST_TIMESTAMP))
        request = ListOffsetsRequest(replica_id=CONSUMER_REPLICA_ID, isolation_level=READ_UNCOMMITTED, topics=[
            ListOffsetsTopic(name=name, partitions=ps) for name, ps in topics.items()])
        for attempt in range(RETRIES + 1):
            try:
                response = await self._send(leader, request)
                break
            except (TransportError, OSError, asyncio.TimeoutError) as exc:
                code, retriable = _failure(exc)
                if not retriable or attempt == RETRIES:
                    log.warning("ListOffsets for the share group lag to node %d failed: %s", leader, exc)
                    return {key: (code, -1) for key in keys}
                await self.sleep(backoff_ms(attempt + 1) / 1000)
        answered = {(t.name, p.partition_index): (p.error_code, p.offset)
                    for t in response.topics for p in t.partitions}
        return {key: answered.get(key, (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)) for key in keys}

    async def _send(self, leader: int, request):
        if leader == self.broker.node_id:
            return await self.broker.fetch_api.list_offsets(self._own_context(request), request)
        endpoint = self._endpoint(leader)
        if endpoint is None:                    # the leader left the metadata meanwhile
            raise TransportError((str(leader), 0), "the leader has no endpoint")
        return await self.peers.client().send(endpoint, request)

    def _own_context(self, request) -> RequestContext:
        return RequestContext(api_key=request.API_KEY, api_version=request.VALID_VERSIONS[1], correlation_id=0,
                              client_id=f"broker-{self.broker.node_id}-share-lag", peer=("127.0.0.1", 0),
                              listener_name="", connection_id="in-process")


def _failure(exc) -> tuple[int, bool]:
    """(the partitions' error code, whether to send again) for a failed request, as Kafka's
    maybeHandleErrorResponse: disconnected or timed out is retried, anything else is not."""
    if isinstance(exc, (AuthenticationFailed, UnsupportedVersion, ProtocolError)):
        return Errors.UNKNOWN_SERVER_ERROR, False
    if isinstance(exc, (RequestTimedOut, asyncio.TimeoutError)):
        return Errors.REQUEST_TIMED_OUT, True
    return Errors.NETWORK_EXCEPTION, True
