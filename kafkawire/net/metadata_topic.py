"""The __cluster_metadata topic, read-only, for ordinary Kafka clients: handlers for KafkaServer.

    topic = MetadataTopic(Log(".../__cluster_metadata-0"), cluster_id="...",
                          node=NodeEndpoint(1, "127.0.0.1", server.port),
                          high_watermark=lambda: raft.high_watermark)
    for key, handler in topic.handlers().items():
        server.register(key, handler)
    ...
    topic.high_watermark_advanced()        # wakes long-polling fetches

One partition, __cluster_metadata-0, led by this node, served from a kafkawire.storage.log.Log
with the caller's high watermark as the end consumers see (what a consumer of a Kafka topic
sees: committed data only). The topic id is the one in the directory's partition.metadata, or
Kafka's METADATA_TOPIC_ID (AAAAAAAAAAAAAAAAAAAAAQ) when there is none.

What each API answers, and why:

* Metadata (v0-13): the topic with its id, one partition, leader/replica/ISR = this node,
  the current leader epoch. Other names get UNKNOWN_TOPIC_OR_PARTITION (nothing is ever
  auto-created), other ids UNKNOWN_TOPIC_ID, illegal names INVALID_TOPIC_EXCEPTION.
* DescribeCluster (v0-2): this node, for either endpoint type.
* ListOffsets (v1-11, as Kafka 4 which dropped v0): earliest = log start offset, latest = the
  high watermark, by timestamp through the log's time indexes (only offsets below the high
  watermark count), max timestamp (v7+) by scanning the batches below the high watermark,
  earliest-local (v8+) = log start; latest-tiered (v9+) and earliest-pending-upload (v11)
  give offset -1 as a broker without tiered storage does.
* Fetch (v4-18, as Kafka 4): whole batches from the one holding the fetch offset up to the
  last batch that ends below the high watermark; partition and response byte limits with
  Kafka's "at least one batch" rule; long poll up to max_wait_ms (capped at
  ``max_wait_cap_ms``) until min_bytes are available; leader-epoch fencing and, when the
  request names last_fetched_epoch, Kafka's diverging-epoch answer. Fetch sessions: none are
  created, which is what a broker whose session cache is full does: a full fetch (epoch 0 or
  -1) is answered with session id 0 and every partition, and an incremental fetch (any other
  epoch) with FETCH_SESSION_ID_NOT_FOUND, after which clients fall back to full fetches.
  Measured: kafka-python 3.0 asks for a new session (epoch 0) on every fetch and carries on
  with session id 0; aiokafka 0.14, librdkafka 2.x (confluent-kafka) and kcat send epoch -1.
* Produce: the topic is read-only. Each partition gets INVALID_TOPIC_EXCEPTION "Cannot append
  to internal topic __cluster_metadata", Kafka's answer to a client producing to an internal
  topic (ReplicaManager.appendToLocalLog); it is not retriable, so producers fail at once
  instead of retrying until their delivery timeout. Other topics get
  UNKNOWN_TOPIC_OR_PARTITION. With acks=0 Kafka sends no response and closes the connection
  when the produce failed: so does this.
* InitProducerId: CLUSTER_AUTHORIZATION_FAILED (or TRANSACTIONAL_ID_AUTHORIZATION_FAILED with
  a transactional id), what a broker answers when the client may not write; fatal for
  producers, so they stop rather than retry.
* FindCoordinator: COORDINATOR_NOT_AVAILABLE for every key: this node runs no group or
  transaction coordinator.

Versions below Kafka 4's minimums (Fetch v0-3, Produce v0-2, ListOffsets v0) are not served:
they would need down-conversion to magic 0/1 message sets, which Kafka 4 removed too.
"""
from __future__ import annotations

import asyncio
import bisect
import logging
import os
import re
import time
import uuid
from dataclasses import dataclass
from typing import Callable

from kafkawire.protocol.error_codes import Errors
from kafkawire.storage.log import Log, OffsetOutOfRangeError
from kafkawire.net.install_aware_log import InstallAwareLog
from kafkawire.storage.state_files import StateFileError, read_partition_metadata

from kafkawire.protocol.handler import NO_RESPONSE, ApiHandler, CloseConnection
from kafkawire.messages.describe_cluster_response import DescribeClusterBroker, DescribeClusterResponse
from kafkawire.messages.fetch_response import EpochEndOffset, FetchResponse, FetchableTopicResponse, PartitionData
from kafkawire.messages.find_coordinator_response import Coordinator, FindCoordinatorResponse
from kafkawire.messages.init_producer_id_response import InitProducerIdResponse
from kafkawire.messages.list_offsets_response import (ListOffsetsPartitionResponse, ListOffsetsResponse,
                                                      ListOffsetsTopicResponse)
from kafkawire.messages.metadata_response import (MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
                                                  MetadataResponseTopic)
from kafkawire.messages.produce_response import PartitionProduceResponse, ProduceResponse, TopicProduceResponse

__all__ = ["MetadataTopic", "NodeEndpoint", "METADATA_TOPIC", "METADATA_TOPIC_ID", "EpochCache", "list_offset",
           "legal_topic_name", "invalid_topic_message", "epoch_error",
           "TOPIC_OPERATIONS", "CLUSTER_OPERATIONS", "INT32_MIN"]

log = logging.getLogger(__name__)

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
METADATA_TOPIC_ID = uuid.UUID(int=1)            # Kafka's Uuid.METADATA_TOPIC_ID, new Uuid(0L, 1L)
INT32_MIN = -(1 << 31)                           # "authorized operations not requested"
# ListOffsetsRequest special timestamps and the first version that may send each.
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
_TIMESTAMP_MIN_VERSION = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9, EARLIEST_PENDING_UPLOAD: 11}
# The AclOperation codes Kafka supports on a topic and on the cluster (AclEntry.supportedOperations),
# reported as authorized when asked (KIP-430), as a broker without an authorizer does.
# READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
# ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
MAX_TOPIC_NAME_LENGTH = 249                                               # Topic.MAX_NAME_LENGTH
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")                     # Kafka's Topic.validate


@dataclass(frozen=True)
class NodeEndpoint:
    """This node as clients should reach it (its advertised listener)."""
    node_id: int
    host: str
    port: int
    rack: str | None = None


class EpochCache:
    """(epoch, start offset) of each leader epoch in the log, from the batches' partition leader
    epoch, as Kafka's LeaderEpochFileCache holds them; extended as the log grows, rebuilt if it
    shrank."""

    def __init__(self, log_: Log | InstallAwareLog):
        self.log = log_
        self.epochs: list[int] = []
        self.starts: list[int] = []
        self.scanned_to = None

    def refresh(self) -> None:
        end = self.log.log_end_offset
        if self.scanned_to is not None and (end < self.scanned_to or self.log.log_start_offset > self.scanned_to):
            # Truncated, or emptied to start past what was scanned (a snapshot installed, whose
            # log holds none of the old epochs, as Kafka's truncateFullyAndStartAt clears its
            # cache): start over.
            self.epochs, self.starts, self.scanned_to = [], [], None
        if self.scanned_to == end:
            return
        start = self.log.log_start_offset if self.scanned_to is None else self.scanned_to
        for batch in self.log.batches(start):
            if batch.last_offset < start:
                continue
            epoch = getattr(batch, "partition_leader_epoch", -1)
            if epoch >= 0 and (not self.epochs or epoch > self.epochs[-1]):
                self.epochs.append(epoch)
                self.starts.append(batch.base_offset)
        self.scanned_to = end

    def latest(self) -> int:
        self.refresh()
        return self.epochs[-1] if self.epochs else -1

    def epoch_of(self, offset: int) -> int:
        self.refresh()
        i = bisect.bisect_right(self.starts, offset) - 1
        return self.epochs[i] if i >= 0 else -1

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """(largest epoch <= ``epoch``, its end offset), or (-1, -1) (Kafka's endOffsetFor)."""
        self.refresh()
        i = bisect.bisect_right(self.epochs, epoch) - 1
        if i < 0:
            return -1, -1
        end = self.starts[i + 1] if i + 1 < len(self.starts) else self.log.log_end_offset
        return self.epochs[i], end


class MetadataTopic:
    def __init__(self, log_: Log | InstallAwareLog, *, cluster_id: str, node: NodeEndpoint, high_watermark: Callable[[], int],
                 leader_epoch: Callable[[], int] | None = None, topic_id: uuid.UUID | None = None,
                 max_wait_cap_ms: int = 30_000, poll_interval_ms: int = 100,
                 active_controller: Callable[[], NodeEndpoint | None] | None = None):
        """``active_controller``: who leads the quorum (None while nobody is known to), named as
        the controller in Metadata and DescribeCluster; by default this node itself."""
        self.log = log_
        self.cluster_id = cluster_id
        self.node = node
        self._high_watermark = high_watermark
        self._epochs = EpochCache(log_)
        self._leader_epoch = leader_epoch or (lambda: max(self._epochs.latest(), 0))
        self.topic_id = topic_id or _topic_id_of(log_.directory)
        self.max_wait_cap_ms = max_wait_cap_ms
        self.poll_interval_ms = poll_interval_ms
        self._advanced: asyncio.Event | None = None
        self._active_controller = active_controller or (lambda: self.node)

    # -- state --

    def high_watermark(self) -> int:
        """The caller's high watermark, kept within [log start, log end]."""
        return max(min(self._high_watermark(), self.log.log_end_offset), self.log.log_start_offset)

    def high_watermark_advanced(self) -> None:
        """Wake the fetches waiting for data (call it when the high watermark moves)."""
        if self._advanced is not None:
            self._advanced.set()
            self._advanced = None

    async def _wait_for_data(self, timeout: float) -> None:
        if self._advanced is None:
            self._advanced = asyncio.Event()
        event = self._advanced
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
        except asyncio.TimeoutError:
            pass

    def handlers(self) -> dict[int, ApiHandler]:
        return {
            0: ApiHandler(self.produce, min_version=3),
            1: ApiHandler(self.fetch, min_version=4),
            2: ApiHandler(self.list_offsets, min_version=1),
            3: ApiHandler(self.metadata),
            10: ApiHandler(self.find_coordinator),
            22: ApiHandler(self.init_producer_id),
            60: ApiHandler(self.describe_cluster),
        }

    def _is_ours(self, name=None, topic_id=None) -> bool:
        return name == METADATA_TOPIC if topic_id is None or topic_id.int == 0 else topic_id == self.topic_id

    # -- Metadata --

    async def metadata(self, ctx, request):
        v = ctx.api_version
        wanted = request.topics
        if wanted is None or (v == 0 and not wanted):            # v0: an empty list means every topic
            wanted = [None]
        topics = []
        for t in wanted:
            name = METADATA_TOPIC if t is None else t.name
            topic_id = None if t is None else t.topic_id
            if self._is_ours(name, topic_id):
                epoch = self._leader_epoch()
                node_id = self.node.node_id
                partition = MetadataResponsePartition(partition_index=METADATA_PARTITION, leader_id=node_id,
                                                      leader_epoch=epoch, replica_nodes=[node_id],
                                                      isr_nodes=[node_id], offline_replicas=[])
                topics.append(MetadataResponseTopic(
                    name=METADATA_TOPIC, topic_id=self.topic_id, is_internal=False, partitions=[partition],
                    topic_authorized_operations=TOPIC_OPERATIONS if request.include_topic_authorized_operations
                    else INT32_MIN))
            elif name is None:
                topics.append(MetadataResponseTopic(error_code=Errors.UNKNOWN_TOPIC_ID, name=None if v >= 12 else "",
                                                    topic_id=topic_id, partitions=[]))
            else:
                code = Errors.UNKNOWN_TOPIC_OR_PARTITION if legal_topic_name(name) else Errors.INVALID_TOPIC_EXCEPTION
                topics.append(MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id or uuid.UUID(int=0),
                                                    partitions=[]))
        controller_id, nodes = self._nodes()
        return MetadataResponse(
            brokers=[MetadataResponseBroker(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack) for n in nodes],
            cluster_id=self.cluster_id, controller_id=controller_id, topics=topics,
            cluster_authorized_operations=CLUSTER_OPERATIONS if getattr(
                request, "include_cluster_authorized_operations", False) and 8 <= v <= 10 else INT32_MIN)

    def _nodes(self) -> tuple[int, list[NodeEndpoint]]:
        """The controller id to name and the nodes to list: this node (which serves its copy of
        the log) and the active controller, so that a client can reach the one it is told leads
        (kafka-python's admin sends its controller requests there)."""
        active = self._active_controller()
        nodes = [self.node]
        if active is not None and active.node_id != self.node.node_id:
            nodes.append(active)
        return (-1 if active is None else active.node_id), nodes

    # -- DescribeCluster --

    async def describe_cluster(self, ctx, request):
        controller_id, nodes = self._nodes()
        return DescribeClusterResponse(
            endpoint_type=request.endpoint_type, cluster_id=self.cluster_id, controller_id=controller_id,
            brokers=[DescribeClusterBroker(broker_id=n.node_id, host=n.host, port=n.port, rack=n.rack) for n in nodes],
            cluster_authorized_operations=CLUSTER_OPERATIONS if request.include_cluster_authorized_operations
            else INT32_MIN)

    # -- ListOffsets --

    async def list_offsets(self, ctx, request):
        topics = []
        for t in request.topics:
            partitions = []
            for p in t.partitions:
                r = ListOffsetsPartitionResponse(partition_index=p.partition_index)
                if t.name != METADATA_TOPIC or p.partition_index != METADATA_PARTITION:
                    r.error_code = Errors.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    r.error_code = self._epoch_error(p.current_leader_epoch)
                    if r.error_code == Errors.NONE:
                        list_offset(self.log, self._epochs, self.high_watermark(), self._leader_epoch(), ctx.api_version,
                                    p.timestamp, r)
                partitions.append(r)
            topics.append(ListOffsetsTopicResponse(name=t.name, partitions=partitions))
        return ListOffsetsResponse(topics=topics)

    def _epoch_error(self, current_leader_epoch: int) -> int:
        """Kafka's leader-epoch fencing of a request's current leader epoch (-1: not checked)."""
        return epoch_error(current_leader_epoch, self._leader_epoch())

    # -- Fetch --

    async def fetch(self, ctx, request):
        v = ctx.api_version
        if v >= 7 and not (request.session_epoch in (0, -1)):
            # No session was ever created here (FetchManager.newContext's SessionErrorContext).
            return FetchResponse(error_code=Errors.FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[])
        wait = min(max(request.max_wait_ms, 0), self.max_wait_cap_ms) / 1000
        deadline = time.monotonic() + wait
        read_at = None
        while True:
            # A waiting fetch reads the log again only when what it may see has changed (the
            # high watermark, the log start, the leader epoch), as Kafka's DelayedFetch compares
            # positions instead of reading: an idle long poll costs no reads.
            view = (self.high_watermark(), self.log.log_start_offset, self._leader_epoch())
            if view != read_at:
                responses, total, errors = self._fetch_once(request, v)
                read_at = view
            remaining = deadline - time.monotonic()
            if total >= request.min_bytes or errors or remaining <= 0:
                return FetchResponse(error_code=Errors.NONE, session_id=0, responses=responses)
            await self._wait_for_data(min(remaining, self.poll_interval_ms / 1000))

    def _fetch_once(self, request, version):
        by_id = version >= 13
        budget = request.max_bytes if version >= 3 else 1 << 31
        total, errors = 0, False
        responses = []
        for t in request.topics:
            ours = self._is_ours(None if by_id else t.topic, t.topic_id if by_id else None)
            partitions = []
            for p in t.partitions:
                if not ours:
                    code = Errors.UNKNOWN_TOPIC_ID if by_id else Errors.UNKNOWN_TOPIC_OR_PARTITION
                    data = PartitionData(partition_index=p.partition, error_code=code, high_watermark=-1,
                                         records=b"")
                elif p.partition != METADATA_PARTITION:
                    data = PartitionData(partition_index=p.partition, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                         high_watermark=-1, records=b"")
                else:
                    data = self._fetch_partition(request, version, p, budget, min_one=(total == 0))
                    total += len(data.records)
                    budget -= len(data.records)
                if data.error_code:
                    errors = True
                partitions.append(data)
            responses.append(FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=partitions))
        return responses, total, errors

    def _fetch_partition(self, request, version, p, budget: int, min_one: bool):
        data = PartitionData(partition_index=p.partition, high_watermark=-1, records=b"")
        code = self._epoch_error(getattr(p, "current_leader_epoch", -1))
        if code:
            data.error_code = code
            return data
        hw = self.high_watermark()
        start, end = self.log.log_start_offset, self.log.log_end_offset
        if p.fetch_offset < start or p.fetch_offset > end:
            data.error_code = Errors.OFFSET_OUT_OF_RANGE
            return data
        data.high_watermark = hw
        data.last_stable_offset = hw       # no producer transactions in this log: LSO = HW
        data.log_start_offset = start
        data.aborted_transactions = [] if request.isolation_level == 1 else None
        last_fetched = getattr(p, "last_fetched_epoch", -1)
        if version >= 12 and last_fetched >= 0:
            # Partition.fetchRecords: a fetcher whose last epoch ended earlier here has diverged.
            epoch, epoch_end = self._epochs.end_offset_for(last_fetched)
            if epoch < 0:
                data.error_code = Errors.OFFSET_OUT_OF_RANGE
                return data
            if epoch < last_fetched or epoch_end < p.fetch_offset:
                data.diverging_epoch = EpochEndOffset(epoch=epoch, end_offset=epoch_end)
                return data
        limit = min(p.partition_max_bytes, budget) if version >= 3 else p.partition_max_bytes
        if p.fetch_offset >= hw or (limit <= 0 and not min_one):
            return data
        try:
            # The broker's read (Partition.read): the whole batches within the limit found from
            # their headers, cut below the high watermark, then read once.
            extent = self.log.read_extent(p.fetch_offset, max(limit, 0), min_one_batch=min_one, upper=hw)
        except OffsetOutOfRangeError:
            data.error_code = Errors.OFFSET_OUT_OF_RANGE
            data.high_watermark = data.last_stable_offset = data.log_start_offset = -1
            return data
        data.records = extent.read()
        return data

    # -- what a read-only node refuses --

    async def produce(self, ctx, request):
        by_id = ctx.api_version >= 13
        responses = []
        for t in request.topic_data:
            ours = self._is_ours(None if by_id else t.name, t.topic_id if by_id else None)
            partitions = []
            for p in t.partition_data:
                if ours and p.index == METADATA_PARTITION:
                    r = PartitionProduceResponse(index=p.index, error_code=Errors.INVALID_TOPIC_EXCEPTION,
                                                 base_offset=-1, error_message=f"Cannot append to internal topic "
                                                                               f"{METADATA_TOPIC}")
                else:
                    r = PartitionProduceResponse(index=p.index, base_offset=-1,
                                                 error_code=Errors.UNKNOWN_TOPIC_ID if by_id
                                                 else Errors.UNKNOWN_TOPIC_OR_PARTITION)
                partitions.append(r)
            responses.append(TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=partitions))
        if request.acks == 0:
            # KafkaApis.handleProduceRequest: no response for acks=0; on error, close the connection.
            if any(r.error_code for t in responses for r in t.partition_responses):
                raise CloseConnection("a produce request with acks=0 failed (the topic is read-only)")
            return NO_RESPONSE
        return ProduceResponse(responses=responses)

    async def init_producer_id(self, ctx, request):
        code = Errors.CLUSTER_AUTHORIZATION_FAILED if request.transactional_id is None \
            else Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)

    async def find_coordinator(self, ctx, request):
        message = "The coordinator is not available."
        if ctx.api_version >= 4:
            return FindCoordinatorResponse(coordinators=[
                Coordinator(key=key, node_id=-1, host="", port=-1, error_code=Errors.COORDINATOR_NOT_AVAILABLE,
                            error_message=message) for key in request.coordinator_keys])
        return FindCoordinatorResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE,
                                       error_message=message if ctx.api_version >= 1 else "",
                                       node_id=-1, host="", port=-1)


def list_offset(log_: Log, epochs: EpochCache, hw: int, leader_epoch: int, version: int, timestamp: int, r) -> None:
    """One ListOffsets partition answer (``r``) for a log whose consumers see up to ``hw``: the
    earliest, the latest (``hw``), by timestamp through the time indexes (below ``hw`` only), the
    max timestamp, or -1 for the tiered-storage timestamps (UnifiedLog.fetchOffsetByTimestamp)."""
    needed = _TIMESTAMP_MIN_VERSION.get(timestamp)
    if needed is not None and version < needed:
        r.error_code = Errors.UNSUPPORTED_VERSION
        return
    found = None
    if timestamp == LATEST:
        found = (-1, hw, leader_epoch)
    elif timestamp in (EARLIEST, EARLIEST_LOCAL):
        start = log_.log_start_offset
        found = (-1, start, epochs.epoch_of(start))
    elif timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        found = (-1, -1, -1)          # no tiered storage (UnifiedLog.fetchOffsetByTimestamp)
    elif timestamp == MAX_TIMESTAMP:
        found = _max_timestamp(log_, epochs, hw)
    else:
        hit = log_.find_offset_by_timestamp(timestamp)
        if hit is not None and hit[0] < hw:
            found = (hit[1], hit[0], epochs.epoch_of(hit[0]))
    if found is not None:
        r.timestamp, r.offset = found[0], found[1]
        if version >= 4:
            r.leader_epoch = found[2]


def _max_timestamp(log_: Log, epochs: EpochCache, hw: int):
    """The record with the largest timestamp in the log (the first of equals), if below ``hw``:
    Kafka looks over the whole log, then hides an answer at or above the high watermark."""
    best = None
    for segment in log_.segments:
        if segment.size == 0 or (best is not None and segment.max_timestamp <= best[0]):
            continue
        for _, batch in segment.batches():
            if best is None or batch.max_timestamp > best[0]:
                for record in batch:
                    if best is None or record.timestamp > best[0]:
                        best = (record.timestamp, record.offset)
    if best is None or best[1] >= hw:
        return (-1, -1, -1)
    return (best[0], best[1], epochs.epoch_of(best[1]))


def epoch_error(current_leader_epoch: int, ours: int) -> int:
    """Kafka's leader-epoch fencing of a request's current leader epoch (-1: not checked)."""
    if current_leader_epoch < 0:
        return Errors.NONE
    if current_leader_epoch > ours:
        return Errors.UNKNOWN_LEADER_EPOCH
    if current_leader_epoch < ours:
        return Errors.FENCED_LEADER_EPOCH
    return Errors.NONE


def legal_topic_name(name: str) -> bool:
    """Kafka's Topic.validate, as a yes or no."""
    return bool(_LEGAL_TOPIC.match(name)) and name not in (".", "..")


def invalid_topic_message(name: str) -> str | None:
    """Kafka 4.3's Topic.validate message (InvalidTopicException) for an illegal name, None for a legal one."""
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_TOPIC_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
    elif not _LEGAL_TOPIC.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    else:
        return None
    return f"Topic name is invalid: {reason}"


def _topic_id_of(directory) -> uuid.UUID:
    path = os.path.join(directory, "partition.metadata")
    if not os.path.exists(path):
        return METADATA_TOPIC_ID
    try:
        return read_partition_metadata(path)
    except (StateFileError, OSError) as exc:
        log.warning("ignoring %s: %s; using Kafka's metadata topic id", path, exc)
        return METADATA_TOPIC_ID
