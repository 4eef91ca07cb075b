"""WriteTxnMarkers (27) on the broker, as Kafka's KafkaApis.handleWriteTxnMarkersRequest and
ReplicaManager.appendRecords (origin COORDINATOR, acks=all) serve it: the transaction
coordinator asks each partition leader to write a producer's COMMIT or ABORT marker.

    response = await broker.txn_markers.write_txn_markers(request)    # in process, no authorization
    broker.txn_marker_listeners.append(listener)                      # told of each marker written

Per marker, per partition, in Kafka's order: a partition this broker does not host is
UNKNOWN_TOPIC_OR_PARTITION (ReplicaManager.onlinePartition); one it is a replica of but does not
lead NOT_LEADER_OR_FOLLOWER; fewer in-sync replicas than ``min.insync.replicas``
NOT_ENOUGH_REPLICAS; then the producer state's checks (ProducerState.check_marker): an older
producer epoch INVALID_PRODUCER_EPOCH (with transaction version 2, from request v2, the same
epoch too, unless that transaction is over), an older coordinator epoch
TRANSACTION_COORDINATOR_FENCED; a failed write KAFKA_STORAGE_ERROR. The answer groups the
partitions by producer id (two markers of one producer share one entry, as Kafka's map does)
and by topic.

After each marker is written, every callable in ``broker.txn_marker_listeners`` is called as
``listener(topic, partition, producer_id, producer_epoch, committed, coordinator_epoch)`` (the
group coordinator completes its pending transactional offset commits on ``__consumer_offsets``
so); a listener that raises is logged and the others still run.

Over the wire the request needs ALTER or CLUSTER_ACTION on the cluster when the broker has an
authorizer (``broker.authorizer``); without, every partition is CLUSTER_AUTHORIZATION_FAILED, as
WriteTxnMarkersRequest.getErrorResponse answers. Versions 1-2 (Kafka 4.3.1's range).
"""
from __future__ import annotations

import logging
import time

from kafkawire.messages.write_txn_markers_response import (WritableTxnMarkerPartitionResult,
                                                           WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
                                                           WriteTxnMarkersResponse)
from kafkawire.net.authorizer import CLUSTER_NAME, RESOURCE_CLUSTER, AuthorizerNotReady, Op
from kafkawire.protocol.error_codes import Errors

from .validation import ProduceRefused

__all__ = ["TxnMarkersApi", "WRITE_TXN_MARKERS"]

log = logging.getLogger(__name__)
WRITE_TXN_MARKERS = 27
MIN_VERSION = 1                 # Kafka 4.0 removed v0


class TxnMarkersApi:
    """WriteTxnMarkers for ``broker`` (its ``image()``, ``partitions``, ``config``, listeners)."""

    def __init__(self, broker):
        self.broker = broker

    async def handle(self, ctx, request) -> WriteTxnMarkersResponse:
        """The wire entry point: the cluster permission first, then ``write_txn_markers``."""
        refusal = self._refusal(ctx)
        if refusal is not None:        # WriteTxnMarkersRequest.getErrorResponse: every partition
            return _response({m.producer_id: {(t.name, i): refusal for t in m.topics for i in t.partition_indexes}
                              for m in request.markers})
        return await self.write_txn_markers(request)

    def _refusal(self, ctx) -> int | None:
        """KafkaApis: ALTER on the cluster (not logged when denied), else CLUSTER_ACTION; None
        when allowed, else the error (UNKNOWN_SERVER_ERROR before the ACLs are loaded)."""
        authorizer = getattr(self.broker, "authorizer", None)
        if authorizer is None:
            return None
        try:
            allowed = any(authorizer.authorize(ctx.principal, ctx.peer[0], op, RESOURCE_CLUSTER, CLUSTER_NAME)
                          for op in (Op.ALTER, Op.CLUSTER_ACTION))
        except AuthorizerNotReady:
            return Errors.UNKNOWN_SERVER_ERROR
        return None if allowed else Errors.CLUSTER_AUTHORIZATION_FAILED

    async def write_txn_markers(self, request) -> WriteTxnMarkersResponse:
        """Write every marker of ``request`` (a WriteTxnMarkersRequest); the response data."""
        errors: dict[int, dict[tuple[str, int], int]] = {}
        now_ms = int(time.time() * 1000)
        image = self.broker.image()
        written = []
        for marker in request.markers:
            results = errors.setdefault(marker.producer_id, {})
            seen = set()                       # Kafka's per-marker map: a partition named twice, one marker
            for t in marker.topics:
                for index in t.partition_indexes:
                    if (t.name, index) in seen:
                        continue
                    seen.add((t.name, index))
                    code = self._write(image, marker, t.name, index, now_ms)
                    results[(t.name, index)] = code
                    if code == Errors.NONE:
                        written.append((t.name, index, marker))
        if written:
            self.broker.data_appended()
        for topic, index, marker in written:
            self._tell_listeners(topic, index, marker)
        return _response(errors)

    def _write(self, image, marker, topic: str, index: int, now_ms: int) -> int:
        partition = self.broker.partitions.get((topic, index))
        if partition is None:
            return self._not_here(image, topic, index)
        settings = self.broker.topic_configs.produce_settings(image, topic)
        registration = _registration(image, topic, index)
        if registration is not None and len(registration.isr) < settings.min_insync_replicas:
            return Errors.NOT_ENOUGH_REPLICAS
        try:
            partition.append_marker(producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
                                    coordinator_epoch=marker.coordinator_epoch, commit=marker.transaction_result,
                                    now_ms=now_ms, transaction_version=marker.transaction_version,
                                    log_append_time=settings.log_append_time)
        except ProduceRefused as exc:
            log.debug("marker for %s-%d refused: %s", topic, index, exc)
            return exc.code
        except (OSError, ValueError) as exc:
            log.error("cannot write a transaction marker to %s-%d: %s", topic, index, exc)
            return Errors.KAFKA_STORAGE_ERROR
        return Errors.NONE

    def _not_here(self, image, topic: str, index: int) -> int:
        """A replica not led here NOT_LEADER_OR_FOLLOWER, a partition not hosted here unknown."""
        registration = _registration(image, topic, index)
        if registration is not None and self.broker.node_id in registration.replicas:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.UNKNOWN_TOPIC_OR_PARTITION

    def _tell_listeners(self, topic: str, index: int, marker) -> None:
        for listener in list(self.broker.txn_marker_listeners):
            try:
                listener(topic, index, marker.producer_id, marker.producer_epoch, bool(marker.transaction_result),
                         marker.coordinator_epoch)
            except Exception:
                log.exception("transaction marker listener %r failed for %s-%d", listener, topic, index)


def _registration(image, topic: str, index: int):
    """The partition's registration in the metadata image, None when it has none."""
    t = None if image is None else image.topics_by_name.get(topic)
    return None if t is None else t.partitions.get(index)


def _response(errors: dict) -> WriteTxnMarkersResponse:
    """WriteTxnMarkersResponse(Map<producerId, Map<TopicPartition, Errors>>): one result per
    producer id, its partitions grouped by topic."""
    markers = []
    for producer_id, partitions in errors.items():
        topics: dict[str, WritableTxnMarkerTopicResult] = {}
        for (topic, index), code in partitions.items():
            result = topics.get(topic)
            if result is None:
                result = topics[topic] = WritableTxnMarkerTopicResult(name=topic, partitions=[])
            result.partitions.append(WritableTxnMarkerPartitionResult(partition_index=index, error_code=int(code)))
        markers.append(WritableTxnMarkerResult(producer_id=producer_id, topics=list(topics.values())))
    return WriteTxnMarkersResponse(markers=markers)
