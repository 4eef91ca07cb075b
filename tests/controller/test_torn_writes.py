"""A write cannot be torn by its caller going away (issue 24, defect 2). The rule: once a write
has generated its records, the next write is generated from a state that includes them, whether
the first caller still waits (a request timeout, a closed connection) or not; and a write whose
deadline passes before its turn generates nothing, as an event whose deadline passed in Kafka's
event queue. So the committed log never holds two RemoveTopicRecords of one topic, or two
TopicRecords of one name, and it replays without a single error.

The fake raft here holds appended batches back until the test commits them, which opens the
window in which a caller can be cancelled after its records were appended but before they
were applied."""
import asyncio
import uuid

import pytest

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.delete_topics_request import DeleteTopicState, DeleteTopicsRequest
from kafkawire.metadata import decode_metadata_record
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, FakeHandle, FakeQuorum, Running, add_controller, broker_request, heartbeat, run, until


class HeldQuorum(FakeQuorum):
    """Appends take offsets at once but commit only when ``release()`` is called (or while
    ``holding`` is False)."""

    def __init__(self):
        super().__init__()
        self.holding = False
        self.held: list[list[bytes]] = []
        self.next_end = 0

    def append(self, records: list[bytes]) -> int:
        if not self.holding:
            return self.commit(records)
        self.held.append(list(records))
        self.next_end = max(self.next_end, self.end_offset) + len(records)
        return self.next_end - 1

    def release(self) -> None:
        self.holding = False
        held, self.held = self.held, []
        for records in held:
            self.commit(records)


class HeldHandle(FakeHandle):
    def next_offset(self) -> int:
        return max(self.quorum.end_offset, self.quorum.next_end)

    async def append(self, records):
        from kafkawire.raft.contract import NotLeader
        if not self.is_leader():
            raise NotLeader(f"node {self.node_id} is not the leader")
        return self.quorum.append(records)


def create(name, timeout_ms=5000):
    return CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
                               timeout_ms=timeout_ms)


def delete(name, timeout_ms=5000):
    return DeleteTopicsRequest(topics=[DeleteTopicState(name=name, topic_id=uuid.UUID(int=0))], timeout_ms=timeout_ms)


def replay_problems(*controllers) -> list[str]:
    """What replaying the committed log reported on each controller (ControllerState.problems)."""
    return [f"node {c.node_id}: {p}" for c in controllers for p in c.state.problems]


async def lead_with_a_broker(quorum, leader) -> None:
    """Make ``leader`` the active controller with broker 1 registered and unfenced."""
    quorum.elect(1)
    await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
    reply = await leader.handlers()[62].handle(Ctx(0), broker_request(1, log_dirs=[uuid.UUID(int=1001)]))
    await leader.handlers()[63].handle(Ctx(0), heartbeat(1, reply.broker_epoch, quorum.end_offset))


def scenario(first, second, *, cancel_first: bool, first_timeout_ms: int = 5000):
    """Topic "t" exists (or not, for CreateTopics); ``first`` is sent while commits are held and
    its caller goes away (cancelled, or its own timeout); then ``second`` is sent and the held
    batches commit. Returns (second's response, the committed records' type names, replay problems)."""
    quorum = HeldQuorum()
    leader = add_controller(quorum, 1)
    leader.raft = HeldHandle(quorum, 1)
    follower = add_controller(quorum, 2)          # only replays what commits
    api_key, version = (19, 7) if isinstance(first, CreateTopicsRequest) else (20, 6)

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            if api_key == 20:
                assert (await leader.handlers()[19].handle(Ctx(7), create("t"))).topics[0].error_code == 0
            mark = len(quorum.entries)
            quorum.holding = True
            caller = asyncio.ensure_future(leader.handlers()[api_key].handle(Ctx(version), first))
            await until(lambda: quorum.held, "the first request's records appended")
            if cancel_first:
                caller.cancel()                   # the client disconnected
                try:
                    await caller
                except asyncio.CancelledError:
                    pass
            else:
                timed_out = await caller           # its own timeout ran out while the batch was held
                assert {t.error_code for t in getattr(timed_out, "topics", None) or timed_out.responses} == \
                    {int(Errors.REQUEST_TIMED_OUT)}
            racing = asyncio.ensure_future(leader.handlers()[api_key].handle(Ctx(version), second))
            for _ in range(20):                    # let the second request run as far as it can
                await asyncio.sleep(0)
            quorum.release()
            answer = await asyncio.wait_for(racing, 5)
            names = [decode_metadata_record(v).message.NAME for _, _, v in quorum.entries[mark:]]
            return answer, names, replay_problems(leader, follower)

    return run(go())


@pytest.mark.parametrize("how", ["disconnected", "timed out"])
def test_a_delete_topics_whose_caller_went_away_is_seen_by_the_next_delete_of_the_same_topic(how):
    gone = delete("t") if how == "disconnected" else delete("t", timeout_ms=50)
    answer, names, errors = scenario(gone, delete("t"), cancel_first=how == "disconnected")
    assert names.count("RemoveTopicRecord") == 1, names
    assert [r.error_code for r in answer.responses] == [int(Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    assert errors == []


@pytest.mark.parametrize("how", ["disconnected", "timed out"])
def test_a_create_topics_whose_caller_went_away_is_seen_by_the_next_create_of_the_same_name(how):
    gone = create("t") if how == "disconnected" else create("t", timeout_ms=50)
    answer, names, errors = scenario(gone, create("t"), cancel_first=how == "disconnected")
    assert names.count("TopicRecord") == 1, names
    assert [t.error_code for t in answer.topics] == [int(Errors.TOPIC_ALREADY_EXISTS)]
    assert errors == []


def test_a_write_whose_deadline_passed_before_its_turn_generates_nothing():
    """timeout_ms=0: Kafka's event queue times the event out before it runs; nothing is written."""
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1)

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            mark = len(quorum.entries)
            answer = await leader.handlers()[19].handle(Ctx(7), create("t", timeout_ms=0))
            return answer, len(quorum.entries) - mark

    answer, written = run(go())
    assert [t.error_code for t in answer.topics] == [int(Errors.REQUEST_TIMED_OUT)]
    assert written == 0


def test_a_write_whose_leadership_moves_before_it_commits_ends_and_frees_the_next_write():
    """Not waiting forever for a batch a new leader may truncate: the write ends NOT_CONTROLLER
    when the epoch changes, and no later write stays blocked behind it."""
    quorum = HeldQuorum()
    leader = add_controller(quorum, 1)
    leader.raft = HeldHandle(quorum, 1)

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            quorum.holding = True
            caller = asyncio.ensure_future(leader.handlers()[19].handle(Ctx(7), create("t")))
            await until(lambda: quorum.held, "the request's records appended")
            quorum.elect(None)                     # the epoch moves on; the held batch never commits
            answer = await asyncio.wait_for(caller, 5)
            return answer, leader._writing

    answer, still_writing = run(go())
    assert [t.error_code for t in answer.topics] == [int(Errors.NOT_CONTROLLER)]
    assert still_writing is False
