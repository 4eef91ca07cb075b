"""The group coordinator's initialization of share-partitions (kafkawire.broker.share_group_init),
without I/O: only initialized partitions are assigned, the ShareGroupStatePartitionMetadata
records (initializing, then initialized) are written in Kafka's format and replayed to the same
state, a failed initialization is asked for again, a partition initializing too long is asked for
again, a leader's own earlier state is kept, and the persister batches per share coordinator."""
from __future__ import annotations

import asyncio
import uuid

from kafkawire.broker import consumer_admin
from kafkawire.broker.share_group_init import RETRY_INTERVAL_MS, ShareGroupInitializer
from kafkawire.broker.share_persister import BATCH_SIZE, SharePersister
from kafkawire.broker.share_records import STATE_PARTITIONS
from kafkawire.protocol.error_codes import Errors

from kafkawire.broker.consumer_coordinator import TopicsView

from .test_share_groups import T1, T2, FakeClassic, ShareGroups, VIEW, assigned, beat


class Answer:
    def __init__(self, error_code=Errors.NONE, start_offset=-1, state_epoch=0):
        self.error_code, self.start_offset, self.state_epoch = error_code, start_offset, state_epoch


class FakePersister:
    def __init__(self, failing=(), states=None):
        self.failing, self.states = set(failing), states or {}
        self.initialized: list = []

    async def summary_many(self, group_id, keys):
        return {k: self.states.get(k, Answer()) for k in keys}

    async def initialize_many(self, group_id, keys, state_epoch, start_offset):
        self.initialized.append((list(keys), state_epoch, start_offset))
        return {k: Errors.COORDINATOR_NOT_AVAILABLE if k in self.failing else Errors.NONE for k in keys}


def setup(persister):
    classic = FakeClassic()
    asked: list = []
    groups = ShareGroups(classic, topics=lambda: VIEW, timeouts=lambda g: (45_000, 5_000),
                         on_initialize=lambda *args: asked.append(args))
    return classic, groups, ShareGroupInitializer(groups, persister), asked


def test_partitions_are_assigned_once_initialized_and_a_failed_request_is_asked_again_whole():
    persister = FakePersister(failing={(T1, 1)})
    classic, groups, initializer, asked = setup(persister)
    first = beat(groups, "m1", 0, ["orders"])
    assert (first.error_code, assigned(first)) == (Errors.NONE, {})        # nothing initialized yet
    group = groups.groups["g"]
    assert group.initializing == {T1: ("orders", frozenset({0, 1}))} and group.initialized == {}
    assert [int.from_bytes(k[:2], "big") for k, _ in classic.written][-1] == STATE_PARTITIONS
    assert asked == [("g", 1, {T1: ("orders", frozenset({0, 1}))}, True)]
    asyncio.run(initializer.run(*asked.pop()))
    # InitializeShareGroupState with the group epoch as state epoch and start offset -1 (the
    # leader resolves share.auto.offset.reset), as Kafka's coordinator asks
    assert persister.initialized == [([(T1, 0), (T1, 1)], 1, -1)]
    # one failed: the whole request is uninitialized, as Kafka's handlePersisterInitializeResponse does
    assert group.initialized == {} and group.initializing == {}
    second = beat(groups, "m1", 1)             # nothing initialized, nothing assigned: both asked again
    assert (second.member_epoch, second.assignment) == (1, None)
    assert asked == [("g", 1, {T1: ("orders", frozenset({0, 1}))}, False)]
    persister.failing.clear()
    asyncio.run(initializer.run(*asked.pop()))
    third = beat(groups, "m1", 1)
    assert (third.member_epoch, assigned(third)) == (2, {T1: [0, 1]}) and asked == []
    # replayed, the records give the same state (what a coordinator that restarts knows)
    replica_classic = FakeClassic()
    replica = ShareGroups(replica_classic, topics=lambda: VIEW, timeouts=lambda g: (45_000, 5_000))
    for key, value in classic.written:
        consumer_admin.replay(replica_classic, key, value)
    copy = replica.groups["g"]
    assert (copy.initialized, copy.initializing, copy.deleting) == ({T1: ("orders", frozenset({0, 1}))}, {}, {})
    assert copy.has_state_metadata


def test_an_initialization_pending_too_long_is_asked_again():
    classic, groups, _, asked = setup(FakePersister())
    beat(groups, "m1", 0, ["orders"])
    assert len(asked) == 1
    beat(groups, "m1", 1)
    assert len(asked) == 1                             # still initializing: not asked twice
    classic.now_ms = lambda: 1_000 + RETRY_INTERVAL_MS
    beat(groups, "m1", 1)
    assert len(asked) == 2 and asked[-1][2] == {T1: ("orders", frozenset({0, 1}))}


def test_a_leaders_own_earlier_state_is_kept_not_initialized_again():
    # an older kafkawire's leader initialized (state epoch 0) and consumed up to offset 7
    persister = FakePersister(states={(T1, 0): Answer(start_offset=7, state_epoch=0),
                                      (T1, 1): Answer(start_offset=3, state_epoch=4)})
    _, groups, initializer, asked = setup(persister)
    beat(groups, "m1", 0, ["orders"])
    asyncio.run(initializer.run(*asked.pop()))
    assert persister.initialized == [([(T1, 1)], 1, -1)]
    assert groups.groups["g"].initialized == {T1: ("orders", frozenset({0, 1}))}


class FakeBroker:
    node_id = 1


def test_the_persister_batches_per_share_coordinator():
    persister = SharePersister.__new__(SharePersister)
    persister.broker = FakeBroker()
    topics = [uuid.UUID(int=i) for i in range(3)]
    keys = [(t, p) for t in topics for p in range(900)]             # 2700 share-partitions
    sent: list = []
    persister._coordinator = lambda group_id, topic_id, partition: 1 + partition % 2   # two coordinators
    flaky = {(topics[0], 5)}

    async def request(api_key, node_id, request):
        from kafkawire.messages import initialize_share_group_state_response as isr
        pairs = [(t.topic_id, p.partition) for t in request.topics for p in t.partitions]
        sent.append((node_id, len(pairs)))
        codes = {pair: Errors.COORDINATOR_LOAD_IN_PROGRESS if pair in flaky else Errors.NONE for pair in pairs}
        flaky.difference_update(pairs)
        return isr.InitializeShareGroupStateResponse(results=[isr.InitializeStateResult(topic_id=t, partitions=[
            isr.PartitionResult(partition=p, error_code=codes[(t, p)]) for t2, p in pairs if t2 == t])
            for t in dict.fromkeys(t for t, _ in pairs)])
    persister._request = request
    codes = asyncio.run(persister.initialize_many("g", keys, 1, -1))
    assert set(codes.values()) == {Errors.NONE} and len(codes) == len(keys)
    first_round = sent[:-1]
    assert sorted(first_round) == [(1, 350), (1, BATCH_SIZE), (2, 350), (2, BATCH_SIZE)]
    assert sent[-1] == (2, 1)                        # the retriable one asked again, alone


def test_a_deleted_topic_leaves_the_record_and_does_not_ask_for_new_assignments_forever():
    persister = FakePersister()
    classic, groups, initializer, asked = setup(persister)
    beat(groups, "m1", 0, ["orders", "audit"])
    asyncio.run(initializer.run(*asked.pop()))
    settled = beat(groups, "m1", 1)
    assert settled.member_epoch == 2 and set(assigned(settled)) == {T1, T2}
    without_audit = TopicsView.of([("orders", T1, 2)])
    groups.topics = lambda: without_audit                  # "audit" deleted
    after = beat(groups, "m1", 2)                          # the metadata hash changed: a new epoch
    assert (after.member_epoch, assigned(after)) == (3, {T1: [0, 1]})
    group = groups.groups["g"]
    assert set(group.initialized) == {T1} and asked == []
    written = len(classic.written)
    again = beat(groups, "m1", 3)                          # no new epoch, no record, for the topic gone
    assert again.member_epoch == 3 and len(classic.written) == written


class HeldPersister(FakePersister):
    """A share coordinator that answers InitializeShareGroupState only when released."""

    def __init__(self, failing=()):
        super().__init__(failing)
        self.release = asyncio.Event()

    async def initialize_many(self, group_id, keys, state_epoch, start_offset):
        await self.release.wait()
        return await super().initialize_many(group_id, keys, state_epoch, start_offset)


def test_the_heartbeat_is_answered_before_the_initialization_and_its_failure_is_not_the_members():
    """As Kafka 4.3.1's GroupCoordinatorService: the persister's call runs after the heartbeat's
    answer (a timer task), and its error only uninitializes the request's partitions."""
    persister = HeldPersister(failing={(T1, 0)})
    classic = FakeClassic()
    groups = ShareGroups(classic, topics=lambda: VIEW, timeouts=lambda g: (45_000, 5_000))
    initializer = ShareGroupInitializer(groups, persister)
    groups.on_initialize = initializer.start

    async def scenario():
        first = beat(groups, "m1", 0, ["orders"])          # answered while the share coordinator is silent
        assert (first.error_code, assigned(first)) == (Errors.NONE, {}) and len(initializer.tasks) == 1
        assert groups.groups["g"].initializing == {T1: ("orders", frozenset({0, 1}))}
        persister.release.set()
        await asyncio.gather(*initializer.tasks)
        assert groups.groups["g"].initializing == {} and groups.groups["g"].initialized == {}
        again = beat(groups, "m1", 1)                      # asks for both again
        initializer.close()
        return again
    after = asyncio.run(scenario())
    assert (after.error_code, after.member_epoch, after.assignment) == (Errors.NONE, 1, None)


def test_a_deleted_topic_leaves_the_record_when_the_metadata_shows_it_as_kafkas_coordinator_writes_it():
    persister = FakePersister()
    classic, groups, initializer, asked = setup(persister)
    beat(groups, "m1", 0, ["orders", "audit"])
    asyncio.run(initializer.run(*asked.pop()))
    groups.on_metadata()                                   # the first metadata seen with the group: nothing gone
    written = len(classic.written)
    assert set(groups.groups["g"].initialized) == {T1, T2}
    groups.topics = lambda: TopicsView.of([("orders", T1, 2)])     # "audit" deleted, no heartbeat since
    groups.on_metadata()
    assert len(classic.written) == written + 1
    assert [int.from_bytes(k[:2], "big") for k, _ in classic.written][-1] == STATE_PARTITIONS
    assert set(groups.groups["g"].initialized) == {T1} and groups.groups["g"].initializing == {}
    groups.on_metadata()                                   # nothing more deleted: nothing written
    assert len(classic.written) == written + 1


def test_a_persister_that_raises_is_logged_and_its_partitions_asked_again_at_the_next_heartbeat(caplog):
    class Raising(FakePersister):
        async def initialize_many(self, group_id, keys, state_epoch, start_offset):
            raise RuntimeError("the share coordinator's channel broke")

    classic, groups, initializer, asked = setup(Raising())

    async def started_and_ended():
        initializer.start(*asked.pop())
        while initializer.tasks:
            await asyncio.gather(*initializer.tasks, return_exceptions=True)
    beat(groups, "m1", 0, ["orders"])
    asyncio.run(started_and_ended())
    assert groups.groups["g"].initializing == {}                      # not left initializing
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        "[GroupId g] Initializing the state of share-partitions failed: the share coordinator's channel broke"]
    beat(groups, "m1", 1)                        # asked again now, not after RETRY_INTERVAL_MS
    assert asked == [("g", 1, {T1: ("orders", frozenset({0, 1}))}, False)]
