"""ElectLeaders over every partition of a large cluster in steps (kafkawire.controller.
elect_in_steps): the same answer and the same elections as the one-event walk, in several
writes with the loop given back between them; the records bound across the steps."""
import asyncio

from kafkawire.controller import elect_in_steps
from kafkawire.controller.leader_election import elect_leaders
from kafkawire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest
from kafkawire.metadata.frame import decode_metadata_record
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, run
from .test_brokers import call, new_records
from .test_leader_election import results
from .test_reassignment import reassign, setup

EVERYTHING = ElectLeadersRequest(election_type=0, timeout_ms=5000, topic_partitions=None)


async def cluster_needing_elections():
    """Topics a0..a4 of three partitions on [1, 2], [2, 3], [3, 4]; in a1 and a3 every partition
    reordered to put its second replica first, so a preferred election moves it."""
    quorum, leader, running, _ = await setup()
    async with running:
        for i in range(5):
            created = await call(leader, 19, CreateTopicsRequest(timeout_ms=5000, topics=[CreatableTopic(
                name=f"a{i}", num_partitions=-1, replication_factor=-1,
                assignments=[CreatableReplicaAssignment(partition_index=p, broker_ids=[p + 1, p + 2])
                             for p in range(3)])]))
            assert created.topics[0].error_code == 0
        for name in ("a1", "a3"):
            answer = await leader.handlers()[45].handle(Ctx(1), reassign(*[(name, p, [p + 2, p + 1]) for p in range(3)]))
            assert answer.error_code == 0
    return quorum, leader, running


def test_the_steps_answer_and_elect_as_the_one_event_walk(monkeypatch):
    monkeypatch.setattr(elect_in_steps, "STEP_PARTITIONS", 4)          # 17 partitions: several steps
    monkeypatch.setattr(elect_in_steps, "WALK_PARTITIONS", 4)

    async def go():
        quorum, leader, running = await cluster_needing_elections()
        async with running:
            expected_records, expected = elect_leaders(leader.state, EVERYTHING, 2)     # generated, not written
            writes, ticks = [], [0]                 # ticks: turns another task got (a heartbeat's, say)
            write = leader.write

            async def counted(generate, **kwargs):
                writes.append(ticks[0])
                return await write(generate, **kwargs)

            async def ticker():
                while True:
                    ticks[0] += 1
                    await asyncio.sleep(0)
            monkeypatch.setattr(leader, "write", counted)
            mark = quorum.end_offset
            other = asyncio.ensure_future(ticker())
            response = await leader.handlers()[43].handle(Ctx(2), EVERYTHING)
            other.cancel()
            assert all(a < b for a, b in zip(writes, writes[1:]))       # other tasks ran between the steps
            assert results(response) == results(expected) and len(results(response)) == 6
            assert [t.topic for t in response.replica_election_results] == \
                [t.topic for t in expected.replica_election_results] == ["t", "a0", "a1", "a2", "a3", "a4"]
            assert len(writes) == 3                         # [t, a0], [a1, a2], [a3, a4]: 4 partitions or more each
            written = [(r.message.partition_id, r.message.leader) for _, r in new_records(quorum, mark)
                       if r.type_name == "PartitionChangeRecord"]
            assert sorted(written) == sorted((d.message.partition_id, d.message.leader)
                                             for d in map(decode_metadata_record, expected_records))
            again = await leader.handlers()[43].handle(Ctx(2), EVERYTHING)
            assert results(again) == []                                   # all done: nothing left to elect
    run(go())


def test_a_step_ends_at_its_elections_tried_as_well_as_at_its_partitions_looked_at(monkeypatch):
    """Partitions that need no election cost a hundredth of one tried: a step walks up to
    WALK_PARTITIONS of them, and ends sooner when STEP_PARTITIONS needed an election."""
    monkeypatch.setattr(elect_in_steps, "STEP_PARTITIONS", 3)          # a1 and a3 need 3 elections each
    monkeypatch.setattr(elect_in_steps, "WALK_PARTITIONS", 1000)

    async def go():
        quorum, leader, running = await cluster_needing_elections()
        async with running:
            _, expected = elect_leaders(leader.state, EVERYTHING, 2)
            writes = []
            write = leader.write

            async def counted(generate, **kwargs):
                answer = await write(generate, **kwargs)
                writes.append([t.topic for t in answer[0]])
                return answer
            monkeypatch.setattr(leader, "write", counted)
            response = await leader.handlers()[43].handle(Ctx(2), EVERYTHING)
            assert results(response) == results(expected)
            assert writes == [["t", "a0", "a1"], ["a2", "a3"], ["a4"]]
    run(go())


def test_the_records_bound_counts_every_step_and_the_earlier_steps_stay_written(monkeypatch):
    monkeypatch.setattr(elect_in_steps, "STEP_PARTITIONS", 4)
    monkeypatch.setattr(elect_in_steps, "WALK_PARTITIONS", 4)
    monkeypatch.setattr(elect_in_steps, "MAX_RECORDS_PER_USER_OP", 4)   # six elections are due

    async def go():
        quorum, leader, running = await cluster_needing_elections()
        async with running:
            mark = quorum.end_offset
            response = await leader.handlers()[43].handle(Ctx(2), EVERYTHING)
            assert response.error_code == Errors.POLICY_VIOLATION
            written = [r for _, r in new_records(quorum, mark) if r.type_name == "PartitionChangeRecord"]
            assert 0 < len(written) <= 4
    run(go())


def test_a_small_cluster_is_walked_in_one_event():
    async def go():
        quorum, leader, running, _ = await setup()
        async with running:
            assert not elect_in_steps.needs_steps(leader.state, EVERYTHING)
            assert not elect_in_steps.needs_steps(leader.state, ElectLeadersRequest(topic_partitions=[]))
    run(go())
