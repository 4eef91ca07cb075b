"""Fetch (1) and ListOffsets (2) for the partitions this broker leads, as Kafka's
ReplicaManager.fetchMessages and KafkaApis.handleListOffsetRequest answer consumers.

Fetch: whole stored batches (the log's bytes, never re-encoded) from the one holding the fetch
offset, below the high watermark (the log end with one replica); at most
``partition_max_bytes`` per partition and the request's ``max_bytes`` in all, the latter capped
by the broker's ``fetch.max.bytes``, except that the first partition with data returns one
whole batch even when it is larger (KIP-74). A fetch that finds fewer than ``min_bytes`` waits
for appends up to ``max_wait_ms`` (capped at 30 s), reading again only after an append; one
whose offset is outside [log start, log end] gets OFFSET_OUT_OF_RANGE; a current leader epoch
other than the partition's gets FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH. read_committed
(isolation level 1) reads below the last stable offset only and gets the aborted transactions
overlapping what it read (LeaderPartition.read_committed, Kafka's collectAbortedTransactions);
every answer carries the last stable offset. Fetch sessions (KIP-227):
kafkawire.broker.fetch_session says which partitions a request reads and which of them its
answer carries; a fetch without partitions is answered at once.
A follower's fetch (a replica id >= 0: ReplicaState from v15, ``replica_id`` before, with its broker
epoch) reads to the log end and moves the leader's view of it (kafkawire.broker.replication,
Partition.fetchRecords for a follower): its state is recorded once per request, on the first read.
Long polls wake on appends and when a high watermark moves.

ListOffsets: earliest, latest, by timestamp, max timestamp, as kafkawire.net.metadata_topic's
``list_offset`` computes them against the partition's log and high watermark, or its last
stable offset for isolation level 1 (read_committed: latest is the LSO).
"""
from __future__ import annotations

import time

from kafkawire.broker.fetch_session import FetchManager, FetchSessionCache
from kafkawire.messages.fetch_response import AbortedTransaction, FetchableTopicResponse, FetchResponse, PartitionData
from kafkawire.messages.list_offsets_response import (ListOffsetsPartitionResponse, ListOffsetsResponse,
                                                      ListOffsetsTopicResponse)
from kafkawire.net.metadata_topic import epoch_error, list_offset
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import Throttled
from kafkawire.storage.log import OffsetOutOfRangeError

__all__ = ["FetchApi"]

MAX_WAIT_CAP_MS = 30_000
READ_COMMITTED = 1


class FetchApi:
    """Fetch and ListOffsets for ``broker`` (its ``image()``, ``partitions`` and append waits)."""

    def __init__(self, broker):
        self.broker = broker
        self.sessions = FetchManager(FetchSessionCache(broker.config.max_incremental_fetch_session_cache_slots))

    # -- Fetch --

    async def fetch(self, ctx, request):
        v = ctx.api_version
        replica_id = request.replica_state.replica_id if v >= 15 else request.replica_id
        replica_epoch = request.replica_state.replica_epoch if v >= 15 else -1
        follower = (replica_id, replica_epoch) if replica_id >= 0 else None
        context = self.sessions.new_context(v, request, privileged=replica_id >= 0)
        wanted = context.partitions()
        deadline = time.monotonic() + min(max(request.max_wait_ms, 0), MAX_WAIT_CAP_MS) / 1000
        # a consumer's fetch answers to its client quotas (kafkawire.broker.quotas); a follower's does not
        quotas = self.broker.quotas if follower is None else None
        max_bytes = min(request.max_bytes, self.broker.config.fetch_max_bytes)
        if quotas is not None and quotas.fetch_enabled():     # no more than the quota allows in one window
            max_bytes = int(min(max_bytes, quotas.fetch_window_bytes(ctx)))
        min_bytes = min(request.min_bytes, max_bytes)
        first = True
        while True:
            seen = self.broker.appends
            updates, total, errors = self._fetch_once(max_bytes, wanted, v, request.isolation_level, follower,
                                                      record_follower=first)
            first = False
            remaining = deadline - time.monotonic()
            if total >= min_bytes or errors or remaining <= 0 or not wanted:
                return self._answer(ctx, context, updates, quotas)
            await self.broker.wait_for_appends(seen, remaining)

    @staticmethod
    def _answer(ctx, context, updates: list, quotas):
        """The answer; for a consumer, its size and request time are recorded against its quotas,
        and a throttled fetch gets no partitions (KafkaApis: the session is not moved on then either)."""
        if quotas is not None:
            throttle_ms = quotas.consumer_fetch_throttle(
                ctx, lambda: FetchResponse(responses=_by_topic(context.would_answer(updates))))
            if throttle_ms > 0:
                code, session_id = context.throttled()
                return Throttled(FetchResponse(throttle_time_ms=throttle_ms, error_code=code, session_id=session_id),
                                 throttle_ms)
        code, session_id, updates = context.response(updates)
        return FetchResponse(error_code=code, session_id=session_id, responses=_by_topic(updates))

    def _fetch_once(self, max_bytes: int, wanted: list, version: int, isolation_level: int, follower=None,
                    record_follower: bool = True):
        """[(topic, topic id, PartitionData)] for ``wanted`` ((topic, topic id, FetchPartition)s),
        the bytes read, and whether any partition had an error. ``follower``: (replica id, broker
        epoch) of a follower's fetch; ``record_follower``: its state is recorded (the first read)."""
        image = self.broker.image()
        budget = max_bytes
        total, errors = 0, False
        updates = []
        for name, topic_id, p in wanted:
            topic = self._topic(image, name, topic_id, version)
            data = self._fetch_partition(topic, p, version, isolation_level, budget, min_one=(total == 0),
                                         follower=follower, record_follower=record_follower)
            total += len(data.records)
            budget -= len(data.records)
            errors = errors or data.error_code != Errors.NONE
            updates.append((name, topic_id, data))
        return updates, total, errors

    @staticmethod
    def _topic(image, name: str, topic_id, version: int):
        if image is None:
            return None
        return image.topics_by_id.get(topic_id) if version >= 13 else image.topics_by_name.get(name)

    def _fetch_partition(self, topic, p, version: int, isolation_level: int, budget: int, min_one: bool,
                         follower=None, record_follower: bool = True):
        data = PartitionData(partition_index=p.partition, high_watermark=-1, records=b"")
        code, partition = self._leader(topic, p.partition, version)
        if code == Errors.NONE:
            code = epoch_error(getattr(p, "current_leader_epoch", -1), partition.leader_epoch)
        if code != Errors.NONE:
            data.error_code = code
            return data
        if follower is not None:
            return self.broker.replication.read_for_follower(
                partition, p, follower[0], follower[1], limit=min(p.partition_max_bytes, budget), min_one=min_one,
                update_state=record_follower)
        hw, start = partition.high_watermark(), partition.log.log_start_offset
        if p.fetch_offset < start or p.fetch_offset > partition.log.log_end_offset:
            data.error_code = Errors.OFFSET_OUT_OF_RANGE
            return data
        data.high_watermark = hw
        data.last_stable_offset = partition.last_stable_offset()
        data.log_start_offset = start
        committed = isolation_level == READ_COMMITTED
        data.aborted_transactions = [] if committed else None
        limit = min(p.partition_max_bytes, budget)
        if p.fetch_offset >= hw or (limit <= 0 and not min_one):
            return data
        try:
            if committed:
                data.records, aborted = partition.read_committed(p.fetch_offset, max(limit, 0), min_one_batch=min_one)
                data.aborted_transactions = [AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                                             for a in aborted]
            else:
                data.records = partition.read(p.fetch_offset, max(limit, 0), min_one_batch=min_one)
        except OffsetOutOfRangeError:
            data.error_code = Errors.OFFSET_OUT_OF_RANGE
            data.high_watermark = data.last_stable_offset = data.log_start_offset = -1
        return data

    def _leader(self, topic, index: int, version: int):
        """(NONE, the partition) when this broker leads it, else (the error, None)."""
        if topic is None:
            return (Errors.UNKNOWN_TOPIC_ID if version >= 13 else Errors.UNKNOWN_TOPIC_OR_PARTITION), None
        registration = topic.partitions.get(index)
        if registration is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, None
        partition = self.broker.partitions.get((topic.name, index))
        if registration.leader != self.broker.node_id or partition is None:
            return Errors.NOT_LEADER_OR_FOLLOWER, None
        return Errors.NONE, partition

    # -- ListOffsets --

    async def list_offsets(self, ctx, request):
        image = self.broker.image()
        topics = []
        for t in request.topics:
            topic = None if image is None else image.topics_by_name.get(t.name)
            partitions = []
            for p in t.partitions:
                r = ListOffsetsPartitionResponse(partition_index=p.partition_index, timestamp=-1, offset=-1)
                code, partition = self._leader(topic, p.partition_index, 0)
                if code == Errors.NONE:
                    code = epoch_error(p.current_leader_epoch, partition.leader_epoch)
                r.error_code = code
                if code == Errors.NONE:         # read_committed consumers see up to the last stable offset
                    visible = partition.last_stable_offset() if request.isolation_level == READ_COMMITTED \
                        else partition.high_watermark()
                    list_offset(partition.log, partition.epochs, visible, partition.leader_epoch,
                                ctx.api_version, p.timestamp, r)
                partitions.append(r)
            topics.append(ListOffsetsTopicResponse(name=t.name, partitions=partitions))
        return ListOffsetsResponse(topics=topics)


def _by_topic(updates: list) -> list:
    """The answer's topics: consecutive partitions of one topic grouped, as Kafka's FetchResponse.of."""
    responses = []
    for name, topic_id, data in updates:
        if not responses or responses[-1].topic != name or responses[-1].topic_id != topic_id:
            responses.append(FetchableTopicResponse(topic=name, topic_id=topic_id, partitions=[]))
        responses[-1].partitions.append(data)
    return responses
