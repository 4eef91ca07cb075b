"""A coordinator partition's leadership lost and regained, without a node (the stand-in broker of
test_coordinator_replication, real logs, one follower played by calls): Kafka's runtime unloads
the partition's state when the broker stops leading it (GroupMetadataManager.onUnloaded, the share
coordinator's shard dropped, TransactionStateManager.removeTransactionsForTxnTopicPartition) and
rebuilds it from the log when it leads it again. A write the new leader never had (its record
truncated here when the broker follows) is gone when the partition comes back, and requests
meanwhile are answered NOT_COORDINATOR.

- Share groups (their records in ``__consumer_offsets``) with their members' session timers.
- ``__transaction_state``'s transactions, with the markers they are sending.
- The share coordinator's state of a ``__share_group_state`` partition, and the records a load cut
  short by the leadership's loss had staged.
- A load under way when the leadership goes: cancelled, what it replayed so far dropped.
- A marker written before ``__transaction_state`` went and sent again by the next coordinator:
  taken twice by the data partition, read once by a read_committed consumer.
- A load that fails: what it replayed dropped, NOT_COORDINATOR, loaded again at the next update.

A partition whose log is replaced while it stays led here: test_coordinator_topic_recreated.
"""
from __future__ import annotations

import asyncio
import itertools
import uuid
from types import SimpleNamespace

from kafkawire.broker import group_log
from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.share_coordinator_apis import ShareCoordinatorApis
from kafkawire.broker.share_state_records import SHARE_STATE_TOPIC

from kafkawire.broker.share_groups import session_key
from kafkawire.broker.txn_markers import TxnMarkersApi
from kafkawire.broker.validation import validate_produce
from kafkawire.messages.describe_transactions_request import DescribeTransactionsRequest
from kafkawire.messages.end_txn_request import EndTxnRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.list_groups_request import ListGroupsRequest
from kafkawire.messages.read_share_group_state_request import (PartitionData, ReadShareGroupStateRequest,
                                                               ReadStateData)
from kafkawire.messages.share_group_describe_request import ShareGroupDescribeRequest
from kafkawire.messages.share_group_heartbeat_request import ShareGroupHeartbeatRequest
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch
from kafkawire.records.control import ControlRecordType, parse_control_key

from .test_coordinator_replication import FOLLOWER, answered, follower_fetches, handler, replicated_broker
from .test_txn_state_topic import GROUP, IDS, TX, StandInBroker, add, ctx, until

import pytest

OFFSETS, TXN_STATE = "__consumer_offsets", "__transaction_state"
SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE, LIST_GROUPS = 76, 77, 16
INIT_PRODUCER_ID, END_TXN = 22, 26
CLIENT = SimpleNamespace(api_version=1, client_id="c", peer=("127.0.0.1", 1))


def stores(broker) -> list:
    return [broker.group_apis.store, broker.txn_apis.store]


def lose_leadership(broker, topic: str):
    """The image names the follower leader of ``topic``-0 and this broker follows it (out of
    ``partitions``: its waiting answers NOT_LEADER_OR_FOLLOWER): the partition, for lead_again."""
    partition = broker.partitions.pop((topic, 0))
    broker.image().topics_by_name[topic].partitions[0].leader = FOLLOWER
    broker.replication.acks.step_down(broker.partitions)
    for store in stores(broker):
        store.on_metadata()
    return partition


async def lead_again(broker, topic: str, partition) -> None:
    """The follower's log is truncated to what the other leader held (the high watermark), and this
    broker leads the partition again: it is loaded from the log."""
    partition.log.truncate_to(partition.high_watermark())
    broker.image().topics_by_name[topic].partitions[0].leader = broker.node_id
    broker.partitions[(topic, 0)] = partition
    await broker.load()


def share_heartbeat(broker, member_id: str, group_id: str = GROUP):
    return handler(broker.group_apis, SHARE_GROUP_HEARTBEAT)(CLIENT, ShareGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=0, subscribed_topic_names=["t"]))


def share_broker(tmp_path, **config):
    """replicated_broker with share groups enabled (share.version 1) and the image parts their
    heartbeats read."""
    broker = replicated_broker(tmp_path, **config)
    image = broker.image()
    image.finalized_features["share.version"] = 1
    image.provenance, image.configs = SimpleNamespace(offset=0), {}
    for registration in image.topics_by_name["t"].partitions.values():
        registration.replicas = [broker.node_id]
    # The stand-in has no share coordinator for the background initialization of share-partitions
    # to ask (it failed in a task nobody awaited); these tests look at the groups' records only.
    broker.group_apis.share_apis.initializer.start = lambda *args: None
    return broker


async def share_members(broker) -> tuple[int, list]:
    described = await handler(broker.group_apis, SHARE_GROUP_DESCRIBE)(CLIENT, ShareGroupDescribeRequest(
        group_ids=[GROUP]))
    group, = described.groups
    return group.error_code, sorted(m.member_id for m in group.members)


def test_a_share_group_is_unloaded_with_its_partition_and_only_its_logged_members_come_back(tmp_path):
    """A member whose joining records the new leader never had is not in the share group when the
    partition is led here again, and its session timer is gone with the unload (before, the group
    stayed in memory, the reload replayed the log over it and the lost member stayed, its timer
    running while the partition was led elsewhere); meanwhile the group's requests are answered
    NOT_COORDINATOR."""
    async def go():
        broker = share_broker(tmp_path, offsets_commit_timeout_ms=10_000)
        await broker.load()
        timers = broker.group_apis.coordinator.timer
        kept = await answered(broker, share_heartbeat(broker, "kept"), replicated=True)
        assert kept.error_code == Errors.NONE
        lost = await answered(broker, share_heartbeat(broker, "lost"), replicated=False)
        partition = lose_leadership(broker, OFFSETS)
        await until(lost.done)
        assert lost.result().error_code == Errors.NOT_COORDINATOR
        assert session_key(GROUP, "lost") not in timers._handles
        assert (await share_members(broker))[0] == Errors.NOT_COORDINATOR
        await lead_again(broker, OFFSETS, partition)
        assert await share_members(broker) == (Errors.NONE, ["kept"])
        assert session_key(GROUP, "kept") in timers._handles and session_key(GROUP, "lost") not in timers._handles
        follower_fetches(broker, OFFSETS)
        broker.close()
    asyncio.run(go())


async def replicated(broker, topic: str, write):
    """``write`` (a coroutine whose append to ``topic``-0 waits for the ISR) once the follower
    fetched its record: its answer."""
    end = broker.partitions[(topic, 0)].log.log_end_offset
    pending = asyncio.ensure_future(write)
    await until(lambda: broker.partitions[(topic, 0)].log.log_end_offset > end)
    follower_fetches(broker, topic)
    await until(pending.done)
    return pending.result()


def init_producer_id(broker, transactional_id: str, *, wait_for_isr: bool = True):
    init = handler(broker.txn_apis, INIT_PRODUCER_ID) if wait_for_isr else broker.txn_apis.init_producer_id
    return init(ctx(4), InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60000,
                                              producer_id=-1, producer_epoch=-1))


async def described(broker, transactional_id: str) -> tuple[int, str]:
    answer = await broker.txn_apis.describe_transactions(ctx(0), DescribeTransactionsRequest(
        transactional_ids=[transactional_id]))
    state, = answer.transaction_states
    return state.error_code, state.transaction_state


def test_transactions_are_unloaded_with_their_partition_and_only_their_logged_state_comes_back(tmp_path):
    """removeTransactionsForTxnTopicPartition and removeMarkersForTxnTopicPartition: when the
    broker stops leading the partition its transactions go and their markers are no longer sent
    (before, the markers of a PrepareCommit kept being retried by a broker no longer its
    coordinator), requests are answered NOT_COORDINATOR, and a transactional id whose every
    record was lost with the leadership is not found when the partition is led here again
    (before, it stayed in memory, Empty with its producer id); the PrepareCommit the log holds is
    completed by the reload."""
    async def go():
        broker = replicated_broker(tmp_path, request_timeout_ms=10_000)
        await broker.load()
        initialized = await replicated(broker, TXN_STATE, init_producer_id(broker, TX))
        producer_id = initialized.producer_id
        added = await replicated(broker, TXN_STATE, add(broker, producer_id, 0, (0, 1)))
        assert added == {0: Errors.NONE, 1: Errors.NONE}
        broker.txn_markers.failing = True                   # the markers are retried until the partition goes
        ended = await replicated(broker, TXN_STATE, handler(broker.txn_apis, END_TXN)(ctx(4), EndTxnRequest(
            transactional_id=TX, producer_id=producer_id, producer_epoch=0, committed=True)))
        assert ended.error_code == Errors.NONE and broker.txn_apis.markers.tasks
        lost = await init_producer_id(broker, "lost", wait_for_isr=False)
        assert lost.error_code == Errors.NONE                 # appended, never fetched by the follower

        partition = lose_leadership(broker, TXN_STATE)
        assert broker.txn_apis.markers.tasks == {}
        assert await described(broker, TX) == (Errors.NOT_COORDINATOR, "")
        assert (await init_producer_id(broker, TX, wait_for_isr=False)).error_code == Errors.NOT_COORDINATOR

        broker.txn_markers.failing = False
        await lead_again(broker, TXN_STATE, partition)
        assert await described(broker, "lost") == (Errors.TRANSACTIONAL_ID_NOT_FOUND, "")
        await until(lambda: broker.txn_apis.coordinator.txns[TX].state == "CompleteCommit")
        assert sorted(broker.txn_markers.written) == [("t", 0, producer_id, 0, True), ("t", 1, producer_id, 0, True)]
        broker.close()
    asyncio.run(go())



def share_state_broker(tmp_path):
    """The stand-in broker with a __share_group_state of one partition led here, and its share
    coordinator (no follower: a write's high watermark is its log end)."""
    broker = StandInBroker(tmp_path, itertools.count(1000))
    topic_id = uuid.UUID(int=99)
    topic = SimpleNamespace(name=SHARE_STATE_TOPIC, id=topic_id, partitions={
        0: SimpleNamespace(leader=broker.node_id, leader_epoch=0)})
    broker.image().topics_by_name[SHARE_STATE_TOPIC] = broker.image().topics_by_id[topic_id] = topic
    broker.partitions[(SHARE_STATE_TOPIC, 0)] = LeaderPartition.open(broker.log_dir, SHARE_STATE_TOPIC, 0, topic_id,
                                                                    leader_epoch=0)
    return broker, ShareCoordinatorApis(broker)


def set_share_state_leader(broker, apis, leader: int, partition=None) -> None:
    """The image names ``leader`` leader of __share_group_state-0; led here, ``partition`` is it."""
    broker.image().topics_by_name[SHARE_STATE_TOPIC].partitions[0].leader = leader
    if partition is None:
        broker.partitions.pop((SHARE_STATE_TOPIC, 0), None)
    else:
        broker.partitions[(SHARE_STATE_TOPIC, 0)] = partition
    apis.store.on_metadata()


async def read_codes(apis, group_id: str, partitions) -> list:
    """ReadShareGroupState of the share-partitions ``partitions`` of topic t: their error codes."""
    answer = await apis.read_state(ctx(0), ReadShareGroupStateRequest(group_id=group_id, topics=[ReadStateData(
        topic_id=IDS["t"], partitions=[PartitionData(partition=p, leader_epoch=-1) for p in partitions])]))
    return [p.error_code for p in answer.results[0].partitions]


def test_the_share_coordinators_state_is_unloaded_with_its_partition_and_a_cut_short_load_brings_nothing_back(
        tmp_path, monkeypatch):
    """The runtime drops the share coordinator's shard when the broker stops leading its
    __share_group_state partition (before, its share-partitions' state stayed in memory, not
    served, until a reload), and a load cut short by the leadership's loss leaves nothing behind
    (before, the records it had staged were replayed by the next load: a share-partition whose
    every record was then truncated came back)."""
    async def go():
        broker, apis = share_state_broker(tmp_path)
        partition = broker.partitions[(SHARE_STATE_TOPIC, 0)]
        apis.store.on_metadata()
        await until(lambda: apis.store.loaded)
        t = IDS["t"]
        assert apis.coordinator.initialize(GROUP, t, 0, 0, 0)[0] == Errors.NONE
        held_elsewhere = partition.log.log_end_offset     # what the other replica has when it leads
        assert apis.coordinator.initialize(GROUP, t, 1, 0, 0)[0] == Errors.NONE
        assert apis.coordinator.initialize("other", t, 0, 0, 0)[0] == Errors.NONE

        set_share_state_leader(broker, apis, FOLLOWER)
        assert apis.coordinator.states == {}
        assert await read_codes(apis, GROUP, [0]) == [Errors.NOT_COORDINATOR]

        monkeypatch.setattr(group_log, "LOAD_READ_BYTES", 1)      # a batch at a time
        loader, staged = apis.store.offsets, []

        def lost_while_loading(key, value):
            type(loader).replay(loader, key, value)
            staged.append(key)
            if len(staged) == 2:                        # GROUP's t-1 staged: the leadership goes
                broker.partitions.pop((SHARE_STATE_TOPIC, 0))
        loader.replay = lost_while_loading
        set_share_state_leader(broker, apis, broker.node_id, partition)
        await until(lambda: not apis.store.loading)
        assert len(staged) == 2 and not apis.store.loaded and apis.store.failed == {0}
        assert await read_codes(apis, GROUP, [0]) == [Errors.NOT_COORDINATOR]      # not LOAD_IN_PROGRESS
        set_share_state_leader(broker, apis, FOLLOWER)

        del loader.replay
        partition.log.truncate_to(held_elsewhere)
        set_share_state_leader(broker, apis, broker.node_id, partition)
        await until(lambda: apis.store.loaded)
        assert await read_codes(apis, GROUP, [0, 1]) == [Errors.NONE, Errors.INVALID_REQUEST]
        assert await read_codes(apis, "other", [0]) == [Errors.INVALID_REQUEST]
        apis.close()
        broker.close()
    asyncio.run(go())


async def listed(broker) -> tuple[int, list]:
    answer = await handler(broker.group_apis, LIST_GROUPS)(ctx(4), ListGroupsRequest(states_filter=[]))
    return answer.error_code, sorted(g.group_id for g in answer.groups)


async def two_groups_then_lost(tmp_path):
    """A share broker whose groups "first" and "second" are written and replicated, then its
    __consumer_offsets partition led elsewhere: (broker, the partition it led)."""
    broker = share_broker(tmp_path, offsets_commit_timeout_ms=10_000)
    await broker.load()
    for group_id in ("first", "second"):
        answer = await answered(broker, share_heartbeat(broker, "m", group_id), replicated=True)
        assert answer.error_code == Errors.NONE
    return broker, lose_leadership(broker, OFFSETS)


def test_a_partition_lost_while_it_is_loading_has_its_load_cancelled_and_what_it_replayed_dropped(
        tmp_path, monkeypatch):
    """CoordinatorRuntime's unload (and removeLoadingPartitionWithEpoch) cancels a load under way:
    a group the load had replayed before the leadership went is not listed by this broker (before,
    the load stopped at its next read and left that group in memory, listed by ListGroups until
    the partition was loaded again); led again, the partition is loaded in full."""
    async def go():
        broker, partition = await two_groups_then_lost(tmp_path)
        assert await listed(broker) == (Errors.NONE, [])

        monkeypatch.setattr(group_log, "LOAD_READ_BYTES", 1)      # a batch (one group's heartbeat) at a time
        store = broker.group_apis.store
        broker.image().topics_by_name[OFFSETS].partitions[0].leader = broker.node_id
        broker.partitions[(OFFSETS, 0)] = partition
        store.on_metadata()
        await asyncio.sleep(0)                          # the load replays its first batch, then yields
        assert 0 in store.loading and list(broker.group_apis.coordinator.share_groups) == ["first"]
        lose_leadership(broker, OFFSETS)
        assert store.loading == {} and await listed(broker) == (Errors.NONE, [])

        await lead_again(broker, OFFSETS, partition)
        assert await listed(broker) == (Errors.NONE, ["first", "second"])
        broker.close()
    asyncio.run(go())


def marker_writing_broker(tmp_path):
    """replicated_broker whose markers are written by a broker's partition side (TxnMarkersApi:
    the producer state's checks, the ``.txnindex``, the last stable offset) on t's logs, each led
    here alone."""
    broker = replicated_broker(tmp_path, request_timeout_ms=10_000)
    for registration in broker.image().topics_by_name["t"].partitions.values():
        registration.isr = registration.replicas = [broker.node_id]
    broker.topic_configs = SimpleNamespace(produce_settings=lambda image, topic: SimpleNamespace(
        min_insync_replicas=1, log_append_time=False))
    broker.authorizer = None
    broker.txn_markers = TxnMarkersApi(broker)
    return broker


def produce_in_transaction(partition, producer_id: int, values) -> None:
    data = build_batch([(b"k", value, [], 0) for value in values], producer_id=producer_id, producer_epoch=0,
                       base_sequence=0, is_transactional=True)
    validated = validate_produce(data, topic_partition=partition.name, max_message_bytes=1 << 20,
                                 log_append_time=False, now_ms=0)
    partition.append(validated, now_ms=0)


def read_committed_values(partition) -> list:
    """What a read_committed consumer reads of ``partition``: a Fetch's batches below the last
    stable offset and its aborted transactions, filtered as Kafka's consumer filters them
    (CompletedFetch: a producer's batches from an aborted transaction's first offset on are
    skipped until its ABORT marker; control batches are never shown)."""
    data, aborted = partition.read_committed(0, 1 << 20, min_one_batch=True)
    aborted, skipping, values = sorted(aborted, key=lambda a: a.first_offset), set(), []
    for batch in iter_batches(data):
        while aborted and aborted[0].first_offset <= batch.next_offset - 1:
            skipping.add(aborted.pop(0).producer_id)
        if batch.is_control:
            if parse_control_key(next(iter(batch)).key).type == ControlRecordType.ABORT:
                skipping.discard(batch.producer_id)
        elif not (batch.is_transactional and batch.producer_id in skipping):
            values += [record.value for record in batch]
    return values


def markers_in(partition) -> list:
    return [(batch.producer_epoch, ControlRecordType(parse_control_key(next(iter(batch)).key).type).name)
            for batch in iter_batches(partition.log.read(0, 1 << 20, min_one_batch=True).data) if batch.is_control]


@pytest.mark.parametrize("committed, end_txn_version", [(True, 4), (False, 5)], ids=["commit-tv1", "abort-tv2"])
def test_a_marker_written_before_the_unload_is_written_again_by_the_new_coordinator_and_read_once(
        tmp_path, committed, end_txn_version):
    """The coordinator loses __transaction_state while a WriteTxnMarkers it sent is already in the
    data partitions' logs but not answered yet: its send is stopped, and the coordinator that
    loads the PrepareCommit/PrepareAbort again (a higher coordinator epoch) sends the same
    marker again. The partition accepts it, as Kafka's ProducerAppendInfo accepts a marker with
    no transaction open (with transaction version 2, KAFKA-19999's retried marker of the
    producer's current epoch), and it ends no transaction: no second ``.txnindex`` entry, the
    last stable offset at the log end, and a read_committed consumer reads the committed records
    once, the aborted ones never."""
    async def go():
        broker = marker_writing_broker(tmp_path)
        await broker.load()
        producer_id = (await replicated(broker, TXN_STATE, init_producer_id(broker, TX))).producer_id
        assert await replicated(broker, TXN_STATE, add(broker, producer_id, 0, (0, 1))) == {0: 0, 1: 0}
        data = [broker.partitions[("t", index)] for index in (0, 1)]
        produce_in_transaction(data[0], producer_id, [b"a", b"b"])
        produce_in_transaction(data[1], producer_id, [b"c"])

        write, requests = broker.txn_markers.write_txn_markers, []

        async def answer_lost_the_first_time(request):
            requests.append(request)
            response = await write(request)
            if len(requests) == 1:
                await asyncio.Event().wait()          # still waiting for the answer when the partition goes
            return response
        broker.txn_markers.write_txn_markers = answer_lost_the_first_time
        ended = await replicated(broker, TXN_STATE, handler(broker.txn_apis, END_TXN)(ctx(end_txn_version), EndTxnRequest(
            transactional_id=TX, producer_id=producer_id, producer_epoch=0, committed=committed)))
        assert ended.error_code == Errors.NONE
        await until(lambda: all(markers_in(p) for p in data))

        partition = lose_leadership(broker, TXN_STATE)
        assert broker.txn_apis.markers.tasks == {}
        partition.leader_epoch = 1                    # the new coordinator's epoch
        await lead_again(broker, TXN_STATE, partition)
        final = "CompleteCommit" if committed else "CompleteAbort"
        await until(lambda: broker.txn_apis.coordinator.txns[TX].state == final)

        epoch = 0 if end_txn_version < 5 else 1        # transaction version 2: the marker's epoch is bumped
        kind = "COMMIT" if committed else "ABORT"
        assert [m.coordinator_epoch for r in requests for m in r.markers] == [0, 1]
        assert [markers_in(p) for p in data] == [[(epoch, kind), (epoch, kind)]] * 2
        assert [p.last_stable_offset() for p in data] == [p.log.log_end_offset for p in data] == [4, 3]
        entries = [[(e.first_offset, e.last_offset) for e in p.log.segments[0].txn_index.entries()] for p in data]
        assert entries == ([[], []] if committed else [[(0, 2)], [(0, 1)]])
        assert [read_committed_values(p) for p in data] == ([[b"a", b"b"], [b"c"]] if committed else [[], []])
        broker.close()
    asyncio.run(go())


@pytest.mark.parametrize("error", [OSError(5, "Input/output error"), ValueError("a torn batch"),
                                   RuntimeError("a bug in the replay")], ids=["io", "torn", "bug"])
def test_a_load_that_fails_drops_what_it_replayed_answers_not_coordinator_and_is_tried_again(
        tmp_path, monkeypatch, caplog, error):
    """The runtime's FAILED coordinator: a load that fails unloads what it replayed (before, the
    group it had replayed stayed in memory) and its groups are answered NOT_COORDINATOR, which
    ListGroups skips (before, COORDINATOR_LOAD_IN_PROGRESS, and ListGroups too, until the next
    metadata update, though no load was under way); the next metadata update loads it again."""
    async def go():
        broker, partition = await two_groups_then_lost(tmp_path)

        monkeypatch.setattr(group_log, "LOAD_READ_BYTES", 1)      # a batch (one group's heartbeat) at a time
        reads = []

        def failing_second_read(*args, **kwargs):
            reads.append(args)
            if len(reads) == 2:
                raise error
            return type(partition.log).read(partition.log, *args, **kwargs)
        partition.log.read = failing_second_read
        broker.image().topics_by_name[OFFSETS].partitions[0].leader = broker.node_id
        broker.partitions[(OFFSETS, 0)] = partition
        store = broker.group_apis.store
        store.on_metadata()
        await until(lambda: not store.loading)
        assert len(reads) == 2 and not store.loaded
        assert broker.group_apis.coordinator.share_groups == {}
        assert store.coordinator_error("first") == Errors.NOT_COORDINATOR
        assert await listed(broker) == (Errors.NONE, []) and store.failed == {0}
        logged = [r.getMessage() for r in caplog.records if r.levelname == "ERROR" and OFFSETS in r.getMessage()]
        assert len(logged) == 1 and str(error) in logged[0]        # once, naming the partition and why

        store.on_metadata()                                       # the next metadata update
        await until(lambda: not store.loading)
        assert store.loaded == {0} and not store.failed and await listed(broker) == (Errors.NONE, ["first", "second"])
        assert store.coordinator_error("first") == Errors.NONE
        broker.close()
    asyncio.run(go())
