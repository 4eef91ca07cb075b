"""SASL_PLAINTEXT and SASL_SSL listeners: PLAIN and SCRAM-SHA-256/512 through SaslHandshake and
SaslAuthenticate, Kafka's rules before authentication, and the node's own client."""
import os

import pytest

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.metadata_response import MetadataResponse
from kafkawire.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kafkawire.messages.sasl_authenticate_response import SaslAuthenticateResponse
from kafkawire.messages.sasl_handshake_request import SaslHandshakeRequest
from kafkawire.messages.sasl_handshake_response import SaslHandshakeResponse
from kafkawire.net.client import AuthenticationFailed, NetworkClient
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.net.sasl import SaslClient, scram_credential
from kafkawire.net.security import client_ssl_context, parse_jaas_config, ssl_settings
from kafkawire.net.server import KafkaServer
from kafkawire.protocol.error_codes import Errors
from kafkawire.storage.state_files import JavaProperties

from .netlib import RawConnection, run
from .tls_certs import make_pki

METADATA = 3


async def empty_metadata(ctx, request):
    return MetadataResponse()
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" '
              'password="admin-secret";')
SALT = os.urandom(16)
CREDENTIALS = {(mech, user): scram_credential(mech, password, SALT, 4096)
               for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512")
               for user, password in (("admin", "admin-secret"), ("alice", "alice-secret"))}


def node_config(protocol="SASL_PLAINTEXT", mechanisms="PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", extra=""):
    return parse_server_config(
        "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
        "listeners=CONTROLLER://127.0.0.1:0\ncontroller.listener.names=CONTROLLER\n"
        f"listener.security.protocol.map=CONTROLLER:{protocol}\nsasl.enabled.mechanisms={mechanisms}\n"
        f"sasl.mechanism.controller.protocol=PLAIN\n"
        f"listener.name.controller.plain.sasl.jaas.config={PLAIN_JAAS}\n"
        f"listener.name.controller.scram-sha-256.sasl.jaas.config={SCRAM_JAAS}\n"
        f"listener.name.controller.scram-sha-512.sasl.jaas.config={SCRAM_JAAS}\n" + extra)


def lookup(mechanism, user):
    return CREDENTIALS.get((mechanism, user))


async def authenticate(config, mechanism, user, password, ssl_context=None):
    """Authenticate with NetworkClient and send one Metadata; the principal the handler saw."""
    seen = []

    async def handler(ctx, request):
        seen.append(ctx.principal)
        return MetadataResponse()

    async with KafkaServer({METADATA: handler}, security=config.security_of("CONTROLLER"),
                           scram_lookup=lookup) as server:
        async with NetworkClient(request_timeout_ms=5000, ssl_context=ssl_context,
                                 sasl=lambda: SaslClient(mechanism, user, password)) as client:
            await client.send(("127.0.0.1", server.port), MetadataRequest(topics=[]))
    return seen


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_each_mechanism_authenticates_and_names_the_principal(mechanism):
    assert run(authenticate(node_config(), mechanism, "alice", "alice-secret")) == ["User:alice"]


@pytest.mark.parametrize("mechanism, message", [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "Authentication failed during authentication due to invalid credentials with SASL "
                      "mechanism SCRAM-SHA-256"),
    ("SCRAM-SHA-512", "Authentication failed during authentication due to invalid credentials with SASL "
                      "mechanism SCRAM-SHA-512"),
])
def test_wrong_password_is_refused_with_kafkas_message(mechanism, message):
    with pytest.raises(AuthenticationFailed, match=f"SASL_AUTHENTICATION_FAILED: {message}"):
        run(authenticate(node_config(), mechanism, "alice", "wrong"))


def test_unknown_scram_user_gets_the_same_message_as_a_wrong_password():
    with pytest.raises(AuthenticationFailed, match="due to invalid credentials with SASL mechanism SCRAM-SHA-256"):
        run(authenticate(node_config(), "SCRAM-SHA-256", "mallory", "x"))


def test_sasl_ssl_authenticates_over_tls(tmp_path):
    pki = make_pki(tmp_path)
    config = node_config("SASL_SSL", extra=f"ssl.keystore.type=PEM\nssl.keystore.location={pki.server_pem}\n")
    ctx = client_ssl_context(ssl_settings(JavaProperties.parse(
        f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca_pem}\n").items, "CONTROLLER"))
    assert run(authenticate(config, "SCRAM-SHA-512", "admin", "admin-secret", ctx)) == ["User:admin"]


async def raw_exchange(config, steps):
    """Send each (request, version) on one raw connection; the answers (None: connection closed)."""
    async with KafkaServer({METADATA: empty_metadata}, security=config.security_of("CONTROLLER"),
                           scram_lookup=lookup) as server:
        conn = await RawConnection.open(server.port)
        answers = []
        for i, (request, version) in enumerate(steps):
            await conn.send(request, version, i)
            frame = await conn.read_frame(timeout=5)
            if frame is None:
                answers.append(None)
                break
            from kafkawire.protocol.framing import decode_response
            answers.append(decode_response(frame, request.API_KEY, version)[1])
        await conn.aclose()
    return answers


def test_only_api_versions_and_handshake_before_authentication():
    got = run(raw_exchange(node_config(), [(MetadataRequest(topics=[]), 12)]))
    assert got == [None]          # closed unanswered: "Unexpected Kafka request ... during SASL handshake"
    got = run(raw_exchange(node_config(), [(ApiVersionsRequest(client_software_name="t",
                                                                client_software_version="1"), 3),
                                           (ApiVersionsRequest(client_software_name="t",
                                                               client_software_version="1"), 3)]))
    assert got[0].error_code == 0 and {k.api_key for k in got[0].api_keys} >= {17, 36, 3}
    assert got[1] is None         # a second ApiVersions before the handshake closes too


def test_unsupported_mechanism_is_answered_with_the_enabled_ones_then_closed():
    got = run(raw_exchange(node_config(mechanisms="SCRAM-SHA-256"),
                           [(SaslHandshakeRequest(mechanism="PLAIN"), 1), (MetadataRequest(topics=[]), 12)]))
    assert isinstance(got[0], SaslHandshakeResponse)
    assert got[0].error_code == Errors.UNSUPPORTED_SASL_MECHANISM and got[0].mechanisms == ["SCRAM-SHA-256"]
    assert got[1] is None


def test_a_request_other_than_sasl_authenticate_after_the_handshake_is_illegal_sasl_state():
    got = run(raw_exchange(node_config(), [(SaslHandshakeRequest(mechanism="PLAIN"), 1),
                                           (MetadataRequest(topics=[]), 12), (MetadataRequest(topics=[]), 12)]))
    assert got[0].error_code == 0
    assert got[1].error_code == Errors.ILLEGAL_SASL_STATE if hasattr(got[1], "error_code") else got[1] is None
    assert got[-1] is None


def test_failed_plain_answers_then_closes_and_a_good_one_serves_requests():
    bad = run(raw_exchange(node_config(), [(SaslHandshakeRequest(mechanism="PLAIN"), 1),
                                           (SaslAuthenticateRequest(auth_bytes=b"\0alice\0nope"), 2),
                                           (MetadataRequest(topics=[]), 12)]))
    assert isinstance(bad[1], SaslAuthenticateResponse)
    assert bad[1].error_code == Errors.SASL_AUTHENTICATION_FAILED
    assert bad[1].error_message == "Authentication failed: Invalid username or password"
    assert bad[2] is None
    good = run(raw_exchange(node_config(), [(SaslHandshakeRequest(mechanism="PLAIN"), 1),
                                            (SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"), 2),
                                            (MetadataRequest(topics=[]), 12)]))
    assert good[1].error_code == 0 and isinstance(good[2], MetadataResponse)


def test_handshake_v0_takes_raw_tokens():
    async def main():
        config = node_config()
        async with KafkaServer({METADATA: empty_metadata},
                               security=config.security_of("CONTROLLER")) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(SaslHandshakeRequest(mechanism="PLAIN"), 0, 1)
            await conn.read_frame(timeout=5)
            token = b"\0alice\0alice-secret"
            await conn.write(len(token).to_bytes(4, "big") + token)
            answer = await conn.read_frame(timeout=5)         # an empty token, size-prefixed
            await conn.send(MetadataRequest(topics=[]), 12, 2)
            metadata = await conn.read_response(METADATA, 12)
            await conn.aclose()
            return answer, metadata
    answer, metadata = run(main())
    assert answer == b"" and metadata[0] == 2


@pytest.mark.parametrize("extra, key, words", [
    ("", None, None),
])
def test_config_accepts_the_documented_example(extra, key, words):
    config = node_config(extra=extra)
    security = config.security_of("CONTROLLER")
    assert security.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    assert security.jaas["PLAIN"].users() == {"admin": "admin-secret", "alice": "alice-secret"}
    client = config.raft_client_security()
    assert (client.mechanism, client.username, client.password) == ("PLAIN", "admin", "admin-secret")


@pytest.mark.parametrize("text, key, words", [
    ("sasl.enabled.mechanisms=GSSAPI\n", "listener.name.controller.gssapi.sasl.jaas.config", "is required"),
    ("sasl.enabled.mechanisms=PLAIN\nlistener.name.controller.plain.sasl.jaas.config=\n",
     "listener.name.controller.plain.sasl.jaas.config", "login modules"),
    ("sasl.enabled.mechanisms=DIGEST-MD5\n", "sasl.enabled.mechanisms", "DIGEST-MD5"),
])
def test_sasl_configuration_refusals_name_the_key(text, key, words):
    base = ("process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
            "listeners=CONTROLLER://127.0.0.1:0\ncontroller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT\n")
    config = parse_server_config(base + text)
    with pytest.raises(ConfigError) as info:
        config.security_of("CONTROLLER")
    assert info.value.key == key and words in str(info.value)


def test_missing_jaas_and_unsupported_controller_mechanism_are_refused():
    base = ("process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
            "listeners=CONTROLLER://127.0.0.1:0\ncontroller.listener.names=CONTROLLER\n"
            "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT\nsasl.enabled.mechanisms=PLAIN\n")
    with pytest.raises(ConfigError, match="listener.name.controller.plain.sasl.jaas.config: \\(unset\\) is required"):
        parse_server_config(base).security_of("CONTROLLER")
    with_jaas = base + f"listener.name.controller.plain.sasl.jaas.config={PLAIN_JAAS}\n"
    # Kafka's default controller mechanism is GSSAPI, whose JAAS entry the node's client logs in with
    with pytest.raises(ConfigError, match="listener.name.controller.gssapi.sasl.jaas.config: \\(unset\\) is required"):
        parse_server_config(with_jaas).raft_client_security()


def test_jaas_parser_reads_kafkas_syntax():
    entry = parse_jaas_config("k", 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                   'username="a b" password=secret user_x="y\\"z";')
    assert entry.module.endswith("PlainLoginModule") and entry.flag == "required"
    assert entry.options == {"username": "a b", "password": "secret", "user_x": 'y"z'}
    for bad in ('Module required username="a"', 'Module maybe;', 'A required; B required;', 'M required x;'):
        with pytest.raises(ConfigError):
            parse_jaas_config("k", bad)


def test_a_short_salt_as_kafka_stores_it_authenticates():
    # Kafka's StorageTool example: salt="N3E=" (2 bytes); scramp alone would refuse it.
    import base64
    short = scram_credential("SCRAM-SHA-256", "alice-secret", base64.b64decode("N3E="), 4096)
    CREDENTIALS[("SCRAM-SHA-256", "short")] = short
    try:
        assert run(authenticate(node_config(), "SCRAM-SHA-256", "short", "alice-secret")) == ["User:short"]
    finally:
        del CREDENTIALS[("SCRAM-SHA-256", "short")]


def _scram_client_final(gs2_header: str, user: str, password: str, client_nonce: str, server_first: str) -> str:
    """RFC 5802's client final message (SHA-256) for a client that sent ``gs2_header``: its c=
    binds that header, authorization id and all."""
    import base64
    import hashlib
    import hmac
    attributes = dict(a.split("=", 1) for a in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attributes["s"]), int(attributes["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    without_proof = f"c={base64.b64encode(gs2_header.encode()).decode()},r={attributes['r']}"
    auth_message = f"n={user},r={client_nonce},{server_first},{without_proof}"
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message.encode(), "sha256").digest()
    proof = base64.b64encode(bytes(k ^ s for k, s in zip(client_key, signature))).decode()
    return f"{without_proof},p={proof}"


def test_a_scram_authorization_id_equal_to_the_user_name_is_taken_as_kafka_takes_it():
    """ScramSaslServer accepts an authzid that is the user's own name (scramp alone refuses any)."""
    async def main():
        async with KafkaServer({METADATA: empty_metadata}, security=node_config().security_of("CONTROLLER"),
                               scram_lookup=lookup) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1, 1)
            await conn.read_response(17, 1)
            await conn.send(SaslAuthenticateRequest(auth_bytes=b"n,a=alice,n=alice,r=nonce1234"), 2, 2)
            first = (await conn.read_response(36, 2))[1]
            final = _scram_client_final("n,a=alice,", "alice", "alice-secret", "nonce1234", first.auth_bytes.decode())
            await conn.send(SaslAuthenticateRequest(auth_bytes=final.encode()), 2, 3)
            last = (await conn.read_response(36, 2))[1]
            await conn.send(MetadataRequest(topics=[]), 12, 4)
            metadata = await conn.read_response(METADATA, 12)
            await conn.aclose()
            return first, last, metadata
    first, last, metadata = run(main())
    assert (first.error_code, last.error_code) == (0, 0), last.error_message
    assert last.auth_bytes.startswith(b"v=") and metadata[0] == 4


def test_scram_user_names_with_commas_and_equals_and_passwords_saslprep_would_change_authenticate():
    """Kafka's ScramFormatter: a saslname's =2C and =3D are decoded on the server, and the password
    is its UTF-8 bytes on both sides (no SASLprep: U+2168 is not "IX")."""
    from kafkawire.tools.scram_args import credential
    user, password = "svc,team=a", "\u2168-secret"
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        stored, server = credential(mechanism, salt=SALT, iterations=4096, password=password)
        CREDENTIALS[(mechanism, user)] = (SALT, stored, server, 4096)
    try:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            assert run(authenticate(node_config(), mechanism, user, password)) == [f"User:{user}"]
        with pytest.raises(AuthenticationFailed):
            run(authenticate(node_config(), "SCRAM-SHA-256", user, "IX-secret"))
    finally:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            del CREDENTIALS[(mechanism, user)]


def test_a_scram_user_name_kafka_cannot_read_is_refused():
    """ClientFirstMessage's saslname is ASCII, with "=" only in =2C or =3D."""
    CREDENTIALS[("SCRAM-SHA-256", "j\u00fcrgen")] = CREDENTIALS[("SCRAM-SHA-256", "alice")]
    try:
        with pytest.raises(AuthenticationFailed):
            run(authenticate(node_config(), "SCRAM-SHA-256", "j\u00fcrgen", "alice-secret"))
    finally:
        del CREDENTIALS[("SCRAM-SHA-256", "j\u00fcrgen")]
