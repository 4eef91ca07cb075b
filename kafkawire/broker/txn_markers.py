"""WriteTxnMarkers (27) on the broker, as Kafka's KafkaApis.handleWriteTxnMarkersRequest and
ReplicaManager.appendRecords (origin COORDINATOR, acks=all) serve it: the transaction
coordinator asks each partition leader to write a producer's COMMIT or ABORT marker.

    response = await broker.txn_markers.write_txn_markers(request)    # in process, no authorization
    broker.txn_marker_listeners.append(listener)                      # told of each marker written

Per marker, per partition, in Kafka's order: a partition this broker does not host is
UNKNOWN_TOPIC_OR_PARTITION (ReplicaManager.onlinePartition); one it is a replica of but does not
lead NOT_LEADER_OR_FOLLOWER, and so is a ``__consumer_offsets`` partition the group coordinator
has not loaded (still loading, or its load failed: Kafka routes these markers through the group
coordinator, whose runtime refuses them with COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR,
which KafkaApis answers NOT_LEADER_OR_FOLLOWER so that the transaction coordinator sends the
marker again); a committed ISR (the partition's own, as its leader) smaller than
the effective min ISR (``min.insync.replicas``, at most the replication factor)
NOT_ENOUGH_REPLICAS (not for ``__consumer_offsets``, which Kafka's group coordinator writes with
acks=1); then the producer state's checks (ProducerState.check_marker): an older
producer epoch INVALID_PRODUCER_EPOCH (with transaction version 2, from request v2, the same
epoch too, unless that transaction is over), an older coordinator epoch
TRANSACTION_COORDINATOR_FENCED; a failed write KAFKA_STORAGE_ERROR. The answer groups the
partitions by producer id (two markers of one producer share one entry, as Kafka's map does)
and by topic. The answer waits until every written marker reached its partition's high
watermark (acks=-1, kafkawire.broker.delayed_produce): REQUEST_TIMED_OUT after
``request.timeout.ms`` (``offsets.commit.timeout.ms`` for ``__consumer_offsets``),
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank under the min ISR meanwhile,
NOT_LEADER_OR_FOLLOWER when leadership moved.

After each marker is written and replicated, every callable in ``broker.txn_marker_listeners`` is called as
``listener(topic, partition, producer_id, producer_epoch, committed, coordinator_epoch)``; a
listener that raises is logged and the others still run. A marker of ``__consumer_offsets`` is
told at its append, before its wait: Kafka's group coordinator (CoordinatorRuntime's transaction
completion) replays it when it appends it, its pending transactional offset commits becoming the
group's at the log end, read at the high watermark once replicated.

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

from .group_records import OFFSETS_TOPIC
from .produce import fewer_in_sync_text, isr_and_min_isr, kafka_logs_refusal, log_failed_append
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
        """Write every marker of ``request`` (a WriteTxnMarkersRequest); the response data, once
        each written marker reached its partition's high watermark (acks=-1, ``request.timeout.ms``)."""
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
                        partition = self.broker.partitions[(t.name, index)]
                        written.append((t.name, index, marker, partition, partition.last_append_end_offset))
                        if t.name == OFFSETS_TOPIC:        # the group coordinator replays it at the append
                            self._tell_listeners(t.name, index, marker)
        if written:
            self.broker.data_appended()
            await self._replicated(written, errors)
        for topic, index, marker, _, _ in written:
            if topic != OFFSETS_TOPIC and errors[marker.producer_id][(topic, index)] == Errors.NONE:
                self._tell_listeners(topic, index, marker)
        return _response(errors)

    async def _replicated(self, written: list, errors: dict) -> None:
        """ReplicaManager.appendRecords with requiredAcks -1: each marker's answer waits for the
        high watermark (REQUEST_TIMED_OUT after ``request.timeout.ms``; NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        NOT_LEADER_OR_FOLLOWER as delayed_produce decides). A marker of ``__consumer_offsets`` goes
        through the group coordinator in Kafka, which waits ``offsets.commit.timeout.ms`` for the
        high watermark alone."""
        by_timeout: dict[int, list] = {}
        for topic, index, marker, partition, end in written:
            answer = _MarkerAnswer(errors[marker.producer_id], (topic, index))
            timeout = self.broker.config.offsets_commit_timeout_ms if topic == OFFSETS_TOPIC \
                else self.broker.config.request_timeout_ms
            by_timeout.setdefault(timeout, []).append((partition, answer, end))
        for timeout_ms, entries in by_timeout.items():
            await self.broker.replication.wait_for_acks(entries, timeout_ms)
            for _, answer, _ in entries:
                if answer.topic_partition[0] == OFFSETS_TOPIC and answer.error_code == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
                    answer.error_code = Errors.NONE

    def _write(self, image, marker, topic: str, index: int, now_ms: int) -> int:
        partition = self.broker.partitions.get((topic, index))
        if partition is None:
            return self._not_here(image, topic, index)
        if topic == OFFSETS_TOPIC and index not in self.broker.group_apis.store.loaded:
            return Errors.NOT_LEADER_OR_FOLLOWER        # the group coordinator is loading it: sent again
        settings = self.broker.topic_configs.produce_settings(image, topic)
        if topic != OFFSETS_TOPIC and _registration(image, topic, index) is not None:
            isr, min_isr = isr_and_min_isr(partition, _registration(image, topic, index), settings.min_insync_replicas)
            if len(isr) < min_isr:
                log_failed_append(image.topics_by_name[topic], index, Errors.NOT_ENOUGH_REPLICAS,
                                  fewer_in_sync_text(isr, min_isr))
                return Errors.NOT_ENOUGH_REPLICAS
        try:
            partition.append_marker(producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
                                    coordinator_epoch=marker.coordinator_epoch, commit=marker.transaction_result,
                                    now_ms=now_ms, transaction_version=marker.transaction_version,
                                    log_append_time=settings.log_append_time)
        except ProduceRefused as exc:       # an append of the coordinator's: Kafka logs it as any append
            known = image is not None and topic in image.topics_by_name
            if known and kafka_logs_refusal(exc):
                log_failed_append(image.topics_by_name[topic], index, exc.code, str(exc))
            else:
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


class _MarkerAnswer:
    """One marker's entry in the answer, as the acks=all waiting sets it."""
    __slots__ = ("results", "topic_partition")

    def __init__(self, results: dict, topic_partition: tuple[str, int]):
        self.results, self.topic_partition = results, topic_partition

    @property
    def error_code(self) -> int:
        return self.results[self.topic_partition]

    @error_code.setter
    def error_code(self, code: int) -> None:
        self.results[self.topic_partition] = code


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
