"""The controller inside a real single-voter node on 127.0.0.1 (in process): it activates, registers
itself over its own listener, serves a broker and CreateTopics, and what it wrote is a Kafka
metadata log; a restart replays it without a second bootstrap."""
import asyncio
import io
import uuid

import pytest

from kafkawire.controller.factory import controller_factory
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.metadata.replay import replay_directory
from kafkawire.net.client import NetworkClient
from kafkawire.net.config import parse_server_config
from kafkawire.raft.node.controller_node import ControllerNode
from kafkawire.raft.node.local_quorum import free_ports
from kafkawire.tools.storage import format_storage

from .harness import CLUSTER_ID, broker_request, heartbeat


def free_port() -> int:
    """One port reserved as free_ports reserves them: a port probed free and closed is handed
    out again by another process's bind(0) (a test file beside this one under pytest-xdist)."""
    port, = free_ports(1)
    return port


def config_for(tmp_path, port):
    return parse_server_config(f"""
node.id=1
process.roles=controller
controller.quorum.voters=1@127.0.0.1:{port}
listeners=CONTROLLER://127.0.0.1:{port}
controller.listener.names=CONTROLLER
log.dirs={tmp_path}/data
controller.quorum.election.timeout.ms=200
""")


async def wait_for(predicate, what, seconds=15):
    for _ in range(int(seconds * 100)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"gave up waiting: {what}")


def with_an_active_node(config, body, what="activation"):
    """Start a node of ``config`` (its storage formatted), wait until it is the active controller
    and has registered itself, and return ``await body(node)`` run by ``asyncio.run``; the node
    is stopped afterwards."""
    async def life():
        node = ControllerNode(config, state_machine_factory=controller_factory, fsync=False)
        await node.start()
        try:
            controller = node.state_machine
            await wait_for(lambda: controller.is_active() and controller.registration.registered(), what, 20)
            return await body(node)
        finally:
            await node.stop()
    return asyncio.run(life())


def test_a_node_runs_the_controller(tmp_path):
    port = free_port()
    config = config_for(tmp_path, port)
    format_storage(config, CLUSTER_ID, mode=None, out=io.StringIO())

    async def life(first: bool):
        node = ControllerNode(config, state_machine_factory=controller_factory, fsync=False)
        await node.start()
        try:
            controller = node.state_machine
            # The image holds the registration once written, ahead of its commit: wait for both.
            await wait_for(lambda: controller.is_active() and controller.registration.registered()
                           and not controller.pipeline.in_flight, "activation and the controller's own registration")
            if not first:
                return controller.incarnation_id
            async with NetworkClient(request_timeout_ms=5000) as client:
                address = ("127.0.0.1", port)
                reply = await client.send(address, broker_request(7, log_dirs=[uuid.uuid4()]))
                assert reply.error_code == 0
                beat = await client.send(address, heartbeat(7, reply.broker_epoch, controller.applied_offset + 1))
                assert beat.error_code == 0 and not beat.is_fenced
                created = await client.send(address, CreateTopicsRequest(
                    topics=[CreatableTopic(name="events", num_partitions=2, replication_factor=1)], timeout_ms=5000))
                assert created.topics[0].error_code == 0, created.topics[0].error_message
                assert reply.broker_epoch == controller.state.register_broker_offsets[7]
            return controller.incarnation_id
        finally:
            await node.stop()

    first = asyncio.run(life(True))
    second = asyncio.run(life(False))
    replay = replay_directory(tmp_path / "data" / "__cluster_metadata-0")
    assert replay.problems == []
    image = replay.image
    assert image.metadata_version == 30          # storage format's default, 4.3-IV0
    assert image.brokers[7].fenced is False
    assert [p.leader for p in image.topics_by_name["events"].partitions.values()] == [7, 7]
    assert image.controllers[1].incarnation_id == second != first
    assert image.controllers[1].listeners["CONTROLLER"].port == port


def test_kafka_pythons_admin_creates_topics_through_the_node(tmp_path):
    kafka_admin = pytest.importorskip("kafka.admin", reason="kafka-python is not installed")
    from kafka.errors import TopicAlreadyExistsError
    port = free_port()
    config = config_for(tmp_path, port)
    format_storage(config, CLUSTER_ID, mode=None, out=io.StringIO())

    def admin_session():
        admin = kafka_admin.KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}", request_timeout_ms=5000)
        try:
            admin.create_topics([kafka_admin.NewTopic("clicks", 3, 1)])
            with pytest.raises(TopicAlreadyExistsError, match="Topic 'clicks' already exists."):
                admin.create_topics([kafka_admin.NewTopic("clicks", 3, 1)])
        finally:
            admin.close()

    async def go(node):
        controller = node.state_machine
        async with NetworkClient(request_timeout_ms=5000) as client:
            reply = await client.send(("127.0.0.1", port), broker_request(1, log_dirs=[uuid.uuid4()]))
            await client.send(("127.0.0.1", port), heartbeat(1, reply.broker_epoch, controller.applied_offset + 1))
        await asyncio.get_running_loop().run_in_executor(None, admin_session)
        return controller.image
    image = with_an_active_node(config, go)
    assert len(image.topics_by_name["clicks"].partitions) == 3
