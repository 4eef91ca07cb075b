"""SASL/OAUTHBEARER between Kafka 4.3.1 and a kafkawire node (issue 29): Kafka's
MetadataQuorumCommand logged in with the unsecured login module describes our quorum, and a token
without the scope our validator requires is refused with Kafka's JSON status; our tool reads the
same --command-config; a Kafka 4.3.1 controller whose sasl.mechanism.controller.protocol is
OAUTHBEARER follows our quorum as an observer; Kafka's client with a client-credentials token endpoint
is taken by our OIDC validator (JWKS file). Our node's own client (its registration
connection) is OAUTHBEARER too."""
from __future__ import annotations

import http.server
import json
import re
import subprocess
import threading

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from kafkawire.net.sasl import SaslClient
from kafkawire.net.sasl_oauthbearer import unsecured_client
from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.interop import kafka_dist
from tests.interop.kafka_procs import METADATA_QUORUM, run_kafka_tool
from tests.net.test_sasl_oauthbearer import _TokenEndpoint, jwk_of

from .test_security_vs_kafka import run_our_tool, stable_lines

MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
SERVER_OPTIONS = {"unsecuredLoginStringClaim_sub": "controller", "unsecuredLoginStringClaim_scope": "kafka"}
SERVER_JAAS = (f'{MODULE} required unsecuredLoginStringClaim_sub="controller" unsecuredLoginStringClaim_scope="kafka" '
               'unsecuredValidatorRequiredScope="kafka";')
PROPERTIES = {"listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT", "sasl.enabled.mechanisms": "OAUTHBEARER",
              "sasl.mechanism.controller.protocol": "OAUTHBEARER",
              "listener.name.controller.oauthbearer.sasl.jaas.config": SERVER_JAAS}


@pytest.fixture(scope="module")
def node(tmp_path_factory, kafka_libs):
    base = tmp_path_factory.mktemp("oauthbearer")
    q = LocalQuorum(base, voters=1, properties=PROPERTIES, client_options={"sasl": unsecured_client(SERVER_OPTIONS)})
    q.format(mode="standalone")
    q.start_all()
    try:
        q.wait_for_leader(60)
        yield q, base
    finally:
        q.stop_all()
        q.kill(1)


def command_config(path, claims: str):
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\nrequest.timeout.ms=5000\n"
                    f"default.api.timeout.ms=15000\nsasl.jaas.config={MODULE} required {claims};\n")
    return path


def describe_status(q, config):
    return run_kafka_tool(METADATA_QUORUM, "--bootstrap-controller", f"127.0.0.1:{q.ports[1]}", "--command-config",
                          str(config), "describe", "--status", check=False, timeout=90)


def test_kafka_and_our_tool_log_in_with_unsecured_tokens(node):
    q, base = node
    good = command_config(base / "alice.properties",
                          'unsecuredLoginStringClaim_sub="alice" unsecuredLoginStringClaim_scope="kafka"')
    theirs, ours = describe_status(q, good), run_our_tool(q, good)
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert re.search(r"^LeaderId:\s+1$", theirs.stdout, re.M), theirs.stdout
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert stable_lines(ours.stdout) == stable_lines(theirs.stdout) and len(stable_lines(ours.stdout)) == 3
    no_scope = command_config(base / "no-scope.properties", 'unsecuredLoginStringClaim_sub="alice"')
    theirs, ours = describe_status(q, no_scope), run_our_tool(q, no_scope)
    refusal = ('org.apache.kafka.common.errors.SaslAuthenticationException: '
               '{"status":"insufficient_scope", "scope":"[kafka]"}')
    assert theirs.returncode != 0 and refusal in theirs.stdout + theirs.stderr, (theirs.stdout + theirs.stderr)[-3000:]
    assert ours.returncode == 1 and ours.stderr.strip().splitlines()[-1] == refusal, ours.stderr[-3000:]


def test_a_kafka_controller_with_oauthbearer_follows_our_quorum(node, kafka_node_factory):
    """Kafka's raft client logs in with OAUTHBEARER (its unsecured login module, the listener's JAAS
    entry) to our listener, fetches the log as an observer and catches up."""
    q, base = node
    bootstrap = {"controller.quorum.bootstrap.servers": f"127.0.0.1:{q.ports[1]}"}
    kafka = kafka_node_factory(2, "controller", properties={**PROPERTIES, **bootstrap})
    kafka.format(q.cluster_id, "--no-initial-controllers")
    kafka.start()
    view = q.wait_until(lambda: (v := q.describe(1)) and 2 in [o.replica_id for o in v.observers] and v, 120,
                        "Kafka's controller to fetch as an observer")
    q.wait_until(lambda: next(o for o in q.describe(1).observers if o.replica_id == 2).log_end_offset
                 >= view.high_watermark, 60, "Kafka's controller to catch up")
    assert "ERROR" not in open(q.log_path(1)).read()


@pytest.fixture(scope="module")
def oidc_node(tmp_path_factory, kafka_libs):
    """A node whose clients' tokens are checked against a file: JWKS (the OIDC validator), with a
    client-credentials token endpoint on 127.0.0.1 issuing tokens signed by its key."""
    base = tmp_path_factory.mktemp("oauthbearer-oidc")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwks = base / "jwks.json"
    jwks.write_text(json.dumps({"keys": [jwk_of(key, "r1")]}))
    _TokenEndpoint.key, _TokenEndpoint.requests = key, []
    endpoint = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TokenEndpoint)
    thread = threading.Thread(target=endpoint.serve_forever, daemon=True)
    thread.start()
    plain = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" '
             'password="c-secret" user_controller="c-secret";')
    q = LocalQuorum(base, voters=1, properties={
        "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER",
        "sasl.mechanism.controller.protocol": "PLAIN", "listener.name.controller.plain.sasl.jaas.config": plain,
        "listener.name.controller.oauthbearer.sasl.jaas.config": f"{MODULE} required;",
        "listener.name.controller.oauthbearer.sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        "sasl.oauthbearer.jwks.endpoint.url": jwks.as_uri(), "sasl.oauthbearer.expected.audience": "kafka",
        "sasl.oauthbearer.expected.issuer": "https://idp.test"},
        client_options={"sasl": lambda: SaslClient("PLAIN", "controller", "c-secret")})
    q.format(mode="standalone")
    q.start_all()
    try:
        q.wait_for_leader(60)
        yield q, base, f"http://127.0.0.1:{endpoint.server_port}/token"
    finally:
        q.stop_all()
        q.kill(1)
        endpoint.shutdown()
        endpoint.server_close()
        thread.join(10)


def test_kafkas_client_with_a_token_endpoint_passes_our_oidc_validator(oidc_node):
    """Kafka 4.3.1's OAuthBearerLoginCallbackHandler fetches a token by client credentials (the
    URL allowed by its system property) and our OIDC validator takes it; a wrong client secret
    gets no token from the endpoint, and Kafka's client fails before it reaches us."""
    q, base, token_url = oidc_node

    def describe(secret):
        config = base / f"client-{secret}.properties"
        config.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\nrequest.timeout.ms=5000\n"
            "default.api.timeout.ms=15000\nsasl.login.callback.handler.class="
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n"
            f"sasl.oauthbearer.token.endpoint.url={token_url}\n"
            f'sasl.jaas.config={MODULE} required clientId="svc" clientSecret="{secret}" scope="kafka";\n')
        command = kafka_dist.java_command(
            METADATA_QUORUM, "--bootstrap-controller", f"127.0.0.1:{q.ports[1]}", "--command-config", str(config),
            "describe", "--status", system_properties={"org.apache.kafka.sasl.oauthbearer.allowed.urls": token_url})
        return subprocess.run(command, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)

    result = describe("svc-secret")
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert re.search(r"^LeaderId:\s+1$", result.stdout, re.M), result.stdout
    assert any(body == "grant_type=client_credentials&scope=kafka" for _, body in _TokenEndpoint.requests)
    refused = describe("wrong")
    assert refused.returncode != 0 and "LeaderId" not in refused.stdout
    assert "401" in refused.stdout + refused.stderr, (refused.stdout + refused.stderr)[-3000:]
