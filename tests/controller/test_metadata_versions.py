"""Kafka 4.3.1's metadata versions in the controller. A node refuses to run on a finalized
feature level it does not support, as Kafka's controller does (FeatureControlManager.replay
throws and the fatal fault handler stops the process): in the log, in a snapshot, and in the
bootstrap records a new quorum would commit. At 4.3-IV0 a snapshot keeps the brokers'
cordoned log directories (RegisterBrokerRecord v4)."""
import asyncio
import io
import uuid

import pytest

from kafkawire.controller.factory import controller_factory
from kafkawire.controller.state import ControllerState, UnsupportedFeatureLevel
from kafkawire.controller.versions import SUPPORTED_FEATURES
from kafkawire.feature_versions import LATEST_PRODUCTION_LEVEL, LATEST_TESTING_LEVEL
from kafkawire.storage.snapshot import BOOTSTRAP_FILE_NAME
from kafkawire.raft.node.controller_node import ControllerNode
from kafkawire.tools.storage import write_bootstrap_checkpoint

from kafkawire.controller.frames import frame
from .harness import CLUSTER_ID, heartbeat, run
from .test_node_integration import config_for, free_port, wait_for


def feature_frame(name: str, level: int) -> bytes:
    return frame("FeatureLevelRecord", name=name, feature_level=level)


def test_the_node_supports_kafka_4_3_production_levels():
    assert SUPPORTED_FEATURES["metadata.version"] == (7, LATEST_PRODUCTION_LEVEL) == (7, 30)
    state = ControllerState(SUPPORTED_FEATURES)
    state.apply_batch(0, 1, 0, [feature_frame("metadata.version", 30), feature_frame("transaction.version", 2),
                                feature_frame("streams.version", 1)])
    assert state.finalized_features() == {"metadata.version": 30, "transaction.version": 2, "streams.version": 1}


@pytest.mark.parametrize("name, level, supported", [
    ("metadata.version", LATEST_TESTING_LEVEL, "7-30"),     # 4.4-IV0: known to Kafka 4.3.1, not production
    ("metadata.version", 6, "7-30"),
    ("group.version", 2, "0-1"),
    ("transaction.version", 3, "0-2"),
    ("no.such.feature", 1, "0"),                            # an unknown feature supports level 0 only
])
def test_a_level_outside_the_supported_range_stops_replay(name, level, supported):
    state = ControllerState(SUPPORTED_FEATURES)
    state.apply_batch(0, 1, 0, [feature_frame("metadata.version", 21)])
    with pytest.raises(UnsupportedFeatureLevel) as info:
        state.apply_batch(1, 1, 0, [feature_frame(name, level)])
    assert str(info.value) == (f"Unable to apply FeatureLevelRecord record at offset 1: Tried to apply "
                               f"FeatureLevelRecord FeatureLevelRecord(name='{name}', featureLevel={level}), but "
                               f"this controller only supports versions {supported}")
    with pytest.raises(UnsupportedFeatureLevel):
        ControllerState(SUPPORTED_FEATURES).load_snapshot(5, 1, [feature_frame(name, level)])


def test_level_zero_of_an_unknown_feature_is_accepted():
    state = ControllerState(SUPPORTED_FEATURES)
    state.apply_batch(0, 1, 0, [feature_frame("metadata.version", 30), feature_frame("no.such.feature", 0)])
    assert state.finalized_features() == {"metadata.version": 30}


def test_a_node_bootstrapped_at_an_unsupported_level_stops(tmp_path, caplog):
    """A directory whose bootstrap.checkpoint says metadata.version 31 (Kafka's formatter writes
    that with unstable.feature.versions.enable): the leader commits the bootstrap records, its
    controller cannot apply them and the node stops with the reason."""
    from kafkawire.tools.storage import format_storage
    port = free_port()
    config = config_for(tmp_path, port)
    format_storage(config, CLUSTER_ID, mode=None, out=io.StringIO())
    data = tmp_path / "data"
    (data / BOOTSTRAP_FILE_NAME).unlink()
    write_bootstrap_checkpoint(data, LATEST_TESTING_LEVEL)

    async def life():
        node = ControllerNode(config, state_machine_factory=controller_factory, fsync=False)
        await node.start()
        try:
            await wait_for(lambda: node.driver.failure is not None, "the node to stop on metadata.version 31")
            return str(node.driver.failure)
        finally:
            await node.stop(graceful=False)
    failure = asyncio.run(life())
    assert "FeatureLevelRecord(name='metadata.version', featureLevel=31), but this controller only supports " \
           "versions 7-30" in failure


@pytest.mark.parametrize("cordoned", [None, [], [uuid.UUID(int=0x71 << 64 | 5), uuid.UUID(int=0x12 << 64 | 9)]])
def test_a_snapshot_at_4_3_iv0_keeps_the_cordoned_directories(cordoned):
    """RegisterBrokerRecord v4 (metadata.version 4.3-IV0) carries CordonedLogDirs, null until the
    broker reports them; BrokerRegistration.toRecord writes back what the image holds, in order."""
    from kafkawire.controller.snapshot import broker_record
    from kafkawire.metadata import decode_metadata_record
    log_dirs = [uuid.UUID(int=0x71 << 64 | 5), uuid.UUID(int=0x12 << 64 | 9), uuid.UUID(int=0x33 << 64 | 1)]
    state = ControllerState(SUPPORTED_FEATURES)
    state.apply_batch(0, 1, 0, [
        feature_frame("metadata.version", 30),
        frame("RegisterBrokerRecord", 4, broker_id=4, incarnation_id=uuid.UUID(int=77), broker_epoch=1,
              end_points=[], features=[], rack=None, fenced=True, in_controlled_shutdown=False,
              is_migrating_zk_broker=False, log_dirs=log_dirs, cordoned_log_dirs=cordoned)])
    written = decode_metadata_record(broker_record(state.image.brokers[4], 30))
    assert written.version == 4
    assert written.message.cordoned_log_dirs == cordoned
    assert decode_metadata_record(broker_record(state.image.brokers[4], 29)).version == 3


def test_heartbeats_report_cordoned_directories_from_4_3_iv0_and_placement_skips_fully_cordoned_brokers():
    """ReplicationControlManager.processBrokerHeartbeat at 4.3-IV0: handleDirectoriesCordoned writes a
    BrokerRegistrationChangeRecord v3 when the reported set changes (null reports are ignored);
    CreateTopics then places no replica on a broker whose every directory is cordoned."""
    from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    from .test_brokers import call, new_records, register_unfenced, start
    dirs = {5: [uuid.UUID(int=(5 << 64) | 1), uuid.UUID(int=(5 << 64) | 2)], 6: [uuid.UUID(int=(6 << 64) | 1)]}

    async def go():
        quorum, leader, running = await start(mv=30)
        async with running:
            epochs = {b: await register_unfenced(quorum, leader, b, log_dirs=dirs[b]) for b in (5, 6)}
            registrations = [r for _, r in new_records(quorum, 0) if r.type_name == "RegisterBrokerRecord"]
            assert [(r.version, r.message.cordoned_log_dirs) for r in registrations] == [(4, None), (4, None)]

            async def beat(broker, cordoned):
                since = quorum.end_offset
                request = heartbeat(broker, epochs[broker], quorum.end_offset)
                request.cordoned_log_dirs = cordoned
                assert (await call(leader, 63, request)).error_code == 0
                return [(r.version, r.message.broker_id, r.message.cordoned_log_dirs) for _, r in
                        new_records(quorum, since) if r.type_name == "BrokerRegistrationChangeRecord"]
            assert await beat(5, None) == []                                   # not caught up yet: unknown
            assert await beat(5, []) == [(3, 5, [])]                           # null -> known: recorded
            assert await beat(5, []) == []
            assert await beat(5, [dirs[5][1]]) == [(3, 5, [dirs[5][1]])]
            assert await beat(5, [dirs[5][1]]) == []
            assert await beat(6, dirs[6]) == [(3, 6, dirs[6])]                 # all of broker 6's
            assert leader.image.brokers[6].cordoned_directories == tuple(dirs[6])
            reply = await call(leader, 19, CreateTopicsRequest(
                topics=[CreatableTopic(name=f"t{i}", num_partitions=3, replication_factor=1) for i in range(4)],
                timeout_ms=5000))
            assert all(t.error_code == 0 for t in reply.topics)
            replicas = {b for t in leader.image.topics_by_name.values() for p in t.partitions.values()
                        for b in p.replicas}
            assert replicas == {5}
    run(go())


def test_heartbeats_before_4_3_iv0_write_no_cordoned_directories():
    from .test_brokers import call, new_records, register_unfenced, start

    async def go():
        quorum, leader, running = await start(mv=29)
        async with running:
            epoch = await register_unfenced(quorum, leader, 5, log_dirs=[uuid.UUID(int=(5 << 64) | 1)])
            since = quorum.end_offset
            request = heartbeat(5, epoch, quorum.end_offset)
            request.cordoned_log_dirs = [uuid.UUID(int=(5 << 64) | 1)]
            assert (await call(leader, 63, request)).error_code == 0
            assert [r for _, r in new_records(quorum, since) if r.type_name == "BrokerRegistrationChangeRecord"] == []
    run(go())
