"""SASL re-authentication (KIP-368) and the session lifetime, in process (kafkawire.net.
reauthentication): connections.max.reauth.ms per listener and mechanism, SessionLifetimeMs bounded
by a delegation token's expiry, a re-authentication on the open connection (same principal, same
mechanism, at most once a second), and the close of a connection whose session ended. The
sessions' clock is moved by the tests (reauthentication.monotonic), never waited for.

The Java client's own re-authentications are judged in
tests/interop/test_delegation_tokens_on_kafkawire_broker.py."""
from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os

import pytest

from kafkawire.messages.delegation_token_record import DelegationTokenRecord
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.messages.metadata_response import MetadataResponse
from kafkawire.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kafkawire.messages.sasl_handshake_request import SaslHandshakeRequest
from kafkawire.net import reauthentication
from kafkawire.net.authentication import sasl_handlers
from kafkawire.net.client import NetworkClient
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.net.reauthentication import max_reauth_by_mechanism, session_lifetime_ms
from kafkawire.net.sasl import SaslClient
from kafkawire.net.security import is_security_key
from kafkawire.net.server import KafkaServer
from kafkawire.net.token_credentials import TokenCredentials
from kafkawire.protocol.error_codes import Errors

from .netlib import RawConnection, run
from .test_sasl import METADATA, lookup, node_config

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
SECRET = "reauth-secret"


class Clock:
    """reauthentication.monotonic (seconds) and reauthentication.now_ms (the wall clock tokens'
    expiry timestamps are on), moved together by hand."""

    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self):
        return self.now

    def ms(self) -> int:
        return round(self.now * 1000)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(reauthentication, "monotonic", clock)
    monkeypatch.setattr(reauthentication, "now_ms", clock.ms)
    return clock


# --- the setting and the lifetime -----------------------------------------------------------------

def test_the_most_specific_key_wins_per_mechanism_and_a_bad_value_names_its_key():
    props = {"connections.max.reauth.ms": "1000", "listener.name.a.connections.max.reauth.ms": "2000",
             "listener.name.a.scram-sha-256.connections.max.reauth.ms": "3000",
             "scram-sha-512.connections.max.reauth.ms": "9"}       # not read: Kafka drops it too
    mechanisms = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    assert max_reauth_by_mechanism(props, "A", mechanisms) == {"PLAIN": 2000, "SCRAM-SHA-256": 3000,
                                                               "SCRAM-SHA-512": 2000}
    assert max_reauth_by_mechanism(props, "B", mechanisms) == dict.fromkeys(mechanisms, 1000)
    assert max_reauth_by_mechanism({}, "B", mechanisms) == dict.fromkeys(mechanisms, 0)
    with pytest.raises(ConfigError, match="listener.name.a.plain.connections.max.reauth.ms"):
        max_reauth_by_mechanism({"listener.name.a.plain.connections.max.reauth.ms": "soon"}, "A", mechanisms)
    assert is_security_key("listener.name.a.plain.connections.max.reauth.ms")
    assert is_security_key("listener.name.a.connections.max.reauth.ms")
    config = node_config(extra="connections.max.reauth.ms=5000\n"
                               "listener.name.controller.plain.connections.max.reauth.ms=7000\n")
    assert config.security_of("CONTROLLER").max_reauth_ms == {"PLAIN": 7000, "SCRAM-SHA-256": 5000,
                                                             "SCRAM-SHA-512": 5000}
    with pytest.raises(ConfigError, match="connections.max.reauth.ms"):
        parse_server_config("process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
                            "listeners=CONTROLLER://127.0.0.1:0\ncontroller.listener.names=CONTROLLER\n"
                            "connections.max.reauth.ms=x\n")


@pytest.mark.parametrize("max_reauth_ms, expiry_ms, lifetime", [
    (0, None, None),            # no re-authentication: SessionLifetimeMs 0, the session never ends
    (-5, None, None),
    (2000, None, 2000),
    (0, 10_500, 500),           # a token bounds its session even with the setting at 0, as in Kafka
    (2000, 10_500, 500),
    (200, 10_500, 200),
    (2000, 9_000, 0),           # a token past its expiry: a session of 0 ms
])
def test_session_lifetime_is_the_setting_or_the_time_to_the_credentials_expiry_whichever_is_less(
        max_reauth_ms, expiry_ms, lifetime):
    assert session_lifetime_ms(max_reauth_ms, expiry_ms, 10_000) == lifetime


# --- over the wire ----------------------------------------------------------------------------------

def serving(config, tokens=None):
    seen = []

    async def metadata(ctx, request):
        seen.append(ctx.principal)
        return MetadataResponse()
    server = KafkaServer({METADATA: metadata, **sasl_handlers()}, security=config.security_of("CONTROLLER"),
                         scram_lookup=lookup, token_lookup=TokenCredentials(SECRET, lambda: tokens or {}),
                         failed_authentication_delay_ms=0)
    return server, seen


async def plain_login(conn, user, password, correlation_id=1, mechanism="PLAIN"):
    """SaslHandshake v1 and SaslAuthenticate v2; the SaslAuthenticate answer (None if closed)."""
    await conn.send(SaslHandshakeRequest(mechanism=mechanism), 1, correlation_id)
    _, handshake = await conn.read_response(SASL_HANDSHAKE, 1)
    assert handshake.error_code == 0, handshake
    await conn.send(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()), 2, correlation_id + 1)
    frame = await conn.read_frame(timeout=5)
    if frame is None:
        return None
    from kafkawire.protocol.framing import decode_response
    return decode_response(frame, SASL_AUTHENTICATE, 2)[1]


async def metadata(conn, correlation_id):
    """A Metadata request's answer, or None when the server closed the connection instead."""
    await conn.send(MetadataRequest(topics=[]), 12, correlation_id)
    return await conn.read_frame(timeout=5)


def test_a_plain_session_re_authenticates_on_its_connection_and_keeps_being_served(clock):
    async def main():
        server, seen = serving(node_config(extra="connections.max.reauth.ms=2000\n"))
        async with server:
            conn = await RawConnection.open(server.port)
            first = await plain_login(conn, "alice", "alice-secret")
            clock.now += 1.9                      # before the end: a re-authentication
            again = await plain_login(conn, "alice", "alice-secret", 10)
            served = await metadata(conn, 20)
            clock.now += 1.9
            third = await plain_login(conn, "alice", "alice-secret", 30)
            clock.now += 1.9
            still = await metadata(conn, 40)
            return first, again, served, third, still, server.reauthentications, seen
    first, again, served, third, still, count, seen = run(main())
    assert [a.session_lifetime_ms for a in (first, again, third)] == [2000, 2000, 2000]
    assert all(a.error_code == 0 for a in (first, again, third))
    assert served is not None and still is not None and count == 2
    assert seen == ["User:alice", "User:alice"]


def test_a_request_after_the_session_ended_closes_the_connection_unanswered(clock, caplog):
    caplog.set_level(logging.DEBUG, logger="kafkawire.net.authentication")

    async def main():
        server, seen = serving(node_config(extra="connections.max.reauth.ms=2000\n"))
        async with server:
            conn = await RawConnection.open(server.port)
            await plain_login(conn, "alice", "alice-secret")
            before = await metadata(conn, 5)
            clock.now += 2.0                      # the end itself is still in the session
            at_end = await metadata(conn, 6)
            clock.now += 0.001
            after = await metadata(conn, 7)
            return before, at_end, after, await conn.at_eof(timeout=5), seen
    before, at_end, after, closed, seen = run(main())
    assert before is not None and at_end is not None
    assert after is None and closed and len(seen) == 2
    # Kafka's Processor: "Disconnecting expired channel", at DEBUG (an INFO log stays quiet).
    assert [r.levelno for r in caplog.records if "Disconnecting expired channel" in r.getMessage()] == [logging.DEBUG]


def test_without_the_setting_a_session_never_ends_and_a_handshake_is_illegal_sasl_state(clock):
    async def main():
        server, _ = serving(node_config())
        async with server:
            conn = await RawConnection.open(server.port)
            login = await plain_login(conn, "alice", "alice-secret")
            clock.now += 10 ** 6
            served = await metadata(conn, 5)
            await conn.send(SaslHandshakeRequest(mechanism="PLAIN"), 1, 6)
            _, handshake = await conn.read_response(SASL_HANDSHAKE, 1)
            return login, served, handshake
    login, served, handshake = run(main())
    assert login.session_lifetime_ms == 0 and served is not None
    assert handshake.error_code == Errors.ILLEGAL_SASL_STATE


def test_a_second_re_authentication_within_a_second_is_served_as_a_request(clock):
    async def main():
        server, _ = serving(node_config(extra="connections.max.reauth.ms=60000\n"))
        async with server:
            conn = await RawConnection.open(server.port)
            await plain_login(conn, "alice", "alice-secret")
            again = await plain_login(conn, "alice", "alice-secret", 10)
            clock.now += 0.5
            await conn.send(SaslHandshakeRequest(mechanism="PLAIN"), 1, 20)
            _, too_soon = await conn.read_response(SASL_HANDSHAKE, 1)
            clock.now += 0.5
            later = await plain_login(conn, "alice", "alice-secret", 30)
            return again, too_soon, later, server.reauthentications
    again, too_soon, later, count = run(main())
    assert again.error_code == 0 and later.error_code == 0 and count == 2
    assert too_soon.error_code == Errors.ILLEGAL_SASL_STATE


def test_a_re_authentication_with_handshake_v0_takes_a_raw_token(clock):
    async def main():
        server, seen = serving(node_config(extra="connections.max.reauth.ms=2000\n"))
        async with server:
            conn = await RawConnection.open(server.port)
            await plain_login(conn, "alice", "alice-secret")
            clock.now += 1.5
            await conn.send(SaslHandshakeRequest(mechanism="PLAIN"), 0, 10)
            _, handshake = await conn.read_response(SASL_HANDSHAKE, 0)
            token = b"\0alice\0alice-secret"
            await conn.write(len(token).to_bytes(4, "big") + token)
            answer = await conn.read_frame(timeout=5)
            clock.now += 1.5                      # past the first session, within the second
            return handshake, answer, await metadata(conn, 20), server.reauthentications
    handshake, answer, served, count = run(main())
    assert handshake.error_code == 0 and answer == b"" and served is not None and count == 1


def test_re_authenticating_as_another_principal_or_with_another_mechanism_is_refused_and_closed(clock):
    async def main():
        server, _ = serving(node_config(extra="connections.max.reauth.ms=60000\n"))
        async with server:
            other_user = await RawConnection.open(server.port)
            await plain_login(other_user, "alice", "alice-secret")
            refused = await plain_login(other_user, "admin", "admin-secret", 10)
            other_mechanism = await RawConnection.open(server.port)
            await plain_login(other_mechanism, "alice", "alice-secret")
            await other_mechanism.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1, 10)
            _, handshake = await other_mechanism.read_response(SASL_HANDSHAKE, 1)
            await other_mechanism.send(SaslAuthenticateRequest(auth_bytes=b"n,,n=alice,r=abc"), 2, 11)
            unanswered = await other_mechanism.read_frame(timeout=5)
            return (refused, await other_user.at_eof(timeout=5), handshake, unanswered,
                    await other_mechanism.at_eof(timeout=5), server.reauthentications)
    refused, closed, handshake, unanswered, closed_too, count = run(main())
    assert refused.error_code == Errors.SASL_AUTHENTICATION_FAILED
    assert refused.error_message == "Cannot change principals during re-authentication from User.alice: User.admin"
    assert closed and count == 0
    assert handshake.error_code == 0            # Kafka answers it, then refuses what follows
    assert unanswered is None and closed_too


# --- delegation tokens ------------------------------------------------------------------------------

def token(token_id: str, expiry_ms: int) -> DelegationTokenRecord:
    return DelegationTokenRecord(owner="User:alice", requester="User:alice", renewers=[], issue_timestamp=1,
                                 max_timestamp=expiry_ms + 10 ** 9, expiration_timestamp=expiry_ms, token_id=token_id)


def token_password(token_id: str) -> str:
    return base64.b64encode(hmac.new(SECRET.encode(), token_id.encode(), hashlib.sha512).digest()).decode()


async def token_login(conn, token_id, correlation_id=1):
    """Kafka's ScramSaslClient with tokenauth=true over SaslAuthenticate v2: the last answer."""
    from kafkawire.protocol.framing import decode_response
    await conn.send(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1, correlation_id)
    await conn.read_response(SASL_HANDSHAKE, 1)
    bare = f"n={token_id},r={base64.b64encode(os.urandom(12)).decode()},tokenauth=true"
    await conn.send(SaslAuthenticateRequest(auth_bytes=f"n,,{bare}".encode()), 2, correlation_id + 1)
    frame = await conn.read_frame(timeout=5)
    first = decode_response(frame, SASL_AUTHENTICATE, 2)[1]
    if first.error_code:
        return first
    server_first = bytes(first.auth_bytes).decode()
    fields = dict(part.split("=", 1) for part in server_first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", token_password(token_id).encode(), base64.b64decode(fields["s"]),
                                 int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    without_proof = f"c=biws,r={fields['r']}"
    signature = hmac.new(hashlib.sha256(client_key).digest(), f"{bare},{server_first},{without_proof}".encode(),
                         hashlib.sha256).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    await conn.send(SaslAuthenticateRequest(auth_bytes=f"{without_proof},p={proof}".encode()), 2, correlation_id + 2)
    frame = await conn.read_frame(timeout=5)
    return None if frame is None else decode_response(frame, SASL_AUTHENTICATE, 2)[1]


def test_a_tokens_expiry_bounds_its_session_and_a_renewal_extends_the_next_one(clock):
    now_ms = clock.ms()
    tokens = {"tok": token("tok", now_ms + 30_000)}

    async def main():
        server, seen = serving(node_config(extra="connections.max.reauth.ms=600000\n"), tokens)
        async with server:
            conn = await RawConnection.open(server.port)
            first = await token_login(conn, "tok")
            tokens["tok"] = token("tok", now_ms + 300_000)          # renewed
            clock.now += 29
            renewed = await token_login(conn, "tok", 10)
            clock.now += 31                    # past the first expiry, within the renewed one
            served = await metadata(conn, 20)
            return first, renewed, served, seen
    first, renewed, served, seen = run(main())
    assert first.session_lifetime_ms == 30_000, first
    assert renewed.session_lifetime_ms == 300_000 - 29_000, renewed
    assert served is not None and seen == ["User:alice"]


def test_without_the_setting_a_token_session_still_ends_at_the_tokens_expiry(clock):
    tokens = {"tok": token("tok", clock.ms() + 30_000)}

    async def main():
        server, seen = serving(node_config(), tokens)
        async with server:
            conn = await RawConnection.open(server.port)
            login = await token_login(conn, "tok")
            clock.now += 31
            return login, await metadata(conn, 10), seen
    login, after, seen = run(main())
    assert login.session_lifetime_ms == 30_000
    assert after is None and seen == []


def test_re_authentication_with_a_removed_token_is_refused_and_with_an_expired_one_ends_at_once(clock):
    tokens = {"gone": token("gone", clock.ms() + 30_000), "old": token("old", clock.ms() + 30_000)}

    async def main():
        server, _ = serving(node_config(extra="connections.max.reauth.ms=2000\n"), tokens)
        async with server:
            removed = await RawConnection.open(server.port)
            await token_login(removed, "gone")
            del tokens["gone"]
            clock.now += 1.5
            refused = await token_login(removed, "gone", 10)
            expired = await RawConnection.open(server.port)
            await token_login(expired, "old")
            tokens["old"] = token("old", clock.ms() + 1_000)      # past its expiry then, not yet removed
            clock.now += 1.5
            zero = await token_login(expired, "old", 10)
            clock.now += 0.001
            return refused, await removed.at_eof(timeout=5), zero, await metadata(expired, 20)
    refused, closed, zero, after = run(main())
    assert refused.error_code == Errors.SASL_AUTHENTICATION_FAILED
    assert refused.error_message == "Authentication failed during re-authentication due to invalid credentials " \
                                    "with SASL mechanism SCRAM-SHA-256"
    assert closed
    assert zero.error_code == 0 and zero.session_lifetime_ms == 0 and after is None


# --- kafkawire's own client -------------------------------------------------------------------------

def test_the_nodes_own_client_re_authenticates_before_its_session_ends(clock, monkeypatch):
    from types import SimpleNamespace

    from kafkawire.net import client as client_module
    monkeypatch.setattr(client_module, "time", SimpleNamespace(monotonic=clock))

    async def main():
        server, seen = serving(node_config(extra="connections.max.reauth.ms=2000\n"))
        async with server:
            async with NetworkClient(request_timeout_ms=5000,
                                     sasl=lambda: SaslClient("SCRAM-SHA-256", "alice", "alice-secret")) as client:
                peer = ("127.0.0.1", server.port)
                await client.send(peer, MetadataRequest(topics=[]))
                first = client._peers[peer].connection
                counts = []
                for _ in range(3):
                    clock.now += 1.96                 # past 95% of the lifetime, before its end
                    await client.send(peer, MetadataRequest(topics=[]))
                    counts.append(server.reauthentications)
                return counts, client._peers[peer].connection is first, seen
    counts, same_connection, seen = run(main())
    assert counts == [1, 2, 3] and same_connection
    assert seen == ["User:alice"] * 4


# --- a controller's listeners -----------------------------------------------------------------------

def test_a_controller_listener_takes_token_logins_from_its_committed_image(clock):
    """Kafka's ControllerServer gives its SocketServer the token cache its DelegationTokenPublisher
    fills: a controller-only node's SASL/SCRAM listener takes tokenauth logins too."""
    from types import SimpleNamespace

    from kafkawire.messages.api_versions_request import ApiVersionsRequest
    from kafkawire.metadata.image import MetadataImage
    from kafkawire.net.admission import ConnectionQuotas
    from kafkawire.raft.node.controller_node import ControllerNode
    config = node_config(extra=f"delegation.token.secret.key={SECRET}\nconnections.max.reauth.ms=60000\n")
    node = ControllerNode(config)
    image = MetadataImage()
    image.apply(token("tok", clock.ms() + 30_000))
    node.state_machine = SimpleNamespace(image=image)

    async def main():
        endpoint = SimpleNamespace(host="127.0.0.1", port=0)
        server = node._make_server(endpoint, "CONTROLLER", ConnectionQuotas(node._admission_limits()))
        async with server:
            conn = await RawConnection.open(server.port)
            login = await token_login(conn, "tok")
            await conn.send(ApiVersionsRequest(), 3, 9)
            served = await conn.read_frame(timeout=5)
            refused = await RawConnection.open(server.port)
            unknown = await token_login(refused, "no-such-token")
            return login, served, unknown
    login, served, unknown = run(main())
    assert login.error_code == 0 and login.session_lifetime_ms == 30_000 and served is not None
    assert unknown.error_code == Errors.SASL_AUTHENTICATION_FAILED
