"""The metadata controller on a fake raft handle: the records it appends, its answers, and
snapshots that rebuild the same metadata."""
import asyncio
import uuid

from kafkawire.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kafkawire.messages.broker_registration_request import BrokerRegistrationRequest, Listener
from kafkawire.messages.controller_registration_request import ControllerRegistrationRequest
from kafkawire.metadata.frame import decode_metadata_record
from kafkawire.protocol.error_codes import Errors
from raft.node.errors import NotLeader
from raft.node.metadata_controller import MetadataController, supported_features
from raft.types import LeaderAndEpoch, OffsetAndEpoch
from tools.storage import bootstrap_records
from kafkawire.metadata.frame import encode_metadata_record


class FakeRaft:
    """Appends commit at once, in order, and are handed back to the controller as raft would."""

    def __init__(self, leader: bool = True):
        self.node_id = 1
        self.leading = leader
        self.log: list[bytes] = []
        self.controller = None

    def leader(self):
        return LeaderAndEpoch(1 if self.leading else 2, 1)

    def is_leader(self):
        return self.leading

    def next_offset(self):
        return len(self.log)

    async def append(self, records):
        if not self.leading:
            raise NotLeader("not the leader")
        base = len(self.log)
        self.log += records
        self.controller.on_committed(base, 1, 0, list(records))
        return len(self.log) - 1


def make(leader=True):
    raft = FakeRaft(leader)
    bootstrap = [encode_metadata_record(r, 0) for r in bootstrap_records(29)]
    controller = MetadataController(raft, cluster_id="c1", listeners=[("CONTROLLER", "h", 9093, "PLAINTEXT")],
                                    supported_features=supported_features(), bootstrap_records=bootstrap,
                                    idle_interval_ms=10)
    raft.controller = controller
    return raft, controller


def names(raft):
    return [type(decode_metadata_record(v).message).NAME for v in raft.log]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 10))


def test_activation_writes_the_bootstrap_records_then_noops():
    raft, controller = make()

    async def go():
        task = asyncio.ensure_future(controller._while_active())
        await asyncio.sleep(0.05)
        task.cancel()
    run(go())
    kinds = names(raft)
    assert kinds[:6] == ["FeatureLevelRecord"] * 6
    assert set(kinds[6:]) == {"NoOpRecord"} and len(kinds) > 6
    assert controller.image.metadata_version == 29


def test_registrations_fencing_and_errors():
    raft, controller = make()
    handlers = controller.handlers()

    async def go():
        await controller._append(controller.bootstrap_records)
        r = await handlers[70](None, ControllerRegistrationRequest(controller_id=2, incarnation_id=uuid.uuid4()))
        assert r.error_code == Errors.NONE
        reg = await handlers[62](None, BrokerRegistrationRequest(
            broker_id=7, cluster_id="c1", incarnation_id=uuid.uuid4(),
            listeners=[Listener(name="PLAINTEXT", host="b", port=9092)]))
        assert reg.error_code == Errors.NONE and reg.broker_epoch == 7   # the offset of its record
        wrong = await handlers[62](None, BrokerRegistrationRequest(broker_id=8, cluster_id="other"))
        assert wrong.error_code == Errors.INCONSISTENT_CLUSTER_ID
        stale = await handlers[63](None, BrokerHeartbeatRequest(broker_id=7, broker_epoch=3))
        assert stale.error_code == Errors.STALE_BROKER_EPOCH
        behind = await handlers[63](None, BrokerHeartbeatRequest(broker_id=7, broker_epoch=7,
                                                                 current_metadata_offset=2))
        assert behind.is_fenced and not behind.is_caught_up
        beat = await handlers[63](None, BrokerHeartbeatRequest(broker_id=7, broker_epoch=7,
                                                               current_metadata_offset=8))
        assert not beat.is_fenced and beat.is_caught_up
    run(go())
    assert names(raft)[6:] == ["RegisterControllerRecord", "RegisterBrokerRecord", "UnfenceBrokerRecord"]
    assert controller.image.brokers[7].fenced is False
    assert 2 in controller.image.controllers


def test_a_follower_answers_not_controller():
    raft, controller = make(leader=False)
    r = run(controller.handlers()[70](None, ControllerRegistrationRequest(controller_id=2)))
    assert r.error_code == Errors.NOT_CONTROLLER
    assert raft.log == []


def test_a_snapshot_rebuilds_the_same_metadata():
    raft, controller = make()

    async def go():
        await controller._append(controller.bootstrap_records)
        await controller._append([encode_metadata_record(
            __import__("kafkawire").messages.by_name("NoOpRecord")(), 0)])
        await controller.handlers()[62](None, BrokerRegistrationRequest(broker_id=7, cluster_id="c1",
                                                                        incarnation_id=uuid.uuid4()))
        await controller.handlers()[63](None, BrokerHeartbeatRequest(broker_id=7, broker_epoch=7,
                                                                     current_metadata_offset=8))
        await controller.handlers()[70](None, ControllerRegistrationRequest(controller_id=3,
                                                                            incarnation_id=uuid.uuid4()))
    run(go())
    records = controller.snapshot_records()
    assert "NoOpRecord" not in [type(decode_metadata_record(v).message).NAME for v in records]
    _, other = make()
    other.on_snapshot_loaded(OffsetAndEpoch(1, len(raft.log)), records)
    assert other.image.metadata_version == controller.image.metadata_version
    assert other.image.finalized_features == controller.image.finalized_features
    assert other.image.brokers == controller.image.brokers
    assert other.image.controllers == controller.image.controllers
    assert other.applied_offset == len(raft.log) - 1
