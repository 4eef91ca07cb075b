"""The replica fetchers of a broker: Kafka's ReplicaFetcherManager, AbstractFetcherThread and
ReplicaFetcherThread, one asyncio task per (leader broker, fetcher id).

    manager = ReplicaFetcherManager(settings, client, endpoint_of=..., broker_epoch=...)
    manager.apply({key: (follower, topic_id), ...})    # after each metadata change
    await manager.close()

A followed partition goes to fetcher ``abs(31 * topic.hashCode() + partition) % num.replica.fetchers``
of its leader (AbstractFetcherManager.getFetcherId). A fetcher sends its leader one request at a
time, on the inter-broker listener: Fetch at the newest version both sides know, in an incremental
fetch session from v7 on (KIP-227, kafkawire.broker.fetch_session_client: after the first, full,
request each names only the partitions whose fetch state changed, as Kafka's FetchSessionHandler
builds them), ReplicaState (replica id = this broker, replica epoch = its broker epoch),
READ_UNCOMMITTED, ``replica.fetch.wait.max.ms``, ``replica.fetch.min.bytes``,
``replica.fetch.response.max.bytes`` in all and ``replica.fetch.max.bytes`` per partition, and per
partition the fetch offset (the local log end), the current leader epoch, the last fetched epoch
and the local log start offset. What comes back is appended as follower
(kafkawire.broker.follower).

A partition starts fetching at its log end with its latest epoch as the last fetched epoch (the
leader then finds a divergence, KIP-595's truncation on fetch); one whose log has no epoch is
first truncated to its high watermark (truncateToHighWatermark). A DivergingEpoch in the answer
truncates as getOffsetTruncationState says; when that is not final (the leader's epoch is unknown
here) the partition asks the leader with OffsetForLeaderEpoch before fetching again.
OFFSET_OUT_OF_RANGE asks the leader's latest offset (ListOffsets as a replica): a leader that
ends below the local end is truncated to; otherwise the leader's log start, and a local log
ending below it starts again empty there (handleOutOfRangeError, fetchOffsetAndTruncate).

Errors: FENCED_LEADER_EPOCH stops the partition until the metadata gives it a new epoch
(onPartitionFenced); NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, unknown topics and the other
partition errors, a connection that fails and a leader with no known endpoint delay the partitions
by ``replica.fetch.backoff.ms`` (delayPartitions). A fetcher with nothing ready waits for the
earliest delay or a new partition; it never spins.

The follower replication quota (kafkawire.broker.replication_quotas): a partition throttled on
this follower that has not caught up with its leader's high watermark is left out of the fetch
while the quota is exceeded (RemoteLeaderEndPoint.shouldFollowerThrottle); with every ready
partition left out, the fetcher waits ``replica.fetch.backoff.ms``. The records fetched for a
throttled partition are recorded against the quota, caught up or not.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic, ReplicaState
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.offset_for_leader_epoch_request import (OffsetForLeaderEpochRequest, OffsetForLeaderPartition,
                                                                OffsetForLeaderTopic)
from kafkawire.net.client import TransportError, UnsupportedVersion
from kafkawire.protocol.error_codes import Errors

from .fetch_session_client import FINAL_EPOCH, FetchSessionClient, PartitionFetch
from .follower import FollowerAppendError, FollowerReplica, offset_truncation_state
from .log_dir_failure import LogTruncationError
from .group_records import java_string_hash

__all__ = ["FetcherSettings", "PartitionFetchState", "ReplicaFetcher", "ReplicaFetcherManager", "fetcher_id"]

log = logging.getLogger(__name__)

LATEST_TIMESTAMP, EARLIEST_TIMESTAMP = -1, -2
FETCH = 1
FETCH_VERSION = FetchRequest.VALID_VERSIONS[1]      # the newest this side knows
REPLICA_STATE_VERSION = 15                          # KIP-903: ReplicaState instead of ReplicaId
SESSION_VERSION = 7                                 # KIP-227: incremental fetch sessions
FOREVER = float("inf")


@dataclass(frozen=True)
class FetcherSettings:
    """ReplicationConfigs' fetcher settings, with Kafka's defaults."""
    replica_id: int
    num_fetchers: int = 1                      # num.replica.fetchers
    max_bytes: int = 1024 * 1024               # replica.fetch.max.bytes (per partition)
    response_max_bytes: int = 10 * 1024 * 1024  # replica.fetch.response.max.bytes
    wait_max_ms: int = 500                     # replica.fetch.wait.max.ms
    min_bytes: int = 1                         # replica.fetch.min.bytes
    backoff_ms: int = 1000                     # replica.fetch.backoff.ms
    request_timeout_ms: int = 30_000           # replica.socket.timeout.ms


def fetcher_id(topic: str, partition: int, num_fetchers: int) -> int:
    """AbstractFetcherManager.getFetcherId: Utils.abs(31 * topic.hashCode() + partition) % numFetchers."""
    h = (31 * java_string_hash(topic) + partition) & 0xFFFFFFFF
    h = h - (1 << 32) if h & 0x80000000 else h
    return (0 if h == -(1 << 31) else abs(h)) % num_fetchers


@dataclass
class PartitionFetchState:
    """Kafka's PartitionFetchState: where the next fetch starts, in which leader epoch, and
    whether the partition is truncating (asks OffsetForLeaderEpoch) or fenced (waits for metadata)."""
    follower: FollowerReplica
    topic_id: object
    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int = -1
    truncating: bool = False
    fenced: bool = False
    delayed_until: float = 0.0
    lag: int | None = None          # the leader's high watermark less the fetch offset, once known

    @property
    def in_sync(self) -> bool:
        """PartitionFetchState.isReplicaInSync: caught up with the leader's high watermark."""
        return self.lag is not None and self.lag <= 0

    def ready(self, now: float) -> bool:
        return not self.fenced and self.delayed_until <= now

    def fetch_from_log_end(self) -> None:
        """Fetching again at the local log end, its latest epoch as the last fetched one."""
        self.fetch_offset = self.follower.log.log_end_offset
        self.last_fetched_epoch = self.follower.latest_epoch()
        self.truncating = False


def initial_fetch_state(follower: FollowerReplica, topic_id) -> PartitionFetchState:
    """ReplicaManager.makeFollowers' InitialFetchState: from the log end with its latest epoch; a
    log without epochs first truncated to the high watermark (AbstractFetcherThread.truncateToHighWatermark)."""
    if follower.latest_epoch() < 0:
        follower.truncate_to(follower.high_watermark)
    state = PartitionFetchState(follower, topic_id, 0, follower.leader_epoch)
    state.fetch_from_log_end()
    return state


class ReplicaFetcher:
    """One fetcher: the partitions it fetches from ``leader_id`` and the task that fetches them.
    ``endpoint()`` gives the leader's (host, port) on the inter-broker listener, or None."""

    def __init__(self, settings: FetcherSettings, client, leader_id: int, endpoint, broker_epoch, *, clock=None,
                 on_bytes_in=None, quota=None, on_storage_error=None):
        self.settings = settings
        self.quota = quota              # the follower ReplicationQuota, or None
        self.client = client
        self.leader_id = leader_id
        self.endpoint = endpoint
        self.broker_epoch = broker_epoch
        self.clock = clock or time.monotonic
        self.on_bytes_in = on_bytes_in or (lambda size: None)     # ReplicationBytesIn (kafkawire.broker.metrics)
        # (follower, OSError): an I/O error appending to a follower's log (its directory goes offline)
        self.on_storage_error = on_storage_error or (lambda follower, error: log.error("appending to %s: %s",
                                                                                        follower.name, error))
        self.partitions: dict[tuple[str, int], PartitionFetchState] = {}
        self.session = FetchSessionClient()          # KIP-227, with Fetch v7+ (fetch_session_client)
        self._wake = asyncio.Event()
        self.task: asyncio.Task | None = None

    # -- the partitions (ReplicaFetcherManager.addFetcherForPartitions / removeFetcherForPartitions) --

    def set_partitions(self, wanted: dict) -> None:
        """``wanted``: key -> (FollowerReplica, topic id). New ones (or a new leader epoch, or another
        log) start again from their log end; the others are dropped."""
        for key in [k for k in self.partitions if k not in wanted]:
            del self.partitions[key]
        for key, (follower, topic_id) in wanted.items():
            state = self.partitions.get(key)
            if state is None or state.follower is not follower or state.current_leader_epoch != follower.leader_epoch:
                try:
                    self.partitions[key] = initial_fetch_state(follower, topic_id)
                except LogTruncationError as exc:      # markPartitionFailed; the directory fails after this update
                    self.partitions.pop(key, None)
                    asyncio.get_running_loop().call_soon(self.on_storage_error, follower, exc)
        self._wake.set()

    def start(self) -> None:
        self.task = asyncio.ensure_future(self.run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    # -- the loop (AbstractFetcherThread.doWork) --

    async def run(self) -> None:
        while True:
            try:
                await self.do_work()
            except asyncio.CancelledError:
                raise
            except Exception:            # never a dead fetcher: log, back off, go on
                log.exception("replica fetcher for broker %d failed; backing off", self.leader_id)
                self._delay(list(self.partitions.values()))
                await asyncio.sleep(self.settings.backoff_ms / 1000)

    async def do_work(self) -> None:
        """One round: OffsetForLeaderEpoch for the truncating partitions, else one Fetch; with
        nothing ready, wait for the earliest delay or a change of partitions."""
        now = self.clock()
        ready = [s for s in self.partitions.values() if s.ready(now)]
        if not ready:
            await self._wait(now)
            return
        peer = self.endpoint()
        if peer is None:
            log.warning("replica fetcher: no endpoint of leader %d on the inter-broker listener", self.leader_id)
            self._delay(ready)
            return
        truncating = [s for s in ready if s.truncating]
        fetching = [] if truncating else [s for s in ready if not self._throttled(s)]
        if not truncating and not fetching:         # all held back by the follower quota
            await self._pause()
            return
        try:
            if truncating:
                await self.truncate_by_epochs(peer, truncating)
            else:
                await self.fetch(peer, fetching)
        except TransportError as exc:
            log.info("replica fetcher: fetch from broker %d failed: %s", self.leader_id, exc)
            self._delay(truncating or ready)

    async def _wait(self, now: float) -> None:
        self._wake.clear()
        delays = [s.delayed_until for s in self.partitions.values() if not s.fenced]
        timeout = max(min(delays) - now, 0.0) if delays else None
        try:
            async with asyncio.timeout(timeout):
                await self._wake.wait()
        except asyncio.TimeoutError:
            pass

    def _throttled(self, state: PartitionFetchState) -> bool:
        quota, partition = self.quota, state.follower.partition
        return quota is not None and not state.in_sync and quota.is_throttled(partition.topic, partition.partition) \
            and quota.is_quota_exceeded()

    async def _pause(self) -> None:
        """Kafka's partitionMapCond.await(fetchBackOffMs) when it has nothing to fetch."""
        self._wake.clear()
        try:
            async with asyncio.timeout(self.settings.backoff_ms / 1000):
                await self._wake.wait()
        except asyncio.TimeoutError:
            pass

    def _delay(self, states) -> None:
        until = self.clock() + self.settings.backoff_ms / 1000
        for state in states:
            state.delayed_until = until

    # -- Fetch --

    def build_fetch(self, states: list[PartitionFetchState], version: int = FETCH_VERSION) -> FetchRequest:
        """ReplicaFetcherThread.buildFetch for Fetch ``version``: from v7 on through the fetch
        session (only what changed since the last request, the rest forgotten or kept by the
        leader), before it session-less; the replica id in ReplicaState from v15 on, in the
        top-level field before."""
        s = self.settings
        wanted = {}
        for state in states:
            follower = state.follower
            wanted[(follower.partition.topic, follower.partition.partition)] = PartitionFetch(
                state.topic_id, state.fetch_offset, follower.log.log_start_offset, s.max_bytes,
                state.current_leader_epoch, state.last_fetched_epoch)
        if version >= SESSION_VERSION:
            plan = self.session.build(wanted)
            session_id, epoch, to_send, forgotten = plan.session_id, plan.epoch, plan.to_send, plan.forgotten
        else:
            session_id, epoch, to_send, forgotten = 0, FINAL_EPOCH, list(wanted), []
        topics: dict[str, FetchTopic] = {}
        for key in to_send:
            data = wanted[key]
            topic = topics.get(key[0])
            if topic is None:
                topic = topics[key[0]] = FetchTopic(topic=key[0], topic_id=data.topic_id)
            topic.partitions.append(FetchPartition(
                partition=key[1], current_leader_epoch=data.current_leader_epoch, fetch_offset=data.fetch_offset,
                last_fetched_epoch=data.last_fetched_epoch, log_start_offset=data.log_start_offset,
                partition_max_bytes=data.max_bytes))
        gone: dict[tuple, ForgottenTopic] = {}
        for (name, index), topic_id in forgotten:
            entry = gone.get((name, topic_id))
            if entry is None:
                entry = gone[(name, topic_id)] = ForgottenTopic(topic=name, topic_id=topic_id, partitions=[])
            entry.partitions.append(index)
        request = FetchRequest(max_wait_ms=s.wait_max_ms, min_bytes=s.min_bytes, max_bytes=s.response_max_bytes,
                               isolation_level=0, session_id=session_id, session_epoch=epoch,
                               topics=list(topics.values()), forgotten_topics_data=list(gone.values()))
        if version >= REPLICA_STATE_VERSION:
            request.replica_state = ReplicaState(replica_id=s.replica_id, replica_epoch=self.broker_epoch())
        else:
            request.replica_id = s.replica_id
        return request

    async def fetch(self, peer, states: list[PartitionFetchState]) -> None:
        versions = await self.client.connect(peer, timeout_ms=self.settings.request_timeout_ms)
        if FETCH not in versions:
            raise UnsupportedVersion(peer, "the leader does not serve Fetch")
        version = min(FETCH_VERSION, versions[FETCH][1])
        request = self.build_fetch(states, version)
        sent = {(s.follower.partition.topic, s.follower.partition.partition): (s, s.fetch_offset) for s in states}
        timeout_ms = self.settings.request_timeout_ms + self.settings.wait_max_ms
        try:
            response = await self.client.send(peer, request, api_version=version, timeout_ms=timeout_ms)
        except BaseException:        # unanswered (failed, timed out, cancelled): the session is unknown
            self.session.handle_error()
            raise
        if not self.use_answer(response, version, states):
            return
        out_of_range = self.handle_fetch_response(response, sent)
        for state in out_of_range:
            await self.handle_out_of_range(peer, state)

    def use_answer(self, response, version: int, states: list) -> bool:
        """Whether the answer's partitions are to be applied (RemoteLeaderEndPoint.fetch): not on a
        top-level error (logged, the partitions delayed) nor when the fetch session finds it
        invalid (logged; the next request is full)."""
        usable = version < SESSION_VERSION or self.session.handle_response(
            response.error_code, response.session_id, response.responses, version, response.throttle_time_ms)
        if response.error_code != Errors.NONE:
            # FetchSessionHandler.handleResponse's line, naming the error.
            log.info("replica fetcher: broker %d was unable to process the fetch request: %s", self.leader_id,
                     Errors.for_code(response.error_code).name)
            self._delay(states)
            return False
        if not usable and self.session.problem is not None:
            log.info("replica fetcher: broker %d sent %s", self.leader_id, self.session.problem)
        return usable

    def handle_fetch_response(self, response, sent: dict) -> list[PartitionFetchState]:
        """Apply each partition's answer (AbstractFetcherThread.processFetchRequest); the partitions
        that were OFFSET_OUT_OF_RANGE, for handle_out_of_range. An answer for a partition whose
        state moved since the request (or that was not asked) is ignored."""
        by_id = {state.topic_id: key[0] for key, (state, _) in sent.items()}
        out_of_range = []
        for topic in response.responses:
            name = by_id.get(topic.topic_id, topic.topic) if topic.topic_id is not None else topic.topic
            for data in topic.partitions:
                key = (name, data.partition_index)
                state, offset = sent.get(key, (None, None))
                if state is None or self.partitions.get(key) is not state or state.fetch_offset != offset:
                    continue
                if data.error_code == Errors.OFFSET_OUT_OF_RANGE:
                    out_of_range.append(state)
                else:
                    self.process_partition(state, data)
        return out_of_range

    def process_partition(self, state: PartitionFetchState, data) -> None:
        code = data.error_code
        if code != Errors.NONE:
            self.partition_error(state, code)
            return
        diverging = data.diverging_epoch
        if diverging is not None and diverging.epoch >= 0:
            self.truncate(state, diverging.epoch, diverging.end_offset)
            return
        follower = state.follower
        try:
            info = follower.append(data.records or b"")
        except FollowerAppendError as exc:
            log.error("replica fetcher: %s", exc)
            self._delay([state])
            return
        except OSError as exc:          # KafkaStorageException: markPartitionFailed, the directory offline
            self.storage_failed(state, exc)
            return
        if info is not None:
            self.on_bytes_in(len(data.records))
            state.fetch_offset = info.last_offset + 1
            if info.last_leader_epoch >= 0:
                state.last_fetched_epoch = info.last_leader_epoch
        if info is not None or state.lag is None:       # processFetchRequest: validBytes > 0 or no lag yet
            state.lag = max(0, data.high_watermark - state.fetch_offset)
        partition = follower.partition
        if self.quota is not None and self.quota.is_throttled(partition.topic, partition.partition):
            self.quota.record(len(data.records or b""))
        follower.update_from_leader(high_watermark=data.high_watermark, log_start_offset=data.log_start_offset)

    def storage_failed(self, state: PartitionFetchState, error: OSError) -> None:
        """An I/O error appending to or truncating the partition's log: no longer fetched
        (markPartitionFailed) and its directory offline (``on_storage_error``)."""
        self.partitions = {key: s for key, s in self.partitions.items() if s is not state}
        self.on_storage_error(state.follower, error)

    def partition_error(self, state: PartitionFetchState, code: int) -> None:
        """FENCED_LEADER_EPOCH: stopped until new metadata; the rest: delayed (Kafka's partitionsWithError)."""
        name = state.follower.name
        if code == Errors.FENCED_LEADER_EPOCH:
            log.info("replica fetcher: %s is fenced in epoch %d by broker %d; waiting for new metadata", name,
                     state.current_leader_epoch, self.leader_id)
            state.fenced = True
            return
        log.info("replica fetcher: broker %d answered %s with error %s", self.leader_id, name, Errors.for_code(code).name)
        self._delay([state])

    # -- truncation --

    def truncate(self, state: PartitionFetchState, leader_epoch: int, leader_end_offset: int) -> None:
        """truncateOnFetchResponse / maybeTruncate for one partition: to where
        offset_truncation_state says, then fetching from there, or truncating again."""
        follower = state.follower
        decision = offset_truncation_state(follower.epochs, follower.log.log_end_offset, state.fetch_offset,
                                           leader_epoch, leader_end_offset)
        try:
            follower.truncate_to(decision.offset)
        except LogTruncationError as exc:
            self.storage_failed(state, exc)
            return
        if decision.completed:
            state.fetch_from_log_end()
        else:
            state.fetch_offset, state.truncating = min(decision.offset, follower.log.log_end_offset), True

    async def truncate_by_epochs(self, peer, states: list[PartitionFetchState]) -> None:
        """OffsetForLeaderEpoch for the truncating partitions (their latest local epochs)."""
        topics: dict[str, OffsetForLeaderTopic] = {}
        for state in states:
            p = state.follower.partition
            topic = topics.setdefault(p.topic, OffsetForLeaderTopic(topic=p.topic))
            topic.partitions.append(OffsetForLeaderPartition(partition=p.partition,
                                                             current_leader_epoch=state.current_leader_epoch,
                                                             leader_epoch=state.follower.latest_epoch()))
        keys = {(s.follower.partition.topic, s.follower.partition.partition): s for s in states}
        response = await self.client.send(peer, OffsetForLeaderEpochRequest(
            replica_id=self.settings.replica_id, topics=list(topics.values())),
            timeout_ms=self.settings.request_timeout_ms)
        for topic in response.topics:
            for answer in topic.partitions:
                state = keys.pop((topic.topic, answer.partition), None)
                if state is None or self.partitions.get((topic.topic, answer.partition)) is not state:
                    continue
                if answer.error_code != Errors.NONE:
                    self.partition_error(state, answer.error_code)
                else:
                    self.truncate(state, answer.leader_epoch, answer.end_offset)
        self._delay(keys.values())             # not answered

    async def handle_out_of_range(self, peer, state: PartitionFetchState) -> None:
        """fetchOffsetAndTruncate: to the leader's end when it is below ours; else from the larger of
        the leader's log start and our end, our log started again there when it ends below it."""
        follower = state.follower
        code, leader_end = await self._list_offset(peer, state, LATEST_TIMESTAMP)
        if code == Errors.NONE and leader_end >= follower.log.log_end_offset:
            code, leader_start = await self._list_offset(peer, state, EARLIEST_TIMESTAMP)
        if self.partitions.get(follower.key) is not state:       # dropped meanwhile: its log may be closed
            return
        if code != Errors.NONE:
            self.partition_error(state, code)
            return
        try:
            if leader_end < follower.log.log_end_offset:
                log.warning("%s: the fetch offset is reset to the leader's latest offset %d", follower.name, leader_end)
                follower.truncate_to(leader_end)
            elif leader_start > follower.log.log_end_offset:
                log.warning("%s: the log ends below the leader's log start %d: it starts again there", follower.name,
                            leader_start)
                follower.truncate_fully_and_start_at(leader_start)
        except LogTruncationError as exc:
            self.storage_failed(state, exc)
            return
        state.fetch_from_log_end()

    async def _list_offset(self, peer, state: PartitionFetchState, timestamp: int) -> tuple[int, int]:
        p = state.follower.partition
        response = await self.client.send(peer, ListOffsetsRequest(
            replica_id=self.settings.replica_id, isolation_level=0,
            topics=[ListOffsetsTopic(name=p.topic, partitions=[ListOffsetsPartition(
                partition_index=p.partition, current_leader_epoch=state.current_leader_epoch, timestamp=timestamp)])]),
            timeout_ms=self.settings.request_timeout_ms)
        for topic in response.topics:
            for answer in topic.partitions:
                if topic.name == p.topic and answer.partition_index == p.partition:
                    return answer.error_code, answer.offset
        return Errors.UNKNOWN_SERVER_ERROR, -1


@dataclass
class ReplicaFetcherManager:
    """The fetchers of one broker, keyed by (leader id, fetcher id); ``endpoint_of(leader_id)``
    gives a leader's (host, port) on the inter-broker listener, ``broker_epoch()`` this broker's."""
    settings: FetcherSettings
    client: object
    endpoint_of: object
    broker_epoch: object
    on_bytes_in: object = None      # called with the size of each batch set appended (ReplicationBytesIn)
    quota: object = None                # the follower ReplicationQuota (replication_quotas.py), or None
    on_storage_error: object = None     # (follower, OSError): an append's I/O error (ReplicaFetcher)
    fetchers: dict = field(default_factory=dict)

    def apply(self, followed: dict) -> None:
        """``followed``: key -> (FollowerReplica, topic id), every partition followed here; those
        whose leader is -1 (offline) are fetched by no one."""
        wanted: dict[tuple[int, int], dict] = {}
        for key, (follower, topic_id) in followed.items():
            if follower.leader_id < 0:
                continue
            fid = fetcher_id(key[0], key[1], self.settings.num_fetchers)
            wanted.setdefault((follower.leader_id, fid), {})[key] = (follower, topic_id)
        for fkey in [k for k in self.fetchers if k not in wanted]:
            fetcher = self.fetchers.pop(fkey)
            fetcher.partitions.clear()
            asyncio.ensure_future(fetcher.stop())
        for fkey, partitions in wanted.items():
            fetcher = self.fetchers.get(fkey)
            if fetcher is None:
                leader_id = fkey[0]
                fetcher = self.fetchers[fkey] = ReplicaFetcher(
                    self.settings, self.client, leader_id, lambda leader_id=leader_id: self.endpoint_of(leader_id),
                    self.broker_epoch, on_bytes_in=self.on_bytes_in, quota=self.quota,
                    on_storage_error=self.on_storage_error)
                fetcher.start()
            fetcher.set_partitions(partitions)

    async def close(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        for fetcher in fetchers:
            await fetcher.stop()
        await self.client.close()
