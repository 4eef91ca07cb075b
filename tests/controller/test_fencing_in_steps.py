"""A broker in more ISRs than one controller event moves (fencing.py, issue 28) is fenced (or
marked shutting down) first, alone, and its partitions move in later events of bounded size,
the ones it leads first, other writes running in between; the records are the ones one event
writes, and a new active controller finishes what the old one left. (The limit is lowered to a
few partitions here; at its real value of 250 a broker needs 250 ISRs for this.)"""
import random
import uuid

import pytest

from kafkawire.controller.partition_index import PartitionIndex
from kafkawire.metadata import decode_metadata_record
from kafkawire.metadata.registrations import NO_LEADER

from .harness import Running, add_controller, heartbeat, run, until
from .test_brokers import call, create, new_records, register_unfenced, start

VICTIM = 1
PARTITIONS = 24                      # replication factor 3 over 3 brokers: the victim is in all 24 ISRs


def _changes(quorum, since):
    return [r.message for _, r in new_records(quorum, since) if r.type_name == "PartitionChangeRecord"]


async def _cluster(limit: int, monkeypatch, seed: int = 7):
    """Three unfenced brokers, one topic of PARTITIONS partitions; every uuid (topic ids,
    incarnations) from a seeded rng, so two runs write the same records."""
    rng = random.Random(seed)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=rng.getrandbits(128), version=4))
    quorum, leader, running = await start()
    leader.moves.max_moves_per_event = limit
    for b in (1, 2, 3):
        await register_unfenced(quorum, leader, b)
    topic_id = await create(leader, "orders", partitions=PARTITIONS, rf=3)
    return quorum, leader, running, topic_id


async def _fence(limit, monkeypatch):
    quorum, leader, running, topic_id = await _cluster(limit, monkeypatch)
    async with running:
        before = dict(leader.image.topics_by_id[topic_id].partitions)
        mark = quorum.end_offset
        reply = await call(leader, 63, heartbeat(VICTIM, leader.image.brokers[VICTIM].epoch, quorum.end_offset,
                                                 want_fence=True))
        assert reply.error_code == 0 and reply.is_fenced
        await until(lambda: not leader.moves and not leader.pipeline.in_flight, "the partitions moved")
        return quorum, leader, topic_id, before, mark


@pytest.mark.parametrize("limit", [4, 5])
def test_a_fence_in_steps_writes_the_fence_first_then_the_records_one_event_writes_leaders_first(limit, monkeypatch):
    quorum, leader, topic_id, before, mark = run(_fence(limit, monkeypatch))
    batches = [[decode_metadata_record(v) for v in batch] for batch in quorum.batches]
    batches = [b for b in batches if b[0].type_name != "NoOpRecord"]
    first = next(i for i, b in enumerate(batches) if b[0].type_name == "BrokerRegistrationChangeRecord"
                 and b[0].message.broker_id == VICTIM and b[0].message.fenced == 1)
    assert len(batches[first]) == 1                                                 # the fence, alone
    moves = batches[first + 1:]
    assert all(len(b) <= limit and {r.type_name for r in b} == {"PartitionChangeRecord"} for b in moves)
    changes = [r.message for b in moves for r in b]
    led = [m.partition_id for m in changes if before[m.partition_id].leader == VICTIM]
    assert [m.partition_id for m in changes[:len(led)]] == led and led          # the ones it led come first
    assert sorted(m.partition_id for m in changes) == list(range(PARTITIONS))
    now = leader.image.topics_by_id[topic_id].partitions
    assert all(p.leader not in (VICTIM, NO_LEADER) and VICTIM not in p.isr for p in now.values())

    # The same cluster fenced in one event (the limit above the victim's 24 ISRs) writes the
    # same PartitionChangeRecords, the fence after them, as Kafka's handleBrokerFenced.
    with pytest.MonkeyPatch.context() as again:
        quorum1, _, _, _, mark1 = run(_fence(PARTITIONS, again))
    one_event = [r.type_name for _, r in new_records(quorum1, mark1)]
    assert one_event == ["PartitionChangeRecord"] * PARTITIONS + ["BrokerRegistrationChangeRecord"]
    assert sorted(_changes(quorum1, mark1), key=lambda m: m.partition_id) == \
        sorted(changes, key=lambda m: m.partition_id)


def test_other_writes_run_between_the_steps_and_the_broker_stays_fenced_until_its_partitions_moved(monkeypatch):
    async def go():
        quorum, leader, running, topic_id = await _cluster(1, monkeypatch)
        async with running:
            epoch = leader.image.brokers[VICTIM].epoch
            await call(leader, 63, heartbeat(VICTIM, epoch, quorum.end_offset, want_fence=True))
            assert leader.moves.in_progress(VICTIM)
            # Caught up and no longer asking to be fenced: it stays fenced while its partitions move.
            early = await call(leader, 63, heartbeat(VICTIM, epoch, quorum.end_offset))
            assert early.error_code == 0 and early.is_fenced and leader.moves.in_progress(VICTIM)
            await create(leader, "meanwhile", partitions=1, rf=2)
            assert leader.moves.in_progress(VICTIM)         # a CreateTopics ran before the moves ended
            await until(lambda: not leader.moves, "the partitions moved")
            names = [(r.type_name, getattr(r.message, "name", None)) for _, r in new_records(quorum, 0)]
            created = names.index(("TopicRecord", "meanwhile"))
            assert ("PartitionChangeRecord", None) in names[:created] and ("PartitionChangeRecord", None) in \
                names[created:]                             # between the moves, in the log
            later = await call(leader, 63, heartbeat(VICTIM, epoch, quorum.end_offset))
            assert later.error_code == 0 and not later.is_fenced
    run(go())


def test_a_controlled_shutdown_in_steps_ends_once_every_leadership_moved(monkeypatch):
    async def go():
        quorum, leader, running, topic_id = await _cluster(3, monkeypatch)
        async with running:
            epoch = leader.image.brokers[VICTIM].epoch
            mark = quorum.end_offset
            first = await call(leader, 63, heartbeat(VICTIM, epoch, quorum.end_offset, want_shut_down=True))
            assert (first.is_fenced, first.should_shut_down) == (False, False)
            assert [r.type_name for _, r in new_records(quorum, mark)][:1] == ["BrokerRegistrationChangeRecord"]
            await until(lambda: not leader.moves and not leader.pipeline.in_flight, "the partitions moved")
            for b in (2, 3):
                await call(leader, 63, heartbeat(b, leader.image.brokers[b].epoch, quorum.end_offset))
            last = await call(leader, 63, heartbeat(VICTIM, epoch, quorum.end_offset, want_shut_down=True))
            assert (last.is_fenced, last.should_shut_down) == (True, True)
            now = leader.image.topics_by_id[topic_id].partitions
            assert all(p.leader != VICTIM and VICTIM not in p.isr for p in now.values())
    run(go())


def test_a_new_active_controller_finishes_moving_the_partitions_of_a_fenced_broker(monkeypatch):
    async def go():
        quorum, leader, running, topic_id = await _cluster(1, monkeypatch)
        other = add_controller(quorum, 2)
        for base, epoch, records in quorum.committed_batches:       # what it missed, joining late
            other.on_committed(base, epoch, 0, list(records))
        listed, in_rearm = [], []
        listing = PartitionIndex.isr_keys_and_leaderships
        monkeypatch.setattr(PartitionIndex, "isr_keys_and_leaderships",
                            lambda index, b: listed.append((b, bool(in_rearm))) or listing(index, b))
        rearm = other.rearm

        def rearm_noted(now):
            in_rearm.append(True)
            try:
                rearm(now)
            finally:
                in_rearm.clear()
        other.rearm = rearm_noted
        async with running, Running(other):
            await call(leader, 63, heartbeat(VICTIM, leader.image.brokers[VICTIM].epoch, quorum.end_offset,
                                             want_fence=True))
            # Answered once the fence committed: the moves have begun at most.
            assert leader.moves.in_progress(VICTIM) and leader.state.partition_index.has_leaderships(VICTIM)
            quorum.elect(2)                                 # the old leader drops its job
            assert not leader.moves
            await until(lambda: other.is_active() and not other.moves and not other.pipeline.in_flight,
                        "the new controller finished the job")
            now = other.image.topics_by_id[topic_id].partitions
            assert all(p.leader not in (VICTIM, NO_LEADER) for p in now.values())
            assert other.image.brokers[VICTIM].fenced
            # The activation only noted the job: the broker's partitions were listed by its first step.
            assert (VICTIM, True) not in listed and (VICTIM, False) in listed
    run(go())


async def _fence_victim(quorum, leader, topic_id: str) -> int:
    """VICTIM asks to be fenced; returns how many partitions it led, once the job's moves committed."""
    led = sum(p.leader == VICTIM for p in leader.image.topics_by_id[topic_id].partitions.values())
    await call(leader, 63, heartbeat(VICTIM, leader.image.brokers[VICTIM].epoch, quorum.end_offset, want_fence=True))
    await until(lambda: not leader.moves and not leader.pipeline.in_flight, "the partitions moved")
    return led


def test_the_active_controller_logs_when_the_leaderships_of_a_fence_in_steps_are_committed(monkeypatch, caplog):
    """The job's leadership part (the first) logs once its last step commits, with the count of
    partitions the broker led; the ISR-only steps after it do not log again."""
    async def go():
        quorum, leader, running, topic_id = await _cluster(3, monkeypatch)
        async with running:
            with caplog.at_level("INFO", logger="kafkawire.controller.fencing"):
                led = await _fence_victim(quorum, leader, topic_id)
            lines = [r.getMessage() for r in caplog.records if "leads no partition" in r.getMessage()]
            assert led > 3 and len(lines) == 1, lines
            assert f"broker {VICTIM} leads no partition: its {led} leaderships moved and committed" in lines[0]
    run(go())


def test_a_fence_in_steps_logs_its_timeline_at_debug(monkeypatch, caplog, tmp_path):
    """kafkawire.controller.fence_timeline at DEBUG: the job's start with the leaderships it has to
    move, each step's offsets (contiguous, every record of the job) down to no leadership left,
    each committed batch; tests/nemesis/fence_timeline.py reads them back from a node's log."""
    from tests.nemesis import fence_timeline

    async def go():
        quorum, leader, running, topic_id = await _cluster(3, monkeypatch)
        async with running:
            with caplog.at_level("DEBUG", logger="kafkawire.controller.fence_timeline"):
                return await _fence_victim(quorum, leader, topic_id)
    led = run(go())
    lines = [r.getMessage() for r in caplog.records if r.name == "kafkawire.controller.fence_timeline"]
    assert any(f"job of broker {VICTIM} started: {led} leaderships, {PARTITIONS} partitions" in line
               for line in lines), lines
    (tmp_path / "node-1.log").write_text("".join(f"[2026-12-01 00:00:00,000] DEBUG {line} (x)\n" for line in lines))
    steps = [fence_timeline._STEP.search(line) for line in lines]
    steps = [s for s in steps if s is not None]
    assert [int(s["first"]) for s in steps[1:]] == [int(s["last"]) + 1 for s in steps[:-1]]
    assert sum(int(s["n"]) for s in steps) == PARTITIONS and int(steps[-1]["left"]) == 0
    summary = fence_timeline.summary(str(tmp_path))
    led_steps = -(-led // 3)                        # the leaderships' part, 3 partitions a step
    assert summary[0].startswith(f"leader 1: {led_steps} steps moved the leaderships (offsets "
                                 f"{steps[0]['first']}-{steps[led_steps - 1]['last']})"), summary
    assert "committed never" not in summary[0]
