"""Produce (0) on the broker: each partition's batch checked (kafkawire.broker.validation),
appended to the partition this broker leads, answered as Kafka's ReplicaManager.appendRecords.

Per partition, in Kafka's order: a topic the metadata lacks is UNKNOWN_TOPIC_OR_PARTITION
(UNKNOWN_TOPIC_ID from v13, which names topics by id), a partition it lacks likewise, records
that are not exactly one batch of magic 2 (KafkaApis' check, before the leader's), one led
elsewhere (or not yet open here) NOT_LEADER_OR_FOLLOWER (before that, an internal topic
INVALID_TOPIC_EXCEPTION unless the client id is ``__admin_client``, as KafkaApis allows); acks=all with fewer in-sync replicas
than ``min.insync.replicas`` NOT_ENOUGH_REPLICAS; then the batch's own checks. The topic's
``max.message.bytes``, ``message.timestamp.type``, ``message.timestamp.before.max.ms``,
``message.timestamp.after.max.ms``, ``cleanup.policy`` and ``compression.type`` come from its
configs in the metadata, else the broker's (``message.max.bytes``, ``log.message.timestamp.type``, ...). Records that
break the record rules are answered as Kafka's RecordValidationException: the error, its
message in ``error_message`` and each failed record in ``record_errors``. The meters
TotalProduceRequests and FailedProduceRequests count as ReplicaManager.appendToLocalLog does.

Transactions: kafkawire.broker.txn_verification's checks come first (a transactional batch
without a transactional id, KIP-890 verification through ``broker.txn_verifier``); the producer
state then decides whether a transactional batch may open or join its producer's transaction.

acks: 0, 1 and -1 (all) are served. With acks=all the check of ``min.insync.replicas`` uses the
partition's committed ISR and Kafka's effective min ISR (at most the replication factor), and the
answer waits (kafkawire.broker.delayed_produce, Kafka's DelayedProduce) until the high watermark
reaches the end of each appended batch, at most the request's ``timeout_ms`` (then
REQUEST_TIMED_OUT); with one replica that is at once. Any other value is INVALID_REQUIRED_ACKS
for every partition not refused before it (KafkaApis answers the unknown topics and partitions,
then ReplicaManager.appendRecords refuses the rest). With acks=0 there is
no response, and a failed partition closes the connection (KafkaApis: the client learns of the
failure by the closed connection and refreshes its metadata).

Leader discovery (KIP-951, kafkawire.broker.leader_discovery): from v10 on, a partition answered
NOT_LEADER_OR_FOLLOWER (for whatever reason, once the answer is complete) carries its current leader
and epoch, and the answer the leaders' endpoints on the request's listener.
"""
from __future__ import annotations

import logging
import time

from kafkawire.messages.produce_response import (
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse, ProduceResponse,
    TopicProduceResponse)
from kafkawire.net.request_metrics import local_work_done
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import NO_RESPONSE, CloseConnection
from kafkawire.protocol.message import uuid_to_kafka_string

from .leader_discovery import PRODUCE_LEADER_VERSION, LeaderHints
from .producer_state import VERIFICATION_OFF
from .log_config import ProduceSettings, produce_settings
from .metadata_apis import INTERNAL_TOPICS
from .metrics import BYTES_IN, FAILED_PRODUCE, MESSAGES_IN, TOTAL_PRODUCE
from .record_checks import RecordErrors, RecordRules
from .txn_verification import transaction_checks
from .validation import ProduceRefused, request_batch, request_refusal, validate_produce
from .log_dir_failure import append_step, is_offline_replica, storage_failure

__all__ = ["ProduceApi", "isr_and_min_isr", "record_rules", "log_failed_append", "kafka_logs_refusal"]

log = logging.getLogger(__name__)

ADMIN_CLIENT_ID = "__admin_client"      # AdminUtils.ADMIN_CLIENT_ID: the one client that may append to internal topics

class ProduceApi:
    """Produce for ``broker`` (its ``image()``, ``partitions``, ``config``)."""

    def __init__(self, broker):
        self.broker = broker

    async def produce(self, ctx, request):
        v = ctx.api_version
        acks = request.acks
        now_ms = int(time.time() * 1000)
        image = self.broker.image()
        await self.broker.state_writes.appends_allowed()     # a new leader epoch is in its checkpoint first
        responses = []
        names = []            # each answered topic's name (None: unknown), for the leader hints
        appended = False
        waiting = []          # acks=all: (partition, response, the offset the high watermark must reach)
        # KafkaApis: only the admin client's requests may append to an internal topic
        internal_allowed = getattr(ctx, "client_id", None) == ADMIN_CLIENT_ID
        txn = await transaction_checks(self.broker, request, v,
                                       lambda t: getattr(self._topic(image, t, v), "name", None), now_ms)
        for t in request.topic_data:
            topic = self._topic(image, t, v)
            partitions = []
            for p in t.partition_data:
                refusal = txn.refusal(getattr(topic, "name", None), p.index)
                if refusal is not None:
                    r = _refused(p.index, *refusal)
                elif topic is None:
                    r = _refused(p.index, Errors.UNKNOWN_TOPIC_ID if v >= 13 else Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                 None)
                elif p.index not in topic.partitions:
                    r = _refused(p.index, Errors.UNKNOWN_TOPIC_OR_PARTITION, None)
                elif acks not in (-1, 0, 1):     # appendRecords: after KafkaApis' unknown partitions and records
                    early = request_refusal(p.records, v)
                    r = _refused(p.index, Errors.INVALID_REQUIRED_ACKS if early is None else early.code, None)
                else:
                    r = self._produce_partition(image, topic, p, acks, v, now_ms, txn.guard(topic.name, p.index),
                                                internal_allowed=internal_allowed)
                    appended = appended or r.error_code == Errors.NONE
                    if acks == -1 and r.error_code == Errors.NONE:
                        partition = self.broker.partitions[(topic.name, p.index)]
                        waiting.append((partition, r, partition.last_append_end_offset))
                partitions.append(r)
            responses.append(TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=partitions))
            names.append(getattr(topic, "name", None))
        if appended:
            self.broker.data_appended()
        if waiting:
            local_work_done(ctx)           # the wait for the replicas is RemoteTimeMs (Kafka's DelayedProduce)
            await self.broker.replication.wait_for_acks(waiting, request.timeout_ms)
        if acks == 0:
            if any(r.error_code for t in responses for r in t.partition_responses):
                raise CloseConnection("a produce request with acks=0 failed")
            return NO_RESPONSE
        endpoints = self._leader_hints(ctx, image, names, responses) if v >= PRODUCE_LEADER_VERSION else []
        return ProduceResponse(responses=responses, node_endpoints=endpoints)

    def _leader_hints(self, ctx, image, names: list, responses: list) -> list:
        """KafkaApis.handleProduceRequest's sendResponseCallback: each NOT_LEADER_OR_FOLLOWER
        partition gets its current leader; the answer's node endpoints, those leaders' endpoints."""
        hints = LeaderHints(self.broker, self.broker.image() or image, ctx.listener_name)
        for name, t in zip(names, responses):
            for r in t.partition_responses:
                if r.error_code == Errors.NOT_LEADER_OR_FOLLOWER:
                    leader_id, leader_epoch = hints.current_leader(name, r.index)
                    r.current_leader = LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)
        return [NodeEndpoint(node_id=i, host=host, port=port, rack=rack) for i, host, port, rack in hints.endpoints()]

    @staticmethod
    def _topic(image, t, version: int):
        if image is None:
            return None
        if version >= 13:
            return image.topics_by_id.get(t.topic_id)
        return image.topics_by_name.get(t.name)

    def _produce_partition(self, image, topic, p, acks: int, version: int, now_ms: int,
                           guard=VERIFICATION_OFF, *, internal_allowed: bool = False) -> PartitionProduceResponse:
        registration = topic.partitions[p.index]      # produce() answered an unknown partition
        try:
            batch = request_batch(p.records, version)     # KafkaApis refuses it: ReplicaManager never sees it
        except ProduceRefused as exc:
            return _refused(p.index, exc.code, None)
        stats = self.broker.topic_stats
        stats.mark(topic.name, TOTAL_PRODUCE)             # appendToLocalLog: each partition it is asked for
        if topic.name in INTERNAL_TOPICS and not internal_allowed:      # InvalidTopicException, not a failure
            return _refused(p.index, Errors.INVALID_TOPIC_EXCEPTION, None)
        partition = self.broker.partitions.get((topic.name, p.index))
        if is_offline_replica(self.broker, (topic.name, p.index), topic):       # known: not a failed request
            return _refused(p.index, Errors.KAFKA_STORAGE_ERROR, None)
        if registration.leader != self.broker.node_id or partition is None:
            return _refused(p.index, Errors.NOT_LEADER_OR_FOLLOWER, None)
        settings = self.broker.topic_configs.produce_settings(image, topic.name)
        name = f"{topic.name}-{p.index}"
        isr, min_isr = isr_and_min_isr(partition, registration, settings.min_insync_replicas)
        if acks == -1 and len(isr) < min_isr:
            # NotEnoughReplicasException: Kafka logs its message; the answer has none, and the log start offset
            log_failed_append(topic, p.index, Errors.NOT_ENOUGH_REPLICAS, fewer_in_sync_text(isr, min_isr))
            stats.mark(topic.name, FAILED_PRODUCE)
            return PartitionProduceResponse(index=p.index, error_code=Errors.NOT_ENOUGH_REPLICAS, base_offset=-1,
                                            log_append_time_ms=-1, log_start_offset=partition.log.log_start_offset)
        try:
            validated = validate_produce(
                p.records, topic_partition=name, version=version, now_ms=now_ms,
                log_append_time=settings.log_append_time, max_message_bytes=settings.max_message_bytes,
                rules=settings_rules(settings, now_ms), compression_type=settings.compression_type,
                compression_levels=settings.compression_levels, batch=batch)
            base_offset, log_append_time = partition.append(validated, now_ms=now_ms, guard=guard)
        except RecordErrors as exc:      # ReplicaManager: RecordValidationException, the log start offset kept
            stats.mark(topic.name, FAILED_PRODUCE)
            log_failed_append(topic, p.index, exc.code, str(exc))
            return PartitionProduceResponse(
                index=p.index, error_code=exc.code, base_offset=-1, log_append_time_ms=-1,
                log_start_offset=partition.log.log_start_offset, error_message=str(exc),
                record_errors=[BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                               for i, m in exc.errors])
        except ProduceRefused as exc:
            if exc.code not in UNCOUNTED_FAILURES:
                stats.mark(topic.name, FAILED_PRODUCE)
            if kafka_logs_refusal(exc):
                log_failed_append(topic, p.index, exc.code, str(exc))
            # ReplicaManager.appendToLocalLog: no message in the answer; the log start offset unless
            # the exception is one it answers without it
            start = -1 if exc.code in UNCOUNTED_FAILURES else partition.log.log_start_offset
            return PartitionProduceResponse(index=p.index, error_code=exc.code, base_offset=-1,
                                            log_append_time_ms=-1, log_start_offset=start)
        except ValueError as exc:        # larger than a segment (Log.append): RecordBatchTooLargeException
            log.debug("append to %s refused with RECORD_LIST_TOO_LARGE: %s", name, exc)     # Kafka: not logged
            return _refused(p.index, Errors.RECORD_LIST_TOO_LARGE, None)
        except OSError as exc:           # KafkaStorageException: the log directory goes offline (logged there)
            storage_failure(self.broker, partition, append_step(exc), exc)
            return _refused(p.index, Errors.KAFKA_STORAGE_ERROR, None)
        stats.mark(topic.name, BYTES_IN, len(p.records))     # as sent, before any recompression
        stats.mark(topic.name, MESSAGES_IN, validated.records)
        return PartitionProduceResponse(index=p.index, error_code=Errors.NONE, base_offset=base_offset,
                                        log_append_time_ms=log_append_time,
                                        log_start_offset=partition.log.log_start_offset)


# The known exceptions of the log's append that ReplicaManager.appendToLocalLog answers without
# counting a failed produce request (the meter is for the broker's unexpected failures); it
# answers the others it knows (an unknown partition, not the leader, a storage error) likewise,
# and those are refused before the log here.
UNCOUNTED_FAILURES = frozenset({Errors.CORRUPT_MESSAGE, Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE})


# The longest reason a refused append's log line carries (each is built from bounded parts: the
# topic's name, numbers, at most three record errors); the cut keeps a line short whatever comes.
MAX_REASON_CHARS = 1000


def kafka_logs_refusal(exc: ProduceRefused) -> bool:
    """Whether Kafka logs the refusal: ReplicaManager.appendToLocalLog logs every exception of the
    log's append but those it answers as known (CorruptRecordException, RecordTooLargeException,
    RecordBatchTooLargeException, ...), and KafkaApis' own checks of the request are never logged."""
    return not exc.in_request and exc.code not in UNCOUNTED_FAILURES


def log_failed_append(topic, index: int, code: int, reason: str) -> None:
    """The broker's line for an append the partition's log refused, with the facts Kafka's
    ReplicaManager logs (processFailedRecord: the partition, its topic id, the exception's text):
    INFO for a fenced producer epoch (InvalidProducerEpochException), ERROR for the others.

    Kafka logs every failure, with the exception's stack trace; this is one line per failure
    without one (no longer than MAX_REASON_CHARS and the names), so a client sending bad batches
    grows the log by less per batch than it grows Kafka's."""
    error = Errors.for_code(code)
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[:MAX_REASON_CHARS] + "..."
    log.log(logging.INFO if error == Errors.INVALID_PRODUCER_EPOCH else logging.ERROR,
            "append to partition %s-%d (topic id %s) refused with %s: %s", topic.name, index,
            uuid_to_kafka_string(topic.id), error.name, reason)


def fewer_in_sync_text(isr, min_isr: int) -> str:
    """Why NotEnoughReplicasException refused an acks=all append."""
    return f"{len(isr)} in-sync replica(s) {sorted(isr)}, fewer than the min.insync.replicas of {min_isr}"


def isr_and_min_isr(partition, registration, min_insync_replicas: int) -> tuple:
    """Partition.appendRecordsToLeader's check: the committed ISR and the effective min ISR
    (min.insync.replicas, at most the replication factor)."""
    if partition.replicas is not None:
        return partition.replicas.state.isr, min(min_insync_replicas, len(partition.replicas.followers) + 1)
    return registration.isr, min(min_insync_replicas, len(registration.replicas))


def settings_rules(settings: ProduceSettings, now_ms: int) -> RecordRules:
    """The record checks a topic's ProduceSettings ask for."""
    return RecordRules(now_ms=now_ms, create_time=not settings.log_append_time,
                       before_max_ms=settings.timestamp_before_max_ms, after_max_ms=settings.timestamp_after_max_ms,
                       compacted=settings.compacted)


def record_rules(image, topic: str, config, now_ms: int) -> RecordRules:
    """The record checks the topic's configs ask for (LogConfig: the topic's own, else the broker's)."""
    return settings_rules(produce_settings(image, topic, config), now_ms)


def _refused(index: int, code: int, message: str | None) -> PartitionProduceResponse:
    return PartitionProduceResponse(index=index, error_code=code, base_offset=-1, log_append_time_ms=-1,
                                    log_start_offset=-1, error_message=message)
