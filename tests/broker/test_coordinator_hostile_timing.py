"""Hostile and odd requests while a coordinator is held in the states last stop's handlers
changed (issue 29), on the stand-in broker of test_coordinator_replication (real logs, one
follower played by calls, no node):

- WriteTxnMarkers while ``__consumer_offsets`` loads: every marker of the loading partition is
  NOT_LEADER_OR_FOLLOWER (KafkaApis' answer for a group coordinator still loading, so that the
  transaction coordinator sends it again), whatever its fields, and nothing is written to it;
  a data partition in the same request is written; once loaded the marker is taken.
- OffsetFetch with ``require_stable`` while a commit is in flight: parked, odd forms too (all
  topics, a partition named twice, unknown topics and groups, one group twice); after
  ``offsets.commit.timeout.ms`` each group is NOT_COORDINATOR, no parked answer stays behind
  (the acks purgatory and the settling tasks empty) and the next request is served.
- JoinGroup, SyncGroup and OffsetCommit while the leader's assignment is appended and not
  committed (CompletingRebalance): Kafka's ClassicGroup answers (REBALANCE_IN_PROGRESS for a
  member's commit, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, INCONSISTENT_GROUP_PROTOCOL, the
  current generation for a member joining again unchanged); a new member's join rebalances
  and the parked SyncGroups are answered REBALANCE_IN_PROGRESS, not the assignment.
"""
from __future__ import annotations

import asyncio

from kafkawire.broker import coordinator_acks
from kafkawire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kafkawire.messages.offset_commit_request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                      OffsetCommitRequestTopic)
from kafkawire.messages.offset_fetch_request import (OffsetFetchRequest, OffsetFetchRequestGroup, OffsetFetchRequestTopic,
                                                     OffsetFetchRequestTopics)
from kafkawire.messages.sync_group_request import SyncGroupRequest
from kafkawire.messages.write_txn_markers_request import (WritableTxnMarker, WritableTxnMarkerTopic,
                                                          WriteTxnMarkersRequest)
from kafkawire.protocol.error_codes import Errors

from tests.responses import error_codes
from .test_coordinator_replication import (answered, commit_both, fetched_both, follower_fetches, handler,
                                           pending_txn_offset, sync, two_members_joined)
from .test_coordinator_unload import marker_writing_broker
from .test_txn_state_topic import GROUP, ctx, until

OFFSETS = "__consumer_offsets"


def _marker(producer_id, epoch, partitions, *, topic=OFFSETS, commit=True, coordinator_epoch=0):
    return WritableTxnMarker(producer_id=producer_id, producer_epoch=epoch, transaction_result=commit,
                             coordinator_epoch=coordinator_epoch,
                             topics=[WritableTxnMarkerTopic(name=topic, partition_indexes=list(partitions))])


def _results(response) -> list[tuple[int, str, int, int]]:
    return [(m.producer_id, t.name, p.partition_index, p.error_code)
            for m in response.markers for t in m.topics for p in t.partitions]


def test_markers_for_consumer_offsets_while_it_loads_are_not_leader_or_follower_and_write_nothing(tmp_path):
    async def go():
        broker = marker_writing_broker(tmp_path)
        await broker.load()
        producer_id, epoch = await pending_txn_offset(broker, 50)
        follower_fetches(broker, OFFSETS)
        store = broker.group_apis.store
        # the partition is led elsewhere and here again: its load is held until ``release`` is set
        partition = broker.partitions.pop((OFFSETS, 0))
        broker.replication.acks.step_down(broker.partitions)
        store.on_metadata()
        release, load = asyncio.Event(), store._load

        async def held_load(index, led):
            await release.wait()
            await load(index, led)
        store._load = held_load
        broker.partitions[(OFFSETS, 0)] = partition
        store.on_metadata()
        assert 0 in store.loading and 0 not in store.loaded
        end = partition.log.log_end_offset
        hostile = [
            _marker(producer_id, epoch, [0]),
            _marker(producer_id, epoch, [0, 0, 0]),                               # named three times
            _marker(producer_id, epoch, [0], commit=False, coordinator_epoch=-1),
            _marker(-1, -1, [0]), _marker(2**63 - 1, 2**15 - 1, [0], coordinator_epoch=2**31 - 1),
            _marker(producer_id, epoch + 5, [0]),                                 # a later epoch than the producer's
        ]
        answers = [_results(await broker.txn_markers.write_txn_markers(WriteTxnMarkersRequest(markers=[m])))
                   for m in hostile]
        assert all(code == Errors.NOT_LEADER_OR_FOLLOWER for answer in answers for *_, code in answer), answers
        assert [len(a) for a in answers] == [1, 1, 1, 1, 1, 1]     # the partition named three times: one result
        # with a data partition beside it: that one is written, the loading one is not
        mixed = await broker.txn_markers.write_txn_markers(WriteTxnMarkersRequest(markers=[
            _marker(77, 0, [0]), _marker(77, 0, [1], topic="t")]))
        assert sorted(_results(mixed)) == [(77, OFFSETS, 0, Errors.NOT_LEADER_OR_FOLLOWER), (77, "t", 1, Errors.NONE)]
        assert partition.log.log_end_offset == end, "a marker was written to a partition still loading"

        release.set()
        await until(lambda: 0 in store.loaded)
        assert store.txn_offsets.is_pending(GROUP, "t", 0)             # the load brought the pending offset back
        commit = asyncio.ensure_future(broker.txn_markers.write_txn_markers(WriteTxnMarkersRequest(markers=[
            _marker(producer_id, epoch, [0])])))
        await until(lambda: partition.log.log_end_offset > end)
        follower_fetches(broker, OFFSETS)
        await until(commit.done)
        assert _results(commit.result()) == [(producer_id, OFFSETS, 0, Errors.NONE)]
        assert await fetched_both(broker) == [(Errors.NONE, 50), (Errors.NONE, -1)]
        broker.close()
    asyncio.run(go())


def _stable_fetches(apis):
    """OffsetFetch requests with ``require_stable``, odd in form: (what, version, request)."""
    def one(version, group_id=GROUP, topics=...):
        topics = [OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])] if topics is ... else topics
        return version, OffsetFetchRequest(group_id=group_id, require_stable=True, topics=topics)

    def groups(*entries):
        return 8, OffsetFetchRequest(require_stable=True, groups=[OffsetFetchRequestGroup(
            group_id=g, topics=None if t is None else [OffsetFetchRequestTopics(name=n, partition_indexes=ps)
                                                       for n, ps in t]) for g, t in entries])
    return {
        "all topics": one(7, topics=None),
        "a partition named three times": one(7, topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0, 0, 0])]),
        "an unknown topic and a negative partition": one(7, topics=[
            OffsetFetchRequestTopic(name="no-such-topic", partition_indexes=[0]),
            OffsetFetchRequestTopic(name="t", partition_indexes=[-1, 2**31 - 1])]),
        "an unknown group": one(7, group_id="no-such-group"),
        "one group twice, all topics and some": groups((GROUP, None), (GROUP, [("t", [0])])),
        "an unknown group beside the group": groups(("no-such-group", [("t", [0])]), (GROUP, [("t", [1])])),
    }


def _group_codes(version, response) -> list[int]:
    return [response.error_code] if version < 8 else [g.error_code for g in response.groups]


def test_stable_offset_fetches_parked_behind_a_commit_are_not_coordinator_after_the_timeout_and_leave_nothing(
        tmp_path):
    async def go():
        broker = marker_writing_broker(tmp_path)
        broker.config.offsets_commit_timeout_ms = 10_000
        await broker.load()
        assert await answered(broker, commit_both(broker, [(0, 42)]), replicated=True) == [Errors.NONE]
        apis = broker.group_apis.offset_apis
        broker.config.offsets_commit_timeout_ms = 300       # the follower fetches no more
        in_flight = await answered(broker, commit_both(broker, [(0, 43)]), replicated=False)
        fetches = {what: (version, asyncio.ensure_future(apis.offset_fetch(ctx(version), request)))
                   for what, (version, request) in _stable_fetches(apis).items()}
        for _ in range(20):
            await asyncio.sleep(0)
        assert [what for what, (_, f) in fetches.items() if f.done()] == [], "answered before the commit before it"
        assert broker.replication.acks.waiting                # the commit and the fetches, parked
        await until(lambda: in_flight.done() and all(f.done() for _, f in fetches.values()))
        assert in_flight.result() == [Errors.COORDINATOR_NOT_AVAILABLE]
        answers = {what: _group_codes(version, f.result()) for what, (version, f) in fetches.items()}
        assert answers == {what: [Errors.NOT_COORDINATOR] * (2 if what.startswith(("one group", "an unknown group b"))
                                                            else 1) for what in fetches}, answers
        assert not any(Errors.UNKNOWN_SERVER_ERROR in error_codes(f.result()) for _, f in fetches.values())
        await until(lambda: not broker.replication.acks.waiting and not coordinator_acks._settling)

        # the next requests are served: a stable fetch once the follower has the commit
        broker.config.offsets_commit_timeout_ms = 10_000
        follower_fetches(broker, OFFSETS)
        version, request = _stable_fetches(apis)["one group twice, all topics and some"]
        r = await apis.offset_fetch(ctx(version), request)
        served = [(g.error_code, [(t.name, p.partition_index, p.committed_offset) for t in g.topics for p in t.partitions])
                  for g in r.groups]
        assert served == [(Errors.NONE, [("t", 0, 43)])] * 2     # all topics: those with an offset
        broker.close()
    asyncio.run(go())


async def _join(broker, member_id, metadata=b"", *, version=3, protocol="range"):
    client = type("Client", (), {"api_version": version, "client_id": "c", "peer": ("127.0.0.1", 1)})()
    return await handler(broker.group_apis, 11)(client, JoinGroupRequest(
        group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id=member_id,
        protocol_type="consumer", protocols=[JoinGroupRequestProtocol(name=protocol, metadata=metadata)]))


async def _commit(broker, member_id, generation):
    r = await broker.group_apis.offset_apis.offset_commit(ctx(8), OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=generation, member_id=member_id, topics=[
            OffsetCommitRequestTopic(name="t", partitions=[OffsetCommitRequestPartition(
                partition_index=0, committed_offset=5, committed_metadata="")])]))
    return r.topics[0].partitions[0].error_code


async def _sync(broker, member_id, generation, *, group_id=GROUP, protocol_type="consumer"):
    """SyncGroup v5 (its protocol type and name required: KafkaApis' INCONSISTENT_GROUP_PROTOCOL)."""
    r = await handler(broker.group_apis, 14)(ctx(5), SyncGroupRequest(
        group_id=group_id, generation_id=generation, member_id=member_id, protocol_type=protocol_type,
        protocol_name="range", assignments=[]))
    return r.error_code


async def _completing(tmp_path):
    """Two members joined, the leader's assignment appended and not committed: the broker, the
    leader's and the other member's JoinGroup answers and their parked SyncGroups."""
    broker, leader, other = await two_members_joined(tmp_path)
    leaders = await answered(broker, sync(broker, leader, [(leader.member_id, b"L"), (other.member_id, b"O")]),
                             replicated=False)
    others = sync(broker, other)
    for _ in range(5):
        await asyncio.sleep(0)
    assert broker.group_apis.coordinator.groups[GROUP].state == "CompletingRebalance"
    assert not leaders.done() and not others.done()
    return broker, leader, other, leaders, others


def test_requests_in_the_completing_rebalance_window_get_kafkas_answers_and_leave_the_assignment_alone(tmp_path):
    async def go():
        broker, leader, other, leaders, others = await _completing(tmp_path)
        generation = other.generation_id
        # ClassicGroup.validateOffsetCommit, in its order
        assert [await _commit(broker, other.member_id, generation),
                await _commit(broker, other.member_id, generation + 1),
                await _commit(broker, "no-such-member", generation),
                await _commit(broker, "", -1)] == [Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION,
                                                   Errors.UNKNOWN_MEMBER_ID, Errors.UNKNOWN_MEMBER_ID]
        # SyncGroup's validation before the state
        assert [await _sync(broker, other.member_id, generation - 1),
                await _sync(broker, "no-such-member", generation),
                await _sync(broker, other.member_id, generation, protocol_type="connect"),
                await _sync(broker, other.member_id, generation, protocol_type=None),
                await _sync(broker, other.member_id, generation, group_id="")] == [
            Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID, Errors.INCONSISTENT_GROUP_PROTOCOL,
            Errors.INCONSISTENT_GROUP_PROTOCOL, Errors.INVALID_GROUP_ID]
        # a member joining again unchanged (it missed its answer) gets the current generation
        again = await _join(broker, other.member_id)
        assert (again.error_code, again.generation_id, again.leader) == (Errors.NONE, generation, leader.member_id)
        unknown = await _join(broker, "no-such-member")
        assert unknown.error_code == Errors.UNKNOWN_MEMBER_ID
        group = broker.group_apis.coordinator.groups[GROUP]
        assert group.state == "CompletingRebalance" and not leaders.done() and not others.done()

        follower_fetches(broker, OFFSETS)                  # the assignment is committed after all
        await until(lambda: leaders.done() and others.done())
        assert [(s.result().error_code, s.result().assignment) for s in (leaders, others)] == [
            (Errors.NONE, b"L"), (Errors.NONE, b"O")]
        assert group.state == "Stable"
        broker.close()
    asyncio.run(go())


def test_a_new_member_joining_in_the_window_rebalances_and_the_parked_syncs_are_rebalance_in_progress(tmp_path):
    """GroupMetadataManager: a new member in CompletingRebalance prepares a rebalance, which
    answers every parked SyncGroup REBALANCE_IN_PROGRESS at once; the assignment record, when it
    commits, finds the group moved on and gives nobody its part."""
    async def go():
        broker, leader, other, leaders, others = await _completing(tmp_path)
        newcomer = asyncio.ensure_future(_join(broker, ""))
        await until(lambda: leaders.done() and others.done())
        assert [s.result().error_code for s in (leaders, others)] == [Errors.REBALANCE_IN_PROGRESS] * 2
        group = broker.group_apis.coordinator.groups[GROUP]
        assert group.state == "PreparingRebalance" and not newcomer.done()
        follower_fetches(broker, OFFSETS)                  # the assignment commits: the group has moved on
        for _ in range(20):
            await asyncio.sleep(0)
        assert group.state == "PreparingRebalance" and [m.assignment for m in group.members.values()] == [b""] * 3
        # ClassicGroup.validateOffsetCommit has no word on PreparingRebalance: a member of the
        # generation may commit (once the follower has it); a SyncGroup is REBALANCE_IN_PROGRESS
        assert await answered(broker, _commit(broker, other.member_id, other.generation_id),
                              replicated=True) == Errors.NONE
        assert await _sync(broker, other.member_id, other.generation_id) == Errors.REBALANCE_IN_PROGRESS
        broker.close()
        newcomer.cancel()
    asyncio.run(go())


def test_the_leader_syncing_again_in_the_window_changes_nothing_committed_and_its_first_request_stays_parked(
        tmp_path):
    """A leader that sends SyncGroup again while its assignment is in flight (another assignment):
    Kafka's ClassicGroupMember.setAwaitingSyncFuture replaces the parked answer (the first request
    is never answered: its connection, muted as Kafka's, waits until the client gives up and
    closes it, which cancels it here), and the first assignment to commit is the group's."""
    async def go():
        broker, leader, other, leaders, others = await _completing(tmp_path)
        partition = broker.partitions[(OFFSETS, 0)]
        end = partition.log.log_end_offset
        again = sync(broker, leader, [(leader.member_id, b"L2"), (other.member_id, b"O2")])
        await until(lambda: partition.log.log_end_offset > end)      # its assignment appended too
        follower_fetches(broker, OFFSETS)
        await until(lambda: again.done() and others.done())
        assert [(s.result().error_code, s.result().assignment) for s in (again, others)] == [
            (Errors.NONE, b"L"), (Errors.NONE, b"O")]
        group = broker.group_apis.coordinator.groups[GROUP]
        assert group.state == "Stable" and [m.assignment for m in group.members.values()] == [b"L", b"O"]
        assert not leaders.done()
        leaders.cancel()                                   # the client closed the connection
        await until(leaders.done)
        assert leaders.cancelled()
        await until(lambda: not broker.replication.acks.waiting and not coordinator_acks._settling)
        broker.close()
    asyncio.run(go())
