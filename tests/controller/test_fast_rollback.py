"""A leader that loses its leadership with writes in flight goes back to the committed state
(pipeline.py). Whatever the records in flight, it does so from the committed image, at the cost
of what they touched (rollback.py), not by replaying the log: the result must be the state the
committed log makes, record for record and index for index (test_committed_differential.py
checks every record kind and transactions the same way, at random)."""
import asyncio

from kafkawire.controller.pipeline import WritePipeline
from kafkawire.controller.snapshot import image_records
from kafkawire.controller.state import ControllerState
from kafkawire.messages.alter_client_quotas_request import AlterClientQuotasRequest, EntityData, EntryData, OpData
from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.unregister_broker_request import UnregisterBrokerRequest

from .harness import Ctx, Running, add_controller, broker_request, heartbeat, run, until
from .test_committed_differential import state_fingerprint
from .test_torn_writes import HeldHandle, HeldQuorum, delete, lead_with_a_broker


def _create(name, partitions=4):
    return CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=3)],
                               timeout_ms=5000)


def _replayed(quorum) -> ControllerState:
    state = ControllerState()
    for base, epoch, records in quorum.committed_batches:
        state.apply_batch(base, epoch, 0, list(records))
    return state


async def _lose_leadership_with_writes_in_flight(quorum, leader, in_flight) -> list:
    """Three brokers, two committed topics, then ``in_flight(leader)`` (handler key, request)
    held and the leadership given to node 2 before they commit; the replies."""
    await lead_with_a_broker(quorum, leader)
    for b in (2, 3):
        reply = await leader.handlers()[62].handle(Ctx(0), broker_request(b))
        await leader.handlers()[63].handle(Ctx(0), heartbeat(b, reply.broker_epoch, quorum.end_offset))
    for name in ("kept.one", "kept_two"):
        assert (await leader.handlers()[19].handle(Ctx(7), _create(name))).topics[0].error_code == 0
    quorum.holding = True
    in_flight = in_flight(leader)
    calls = [asyncio.ensure_future(leader.handlers()[key].handle(Ctx(7, key), request)) for key, request in in_flight]
    await until(lambda: len(quorum.held) == len(in_flight), "every write in flight appended")
    assert leader.pipeline.in_flight == len(in_flight)
    quorum.held.clear()                   # the new leader's log does not have them
    quorum.next_end = 0
    quorum.holding = False
    quorum.elect(2)
    return await asyncio.gather(*calls)


def _check(quorum, leader, rebuilds, fast: bool) -> None:
    expected = _replayed(quorum)
    state = leader.state
    assert (bool(rebuilds), state.next_offset) == (not fast, expected.next_offset)
    assert image_records(state.image, state.feature_order) == image_records(expected.image, expected.feature_order)
    assert state.partition_index.as_sets() == expected.partition_index.as_sets()
    assert state.image.topics_with_collision_chars == expected.image.topics_with_collision_chars
    assert sorted(state.image.topics_by_name) == ["kept.one", "kept_two"]
    assert leader.committed.image.topics_by_name.keys() == state.image.topics_by_name.keys()
    provenance = state.image.provenance
    assert (provenance.offset, provenance.epoch) == (expected.image.provenance.offset, expected.image.provenance.epoch)
    expected.image.provenance = provenance              # its batches' times are not kept by the fake quorum
    assert state_fingerprint(state) == state_fingerprint(expected)     # registration offsets, features, ...


def _check_rollback(in_flight, monkeypatch, *, fast: bool, then=None):
    """The rollback after ``in_flight`` against the replayed log; then ``then(quorum, leader)``."""
    quorum = HeldQuorum()
    leader = add_controller(quorum, 1, acls_enabled=True)        # an authorizer: the ACL APIs write
    leader.raft = HeldHandle(quorum, 1)
    rebuilds = []
    full = WritePipeline._rebuild
    monkeypatch.setattr(WritePipeline, "_rebuild", lambda self: (rebuilds.append(1), full(self)))

    async def go():
        async with Running(leader):
            replies = await _lose_leadership_with_writes_in_flight(quorum, leader, in_flight)
            assert all(r.error_code == 41 for r in replies if hasattr(r, "error_code"))
            _check(quorum, leader, rebuilds, fast)
            return await then(quorum, leader) if then else None
    return run(go())


def _creates_and_a_fence(leader):
    return [(19, _create("a.b")), (19, _create("a_b2")), (19, _create("later", 6)),
            (63, heartbeat(3, leader.state.image.brokers[3].epoch, 0, want_fence=True))]


async def _create_again(quorum, leader):
    """Leading again, it writes from the state rolled back: the names in flight are free again."""
    quorum.elect(1)
    await until(leader.is_active, "activation in the next epoch")
    return [(await leader.handlers()[19].handle(Ctx(7), _create(n))).topics[0].error_code
            for n in ("a.b", "a_b2", "kept.one")]


def test_creates_and_a_fence_in_flight_roll_back_from_the_committed_image_to_what_the_log_makes(monkeypatch):
    codes = _check_rollback(_creates_and_a_fence, monkeypatch, fast=True, then=_create_again)
    assert codes == [0, 0, 36]                  # TOPIC_ALREADY_EXISTS for the committed one only


def _registrations_deletion_acls_quotas(leader):
    acl = AclCreation(resource_type=2, resource_name="kept.one", resource_pattern_type=3, principal="User:alice",
                      host="*", operation=3, permission_type=3)
    quota = EntryData(entity=[EntityData(entity_type="user", entity_name="alice")],
                      ops=[OpData(key="producer_byte_rate", value=1024.0, remove=False)])
    return [(19, _create("x.y")), (62, broker_request(7)), (64, UnregisterBrokerRequest(broker_id=3)),
            (20, delete("kept_two")), (30, CreateAclsRequest(creations=[acl])),
            (49, AlterClientQuotasRequest(entries=[quota]))]


async def _register_again(quorum, leader):
    """Leading again: broker 3 is registered (its unregistration was dropped), 7 is not, and the
    deleted topic is there to delete."""
    quorum.elect(1)
    await until(leader.is_active, "activation in the next epoch")
    deleted = await leader.handlers()[20].handle(Ctx(6), delete("kept_two"))
    return sorted(leader.state.register_broker_offsets), deleted.responses[0].error_code


def test_registrations_a_deletion_acls_and_quotas_in_flight_roll_back_from_the_committed_image(monkeypatch):
    registered, deleted = _check_rollback(_registrations_deletion_acls_quotas, monkeypatch, fast=True,
                                          then=_register_again)
    assert (registered, deleted) == ([1, 2, 3], 0)
