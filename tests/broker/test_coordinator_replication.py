"""The coordinators and replication, without a node (the stand-in broker of
test_txn_state_topic, real logs, kafkawire.broker.replication's leader side with one follower
played by calls): Kafka's coordinators answer only once their writes reached the in-sync replicas
(the high watermark).

- OffsetCommit (the group coordinator, CoordinatorRuntime): not answered until the follower
  fetched past the commit; COORDINATOR_NOT_AVAILABLE after ``offsets.commit.timeout.ms``.
  OffsetFetch reads the offsets at the high watermark (``require_stable``: the latest, answered once
  the writes before it are committed; NOT_COORDINATOR after ``offsets.commit.timeout.ms``).
- SyncGroup (GroupMetadataManager's appendFuture of the leader's assignment): no member, leader or
  not, is answered until the follower has the assignment, the group CompletingRebalance until then;
  every one COORDINATOR_NOT_AVAILABLE after ``offsets.commit.timeout.ms``, the group rebalancing.
- InitProducerId / EndTxn (TransactionStateManager.appendTransactionToLog, acks=-1): not answered
  until the follower has the record; COORDINATOR_NOT_AVAILABLE after ``request.timeout.ms``, and
  at once, without an append, when the ISR is under min.insync.replicas (NOT_ENOUGH_REPLICAS).
- A leadership lost and regained (CoordinatorRuntime's unload and load): an OffsetCommit,
  TxnOffsetCommit or classic group whose record the new leader never had is gone when the partition
  is loaded again; a parked JoinGroup is answered NOT_COORDINATOR when the leadership goes.
"""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
from types import SimpleNamespace

from kafkawire.broker.replica_state import LeaderReplicas
from kafkawire.broker.replication import Replication
from kafkawire.messages.add_offsets_to_txn_request import AddOffsetsToTxnRequest
from kafkawire.messages.describe_groups_request import DescribeGroupsRequest
from kafkawire.messages.end_txn_request import EndTxnRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kafkawire.messages.offset_commit_request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                      OffsetCommitRequestTopic)
from kafkawire.messages.offset_fetch_request import (OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic,
                                                     OffsetFetchRequestTopics)
from kafkawire.messages.write_txn_markers_response import (WritableTxnMarkerPartitionResult, WritableTxnMarkerResult,
                                                           WritableTxnMarkerTopicResult, WriteTxnMarkersResponse)
from kafkawire.messages.sync_group_request import SyncGroupRequest, SyncGroupRequestAssignment
from kafkawire.protocol.error_codes import Errors

from .test_txn_state_topic import GROUP, TX, StandInBroker, add, ctx, fetched, init, txn_offset_commit, until

FOLLOWER, FOLLOWER_EPOCH = 2, 7


def replicated_broker(tmp_path, *, isr=(1, FOLLOWER), min_isr=1, **config):
    """The stand-in broker whose __consumer_offsets and __transaction_state have a follower (node 2)."""
    broker = StandInBroker(tmp_path, itertools.count(1000))
    for key, value in config.items():
        setattr(broker.config, key, value)
    broker.lifecycle = None
    broker.send_to_controller = None          # no ISR change is sent: the ISR stays as made
    broker.topic_configs = SimpleNamespace(produce_settings=lambda image, topic: SimpleNamespace(
        min_insync_replicas=min_isr))
    broker.replication = Replication(broker)
    for topic in ("__consumer_offsets", "__transaction_state"):
        partition = broker.partitions[(topic, 0)]
        partition.replicas = LeaderReplicas(1, max_lag_ms=30_000, broker_epoch=lambda b: FOLLOWER_EPOCH)
        partition.replicas.min_isr = min_isr
        partition.replicas.make_leader(replicas=[1, FOLLOWER], isr=list(isr), leader_epoch=0, partition_epoch=0,
                                       log_end_offset=partition.log.log_end_offset, now_ms=0, is_new_leader=True)
        partition.store_high_watermark(partition.log.log_end_offset)
    return broker


def follower_fetches(broker, topic: str) -> None:
    """The follower fetches from the leader's log end: the high watermark moves there."""
    partition = broker.partitions[(topic, 0)]
    end_offset = partition.log.log_end_offset
    broker.replication.follower_fetched(partition, FOLLOWER, FOLLOWER_EPOCH, end_offset, 0, end_offset)


def handler(apis, key):
    return apis.handlers()[key].handle


async def pending_txn_offset(broker, offset: int) -> tuple[int, int]:
    """A transaction of TX (InitProducerId, AddOffsetsToTxn, the APIs unwrapped: no wait for the
    ISR) whose TxnOffsetCommit of ``offset`` for t-0 is pending: its producer id and epoch."""
    code, producer_id, epoch = await init(broker)
    added = await broker.txn_apis.add_offsets_to_txn(ctx(3), AddOffsetsToTxnRequest(
        transactional_id=TX, producer_id=producer_id, producer_epoch=epoch, group_id=GROUP))
    assert (code, added.error_code) == (Errors.NONE, Errors.NONE)
    assert await txn_offset_commit(broker, producer_id, epoch, offset) == Errors.NONE
    return producer_id, epoch


async def unanswered_after_append(broker, topic: str, *requests, why: str) -> list:
    """``requests`` (coroutines or futures just made, not yet run) started: once ``topic``-0's log
    grew, and some loop turns more, none is answered (the follower has not fetched it, ``why``
    otherwise); their futures."""
    partition = broker.partitions[(topic, 0)]
    end = partition.log.log_end_offset
    pending = [asyncio.ensure_future(request) for request in requests]
    await until(lambda: partition.log.log_end_offset > end)
    for _ in range(20):
        await asyncio.sleep(0)
    assert not any(p.done() for p in pending), why
    return pending


async def offset_commit(broker, offset):
    request = OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name="t", partitions=[OffsetCommitRequestPartition(
            partition_index=0, committed_offset=offset, committed_metadata="")])])
    response = await handler(broker.group_apis, 8)(ctx(8), request)
    return response.topics[0].partitions[0].error_code


def test_an_offset_commit_is_answered_once_the_isr_has_it_and_times_out_as_kafka_maps_it(tmp_path):
    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        await broker.load()
        commit, = await unanswered_after_append(broker, "__consumer_offsets", offset_commit(broker, 42),
                                                why="answered before the follower had the commit")
        follower_fetches(broker, "__consumer_offsets")
        assert await asyncio.wait_for(commit, 5) == Errors.NONE
        assert await fetched(broker, False) == (Errors.NONE, 42)

        broker.config.offsets_commit_timeout_ms = 30      # the follower fetches no more
        assert await offset_commit(broker, 43) == Errors.COORDINATOR_NOT_AVAILABLE
        broker.close()
    asyncio.run(go())


def test_an_offset_commit_the_leader_alone_is_in_sync_for_is_answered_at_once(tmp_path):
    """With the leader alone in the ISR (or a partition of one replica) the commit's append moves
    the high watermark at once, as a produce's does (Partition.appendRecordsToLeader then
    maybeIncrementLeaderHW): before, the answer waited for the next follower fetch or ISR check,
    or timed out, and a one-node broker's group APIs took seconds each."""
    async def go():
        broker = replicated_broker(tmp_path, isr=(1,), offsets_commit_timeout_ms=10_000)
        await broker.load()
        code = await asyncio.wait_for(offset_commit(broker, 7), 1)
        assert (code, await fetched(broker, False)) == (Errors.NONE, (Errors.NONE, 7))
        broker.close()
    asyncio.run(go())


async def joined_generation(broker, member_ids) -> list:
    """Every member (a new one for "") joins at once (JoinGroup v3, no MEMBER_ID_REQUIRED), the
    follower fetching meanwhile (a new group's record waits for it): the members' answers."""
    client = SimpleNamespace(api_version=3, client_id="c", peer=("127.0.0.1", 1))
    joins = [asyncio.ensure_future(handler(broker.group_apis, 11)(client, JoinGroupRequest(
        group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id=member_id,
        protocol_type="consumer", protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")])))
        for member_id in member_ids]
    await until(lambda: follower_fetches(broker, "__consumer_offsets") or all(j.done() for j in joins))
    return [j.result() for j in joins]


def sync(broker, answer, assignments=()):
    return asyncio.ensure_future(handler(broker.group_apis, 14)(ctx(3), SyncGroupRequest(
        group_id=GROUP, generation_id=answer.generation_id, member_id=answer.member_id,
        assignments=[SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments])))


async def two_members_joined(tmp_path):
    """A loaded replicated broker (its commit timeout 10 s) whose group coordinator rebalances
    with no initial delay, and two new members joined in one generation, the follower fetching
    meanwhile: the broker, the leader's JoinGroup answer and the other member's."""
    broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
    coordinator = broker.group_apis.coordinator
    coordinator.settings = dataclasses.replace(coordinator.settings, initial_rebalance_delay_ms=0)
    await broker.load()
    joined = await joined_generation(broker, ["", ""])
    assert [j.error_code for j in joined] == [Errors.NONE, Errors.NONE]
    leader = next(j for j in joined if j.member_id == j.leader)
    other = next(j for j in joined if j.member_id != j.leader)
    return broker, leader, other


def test_every_member_gets_the_leaders_assignment_once_the_isr_has_it(tmp_path):
    """The member that is not the leader is parked until the leader's SyncGroup writes the
    assignment; Kafka completes both answers in the write's appendFuture, once it is committed."""
    async def go():
        broker, leader, other = await two_members_joined(tmp_path)
        syncs = await unanswered_after_append(
            broker, "__consumer_offsets", sync(broker, other),
            sync(broker, leader, [(leader.member_id, b"L"), (other.member_id, b"O")]),
            why="a SyncGroup answered before the ISR had the assignment")
        follower_fetches(broker, "__consumer_offsets")
        answers = [await asyncio.wait_for(s, 5) for s in syncs]
        assert [(a.error_code, a.assignment) for a in answers] == [(Errors.NONE, b"O"), (Errors.NONE, b"L")]

        joined = await joined_generation(broker, [leader.member_id, other.member_id])
        broker.config.offsets_commit_timeout_ms = 30      # the follower fetches no more
        syncs = [sync(broker, joined[1]),
                 sync(broker, joined[0], [(leader.member_id, b"L2"), (other.member_id, b"O2")])]
        answers = [await asyncio.wait_for(s, 5) for s in syncs]
        assert [a.error_code for a in answers] == [Errors.COORDINATOR_NOT_AVAILABLE] * 2
        broker.close()
    asyncio.run(go())


def test_a_transactions_state_is_answered_once_the_isr_has_it(tmp_path):
    async def go():
        broker = replicated_broker(tmp_path, request_timeout_ms=10_000)
        await broker.load()
        init_producer = handler(broker.txn_apis, 22)
        request = InitProducerIdRequest(transactional_id=TX, transaction_timeout_ms=60000, producer_id=-1,
                                        producer_epoch=-1)
        pending, = await unanswered_after_append(
            broker, "__transaction_state", init_producer(ctx(4), request),
            why="InitProducerId answered before the follower had the transaction's state")
        follower_fetches(broker, "__transaction_state")
        answer = await asyncio.wait_for(pending, 5)
        assert (answer.error_code, answer.producer_epoch) == (Errors.NONE, 0)

        broker.config.request_timeout_ms = 30              # the follower fetches no more
        assert await add(broker, answer.producer_id, 0) == {0: Errors.NONE}     # in memory (no handler)
        ended = await handler(broker.txn_apis, 26)(ctx(4), EndTxnRequest(
            transactional_id=TX, producer_id=answer.producer_id, producer_epoch=0, committed=True))
        assert ended.error_code == Errors.COORDINATOR_NOT_AVAILABLE
        broker.close()
    asyncio.run(go())


def test_a_transaction_state_write_under_min_isr_is_refused_before_the_append(tmp_path):
    """appendTransactionToLog with acks=-1: NOT_ENOUGH_REPLICAS, answered COORDINATOR_NOT_AVAILABLE."""
    async def go():
        broker = replicated_broker(tmp_path, isr=(1,), min_isr=2)
        await broker.load()
        code, _, _ = await init(broker)
        assert code == Errors.COORDINATOR_NOT_AVAILABLE
        assert broker.partitions[("__transaction_state", 0)].log.log_end_offset == 0
        broker.close()
    asyncio.run(go())


def test_find_coordinator_names_the_leader_of_the_keys_partition_whichever_broker_is_asked(tmp_path):
    """KafkaApis.getCoordinator: a broker that does not lead the group's (or transactional id's)
    partition names the broker that does, when it is alive, instead of COORDINATOR_NOT_AVAILABLE
    (librdkafka kept asking a follower and its committed() timed out: the nemesis's finding);
    a fenced leader is COORDINATOR_NOT_AVAILABLE."""
    async def go():
        broker = StandInBroker(tmp_path, itertools.count(1000))
        image = broker.image()
        for topic in ("__consumer_offsets", "__transaction_state"):
            image.topics_by_name[topic].partitions[0].leader = FOLLOWER
        other = SimpleNamespace(fenced=False, listeners={"PLAINTEXT": SimpleNamespace(host="broker-2", port=9192)})
        image.brokers = {FOLLOWER: other}
        asked = SimpleNamespace(api_version=3, listener_name="PLAINTEXT")

        async def find(key, key_type):
            r = await broker.group_apis.find_coordinator(asked, FindCoordinatorRequest(key=key, key_type=key_type))
            return r.error_code, r.node_id, r.host, r.port
        assert await find(GROUP, 0) == (Errors.NONE, FOLLOWER, "broker-2", 9192)
        assert await find(TX, 1) == (Errors.NONE, FOLLOWER, "broker-2", 9192)
        other.fenced = True
        assert (await find(GROUP, 0))[:2] == (Errors.COORDINATOR_NOT_AVAILABLE, -1)
        broker.close()
    asyncio.run(go())


def test_markers_go_to_each_partitions_leader_not_only_to_this_broker(tmp_path):
    """TransactionMarkerChannelManager: the coordinator writes the markers of partitions it leads
    in process and sends WriteTxnMarkers for the others to their leader (the nemesis's hanging
    transaction: every marker was written locally, NOT_LEADER_OR_FOLLOWER forever elsewhere)."""
    from kafkawire.broker.txn_marker_sender import marker_request

    async def go():
        broker = StandInBroker(tmp_path, itertools.count(1000))
        broker.image().topics_by_name["t"].partitions[1].leader = FOLLOWER
        broker.replica_roles = SimpleNamespace(endpoint_of=lambda b: ("broker-2", 9192) if b == FOLLOWER else None)
        sent = []

        class Peer:
            async def close(self):
                pass

            async def send(self, address, request, **_):
                sent.append((address, request))
                return WriteTxnMarkersResponse(markers=[WritableTxnMarkerResult(producer_id=7, topics=[
                    WritableTxnMarkerTopicResult(name="t", partitions=[WritableTxnMarkerPartitionResult(
                        partition_index=1, error_code=Errors.NONE)])])])
        broker.txn_apis.router.peers._client = Peer()
        metadata = SimpleNamespace(producer_id=7, producer_epoch=0, client_tv=0)
        response = await broker.txn_apis._write_markers(marker_request(metadata, 0, True, {("t", 0), ("t", 1)}))
        codes = {(t.name, p.partition_index): p.error_code for m in response.markers for t in m.topics
                 for p in t.partitions}
        assert codes == {("t", 0): Errors.NONE, ("t", 1): Errors.NONE}
        assert broker.txn_markers.written == [("t", 0, 7, 0, True)]          # led here: in process
        (address, request), = sent
        assert address == ("broker-2", 9192)
        assert [(t.name, t.partition_indexes) for t in request.markers[0].topics] == [("t", [1])]
        broker.close()
    asyncio.run(go())


def test_a_coordinator_append_is_a_leader_append(tmp_path):
    """Partition.append_as_coordinator appends as a produce does: the batch carries the leader
    epoch, a roll writes the producer snapshot at the new segment's base (UnifiedLog.roll; a
    coordinator's direct log append skipped it), and the high watermark of a partition with no
    follower moves to the log end at once."""
    import os
    import uuid

    from kafkawire.broker.partition import LeaderPartition
    from kafkawire.records import iter_batches
    from kafkawire.records.builder import build_batch

    partition = LeaderPartition.open(str(tmp_path), "__consumer_offsets", 0, uuid.uuid4(), leader_epoch=4,
                                     high_watermark=0, segment_bytes=200)
    try:
        for i in range(3):
            assert partition.append_as_coordinator(build_batch([(b"k", b"v" * 100, (), 1000)]), now_ms=1000) == i
        bases = [s.base_offset for s in partition.log.segments]
        assert len(bases) >= 2, bases
        snapshots = sorted(int(n.split(".")[0]) for n in os.listdir(partition.log.directory) if n.endswith(".snapshot"))
        assert set(bases[1:]) <= set(snapshots), (bases, snapshots)
        assert {next(iter_batches(partition.log.read(i, 1 << 20).data)).partition_leader_epoch
                for i in range(3)} == {4}
        assert partition.high_watermark() == 3 and partition.last_append_end_offset == 3
    finally:
        partition.close()


async def answered(broker, write, *, replicated: bool):
    """``write`` (a coroutine) appended to __consumer_offsets-0 and, with ``replicated``, fetched by
    the follower: its answer."""
    end = broker.partitions[("__consumer_offsets", 0)].log.log_end_offset
    pending = asyncio.ensure_future(write)
    await until(lambda: broker.partitions[("__consumer_offsets", 0)].log.log_end_offset > end)
    if not replicated:
        return pending
    follower_fetches(broker, "__consumer_offsets")
    await until(pending.done)
    return pending.result()


async def moved_away_and_back(broker, pending_answer=None):
    """This broker stops leading __consumer_offsets-0 (Broker.on_metadata makes it a follower: out of
    ``partitions``, its waiting answers NOT_LEADER_OR_FOLLOWER), truncates its log to what the new
    leader held (the high watermark), and leads again: the partition is loaded again from the log."""
    key = ("__consumer_offsets", 0)
    partition = broker.partitions.pop(key)
    broker.replication.acks.step_down(broker.partitions)
    broker.group_apis.store.on_metadata()
    if pending_answer is not None:
        await until(pending_answer.done)
    partition.log.truncate_to(partition.high_watermark())
    broker.partitions[key] = partition
    await broker.load()
    return None if pending_answer is None else pending_answer.result()


async def commit_both(broker, offsets):
    """One OffsetCommit of t-0 and t-1 (``offsets``: [(partition, offset)]): the partitions' codes."""
    request = OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequestTopic(name="t", partitions=[OffsetCommitRequestPartition(
            partition_index=p, committed_offset=o, committed_metadata="") for p, o in offsets])])
    response = await handler(broker.group_apis, 8)(ctx(8), request)
    return [p.error_code for p in response.topics[0].partitions]


async def fetched_both(broker):
    r = await broker.group_apis.offset_apis.offset_fetch(ctx(7), OffsetFetchRequest(
        group_id=GROUP, topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])]))
    return [(p.error_code, p.committed_offset) for p in r.topics[0].partitions]


def test_a_commit_lost_with_the_leadership_is_not_found_when_the_partition_is_led_here_again(tmp_path):
    """Kafka's runtime unloads a coordinator partition's state when the broker stops leading it and
    rebuilds it from the log when it leads it again: a commit answered NOT_COORDINATOR whose record
    the new leader never had is gone, OffsetFetch shows what was there before it (42 for t-0, none
    for t-1), and a retry writes it. Before, the reload replayed the log over the in-memory offsets:
    t-1's lost commit stayed, which no log held."""
    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        await broker.load()
        assert await answered(broker, commit_both(broker, [(0, 42)]), replicated=True) == [Errors.NONE]
        lost = await answered(broker, commit_both(broker, [(0, 43), (1, 7)]), replicated=False)
        assert await moved_away_and_back(broker, lost) == [Errors.NOT_COORDINATOR] * 2
        assert await fetched_both(broker) == [(Errors.NONE, 42), (Errors.NONE, -1)]
        retried = await answered(broker, commit_both(broker, [(0, 43), (1, 7)]), replicated=True)
        assert retried == [Errors.NONE] * 2
        assert await fetched_both(broker) == [(Errors.NONE, 43), (Errors.NONE, 7)]
        broker.close()
    asyncio.run(go())


def test_a_transactional_offset_lost_with_the_leadership_is_not_pending_when_the_partition_is_led_here_again(
        tmp_path):
    """A TxnOffsetCommit whose batch the new leader never had is no longer pending once the
    partition is loaded again (before, OffsetFetch with require_stable answered
    UNSTABLE_OFFSET_COMMIT for it until the transaction ended, and its marker would have committed
    an offset no log held)."""
    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        await broker.load()
        assert await answered(broker, commit_both(broker, [(0, 42)]), replicated=True) == [Errors.NONE]
        producer_id, epoch = await pending_txn_offset(broker, 50)
        # (a stable OffsetFetch would wait for the batch's replication: the pending offset is asked of the state)
        assert broker.group_apis.store.txn_offsets.is_pending(GROUP, "t", 0)
        await moved_away_and_back(broker)
        assert await fetched(broker, True) == (Errors.NONE, 42)
        broker.close()
    asyncio.run(go())


def test_offset_fetch_reads_the_offsets_at_the_high_watermark_and_require_stable_the_latest(tmp_path):
    """Kafka's OffsetFetch reads the coordinator's state at the last committed offset: a commit
    answered COORDINATOR_NOT_AVAILABLE (its wait timed out) is not read until the follower has it,
    nor is a first commit of a partition; ``require_stable`` (a write operation in Kafka's
    coordinator) reads the latest. Before, OffsetFetch read the timed-out commit at once."""
    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        await broker.load()
        assert await answered(broker, commit_both(broker, [(0, 42)]), replicated=True) == [Errors.NONE]
        broker.config.offsets_commit_timeout_ms = 30      # the follower fetches no more
        assert await commit_both(broker, [(0, 43), (1, 7)]) == [Errors.COORDINATOR_NOT_AVAILABLE] * 2
        assert await fetched_both(broker) == [(Errors.NONE, 42), (Errors.NONE, -1)]
        broker.config.offsets_commit_timeout_ms = 10_000
        stable = asyncio.ensure_future(fetched(broker, True))      # waits for the commit before it
        follower_fetches(broker, "__consumer_offsets")     # the commit is replicated after all
        assert await stable == (Errors.NONE, 43)
        assert await fetched_both(broker) == [(Errors.NONE, 43), (Errors.NONE, 7)]
        broker.close()
    asyncio.run(go())


def test_a_classic_group_is_unloaded_with_its_partition_and_only_its_logged_state_comes_back(tmp_path):
    """GroupMetadataManager.onUnloaded: when the broker stops leading the group's partition, a
    JoinGroup parked in the rebalance is answered NOT_COORDINATOR at once (before, it waited for
    the rebalance to end), and a group the new leader never had a record of is not found when the
    partition is led here again (before, it stayed in memory with its member)."""
    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        coordinator = broker.group_apis.coordinator
        coordinator.settings = dataclasses.replace(coordinator.settings, initial_rebalance_delay_ms=60_000)
        await broker.load()
        client = SimpleNamespace(api_version=3, client_id="c", peer=("127.0.0.1", 1))
        join = handler(broker.group_apis, 11)(client, JoinGroupRequest(
            group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=60_000, member_id="",
            protocol_type="consumer", protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")]))
        parked = asyncio.ensure_future(join)                 # in the initial rebalance delay: no record yet
        await until(lambda: GROUP in coordinator.groups and coordinator.groups[GROUP].members)
        assert (await moved_away_and_back(broker, parked)).error_code == Errors.NOT_COORDINATOR
        described = await broker.group_apis.describe_groups(ctx(5), DescribeGroupsRequest(groups=[GROUP]))
        assert [(g.error_code, g.group_state, g.members) for g in described.groups] == [(Errors.NONE, "Dead", [])]
        broker.close()
    asyncio.run(go())


def test_a_write_whose_partition_moved_before_its_wait_is_answered_not_coordinator_at_once(tmp_path):
    """A handler that appended, and whose partition was led elsewhere before its answer started
    waiting (the unload above answers parked requests that way), has nothing to wait for:
    NOT_COORDINATOR at once, not COORDINATOR_NOT_AVAILABLE after ``offsets.commit.timeout.ms``."""
    from kafkawire.broker.coordinator_acks import replicated_handlers
    from kafkawire.messages.heartbeat_response import HeartbeatResponse
    from kafkawire.protocol.handler import ApiHandler

    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=60_000)
        await broker.load()

        async def write_then_move(ctx_, request):
            assert broker.group_apis.store.persist(GROUP, [(b"k", b"v")]) == Errors.NONE
            moved.append(broker.partitions.pop(("__consumer_offsets", 0)))
            broker.replication.acks.step_down(broker.partitions)
            return HeartbeatResponse(error_code=Errors.NONE)
        moved = []
        wrapped = replicated_handlers({12: ApiHandler(write_then_move)}, broker)[12].handle
        answer = asyncio.ensure_future(wrapped(ctx(4), None))
        await until(answer.done)
        assert answer.result().error_code == Errors.NOT_COORDINATOR
        broker.close()
        moved[0].close()
    asyncio.run(go())


def test_a_parked_answer_whose_wait_fails_unexpectedly_is_answered_with_an_error_and_logged(
        tmp_path, monkeypatch, caplog):
    """settle_writes' task: a bug in the wait is logged naming the partitions, and the callbacks
    still run (UNKNOWN_SERVER_ERROR), not a parked answer never sent and an exception nobody sees."""
    from kafkawire.broker import coordinator_acks
    from kafkawire.messages.heartbeat_response import HeartbeatResponse
    from kafkawire.protocol.handler import ApiHandler

    def broken_rules(broker, topic):
        raise RuntimeError("a bug in the rules")
    monkeypatch.setattr(coordinator_acks, "_rules", broken_rules)

    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=60_000)
        await broker.load()
        codes = []

        async def write_and_park(ctx_, request):
            assert broker.group_apis.store.persist(GROUP, [(b"k", b"v")]) == Errors.NONE
            coordinator_acks.after_write(codes.append)
            coordinator_acks.settle_writes(broker)
            return HeartbeatResponse(error_code=Errors.NONE)
        wrapped = coordinator_acks.replicated_handlers({12: ApiHandler(write_and_park)}, broker)[12].handle
        await wrapped(ctx(4), None)
        await until(lambda: codes)
        broker.close()
        return codes
    assert asyncio.run(go()) == [Errors.UNKNOWN_SERVER_ERROR]
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        "Waiting for the coordinator's writes to ['__consumer_offsets-0'] to be replicated failed"]


def test_an_assignment_whose_write_times_out_is_cleared_and_the_group_rebalances(tmp_path):
    """GroupMetadataManager's SyncGroup appendFuture: an assignment record that does not reach the
    ISR fails every member's answer and, the group having not moved on, clears the assignment and
    rebalances (before, the group stayed Stable with an assignment no replica but the leader had)."""
    from kafkawire.broker.group_state import PREPARING_REBALANCE

    async def go():
        broker, leader, other = await two_members_joined(tmp_path)
        broker.config.offsets_commit_timeout_ms = 30      # the follower fetches no more
        syncs = [sync(broker, other), sync(broker, leader, [(leader.member_id, b"L"), (other.member_id, b"O")])]
        await until(lambda: all(s.done() for s in syncs))
        assert [s.result().error_code for s in syncs] == [Errors.COORDINATOR_NOT_AVAILABLE] * 2
        group = broker.group_apis.coordinator.groups[GROUP]
        assert group.state == PREPARING_REBALANCE
        assert [m.assignment for m in group.members.values()] == [b"", b""]
        broker.close()
    asyncio.run(go())


async def stable_fetch(broker, version):
    """OffsetFetch of t-0 and t-1 with ``require_stable`` (v7: one group, v8: the groups' form): the
    group's error and its partitions' (error, offset)."""
    apis = broker.group_apis.offset_apis
    if version < 8:
        r = await apis.offset_fetch(ctx(version), OffsetFetchRequest(group_id=GROUP, require_stable=True, topics=[
            OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])]))
        return r.error_code, [(p.error_code, p.committed_offset) for t in r.topics for p in t.partitions]
    r = await apis.offset_fetch(ctx(version), OffsetFetchRequest(require_stable=True, groups=[OffsetFetchRequestGroup(
        group_id=GROUP, topics=[OffsetFetchRequestTopics(name="t", partition_indexes=[0, 1])])]))
    g, = r.groups
    return g.error_code, [(p.error_code, p.committed_offset) for t in g.topics for p in t.partitions]


def test_a_stable_offset_fetch_is_answered_once_the_writes_before_it_are_committed(tmp_path):
    """GroupCoordinatorService.fetchOffsets with ``require_stable`` is a write event without
    records: its answer, read from the latest state when it runs, is given once the coordinator's
    writes before it are committed (not before the follower has the commit that timed out; a
    commit made while it waits is not in it), and a wait past ``offsets.commit.timeout.ms`` is
    the group's NOT_COORDINATOR (handleOffsetFetchException). Before, it was answered at once with
    offsets no other replica had."""
    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        await broker.load()
        assert await answered(broker, commit_both(broker, [(0, 42)]), replicated=True) == [Errors.NONE]
        for version in (7, 8):
            broker.config.offsets_commit_timeout_ms = 30      # the follower fetches no more
            assert await commit_both(broker, [(0, 40 + version), (1, version)]) == [Errors.COORDINATOR_NOT_AVAILABLE] * 2
            broker.config.offsets_commit_timeout_ms = 10_000
            stable = asyncio.ensure_future(stable_fetch(broker, version))
            later = await answered(broker, commit_both(broker, [(0, 50 + version)]), replicated=False)
            assert not stable.done(), "a stable OffsetFetch answered before the writes before it were committed"
            follower_fetches(broker, "__consumer_offsets")
            await until(lambda: stable.done() and later.done())
            assert stable.result() == (Errors.NONE, [(Errors.NONE, 40 + version), (Errors.NONE, version)])

        broker.config.offsets_commit_timeout_ms = 30
        assert await commit_both(broker, [(0, 60)]) == [Errors.COORDINATOR_NOT_AVAILABLE]
        assert await stable_fetch(broker, 7) == (Errors.NOT_COORDINATOR, [])
        assert await stable_fetch(broker, 8) == (Errors.NOT_COORDINATOR, [])
        follower_fetches(broker, "__consumer_offsets")
        assert await stable_fetch(broker, 8) == (Errors.NONE, [(Errors.NONE, 60), (Errors.NONE, 8)])
        broker.close()
    asyncio.run(go())


def test_a_stable_offset_fetch_after_a_commit_marker_answers_the_committed_offset_once_the_marker_is_replicated(
        tmp_path):
    """Kafka's group coordinator replays a COMMIT marker of ``__consumer_offsets`` when it appends it
    (replayEndTransactionMarker: the pending offsets become the group's at the log end), so a stable
    OffsetFetch after it, a write event, answers the committed offset once the marker is replicated;
    a plain OffsetFetch reads the offset before it until then. Before, the offset stayed pending
    until the marker's replication: UNSTABLE_OFFSET_COMMIT, which consumers retry after
    ``retry.backoff.ms``."""
    from kafkawire.broker.txn_markers import TxnMarkersApi
    from kafkawire.messages.write_txn_markers_request import (WritableTxnMarker, WritableTxnMarkerTopic,
                                                              WriteTxnMarkersRequest)

    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        broker.txn_markers = TxnMarkersApi(broker)            # the partition side, waiting for the ISR
        broker.topic_configs = SimpleNamespace(produce_settings=lambda image, topic: SimpleNamespace(
            min_insync_replicas=1, log_append_time=False))
        await broker.load()
        assert await answered(broker, commit_both(broker, [(0, 42)]), replicated=True) == [Errors.NONE]
        producer_id, epoch = await pending_txn_offset(broker, 50)
        follower_fetches(broker, "__consumer_offsets")
        marker = asyncio.ensure_future(broker.txn_markers.write_txn_markers(WriteTxnMarkersRequest(markers=[
            WritableTxnMarker(producer_id=producer_id, producer_epoch=epoch, transaction_result=True, topics=[
                WritableTxnMarkerTopic(name="__consumer_offsets", partition_indexes=[0])])])))
        partition = broker.partitions[("__consumer_offsets", 0)]
        await until(lambda: partition.log.log_end_offset > partition.high_watermark())
        stable = asyncio.ensure_future(fetched(broker, True))
        assert await fetched(broker, False) == (Errors.NONE, 42)          # at the high watermark
        assert not stable.done() and not marker.done(), "answered before the marker was replicated"
        follower_fetches(broker, "__consumer_offsets")
        await until(lambda: stable.done() and marker.done())
        assert stable.result() == (Errors.NONE, 50)
        assert [p.error_code for m in marker.result().markers for t in m.topics for p in t.partitions] == [Errors.NONE]
        assert await fetched(broker, False) == (Errors.NONE, 50)
        broker.close()
    asyncio.run(go())


def test_a_classic_group_is_completing_its_rebalance_until_the_assignment_is_committed(tmp_path):
    """GroupMetadataManager's SyncGroup appendFuture: the group stays CompletingRebalance until the
    leader's assignment record is committed, so DescribeGroups shows it so (no assignment), a
    member's OffsetCommit is REBALANCE_IN_PROGRESS and a member syncing after the leader is parked
    with it; once the follower has the record every member gets its part and the group is Stable.
    Before, the group was Stable at the append and the late member got an assignment no other
    replica had."""
    from kafkawire.messages.offset_commit_request import OffsetCommitRequest as Commit

    async def go():
        broker = replicated_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        coordinator = broker.group_apis.coordinator
        coordinator.settings = dataclasses.replace(coordinator.settings, initial_rebalance_delay_ms=0)
        await broker.load()
        joined = await joined_generation(broker, ["", ""])
        leader = next(j for j in joined if j.member_id == j.leader)
        other = next(j for j in joined if j.member_id != j.leader)
        leaders = await answered(broker, sync(broker, leader, [(leader.member_id, b"L"), (other.member_id, b"O")]),
                                 replicated=False)
        others = sync(broker, other)
        described = await broker.group_apis.describe_groups(ctx(5), DescribeGroupsRequest(groups=[GROUP]))
        group, = described.groups
        assert (group.group_state, [m.member_assignment for m in group.members]) == ("CompletingRebalance", [b""] * 2)
        commit = await broker.group_apis.offset_apis.offset_commit(ctx(8), Commit(
            group_id=GROUP, generation_id_or_member_epoch=other.generation_id, member_id=other.member_id, topics=[
                OffsetCommitRequestTopic(name="t", partitions=[OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=5, committed_metadata="")])]))
        assert commit.topics[0].partitions[0].error_code == Errors.REBALANCE_IN_PROGRESS
        assert not leaders.done() and not others.done(), "a SyncGroup answered before the ISR had the assignment"
        follower_fetches(broker, "__consumer_offsets")
        await until(lambda: leaders.done() and others.done())
        assert [(s.result().error_code, s.result().assignment) for s in (leaders, others)] == \
            [(Errors.NONE, b"L"), (Errors.NONE, b"O")]
        described = await broker.group_apis.describe_groups(ctx(5), DescribeGroupsRequest(groups=[GROUP]))
        assert described.groups[0].group_state == "Stable"
        broker.close()
    asyncio.run(go())
