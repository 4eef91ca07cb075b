"""A snapshot is frozen on the loop without encoding anything there: the controller's
frozen_snapshot takes a view of the committed image (MetadataImage.frozen, copy on write) and
the driver's worker thread turns it into records. The view describes exactly the image of its
instant, whatever records are applied afterwards, and replay through copy on write leaves the
live image what a plain replay makes."""
import asyncio
import threading
import uuid

from kafkawire.controller import snapshot as snapshot_module
from kafkawire.controller.frames import frame, struct
from kafkawire.controller.snapshot import image_records
from kafkawire.controller.state import ControllerState
from kafkawire.controller.versions import SUPPORTED_FEATURES
from kafkawire.storage.snapshot import SnapshotReader

from .harness import run
from .test_heartbeat_scale import _large_cluster, _live

USER, TOPIC, READ, ALLOW, LITERAL = "user", 2, 3, 3, 3


def _quota(name, value, remove=False):
    entity = [struct("ClientQuotaRecord", "EntityData")(entity_type=USER, entity_name=name)]
    return frame("ClientQuotaRecord", entity=entity, key="producer_byte_rate", value=value, remove=remove)


def _scram(name):
    return frame("UserScramCredentialRecord", name=name, mechanism=1, salt=b"salt", stored_key=b"stored",
                 server_key=b"server", iterations=4096)


def _acl(acl_id, topic):
    return frame("AccessControlEntryRecord", id=acl_id, resource_type=TOPIC, resource_name=topic,
                 pattern_type=LITERAL, principal="User:alice", host="*", operation=READ, permission_type=ALLOW)


def _config(topic, name, value):
    return frame("ConfigRecord", resource_type=TOPIC, resource_name=topic, name=name, value=value)


def _apply(state, values):
    for value in values:
        state.apply_batch(state.next_offset, 1, 0, [value])


def test_a_frozen_view_keeps_its_instant_while_every_kind_of_record_changes_the_live_image(monkeypatch):
    cluster = run(_live(7, 30, 300, monkeypatch), timeout=60)
    log = [v for _, _, v in cluster.quorum.entries]
    half = len(log) // 2
    state = ControllerState(SUPPORTED_FEATURES)
    _apply(state, log[:half])
    topics = sorted(state.image.topics_by_name)
    acl = uuid.UUID(int=5)
    before = [_config(topics[0], "retention.ms", "1000"), _config(topics[1], "cleanup.policy", "compact"),
              _quota("alice", 1024.0), _quota("bob", 2048.0), _scram("alice"), _scram("bob"), _acl(acl, topics[0]),
              frame("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=1000)]
    _apply(state, before)
    frozen, frozen_order = state.image.frozen(), list(state.feature_order)
    expected = image_records(state.image, state.feature_order)

    after = [_config(topics[0], "retention.ms", None), _config(topics[1], "cleanup.policy", "delete"),
             _config(topics[2], "retention.ms", "5"), _quota("alice", 0.0, remove=True), _quota("bob", 1.0),
             _quota("carol", 3.0), frame("RemoveUserScramCredentialRecord", name="alice", mechanism=1), _scram("carol"),
             frame("RemoveAccessControlEntryRecord", id=acl), _acl(uuid.UUID(int=6), topics[1]),
             frame("ProducerIdsRecord", broker_id=1, broker_epoch=1, next_producer_id=2000),
             frame("RemoveTopicRecord", topic_id=state.image.topics_by_name[topics[3]].id),
             frame("ClearElrRecord", topic_name="")]
    _apply(state, log[half:] + after)
    assert image_records(frozen, frozen_order) == expected
    assert image_records(state.image, state.feature_order) != expected

    plain = ControllerState(SUPPORTED_FEATURES)          # never frozen: no copy on write at all
    _apply(plain, log + before + after)
    assert image_records(state.image, state.feature_order) == image_records(plain.image, plain.feature_order)
    assert state.image.configs == plain.image.configs and state.image.scram == plain.image.scram
    assert state.partition_index.as_sets() == plain.partition_index.as_sets()


class _ControllerMachine:
    """The raft driver's state machine for the test: a controller's large state, frozen as the
    controller freezes it; the driver's own records (opaque values) leave it unchanged."""
    in_transaction = False

    def __init__(self, controller):
        self.controller = controller

    def on_committed(self, base_offset, epoch, append_time_ms, records):
        pass

    def on_snapshot_loaded(self, snapshot_id, records):
        pass

    def on_leader_change(self, leader_id, epoch):
        pass

    def snapshot_records(self):
        return self.controller.snapshot_records()

    def frozen_snapshot(self):
        return self.controller.frozen_snapshot()


def test_the_driver_encodes_no_partition_record_on_the_loop_thread(tmp_path, monkeypatch):
    from tests.node.test_snapshot_writing import _driver, _until

    encoded_on = []
    real_partition_record = snapshot_module.partition_record

    def counting_partition_record(*args):
        encoded_on.append(threading.get_ident())
        return real_partition_record(*args)

    async def build():
        quorum, leader, running, _ = await _large_cluster(10_000)
        async with running:
            return leader
    controller = run(build(), timeout=120)
    expected = controller.snapshot_records()
    monkeypatch.setattr(snapshot_module, "partition_record", counting_partition_record)

    async def snapshot():
        driver = _driver(tmp_path / "p", _ControllerMachine(controller), 1)
        driver.start()
        try:
            await _until(driver.is_leader, "leadership")
            await driver.append([b"v"])
            await _until(lambda: driver.store.snapshot_ids(), "a snapshot")
            await _until(lambda: driver._snapshot_task is None, "the writer to finish")
            return driver.store.snapshot_path(driver.store.snapshot_ids()[-1]), threading.get_ident()
        finally:
            await driver.close()

    path, loop_thread = asyncio.run(snapshot())
    assert len(encoded_on) >= 10_000 and loop_thread not in encoded_on
    assert [bytes(r.value) for r in SnapshotReader(path).records()] == expected
