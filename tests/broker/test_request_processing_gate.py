"""A starting broker serves no request from a metadata image that has not caught up, as Kafka
4.3.1's BrokerServer.startup enables request processing on its listeners
(SocketServer.enableRequestProcessing) only after the controller said it caught up
(BrokerLifecycleManager's initial catch-up), its logs are open and it is unfenced.

In process, without a controller: the broker (node 2, restarted) talks to a stand-in active
controller that says "not caught up" until the test lets it, and reads a stand-in published
image that still names it the leader of a partition the controller gave to broker 1 while it
was down. A listener on port 0 is bound at start (its port is registered) but accepts nothing
until the broker is unfenced, so a request sent early waits, ApiVersions included, and is then
answered from the caught-up image; a listener on a fixed port is not opened until then (Kafka's
Acceptor opens it only when it starts), so an early connection is refused.
"""
from __future__ import annotations

import asyncio
import socket
import uuid

import pytest

from kafkawire.broker import Broker, BrokerStartError
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.broker_heartbeat_response import BrokerHeartbeatResponse
from kafkawire.messages.broker_registration_response import BrokerRegistrationResponse
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.partition_change_record import PartitionChangeRecord
from kafkawire.messages.partition_record import PartitionRecord
from kafkawire.messages.register_broker_record import BrokerEndpoint, RegisterBrokerRecord
from kafkawire.messages.topic_record import TopicRecord
from kafkawire.messages.unfence_broker_record import UnfenceBrokerRecord
from kafkawire.metadata.image import MetadataImage
from kafkawire.net.client import NetworkClient
from kafkawire.net.config import parse_server_config
from kafkawire.raft.node.local_quorum import free_ports

TOPIC_ID = uuid.UUID(int=29)
WAIT_S = 20
EARLY_HEARTBEATS = 5         # the broker is seen STARTING this many times before it may catch up


class StandInController:
    """The active controller as the lifecycle sees it: registers the broker, answers its
    heartbeats "not caught up" until ``caught_up`` is set, then unfences it once it stops
    asking to be fenced (as Kafka's BrokerHeartbeatManager does)."""

    def __init__(self):
        self.caught_up = False
        self.heartbeats = 0
        self.seen = asyncio.Event()

    async def send(self, request, timeout_ms):
        if type(request).__name__ == "BrokerRegistrationRequest":
            return BrokerRegistrationResponse(error_code=0, broker_epoch=7)
        self.heartbeats += 1
        self.last_want_fence = request.want_fence
        if self.heartbeats >= EARLY_HEARTBEATS:
            self.seen.set()
        return BrokerHeartbeatResponse(error_code=0, is_caught_up=self.caught_up,
                                       is_fenced=not (self.caught_up and not request.want_fence))


def registered(broker_id: int) -> list:
    endpoint = BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=1, security_protocol=0)
    return [RegisterBrokerRecord(broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=broker_id,
                                 end_points=[endpoint], features=[], rack=None, fenced=True, log_dirs=[]),
            UnfenceBrokerRecord(id=broker_id, epoch=broker_id)]


def image_before_restart() -> MetadataImage:
    """What the restarted broker 2 still has: it leads t-0."""
    image = MetadataImage()
    for record in [*registered(1), *registered(2), TopicRecord(name="t", topic_id=TOPIC_ID),
                   PartitionRecord(partition_id=0, topic_id=TOPIC_ID, replicas=[2, 1], isr=[2, 1], leader=2,
                                   leader_epoch=0, partition_epoch=0)]:
        image.apply(record)
    return image


def started_broker(tmp_path, port: int, controller: StandInController, image: dict, **options) -> Broker:
    config = parse_server_config(
        "process.roles=broker\nnode.id=2\ncontroller.listener.names=CONTROLLER\n"
        "controller.quorum.bootstrap.servers=127.0.0.1:1\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path}\n")
    return Broker(config, cluster_id="c", directory_id=None, image=lambda: image["now"], metadata_offset=lambda: 0,
                  send_to_controller=controller.send, supported_features={}, **options)


async def catch_up(broker: Broker, controller: StandInController, image: dict) -> None:
    """While the broker was down, the controller moved t-0's leadership to broker 1: the
    broker's image gets there, then the controller says it caught up."""
    image["now"] = caught_up = image_before_restart()
    caught_up.apply(PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, leader=1, replicas=[1], isr=[1]))
    broker.on_metadata()
    controller.caught_up = True
    await asyncio.wait_for(broker.lifecycle.unfenced.wait(), WAIT_S)


def test_a_request_sent_before_the_broker_caught_up_waits_and_is_answered_from_the_caught_up_image(tmp_path):
    async def go():
        controller, image = StandInController(), {"now": image_before_restart()}
        broker = started_broker(tmp_path, 0, controller, image)
        await broker.start()
        client = NetworkClient(request_timeout_ms=WAIT_S * 1000)
        try:
            address = ("127.0.0.1", broker.servers[0].port)
            versions = ApiVersionsRequest(client_software_name="tests", client_software_version="1")
            metadata = MetadataRequest(topics=[MetadataRequestTopic(name="t")], allow_auto_topic_creation=False)
            early = [asyncio.ensure_future(client.send(address, request, api_version=version))
                     for request, version in [(versions, 3), (metadata, 12)]]
            await asyncio.wait_for(controller.seen.wait(), WAIT_S)
            assert broker.lifecycle.state == "STARTING"
            assert not any(request.done() for request in early), "answered before the broker caught up"
            await catch_up(broker, controller, image)
            versions, metadata = await asyncio.wait_for(asyncio.gather(*early), WAIT_S)
            assert versions.error_code == 0 and versions.api_keys
            [topic] = metadata.topics
            assert [(p.partition_index, p.error_code, p.leader_id) for p in topic.partitions] == [(0, 0, 1)]
        finally:
            await client.close()
            await broker.stop(graceful=False)
    asyncio.run(go())


def test_a_listener_on_a_fixed_port_is_opened_only_once_the_broker_is_unfenced(tmp_path):
    async def go():
        port, = free_ports(1)
        controller, image = StandInController(), {"now": image_before_restart()}
        broker = started_broker(tmp_path, port, controller, image)
        await broker.start()
        try:
            await asyncio.wait_for(controller.seen.wait(), WAIT_S)
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except ConnectionRefusedError:
                pass
            else:
                writer.close()
                raise AssertionError(f"port {port} accepted a connection before the broker caught up")
            await catch_up(broker, controller, image)
            await asyncio.wait_for(broker.serving.wait(), WAIT_S)
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
        finally:
            await broker.stop(graceful=False)
    asyncio.run(go())


def test_a_fixed_port_already_in_use_stops_the_broker_when_it_would_serve(tmp_path):
    """Found only once the port is opened, as Kafka's start-up fails when an Acceptor cannot
    start; the lifecycle task ends with the reason (kafkawire server-start then exits 1)."""
    async def go():
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        controller, image = StandInController(), {"now": image_before_restart()}
        broker = started_broker(tmp_path, port, controller, image)
        await broker.start()
        try:
            await catch_up(broker, controller, image)
            with pytest.raises(BrokerStartError, match=f"listener PLAINTEXT://127.0.0.1:{port}: cannot bind"):
                await asyncio.wait_for(broker.task, WAIT_S)
            assert not broker.serving.is_set()
        finally:
            taken.close()
            await broker.stop(graceful=False)
    asyncio.run(go())


def _asks_to_be_unfenced_only_once_loaded(tmp_path, gate):
    """A broker whose ``gate(loaded)`` (keyword arguments of started_broker reading
    ``loaded["yet"]``) is not loaded stays fenced in RECOVERY and does not serve; once it is, it is
    unfenced and serves."""
    async def go():
        controller, image, loaded = StandInController(), {"now": image_before_restart()}, {"yet": False}
        controller.caught_up = True
        broker = started_broker(tmp_path, 0, controller, image, **gate(loaded))
        await broker.start()
        try:
            await asyncio.wait_for(controller.seen.wait(), WAIT_S)
            assert (broker.lifecycle.state, controller.last_want_fence) == ("RECOVERY", True)
            assert not broker.serving.is_set()
            loaded["yet"] = True
            await asyncio.wait_for(broker.serving.wait(), WAIT_S)
            assert broker.lifecycle.state == "RUNNING"
        finally:
            await broker.stop(graceful=False)
    asyncio.run(go())


def test_a_broker_whose_image_has_not_loaded_up_to_the_high_watermark_does_not_ask_to_be_unfenced(tmp_path):
    """Kafka's broker waits for its loader's first publish (the log read up to the high
    watermark) before it asks to be unfenced, even when the controller already said it caught
    up; a broker-only node passes its loader's catch-up as ``metadata_loaded``."""
    _asks_to_be_unfenced_only_once_loaded(tmp_path, lambda loaded: {"metadata_loaded": lambda: loaded["yet"]})


def test_a_broker_whose_authorizer_has_not_loaded_the_acls_opens_no_listener(tmp_path):
    """Kafka's BrokerServer starts its broker acceptors only once its authorizer's futures are
    complete (the ACLs loaded): before, a client could only be refused for an authorizer that is not
    ready. The broker asks to be unfenced, and so serves, only once its authorizer says it loaded."""
    from kafkawire.net.authorizer import AuthorizerSettings, StandardAuthorizer
    _asks_to_be_unfenced_only_once_loaded(tmp_path, lambda loaded: {
        "authorizer": StandardAuthorizer(AuthorizerSettings(), lambda: [], lambda: loaded["yet"])})
