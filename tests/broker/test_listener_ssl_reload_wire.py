"""A running kafkawire broker (`kafkawire server-start`, one combined node) takes a new key store
on its SSL listener without a restart, as Kafka does (KIP-226): IncrementalAlterConfigs of
``listener.name.external.ssl.keystore.location`` for broker 1, and new TLS connections are shown
the new certificate (same DN and SANs) while one opened before keeps working; a key store
rewritten in place is reread when the same location is set again (KAFKA-14136), not before; the
cluster default is refused a listener's key store, as Kafka refuses it. The
node is killed by pid at teardown (EmbeddedBroker.stop)."""
from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest

from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                 IncrementalAlterConfigsRequest)
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import free_ports
from kafkawire.testing import EmbeddedBroker

from .dynamic_ssl_stores import PASSWORD, write_stores
from .test_listener_ssl_reload import Peer, _certificate_in
from .wire import call

pytest.importorskip("cryptography")

WAIT_S = 30
LOCATION = "listener.name.external.ssl.keystore.location"


class WithSslListener(EmbeddedBroker):
    """The embedded node with a second broker listener, EXTERNAL, on SSL."""

    def format(self) -> None:
        super().format()
        self.ssl_port = free_ports(1)[0]
        path = Path(self.config_path)
        path.write_text("".join(f"{line},EXTERNAL://127.0.0.1:{self.ssl_port}\n" if line.startswith("listeners=")
                                else line + "\n" for line in path.read_text().splitlines()))


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    stores = write_stores(tmp_path_factory.mktemp("stores"))
    shutil.copy(stores / "ks.p12", stores / "live.p12")
    properties = {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:SSL",
                  "listener.name.external.ssl.keystore.type": "PKCS12", LOCATION: stores / "live.p12",
                  "listener.name.external.ssl.keystore.password": PASSWORD}
    with WithSslListener(tmp_path_factory.mktemp("node"), properties=properties) as broker:
        broker.stores = stores
        yield broker


def _alter_location(node, path: Path, resource_name: str = "1"):
    answer = call(node, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=4, resource_name=resource_name, configs=[AlterableConfig(name=LOCATION, config_operation=0,
                                                                                value=str(path))])]), 1)
    return [(r.error_code, r.error_message) for r in answer.responses]


def _set_location(node, path: Path) -> None:
    assert _alter_location(node, path) == [(0, None)]


def _certificate_seen(node) -> bytes:
    async def connect():
        peer = await Peer.connect(node.ssl_port)
        peer.close()
        return peer.certificate
    return asyncio.run(connect())


def _wait_for_certificate(node, expected: bytes) -> None:
    deadline = time.monotonic() + WAIT_S
    while _certificate_seen(node) != expected:
        assert time.monotonic() < deadline, f"the listener did not take the new key store within {WAIT_S} s"
        time.sleep(0.05)


def test_a_key_store_rotated_at_runtime_is_shown_to_new_connections(node):
    stores = node.stores
    old, same_subject, rewritten = (_certificate_in(stores / n) for n in ("ks.p12", "ks-same.p12", "ks-ca.p12"))

    async def open_first():
        return await Peer.connect(node.ssl_port)
    loop = asyncio.new_event_loop()
    try:
        first = loop.run_until_complete(open_first())
        assert first.certificate == old
        _set_location(node, stores / "ks-same.p12")
        _wait_for_certificate(node, same_subject)
        assert loop.run_until_complete(first.api_versions_error()) == 0     # opened before: still served
        first.close()
    finally:
        loop.close()
    # rewritten in place: reread only once the location is set again
    shutil.copy(stores / "ks-ca.p12", stores / "live.p12")
    _set_location(node, stores / "live.p12")
    _wait_for_certificate(node, rewritten)
    shutil.copy(stores / "ks.p12", stores / "live.p12")
    assert _certificate_seen(node) == rewritten
    _set_location(node, stores / "live.p12")
    _wait_for_certificate(node, old)
    # the cluster default cannot hold a listener's key store (Kafka's per-broker configs)
    assert _alter_location(node, stores / "ks-same.p12", "") == [(
        Errors.INVALID_REQUEST, "Cannot update these configs at default cluster level, broker id must be specified: "
                                f"[{LOCATION}]")]
