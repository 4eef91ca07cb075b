"""Every controller registers with the active one (KIP-919), retrying with backoff, and the
active controller appends the RegisterControllerRecord Kafka would."""
import uuid

from kafkawire.messages.controller_registration_request import ControllerRegistrationRequest
from kafkawire.messages.controller_registration_response import ControllerRegistrationResponse
from kafkawire.net.client import TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.contract import NoLeader
from kafkawire.raft.types import OffsetAndEpoch

from .harness import Ctx, FakeQuorum, Running, add_controller, run, until

# Kafka 4.2 registers its supported features in this order (its HashMap's): see the
# REGISTER_CONTROLLER_RECORD of ../shared/reference/kraft-data/IndusWargods__local-test-rig.
KAFKA_FEATURE_ORDER = ["group.version", "kraft.version", "metadata.version", "share.version", "streams.version",
                       "transaction.version", "eligible.leader.replicas.version"]


def registrations(quorum):
    return [m for _, m in quorum.records() if type(m).NAME == "RegisterControllerRecord"]


def test_every_controller_registers_once_with_its_listeners_and_features():
    quorum = FakeQuorum()
    controllers = [add_controller(quorum, i) for i in (1, 2, 3)]

    async def go():
        async with Running(*controllers):
            quorum.elect(1)
            await until(lambda: all(c.registration.registered() for c in controllers), "three registrations")
    run(go())
    records = registrations(quorum)
    assert sorted(r.controller_id for r in records) == [1, 2, 3]
    for record in records:
        controller = quorum.controllers[record.controller_id]
        assert record.incarnation_id == controller.incarnation_id and record.zk_migration_ready is False
        assert [(e.name, e.host, e.port, e.security_protocol) for e in record.end_points] == [
            ("CONTROLLER", f"controller{record.controller_id}", 9093, 0)]
        assert [f.name for f in record.features] == KAFKA_FEATURE_ORDER
        assert {f.name: (f.min_supported_version, f.max_supported_version) for f in record.features}[
            "metadata.version"] == (7, 30)     # Kafka 4.3.1: 3.3-IV3 to 4.3-IV0
    assert all(c.registration.attempts == 1 for c in controllers)


def test_failed_registrations_are_retried_until_one_is_acknowledged():
    quorum = FakeQuorum()
    leader, follower = add_controller(quorum, 1), add_controller(quorum, 2)
    quorum.send_failures[2] = [NoLeader("no leader yet"), TransportError(("h", 1), "connection refused"),
                               ControllerRegistrationResponse(error_code=int(Errors.NOT_CONTROLLER),
                                                              error_message="No controller appears to be active.")]

    async def go():
        async with Running(leader, follower):
            quorum.elect(1)
            await until(follower.registration.registered, "the follower's registration")
    run(go())
    assert follower.registration.attempts == 4 and follower.registration.failures == 0
    assert [r.controller_id for r in registrations(quorum)].count(2) == 1


def test_a_registration_left_by_a_previous_process_is_replaced():
    quorum = FakeQuorum()
    old = add_controller(quorum, 2)
    leader = add_controller(quorum, 1)

    async def go():
        async with Running(leader, old):
            quorum.elect(1)
            await until(old.registration.registered, "the first registration")
        # Node 2 restarts: a new process (a new incarnation) loads a snapshot of the same log.
        restarted = add_controller(quorum, 2)
        restarted.on_snapshot_loaded(OffsetAndEpoch(quorum.epoch, quorum.end_offset), old.snapshot_records())
        assert restarted.image.controllers[2].incarnation_id == old.incarnation_id
        assert not restarted.registration.registered()
        async with Running(leader, restarted):
            restarted.poke()
            await until(restarted.registration.registered, "the new incarnation's registration")
        return restarted
    restarted = run(go())
    mine = [r for r in registrations(quorum) if r.controller_id == 2]
    assert [r.incarnation_id for r in mine] == [old.incarnation_id, restarted.incarnation_id]
    assert restarted.image.controllers[2].incarnation_id == restarted.incarnation_id


def test_a_follower_answers_not_controller_naming_the_active_one():
    quorum = FakeQuorum()
    leader, follower = add_controller(quorum, 1), add_controller(quorum, 2)
    quorum.elect(1)
    request = ControllerRegistrationRequest(controller_id=3, incarnation_id=uuid.uuid4())
    response = run(follower.handlers()[70].handle(Ctx(0), request))
    assert response.error_code == Errors.NOT_CONTROLLER
    assert response.error_message == "The active controller appears to be node 1."
    quorum.elect(None)
    response = run(follower.handlers()[70].handle(Ctx(0), request))
    assert response.error_message == "No controller appears to be active."
    assert quorum.entries == []


def test_registration_before_controller_registration_exists_is_unsupported():
    quorum = FakeQuorum()
    leader = add_controller(quorum, 1, mv=14)          # 3.6-IV2: before KIP-919

    async def go():
        async with Running(leader):
            quorum.elect(1)
            await until(leader.is_active, "activation")
            request = ControllerRegistrationRequest(controller_id=2, incarnation_id=uuid.uuid4())
            return await leader.handlers()[70].handle(Ctx(0), request)
    response = run(go())
    assert response.error_code == Errors.UNSUPPORTED_VERSION
    assert response.error_message == "The current MetadataVersion is too old to support controller registrations."
    assert registrations(quorum) == [] and leader.registration.attempts == 0


def test_kafkas_exponential_backoff():
    import random
    from kafkawire.controller.registration import ControllerRegistrationManager
    manager = ControllerRegistrationManager(None, None, incarnation_id=None, listeners=[], supported_features={},
                                            rng=random.Random(1))
    delays = [manager.resend_backoff.backoff_ms(n) for n in range(14)]
    for n, delay in enumerate(delays):
        expected = min(100 * 2 ** n, 120_000)
        assert int(expected * 0.98) <= delay <= min(expected * 1.02, 120_000)
    # at the cap the wait is jittered below 120 s (Kafka's), never above it
    at_cap = [manager.resend_backoff.backoff_ms(40) for _ in range(50)]
    assert max(at_cap) <= 120_000 and min(at_cap) >= int(120_000 * 0.98) and len(set(at_cap)) > 1