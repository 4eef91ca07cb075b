"""A running kafkawire broker (`kafkawire server-start`, one combined node) opens and closes a
listener added and removed by IncrementalAlterConfigs of ``listeners`` for broker 1, as Kafka
4.3.1's DynamicListenerConfig does (kafkawire.broker.dynamic_listeners): the new listeners
serve requests (an SSL one with the key store its ``listener.name.secure.ssl.*`` settings,
given in the same change, name), a new listener's endpoint is not registered (Metadata on it lists no broker, a partition's
leader is LISTENER_NOT_FOUND; Metadata on the first listener still lists only its endpoint);
once removed, their ports refuse connections and a connection opened on one before is closed.
Removing the inter-broker listener (the advertised one) is refused with Kafka's message. After a
restart (kill -9) an added listener opens again, still unregistered. The node is killed by pid
at teardown (EmbeddedBroker.stop)."""
from __future__ import annotations

import asyncio
import time

import pytest

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                 IncrementalAlterConfigsRequest)
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import decode_response_frame, encode_request_frame
from kafkawire.raft.node.local_quorum import free_ports
from kafkawire.testing import EmbeddedBroker

from .dynamic_ssl_stores import PASSWORD, write_stores
from .test_listener_ssl_reload import Peer, _certificate_in
from .wire import call

WAIT_S = 30
PROTOCOLS = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTRA:PLAINTEXT,SECURE:SSL"


class AdvertisingOne(EmbeddedBroker):
    """The embedded node advertising its PLAINTEXT listener only (``advertised.listeners`` is
    read-only in Kafka 4.x, and a listener it advertises, ``listeners`` when it is unset, cannot
    be removed dynamically: DynamicListenerConfig keeps the advertised listeners)."""

    def format(self) -> None:
        super().format()
        with open(self.config_path, "a") as properties:
            properties.write(f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.broker_port}\n")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with AdvertisingOne(tmp_path_factory.mktemp("node"), properties={"listener.security.protocol.map": PROTOCOLS}) as broker:
        yield broker


def _static_listeners(node) -> str:
    return f"PLAINTEXT://127.0.0.1:{node.broker_port},CONTROLLER://127.0.0.1:{node.controller_port}"


def _set_listeners(node, listeners: str, **settings) -> list:
    configs = [AlterableConfig(name=name, config_operation=0, value=str(value))
               for name, value in {"listeners": listeners, **settings}.items()]
    answer = call(node, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=4, resource_name="1", configs=configs)]), 1)
    return [(r.error_code, r.error_message) for r in answer.responses]


async def _api_versions_error(reader, writer) -> int:
    writer.write(encode_request_frame(ApiVersionsRequest(), 0, 7))
    size = await reader.readexactly(4)
    frame = size + await reader.readexactly(int.from_bytes(size, "big"))
    return decode_response_frame(frame, 18, 0)[1].error_code


def _answers(port: int) -> bool:
    """Whether a new connection to ``port`` is answered."""
    async def go():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await _api_versions_error(reader, writer) == 0
        finally:
            writer.close()
    try:
        return asyncio.run(go())
    except (OSError, asyncio.IncompleteReadError):
        return False


def _certificate_seen(port: int) -> bytes | None:
    """The certificate a new TLS connection to ``port`` is shown (None: no connection)."""
    async def go():
        peer = await Peer.connect(port)
        try:
            assert await peer.api_versions_error() == 0
            return peer.certificate
        finally:
            peer.close()
    try:
        return asyncio.run(go())
    except (OSError, asyncio.IncompleteReadError):
        return None


def _wait(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {WAIT_S} s"
        time.sleep(0.05)


def test_listeners_added_serve_unregistered_and_once_removed_are_closed(node, tmp_path):
    pytest.importorskip("cryptography")
    stores = write_stores(tmp_path)
    port, secure = free_ports(2)
    extra = f"127.0.0.1:{port}"
    created = call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name="dynamic-listeners", num_partitions=1, replication_factor=1, assignments=[], configs=[])]), 7)
    assert created.topics[0].error_code == Errors.NONE
    assert _set_listeners(node, f"{_static_listeners(node)},EXTRA://{extra},SECURE://127.0.0.1:{secure}", **{
        "listener.name.secure.ssl.keystore.type": "PKCS12", "listener.name.secure.ssl.keystore.location":
        stores / "ks.p12", "listener.name.secure.ssl.keystore.password": PASSWORD}) == [(0, None)]
    _wait(lambda: _answers(port), "the added listener did not answer")
    _wait(lambda: _certificate_seen(secure) is not None, "the added SSL listener did not answer")
    assert _certificate_seen(secure) == _certificate_in(stores / "ks.p12")
    # not registered, as Kafka 4.3.1's broker does not register again
    topic = [MetadataRequestTopic(name="dynamic-listeners")]
    on_extra = call(extra, MetadataRequest(topics=topic), 12)
    assert on_extra.brokers == [] and on_extra.cluster_id is not None
    assert [(p.error_code, p.leader_id, p.offline_replicas) for p in on_extra.topics[0].partitions] == [
        (Errors.LISTENER_NOT_FOUND, -1, [1])]
    on_first = call(node, MetadataRequest(topics=topic), 12)
    assert [(b.node_id, b.port) for b in on_first.brokers] == [(1, node.broker_port)]
    assert [(p.error_code, p.leader_id, p.offline_replicas) for p in on_first.topics[0].partitions] == [
        (Errors.NONE, 1, [])]

    loop = asyncio.new_event_loop()
    try:
        reader, writer = loop.run_until_complete(asyncio.open_connection("127.0.0.1", port))
        assert loop.run_until_complete(_api_versions_error(reader, writer)) == 0
        assert _set_listeners(node, _static_listeners(node)) == [(0, None)]
        _wait(lambda: not _answers(port), "the removed listener still answered")
        _wait(lambda: _certificate_seen(secure) is None, "the removed SSL listener still answered")
        with pytest.raises((OSError, asyncio.IncompleteReadError)):     # opened before: closed with it
            loop.run_until_complete(_api_versions_error(reader, writer))
        writer.close()
    finally:
        loop.close()
    assert _answers(node.broker_port)


def test_removing_the_advertised_inter_broker_listener_is_refused_with_kafkas_message(node):
    assert _set_listeners(node, f"EXTRA://127.0.0.1:{free_ports(1)[0]},CONTROLLER://127.0.0.1:{node.controller_port}") == [(
        Errors.INVALID_REQUEST, "requirement failed: advertised.listeners listener names must be equal to or a subset "
                                "of the ones defined in listeners. Found PLAINTEXT. The valid options based on the "
                                "current configuration are EXTRA,CONTROLLER")]
    assert _answers(node.broker_port)


def test_a_listener_added_dynamically_opens_again_after_a_restart_without_being_registered(node):
    """As Kafka 4.3.1's broker at start: the listeners of server.properties open and register,
    then the dynamic configs the metadata holds add the others."""
    port = free_ports(1)[0]
    assert _set_listeners(node, f"{_static_listeners(node)},EXTRA://127.0.0.1:{port}") == [(0, None)]
    _wait(lambda: _answers(port), "the added listener did not answer")
    node.process.kill()
    node.process.wait(timeout=30)
    assert not _answers(port)
    node.launch()
    node.wait_ready()
    _wait(lambda: _answers(port), "the added listener did not open again after the restart")
    assert [(b.node_id, b.port) for b in call(node, MetadataRequest(topics=[]), 12).brokers] == [(1, node.broker_port)]
    assert _set_listeners(node, _static_listeners(node)) == [(0, None)]
    _wait(lambda: not _answers(port), "the removed listener still answered")
