"""A node refuses to run on a finalized feature level it does not support, as Kafka's controller
does (FeatureControlManager.replay throws and the fatal fault handler stops the process): in
the log, in a snapshot, and in the bootstrap records a new quorum would commit."""
import asyncio
import io

import pytest

from kafkawire.controller.factory import controller_factory
from kafkawire.controller.state import ControllerState, UnsupportedFeatureLevel
from kafkawire.controller.versions import SUPPORTED_FEATURES
from kafkawire.feature_versions import LATEST_PRODUCTION_LEVEL, LATEST_TESTING_LEVEL
from kafkawire.storage.snapshot import BOOTSTRAP_FILE_NAME
from raft.node.controller_node import ControllerNode
from tools.storage import write_bootstrap_checkpoint

from kafkawire.controller.frames import frame
from .harness import CLUSTER_ID
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
    from tools.storage import format_storage
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
