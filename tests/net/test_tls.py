"""TLS listeners as Kafka configures them (ssl.* keys, listener-prefixed overrides, ssl.client.auth),
served by KafkaServer and reached by NetworkClient on 127.0.0.1 with certificates made here."""
import logging

import pytest

from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.metadata_response import MetadataResponse
from kafkawire.net.client import AuthenticationFailed, NetworkClient, TransportError
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.net.security import client_ssl_context, ssl_settings
from kafkawire.storage.state_files import JavaProperties
from kafkawire.net.server import KafkaServer

from .netlib import run
from .tls_certs import PASSWORD, make_pki

METADATA = 3


async def empty_metadata(ctx, request):
    return MetadataResponse()


def node_config(extra: str, protocol: str = "SSL"):
    return parse_server_config(
        "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
        "listeners=CONTROLLER://127.0.0.1:0\ncontroller.listener.names=CONTROLLER\n"
        f"listener.security.protocol.map=CONTROLLER:{protocol}\n" + extra)


def client_settings(text: str):
    """The ssl.* settings a client reads from properties ``text``."""
    return ssl_settings(JavaProperties.parse(text).items, "CONTROLLER")


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def pem_server(pki, extra=""):
    return f"ssl.keystore.type=PEM\nssl.keystore.location={pki.server_pem}\n" + extra


def pem_client(pki, extra=""):
    return f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca_pem}\n" + extra


async def principal_seen(server_config, client_config, **client_kwargs):
    """Serve Metadata on a TLS listener; return the principal the handler saw for one request."""
    seen = []

    async def handler(ctx, request):
        seen.append(ctx.principal)
        return MetadataResponse()

    security = server_config.security_of("CONTROLLER")
    async with KafkaServer({METADATA: handler}, security=security) as server:
        ssl_context = client_ssl_context(client_config)
        async with NetworkClient(ssl_context=ssl_context, request_timeout_ms=5000, **client_kwargs) as client:
            await client.send(("127.0.0.1", server.port), MetadataRequest(topics=[]))
    return seen


def test_pem_keystore_file_and_pem_truststore(pki):
    seen = run(principal_seen(node_config(pem_server(pki)), client_settings(pem_client(pki))))
    assert seen == ["User:ANONYMOUS"]          # ssl.client.auth=none: no client certificate asked


def test_pkcs12_keystore_and_truststore(pki):
    server = node_config(f"ssl.keystore.type=PKCS12\nssl.keystore.location={pki.server_p12}\n"
                         f"ssl.keystore.password={PASSWORD}\n")
    client = client_settings(f"ssl.truststore.type=PKCS12\nssl.truststore.location={pki.ca_p12}\n"
                         f"ssl.truststore.password={PASSWORD}\n")
    assert run(principal_seen(server, client)) == ["User:ANONYMOUS"]


def test_inline_pem_keystore_and_truststore(pki):
    def inline(path):
        # Java properties: a value continues over lines ending in a backslash.
        return "\\n\\\n".join(path.read_text().strip().splitlines())
    server = node_config(f"ssl.keystore.type=PEM\nssl.keystore.certificate.chain={inline(pki.server_cert_pem)}\n"
                         f"ssl.keystore.key={inline(pki.server_key_pem)}\n")
    client = client_settings(f"ssl.truststore.type=PEM\nssl.truststore.certificates={inline(pki.ca_pem)}\n")
    assert run(principal_seen(server, client)) == ["User:ANONYMOUS"]


def test_listener_prefixed_keys_win(pki):
    # The unprefixed keystore is unreadable; the listener's own key names the good one.
    server = node_config("ssl.keystore.type=PEM\nssl.keystore.location=/nonexistent.pem\n"
                         f"listener.name.controller.ssl.keystore.location={pki.server_pem}\n")
    client = client_settings(pem_client(pki))
    assert run(principal_seen(server, client)) == ["User:ANONYMOUS"]


def test_mutual_tls_required_gives_the_certificate_subject_as_principal(pki):
    server = node_config(pem_server(pki, f"ssl.client.auth=required\nssl.truststore.type=PEM\n"
                                         f"ssl.truststore.location={pki.ca_pem}\n"))
    client = client_settings(pem_client(pki, f"ssl.keystore.type=PEM\nssl.keystore.location={pki.client_pem}\n"))
    assert run(principal_seen(server, client)) == ["User:CN=controller-client,O=kafkawire tests"]


def test_ssl_principal_mapping_rules_map_the_certificate_subject_and_a_subject_no_rule_maps_is_closed(pki, caplog):
    """SslPrincipalMapper on an SSL listener (listener-prefixed key first); a name no rule maps
    fails the connection (DefaultKafkaPrincipalBuilder's "Failed to map name for ...")."""
    mutual = f"ssl.client.auth=required\nssl.truststore.type=PEM\nssl.truststore.location={pki.ca_pem}\n"
    client = client_settings(pem_client(pki, f"ssl.keystore.type=PEM\nssl.keystore.location={pki.client_pem}\n"))
    mapped = node_config(pem_server(pki, mutual + "ssl.principal.mapping.rules=RULE:^O=(.*)$/$1/\n"
                                    "listener.name.controller.ssl.principal.mapping.rules="
                                    "RULE:^CN=(.*?),O=(.*?)$/$1@$2/U,DEFAULT\n"))
    assert run(principal_seen(mapped, client)) == ["User:CONTROLLER-CLIENT@KAFKAWIRE TESTS"]
    unmapped = node_config(pem_server(pki, mutual + "ssl.principal.mapping.rules=RULE:^CN=(.*?),OU=Admins$/$1/\n"))
    with caplog.at_level(logging.INFO, logger="kafkawire.net"):
        with pytest.raises(TransportError):
            run(principal_seen(unmapped, client))
    assert any("Failed to map name for 'CN=controller-client,O=kafkawire tests'" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    with pytest.raises(ConfigError, match="listener.name.controller.ssl.principal.mapping.rules"):
        node_config(pem_server(pki, "listener.name.controller.ssl.principal.mapping.rules=RULE:x/y\n")).security_of(
            "CONTROLLER")


def test_mutual_tls_required_refuses_a_client_without_certificate(pki, caplog):
    server = node_config(pem_server(pki, f"ssl.client.auth=required\nssl.truststore.type=PEM\n"
                                         f"ssl.truststore.location={pki.ca_pem}\n"))
    client = client_settings(pem_client(pki))
    with caplog.at_level(logging.INFO, logger="kafkawire.net"):
        with pytest.raises(TransportError):
            run(principal_seen(server, client))
    # Kafka's Selector names the peer's address: "Failed authentication with /127.0.0.1 (...)".
    assert any("Failed authentication with /127.0.0.1 (listener CONTROLLER: SSL handshake failed: "
               "PEER_DID_NOT_RETURN_A_CERTIFICATE)" in r.getMessage() for r in caplog.records), \
        [r.getMessage() for r in caplog.records]


def test_requested_client_auth_serves_clients_with_and_without_certificates(pki):
    server = node_config(pem_server(pki, f"ssl.client.auth=requested\nssl.truststore.type=PEM\n"
                                         f"ssl.truststore.location={pki.ca_pem}\n"))
    assert run(principal_seen(server, client_settings(pem_client(pki)))) == ["User:ANONYMOUS"]
    with_cert = client_settings(pem_client(pki, f"ssl.keystore.type=PEM\nssl.keystore.location={pki.client_pem}\n"))
    assert run(principal_seen(server, with_cert)) == ["User:CN=controller-client,O=kafkawire tests"]


def test_client_refuses_a_server_certificate_its_truststore_does_not_sign(pki):
    server = node_config(f"ssl.keystore.type=PEM\nssl.keystore.location={pki.rogue_pem}\n")
    with pytest.raises(AuthenticationFailed, match="SSL handshake failed"):
        run(principal_seen(server, client_settings(pem_client(pki))))


def test_hostname_check_follows_endpoint_identification(pki):
    # A CA-signed certificate for elsewhere.invalid: the https check refuses it at 127.0.0.1;
    # with ssl.endpoint.identification.algorithm empty only the signature counts.
    async def connect(client_config):
        server_config = node_config(f"ssl.keystore.type=PEM\nssl.keystore.location={pki.elsewhere_pem}\n")
        async with KafkaServer({METADATA: empty_metadata},
                               security=server_config.security_of("CONTROLLER")) as server:
            ctx = client_ssl_context(client_config)
            async with NetworkClient(ssl_context=ctx, request_timeout_ms=5000) as client:
                return await client.connect(("127.0.0.1", server.port))
    with pytest.raises(AuthenticationFailed, match="SSL handshake failed"):
        run(connect(client_settings(pem_client(pki))))
    assert 18 in run(connect(client_settings(pem_client(pki, "ssl.endpoint.identification.algorithm=\n"))))


@pytest.mark.parametrize("extra, key, words", [
    ("ssl.keystore.type=BCFKS\nssl.keystore.location=/x.bcfks\n", "ssl.keystore.type", "convert the store"),
    ("ssl.keystore.type=PEM\nlistener.name.controller.ssl.keystore.location=/x.pem\n"
     "listener.name.controller.ssl.truststore.type=PKCS11\nssl.truststore.location=/t.jks\n",
     "listener.name.controller.ssl.truststore.type", "PEM, JKS, PKCS12 and JCEKS"),
    ("ssl.keystore.type=PEM\nssl.keystore.location=/x.pem\nssl.client.auth=always\n", "ssl.client.auth",
     "none, requested, required"),
    ("ssl.keystore.type=PEM\nssl.keystore.location=/x.pem\nssl.enabled.protocols=TLSv1.1\n",
     "ssl.enabled.protocols", "TLSv1.2 and TLSv1.3"),
])
def test_configuration_refusals_name_the_key(extra, key, words):
    config = node_config(extra)          # read as Kafka reads it; refused when the listener starts
    with pytest.raises(ConfigError) as info:
        config.security_of("CONTROLLER")
    assert info.value.key == key and words in str(info.value)


def test_a_tls_listener_without_a_key_store_is_refused_when_it_starts():
    # As Kafka's SslFactory, at the listener's start (storage format reads the same file without it).
    security = node_config("").security_of("CONTROLLER")
    with pytest.raises(ConfigError) as info:
        KafkaServer({}, security=security)
    assert info.value.key == "listener.name.controller.ssl.keystore.location"
    assert "needs a key and certificate" in str(info.value)


def test_unreadable_or_wrong_stores_are_refused_naming_the_key(pki, tmp_path):
    with pytest.raises(ConfigError, match="ssl.keystore.location: '/nonexistent.pem' cannot be read"):
        KafkaServer({}, security=node_config("ssl.keystore.type=PEM\nssl.keystore.location=/nonexistent.pem\n")
                    .security_of("CONTROLLER"))
    wrong = node_config(f"ssl.keystore.type=PKCS12\nssl.keystore.location={pki.server_p12}\n"
                        "ssl.keystore.password=wrong\n")
    with pytest.raises(ConfigError, match="is not a PKCS12 store this password opens"):
        KafkaServer({}, security=wrong.security_of("CONTROLLER"))
    not_a_key = tmp_path / "empty.pem"
    not_a_key.write_text("nothing here\n")
    with pytest.raises(ConfigError, match="does not hold a certificate chain and its private key"):
        KafkaServer({}, security=node_config(f"ssl.keystore.type=PEM\nssl.keystore.location={not_a_key}\n")
                    .security_of("CONTROLLER"))


def test_security_keys_are_not_reported_unknown(pki, caplog):
    with caplog.at_level(logging.WARNING):
        config = node_config(pem_server(pki, "listener.name.controller.ssl.client.auth=none\n"))
    assert config.unknown_keys == ()


def test_mutual_tls_under_uvloop(pki, caplog):
    # The node runs on uvloop: its TLS (SSLContext.wrap_bio) must serve and log the same.
    uvloop = pytest.importorskip("uvloop")
    server = node_config(pem_server(pki, f"ssl.client.auth=required\nssl.truststore.type=PEM\n"
                                         f"ssl.truststore.location={pki.ca_pem}\n"))
    with_cert = client_settings(pem_client(pki, f"ssl.keystore.type=PEM\nssl.keystore.location={pki.client_pem}\n"))
    for _ in range(3):
        assert run(principal_seen(server, with_cert), runner=uvloop.run) == \
            ["User:CN=controller-client,O=kafkawire tests"]
    with caplog.at_level(logging.INFO, logger="kafkawire.net"):
        with pytest.raises(TransportError):
            run(principal_seen(server, client_settings(pem_client(pki))), runner=uvloop.run)
    assert any("SSL handshake failed: PEER_DID_NOT_RETURN_A_CERTIFICATE" in r.getMessage() for r in caplog.records)
