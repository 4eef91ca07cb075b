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

from kafkawire.messages.create_partitions_request import CreatePartitionsRequest, CreatePartitionsTopic
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

    def prepare_append(self, records):
        """Offsets at once; commits on the next loop turn unless the quorum holds them."""
        from kafkawire.raft.contract import NotLeader
        if not self.is_leader():
            raise NotLeader(f"node {self.node_id} is not the leader")
        appended = asyncio.get_running_loop().create_future()
        if self.quorum.holding:
            appended.set_result(self.quorum.append(records))
        else:
            asyncio.get_running_loop().call_soon(lambda: appended.set_result(self.quorum.append(records)))
        return appended


def held_leader():
    """A quorum that holds appended batches back, and node 1 as its leader's controller."""
    quorum = HeldQuorum()
    leader = add_controller(quorum, 1)
    leader.raft = HeldHandle(quorum, 1)
    return quorum, leader


def create(name, timeout_ms=5000):
    return CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
                               timeout_ms=timeout_ms)


def delete(name, timeout_ms=5000):
    return DeleteTopicsRequest(topics=[DeleteTopicState(name=name, topic_id=uuid.UUID(int=0))], timeout_ms=timeout_ms)


def replay_problems(*controllers) -> list[str]:
    """What replaying the committed log reported on each controller (ControllerState.problems)."""
    return [f"node {c.node_id}: {p}" for c in controllers for p in c.state.problems]


async def lead_with_a_broker(quorum, leader) -> int:
    """Make ``leader`` the active controller with broker 1 registered and unfenced; its broker epoch."""
    quorum.elect(1)
    await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
    reply = await leader.handlers()[62].handle(Ctx(0), broker_request(1, log_dirs=[uuid.UUID(int=1001)]))
    await leader.handlers()[63].handle(Ctx(0), heartbeat(1, reply.broker_epoch, quorum.end_offset))
    return reply.broker_epoch


async def past_the_deadline(leader, timeout_ms: int, sent_at: float) -> None:
    """Let a request sent at loop time ``sent_at`` with ``timeout_ms`` go past its deadline, on
    the controller's clock and on the event loop's (where a handler's own timeout would fire),
    then let every callback due run."""
    leader.clock.now += timeout_ms + 1
    loop = asyncio.get_running_loop()
    await until(lambda: loop.time() > sent_at + timeout_ms / 1000, "the request's deadline passed")
    for _ in range(20):
        await asyncio.sleep(0)


def scenario(first, second, *, cancel_first: bool):
    """Topic "t" exists (or not, for CreateTopics); ``first`` is sent while commits are held and
    its caller either goes away (cancelled) or waits past its deadline; then ``second`` is sent
    and the held batches commit. Returns (first's response or None, second's response, the
    committed records' type names, replay problems)."""
    quorum, leader = held_leader()
    follower = add_controller(quorum, 2)          # only replays what commits
    api_key, version = (19, 7) if isinstance(first, CreateTopicsRequest) else (20, 6)

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            if api_key == 20:
                assert (await leader.handlers()[19].handle(Ctx(7), create("t"))).topics[0].error_code == 0
            mark = len(quorum.entries)
            quorum.holding = True
            sent_at = asyncio.get_running_loop().time()
            caller = asyncio.ensure_future(leader.handlers()[api_key].handle(Ctx(version), first))
            await until(lambda: quorum.held, "the first request's records appended")
            if cancel_first:
                caller.cancel()                   # the client disconnected
                try:
                    await caller
                except asyncio.CancelledError:
                    pass
            else:
                await past_the_deadline(leader, first.timeout_ms, sent_at)
                assert not caller.done(), "a generated write was answered before its records committed"
            racing = asyncio.ensure_future(leader.handlers()[api_key].handle(Ctx(version), second))
            for _ in range(20):                    # let the second request run as far as it can
                await asyncio.sleep(0)
            quorum.release()
            first_answer = None if cancel_first else await asyncio.wait_for(caller, 5)
            answer = await asyncio.wait_for(racing, 5)
            names = [decode_metadata_record(v).message.NAME for _, _, v in quorum.entries[mark:]]
            return first_answer, answer, names, replay_problems(leader, follower)

    return run(go())


@pytest.mark.parametrize("how", ["disconnected", "slow to commit"])
def test_a_delete_topics_whose_caller_went_away_is_seen_by_the_next_delete_of_the_same_topic(how):
    """Also: a DeleteTopics whose deadline passes while its batch commits is answered when it
    commits, with success (issue 24 follow-up)."""
    gone = delete("t") if how == "disconnected" else delete("t", timeout_ms=20)
    first, answer, names, errors = scenario(gone, delete("t"), cancel_first=how == "disconnected")
    assert names.count("RemoveTopicRecord") == 1, names
    assert first is None or [r.error_code for r in first.responses] == [0]
    assert [r.error_code for r in answer.responses] == [int(Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    assert errors == []


@pytest.mark.parametrize("how", ["disconnected", "slow to commit"])
def test_a_create_topics_whose_caller_went_away_is_seen_by_the_next_create_of_the_same_name(how):
    """Also: a CreateTopics whose deadline passes while its batch commits is answered when it
    commits, with success (issue 24 follow-up)."""
    gone = create("t") if how == "disconnected" else create("t", timeout_ms=20)
    first, answer, names, errors = scenario(gone, create("t"), cancel_first=how == "disconnected")
    assert names.count("TopicRecord") == 1, names
    assert first is None or [t.error_code for t in first.topics] == [0]
    assert [t.error_code for t in answer.topics] == [int(Errors.TOPIC_ALREADY_EXISTS)]
    assert errors == []


SLOW_WRITES = {   # api key, version, the request (timeout_ms 20), its error codes; topic "t" exists
    "CreateTopics": (19, 7, lambda: create("u", timeout_ms=20), lambda r: [t.error_code for t in r.topics]),
    "DeleteTopics": (20, 6, lambda: delete("t", timeout_ms=20), lambda r: [t.error_code for t in r.responses]),
    "CreatePartitions": (37, 3, lambda: CreatePartitionsRequest(
        topics=[CreatePartitionsTopic(name="t", count=2, assignments=None)], timeout_ms=20),
        lambda r: [t.error_code for t in r.results]),
}


@pytest.mark.parametrize("api", sorted(SLOW_WRITES))
def test_a_write_slow_to_commit_is_answered_after_its_commit_and_not_timed_out(api):
    """As Kafka's ControllerWriteEvent: once a write has generated and appended its records it
    completes when they commit, whatever its deadline; the deadline only times out a write
    that has not generated yet. Before the fix the handlers' own timeouts answered
    REQUEST_TIMED_OUT while the records went on to commit (issue 24 follow-up)."""
    api_key, version, make, codes = SLOW_WRITES[api]
    quorum, leader = held_leader()

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            assert (await leader.handlers()[19].handle(Ctx(7), create("t"))).topics[0].error_code == 0
            quorum.holding = True
            request = make()
            sent_at = asyncio.get_running_loop().time()
            caller = asyncio.ensure_future(leader.handlers()[api_key].handle(Ctx(version), request))
            held_when_answered = []
            caller.add_done_callback(lambda _: held_when_answered.append(len(quorum.held)))
            await until(lambda: quorum.held, "the request's records appended")
            await past_the_deadline(leader, request.timeout_ms, sent_at)
            answered_early = caller.done()
            quorum.release()
            return answered_early, await asyncio.wait_for(caller, 5), held_when_answered

    answered_early, answer, held_when_answered = run(go())
    assert codes(answer) == [0], f"{api} slow to commit was answered {codes(answer)}"
    assert not answered_early and held_when_answered == [0], "answered before its records committed"


def test_a_write_whose_deadline_passed_before_its_turn_generates_nothing():
    """timeout_ms=0: Kafka's event queue times the event out before it runs; nothing is written,
    and the answer carries no message (Kafka's TimeoutException has none)."""
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1)

    async def go():
        async with Running(leader):
            await lead_with_a_broker(quorum, leader)
            mark = len(quorum.entries)
            answer = await leader.handlers()[19].handle(Ctx(7), create("t", timeout_ms=0))
            return answer, len(quorum.entries) - mark

    answer, written = run(go())
    assert [(t.error_code, t.error_message) for t in answer.topics] == [(int(Errors.REQUEST_TIMED_OUT), None)]
    assert written == 0


def test_a_write_whose_leadership_moves_before_it_commits_ends_and_frees_the_next_write():
    """Not waiting forever for a batch a new leader may truncate: the write ends NOT_CONTROLLER
    when the epoch changes, and no later write stays blocked behind it."""
    quorum, leader = held_leader()

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
