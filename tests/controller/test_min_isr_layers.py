"""min.insync.replicas of a topic that sets none, resolved as Kafka 4.3.1's controller does
(ConfigurationControlManager.getTopicConfig, KafkaConfigSchema.resolveEffectiveTopicConfig): the
topic's config, then the active controller's own node config (its node id's BROKER resource),
the cluster default, its server.properties; on the fencing path (leader_and_isr_updates), in one
write's ImageLookups, and from server.properties through controller_factory."""
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.controller.activation import BROKER_RESOURCE
from kafkawire.controller.factory import controller_factory
from kafkawire.controller.frames import frame
from kafkawire.controller.image_lookups import ImageLookups
from kafkawire.controller.node_configs import NodeConfigs
from kafkawire.controller.replication import effective_min_isr
from kafkawire.metadata.image import TOPIC_RESOURCE, MetadataImage, TopicImage
from kafkawire.metadata.registrations import PartitionRegistration
from kafkawire.net.config import parse_server_config
from kafkawire.tools.storage import write_bootstrap_checkpoint

from .harness import CLUSTER_ID, FakeHandle, FakeQuorum, Running, add_controller, run, until
from .test_brokers import create, register_unfenced
from .test_unfencing_in_steps import _beat

MIN_ISR = "min.insync.replicas"
# (dynamic configs as {(resource type, name): value}, server.properties' value, the min ISR of a
# topic of replication factor 5 on controller 1)
LAYERS = [
    ({}, 3, 3),                                                             # the static setting alone
    ({(BROKER_RESOURCE, ""): "2"}, 3, 2),                                   # the cluster default before it
    ({(BROKER_RESOURCE, "1"): "4", (BROKER_RESOURCE, ""): "2"}, 3, 4),      # the node's before the cluster's
    ({(BROKER_RESOURCE, "2"): "4", (BROKER_RESOURCE, ""): "2"}, 3, 2),      # another node's is not the controller's
    ({(TOPIC_RESOURCE, "t"): "1", (BROKER_RESOURCE, "1"): "4"}, 3, 1),      # the topic's before all
    ({(BROKER_RESOURCE, "1"): "9"}, 3, 5),                                  # at most the replication factor
]


@pytest.mark.parametrize("dynamic, static, expected", LAYERS)
def test_each_layer_in_kafkas_order(dynamic, static, expected):
    image = MetadataImage()
    replicas = (1, 2, 3, 4, 5)
    topic = TopicImage("t", uuid.uuid4(), {0: PartitionRegistration(
        replicas=replicas, directory_ids=(), isr=replicas, removing_replicas=(), adding_replicas=(), leader=1,
        leader_recovery_state=0, leader_epoch=0, partition_epoch=0)})
    for resource, value in dynamic.items():
        image.configs.setdefault(resource, {})[MIN_ISR] = value
    assert effective_min_isr(image, topic, NodeConfigs(1, static_min_isr=static)) == expected
    assert ImageLookups(image, NodeConfigs(1, static_min_isr=static)).min_isr(topic) == expected


@pytest.mark.parametrize("node, in_elr", [("1", True), ("2", False)])
def test_the_active_controllers_node_config_decides_a_fenced_replicas_elr(node, in_elr):
    """The cluster default is 1 (the activation writes it); min.insync.replicas=3 in the node
    config of the active controller (1) makes a topic of replication factor 3 that sets none
    keep a fenced replica as an eligible leader replica (leader_and_isr_updates); another
    node's config does not."""
    async def go():
        quorum = FakeQuorum()
        leader = add_controller(quorum, 1)
        async with Running(leader):
            quorum.elect(1)
            await until(lambda: leader.is_active() and leader.registration.registered(), "activation")
            await leader.write(lambda: ([frame("ConfigRecord", resource_type=BROKER_RESOURCE, resource_name=node,
                                               name=MIN_ISR, value="3")], None))
            for b in (1, 2, 3):
                await register_unfenced(quorum, leader, b)
            orders = await create(leader, "orders", partitions=1, rf=3)
            await _beat(leader, quorum, 2, want_fence=True)
            await until(lambda: not leader.moves and not leader.pipeline.in_flight, "fenced")
            partition = leader.image.topics_by_id[orders].partitions[0]
            assert 2 not in partition.isr
            assert list(partition.elr) == ([2] if in_elr else [])
    run(go())


def test_the_static_setting_reaches_the_controller_from_server_properties(tmp_path):
    """controller_factory hands min.insync.replicas of server.properties to the controller,
    whose activation writes it as the cluster default (as Kafka's bootstrap does with ELR on)."""
    write_bootstrap_checkpoint(tmp_path, 29)
    config = parse_server_config(f"node.id=1\nprocess.roles=controller\ncontroller.quorum.voters=1@h:9093\n"
                                 f"listeners=CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\n"
                                 f"log.dirs={tmp_path}\nmin.insync.replicas=2\n")
    quorum = FakeQuorum()
    raft = FakeHandle(quorum, 1)
    raft.hw_listeners = []
    controller = quorum.controllers[1] = controller_factory(raft, config, SimpleNamespace(cluster_id=CLUSTER_ID))

    async def go():
        async with Running(controller):
            quorum.elect(1)
            await until(controller.is_active, "activation")
            assert controller.image.configs[(BROKER_RESOURCE, "")] == {MIN_ISR: "2"}
    run(go())
