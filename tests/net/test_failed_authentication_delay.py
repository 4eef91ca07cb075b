"""connection.failed.authentication.delay.ms (SocketServerConfigs, default 100, at least 0, less
than connections.max.idle.ms; one value for every listener): what Kafka refuses during SASL
authentication with an AuthenticationException has its failure response held for the delay and
sent together with the close (Selector.maybeDelayCloseOnAuthenticationFailure,
KafkaChannel's DelayedResponseAuthenticationException, SaslServerAuthenticator.
handleAuthenticationFailure). What Kafka refuses otherwise closes at once.

The "not before the delay" checks are lower bounds on the event loop's clock (a sleep never ends
early); nothing here asserts that something is fast except by a bounded wait."""
import asyncio
import struct

import pytest

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kafkawire.messages.sasl_authenticate_response import SaslAuthenticateResponse
from kafkawire.messages.sasl_handshake_request import SaslHandshakeRequest
from kafkawire.messages.sasl_handshake_response import SaslHandshakeResponse
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.net.server import DEFAULT_FAILED_AUTHENTICATION_DELAY_MS, KafkaServer
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import decode_response

from .netlib import RawConnection, run
from .test_config import props
from .test_sasl import METADATA, empty_metadata, lookup, node_config

DELAY_MS = 300
LONG_DELAY_MS = 60_000          # a refusal Kafka does not delay must not wait for this


async def _refused(steps, last, delay_ms: int):
    """On a SASL_PLAINTEXT listener with ``delay_ms``: send ``steps`` (request, version), each
    answered, then the bytes ``last``. Returns (the frame answering ``last`` or None, whether
    the connection closed right after it, seconds from sending ``last`` to that answer or close)."""
    config = node_config()
    async with KafkaServer({METADATA: empty_metadata}, security=config.security_of("CONTROLLER"),
                           scram_lookup=lookup, failed_authentication_delay_ms=delay_ms) as server:
        conn = await RawConnection.open(server.port)
        for i, (request, version) in enumerate(steps):
            await conn.send(request, version, i)
            assert await conn.read_frame(timeout=5) is not None
        loop = asyncio.get_running_loop()
        sent = loop.time()
        await conn.write(last)
        frame = await conn.read_frame(timeout=10)
        waited = loop.time() - sent
        closed = frame is None or await conn.at_eof(timeout=5)
        return frame, closed, waited


def _request(body, version: int, correlation_id: int = 9) -> bytes:
    from kafkawire.protocol.framing import encode_request
    return encode_request(body, version, correlation_id, client_id="t")


HANDSHAKE_PLAIN_V1 = [(SaslHandshakeRequest(mechanism="PLAIN"), 1)]


def _answer(frame, api_key: int, version: int):
    assert frame is not None, "the connection closed without the failure response"
    return decode_response(frame, api_key, version)[1]


def test_a_wrong_password_is_answered_sasl_authentication_failed_after_the_delay_then_closed():
    frame, closed, waited = run(_refused(HANDSHAKE_PLAIN_V1, _request(
        SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"), 2), DELAY_MS))
    answer = _answer(frame, 36, 2)
    assert isinstance(answer, SaslAuthenticateResponse)
    assert (answer.error_code, answer.error_message) == (Errors.SASL_AUTHENTICATION_FAILED,
                                                         "Authentication failed: Invalid username or password")
    assert closed
    assert waited >= DELAY_MS / 1000, f"the failure response came after {waited:.3f} s, before the delay"


def test_a_scram_authorization_id_not_the_users_name_is_answered_kafkas_message_after_the_delay():
    frame, closed, waited = run(_refused([(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)], _request(
        SaslAuthenticateRequest(auth_bytes=b"n,a=bob,n=alice,r=abcdefgh"), 2), DELAY_MS))
    answer = _answer(frame, 36, 2)
    assert (answer.error_code, answer.error_message) == (
        Errors.SASL_AUTHENTICATION_FAILED,
        "Authentication failed: Client requested an authorization id that is different from username")
    assert closed and waited >= DELAY_MS / 1000


def test_an_unsupported_mechanism_and_an_illegal_sasl_state_are_answered_after_the_delay():
    frame, closed, waited = run(_refused([], _request(SaslHandshakeRequest(mechanism="GSSAPI"), 1), DELAY_MS))
    answer = _answer(frame, 17, 1)
    assert isinstance(answer, SaslHandshakeResponse) and answer.error_code == Errors.UNSUPPORTED_SASL_MECHANISM
    assert closed and waited >= DELAY_MS / 1000
    frame, closed, waited = run(_refused(HANDSHAKE_PLAIN_V1, _request(SaslHandshakeRequest(mechanism="PLAIN"), 1),
                                         DELAY_MS))
    assert _answer(frame, 17, 1).error_code == Errors.ILLEGAL_SASL_STATE      # a second handshake
    assert closed and waited >= DELAY_MS / 1000


@pytest.mark.parametrize("what, steps, last", [pytest.param(*case, id=case[0]) for case in [
    ("a frame over sasl.server.max.receive.size", [], struct.pack(">i", 524289) + b"\0" * 16),
    ("a wrong PLAIN raw token after SaslHandshake v0", [(SaslHandshakeRequest(mechanism="PLAIN"), 0)],
     struct.pack(">i", 12) + b"\0alice\0wrong"),
    # ScramSaslServer's one SaslAuthenticationException: an authorization id not the user's name.
    ("a SCRAM raw token asking for another authorization id", [(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 0)],
     struct.pack(">i", 26) + b"n,a=bob,n=alice,r=abcdefgh"),
]])
def test_a_failure_kafka_answers_with_nothing_closes_after_the_delay(what, steps, last):
    frame, closed, waited = run(_refused(steps, last, DELAY_MS))
    assert frame is None and closed, what
    assert waited >= DELAY_MS / 1000, f"{what}: closed after {waited:.3f} s, before the delay"


@pytest.mark.parametrize("what, steps, last", [pytest.param(*case, id=case[0]) for case in [
    ("a request other than ApiVersions or SaslHandshake before the handshake", [],
     _request(MetadataRequest(topics=[]), 12)),
    ("a second ApiVersions", [(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)],
     _request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)),
]])
def test_what_kafka_refuses_without_an_authentication_exception_closes_at_once(what, steps, last):
    """InvalidRequestException in SaslServerAuthenticator.handleKafkaRequest: no delay. With a
    60 s delay configured, the close comes within the 10 s the read waits."""
    frame, closed, _ = run(_refused(steps, last, LONG_DELAY_MS))
    assert frame is None and closed, what


def test_no_delay_when_the_setting_is_zero():
    frame, closed, _ = run(_refused(HANDSHAKE_PLAIN_V1, _request(
        SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"), 2), 0))
    assert _answer(frame, 36, 2).error_code == Errors.SASL_AUTHENTICATION_FAILED and closed


# --- the setting ----------------------------------------------------------------------------------

def test_the_setting_is_kafkas_with_kafkas_default():
    assert parse_server_config(props()).connection_failed_authentication_delay_ms == 100
    assert DEFAULT_FAILED_AUTHENTICATION_DELAY_MS == 100
    config = parse_server_config(props(**{"connection.failed.authentication.delay.ms": "250"}))
    assert config.connection_failed_authentication_delay_ms == 250


@pytest.mark.parametrize("overrides, fragment", [
    ({"connection.failed.authentication.delay.ms": "-1"}, "must be at least 0"),
    ({"connection.failed.authentication.delay.ms": "soon"}, "is not a number of type INT"),
    ({"connection.failed.authentication.delay.ms": "2147483648"}, "is out of range for type INT"),
    ({"connection.failed.authentication.delay.ms": "5000", "connections.max.idle.ms": "5000"},
     "should always be less than connections.max.idle.ms=5000 to prevent failed authentication responses "
     "from timing out"),
])
def test_a_bad_value_is_refused_as_kafka_refuses_it(overrides, fragment):
    with pytest.raises(ConfigError) as info:
        parse_server_config(props(**overrides))
    assert info.value.key == "connection.failed.authentication.delay.ms"
    assert fragment in str(info.value)


def test_a_delay_not_below_the_idle_timeout_is_allowed_when_idle_connections_are_never_closed():
    """KafkaConfig.validateValues checks the pair only when connections.max.idle.ms >= 0."""
    config = parse_server_config(props(**{"connection.failed.authentication.delay.ms": "5000",
                                          "connections.max.idle.ms": "-1"}))
    assert config.connection_failed_authentication_delay_ms == 5000


def test_a_node_gives_its_listeners_the_setting(tmp_path):
    """The KafkaServer a controller node builds for its listener carries the configured delay."""
    from kafkawire.raft.node.controller_node import ControllerNode
    config = parse_server_config(props(**{"connection.failed.authentication.delay.ms": "250"}))
    node = ControllerNode.__new__(ControllerNode)
    node.config = config
    server = node._make_server(config.listeners[0], "CONTROLLER", _quotas())
    assert server.failed_authentication_delay_ms == 250


def _quotas():
    from kafkawire.net.admission import AdmissionLimits, ConnectionQuotas
    return ConnectionQuotas(AdmissionLimits())
