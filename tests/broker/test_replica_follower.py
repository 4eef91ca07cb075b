"""The follower side of replication, in process and without sockets (kafkawire.broker.follower,
kafkawire.broker.replica_fetcher): appending the leader's batches as follower, the high watermark
and log start taken from the leader, Kafka's truncation rules (getOffsetTruncationState, a Fetch
answer's DivergingEpoch, OffsetForLeaderEpoch, OFFSET_OUT_OF_RANGE's fetchOffsetAndTruncate), the
partition errors and backoffs of the fetcher and the Fetch it builds. A fake client answers; a
fake clock says when a delayed partition is ready again.
"""
from __future__ import annotations

import asyncio
import os
import struct
import uuid

import pytest

from kafkawire.broker.follower import FollowerAppendError, FollowerReplica, offset_truncation_state
from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.replica_fetcher import FetcherSettings, ReplicaFetcher, fetcher_id
from kafkawire.broker.txn_log import end_txn_marker_batch
from kafkawire.messages.fetch_response import (EpochEndOffset, FetchableTopicResponse, FetchResponse,
                                               PartitionData)
from kafkawire.messages.list_offsets_response import (ListOffsetsPartitionResponse, ListOffsetsResponse,
                                                      ListOffsetsTopicResponse)
from kafkawire.messages.offset_for_leader_epoch_response import (EpochEndOffset as LeaderEpochEnd,
                                                                 OffsetForLeaderEpochResponse,
                                                                 OffsetForLeaderTopicResult)
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch
from kafkawire.storage.leader_epoch_cache import LeaderEpochFileCache
from kafkawire.storage.state_files import EpochEntry

TOPIC_ID = uuid.UUID(int=7)
PEER = ("127.0.0.1", 9092)


def batch(offset: int, epoch: int, count: int = 1, **fields) -> bytes:
    return build_batch([(b"k%d" % i, b"v%d" % i) for i in range(count)], base_offset=offset,
                       partition_leader_epoch=epoch, **fields)


def at(data: bytes, offset: int, epoch: int) -> bytes:
    """A batch moved to ``offset`` in ``epoch`` (both outside the CRC, as a leader stamps them)."""
    out = bytearray(data)
    struct.pack_into(">q", out, 0, offset)
    struct.pack_into(">i", out, 12, epoch)
    return bytes(out)


def follower_at(tmp_path, name: str = "t", *, leader_epoch: int = 3) -> FollowerReplica:
    partition = LeaderPartition.open(str(tmp_path), name, 0, TOPIC_ID, leader_epoch=-1)
    return FollowerReplica(partition, leader_id=2, leader_epoch=leader_epoch)


def segment_bytes(follower: FollowerReplica) -> bytes:
    with open(follower.log.active_segment.log_path, "rb") as f:
        return f.read()


# -- appending as follower --

def test_append_as_follower_keeps_the_leaders_offsets_and_epochs_byte_for_byte(tmp_path):
    """UnifiedLog.appendAsFollower: nothing assigned, the bytes are the leader's; the epoch cache
    takes each batch's partition leader epoch at its base offset; the last epoch is reported."""
    follower = follower_at(tmp_path)
    leader_bytes = batch(0, 0, 3) + batch(3, 0, 2) + batch(5, 2, 4)
    info = follower.append(leader_bytes)
    assert (info.first_offset, info.last_offset, info.last_leader_epoch) == (0, 8, 2)
    assert segment_bytes(follower) == leader_bytes
    assert follower.epochs.entries == [EpochEntry(0, 0), EpochEntry(2, 5)]
    assert follower.log.log_end_offset == 9


def test_a_partial_batch_at_the_end_of_the_fetched_bytes_is_dropped(tmp_path):
    """trimInvalidBytes: the leader's answer may end inside a batch; the whole batches are kept."""
    follower = follower_at(tmp_path)
    whole, cut = batch(0, 1, 2), batch(2, 1, 2)
    info = follower.append(whole + cut[:20])
    assert info.last_offset == 1 and segment_bytes(follower) == whole
    assert follower.append(cut[:20]) is None


def test_a_corrupt_batch_is_refused_and_nothing_is_appended(tmp_path):
    """A batch whose CRC does not match is CorruptRecordException in Kafka: no byte of the answer goes in."""
    follower = follower_at(tmp_path)
    bad = bytearray(batch(1, 0, 2))
    bad[-1] ^= 0xFF
    with pytest.raises(FollowerAppendError):
        follower.append(batch(0, 0, 1) + bytes(bad))
    assert follower.log.log_end_offset == 0


def test_batches_below_the_log_end_are_refused(tmp_path):
    """UnexpectedAppendOffsetException: the leader's batch must start at or after the log end."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 0, 3))
    with pytest.raises(FollowerAppendError):
        follower.append(batch(1, 0, 1))
    assert follower.log.log_end_offset == 3


def test_the_follower_replays_producers_and_writes_the_txn_index_of_an_abort(tmp_path):
    """Producer state as the leader's (AppendOrigin.REPLICATION): a transactional batch opens the
    producer's transaction, the leader's ABORT marker ends it and writes the .txnindex entry; the
    first unstable offset moves once the leader's high watermark passes the marker."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 0, 2, producer_id=42, producer_epoch=1, base_sequence=0, is_transactional=True))
    assert follower.partition.producers.first_unstable_offset() == 0
    marker = end_txn_marker_batch(commit=False, producer_id=42, producer_epoch=1, coordinator_epoch=5, timestamp=1)
    follower.append(at(marker, 2, 0))
    assert follower.partition.producers.first_unstable_offset() == 0      # until the marker is replicated
    follower.update_from_leader(high_watermark=3, log_start_offset=0)
    assert follower.partition.producers.first_unstable_offset() is None
    aborted = follower.log.active_segment.txn_index.entries()
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in aborted] == [(42, 0, 2)]


def test_a_followers_idle_producers_expire_as_the_leaders_do(tmp_path):
    """producer.id.expiration.ms applies to followed replicas too: a producer whose last batch is
    that old is forgotten at the next append after the check interval (the state stays bounded)."""
    follower = follower_at(tmp_path)
    old = build_batch([(b"k", b"v", [], 1000)], base_offset=0, partition_leader_epoch=0, producer_id=9,
                      producer_epoch=0, base_sequence=0)
    follower.append(old, now_ms=1000)
    assert set(follower.partition.producers.producers) == {9}
    follower.append(batch(1, 0, 1), now_ms=1000 + 86_400_000 + 600_000)
    assert follower.partition.producers.producers == {}


def test_high_watermark_is_the_leaders_capped_at_the_log_end_and_the_log_start_follows_the_leader(tmp_path):
    """processPartitionData: updateHighWatermark(min(leader's, log end)); maybeIncrementLogStartOffset
    to the leader's log start when higher, up to the high watermark; no segment deleted (the log
    manager's retention pass deletes those below it: tests/broker/test_follower_retention.py)."""
    follower = follower_at(tmp_path)
    follower.log.segment_bytes = 100
    for offset in range(0, 8, 2):
        follower.append(batch(offset, 0, 2))
    follower.update_from_leader(high_watermark=100, log_start_offset=0)
    assert follower.high_watermark == 8
    follower.update_from_leader(high_watermark=5, log_start_offset=6)      # above the high watermark: not yet
    assert (follower.high_watermark, follower.log.log_start_offset) == (5, 0)
    bases = [s.base_offset for s in follower.log.segments]
    assert len(bases) > 2
    follower.update_from_leader(high_watermark=8, log_start_offset=4)
    assert follower.log.log_start_offset == 4
    assert [s.base_offset for s in follower.log.segments] == bases


# -- truncation --

def cache(*entries) -> LeaderEpochFileCache:
    return LeaderEpochFileCache(None, [EpochEntry(e, s) for e, s in entries])


@pytest.mark.parametrize("leader_epoch, leader_end, expected, why", [
    (3, 12, (12, True), "the leader's epoch is ours: the smaller end (ours ends at the log end 20)"),
    (1, 7, (7, True), "epoch 1 ends at 10 here, at 7 on the leader: truncate to 7"),
    (2, 15, (10, False), "epoch 2 is unknown here: truncate to the end of our epoch 1 below it and ask again"),
    (0, 3, (3, True), "below our first epoch: our end for it is our first start, 5; the leader's 3 is smaller"),
    (-1, 14, (14, True), "no epoch from the leader: its end offset"),
    (3, -1, (9, True), "no end offset from the leader: the fetch offset (the high watermark) stays"),
    (7, 30, (20, True), "never above the log end"),
])
def test_offset_truncation_state_follows_kafkas_rules(leader_epoch, leader_end, expected, why):
    """AbstractFetcherThread.getOffsetTruncationState, each rule in ``why``."""
    epochs = cache((1, 5), (3, 10))
    decision = offset_truncation_state(epochs, 20, 9, leader_epoch, leader_end)
    assert tuple(decision) == expected, why


def test_truncation_cuts_the_log_the_epochs_and_rebuilds_the_producer_state(tmp_path):
    """UnifiedLog.truncateTo: the epochs from the offset on go, the producer state is rebuilt from
    what is left (a producer seen only after the offset is forgotten), the high watermark comes down."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 0, 3, producer_id=1, producer_epoch=0, base_sequence=0))
    follower.append(batch(3, 1, 2, producer_id=2, producer_epoch=0, base_sequence=0))
    follower.update_from_leader(high_watermark=5, log_start_offset=0)
    assert follower.truncate_to(3)
    assert follower.log.log_end_offset == 3 and follower.high_watermark == 3
    assert follower.epochs.entries == [EpochEntry(0, 0)]
    assert set(follower.partition.producers.producers) == {1}
    assert not follower.truncate_to(3)


def test_truncating_below_the_log_start_starts_the_log_again_empty(tmp_path):
    """truncateFullyAndStartAt: no segments, no epochs, no producers, no snapshots; the log starts there."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 0, 3, producer_id=1, producer_epoch=0, base_sequence=0))
    follower.partition.maybe_snapshot()
    follower.truncate_fully_and_start_at(50)
    log_ = follower.log
    assert (log_.log_start_offset, log_.log_end_offset, follower.high_watermark) == (50, 50, 50)
    assert follower.epochs.entries == [] and follower.partition.producers.producers == {}
    assert not [n for n in os.listdir(log_.directory) if n.endswith(".snapshot")]


# -- the fetcher, with a fake client and clock --

class FakeClient:
    def __init__(self, *answers, fetch_max_version: int = 17):
        self.answers = list(answers)
        self.sent = []
        self.versions = {1: (4, fetch_max_version)}

    async def connect(self, peer, timeout_ms=None):
        return self.versions

    async def send(self, peer, request, api_version=None, timeout_ms=None):
        self.sent.append((request, api_version))
        return self.answers.pop(0)


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def fetcher_for(follower, *answers, **client_options) -> tuple[ReplicaFetcher, FakeClient, Clock]:
    client, clock = FakeClient(*answers, **client_options), Clock()
    fetcher = ReplicaFetcher(FetcherSettings(replica_id=1, backoff_ms=1000), client, 2, lambda: PEER, lambda: 77,
                             clock=clock)
    fetcher.set_partitions({follower.key: (follower, TOPIC_ID)})
    return fetcher, client, clock


def fetch_answer(follower, **fields) -> FetchResponse:
    data = PartitionData(partition_index=0, **fields)
    return FetchResponse(responses=[FetchableTopicResponse(topic=follower.partition.topic, topic_id=TOPIC_ID,
                                                           partitions=[data])])


def run_round(fetcher) -> None:
    asyncio.run(fetcher.do_work())


def test_the_fetch_names_replica_state_log_start_and_last_fetched_epoch(tmp_path):
    """ReplicaFetcherThread.buildFetch: ReplicaState (this broker, its broker epoch) from v15, the
    replica id before; replica.fetch.* sizes and waits; per partition the log end as fetch offset,
    the leader epoch, the last fetched epoch and the log start; READ_UNCOMMITTED; the first request
    of a fetch session full (session 0, epoch 0: open one), session-less before v7."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 2, 3))
    fetcher, _, _ = fetcher_for(follower)
    state = fetcher.partitions[follower.key]
    request = fetcher.build_fetch([state], 17)
    assert (request.replica_state.replica_id, request.replica_state.replica_epoch) == (1, 77)
    assert (request.max_wait_ms, request.min_bytes, request.max_bytes) == (500, 1, 10 * 1024 * 1024)
    assert (request.isolation_level, request.session_id, request.session_epoch) == (0, 0, 0)
    p = request.topics[0].partitions[0]
    assert (p.fetch_offset, p.current_leader_epoch, p.last_fetched_epoch, p.log_start_offset,
            p.partition_max_bytes) == (3, 3, 2, 0, 1024 * 1024)
    assert fetcher.build_fetch([state], 12).replica_id == 1
    old = fetcher.build_fetch([state], 6)
    assert (old.session_id, old.session_epoch, len(old.topics[0].partitions)) == (0, -1, 1)


def test_a_fetch_answer_is_appended_and_moves_the_fetch_offset(tmp_path):
    """The records of an answer go into the log; the next fetch starts after them, their epoch as
    the last fetched epoch; the high watermark is the leader's."""
    follower = follower_at(tmp_path)
    fetcher, client, _ = fetcher_for(follower)
    fetcher.client.answers.append(fetch_answer(follower, high_watermark=2, log_start_offset=0,
                                               records=batch(0, 3, 2)))
    run_round(fetcher)
    state = fetcher.partitions[follower.key]
    assert (state.fetch_offset, state.last_fetched_epoch, follower.high_watermark) == (2, 3, 2)
    assert client.sent[0][1] == 17


def test_a_diverging_epoch_truncates_to_its_end_and_fetching_goes_on_from_there(tmp_path):
    """truncateOnFetchResponse: DivergingEpoch (epoch 1 ends at 4 on the leader) truncates our log,
    which has epoch 1 up to 6, to 4; the next fetch starts there with epoch 1 as the last fetched."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 0, 2) + batch(2, 1, 2) + batch(4, 1, 2))
    fetcher, _, _ = fetcher_for(follower, None)
    fetcher.client.answers = [fetch_answer(follower, high_watermark=2, log_start_offset=0,
                                           diverging_epoch=EpochEndOffset(epoch=1, end_offset=4))]
    run_round(fetcher)
    state = fetcher.partitions[follower.key]
    assert follower.log.log_end_offset == 4
    assert follower.epochs.entries == [EpochEntry(0, 0), EpochEntry(1, 2)]
    assert (state.fetch_offset, state.last_fetched_epoch, state.truncating) == (4, 1, False)


def test_an_empty_epoch_of_our_own_leadership_goes_when_the_leader_diverges_at_our_log_end(tmp_path):
    """This replica led epoch 2 from its log end (4) and lost the leadership before appending in
    it; the new leader never had epoch 2, and answers its Fetch (last fetched epoch 2) that epoch 1
    ends at 4: nothing to cut from the log, but epoch 2 leaves the cache (UnifiedLog.truncateTo
    truncates it from the log end whatever the offset), so the next Fetch says epoch 1. Kept, epoch
    2 was the last fetched epoch of every Fetch, each answered with the same diverging epoch: the
    follower never fetched again and never rejoined the ISR (the mixed cluster's nemesis, seed 29:
    a kafkawire broker's replica stuck at the offset where its one-second leadership began)."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 0, 2) + batch(2, 1, 2))
    follower.epochs.assign(2, 4)
    fetcher, client, _ = fetcher_for(follower, None)
    state = fetcher.partitions[follower.key]
    assert state.last_fetched_epoch == 2
    client.answers = [fetch_answer(follower, high_watermark=4, log_start_offset=0,
                                   diverging_epoch=EpochEndOffset(epoch=1, end_offset=4))]
    run_round(fetcher)
    assert follower.log.log_end_offset == 4
    assert follower.epochs.entries == [EpochEntry(0, 0), EpochEntry(1, 2)]
    assert (state.fetch_offset, state.last_fetched_epoch, state.truncating) == (4, 1, False)


def test_an_epoch_unknown_here_asks_offset_for_leader_epoch_before_fetching_again(tmp_path):
    """A diverging epoch this log does not have truncates to the end of the epoch below it and
    moves the partition to truncating: the next round sends OffsetForLeaderEpoch for our latest
    epoch, whose answer finishes the truncation."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 0, 2) + batch(2, 2, 4))
    answers = [fetch_answer(follower, high_watermark=2, log_start_offset=0,
                            diverging_epoch=EpochEndOffset(epoch=1, end_offset=3)),
               OffsetForLeaderEpochResponse(topics=[OffsetForLeaderTopicResult(topic="t", partitions=[
                   LeaderEpochEnd(partition=0, leader_epoch=0, end_offset=1)])])]
    fetcher, client, _ = fetcher_for(follower, *answers)
    run_round(fetcher)
    state = fetcher.partitions[follower.key]
    assert state.truncating and follower.log.log_end_offset == 2
    run_round(fetcher)
    request = client.sent[1][0]
    assert request.topics[0].partitions[0].leader_epoch == 0 and request.replica_id == 1
    assert follower.log.log_end_offset == 0      # epoch 0 ends at 1 on the leader: the batch 0-1 goes
    assert (state.truncating, state.fetch_offset) == (False, 0)


def list_offsets_answer(offset: int) -> ListOffsetsResponse:
    return ListOffsetsResponse(topics=[ListOffsetsTopicResponse(name="t", partitions=[
        ListOffsetsPartitionResponse(partition_index=0, offset=offset)])])


def test_out_of_range_with_a_leader_ending_below_us_truncates_to_the_leaders_end(tmp_path):
    """fetchOffsetAndTruncate: the leader's latest offset (ListOffsets as replica) below our log end: truncate there."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 0, 2) + batch(2, 0, 3))
    fetcher, client, _ = fetcher_for(follower, None, list_offsets_answer(2))
    client.answers[0] = fetch_answer(follower, error_code=Errors.OFFSET_OUT_OF_RANGE)
    run_round(fetcher)
    assert client.sent[1][0].replica_id == 1 and client.sent[1][0].topics[0].partitions[0].timestamp == -1
    assert follower.log.log_end_offset == 2 and fetcher.partitions[follower.key].fetch_offset == 2


def test_out_of_range_behind_the_leaders_log_start_starts_our_log_again_there(tmp_path):
    """fetchOffsetAndTruncate: the leader ends above us and starts above our end (retention went on
    without us): our log restarts empty at the leader's log start, fetched from there."""
    follower = follower_at(tmp_path)
    follower.append(batch(0, 0, 2))
    fetcher, client, _ = fetcher_for(follower, None, list_offsets_answer(90), list_offsets_answer(40))
    client.answers[0] = fetch_answer(follower, error_code=Errors.OFFSET_OUT_OF_RANGE)
    run_round(fetcher)
    assert client.sent[2][0].topics[0].partitions[0].timestamp == -2
    assert (follower.log.log_start_offset, follower.log.log_end_offset) == (40, 40)
    assert fetcher.partitions[follower.key].fetch_offset == 40


def test_partition_errors_back_off_and_a_fenced_partition_waits_for_new_metadata(tmp_path):
    """NOT_LEADER_OR_FOLLOWER delays the partition replica.fetch.backoff.ms (delayPartitions), no
    request is sent before; FENCED_LEADER_EPOCH stops it until a new leader epoch comes (onPartitionFenced)."""
    follower = follower_at(tmp_path)
    fetcher, client, clock = fetcher_for(follower, None)
    client.answers[0] = fetch_answer(follower, error_code=Errors.NOT_LEADER_OR_FOLLOWER)
    run_round(fetcher)
    state = fetcher.partitions[follower.key]
    assert not state.ready(clock.now) and not state.ready(clock.now + 0.99) and state.ready(clock.now + 1.0)
    clock.now += 1.0
    client.answers.append(fetch_answer(follower, error_code=Errors.FENCED_LEADER_EPOCH))
    run_round(fetcher)
    assert state.fenced and not state.ready(clock.now + 100)
    follower.leader_epoch = 4
    fetcher.set_partitions({follower.key: (follower, TOPIC_ID)})
    assert fetcher.partitions[follower.key].ready(clock.now)


def test_a_fetcher_with_nothing_ready_waits_instead_of_spinning(tmp_path):
    """A round with every partition delayed sends nothing and sleeps until the earliest delay (or a
    change of partitions): the bounded wait returns without a request."""
    follower = follower_at(tmp_path)
    fetcher, client, clock = fetcher_for(follower)
    fetcher.partitions[follower.key].delayed_until = clock.now + 0.05
    fetcher.clock = lambda: clock.now          # the wait's timeout is 0.05 s of real time

    async def one_round():
        await asyncio.wait_for(fetcher.do_work(), 2)
    asyncio.run(one_round())
    assert client.sent == []


def test_fetcher_ids_spread_partitions_as_kafkas_get_fetcher_id():
    """Utils.abs(31 * topic.hashCode() + partition) % num.replica.fetchers ("a".hashCode() is 97)."""
    assert [fetcher_id("a", p, 4) for p in range(4)] == [(31 * 97 + p) % 4 for p in range(4)]
    assert {fetcher_id("orders", p, 1) for p in range(10)} == {0}


BASE_CONFIG = ("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
               "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
               "controller.quorum.bootstrap.servers=127.0.0.1:9093\n")


def test_the_fetcher_settings_have_kafkas_names_defaults_and_cross_check():
    """ReplicationConfigs' defaults; KafkaConfig.validateValues: replica.socket.timeout.ms at least
    replica.fetch.wait.max.ms; num.replica.fetchers at least 1."""
    from kafkawire.net.config import ConfigError, parse_server_config
    c = parse_server_config(BASE_CONFIG)
    assert (c.num_replica_fetchers, c.replica_fetch_max_bytes, c.replica_fetch_response_max_bytes,
            c.replica_fetch_wait_max_ms, c.replica_fetch_min_bytes, c.replica_fetch_backoff_ms,
            c.replica_socket_timeout_ms) == (1, 1048576, 10485760, 500, 1, 1000, 30000)
    with pytest.raises(ConfigError, match="should always be at least replica.fetch.wait.max.ms"):
        parse_server_config(BASE_CONFIG + "replica.fetch.wait.max.ms=40000\n")
    with pytest.raises(ConfigError):
        parse_server_config(BASE_CONFIG + "num.replica.fetchers=0\n")
