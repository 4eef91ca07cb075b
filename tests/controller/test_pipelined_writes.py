"""Controller writes are pipelined as in Kafka's QuorumController (issue 28): a write's records
are applied to the controller's state as they are appended, ahead of their commit, so the next
writes run at once against that state and many wait for their commit together; each is
answered when its batch commits, in log order. A leader change with writes in flight answers
each NOT_CONTROLLER, as Kafka's renounce fails its purgatory ("No controller appears to be
active."), and puts the state back to the committed one (resetToLastCommitted): nothing that
never committed stays visible.

Before issue 28 the controller wrote one batch per commit: the second write waited for the
first one's commit, so only one batch was ever held here."""
import asyncio
import uuid

from kafkawire import messages
from kafkawire.metadata.frame import encode_metadata_record
from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, Running, add_controller, broker_request, heartbeat, run, until
from .test_torn_writes import create, held_leader, lead_with_a_broker

WRITES = 20


def _topic_names(quorum) -> list[str]:
    return [m.name for _, m in quorum.records() if type(m).NAME == "TopicRecord"]


def test_many_writes_are_in_flight_at_once_and_answered_in_log_order_once_committed():
    quorum, leader = held_leader()

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            quorum.holding = True
            answered = []
            calls = []
            for b in range(100, 100 + WRITES):
                call = asyncio.ensure_future(leader.handlers()[62].handle(Ctx(0), broker_request(b)))
                call.add_done_callback(lambda _, b=b: answered.append(b))
                calls.append(call)
            await until(lambda: len(quorum.held) == WRITES, "every registration's batch appended before a commit")
            in_flight = leader.pipeline.in_flight
            assert not answered, "a write was answered before its batch committed"
            assert all(b in leader.state.image.brokers for b in range(100, 100 + WRITES))   # applied ahead
            quorum.release()
            replies = await asyncio.gather(*calls)
            return in_flight, answered, replies

    in_flight, answered, replies = run(go())
    assert in_flight == WRITES
    assert answered == list(range(100, 100 + WRITES))
    assert all(r.error_code == 0 for r in replies)
    # Each broker epoch is the offset of its RegisterBrokerRecord, as the raft log gave it.
    registered = {m.broker_id: offset for offset, m in quorum.records() if type(m).NAME == "RegisterBrokerRecord"}
    assert [r.broker_epoch for r in replies] == [registered[b] for b in range(100, 100 + WRITES)]


def test_a_leader_change_answers_the_writes_in_flight_not_controller_and_drops_what_never_committed():
    quorum, leader = held_leader()
    follower = add_controller(quorum, 2)          # replays only what commits

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            assert (await leader.handlers()[19].handle(Ctx(7), create("kept"))).topics[0].error_code == 0
            quorum.holding = True
            calls = [asyncio.ensure_future(leader.handlers()[19].handle(Ctx(7), create(name))) for name in "ab"]
            await until(lambda: len(quorum.held) == 2, "both CreateTopics' batches appended")
            seen_ahead = sorted(leader.state.image.topics_by_name)
            quorum.held.clear()                   # the new leader's log does not have them
            quorum.next_end = 0
            quorum.holding = False
            quorum.elect(2)
            replies = await asyncio.gather(*calls)
            after = (sorted(leader.state.image.topics_by_name), leader.state.next_offset, leader.pipeline.in_flight,
                     follower.state.next_offset)
            # Leading again, the node creates the same names: no leftover of the dropped writes.
            quorum.elect(1)
            await until(leader.is_active, "activation in the next epoch")
            again = [await leader.handlers()[19].handle(Ctx(7), create(name)) for name in "ab"]
            return seen_ahead, replies, after, again

    seen_ahead, replies, after, again = run(go())
    assert seen_ahead == ["a", "b", "kept"]
    for reply in replies:
        assert (reply.topics[0].error_code, reply.topics[0].error_message) == (
            Errors.NOT_CONTROLLER, "No controller appears to be active.")
    topics, end, in_flight, committed_end = after
    assert (topics, end, in_flight) == (["kept"], committed_end, 0)
    assert [r.topics[0].error_code for r in again] == [0, 0]
    assert _topic_names(quorum) == ["kept", "a", "b"]
    assert leader.state.problems == [] and follower.state.problems == []


def test_a_request_without_records_is_answered_after_the_writes_in_flight_and_sees_them():
    """Kafka's read-only operations wait for the purgatory's highest offset; a heartbeat sent
    behind a registration in flight sees that registration."""
    quorum, leader = held_leader()

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            quorum.holding = True
            registration = asyncio.ensure_future(leader.handlers()[62].handle(Ctx(0), broker_request(9)))
            topic = asyncio.ensure_future(leader.handlers()[19].handle(Ctx(7), create("x")))
            await until(lambda: len(quorum.held) == 2, "both writes appended")
            epoch = leader.state.image.brokers[9].epoch
            listing = asyncio.ensure_future(leader.handlers()[46].handle(Ctx(0), ListPartitionReassignmentsRequest()))
            beat = asyncio.ensure_future(leader.handlers()[63].handle(Ctx(0), heartbeat(9, epoch, 0)))
            for _ in range(20):
                await asyncio.sleep(0)
            waited = not listing.done() and not beat.done()
            quorum.release()
            return waited, epoch, await registration, await topic, await listing, await beat

    waited, epoch, registration, topic, listing, beat = run(go())
    assert waited, "a request without records was answered before the writes in flight committed"
    assert registration.broker_epoch == epoch and topic.topics[0].error_code == 0
    assert listing.error_code == 0 and beat.error_code == 0 and beat.is_fenced


def test_a_heartbeat_without_records_waits_only_for_writes_in_flight_that_changed_its_broker():
    """A heartbeat that writes nothing answers from its broker's registration; while that is
    the committed one, the answer leaves before unrelated writes in flight commit (a deliberate
    difference from Kafka, which waits for the newest: the heartbeat's tail at scale, issue 28).
    A heartbeat behind its own broker's fencing in flight still waits for it."""
    quorum, leader = held_leader()

    async def go():
        async with Running(leader):
            epoch = await lead_with_a_broker(quorum, leader)
            quorum.holding = True
            topic = asyncio.ensure_future(leader.handlers()[19].handle(Ctx(7), create("x")))
            await until(lambda: len(quorum.held) == 1, "the CreateTopics appended")
            steady = await asyncio.wait_for(leader.handlers()[63].handle(Ctx(0), heartbeat(1, epoch, 2**40)), 5)
            topic_waiting = not topic.done()
            fence = asyncio.ensure_future(leader.handlers()[63].handle(Ctx(0), heartbeat(1, epoch, 2**40,
                                                                                          want_fence=True)))
            await until(lambda: len(quorum.held) == 2, "the fencing appended")
            again = asyncio.ensure_future(leader.handlers()[63].handle(Ctx(0), heartbeat(1, epoch, 2**40,
                                                                                          want_fence=True)))
            for _ in range(20):
                await asyncio.sleep(0)
            again_waited = not again.done()
            quorum.release()
            return steady, topic_waiting, again_waited, await topic, await fence, await again

    steady, topic_waiting, again_waited, topic, fence, again = run(go())
    assert (steady.error_code, steady.is_fenced, steady.is_caught_up) == (0, False, True)
    assert topic_waiting, "the CreateTopics was answered before its batch committed"
    assert again_waited, "a heartbeat was answered before the fencing of its broker in flight committed"
    assert topic.topics[0].error_code == 0
    assert (fence.error_code, fence.is_fenced) == (0, True) and (again.error_code, again.is_fenced) == (0, True)


def test_a_write_generates_from_the_state_with_the_writes_in_flight_not_from_the_committed_image():
    """AlterClientQuotas removing a quota set by a write still in flight writes the removal, as
    Kafka's controller generates every write from its latest (uncommitted) state; generated from
    the committed image, the removal would be skipped as "not set" and the quota would stay."""
    quorum, leader = held_leader()

    def quota(value):
        return AlterClientQuotasRequest(entries=[EntryData(
            entity=[EntityData(entity_type="user", entity_name="alice")],
            ops=[OpData(key="producer_byte_rate", value=0.0 if value is None else value, remove=value is None)])])

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            quorum.holding = True
            calls = [asyncio.ensure_future(leader.handlers()[49].handle(Ctx(1), quota(v))) for v in (1024.0, None)]
            await until(lambda: len(quorum.held) == 2, "both writes appended before a commit")
            quorum.release()
            return await asyncio.gather(*calls)

    replies = run(go())
    assert [e.error_code for r in replies for e in r.entries] == [0, 0]
    removals = [m.remove for _, m in quorum.records() if type(m).NAME == "ClientQuotaRecord"]
    assert removals == [False, True]
    assert leader.image.client_quotas == {}


def test_a_batch_queued_below_the_writes_in_flight_is_replayed_not_taken_for_theirs():
    """Another writer's batch queued before a write takes offsets below it (next_offset counts
    it), so once the write is applied ahead it ends below the state's end. It is not the
    write's: its commit rolls the writes in flight back (answered NOT_CONTROLLER) and is
    replayed, and the write is applied as its own batch commits. Taken for the write's by its
    offsets alone (before), it was never applied: the leader lacked a topic its follower had."""
    quorum, leader = held_leader()
    follower = add_controller(quorum, 2)
    foreign = encode_metadata_record(messages.by_name("TopicRecord")(name="foreign", topic_id=uuid.UUID(int=77)), 0)

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            quorum.holding = True
            quorum.append([foreign])
            call = asyncio.ensure_future(leader.handlers()[19].handle(Ctx(7), create("mine")))
            await until(lambda: len(quorum.held) == 2, "the write appended after the other batch")
            quorum.release()
            return await call

    reply = run(go())
    assert sorted(leader.state.image.topics_by_name) == ["foreign", "mine"]
    assert sorted(follower.state.image.topics_by_name) == ["foreign", "mine"]
    assert leader.state.next_offset == follower.state.next_offset == quorum.end_offset
    assert leader.state.problems == [] and follower.state.problems == [] and leader.pipeline.in_flight == 0
    assert reply.topics[0].error_code == Errors.NOT_CONTROLLER
