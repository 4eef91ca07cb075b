"""The node's clients towards the controllers take a key store changed dynamically for their next
connection, as Kafka 4.3.1's NodeToControllerChannelManager does (its client channel builder is a
reconfigurable of the DynamicBrokerConfig): an in-process combined node (process.roles=broker,
controller) whose CONTROLLER listener is SSL with client authentication required, so the listener
sees the certificate the node's own channel to the active controller (its broker's heartbeats)
presents. IncrementalAlterConfigs of ``listener.name.controller.ssl.keystore.location`` (a
store of the same subject signed by the same authority, a new key) sent to the broker; once it
is committed, the channel's connection is dropped, and the next one the broker's heartbeat
opens presents the new certificate; the raft client holds the new context too. A store of another subject is refused
by the broker, as Kafka's broker refuses it (the client channel builder's check). The same on a
broker-only node beside a controller-only one, whose raft client does connect to the controller.
The stores: tests/broker/dynamic_ssl_stores.py. About 3 s and 5 s."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from kafkawire.controller.factory import controller_factory
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                 IncrementalAlterConfigsRequest)
from kafkawire.net.client import NetworkClient
from kafkawire.net.config import parse_server_config
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.controller_node import ControllerNode
from kafkawire.tools.storage import format_storage

from tests.broker.dynamic_ssl_stores import PASSWORD, write_stores
from tests.broker.test_listener_ssl_reload import _certificate_in

from .test_authorizer_node import CLUSTER_ID, free_port, wait_for
from .threaded_combined_node import ThreadedCombinedNode, started as started_node

pytest.importorskip("cryptography")

LOCATION = "listener.name.controller.ssl.keystore.location"


def _config(tmp_path: Path, stores: Path, controller_port: int, broker_port: int):
    return parse_server_config(f"""
node.id=1
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=CONTROLLER://127.0.0.1:{controller_port},CLIENT://127.0.0.1:{broker_port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=CLIENT
listener.security.protocol.map=CONTROLLER:SSL,CLIENT:PLAINTEXT
listener.name.controller.ssl.keystore.type=PKCS12
{LOCATION}={stores / "ks-ca.p12"}
listener.name.controller.ssl.keystore.password={PASSWORD}
listener.name.controller.ssl.truststore.type=PEM
listener.name.controller.ssl.truststore.location={stores / "ca.pem"}
listener.name.controller.ssl.client.auth=required
log.dirs={tmp_path}/data
controller.quorum.election.timeout.ms=200
broker.heartbeat.interval.ms=200
""")


class Node(ThreadedCombinedNode):
    """The combined node on its own thread, with the calls these tests make."""

    async def alter(self, name: str, value: str | None, broker_id: str = "1"):
        """IncrementalAlterConfigs of broker ``broker_id`` sent to the broker: SET ``value``, or
        DELETE for None."""
        async with NetworkClient(request_timeout_ms=15_000) as client:
            answer = await client.send(("127.0.0.1", self.broker_port), IncrementalAlterConfigsRequest(resources=[
                AlterConfigsResource(resource_type=4, resource_name=broker_id, configs=[AlterableConfig(
                    name=name, config_operation=0 if value is not None else 1, value=value)])]), api_version=1)
        return [(r.error_code, r.error_message) for r in answer.responses]

    def client_certificates(self) -> list[bytes]:
        """The certificates the controller listener's open connections were shown by their clients."""
        (server,) = [s for s in self.node.servers if s.listener_name == "CONTROLLER"]
        return [conn.writer.get_extra_info("ssl_object").getpeercert(binary_form=True) for conn in server._connections]


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    stores, directory = write_stores(tmp_path_factory.mktemp("stores")), tmp_path_factory.mktemp("node")
    with started(lambda controller, broker: _config(directory, stores, controller, broker)) as combined:
        combined.stores = stores
        yield combined


def started(make_config):
    """A Node started on its own loop's thread, stopped (and the thread ended) when the block ends."""
    return started_node(Node(make_config))


def test_the_channel_to_the_controller_presents_the_rotated_certificate_on_its_next_connection(node):
    old, new = _certificate_in(node.stores / "ks-ca.p12"), _certificate_in(node.stores / "ks-ca2.p12")
    assert node.client_certificates() == [old]          # the broker's channel to the active controller
    reload = node.node.controller_ssl_reload
    reloads = reload.reloads
    assert node.call(node.alter(LOCATION, str(node.stores / "ks-ca2.p12"))) == [(0, None)]

    async def reconnected():
        await wait_for(lambda: reload.reloads == reloads + 2, "the listener and the clients to take the store", 30)
        clients = node.node.driver.controller_clients()
        assert len(clients) == 2 and clients[0].ssl_context is clients[1].ssl_context   # the raft client's too
        clients[1].disconnect(("127.0.0.1", node.controller_port))       # force a new connection
        await wait_for(lambda: node.client_certificates() == [new], "a new connection with the new certificate", 30)
    node.call(reconnected())


def test_a_key_store_of_another_subject_is_refused_by_the_broker(node):
    """The controller listener is not one of the broker's, but its channel to the controller is
    (Kafka's broker validates the change with that channel's builder, first)."""
    assert node.call(node.alter(LOCATION, str(node.stores / "ks-other-dn.p12"))) == [(
        Errors.INVALID_REQUEST, "Invalid value org.apache.kafka.common.config.ConfigException: Validation of dynamic "
        "config update of SSLFactory failed: org.apache.kafka.common.config.ConfigException: Keystore "
        "DistinguishedName does not match:  existing={alias=broker, DN=CN=broker, O=kafkawire}, "
        "new={alias=broker, DN=CN=other, O=kafkawire} for configuration Invalid dynamic configuration")]


def _ssl_lines(stores: Path) -> str:
    return f"""
listener.name.controller.ssl.keystore.type=PKCS12
{LOCATION}={stores / "ks-ca.p12"}
listener.name.controller.ssl.keystore.password={PASSWORD}
listener.name.controller.ssl.truststore.type=PEM
listener.name.controller.ssl.truststore.location={stores / "ca.pem"}
"""


class ControllerAndBroker(Node):
    """A controller-only node (1) and a broker-only node (2, a raft observer whose channel to the
    active controller and raft client share one TLS context) on one loop of their own thread."""

    def __init__(self, directory: Path, stores: Path):
        self.controller_port, self.broker_port = free_port(), free_port()
        voters = f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}\ncontroller.listener.names=CONTROLLER\n"
        self.config = parse_server_config(
            f"node.id=1\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:{self.controller_port}\n"
            f"listener.security.protocol.map=CONTROLLER:SSL\nlistener.name.controller.ssl.client.auth=required\n"
            f"log.dirs={directory}/controller\ncontroller.quorum.election.timeout.ms=200\n" + voters + _ssl_lines(stores))
        self.broker_config = parse_server_config(
            f"node.id=2\nprocess.roles=broker\nlisteners=CLIENT://127.0.0.1:{self.broker_port}\n"
            f"listener.security.protocol.map=CONTROLLER:SSL,CLIENT:PLAINTEXT\ninter.broker.listener.name=CLIENT\n"
            f"log.dirs={directory}/broker\nbroker.heartbeat.interval.ms=200\n" + voters + _ssl_lines(stores))
        for config in (self.config, self.broker_config):
            format_storage(config, CLUSTER_ID, mode=None, out=io.StringIO())
        self.start_loop_thread()
        self.node = self.broker_node = self.broker = None

    async def start(self):
        from kafkawire.tools.broker_node import BrokerOnlyNode
        self.node = ControllerNode(self.config, state_machine_factory=controller_factory, fsync=False)
        await self.node.start()
        await wait_for(lambda: self.node.state_machine.is_active(), "activation", 30)
        self.broker_node = BrokerOnlyNode(self.broker_config, fsync=False)
        await self.broker_node.start()
        self.broker = self.broker_node.broker
        await wait_for(lambda: self.broker.serving.is_set(), "the broker to be unfenced and serving", 30)

    async def stop(self):
        if self.broker_node is not None:
            await self.broker_node.stop(graceful=False)
        if self.node is not None:
            await self.node.stop()


def test_a_broker_only_nodes_clients_towards_the_controller_present_the_rotated_certificate(tmp_path):
    """The broker-only node's broker watches them (kafkawire.tools.broker_node): after the change
    to broker 2's configs, its raft client's and its channel's next connections (both dropped)
    show the controller listener the new certificate; the controller node's own channel to itself
    keeps the old one (the change is broker 2's)."""
    (tmp_path / "stores").mkdir()
    stores = write_stores(tmp_path / "stores")
    old, new = _certificate_in(stores / "ks-ca.p12"), _certificate_in(stores / "ks-ca2.p12")

    async def rotated():
        answer = await both.alter(LOCATION, str(stores / "ks-ca2.p12"), broker_id="2")
        assert [code for code, _ in answer] == [0]
        clients = both.broker_node.driver.controller_clients()
        await wait_for(lambda: all(c.ssl_context is not None and c.ssl_context is clients[0].ssl_context
                                   for c in clients) and both.broker.ssl_reload.reloads == 1,
                       "the broker-only node's clients to take the store", 30)
        for client in clients:
            client.disconnect(("127.0.0.1", both.controller_port))
        await wait_for(lambda: sorted(both.client_certificates()) == sorted([old, new, new]),
                       "new connections from the broker-only node with the new certificate", 30)
        return len(clients)

    with started_node(ControllerAndBroker(tmp_path, stores)) as both:
        # its own channel to itself, node 2's raft client and channel
        both.call(wait_for(lambda: sorted(both.client_certificates()) == sorted([old, old, old]),
                           "the three connections to the controller listener", 30))
        assert both.call(rotated()) == 2
