"""The share-partition leader's persister (Kafka 4.3.1's DefaultStatePersister and
PersisterStateManager): a share-partition's durable state read from and written to its share
coordinator, the leader of its ``__share_group_state`` partition, wherever that runs.

    persister = SharePersister(broker)
    code, state = await persister.read(group_id, topic_id, partition, leader_epoch)
    code = await persister.write(group_id, topic_id, partition, leader_epoch, state_epoch, start, batches)

When the coordinator is this node the request goes to this node's own handler in process,
through the same wrapper as a peer's request (the answer waits until the record is in the
in-sync replicas); else over the inter-broker listener (kafkawire.broker.inter_broker_client).
A coordinator not known yet (the topic being created, no leader, its partition loading) is asked
again, as PersisterStateManager retries: at most ``RETRIES`` times, ``BACKOFF_S`` apart. The
state is ``(state epoch, start offset, [(first, last, delivery state, delivery count)])``.
"""
from __future__ import annotations

import asyncio
import logging

from kafkawire.messages import read_share_group_state_request as rsq
from kafkawire.messages import write_share_group_state_request as wsq
from kafkawire.messages import initialize_share_group_state_request as isq
from kafkawire.messages import delete_share_group_state_request as dsq
from kafkawire.messages import read_share_group_state_summary_request as ssq
from kafkawire.net.client import TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import RequestContext

from .inter_broker_client import InterBrokerClient
from .share_errors import persister_failure
from .share_coordinator_apis import DELETE, INITIALIZE, READ, READ_SUMMARY, WRITE
from .share_state_records import coordinator_key

__all__ = ["SharePersister"]

log = logging.getLogger(__name__)
RETRIES, BACKOFF_S = 50, 0.1
BATCH_SIZE = 1_000           # share-partitions in one batched request to a share coordinator
RETRIABLE = {int(Errors.COORDINATOR_NOT_AVAILABLE), int(Errors.COORDINATOR_LOAD_IN_PROGRESS),
             int(Errors.NOT_COORDINATOR), int(Errors.NETWORK_EXCEPTION), int(Errors.REQUEST_TIMED_OUT)}


class SharePersister:
    def __init__(self, broker):
        self.broker = broker
        self.peers = InterBrokerClient(broker, "share-persister")
        self._local: dict | None = None

    def _coordinator(self, group_id, topic_id, partition) -> int:
        """The share coordinator's node (-1: not known yet; the topic is asked for)."""
        apis = self.broker.share_coordinator_apis
        code, node_id = apis.store.find(coordinator_key(group_id, topic_id, partition))
        return node_id if code == Errors.NONE else -1

    async def _send(self, api_key: int, group_id, topic_id, partition, request):
        """The partition's result of ``request`` at its coordinator, retried while retriable."""
        for attempt in range(RETRIES):
            result = await self._send_once(api_key, group_id, topic_id, partition, request)
            if result.error_code not in RETRIABLE or attempt == RETRIES - 1:
                return result
            await asyncio.sleep(BACKOFF_S)
        raise AssertionError("unreachable")

    async def _request(self, api_key: int, node_id: int, request):
        """The response of the share coordinator ``node_id`` (in process when it is this node),
        or a _Failed when it is not known."""
        roles = getattr(self.broker, "replica_roles", None)
        if node_id == self.broker.node_id or (node_id >= 0 and roles is None):
            return await self._local_handler(api_key)(self._own_context(api_key, request), request)
        endpoint = None if node_id < 0 or roles is None else roles.endpoint_of(node_id)
        if endpoint is None:
            return _Failed(Errors.COORDINATOR_NOT_AVAILABLE)
        return await self.peers.client().send(endpoint, request, api_version=request.VALID_VERSIONS[1])

    async def _send_once(self, api_key: int, group_id, topic_id, partition, request):
        node_id = self._coordinator(group_id, topic_id, partition)
        try:
            response = await self._request(api_key, node_id, request)
        except (TransportError, OSError, asyncio.TimeoutError) as exc:
            log.debug("share state request to node %d failed: %s", node_id, exc)
            return _Failed(Errors.NETWORK_EXCEPTION)
        if isinstance(response, _Failed):
            return response
        for result in response.results:
            for p in result.partitions:
                return p
        return _Failed(Errors.UNKNOWN_SERVER_ERROR)

    def _local_handler(self, api_key: int):
        if self._local is None:
            self._local = self.broker.share_coordinator_apis.handlers()
        return self._local[api_key].handle

    def _own_context(self, api_key: int, request) -> RequestContext:
        return RequestContext(api_key=api_key, api_version=request.VALID_VERSIONS[1], correlation_id=0,
                              client_id=f"broker-{self.broker.node_id}-share-persister", peer=("127.0.0.1", 0),
                              listener_name="", connection_id="in-process")

    # -- the persister's operations --

    async def initialize(self, group_id, topic_id, partition: int, state_epoch: int, start_offset: int) -> int:
        request = isq.InitializeShareGroupStateRequest(group_id=group_id, topics=[isq.InitializeStateData(
            topic_id=topic_id, partitions=[isq.PartitionData(partition=partition, state_epoch=state_epoch,
                                                             start_offset=start_offset)])])
        return (await self._send(INITIALIZE, group_id, topic_id, partition, request)).error_code

    async def read(self, group_id, topic_id, partition: int, leader_epoch: int):
        """(error code, (state epoch, start offset, batches) or None)."""
        request = rsq.ReadShareGroupStateRequest(group_id=group_id, topics=[rsq.ReadStateData(
            topic_id=topic_id, partitions=[rsq.PartitionData(partition=partition, leader_epoch=leader_epoch)])])
        result = await self._send(READ, group_id, topic_id, partition, request)
        if result.error_code != Errors.NONE:
            return persister_failure(result, "read", result.error_code in RETRIABLE), None
        return Errors.NONE, (result.state_epoch, result.start_offset, [
            (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in result.state_batches])

    async def write(self, group_id, topic_id, partition: int, leader_epoch: int, state_epoch: int,
                    start_offset: int, batches, delivery_complete_count: int = -1) -> int:
        request = wsq.WriteShareGroupStateRequest(group_id=group_id, topics=[wsq.WriteStateData(
            topic_id=topic_id, partitions=[wsq.PartitionData(
                partition=partition, state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start_offset,
                delivery_complete_count=delivery_complete_count, state_batches=[wsq.StateBatch(
                    first_offset=f, last_offset=la, delivery_state=s, delivery_count=c) for f, la, s, c in batches])])])
        result = await self._send(WRITE, group_id, topic_id, partition, request)
        if result.error_code != Errors.NONE:         # the code with its message (kafkawire.broker.share_errors)
            return persister_failure(result, "write", result.error_code in RETRIABLE)
        return Errors.NONE

    async def summary(self, group_id, topic_id, partition: int):
        """(error code, the ReadShareGroupStateSummary partition result: state and leader
        epochs, start offset (-1: no state), delivery-complete count)."""
        request = ssq.ReadShareGroupStateSummaryRequest(group_id=group_id, topics=[ssq.ReadStateSummaryData(
            topic_id=topic_id, partitions=[ssq.PartitionData(partition=partition, leader_epoch=-1)])])
        result = await self._send(READ_SUMMARY, group_id, topic_id, partition, request)
        return result.error_code, (result if result.error_code == Errors.NONE else None)

    async def delete(self, group_id, topic_id, partition: int) -> int:
        request = dsq.DeleteShareGroupStateRequest(group_id=group_id, topics=[dsq.DeleteStateData(
            topic_id=topic_id, partitions=[dsq.PartitionData(partition=partition)])])
        return (await self._send(DELETE, group_id, topic_id, partition, request)).error_code

    # -- batched, as PersisterStateManager batches its requests per share coordinator --

    async def initialize_many(self, group_id, keys, state_epoch: int, start_offset: int) -> dict:
        """InitializeShareGroupState of ``keys`` ([(topic id, partition)]): {key: error code}."""
        def build(chunk):
            return isq.InitializeShareGroupStateRequest(group_id=group_id, topics=[
                isq.InitializeStateData(topic_id=t, partitions=[isq.PartitionData(
                    partition=p, state_epoch=state_epoch, start_offset=start_offset) for p in ps])
                for t, ps in _by_topic(chunk).items()])
        return {k: r.error_code for k, r in (await self._send_many(INITIALIZE, group_id, keys, build)).items()}

    async def summary_many(self, group_id, keys) -> dict:
        """ReadShareGroupStateSummary of ``keys``: {key: partition result (its error_code)}."""
        def build(chunk):
            return ssq.ReadShareGroupStateSummaryRequest(group_id=group_id, topics=[
                ssq.ReadStateSummaryData(topic_id=t, partitions=[ssq.PartitionData(partition=p, leader_epoch=-1)
                                                                  for p in ps])
                for t, ps in _by_topic(chunk).items()])
        return await self._send_many(READ_SUMMARY, group_id, keys, build)

    async def delete_many(self, group_id, keys) -> dict:
        """DeleteShareGroupState of ``keys``: {key: error code}."""
        def build(chunk):
            return dsq.DeleteShareGroupStateRequest(group_id=group_id, topics=[
                dsq.DeleteStateData(topic_id=t, partitions=[dsq.PartitionData(partition=p) for p in ps])
                for t, ps in _by_topic(chunk).items()])
        return {k: r.error_code for k, r in (await self._send_many(DELETE, group_id, keys, build)).items()}

    async def _send_many(self, api_key: int, group_id, keys, build) -> dict:
        """One request per share coordinator for ``keys`` (at most BATCH_SIZE share-partitions
        each), the share-partitions answered with a retriable error asked again, ``BACKOFF_S``
        apart, at most ``RETRIES`` times: {key: its partition result}."""
        pending, results = list(dict.fromkeys(keys)), {}
        for attempt in range(RETRIES):
            by_node: dict[int, list] = {}
            for key in pending:
                by_node.setdefault(self._coordinator(group_id, *key), []).append(key)
            sends = [self._send_batch(api_key, node, chunk, build(chunk))
                     for node, node_keys in by_node.items()
                     for chunk in (node_keys[i:i + BATCH_SIZE] for i in range(0, len(node_keys), BATCH_SIZE))]
            for answered in await asyncio.gather(*sends):
                results.update(answered)
            pending = [k for k in pending if results[k].error_code in RETRIABLE]
            if not pending or attempt == RETRIES - 1:
                return results
            await asyncio.sleep(BACKOFF_S)
        return results

    async def _send_batch(self, api_key: int, node_id: int, keys: list, request) -> dict:
        try:
            response = await self._request(api_key, node_id, request)
        except (TransportError, OSError, asyncio.TimeoutError) as exc:
            log.debug("share state request to node %d failed: %s", node_id, exc)
            response = None
        answered = {} if response is None or isinstance(response, _Failed) else {
            (result.topic_id, p.partition): p for result in response.results for p in result.partitions}
        failed = response if isinstance(response, _Failed) else _Failed(
            Errors.NETWORK_EXCEPTION if response is None else Errors.UNKNOWN_SERVER_ERROR)
        return {k: answered.get(k, failed) for k in keys}

    def close_soon(self) -> None:
        self.peers.close_soon()


def _by_topic(keys) -> dict:
    by_topic: dict = {}
    for topic_id, partition in keys:
        by_topic.setdefault(topic_id, []).append(partition)
    return by_topic


class _Failed:
    __slots__ = ("error_code",)

    def __init__(self, code):
        self.error_code = int(code)
