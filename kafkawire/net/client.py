"""Outbound Kafka connections, one per peer, as Kafka's NetworkClient keeps them.

    client = NetworkClient(client_id="kafkawire-raft", request_timeout_ms=2000)
    response = await client.send(("127.0.0.1", 9093), VoteRequest(...))      # version negotiated
    await client.close()

``send`` returns the response message or raises a TransportError the caller can act on:

* ConnectFailed: the TCP connect failed or took longer than ``connect_timeout_ms``
  (socket.connection.setup.timeout.ms). The peer then backs off.
* NodeBackingOff: the peer failed recently and its reconnect backoff has not expired
  (reconnect.backoff.ms doubling up to reconnect.backoff.max.ms, with 20% jitter and never
  past the max, as ClusterConnectionStates does); ``retry_after_ms`` says when to try again.
* RequestTimedOut: no response within the request's timeout. As NetworkClient.
  handleTimedOutRequests does, the connection is closed, so every other request in flight on
  it fails with Disconnected, and the peer backs off.
* Disconnected: the connection closed (by the peer, a timeout of another request, a protocol
  error, or ``close()``) before the response came.
* TooManyInFlight: ``max_in_flight_per_connection`` requests are already waiting on this
  peer (max.in.flight.requests.per.connection; NetworkClient is then "not ready"). Nothing is
  queued: the caller decides when to retry.
* UnsupportedVersion: the peer's ApiVersions range and ours for the API do not overlap, or the
  version asked for is outside the peer's range.
* ProtocolError: the peer answered with bytes that do not decode or a correlation id out of
  order; the connection is closed.
* AuthenticationFailed: the TLS handshake or the SASL exchange failed (a certificate the trust
  store does not accept, UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED); the peer backs
  off as after a failed connect.

``ssl_context`` (an ``ssl.SSLContext``, see ``kafkawire.net.security.client_ssl_context``) makes
every connection TLS; ``sasl`` (a ``kafkawire.net.sasl.SaslClient`` factory) authenticates each
one after ApiVersions with SaslHandshake v1 and SaslAuthenticate, as Kafka's
SaslClientAuthenticator does. When the server gives the session a lifetime (SaslAuthenticate's
SessionLifetimeMs: connections.max.reauth.ms, KIP-368) the client re-authenticates on the open
connection at 85 to 95% of it, as the Java client does, before its next request; the requests of
that moment wait for it.

On connect the client sends ApiVersions (our highest version, then the version the peer's
UNSUPPORTED_VERSION answer names, as the Java client does) and keeps the peer's ranges; a
request without ``api_version`` uses the highest version both sides know.
"""
from __future__ import annotations

import asyncio
import logging
import random
import ssl
import time
from dataclasses import dataclass

from kafkawire.net.backoff import ExponentialBackoff
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import DecodeError
from kafkawire.protocol.framing import DEFAULT_MAX_FRAME, FrameReader, decode_response, encode_request
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kafkawire.messages.sasl_handshake_request import SaslHandshakeRequest

__all__ = ["NetworkClient", "TransportError", "ConnectFailed", "NodeBackingOff", "RequestTimedOut",
           "Disconnected", "TooManyInFlight", "UnsupportedVersion", "ProtocolError", "AuthenticationFailed"]

log = logging.getLogger(__name__)

API_VERSIONS = 18
# CommonClientConfigs defaults.
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
DEFAULT_CONNECT_TIMEOUT_MS = 10_000
DEFAULT_RECONNECT_BACKOFF_MS = 50
DEFAULT_RECONNECT_BACKOFF_MAX_MS = 1000
DEFAULT_MAX_IN_FLIGHT = 5
_RECONNECT_MULTIPLIER, _RECONNECT_JITTER = 2, 0.2     # ClusterConnectionStates' ExponentialBackoff
FIRST_API_VERSIONS_VERSION = 4
_CLIENT_SOFTWARE = "kafkawire"
_CLIENT_SOFTWARE_VERSION = "0.1.0"


class TransportError(Exception):
    """A request that got no response. ``peer`` is the (host, port) it was for."""

    def __init__(self, peer, message: str):
        self.peer = peer
        super().__init__(f"{peer[0]}:{peer[1]}: {message}")


class ConnectFailed(TransportError):
    pass


class NodeBackingOff(TransportError):
    def __init__(self, peer, retry_after_ms: int):
        self.retry_after_ms = retry_after_ms
        super().__init__(peer, f"reconnect backoff: next connection attempt in {retry_after_ms} ms")


class RequestTimedOut(TransportError):
    pass


class Disconnected(TransportError):
    pass


class TooManyInFlight(TransportError):
    pass


class UnsupportedVersion(TransportError):
    pass


class ProtocolError(TransportError):
    pass


class AuthenticationFailed(TransportError):
    """``error_code``: the server's (UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED), None
    for a failed TLS handshake; ``server_message``: its ErrorMessage."""

    def __init__(self, peer, message: str, error_code: int | None = None, server_message: str | None = None):
        self.error_code, self.server_message = error_code, server_message
        super().__init__(peer, message)


@dataclass
class _Pending:
    correlation_id: int
    api_key: int
    api_version: int
    future: asyncio.Future


def _retrieve_exception(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()


class _Connection:
    """One TCP connection: writes requests, reads responses in order, fails what is pending on close."""

    def __init__(self, peer, reader, writer, max_frame, client_id, on_close):
        self.peer = peer
        self.client_id = client_id
        self._on_close = on_close
        self.reader, self.writer = reader, writer
        self.pending: list[_Pending] = []          # in request order; responses come back in that order
        self.next_correlation_id = 0
        self.closed = False
        self.close_reason: TransportError | None = None
        self.versions: dict[int, tuple[int, int]] = {}
        # KIP-368: when to re-authenticate (time.monotonic()), and the re-authentication under way.
        self.reauthenticate_at: float | None = None
        self.reauthenticating: asyncio.Future | None = None
        self._frames = FrameReader(max_frame)
        self._reader_task = asyncio.create_task(self._read_loop())

    def send(self, body, api_version: int) -> _Pending:
        correlation_id = self.next_correlation_id
        self.next_correlation_id = (self.next_correlation_id + 1) & 0x7FFFFFFF
        frame = encode_request(body, api_version, correlation_id, client_id=self.client_id)
        pending = _Pending(correlation_id, body.API_KEY, api_version, asyncio.get_running_loop().create_future())
        # A caller cancelled while waiting (a node shutting down cancels its sends) leaves the
        # future behind; the Disconnected that closing the connection sets on it later is then
        # retrieved here, not logged by asyncio as "Future exception was never retrieved".
        pending.future.add_done_callback(_retrieve_exception)
        self.pending.append(pending)
        self.writer.write(frame)
        return pending

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    self.close(Disconnected(self.peer, "the peer closed the connection"))
                    return
                for payload in self._frames.feed(data):
                    self._complete(payload)
                    if self.closed:
                        return
        except asyncio.CancelledError:
            pass
        except DecodeError as exc:
            self.close(ProtocolError(self.peer, f"bad response frame: {exc}"))
        except (ConnectionError, OSError) as exc:
            self.close(Disconnected(self.peer, f"connection failed: {exc}"))

    def _complete(self, payload: bytes) -> None:
        if not self.pending:
            self.close(ProtocolError(self.peer, "a response arrived with no request in flight"))
            return
        head = self.pending[0]
        try:
            correlation_id, body = decode_response(payload, head.api_key, head.api_version)
        except DecodeError as exc:
            self.close(ProtocolError(self.peer, f"response to api key {head.api_key} v{head.api_version} "
                                                f"does not decode: {exc}"))
            return
        if correlation_id != head.correlation_id:
            # NetworkClient.correlate: responses must come back in request order.
            self.close(ProtocolError(self.peer, f"correlation id for response ({correlation_id}) does not "
                                                f"match request ({head.correlation_id})"))
            return
        self.pending.pop(0)
        if not head.future.done():
            head.future.set_result(body)

    def close(self, reason: TransportError) -> None:
        if self.closed:
            return
        self.closed = True
        self.close_reason = reason
        for p in self.pending:
            if not p.future.done():
                p.future.set_exception(reason)
        self.pending.clear()
        self._reader_task.cancel()
        self.writer.transport.abort()
        self._on_close(self)


class _PeerState:
    def __init__(self):
        self.connection: _Connection | None = None
        self.connecting: asyncio.Future | None = None
        self.failures = 0
        self.backoff_until = 0.0


class NetworkClient:
    """An asyncio Kafka client for requests to peers (host, port): one connection per peer,
    reconnect backoff, in-flight limit and request timeouts as Kafka's NetworkClient has them,
    optional TLS and SASL. ``await send(peer, request)`` returns the response message and raises
    a TransportError subclass (ConnectFailed, RequestTimedOut, Disconnected, ...) on failure.
    """
    def __init__(self, *, client_id: str = "kafkawire", request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
                 connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
                 reconnect_backoff_ms: int = DEFAULT_RECONNECT_BACKOFF_MS,
                 reconnect_backoff_max_ms: int = DEFAULT_RECONNECT_BACKOFF_MAX_MS,
                 max_in_flight_per_connection: int = DEFAULT_MAX_IN_FLIGHT,
                 max_response_bytes: int = DEFAULT_MAX_FRAME, rng: random.Random | None = None,
                 ssl_context=None, sasl=None):
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = max(reconnect_backoff_max_ms, reconnect_backoff_ms)
        self.max_in_flight = max_in_flight_per_connection
        self.max_response_bytes = max_response_bytes
        self._rng = rng or random.Random()
        self._reconnect_backoff = ExponentialBackoff(self.reconnect_backoff_ms, _RECONNECT_MULTIPLIER,
                                                     self.reconnect_backoff_max_ms, _RECONNECT_JITTER, self._rng)
        self.ssl_context = ssl_context
        self.sasl = sasl              # () -> SaslClient, one per connection
        self._peers: dict[tuple, _PeerState] = {}
        self._closed = False

    # -- public --

    async def send(self, peer, request, api_version: int | None = None, timeout_ms: int | None = None):
        """Send ``request`` to ``peer`` ((host, port)) and return the response message.

        ``timeout_ms`` (default request_timeout_ms) covers waiting for the connection too.
        """
        if self._closed:
            raise Disconnected(tuple(peer), "the client is closed")
        peer = (peer[0], int(peer[1]))
        timeout = (self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        deadline = time.monotonic() + timeout
        conn = await self._ready(peer, deadline)
        version = self._choose_version(conn, request.API_KEY, api_version)
        if len(conn.pending) >= self.max_in_flight:
            raise TooManyInFlight(peer, f"{len(conn.pending)} requests already in flight "
                                        f"(max {self.max_in_flight})")
        return await self._round_trip(conn, request, version, deadline)

    async def connect(self, peer, timeout_ms: int | None = None) -> dict[int, tuple[int, int]]:
        """Connect (or reuse the connection) and return the peer's ApiVersions ranges, so a caller
        can shape a request for the version it will be sent at."""
        if self._closed:
            raise Disconnected(tuple(peer), "the client is closed")
        peer = (peer[0], int(peer[1]))
        timeout = (self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        conn = await self._ready(peer, time.monotonic() + timeout)
        return dict(conn.versions)

    def peer_versions(self, peer) -> dict[int, tuple[int, int]] | None:
        """The peer's ApiVersions ranges, if connected."""
        state = self._peers.get((peer[0], int(peer[1])))
        conn = state.connection if state else None
        return dict(conn.versions) if conn is not None and not conn.closed else None

    def disconnect(self, peer) -> None:
        state = self._peers.get((peer[0], int(peer[1])))
        if state and state.connection and not state.connection.closed:
            state.connection.close(Disconnected(state.connection.peer, "disconnected by the caller"))

    async def close(self) -> None:
        self._closed = True
        for peer, state in self._peers.items():
            if state.connection is not None:
                state.connection.close(Disconnected(peer, "the client is closed"))
            if state.connecting is not None and not state.connecting.done():
                state.connecting.cancel()
        await asyncio.sleep(0)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    # -- connection management --

    def _backoff_ms(self, failures: int) -> float:
        """ClusterConnectionStates.updateReconnectBackoff: the wait after ``failures`` failed
        connections in a row is ExponentialBackoff's for ``failures - 1``."""
        return self._reconnect_backoff.backoff_ms(max(failures - 1, 0))

    def _failed(self, state: _PeerState) -> None:
        state.failures += 1
        state.backoff_until = time.monotonic() + self._backoff_ms(state.failures) / 1000

    async def _ready(self, peer, deadline) -> _Connection:
        state = self._peers.setdefault(peer, _PeerState())
        conn = state.connection
        if conn is not None and not conn.closed:
            if conn.reauthenticating is not None or (conn.reauthenticate_at is not None
                                                     and time.monotonic() >= conn.reauthenticate_at):
                await self._reauthenticated(conn, deadline)
            return conn
        if state.connecting is None or state.connecting.done():
            now = time.monotonic()
            if now < state.backoff_until:
                raise NodeBackingOff(peer, int((state.backoff_until - now) * 1000) + 1)
            state.connecting = asyncio.ensure_future(self._connect(peer, state))
            # Every waiter gets the failure; retrieve it here too so an unawaited one is not "lost".
            state.connecting.add_done_callback(lambda f: f.cancelled() or f.exception())
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0)):
                return await asyncio.shield(state.connecting)
        except asyncio.TimeoutError:
            raise RequestTimedOut(peer, "timed out waiting for the connection to be set up") from None

    async def _connect(self, peer, state: _PeerState) -> _Connection:
        try:
            tls = {} if self.ssl_context is None else {
                "ssl": self.ssl_context, "server_hostname": peer[0],
                "ssl_handshake_timeout": self.connect_timeout_ms / 1000}
            async with asyncio.timeout(self.connect_timeout_ms / 1000):
                reader, writer = await asyncio.open_connection(peer[0], peer[1], **tls)
        except asyncio.TimeoutError:
            self._failed(state)
            raise ConnectFailed(peer, f"connection setup timed out after {self.connect_timeout_ms} ms") from None
        except (ssl.SSLError, ssl.CertificateError) as exc:
            self._failed(state)
            error = AuthenticationFailed(peer, f"SSL handshake failed: {getattr(exc, 'reason', None) or exc}")
            log.error("[%s] Connection to %s:%s failed authentication due to: %s", self.client_id, *peer, error)
            raise error from None
        except OSError as exc:
            self._failed(state)
            raise ConnectFailed(peer, f"connection failed: {exc.strerror or exc}") from None
        def on_close(closed: _Connection) -> None:
            # ClusterConnectionStates.disconnected: the next connection waits out the backoff.
            if state.connection is closed or state.connection is None:
                state.connection = None
                self._failed(state)

        conn = _Connection(peer, reader, writer, self.max_response_bytes, self.client_id, on_close)
        try:
            conn.versions = await self._probe_versions(conn)
            if self.sasl is not None:
                await self._authenticate(conn)
        except TransportError as exc:
            if isinstance(exc, AuthenticationFailed):
                # NetworkClient.processAuthenticationFailure logs each failed attempt at ERROR.
                log.error("[%s] Connection to %s:%s failed authentication due to: %s", self.client_id, *peer, exc)
            conn.close(Disconnected(peer, "ApiVersions failed" if not isinstance(exc, AuthenticationFailed)
                                    else "authentication failed"))
            raise
        except asyncio.CancelledError:
            # The client closed (or its caller gave up) mid set-up: close this connection too, or
            # its reader task is left waiting on a transport nobody holds ("Task was destroyed
            # but it is pending!" once it is collected).
            conn.close(Disconnected(peer, "the connection set-up was cancelled"))
            raise
        state.connection = conn
        state.failures = 0
        state.backoff_until = 0.0
        return conn

    async def _probe_versions(self, conn: _Connection) -> dict[int, tuple[int, int]]:
        ours = api_table()[API_VERSIONS]
        # v4 first: every Kafka since 3.7 and our own server answer it, and a first attempt at
        # a version the peer lacks costs a round trip and an error response in the capture.
        version = min(ours.max_version, FIRST_API_VERSIONS_VERSION)
        deadline = time.monotonic() + self.connect_timeout_ms / 1000
        for _ in range(2):
            request = ApiVersionsRequest(client_software_name=_CLIENT_SOFTWARE,
                                         client_software_version=_CLIENT_SOFTWARE_VERSION)
            response = await self._round_trip(conn, request, version, deadline)
            if response.error_code == Errors.UNSUPPORTED_VERSION:
                theirs = next((k for k in response.api_keys if k.api_key == API_VERSIONS), None)
                if theirs is None or theirs.max_version < ours.min_version:
                    raise UnsupportedVersion(conn.peer, "the peer supports no ApiVersions version we know")
                version = min(theirs.max_version, ours.max_version)
                continue
            if response.error_code != Errors.NONE:
                raise ProtocolError(conn.peer, f"ApiVersions failed with {Errors.for_code(response.error_code).name}")
            return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        raise UnsupportedVersion(conn.peer, "ApiVersions negotiation did not settle")

    async def _reauthenticated(self, conn: _Connection, deadline) -> None:
        """Wait for ``conn``'s re-authentication, starting it if none is under way; a failed one
        closes the connection (its error raised to every waiter)."""
        if conn.reauthenticating is None:
            conn.reauthenticate_at = None
            conn.reauthenticating = asyncio.ensure_future(self._authenticate(conn))

            def done(future: asyncio.Future) -> None:
                conn.reauthenticating = None
                if future.cancelled() or future.exception() is not None:
                    log.error("[%s] Re-authentication with %s:%s failed: %s", self.client_id, *conn.peer,
                              "cancelled" if future.cancelled() else future.exception())
                    conn.close(Disconnected(conn.peer, "re-authentication failed"))
            conn.reauthenticating.add_done_callback(done)
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0)):
                await asyncio.shield(conn.reauthenticating)
        except asyncio.TimeoutError:
            raise RequestTimedOut(conn.peer, "timed out waiting for the re-authentication") from None

    async def _authenticate(self, conn: _Connection) -> None:
        """SaslHandshake v1, then SaslAuthenticate until the mechanism completes; a session
        lifetime in the last answer schedules the re-authentication."""
        client = self.sasl()
        deadline = time.monotonic() + self.connect_timeout_ms / 1000
        prepare = getattr(client, "prepare", None)
        if prepare is not None:     # GSSAPI: its KDC round trips and a reverse lookup, off the event loop
            try:
                await prepare(conn.peer[0])
            except Exception as exc:
                raise AuthenticationFailed(conn.peer, f"{client.mechanism}: {exc}") from None
        handshake = await self._round_trip(conn, SaslHandshakeRequest(mechanism=client.mechanism), 1, deadline)
        if handshake.error_code != Errors.NONE:
            raise AuthenticationFailed(conn.peer, f"{Errors.for_code(handshake.error_code).name}: the peer "
                                                  f"enables {', '.join(handshake.mechanisms)}, not {client.mechanism}",
                                       handshake.error_code,
                                       f"Client SASL mechanism '{client.mechanism}' not enabled in the server, "
                                       f"enabled mechanisms are [{', '.join(handshake.mechanisms)}]")
        version = self._choose_version(conn, 36, None)
        try:
            token = client.first_token()
        except Exception as exc:             # OAUTHBEARER: its token endpoint gave no token
            raise AuthenticationFailed(conn.peer, f"{client.mechanism}: no token to send: {exc}") from None
        while token is not None:
            answer = await self._round_trip(conn, SaslAuthenticateRequest(auth_bytes=token), version, deadline)
            if answer.error_code != Errors.NONE:
                raise AuthenticationFailed(conn.peer, f"{Errors.for_code(answer.error_code).name}: "
                                                      f"{answer.error_message}", answer.error_code, answer.error_message)
            try:
                token = client.next_token(bytes(answer.auth_bytes))
            except Exception as exc:         # scramp: the server's proof does not verify
                raise AuthenticationFailed(conn.peer, f"{client.mechanism}: the server's answer does not "
                                                      f"verify: {exc}") from None
        lifetime_ms = getattr(answer, "session_lifetime_ms", 0)
        # SaslClientAuthenticator.ReauthInfo: at 85% of the lifetime plus up to 10% of jitter.
        conn.reauthenticate_at = None if lifetime_ms <= 0 else \
            time.monotonic() + lifetime_ms * (0.85 + 0.1 * random.random()) / 1000

    def _choose_version(self, conn: _Connection, api_key: int, wanted: int | None) -> int:
        ours = api_table().get(api_key)
        theirs = conn.versions.get(api_key)
        if ours is None:
            raise UnsupportedVersion(conn.peer, f"no schema for api key {api_key}")
        if theirs is None:
            raise UnsupportedVersion(conn.peer, f"the peer does not support api key {api_key} ({ours.name})")
        low, high = max(ours.min_version, theirs[0]), min(ours.max_version, theirs[1])
        if wanted is not None:
            if not low <= wanted <= high:
                raise UnsupportedVersion(conn.peer, f"{ours.name} v{wanted} is outside the versions both sides "
                                                    f"support ({low} to {high})")
            return wanted
        if low > high:
            raise UnsupportedVersion(conn.peer, f"no common {ours.name} version: ours {ours.min_version} to "
                                                f"{ours.max_version}, the peer's {theirs[0]} to {theirs[1]}")
        return high

    async def _round_trip(self, conn: _Connection, request, version, deadline):
        if conn.closed:
            raise conn.close_reason or Disconnected(conn.peer, "the connection is closed")
        pending = conn.send(request, version)
        remaining = max(deadline - time.monotonic(), 0)
        try:
            async with asyncio.timeout(remaining):
                return await asyncio.shield(pending.future)
        except asyncio.TimeoutError:
            error = RequestTimedOut(conn.peer, f"{type(request).__name__} v{version} (correlation id "
                                               f"{pending.correlation_id}) got no response within "
                                               f"{int(remaining * 1000)} ms")
            if not pending.future.done():
                pending.future.set_exception(error)
                pending.future.exception()      # retrieved: the caller gets ``error`` below
            # NetworkClient.handleTimedOutRequests: a timed-out request disconnects the node.
            conn.close(Disconnected(conn.peer, f"disconnected after request correlation id "
                                               f"{pending.correlation_id} timed out"))
            raise error from None
