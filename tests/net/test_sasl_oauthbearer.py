"""SASL/OAUTHBEARER (issue 29): the RFC 7628 exchange against hand-made vectors, Kafka's unsecured
validator and the OIDC one (KIP-768) with keys made here (a file: JWKS and an https one on
127.0.0.1), the session lifetime from the token's exp, the node's own client, and kafka-python and
confluent-kafka reading a served log over SASL_PLAINTEXT OAUTHBEARER."""
import base64
import http.server
import json
import ssl
import threading
import time

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils

from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.metadata_response import MetadataResponse
from kafkawire.net.client import AuthenticationFailed, NetworkClient
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.net.oauthbearer_jwks import JWKS_MAX_BYTES
from kafkawire.net.sasl import SaslFailure
from kafkawire.net.sasl_oauthbearer import (InvalidToken, OAuthBearerServer, UnsecuredValidator,
                                            client_first_message, parse_client_first)
from kafkawire.net.security import client_options
from kafkawire.net.server import KafkaServer

from .netlib import run
from .tls_certs import make_pki

METADATA = 3
GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"
INVALID = '{"status":"invalid_token"}'
UNSECURED_JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                  'unsecuredLoginStringClaim_sub="controller";')


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jws(header: dict, claims: dict, sign=None) -> str:
    signed = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    return f"{signed}.{b64(sign(signed.encode())) if sign else ''}"


def unsecured(claims: dict) -> str:
    return jws({"alg": "none"}, claims)


def now_s() -> float:
    return time.time()


# --- the client-first message -------------------------------------------------------------------

def test_client_first_message_vectors():
    """RFC 7628's example shape, an authzid, extensions; and what Kafka's pattern refuses."""
    message = b"n,a=user@example.com,\x01auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==\x01host=server\x01\x01"
    assert parse_client_first(message) == ("vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==", "user@example.com",
                                           {"host": "server"})
    assert client_first_message("a.b.", "", {"traceId": "42"}) == b"n,,\x01auth=Bearer a.b.\x01traceId=42\x01\x01"
    assert parse_client_first(b"n,,\x01auth=bearer t0k\x01\x01") == ("t0k", "", {})
    for bad in (b"y,,\x01auth=Bearer t\x01\x01", b"n,,\x01auth=Bearer t\x01",           # gs2 flag, no end
                b"n,,\x01host=x\x01\x01",                                               # no auth
                b"n,,\x01auth=Basic dXNlcg==\x01\x01", b"n,,\x01auth=Bearer a b\x01\x01",
                b"n,,\x01a1=x\x01auth=Bearer t\x01\x01", b"n,,\x01auth=Bearer t\xff\x01\x01"):
        with pytest.raises(SaslFailure) as refused:
            parse_client_first(bad)
        assert refused.value.message == GENERIC
    with pytest.raises(ValueError, match="Extension name auth is invalid"):
        client_first_message("t", "", {"auth": "x"})


def exchange(validator, token, authzid=""):
    """One server exchange: (complete, principal, expiry ms) or the failure's message."""
    server = OAuthBearerServer(validator)
    answer = server.evaluate(client_first_message(token, authzid))
    if answer:
        assert answer.decode() != "" and not server.complete
        with pytest.raises(SaslFailure) as refused:
            server.evaluate(b"\x01")
        assert refused.value.message == answer.decode()
        return refused.value.message
    return server.username, server.credential_expiry_ms


def test_the_unsecured_validator_takes_a_token_and_its_expiry():
    exp = int(now_s()) + 600
    assert exchange(UnsecuredValidator({}), unsecured({"sub": "alice", "exp": exp, "iat": exp - 700})) == \
        ("alice", exp * 1000)
    options = {"unsecuredValidatorPrincipalClaimName": "user"}
    assert exchange(UnsecuredValidator(options), unsecured({"user": "bob", "exp": exp})) == ("bob", exp * 1000)


@pytest.mark.parametrize("token, options, message", [
    (unsecured({"sub": "alice", "exp": 1}), {}, INVALID),                                   # expired
    (unsecured({"sub": "alice"}), {}, INVALID),                                             # no exp
    (unsecured({"exp": 4e9}), {}, INVALID),                                                 # no sub
    (unsecured({"sub": "alice", "exp": 4e9, "iat": 3.9e9}), {}, INVALID),                   # iat ahead
    (jws({"alg": "HS256"}, {"sub": "alice", "exp": 4e9}), {}, INVALID),                     # alg not none
    (unsecured({"sub": "alice", "exp": 4e9}) + "c2ln", {}, INVALID),                        # a signature
    ("e30..", {}, INVALID), ("bm90IGpzb24.e30.", {}, INVALID),                               # '..', not JSON
    (unsecured({"sub": "alice", "exp": 4e9, "scope": "read"}), {"unsecuredValidatorRequiredScope": "read write"},
     '{"status":"insufficient_scope", "scope":"[read, write]"}'),
])
def test_the_unsecured_validator_refuses_with_kafkas_json(token, options, message):
    assert exchange(UnsecuredValidator(options), token) == message


def test_a_malformed_message_and_another_authzid_are_refused_as_kafka():
    server = OAuthBearerServer(UnsecuredValidator({}))
    with pytest.raises(SaslFailure) as refused:
        server.evaluate(b"n,,\x01\x01")
    assert refused.value.message == GENERIC and not refused.value.authentication_exception
    token = unsecured({"sub": "alice", "exp": 4e9})
    with pytest.raises(SaslFailure) as refused:
        OAuthBearerServer(UnsecuredValidator({})).evaluate(client_first_message(token, "bob"))
    assert refused.value.message == ("Authentication failed: Client requested an authorization id (bob) that is "
                                     "different from the token's principal name (alice)")


def test_unsecured_validator_options_are_checked_at_start():
    with pytest.raises(ConfigError, match="must not be negative"):
        UnsecuredValidator({"unsecuredValidatorAllowableClockSkewMs": "-1"})
    with pytest.raises(ConfigError, match="Invalid scope value"):
        UnsecuredValidator({"unsecuredValidatorRequiredScope": 'a "b'})


# --- a node's listener --------------------------------------------------------------------------

def node_security(extra="", jaas=UNSECURED_JAAS):
    return parse_server_config(
        "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
        "listeners=CONTROLLER://127.0.0.1:0\ncontroller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT\nsasl.enabled.mechanisms=OAUTHBEARER\n"
        "sasl.mechanism.controller.protocol=OAUTHBEARER\n"
        f"listener.name.controller.oauthbearer.sasl.jaas.config={jaas}\n" + extra)


async def authenticate(config, sasl):
    """NetworkClient with ``sasl`` against a node listener: the principals its handler saw."""
    seen = []

    async def handler(ctx, request):
        seen.append(ctx.principal)
        return MetadataResponse()

    async with KafkaServer({METADATA: handler}, security=config.security_of("CONTROLLER")) as server:
        async with NetworkClient(request_timeout_ms=5000, sasl=sasl) as client:
            await client.send(("127.0.0.1", server.port), MetadataRequest(topics=[]))
    return seen


def test_the_nodes_own_client_authenticates_with_the_unsecured_login_module():
    """sasl.mechanism.controller.protocol=OAUTHBEARER: the raft client's token from the listener's
    unsecuredLogin* options; the principal is its sub."""
    config = node_security()
    options = client_options(config.raft_client_security())
    assert run(authenticate(config, options["sasl"])) == ["User:controller"]


def test_a_refused_token_fails_the_client_with_kafkas_json():
    from kafkawire.net.sasl_oauthbearer import OAuthBearerClient
    expired = unsecured({"sub": "alice", "exp": 1})
    with pytest.raises(AuthenticationFailed) as refused:
        run(authenticate(node_security(), lambda: OAuthBearerClient(lambda: expired)))
    assert INVALID in str(refused.value)


def test_the_session_lifetime_is_the_tokens_and_a_refusal_goes_out_after_the_clients_ack():
    """On the wire: SessionLifetimeMs is the time left to the token's exp (no
    connections.max.reauth.ms set); a refused token's JSON comes back as a challenge (error code
    NONE), the client's %x01 then gets SASL_AUTHENTICATION_FAILED with that JSON, and the close."""
    from kafkawire.messages.sasl_authenticate_request import SaslAuthenticateRequest
    from kafkawire.messages.sasl_handshake_request import SaslHandshakeRequest

    from .netlib import RawConnection

    async def exchange_on_the_wire(tokens, refused=False):
        async with KafkaServer({}, security=node_security().security_of("CONTROLLER")) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1, 0)
            _, handshake = await conn.read_response(17, 1)
            answers = [handshake.error_code]
            for i, token in enumerate(tokens, 1):
                await conn.send(SaslAuthenticateRequest(auth_bytes=token), 2, i)
                answers.append((await conn.read_response(36, 2))[1])
            if refused:
                answers.append(await conn.at_eof())
            return answers

    exp = now_s() + 100
    good = client_first_message(unsecured({"sub": "alice", "exp": exp}))
    code, answer = run(exchange_on_the_wire([good]))
    assert code == 0 and answer.error_code == 0
    assert 90_000 < answer.session_lifetime_ms <= 100_000
    bad = client_first_message(unsecured({"sub": "alice", "exp": 1}))
    code, challenge, failure, closed = run(exchange_on_the_wire([bad, b"\x01"], refused=True))
    assert (challenge.error_code, bytes(challenge.auth_bytes)) == (0, INVALID.encode())
    assert (failure.error_code, failure.error_message, closed) == (58, INVALID, True)


def test_login_options_that_make_no_token_stop_the_node():
    config = node_security(jaas="org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;")
    with pytest.raises(ConfigError, match="no token to send"):
        config.raft_client_security()


# --- the OIDC validator (KIP-768) ---------------------------------------------------------------

@pytest.fixture(scope="module")
def keys():
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    return rsa_key, ec_key


def jwk_of(key, kid):
    numbers = key.public_key().public_numbers()
    if isinstance(key, rsa.RSAPrivateKey):
        return {"kty": "RSA", "kid": kid, "use": "sig", "n": b64(numbers.n.to_bytes(256, "big")),
                "e": b64(numbers.e.to_bytes(3, "big"))}
    return {"kty": "EC", "kid": kid, "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")),
            "y": b64(numbers.y.to_bytes(32, "big"))}


def signed(key, kid, claims, alg=None):
    if isinstance(key, rsa.RSAPrivateKey):
        return jws({"alg": alg or "RS256", "kid": kid}, claims,
                   lambda data: key.sign(data, padding.PKCS1v15(), hashes.SHA256()))

    def es256(data):
        r, s = utils.decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return jws({"alg": "ES256", "kid": kid}, claims, es256)


def good_claims(**changes):
    now = int(now_s())
    claims = {"sub": "alice", "aud": ["kafka"], "iss": "https://idp.test", "exp": now + 600, "iat": now - 5}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def oidc_security(url, extra=""):
    return node_security(
        "listener.name.controller.oauthbearer.sasl.server.callback.handler.class="
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler\n"
        f"listener.name.controller.oauthbearer.sasl.oauthbearer.jwks.endpoint.url={url}\n"
        "sasl.oauthbearer.expected.audience=kafka,other\nsasl.oauthbearer.expected.issuer=https://idp.test\n"
        + extra).security_of("CONTROLLER")


def test_oidc_tokens_from_a_file_jwks(tmp_path, keys):
    rsa_key, ec_key = keys
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [jwk_of(rsa_key, "r1"), jwk_of(ec_key, "e1")]}))
    validator = oidc_security(jwks.as_uri()).oauthbearer
    validator.start()
    claims = good_claims()
    assert exchange(validator, signed(rsa_key, "r1", claims)) == ("alice", claims["exp"] * 1000)
    assert exchange(validator, signed(ec_key, "e1", claims))[0] == "alice"
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for token in (signed(other, "r1", claims),                                      # bad signature
                  signed(rsa_key, "r1", good_claims(aud="elsewhere")),              # wrong audience
                  signed(rsa_key, "r1", good_claims(iss="https://evil.test")),      # wrong issuer
                  signed(rsa_key, "r1", good_claims(exp=int(now_s()) - 60)),        # expired beyond the skew
                  signed(rsa_key, "r1", good_claims(iat=None)),                     # no iat
                  signed(rsa_key, "nokey", claims),                                 # unknown kid
                  unsecured(claims)):                                               # alg none
        assert exchange(validator, token) == INVALID
    jwks.write_text(json.dumps({"keys": [jwk_of(other, "r2")]}))                     # a rotated file is re-read
    assert exchange(validator, signed(other, "r2", claims))[0] == "alice"
    short = rsa.generate_private_key(public_exponent=65537, key_size=1024)             # under jose4j's 2048 bits
    short_jwk = jwk_of(short, "s1")
    short_jwk["n"] = b64(short.public_key().public_numbers().n.to_bytes(128, "big"))
    jwks.write_text(json.dumps({"keys": [short_jwk]}))
    assert exchange(validator, signed(short, "s1", claims)) == INVALID


def test_oidc_settings_are_checked_at_start(tmp_path):
    with pytest.raises(ConfigError, match="jwks.endpoint.url: .*is required"):
        node_security("listener.name.controller.oauthbearer.sasl.server.callback.handler.class="
                      "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler\n"
                      ).security_of("CONTROLLER")
    with pytest.raises(ConfigError, match="invalid protocol"):
        oidc_security("ftp://idp.test/jwks")
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"keys": [], "pad": "x" * JWKS_MAX_BYTES}))
    with pytest.raises(ConfigError, match=f"more than the {JWKS_MAX_BYTES}"):
        KafkaServer({}, security=oidc_security(big.as_uri()))


class _Jwks(http.server.BaseHTTPRequestHandler):
    body = b"{}"
    fetches = 0
    status = 200

    def do_GET(self):
        type(self).fetches += 1
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def https_jwks(tmp_path):
    pki = make_pki(tmp_path / "pki")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Jwks)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.server_pem)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, pki
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_oidc_tokens_from_an_https_jwks_refreshed_for_a_new_key_id(https_jwks, keys):
    """The set is fetched when the listener starts; a token signed by a key id it lacks is refused
    and fetches the set again at once, after which the new key's tokens are taken."""
    server, pki = https_jwks
    rsa_key, ec_key = keys
    _Jwks.body, _Jwks.fetches, _Jwks.status = json.dumps({"keys": [jwk_of(rsa_key, "r1")]}).encode(), 0, 200
    jaas = UNSECURED_JAAS[:-1] + f' ssl.truststore.type="PEM" ssl.truststore.location="{pki.ca_pem}";'
    config = node_security(
        "listener.name.controller.oauthbearer.sasl.server.callback.handler.class="
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler\n"
        f"sasl.oauthbearer.jwks.endpoint.url=https://127.0.0.1:{server.server_port}/jwks\n"
        "sasl.oauthbearer.expected.audience=kafka\n", jaas=jaas)
    validator = config.security_of("CONTROLLER").oauthbearer
    validator.start()
    assert _Jwks.fetches == 1
    claims = good_claims()
    assert exchange(validator, signed(rsa_key, "r1", claims))[0] == "alice"
    _Jwks.body = json.dumps({"keys": [jwk_of(rsa_key, "r1"), jwk_of(ec_key, "e1")]}).encode()
    assert exchange(validator, signed(ec_key, "e1", claims)) == INVALID
    deadline = time.monotonic() + 10
    while validator.source.refreshes == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert validator.source.refreshes == 1 and _Jwks.fetches == 2
    assert exchange(validator, signed(ec_key, "e1", claims))[0] == "alice"


def test_an_https_jwks_is_refetched_when_its_refresh_is_due_and_kept_when_that_fails(https_jwks, keys):
    """sasl.oauthbearer.jwks.endpoint.refresh.ms passed: the next token's validation fetches the set
    again in the background; an endpoint answering 500 is retried within the backoff bound and the
    keys read before stay."""
    server, pki = https_jwks
    rsa_key, _ = keys
    _Jwks.body, _Jwks.fetches, _Jwks.status = json.dumps({"keys": [jwk_of(rsa_key, "r1")]}).encode(), 0, 200
    jaas = UNSECURED_JAAS[:-1] + f' ssl.truststore.type="PEM" ssl.truststore.location="{pki.ca_pem}";'
    validator = node_security(
        "listener.name.controller.oauthbearer.sasl.server.callback.handler.class="
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler\n"
        f"sasl.oauthbearer.jwks.endpoint.url=https://127.0.0.1:{server.server_port}/jwks\n"
        "sasl.oauthbearer.jwks.endpoint.refresh.ms=1\nsasl.oauthbearer.jwks.endpoint.retry.backoff.ms=10\n"
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=30\n", jaas=jaas).security_of("CONTROLLER").oauthbearer
    validator.start()
    token = signed(rsa_key, "r1", good_claims())
    deadline = time.monotonic() + 10
    while validator.source.refreshes == 0 and time.monotonic() < deadline:
        assert exchange(validator, token)[0] == "alice"
    assert validator.source.refreshes >= 1
    _Jwks.status, fetched = 500, _Jwks.fetches
    while _Jwks.fetches < fetched + 3 and time.monotonic() < deadline:        # failed refreshes, each retried
        assert exchange(validator, token)[0] == "alice"
    assert _Jwks.fetches >= fetched + 3 and exchange(validator, token)[0] == "alice"
    _Jwks.status = 200


# --- Python clients -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def served_log(tmp_path_factory):
    from .metadata_log import write_metadata_log
    log_dir, written = write_metadata_log(tmp_path_factory.mktemp("oauth") / "log", epochs=1, batches_per_epoch=3,
                                          records_per_batch=3, segment_bytes=4096)
    return log_dir, [(w.offset, w.value) for w in written if not w.is_control]


def test_kafka_python_reads_with_a_token_provider(served_log):
    from kafka.net.sasl.oauth import AbstractTokenProvider

    from .served import ServedLog
    from .test_secure_clients import kafka_python_read

    class Provider(AbstractTokenProvider):
        def token(self):
            return unsecured({"sub": "alice", "exp": now_s() + 600, "iat": now_s()})

    log_dir, want = served_log
    with ServedLog(log_dir, server_options={"security": node_security().security_of("CONTROLLER")}) as served:
        assert kafka_python_read(served.port, len(want), security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=Provider()) == want


def test_confluent_kafka_reads_with_librdkafkas_unsecured_jwt(served_log):
    from .served import ServedLog
    from .test_secure_clients import confluent_read
    log_dir, want = served_log
    with ServedLog(log_dir, server_options={"security": node_security().security_of("CONTROLLER")}) as served:
        got, errors, _ = confluent_read(served.port, len(want), {
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": "principal=alice"})
    assert errors == [] and got == want


def test_the_replica_fetchers_and_markers_log_in_with_oauthbearer(tmp_path):
    """sasl.mechanism.inter.broker.protocol=OAUTHBEARER: the broker's peers' client makes its token
    from the inter-broker listener's JAAS entry; the peer's principal is its sub."""
    import asyncio

    from tests.broker.test_inter_broker_sasl import config_text, fetch_as_peer, make_broker
    jaas = UNSECURED_JAAS.replace('"controller"', '"broker"')
    config = parse_server_config(config_text(tmp_path, "OAUTHBEARER", enabled="OAUTHBEARER", jaas_keys=False)
                                 + f"listener.name.broker.oauthbearer.sasl.jaas.config={jaas}\n")
    broker = make_broker(config)
    options, unusable = broker.replica_roles.client_options()
    assert unusable is None and options["sasl"]().mechanism == "OAUTHBEARER"
    assert asyncio.run(fetch_as_peer(config, options)) == ["User:broker"]
    assert broker.txn_apis.router.peers.client().sasl().mechanism == "OAUTHBEARER"


class _TokenEndpoint(http.server.BaseHTTPRequestHandler):
    """client_credentials for client id "svc", secret "svc-secret": a JWT signed by ``key``."""
    key = None
    requests: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        type(self).requests.append((self.headers["Authorization"], body))
        if self.headers["Authorization"] != "Basic " + base64.b64encode(b"svc:svc-secret").decode():
            self.send_response(401)
            self.end_headers()
            return
        answer = json.dumps({"access_token": signed(self.key, "r1", good_claims(sub="controller-svc")),
                             "token_type": "Bearer", "expires_in": 600}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def test_the_nodes_own_client_takes_its_token_from_a_token_endpoint(tmp_path, keys):
    """sasl.login.callback.handler.class=OAuthBearerLoginCallbackHandler: the raft client's token
    comes from the client credentials grant (HTTP Basic, grant_type=client_credentials, the
    scope) and passes the OIDC validator; one fetch serves every connection while it is fresh; a
    wrong secret gets no token and the connection fails naming the endpoint's refusal."""
    rsa_key, _ = keys
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [jwk_of(rsa_key, "r1")]}))
    _TokenEndpoint.key, _TokenEndpoint.requests = rsa_key, []
    endpoint = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TokenEndpoint)
    thread = threading.Thread(target=endpoint.serve_forever, daemon=True)
    thread.start()
    try:
        def config(secret):
            return node_security(
                "listener.name.controller.oauthbearer.sasl.server.callback.handler.class="
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler\n"
                f"sasl.oauthbearer.jwks.endpoint.url={jwks.as_uri()}\nsasl.oauthbearer.expected.audience=kafka\n"
                "listener.name.controller.oauthbearer.sasl.login.callback.handler.class="
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n"
                f"sasl.oauthbearer.token.endpoint.url=http://127.0.0.1:{endpoint.server_port}/token\n"
                "sasl.oauthbearer.scope=kafka\n",
                jaas='org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
                     f'clientId="svc" clientSecret="{secret}";')
        good = config("svc-secret")
        sasl = client_options(good.raft_client_security())["sasl"]
        assert run(authenticate(good, sasl)) == ["User:controller-svc"]
        assert run(authenticate(good, sasl)) == ["User:controller-svc"]
        assert len(_TokenEndpoint.requests) == 1
        assert _TokenEndpoint.requests[0][1] == "grant_type=client_credentials&scope=kafka"
        with pytest.raises(AuthenticationFailed, match="no token to send: .*401"):
            run(authenticate(good, client_options(config("wrong").raft_client_security())["sasl"]))
    finally:
        endpoint.shutdown()
        endpoint.server_close()
        thread.join(10)


def test_confluent_kafka_produces_and_consumes_through_a_combined_node_over_oauthbearer(tmp_path):
    """A combined kafkawire node whose broker listener (also the inter-broker one) is
    SASL_PLAINTEXT with OAUTHBEARER only: librdkafka's unsecured JWT creates a topic, produces
    and reads back every record; a token refused for its missing scope gets nothing."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
    broker_port, = free_ports(1)
    jaas = UNSECURED_JAAS[:-1] + ' unsecuredLoginStringClaim_scope="kafka" unsecuredValidatorRequiredScope="kafka";'
    quorum = LocalQuorum(tmp_path, voters=1, properties={
        "process.roles": "broker,controller", "listener.security.protocol.map": "BROKER:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "BROKER", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER", "listener.name.broker.oauthbearer.sasl.jaas.config": jaas,
        "controller.quorum.election.timeout.ms": "200"},
        node_properties={1: {"listeners": f"BROKER://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{{port}}"}})
    quorum.node_properties[1]["listeners"] = quorum.node_properties[1]["listeners"].format(port=quorum.ports[1])
    client = {"bootstrap.servers": f"127.0.0.1:{broker_port}", "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
              "sasl.oauthbearer.config": "principal=alice scope=kafka", "log_level": 0}
    quorum.format(mode="standalone")
    quorum.start(1)
    try:
        admin = AdminClient(client)

        def brokers():
            try:
                return admin.list_topics(timeout=2).brokers
            except confluent_kafka.KafkaException:     # not listening yet
                return {}
        quorum.wait_until(lambda: quorum._check_alive([1]) or 1 in brokers(), 60,
                          "the broker to register and answer Metadata over OAUTHBEARER")
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(30)
        producer, delivered = confluent_kafka.Producer(client), []
        for i in range(20):
            producer.produce("t", f"record-{i}".encode(), on_delivery=lambda err, m: delivered.append(err))
        assert producer.flush(30) == 0 and delivered == [None] * 20
        consumer = confluent_kafka.Consumer({**client, "group.id": "g", "enable.auto.commit": False})
        try:
            consumer.assign([confluent_kafka.TopicPartition("t", 0, confluent_kafka.OFFSET_BEGINNING)])
            got, deadline = [], time.monotonic() + 30
            while len(got) < 20 and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is not None and not m.error():
                    got.append(m.value())
        finally:
            consumer.close()
        assert got == [f"record-{i}".encode() for i in range(20)]
        errors = []
        unscoped = AdminClient({**client, "sasl.oauthbearer.config": "principal=alice", "error_cb": errors.append})
        with pytest.raises(confluent_kafka.KafkaException):
            unscoped.list_topics(timeout=5)
        deadline = time.monotonic() + 10           # error_cb is served by poll()
        while not any("insufficient_scope" in str(e) for e in errors) and time.monotonic() < deadline:
            unscoped.poll(0.2)
        assert any('{"status":"insufficient_scope", "scope":"[kafka]"}' in str(e) for e in errors), errors
    finally:
        proc = quorum.processes.get(1)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_a_re_authentication_takes_a_new_token_of_the_same_principal_only():
    """KIP-368 with OAUTHBEARER: the re-authentication's session validates a new token (its exp the
    new credential expiry); a token of another principal is refused as Kafka refuses it."""
    from kafkawire.net.authentication import sasl_session
    from types import SimpleNamespace
    security = node_security().security_of("CONTROLLER")
    session = sasl_session(SimpleNamespace(security=security, scram_lookup=None))
    exp = int(now_s()) + 600
    session.api_versions_answered()
    assert session.handshake("OAUTHBEARER", 1) == 0
    assert session.evaluate(client_first_message(unsecured({"sub": "alice", "exp": exp}))) == b""
    assert (session.principal, session.credential_expiry_ms) == ("User:alice", exp * 1000)
    again = session.reauthentication()
    assert again.handshake("OAUTHBEARER", 1) == 0
    again.evaluate(client_first_message(unsecured({"sub": "alice", "exp": exp + 60})))
    assert (again.principal, again.credential_expiry_ms) == ("User:alice", (exp + 60) * 1000)
    other = again.reauthentication()
    other.handshake("OAUTHBEARER", 1)
    with pytest.raises(SaslFailure, match="Cannot change principals during re-authentication from User.alice: "
                                          "User.bob"):
        other.evaluate(client_first_message(unsecured({"sub": "bob", "exp": exp})))
