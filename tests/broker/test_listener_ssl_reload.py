"""A listener's key store changed dynamically is used by the running listener
(kafkawire.broker.listener_ssl_reload, Kafka's SslFactory.reconfigure, KIP-226): after a config
record of this broker, a new TLS connection sees the new certificate (same DN and SANs, a new
key), a connection opened before keeps working on its session; a key store rewritten in place is
reread only when a record for the broker arrives (KAFKA-14136), never on its own; a store that no
longer loads leaves the current one in place. Stores by tests/broker/dynamic_ssl_stores.py; an
in-process KafkaServer on 127.0.0.1 and an image holding only the broker's configs."""
from __future__ import annotations

import asyncio
import shutil
import ssl
from pathlib import Path
from types import SimpleNamespace

import pytest

from kafkawire.broker.listener_ssl_reload import ListenerSslReload
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.net.security import resolve_listener_security, ssl_settings
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.framing import decode_response_frame, encode_request_frame

from tests.broker.dynamic_ssl_stores import PASSWORD, write_stores
from tests.net.netlib import run

pytest.importorskip("cryptography")

PREFIX = "listener.name.external."


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    return write_stores(tmp_path_factory.mktemp("stores"))


def _store(path: Path) -> dict:
    return {PREFIX + "ssl.keystore.type": "PKCS12", PREFIX + "ssl.keystore.location": str(path),
            PREFIX + "ssl.keystore.password": PASSWORD}


def _certificate_in(path: Path) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12
    _, certificate, _ = pkcs12.load_key_and_certificates(path.read_bytes(), PASSWORD.encode())
    return certificate.public_bytes(Encoding.DER)


def _image(node: dict | None = None, default: dict | None = None):
    configs = {}
    if node is not None:
        configs[(BROKER_RESOURCE, "1")] = dict(node)        # a new map: a record arrived
    if default is not None:
        configs[(BROKER_RESOURCE, "")] = dict(default)
    return SimpleNamespace(configs=configs)


class Peer:
    """A raw TLS connection: the certificate it was shown, and ApiVersions over it."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.certificate = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)

    @classmethod
    async def connect(cls, port: int) -> "Peer":
        trusting = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        trusting.check_hostname, trusting.verify_mode = False, ssl.CERT_NONE     # we compare certificates
        return cls(*await asyncio.open_connection("127.0.0.1", port, ssl=trusting))

    async def api_versions_error(self) -> int:
        self.writer.write(encode_request_frame(ApiVersionsRequest(), 0, 7))
        size = await self.reader.readexactly(4)
        frame = size + await self.reader.readexactly(int.from_bytes(size, "big"))
        return decode_response_frame(frame, 18, 0)[1].error_code

    def close(self) -> None:
        self.writer.close()


async def _rotation(static: dict, steps):
    """Serve the listener from ``static``; for each (image, expected store) in ``steps``, publish
    the image and return what a new connection saw, and whether the first connection still works."""
    security = resolve_listener_security(static, "EXTERNAL", "SSL")
    reload = ListenerSslReload(static, 1)
    seen = []
    async with KafkaServer({}, listener_name="EXTERNAL", security=security) as server:
        reload.on_metadata(None, [server])
        first = await Peer.connect(server.port)
        for image in steps:
            reload.on_metadata(image, [server])
            peer = await Peer.connect(server.port)
            seen.append(peer.certificate)
            assert await peer.api_versions_error() == 0
            peer.close()
        assert await first.api_versions_error() == 0       # the connection opened before keeps its session
        seen.insert(0, first.certificate)
        first.close()
    return seen, reload.reloads


def test_a_new_key_store_is_used_by_new_connections(stores):
    static = _store(stores / "ks.p12")
    old, new = _certificate_in(stores / "ks.p12"), _certificate_in(stores / "ks-same.p12")
    steps = [_image({}), _image(_store(stores / "ks-same.p12")), _image(_store(stores / "ks-same.p12"))]
    seen, reloads = run(_rotation(static, steps))
    assert seen == [old, old, new, new]
    assert reloads == 1                     # the same settings again: nothing to rebuild


def test_a_store_rewritten_in_place_is_reread_at_the_next_record_of_the_broker(stores, tmp_path):
    live = tmp_path / "live.p12"
    shutil.copy(stores / "ks.p12", live)
    static = _store(live)
    old, new = _certificate_in(stores / "ks.p12"), _certificate_in(stores / "ks-other-dn.p12")
    unrelated = _image({"log.retention.ms": "1000"})

    def rewritten():
        shutil.copy(stores / "ks-other-dn.p12", live)        # (the change's check would be skipped: a test)
        return unrelated                                      # the same map: no record of the broker

    async def scenario():
        security = resolve_listener_security(static, "EXTERNAL", "SSL")
        reload = ListenerSslReload(static, 1)
        async with KafkaServer({}, listener_name="EXTERNAL", security=security) as server:
            reload.on_metadata(unrelated, [server])
            seen = []
            for image in (rewritten(), unrelated, _image({"log.retention.ms": "1000", **_store(live)})):
                reload.on_metadata(image, [server])
                peer = await Peer.connect(server.port)
                seen.append(peer.certificate)
                peer.close()
            return seen

    assert run(scenario()) == [old, old, new]


def test_a_cluster_default_change_reaches_the_listener_and_a_broken_store_is_not_taken(stores, tmp_path, caplog):
    """The cluster default's map is read as the broker's (Kafka refuses a store there, but an image
    may hold one a controller took); a store that does not load is logged and not used."""
    static = _store(stores / "ks.p12")
    old, new = _certificate_in(stores / "ks.p12"), _certificate_in(stores / "ks-same.p12")
    steps = [_image(default=_store(stores / "ks-same.p12")), _image(_store(stores / "garbage.p12"))]
    seen, reloads = run(_rotation(static, steps))
    assert seen == [old, new, new]
    assert reloads == 1
    assert "the changed key or trust store is not used" in caplog.text


def test_the_inter_broker_clients_get_the_new_trust_store(stores):
    static = {"listener.name.internal.ssl.truststore.type": "PEM",
              "listener.name.internal.ssl.truststore.location": str(stores / "ca.pem")}
    reload = ListenerSslReload(static, 1, inter_broker=("INTERNAL", ssl_settings(static, "INTERNAL")))
    client = SimpleNamespace(ssl_context=None)
    reload.on_metadata(_image({"listener.name.internal.ssl.truststore.location": str(stores / "ca-both.pem")}), [],
                       [client])
    assert client.ssl_context is reload.client_context is not None
    assert len(client.ssl_context.get_ca_certs()) == 2


class _Committed:
    """The controller's committed image as CommittedConfigs reads it: one resource's configs, and
    the listeners told when it moves."""

    def __init__(self):
        self.image, self.offset, self.listeners = _image({}), 0, []

    def resource_configs(self, resource):
        return self.image.configs.get(resource)

    def publish(self):
        for listener in self.listeners:
            listener()


@pytest.mark.parametrize("role", ["combined", "controller"])
def test_a_controller_listener_takes_a_changed_store_of_its_subject_and_refuses_another(stores, caplog, role):
    """kafkawire.tools.server_start.watch_controller_ssl_stores: the controller listeners watched on
    each publish of the committed image (a combined node's broker's publisher, or the committed
    image's config maps on a controller-only node), each change checked first (no broker checked
    it), as Kafka's controller validates a reconfigurable before it reconfigures it."""
    from kafkawire.broker.metadata_publisher import MetadataPublisher
    from kafkawire.tools.server_start import watch_controller_ssl_stores
    static = _store(stores / "ks.p12")
    old, new = _certificate_in(stores / "ks.p12"), _certificate_in(stores / "ks-same.p12")

    async def scenario():
        committed = _Committed()
        published = MetadataPublisher(lambda: committed.image, lambda: committed.offset)
        security = resolve_listener_security(static, "EXTERNAL", "SSL")
        async with KafkaServer({}, listener_name="EXTERNAL", security=security) as server:
            node = SimpleNamespace(servers=[server], state_machine=SimpleNamespace(committed=committed),
                                   config=SimpleNamespace(properties=tuple(static.items()), node_id=1,
                                                          raft_client_security=lambda: None))   # PLAINTEXT clients
            reload = watch_controller_ssl_stores(node, published if role == "combined" else None)
            seen = []
            for store in ("ks-other-dn.p12", "ks-same.p12"):
                committed.image, committed.offset = _image(_store(stores / store)), committed.offset + 1
                (published if role == "combined" else committed).publish()
                peer = await Peer.connect(server.port)
                seen.append(peer.certificate)
                peer.close()
            return seen, reload.reloads, node.controller_ssl_reload is reload

    assert run(scenario()) == ([old, new], 1, True)
    assert "DistinguishedName does not match" in caplog.text and "is refused, the current one stays" in caplog.text


def test_a_node_without_a_tls_controller_listener_watches_nothing():
    from kafkawire.tools.server_start import watch_controller_ssl_stores
    node = SimpleNamespace(servers=[SimpleNamespace(ssl_context=None)], state_machine=None,
                           config=SimpleNamespace(raft_client_security=lambda: SimpleNamespace(ssl=None)))
    assert watch_controller_ssl_stores(node) is None


def test_the_clients_towards_the_controllers_take_a_store_of_their_subject_and_refuse_another(stores, caplog):
    """watch_controller_clients: checked whoever accepted the change (the cluster default's, or a
    controller's, was checked by no broker), as Kafka's DynamicBrokerConfig validates the channel
    builder before it reconfigures it; a refused store leaves every client's context as it was."""
    prefix = "listener.name.controller."
    static = {prefix + "ssl.keystore.type": "PKCS12", prefix + "ssl.keystore.location": str(stores / "ks.p12"),
              prefix + "ssl.keystore.password": PASSWORD}
    reload = ListenerSslReload(static, 1)
    clients = [SimpleNamespace(ssl_context=None), SimpleNamespace(ssl_context=None)]
    reload.watch_controller_clients("CONTROLLER", ssl_settings(static, "CONTROLLER"), lambda: clients)
    reload.on_metadata(_image({prefix + "ssl.keystore.location": str(stores / "ks-other-dn.p12")}), [])
    assert [c.ssl_context for c in clients] == [None, None] and reload.reloads == 0
    assert "DistinguishedName does not match" in caplog.text
    reload.on_metadata(_image({prefix + "ssl.keystore.location": str(stores / "ks-same.p12")}), [])
    assert clients[0].ssl_context is clients[1].ssl_context is not None and reload.reloads == 1
