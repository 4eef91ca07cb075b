"""UnregisterBroker and a new incarnation's registration, for a fenced broker in more ISRs and
ELRs than one controller event moves (fencing.py, issue 28): its partitions leave them first in
bounded events, then the request's own event writes its record (UnregisterBrokerRecord,
RegisterBrokerRecord), and the answer waits for it; the records are the ones Kafka's one event
writes, which is what a small broker still gets; a request cut short by a change of leader is
answered NOT_CONTROLLER and finishes at the next controller. UnregisterBroker keeps Kafka's bound
of MAX_RECORDS_PER_USER_OP records. (The per-event limit is lowered to a few partitions here.)"""
import asyncio
import random
import uuid

import pytest

from kafkawire.controller import bounded
from kafkawire.controller.cluster import FENCE
from kafkawire.controller.frames import frame
from kafkawire.metadata import decode_metadata_record
from kafkawire.messages.unregister_broker_request import UnregisterBrokerRequest
from kafkawire.protocol.error_codes import Errors

from .harness import Ctx, FakeQuorum, Running, add_controller, broker_request, heartbeat, run, until
from .test_brokers import call, create, new_records, register_unfenced

VICTIM = 1
PARTITIONS = 24                      # replication factor 3 over 3 brokers: the victim is in all 24


async def _fenced_victim(where: str, monkeypatch, limit: int, seed: int = 7):
    """Three brokers, one topic; the victim fenced and still in every partition's ISR ("isr": its
    fence record alone, as a new active controller leaves the followers of a fence job it did not
    finish) or ELR ("elr": fenced in one event with min.insync.replicas 3, so it moved to the
    ELRs). Every uuid from a seeded rng, so two runs write the same records."""
    rng = random.Random(seed)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=rng.getrandbits(128), version=4))
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, static_min_insync_replicas=3 if where == "elr" else 1)
    running = Running(leader)
    await running.__aenter__()
    quorum.elect(1)
    await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
    for b in (1, 2, 3):
        await register_unfenced(quorum, leader, b)
    topic_id = await create(leader, "orders", partitions=PARTITIONS, rf=3)
    epoch = leader.image.brokers[VICTIM].epoch
    if where == "isr":
        await leader.write(lambda: ([frame("BrokerRegistrationChangeRecord", 0, broker_id=VICTIM, broker_epoch=epoch,
                                           fenced=FENCE)], None))
    else:
        reply = await call(leader, 63, heartbeat(VICTIM, epoch, quorum.end_offset, want_fence=True))
        assert reply.is_fenced and not leader.moves
    partitions = leader.image.topics_by_id[topic_id].partitions.values()
    assert all(VICTIM in (p.isr if where == "isr" else p.elr) for p in partitions)
    leader.moves.max_moves_per_event = limit
    return quorum, leader, running, topic_id


def _unregister(controller):
    return controller.handlers()[64].handle(Ctx(0), UnregisterBrokerRequest(broker_id=VICTIM))


def _register_again(controller, clean: bool):
    request = broker_request(VICTIM)
    stored = controller.state.image.brokers[VICTIM].epoch
    request.previous_broker_epoch = stored if clean else stored - 1
    return controller.handlers()[62].handle(Ctx(3), request)


async def _event(how: str, where: str, limit: int, monkeypatch):
    """The records the event writes (in batches), and the partitions and brokers after it."""
    quorum, leader, running, topic_id = await _fenced_victim(where, monkeypatch, limit)
    async with running:
        batches = len(quorum.batches)
        answer = await (_unregister(leader) if how == "unregister" else _register_again(leader, how == "clean"))
        assert answer.error_code == 0
        assert not leader.moves and not leader.pipeline.in_flight      # answered after its own record committed
        written = [[decode_metadata_record(v) for v in batch] for batch in quorum.batches[batches:]]
        written = [b for b in written if b[0].type_name != "NoOpRecord"]
        return written, leader.image.topics_by_id[topic_id].partitions, leader.image.brokers, answer


def _changes(batches):
    return sorted((r.message for b in batches for r in b if r.type_name == "PartitionChangeRecord"),
                  key=lambda m: m.partition_id)


@pytest.mark.parametrize("how,where,last", [("unregister", "isr", "UnregisterBrokerRecord"),
                                            ("unregister", "elr", "UnregisterBrokerRecord"),
                                            ("unclean", "isr", "RegisterBrokerRecord"),
                                            ("unclean", "elr", "RegisterBrokerRecord"),
                                            ("clean", "isr", "RegisterBrokerRecord")])
def test_the_partitions_leave_in_steps_then_the_request_writes_its_record_as_one_event_would(how, where, last,
                                                                                                monkeypatch):
    batches, partitions, brokers, answer = run(_event(how, where, 5, monkeypatch))
    assert [r.type_name for r in batches[-1]] == [last]                 # its own event: nothing was left
    steps = batches[:-1]
    # Unregistering does not take a broker out of an ELR (handleBrokerUnregistered's ELR pass
    # removes it as from an ISR, which leaves an ELR as it is): that job visits and writes nothing.
    assert len(steps) == (0 if (how, where) == ("unregister", "elr") else -(-PARTITIONS // 5))
    assert all(len(b) <= 5 and {r.type_name for r in b} == {"PartitionChangeRecord"} for b in steps)
    gone_from = ("isr", "elr") if how == "unclean" else ("isr",)
    assert all(VICTIM not in getattr(p, f) for p in partitions.values() for f in gone_from)
    if how == "unregister":
        assert VICTIM not in brokers
    else:
        assert brokers[VICTIM].fenced and brokers[VICTIM].epoch == answer.broker_epoch

    # Kafka's one event (the limit above the victim's 24 partitions): the same changes, then the record.
    with pytest.MonkeyPatch.context() as again:
        one, _, _, _ = run(_event(how, where, PARTITIONS, again))
    assert [[r.type_name for r in b] for b in one] == [["PartitionChangeRecord"] * len(_changes(batches)) + [last]]
    assert _changes(one) == _changes(batches)


def test_the_old_incarnation_stays_fenced_and_other_writes_run_while_its_partitions_move(monkeypatch):
    async def go():
        quorum, leader, running, topic_id = await _fenced_victim("isr", monkeypatch, 1)
        async with running:
            old_epoch = leader.image.brokers[VICTIM].epoch
            mark = quorum.end_offset
            registering = asyncio.ensure_future(_register_again(leader, clean=False))
            await until(lambda: any(r.type_name == "PartitionChangeRecord" for _, r in new_records(quorum, mark)),
                        "the job's first step")
            beat = await call(leader, 63, heartbeat(VICTIM, old_epoch, quorum.end_offset))
            assert beat.error_code == 0 and beat.is_fenced                  # not unfenced mid-job
            await create(leader, "meanwhile", partitions=1, rf=2)
            assert leader.moves.in_progress(VICTIM) and not registering.done()
            answer = await registering
            assert answer.error_code == 0
            names = [(r.type_name, getattr(r.message, "name", None)) for _, r in new_records(quorum, mark)]
            created = names.index(("TopicRecord", "meanwhile"))
            assert ("PartitionChangeRecord", None) in names[:created]       # the steps ran before it,
            assert ("PartitionChangeRecord", None) in names[created:]       # and after it,
            assert names[-1] == ("RegisterBrokerRecord", None)              # the registration last
    run(go())


@pytest.mark.parametrize("how", ["unregister", "unclean"])
def test_a_request_cut_short_by_a_new_leader_is_refused_and_finishes_at_the_new_one(how, monkeypatch):
    async def go():
        quorum, leader, running, topic_id = await _fenced_victim("isr", monkeypatch, 1)
        other = add_controller(quorum, 2)
        for base, epoch, records in quorum.committed_batches:       # what it missed, joining late
            other.on_committed(base, epoch, 0, list(records))
        other.moves.max_moves_per_event = 1
        send = _unregister if how == "unregister" else (lambda c: _register_again(c, clean=False))
        async with running, Running(other):
            first = asyncio.ensure_future(send(leader))
            await until(lambda: leader.moves.in_progress(VICTIM), "the job started")
            quorum.elect(2)
            assert (await first).error_code == Errors.NOT_CONTROLLER and not leader.moves
            await until(other.is_active, "the new controller active")
            assert any(VICTIM in p.isr for p in other.image.topics_by_id[topic_id].partitions.values())
            assert (await send(other)).error_code == 0                     # asked again, as its sender does
            partitions = other.image.topics_by_id[topic_id].partitions.values()
            assert all(VICTIM not in p.isr and VICTIM not in p.elr for p in partitions)
            assert (VICTIM in other.image.brokers) == (how != "unregister")
    run(go())


def test_unregister_keeps_kafkas_bound_on_the_records_of_one_operation(monkeypatch):
    async def go():
        quorum, leader, running, topic_id = await _fenced_victim("isr", monkeypatch, 5)
        monkeypatch.setattr(bounded, "MAX_RECORDS_PER_USER_OP", 10)
        async with running:
            mark = quorum.end_offset
            # In 24 ISRs, more than the bound: one event as Kafka's, refused at the 11th record.
            answer = await _unregister(leader)
            assert (answer.error_code, answer.error_message) == \
                (Errors.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
            assert new_records(quorum, mark) == [] and VICTIM in leader.image.brokers and not leader.moves
    run(go())
