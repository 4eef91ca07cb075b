"""SASL on the inter-broker path, in process: a broker's clients towards other brokers (the replica
fetchers of kafkawire.broker.replica_roles, the transaction markers of txn_marker_routing)
authenticate as Kafka's BrokerBlockingSender does, with ``sasl.mechanism.inter.broker.protocol``
and the ``username``/``password`` of the inter-broker listener's own JAAS entry
(``listener.name.<listener>.<mechanism>.sasl.jaas.config``, as JaasContext.loadServerContext reads
it); a mechanism kafkawire does not implement, or one the listener does not enable, stops the
broker at start naming the setting. The process-level test is test_inter_broker_sasl_wire.py."""
from __future__ import annotations

import asyncio
import io
import logging
import os

import pytest

from kafkawire.broker import Broker, BrokerStartError
from kafkawire.controller.factory import controller_factory
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.metadata_response import MetadataResponse
from kafkawire.net.client import AuthenticationFailed, NetworkClient
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.net.sasl import scram_credential
from kafkawire.net.server import KafkaServer
from kafkawire.raft.node.local_quorum import free_ports
from kafkawire.tools.server_start import serve
from kafkawire.tools.storage import format_storage
from tests.net.tls_certs import make_pki

METADATA = 3
SALT = os.urandom(16)
CREDENTIALS = {(mech, "broker"): scram_credential(mech, "broker-secret", SALT, 4096)
               for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512")}
PLAIN_SERVER = 'user_broker="broker-secret" user_alice="alice-secret"'


def jaas(module: str, username: str = "broker", password: str = "broker-secret", extra: str = "") -> str:
    return (f"org.apache.kafka.common.security.{module} required username=\"{username}\" "
            f"password=\"{password}\" {extra};")


PLAIN = jaas("plain.PlainLoginModule", extra=PLAIN_SERVER)
SCRAM = jaas("scram.ScramLoginModule")


def config_text(tmp_path, mechanism="SCRAM-SHA-512", enabled="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", extra="",
                jaas_keys=True) -> str:
    """A combined node whose broker listener BROKER is SASL_PLAINTEXT and the inter-broker one."""
    text = ("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
            "listeners=BROKER://127.0.0.1:0,CONTROLLER://127.0.0.1:0\n"
            "listener.security.protocol.map=BROKER:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n"
            f"inter.broker.listener.name=BROKER\ncontroller.quorum.bootstrap.servers=127.0.0.1:1\n"
            f"log.dirs={tmp_path}\nsasl.enabled.mechanisms={enabled}\n")
    if mechanism is not None:
        text += f"sasl.mechanism.inter.broker.protocol={mechanism}\n"
    if jaas_keys:
        text += (f"listener.name.broker.plain.sasl.jaas.config={PLAIN}\n"
                 f"listener.name.broker.scram-sha-256.sasl.jaas.config={SCRAM}\n"
                 f"listener.name.broker.scram-sha-512.sasl.jaas.config={SCRAM}\n")
    return text + extra


def make_broker(config) -> Broker:
    return Broker(config, cluster_id="c", directory_id=None, image=lambda: None, metadata_offset=lambda: 0,
                  send_to_controller=None, supported_features={})


async def fetch_as_peer(config, options) -> list:
    """One Metadata to a server on the node's own BROKER listener security, with ``options``;
    the principal it saw."""
    seen = []

    async def handler(ctx, request):
        seen.append(ctx.principal)
        return MetadataResponse()

    async with KafkaServer({METADATA: handler}, security=config.security_of("BROKER"),
                           scram_lookup=lambda mech, user: CREDENTIALS.get((mech, user))) as server:
        async with NetworkClient(request_timeout_ms=5000, **options) as client:
            await client.send(("127.0.0.1", server.port), MetadataRequest(topics=[]))
    return seen


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_the_replica_fetchers_client_authenticates_with_the_inter_broker_mechanism(tmp_path, mechanism):
    config = parse_server_config(config_text(tmp_path, mechanism))
    broker = make_broker(config)
    options, unusable = broker.replica_roles.client_options()
    assert unusable is None
    assert options["sasl"]().mechanism == mechanism
    assert asyncio.run(fetch_as_peer(config, options)) == ["User:broker"]


def test_sasl_ssl_between_brokers_is_tls_with_the_listeners_trust_store_and_sasl(tmp_path):
    pki = make_pki(tmp_path / "pki")
    text = config_text(tmp_path, "SCRAM-SHA-256").replace("BROKER:SASL_PLAINTEXT", "BROKER:SASL_SSL")
    config = parse_server_config(text + f"ssl.keystore.type=PEM\nssl.keystore.location={pki.server_pem}\n"
                                        f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca_pem}\n")
    options, unusable = make_broker(config).replica_roles.client_options()
    assert unusable is None and options["ssl_context"] is not None
    assert asyncio.run(fetch_as_peer(config, options)) == ["User:broker"]


def test_the_transaction_markers_use_the_same_credentials(tmp_path):
    broker = make_broker(parse_server_config(config_text(tmp_path, "SCRAM-SHA-256")))
    client = broker.txn_apis.router.peers.client()
    sasl = client.sasl()
    assert (sasl.mechanism, sasl.username, sasl.password) == ("SCRAM-SHA-256", "broker", "broker-secret")


def test_a_wrong_inter_broker_password_is_refused_by_the_peer(tmp_path):
    wrong = jaas("scram.ScramLoginModule", password="wrong")
    text = config_text(tmp_path, "SCRAM-SHA-512").replace(f"scram-sha-512.sasl.jaas.config={SCRAM}",
                                                          f"scram-sha-512.sasl.jaas.config={wrong}")
    config = parse_server_config(text)
    options, _ = make_broker(config).replica_roles.client_options()
    with pytest.raises(AuthenticationFailed, match="SASL_AUTHENTICATION_FAILED: Authentication failed during "
                                                   "authentication due to invalid credentials"):
        asyncio.run(fetch_as_peer(config, options))


def test_the_listener_prefixed_jaas_entry_of_the_inter_broker_listener_is_the_one_used(tmp_path):
    """JaasContext.loadServerContext on the inter-broker listener: its own entry, not another
    listener's; an unprefixed ``sasl.jaas.config`` is ignored by Kafka's brokers (a warning), so
    without the prefixed key the broker cannot start."""
    other = jaas("plain.PlainLoginModule", username="other", password="other-secret", extra=PLAIN_SERVER)
    text = config_text(tmp_path, "PLAIN").replace("listeners=BROKER://127.0.0.1:0,",
                                                  "listeners=BROKER://127.0.0.1:0,CLIENT://127.0.0.1:0,")
    text = text.replace("BROKER:SASL_PLAINTEXT,", "BROKER:SASL_PLAINTEXT,CLIENT:SASL_PLAINTEXT,")
    config = parse_server_config(text + f"listener.name.client.plain.sasl.jaas.config={other}\n")
    assert config.inter_broker_security().username == "broker"

    unprefixed = config_text(tmp_path, "PLAIN", enabled="PLAIN", jaas_keys=False) + f"sasl.jaas.config={PLAIN}\n"
    with pytest.raises(BrokerStartError, match="listener.name.broker.plain.sasl.jaas.config: \\(unset\\) is required"):
        make_broker(parse_server_config(unprefixed))


@pytest.mark.parametrize("mechanism, setting", [
    # Kafka's default, which the listener does not enable
    (None, "sasl.mechanism.inter.broker.protocol: 'GSSAPI' must be included in sasl.enabled.mechanisms"),
    ("DIGEST-MD5", "sasl.mechanism.inter.broker.protocol: 'DIGEST-MD5' is not supported by kafkawire"),
])
def test_an_unsupported_inter_broker_mechanism_stops_the_broker_at_start(tmp_path, mechanism, setting):
    config = parse_server_config(config_text(tmp_path, mechanism))     # the listener itself is fine
    assert config.security_of("BROKER").mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    with pytest.raises(BrokerStartError, match=setting):
        make_broker(config)


def test_a_combined_node_with_an_unsupported_inter_broker_mechanism_exits_naming_the_setting(tmp_path, caplog):
    """``kafkawire server-start``'s coroutine, in process: the controller starts, the broker is
    refused with the setting logged, and the node stops (exit status 1) instead of running on."""
    port = free_ports(1)[0]
    text = config_text(tmp_path, "DIGEST-MD5").replace("controller.quorum.bootstrap.servers=127.0.0.1:1",
                                                        f"controller.quorum.voters=1@127.0.0.1:{port}")
    config = parse_server_config(text.replace("CONTROLLER://127.0.0.1:0", f"CONTROLLER://127.0.0.1:{port}"))
    format_storage(config, "MkU3OEVBNTcwNTJENDM2Qg", mode=None, out=io.StringIO())
    with caplog.at_level(logging.ERROR):
        assert asyncio.run(asyncio.wait_for(serve(config, controller_factory), 30)) == 1
    assert "cannot start the broker: sasl.mechanism.inter.broker.protocol: 'DIGEST-MD5' is not supported by " \
           "kafkawire (supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI)" in caplog.text


def test_the_inter_broker_mechanism_must_be_enabled_on_its_listener(tmp_path):
    config = parse_server_config(config_text(tmp_path, "SCRAM-SHA-512", enabled="PLAIN,SCRAM-SHA-256"))
    with pytest.raises(ConfigError, match="sasl.mechanism.inter.broker.protocol: 'SCRAM-SHA-512' must be included "
                                          "in sasl.enabled.mechanisms \\(of listener BROKER\\) when SASL is used "
                                          "for inter-broker communication"):
        config.inter_broker_security()


def test_the_mechanism_setting_does_not_matter_without_sasl_between_brokers(tmp_path):
    text = config_text(tmp_path, "GSSAPI").replace("BROKER:SASL_PLAINTEXT", "BROKER:PLAINTEXT")
    config = parse_server_config(text)
    assert config.inter_broker_security().protocol == "PLAINTEXT"
    assert make_broker(config).replica_roles.client_options() == ({}, None)
