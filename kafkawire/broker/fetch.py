"""Fetch (1) and ListOffsets (2) for the partitions this broker hosts, as Kafka's
ReplicaManager.fetchMessages and KafkaApis.handleListOffsetRequest answer consumers.

Fetch: whole stored batches (the log's bytes, never re-encoded) from the one holding the fetch
offset, below the high watermark (the log end with one replica); at most
``partition_max_bytes`` per partition and the request's ``max_bytes`` in all, the latter capped
by the broker's ``fetch.max.bytes``, except that the first partition with data returns one
whole batch even when it is larger (KIP-74). A fetch that finds fewer than ``min_bytes`` waits
for appends up to ``max_wait_ms`` (capped at 30 s), reading again only after an append; one
whose offset is outside [log start, log end] gets OFFSET_OUT_OF_RANGE; a current leader epoch
other than the partition's gets FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH; a last fetched epoch
(v12+) is checked against the leader epochs for consumers as for followers
(LeaderPartition.diverging_epoch, Partition.readRecords): a diverging one is answered at once with
the epoch and its end offset and no records. read_committed
(isolation level 1) reads below the last stable offset only and gets the aborted transactions
overlapping what it read (LeaderPartition.read_committed, Kafka's collectAbortedTransactions);
every answer carries the last stable offset. Fetch sessions (KIP-227):
kafkawire.broker.fetch_session says which partitions a request reads and which of them its
answer carries; a fetch without partitions is answered at once.
A follower's fetch (a replica id >= 0: ReplicaState from v15, ``replica_id`` before, with its broker
epoch) reads to the log end and moves the leader's view of it (kafkawire.broker.replication,
Partition.fetchRecords for a follower): its state is recorded once per request, on the first read.
The leader replication quota (kafkawire.broker.replication_quotas) empties the records of a
throttled partition for a follower out of the ISR while it is exceeded, and counts the size of
every follower's answer over its throttled partitions.
Long polls wake on appends and when a high watermark moves (a led partition's, or a followed
one's as its replica fetcher learns it).

Reading from followers (KIP-392): a consumer's fetch from v11 on carries ClientMetadata (its
``rack_id`` and the listener it came in on) and may read from a follower: it is served as on the
leader, below the follower's own high watermark (read_uncommitted) or last stable offset
(read_committed); an offset past the follower's log end is OFFSET_OUT_OF_RANGE (between its high
watermark and log end: no records yet). Before v11, and for a follower's fetch, a replica that
does not lead the partition answers NOT_LEADER_OR_FOLLOWER (FetchParams.fetchOnlyLeader); the
current leader epoch is checked first, against the leader epoch this replica knows. On the leader,
with ``replica.selector.class`` set, a v11+ consumer's fetch asks the selector
(kafkawire.broker.replica_selector); when it names another replica the partition is answered
with ``preferred_read_replica``, the leader's high watermark, last stable offset and log start,
and no records, and the request is answered at once.

Leader discovery (KIP-951, kafkawire.broker.leader_discovery): from v16 on, a partition answered
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries its current leader and epoch, and a
consumer's answer (throttled or not) the leaders' endpoints on its listener; a follower's answer
carries the leaders but no endpoints, as Kafka's.

ListOffsets (leader only, as Kafka's: the epoch checked first, then NOT_LEADER_OR_FOLLOWER on a
follower): earliest, latest, by timestamp, max timestamp, as kafkawire.net.metadata_topic's
``list_offset`` computes them against the partition's log and high watermark, or its last
stable offset for isolation level 1 (read_committed: latest is the LSO).
"""
from __future__ import annotations

import logging
import time

from typing import NamedTuple

from kafkawire.broker.fetch_session import READABLE_TOPIC, FetchManager, FetchSessionCache, topic_authorization_failed
from kafkawire.broker.leader_discovery import FETCH_LEADER_VERSION, LeaderHints
from kafkawire.broker.metrics import BYTES_OUT, REPLICATION_BYTES_OUT, TOTAL_FETCH
from kafkawire.broker.quotas import fetch_response_size
from kafkawire.broker.replica_selector import FollowerView, preferred_read_replica
from kafkawire.broker.log_dir_failure import is_offline_replica, storage_failure
from kafkawire.messages.fetch_response import (AbortedTransaction, EpochEndOffset, FetchableTopicResponse,
                                               FetchResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData)
from kafkawire.messages.list_offsets_response import (ListOffsetsPartitionResponse, ListOffsetsResponse,
                                                      ListOffsetsTopicResponse)
from kafkawire.net.metadata_topic import epoch_error, list_offset
from kafkawire.net.request_metrics import local_work_done
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import Throttled
from kafkawire.storage.log import OffsetOutOfRangeError

__all__ = ["FetchApi"]

log = logging.getLogger(__name__)

MAX_WAIT_CAP_MS = 30_000
READ_COMMITTED = 1
# KafkaApis answers these itself, before the ReplicaManager: their aborted list is empty, not null
UNKNOWN_PARTITION = (Errors.UNKNOWN_TOPIC_ID, Errors.UNKNOWN_TOPIC_OR_PARTITION)
LEADER_HINTED = (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH)   # KIP-951: the current leader named
CLIENT_METADATA_VERSION = 11          # Fetch v11 added the rack id and the preferred read replica
# the listeners whose bytes go to the socket as they are (SASL here never wraps them): records are sent
# from the log's files (Kafka's TransferableRecords; over TLS Kafka too copies them through memory)
SENDFILE_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT")


class FetchParams(NamedTuple):
    """Kafka's FetchParams: ``follower`` (replica id, broker epoch) of a follower's fetch, else None;
    ``client`` (rack id, listener name) of a consumer's fetch from v11 on (ClientMetadata), else
    None; ``record_follower``: the follower's state is recorded (the first read of the request);
    ``in_file``: the records (a consumer's or a follower's) may stay in the log's files until the
    connection sends them (sendfile, on a listener without TLS: kafkawire.protocol.file_range)."""
    version: int
    isolation_level: int
    follower: tuple | None = None
    client: tuple | None = None
    record_follower: bool = True
    in_file: bool = False

    @property
    def only_leader(self) -> bool:
        """FetchParams.fetchOnlyLeader: a follower's fetch, or a consumer's before v11."""
        return self.follower is not None or self.client is None


class FetchApi:
    """Fetch and ListOffsets for ``broker`` (its ``image()``, ``partitions`` and append waits)."""

    def __init__(self, broker):
        self.broker = broker
        self.sessions = FetchManager(FetchSessionCache(broker.config.max_incremental_fetch_session_cache_slots))
        self.selector = broker.replica_selector    # None: the leader serves (replica.selector.class unset)

    # -- Fetch --

    async def fetch(self, ctx, request):
        v = ctx.api_version
        replica_id = request.replica_state.replica_id if v >= 15 else request.replica_id
        replica_epoch = request.replica_state.replica_epoch if v >= 15 else -1
        params = FetchParams(
            version=v, isolation_level=request.isolation_level,
            follower=(replica_id, replica_epoch) if replica_id >= 0 else None,
            # KafkaApis' ClientMetadata, from v11 on: a consumer may then read from a follower
            client=(request.rack_id, ctx.listener_name) if v >= CLIENT_METADATA_VERSION and replica_id < 0 else None,
            in_file=getattr(ctx, "security_protocol", None) in SENDFILE_PROTOCOLS)
        context = self.sessions.new_context(v, request, privileged=replica_id >= 0)
        wanted, refused = self._readable(context.partitions(), v)
        deadline = time.monotonic() + min(max(request.max_wait_ms, 0), MAX_WAIT_CAP_MS) / 1000
        # a consumer's fetch answers to its client quotas (kafkawire.broker.quotas); a follower's does not
        quotas = self.broker.quotas if params.follower is None else None
        max_bytes = min(request.max_bytes, self.broker.config.fetch_max_bytes)
        if quotas is not None and quotas.fetch_enabled():     # no more than the quota allows in one window
            max_bytes = int(min(max_bytes, quotas.fetch_window_bytes(ctx)))
        min_bytes = min(request.min_bytes, max_bytes)
        first = True
        while True:
            seen = self.broker.appends
            updates, total, done = self._fetch_once(max_bytes, wanted, params._replace(record_follower=first))
            updates = refused + updates         # KafkaApis: the erroneous partitions first
            first = False
            remaining = deadline - time.monotonic()
            if total >= min_bytes or done or remaining <= 0 or not wanted:
                endpoints = self._leader_hints(ctx, updates, params) if v >= FETCH_LEADER_VERSION else []
                answer = self._answer(ctx, context, updates, quotas, endpoints)
                if not isinstance(answer, Throttled):
                    self._count_bytes_out(updates, params)
                if params.follower is not None:
                    self._record_replication(answer, v)
                return answer
            local_work_done(ctx)           # the long poll is RemoteTimeMs (Kafka's DelayedFetch)
            await self.broker.wait_for_appends(seen, remaining)

    def _readable(self, wanted: list, version: int) -> tuple[list, list]:
        """(the partitions to read, the refused ones' answers): under an authorizer a consumer's
        partitions of topics it may not READ, the session's included, are answered
        TOPIC_AUTHORIZATION_FAILED in every answer and not read (a topic id the image does not
        know is read, to be answered UNKNOWN_TOPIC_ID)."""
        readable = READABLE_TOPIC.get()
        if readable is None:
            return wanted, []
        image = self.broker.image()
        kept, refused, allowed = [], [], {}     # allowed: topic name -> READ, asked once a topic (as Kafka)
        for name, topic_id, p in wanted:
            topic_name = name if version < 13 else getattr(self._topic(image, name, topic_id, version), "name", None)
            if topic_name is not None and topic_name not in allowed:
                allowed[topic_name] = readable(topic_name)
            if topic_name is None or allowed[topic_name]:
                kept.append((name, topic_id, p))
            else:
                refused.append((name, topic_id, topic_authorization_failed(p.partition)))
        return kept, refused

    def _leader_hints(self, ctx, updates: list, params: "FetchParams") -> list:
        """KafkaApis.handleFetchRequest's processResponseCallback: each NOT_LEADER_OR_FOLLOWER or
        FENCED_LEADER_EPOCH partition gets its current leader; a consumer's answer the node
        endpoints of those leaders (a follower's none: Kafka answers it without them)."""
        image = self.broker.image()
        hints = LeaderHints(self.broker, image, ctx.listener_name)
        for name, topic_id, data in updates:
            if data.error_code in LEADER_HINTED:     # the topic is known: by id from v13 on, when the name is ""
                topic = self._topic(image, name, topic_id, params.version)
                leader_id, leader_epoch = hints.current_leader(getattr(topic, "name", None), data.partition_index)
                data.current_leader = LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)
        if params.follower is not None:
            return []
        return [NodeEndpoint(node_id=i, host=host, port=port, rack=rack) for i, host, port, rack in hints.endpoints()]

    @staticmethod
    def _answer(ctx, context, updates: list, quotas, endpoints: list):
        """The answer; for a consumer, its size and request time are recorded against its quotas,
        and a throttled fetch gets no partitions (KafkaApis: the session is not moved on then either)."""
        if quotas is not None:
            throttle_ms = quotas.consumer_fetch_throttle(
                ctx, lambda: FetchResponse(responses=_by_topic(context.would_answer(updates))))
            if throttle_ms > 0:
                code, session_id = context.throttled()
                return Throttled(FetchResponse(throttle_time_ms=throttle_ms, error_code=code, session_id=session_id,
                                               node_endpoints=endpoints), throttle_ms)
        code, session_id, updates = context.response(updates)
        return FetchResponse(error_code=code, session_id=session_id, responses=_by_topic(updates),
                             node_endpoints=endpoints)

    def _fetch_once(self, max_bytes: int, wanted: list, params: "FetchParams"):
        """[(topic, topic id, PartitionData)] for ``wanted`` ((topic, topic id, FetchPartition)s),
        the bytes read, and whether the answer goes now (ReplicaManager.fetchMessages: an error, a
        diverging epoch or a preferred read replica)."""
        image = self.broker.image()
        budget = max_bytes
        total, done = 0, False
        updates = []
        stats = self.broker.topic_stats if params.record_follower else None     # a request's first read
        for name, topic_id, p in wanted:
            topic = self._topic(image, name, topic_id, params.version)
            if stats is not None and topic is not None:     # ReplicaManager.readFromLog's TotalFetchRequests
                stats.mark(topic.name, TOTAL_FETCH)
            data = self._fetch_partition(image, topic, p, params, budget, min_one=(total == 0))
            total += len(data.records)
            budget -= len(data.records)
            done = done or data.error_code != Errors.NONE or data.preferred_read_replica >= 0 or \
                data.diverging_epoch.epoch >= 0
            updates.append((name, topic_id, data))
        return updates, total, done

    def _count_bytes_out(self, updates: list, params: "FetchParams") -> None:
        """KafkaApis' updateBytesOut: a consumer's records are BytesOut of their topic, a
        follower's ReplicationBytesOut of all topics."""
        stats = self.broker.topic_stats
        image = self.broker.image()
        for name, topic_id, data in updates:
            size = len(data.records) if data.records else 0
            if not size:
                continue
            if params.follower is not None:
                stats.mark_all_topics(REPLICATION_BYTES_OUT, size)
                continue
            topic = self._topic(image, name, topic_id, params.version)
            if topic is not None:
                stats.mark(topic.name, BYTES_OUT, size)

    @staticmethod
    def _topic(image, name: str, topic_id, version: int):
        if image is None:
            return None
        return image.topics_by_id.get(topic_id) if version >= 13 else image.topics_by_name.get(name)

    def _fetch_partition(self, image, topic, p, params: "FetchParams", budget: int, min_one: bool):
        data = PartitionData(partition_index=p.partition, high_watermark=-1, records=b"")
        code, partition, leader_epoch, leads = self._replica(topic, p.partition, params.version)
        if code == Errors.NONE:         # Partition.getLocalLog: the epoch first, then the leader
            code = epoch_error(getattr(p, "current_leader_epoch", -1), leader_epoch)
        if code == Errors.NONE and not leads and params.only_leader:
            code = Errors.NOT_LEADER_OR_FOLLOWER
        if code != Errors.NONE:
            data.error_code = code
            if code not in UNKNOWN_PARTITION:    # ReplicaManager's error answers carry no aborted list
                data.aborted_transactions = None
            return data
        limit = min(p.partition_max_bytes, budget)
        try:
            return self._read(image, topic, partition, p, params, limit, min_one, leads, data)
        except OSError as exc:       # KafkaStorageException: the directory goes offline (createLogReadResult)
            storage_failure(self.broker, partition, "read", exc)
            data.error_code, data.records, data.aborted_transactions = Errors.KAFKA_STORAGE_ERROR, b"", None
            data.high_watermark = data.last_stable_offset = data.log_start_offset = -1
            return data

    def _read(self, image, topic, partition, p, params, limit: int, min_one: bool, leads: bool, data):
        """The partition's read for a follower or a consumer (or the preferred read replica)."""
        if params.follower is not None:
            data = self.broker.replication.read_for_follower(
                partition, p, params.follower[0], params.follower[1], limit=limit, min_one=min_one,
                update_state=params.record_follower, in_file=params.in_file)
            if data.records and self._leader_throttles(partition, topic.name, p.partition, params.follower[0]):
                data.records = b""          # readFromLog: a throttled partition's read is answered empty
            return data
        if leads and params.client is not None:
            preferred = self._preferred_read_replica(image, partition, p.fetch_offset, params.client)
            if preferred is not None:       # no read: the consumer goes to that replica
                log.debug("Replica selector RackAwareReplicaSelector returned preferred replica %d for "
                          "%s-%d (client rack %r, listener %s)", preferred, topic.name, p.partition,
                          params.client[0], params.client[1])
                data.preferred_read_replica = preferred
                data.high_watermark, data.last_stable_offset = partition.high_watermark(), \
                    partition.last_stable_offset()
                data.log_start_offset = partition.log.log_start_offset
                data.aborted_transactions = None
                return data
        return self._read_for_consumer(partition, p, params, limit, min_one, data)

    def _leader_throttles(self, partition, topic: str, index: int, replica_id: int) -> bool:
        """ReplicaManager.shouldLeaderThrottle: a follower out of the ISR, a partition throttled
        on this leader, and the leader replication quota exceeded."""
        quota = self.broker.leader_quota
        if not quota.is_throttled(topic, index) or not quota.is_quota_exceeded():
            return False
        replicas = partition.replicas
        return replicas is None or replica_id not in replicas.state.isr

    def _record_replication(self, answer, version: int) -> None:
        """KafkaApis.sizeOfThrottledPartitions: the size of a follower's answer over its throttled
        partitions, recorded against the leader replication quota (in-sync followers' too)."""
        quota, image = self.broker.leader_quota, self.broker.image()
        throttled = []
        for topic_response in answer.responses:
            topic = self._topic(image, topic_response.topic, topic_response.topic_id, version)
            name = getattr(topic, "name", None)
            partitions = [] if name is None else \
                [data for data in topic_response.partitions if quota.is_throttled(name, data.partition_index)]
            if partitions:
                throttled.append(FetchableTopicResponse(topic=topic_response.topic, topic_id=topic_response.topic_id,
                                                        partitions=partitions))
        if throttled:
            quota.record(fetch_response_size(FetchResponse(responses=throttled), version))

    @staticmethod
    def _read_for_consumer(partition, p, params: "FetchParams", limit: int, min_one: bool, data):
        """UnifiedLog.read with FetchIsolation HIGH_WATERMARK or TXN_COMMITTED, on the leader or a
        follower (its own high watermark and last stable offset), after Partition.readRecords'
        check of the last fetched epoch: a consumer that read past where this log's epoch ends
        (an unclean election truncated it) gets the diverging epoch, no records and no aborted list."""
        hw, start = partition.high_watermark(), partition.log.log_start_offset
        try:     # the diverging epoch first: the consumer's offset may be past this log's end
            diverging = partition.diverging_epoch(p.fetch_offset, getattr(p, "last_fetched_epoch", -1))
            out_of_range = diverging is None and not start <= p.fetch_offset <= partition.log.log_end_offset
        except OffsetOutOfRangeError:
            diverging, out_of_range = None, True
        if out_of_range:
            data.error_code, data.aborted_transactions = Errors.OFFSET_OUT_OF_RANGE, None
            return data
        data.high_watermark = hw
        data.last_stable_offset = partition.last_stable_offset()
        data.log_start_offset = start
        if diverging is not None:
            data.diverging_epoch = EpochEndOffset(epoch=diverging[0], end_offset=diverging[1])
            data.aborted_transactions = None
            return data
        committed = params.isolation_level == READ_COMMITTED
        data.aborted_transactions = [] if committed else None
        if p.fetch_offset >= hw or (limit <= 0 and not min_one):
            return data
        try:
            if committed:
                data.records, aborted = partition.read_committed(p.fetch_offset, max(limit, 0), min_one_batch=min_one,
                                                                 in_file=params.in_file)
                data.aborted_transactions = [AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                                             for a in aborted]
            else:
                data.records = partition.read(p.fetch_offset, max(limit, 0), min_one_batch=min_one,
                                              in_file=params.in_file)
        except OffsetOutOfRangeError:
            data.error_code, data.aborted_transactions, data.records = Errors.OFFSET_OUT_OF_RANGE, None, b""
            data.high_watermark = data.last_stable_offset = data.log_start_offset = -1
        return data

    def _replica(self, topic, index: int, version: int):
        """(NONE, the local replica's partition, the leader epoch it knows, whether it leads) when
        this broker hosts the partition (leads or follows it), else (the error, None, -1, False)."""
        if topic is None:
            return (Errors.UNKNOWN_TOPIC_ID if version >= 13 else Errors.UNKNOWN_TOPIC_OR_PARTITION), None, -1, False
        registration = topic.partitions.get(index)
        if registration is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, None, -1, False
        if is_offline_replica(self.broker, (topic.name, index), topic):
            return Errors.KAFKA_STORAGE_ERROR, None, -1, False
        partition = self.broker.partitions.get((topic.name, index))
        if registration.leader == self.broker.node_id and partition is not None:
            return Errors.NONE, partition, partition.leader_epoch, True
        follower = self.broker.replica_roles.followers.get((topic.name, index))
        if follower is not None and follower.partition.topic_id == topic.id:
            return Errors.NONE, follower.partition, follower.leader_epoch, False
        return Errors.NOT_LEADER_OR_FOLLOWER, None, -1, False

    def _preferred_read_replica(self, image, partition, fetch_offset: int, client: tuple) -> int | None:
        """ReplicaManager.findPreferredReadReplica for a consumer's fetch on the leader."""
        replicas = partition.replicas
        if self.selector is None or replicas is None:
            return None
        rack, listener = client
        isr = replicas.state.isr          # Partition.inSyncReplicaIds: the committed ISR
        followers = [FollowerView(broker_id, broker_id in isr, f.log_start_offset, f.log_end_offset,
                                  f.last_caught_up_time_ms, _endpoint_rack(image, broker_id, listener))
                     for broker_id, f in replicas.followers.items()]
        return preferred_read_replica(
            self.selector, leader_id=self.broker.node_id, leader_log_end=partition.log.log_end_offset,
            leader_rack=_endpoint_rack(image, self.broker.node_id, listener), followers=followers,
            client_rack=rack, fetch_offset=fetch_offset, now_ms=self.broker.replication.clock())

    # -- ListOffsets --

    async def list_offsets(self, ctx, request):
        image = self.broker.image()
        topics = []
        for t in request.topics:
            topic = None if image is None else image.topics_by_name.get(t.name)
            partitions = []
            for p in t.partitions:
                r = ListOffsetsPartitionResponse(partition_index=p.partition_index, timestamp=-1, offset=-1)
                code, partition, leader_epoch, leads = self._replica(topic, p.partition_index, 0)
                if code == Errors.NONE:         # the epoch first, then the leader (fetchOnlyFromLeader)
                    code = epoch_error(p.current_leader_epoch, leader_epoch)
                if code == Errors.NONE and not leads:
                    code = Errors.NOT_LEADER_OR_FOLLOWER
                r.error_code = code
                if code == Errors.NONE:         # read_committed consumers see up to the last stable offset
                    visible = partition.last_stable_offset() if request.isolation_level == READ_COMMITTED \
                        else partition.high_watermark()
                    list_offset(partition.log, partition.epochs, visible, partition.leader_epoch,
                                ctx.api_version, p.timestamp, r)
                partitions.append(r)
            topics.append(ListOffsetsTopicResponse(name=t.name, partitions=partitions))
        return ListOffsetsResponse(topics=topics)


def _endpoint_rack(image, broker_id: int, listener: str):
    """MetadataCache.getPartitionReplicaEndpoints for one replica: (its rack,) when its broker is
    registered, unfenced and has an endpoint on ``listener``, else None."""
    b = None if image is None else image.brokers.get(broker_id)
    if b is None or b.fenced or listener not in b.listeners:
        return None
    return (b.rack,)


def _by_topic(updates: list) -> list:
    """The answer's topics: consecutive partitions of one topic grouped, as Kafka's FetchResponse.of."""
    responses = []
    for name, topic_id, data in updates:
        if not responses or responses[-1].topic != name or responses[-1].topic_id != topic_id:
            responses.append(FetchableTopicResponse(topic=name, topic_id=topic_id, partitions=[]))
        responses[-1].partitions.append(data)
    return responses
