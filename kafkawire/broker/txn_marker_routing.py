"""The transaction coordinator's WriteTxnMarkers, each partition's marker to the broker that leads
it, as Kafka's TransactionMarkerChannelManager sends them (one request per leader broker, over
the inter-broker listener): the partitions led here are written in process
(kafkawire.broker.txn_markers), the others go to their leader's ``inter.broker.listener.name``
endpoint, with the replica fetchers' connection settings (TLS and SASL as
``sasl.mechanism.inter.broker.protocol`` and the listener's JAAS entry say). A leader the metadata
has no endpoint for, or a request that fails on the way, is answered NOT_LEADER_OR_FOLLOWER for
its partitions, which the marker sender tries again after its backoff.

    router = MarkerRouter(broker)         # broker: image(), node_id, txn_markers, replica_roles, config
    response = await router.write(request)
    router.close_soon()
"""
from __future__ import annotations

import asyncio

from kafkawire.messages.write_txn_markers_request import WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest
from kafkawire.messages.write_txn_markers_response import (WritableTxnMarkerPartitionResult, WritableTxnMarkerResult,
                                                           WritableTxnMarkerTopicResult, WriteTxnMarkersResponse)
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.protocol.error_codes import Errors

from .inter_broker_client import InterBrokerClient

__all__ = ["MarkerRouter"]



def _leader(image, topic: str, index: int) -> int:
    found = None if image is None else image.topics_by_name.get(topic)
    registration = None if found is None else found.partitions.get(index)
    return -1 if registration is None else registration.leader


def split_by_leader(image, request) -> dict[int, WriteTxnMarkersRequest]:
    """The request's markers, each one's partitions grouped by the broker leading them."""
    by_leader: dict[int, WriteTxnMarkersRequest] = {}
    for marker in request.markers:
        parts: dict[int, dict[str, list[int]]] = {}
        for t in marker.topics:
            for index in t.partition_indexes:
                parts.setdefault(_leader(image, t.name, index), {}).setdefault(t.name, []).append(index)
        for leader, topics in parts.items():
            one = by_leader.setdefault(leader, WriteTxnMarkersRequest(markers=[]))
            one.markers.append(WritableTxnMarker(
                producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
                transaction_result=marker.transaction_result, coordinator_epoch=marker.coordinator_epoch,
                transaction_version=marker.transaction_version,
                topics=[WritableTxnMarkerTopic(name=n, partition_indexes=p) for n, p in topics.items()]))
    return by_leader


def refused(request, code: int) -> WriteTxnMarkersResponse:
    """Every partition of ``request`` answered ``code``."""
    return WriteTxnMarkersResponse(markers=[WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
        WritableTxnMarkerTopicResult(name=t.name, partitions=[
            WritableTxnMarkerPartitionResult(partition_index=i, error_code=int(code)) for i in t.partition_indexes])
        for t in m.topics]) for m in request.markers])


class MarkerRouter:
    def __init__(self, broker, client: NetworkClient | None = None):
        self.broker = broker
        self.peers = InterBrokerClient(broker, "txn-markers", client)

    async def write(self, request) -> WriteTxnMarkersResponse:
        by_leader = split_by_leader(self.broker.image(), request)
        answers = await asyncio.gather(*(self._write_at(leader, part) for leader, part in by_leader.items()))
        return WriteTxnMarkersResponse(markers=[m for answer in answers for m in answer.markers])

    async def _write_at(self, leader: int, request) -> WriteTxnMarkersResponse:
        if leader == self.broker.node_id or leader < 0:     # no leader: the local answer says which error
            return await self.broker.txn_markers.write_txn_markers(request)
        endpoint = self.broker.replica_roles.endpoint_of(leader)
        if endpoint is None:
            return refused(request, Errors.NOT_LEADER_OR_FOLLOWER)
        try:
            return await self.peers.client().send(endpoint, request)
        except (TransportError, OSError, asyncio.TimeoutError):
            return refused(request, Errors.NOT_LEADER_OR_FOLLOWER)

    def close_soon(self) -> None:
        self.peers.close_soon()
