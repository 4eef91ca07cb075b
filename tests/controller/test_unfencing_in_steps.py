"""Unfencing and a heartbeat's OfflineLogDirs in bounded events (unfencing.py, issue 28): the
state change first, alone (the unfence record; the registration naming the directories left),
the partitions in later events of at most the limit, other writes in between, each step reading
the partitions as they are then; the records are the ones Kafka's one event writes (which a
small case still gets, in Kafka's order); a new active controller finishes what the old one
left. (The limit is lowered to a few partitions here.)"""
import random
import uuid

import pytest

from kafkawire.controller.frames import frame
from kafkawire.metadata import decode_metadata_record
from kafkawire.metadata.registrations import NO_LEADER

from .harness import Running, add_controller, heartbeat, run, until
from .test_assign_replicas_to_dirs import assign
from .test_brokers import call, create, new_records, register_unfenced, start

VICTIM = 1
PARTITIONS = 24


def _seeded(monkeypatch, seed=7):
    rng = random.Random(seed)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=rng.getrandbits(128), version=4))


def _batches(quorum, since_batch):
    written = [[decode_metadata_record(v) for v in batch] for batch in quorum.batches[since_batch:]]
    return [b for b in written if b[0].type_name != "NoOpRecord"]


async def _beat(leader, quorum, broker_id, **kwargs):
    reply = await call(leader, 63, heartbeat(broker_id, leader.image.brokers[broker_id].epoch, quorum.end_offset,
                                             **kwargs))
    assert reply.error_code == 0
    return reply


async def _last_isr_member(monkeypatch, limit):
    """Three brokers, one topic of PARTITIONS partitions; 2 and 3 fenced, then the victim, the
    last member of every ISR: every partition leaderless, the victim in its ELR (ELR is on at
    this metadata.version)."""
    _seeded(monkeypatch)
    quorum, leader, running = await start()
    for b in (1, 2, 3):
        await register_unfenced(quorum, leader, b)
    topic_id = await create(leader, "orders", partitions=PARTITIONS, rf=3)
    for b in (2, 3, VICTIM):
        await _beat(leader, quorum, b, want_fence=True)
        await until(lambda: not leader.moves and not leader.pipeline.in_flight, "fenced")
    parts = leader.image.topics_by_id[topic_id].partitions.values()
    assert all(p.leader == NO_LEADER and list(p.elr) == [VICTIM] for p in parts)
    leader.moves.max_moves_per_event = limit
    return quorum, leader, running, topic_id


async def _unfence(monkeypatch, limit):
    quorum, leader, running, topic_id = await _last_isr_member(monkeypatch, limit)
    async with running:
        since = len(quorum.batches)
        assert not (await _beat(leader, quorum, VICTIM)).is_fenced
        await until(lambda: not leader.moves and not leader.pipeline.in_flight, "the elections")
        return _batches(quorum, since), leader.image.topics_by_id[topic_id].partitions


def _change_set(records):
    return sorted(((r.message.partition_id, r.message.leader, tuple(r.message.isr or ())) for r in records
                   if r.type_name == "PartitionChangeRecord"))


def test_an_unfencing_in_steps_writes_the_unfence_alone_then_the_elections_one_event_writes(monkeypatch):
    stepped, after = run(_unfence(monkeypatch, 5))
    assert [r.type_name for r in stepped[0]] == ["BrokerRegistrationChangeRecord"]
    assert stepped[0][0].message.fenced == -1
    assert all(len(b) <= 5 and {r.type_name for r in b} == {"PartitionChangeRecord"} for b in stepped[1:])
    assert len(stepped) > 2 and all(p.leader == VICTIM for p in after.values())
    with pytest.MonkeyPatch.context() as again:
        one, _ = run(_unfence(again, PARTITIONS))           # one event's worth: Kafka's one event
    assert len(one) == 1 and [r.type_name for r in one[0]] == \
        ["BrokerRegistrationChangeRecord"] + ["PartitionChangeRecord"] * PARTITIONS
    assert _change_set(r for b in stepped for r in b) == _change_set(one[0])


def test_between_the_steps_other_writes_run_and_an_election_or_a_fencing_is_respected(monkeypatch):
    async def go():
        quorum, leader, running, topic_id = await _last_isr_member(monkeypatch, 1)
        async with running:
            mark = quorum.end_offset
            await _beat(leader, quorum, VICTIM)
            sweep = leader.moves._sweep
            assert sweep is not None and not sweep.done()
            last_topic, last_pid = topic_id, PARTITIONS - 1                 # the sweep's last partition
            # Elected meanwhile by another write: the sweep leaves it alone.
            await leader.write(lambda: ([frame("PartitionChangeRecord", 2, topic_id=last_topic, partition_id=last_pid,
                                               leader=VICTIM, isr=[VICTIM], eligible_leader_replicas=[],
                                               last_known_elr=[])], None))
            await create(leader, "meanwhile", partitions=1, rf=1)
            assert leader.moves._sweep is sweep and not sweep.done()       # both ran while it went on
            # Fenced again halfway: the rest of the sweep elects no one (it is the only ISR member).
            await until(lambda: sweep.visited >= PARTITIONS // 2, "half the sweep")
            await _beat(leader, quorum, VICTIM, want_fence=True)
            fenced_at = quorum.end_offset
            await until(lambda: not leader.moves and not leader.pipeline.in_flight, "the sweep and the fencing")
            records = new_records(quorum, mark)
            names = [(r.type_name, getattr(r.message, "name", None)) for _, r in records]
            created = names.index(("TopicRecord", "meanwhile"))
            assert ("PartitionChangeRecord", None) in names[:created] and ("PartitionChangeRecord", None) in \
                names[created:]
            changes = [(o, r.message) for o, r in records if r.type_name == "PartitionChangeRecord"
                       and r.message.topic_id == topic_id]
            assert [m.partition_id for _, m in changes].count(last_pid) <= 2    # ours, then the fencing's
            assert not any(m.leader == VICTIM for o, m in changes if o >= fenced_at)
            parts = leader.image.topics_by_id[topic_id].partitions.values()
            assert all(p.leader == NO_LEADER for p in parts), [p for p in parts if p.leader != NO_LEADER]
    run(go())


def test_a_new_active_controller_finishes_a_sweep_cut_short(monkeypatch):
    async def go():
        quorum, leader, running, topic_id = await _last_isr_member(monkeypatch, 1)
        other = add_controller(quorum, 2)
        for base, epoch, records in quorum.committed_batches:
            other.on_committed(base, epoch, 0, list(records))
        async with running, Running(other):
            await _beat(leader, quorum, VICTIM)
            assert leader.moves._sweep is not None
            quorum.elect(2)
            assert not leader.moves
            await until(lambda: other.is_active() and not other.moves and not other.pipeline.in_flight,
                        "the new controller's sweep")
            assert all(p.leader == VICTIM for p in other.image.topics_by_id[topic_id].partitions.values())
    run(go())


async def _two_dirs(monkeypatch, limit, other=None):
    """Broker 1 with two directories, the even partitions' replica in the first; 2 and 3 plain."""
    _seeded(monkeypatch)
    quorum, leader, running = await start(30)
    dirs = [uuid.uuid4(), uuid.uuid4()]
    await register_unfenced(quorum, leader, VICTIM, log_dirs=dirs)
    for b in (2, 3):
        await register_unfenced(quorum, leader, b)
    topic_id = await create(leader, "jbod", partitions=PARTITIONS, rf=3)
    await assign(leader, VICTIM, dirs[0], topic_id, list(range(0, PARTITIONS, 2)))
    await assign(leader, VICTIM, dirs[1], topic_id, list(range(1, PARTITIONS, 2)))
    leader.moves.max_moves_per_event = limit
    if other is not None:
        for base, epoch, records in quorum.committed_batches:
            other.on_committed(base, epoch, 0, list(records))
    return quorum, leader, running, topic_id, dirs


async def _offline(monkeypatch, limit):
    quorum, leader, running, topic_id, dirs = await _two_dirs(monkeypatch, limit)
    async with running:
        since = len(quorum.batches)
        beat = heartbeat(VICTIM, leader.image.brokers[VICTIM].epoch, quorum.end_offset)
        beat.offline_log_dirs = [dirs[0]]
        assert (await call(leader, 63, beat)).error_code == 0
        await until(lambda: not leader.moves and not leader.pipeline.in_flight, "the moves")
        return _batches(quorum, since), leader.image.topics_by_id[topic_id].partitions, dirs


def test_an_offline_directory_in_steps_writes_the_registration_first_then_what_one_event_writes(monkeypatch):
    stepped, after, dirs = run(_offline(monkeypatch, 4))
    assert [(r.type_name, r.version) for r in stepped[0]] == [("BrokerRegistrationChangeRecord", 2)]
    assert stepped[0][0].message.log_dirs == [dirs[1]]
    assert all(len(b) <= 4 and {r.type_name for r in b} == {"PartitionChangeRecord"} for b in stepped[1:])
    for pid, p in after.items():
        assert (VICTIM in p.isr) == (pid % 2 == 1) and (p.leader != VICTIM or pid % 2 == 1)
    with pytest.MonkeyPatch.context() as again:
        one, _, _ = run(_offline(again, PARTITIONS))
    assert len(one) == 1 and [r.type_name for r in one[0]][-1] == "BrokerRegistrationChangeRecord"
    assert _change_set(r for b in stepped for r in b) == _change_set(one[0])
    assert {m for m, _, _ in _change_set(one[0])} == set(range(0, PARTITIONS, 2))


def test_a_replica_moved_online_between_steps_stays_and_a_new_controller_finishes_the_job(monkeypatch):
    async def go():
        quorum, leader, running, topic_id, dirs = await _two_dirs(monkeypatch, 1)
        other = add_controller(quorum, 2, mv=30)
        for base, epoch, records in quorum.committed_batches:
            other.on_committed(base, epoch, 0, list(records))
        async with running, Running(other):
            beat = heartbeat(VICTIM, leader.image.brokers[VICTIM].epoch, quorum.end_offset)
            beat.offline_log_dirs = [dirs[0]]
            assert (await call(leader, 63, beat)).error_code == 0
            assert leader.moves
            # Partition 22's replica reassigned to the online directory meanwhile: it stays in the ISR.
            await assign(leader, VICTIM, dirs[1], topic_id, [PARTITIONS - 2])
            quorum.elect(2)                                 # the job is cut short
            assert not leader.moves
            await until(lambda: other.is_active(), "the new controller")
            # The broker repeats its offline directory: the new controller finishes the job.
            again = heartbeat(VICTIM, other.image.brokers[VICTIM].epoch, quorum.end_offset)
            again.offline_log_dirs = [dirs[0]]
            assert (await call(other, 63, again)).error_code == 0
            await until(lambda: not other.moves and not other.pipeline.in_flight, "the rest of the job")
            for pid, p in other.image.topics_by_id[topic_id].partitions.items():
                stays = pid % 2 == 1 or pid == PARTITIONS - 2
                assert (VICTIM in p.isr) == stays and (p.leader != VICTIM or stays), (pid, p)
            assert other.moves.dirs_checked == {VICTIM}
    run(go())


def test_the_keys_are_sorted_a_run_per_step_then_taken_in_order(monkeypatch):
    from kafkawire.controller import unfencing
    monkeypatch.setattr(unfencing, "SORT_RUN", 4)
    keys = random.Random(3).sample(range(1000), 10)
    pending = unfencing.SortedInSteps(list(keys))
    assert [pending.take(3) for _ in range(2)] == [None, None]      # two runs of 4 sorted, the third with the take
    taken = [pending.take(3) for _ in range(4)]
    assert [k for part in taken for k in part] == sorted(keys) and pending.left == 0
    assert [len(part) for part in taken] == [3, 3, 3, 1]
    empty = unfencing.SortedInSteps([])
    assert empty.left == 0 and empty.take(3) == []


def test_the_skipped_keys_are_left_out_as_the_runs_are_sorted(monkeypatch):
    """A fencing's second part (the ISRs the broker follows in) is its ISR keys without the led
    ones, left out run by run rather than by a set difference at the job's start."""
    from kafkawire.controller import unfencing
    monkeypatch.setattr(unfencing, "SORT_RUN", 4)
    keys = random.Random(4).sample(range(1000), 10)
    skip = set(keys[::3])                                          # 4 of them
    pending = unfencing.SortedInSteps(list(keys), skip=skip)
    assert [pending.take(3) for _ in range(2)] == [None, None] and pending.left == 10 - len(skip & set(keys[:8]))
    taken = [pending.take(3) for _ in range(3)]
    assert [k for part in taken for k in part] == sorted(set(keys) - skip) and pending.left == 0
    everything_skipped = unfencing.SortedInSteps(list(keys[:3]), skip=set(keys))
    assert everything_skipped.take(3) == [] and everything_skipped.left == 0


def test_the_keys_and_their_sorted_runs_are_held_where_a_collection_does_not_visit_them_again(monkeypatch):
    """Tuples of ints, which the first collection that sees them untracks: a list of a fence's
    300,000 keys was visited key by key by every full collection until frozen (issue 28)."""
    import gc

    from kafkawire.controller import unfencing
    monkeypatch.setattr(unfencing, "SORT_RUN", 4)
    keys = [1 << 150 | n for n in random.Random(5).sample(range(1000), 10)]   # 160-bit keys, as partition_of's
    pending = unfencing.SortedInSteps(list(keys))
    assert pending.take(3) is None                                 # a run sorted
    gc.collect()
    assert not gc.is_tracked(pending._raw) and not any(gc.is_tracked(run) for run in pending._runs)
