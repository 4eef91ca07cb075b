"""A Kafka binary-protocol TCP server: frames in, handlers, responses out in request order.

    server = KafkaServer({3: metadata_handler, 1: fetch_handler}, host="127.0.0.1", port=0)
    await server.bind()            # server.port is known from here on
    await server.start()           # accept connections
    ...
    await server.close()           # stop accepting, finish in-flight requests, close

A handler is ``async handler(ctx, request) -> response`` (``ctx`` is a RequestContext), or an
ApiHandler wrapping one with a version range and an error-response builder (the handler types
live in kafkawire.protocol.handler, so that what provides handlers need not import the server).
It may return NO_RESPONSE (Produce with acks=0) or raise CloseConnection (what Kafka does when an
acks=0 produce fails). ApiVersions is answered by the server itself from the registry.

This module is the listener and its registry of handlers; kafkawire.net.connection is one
connection: reading frames, dispatching, writing answers in order.

What the server does, and the Kafka behaviour it copies (SocketServer's Processor, RequestChannel,
KafkaApis):

* Frames are size-prefixed; a size outside 0..socket.request.max.bytes closes the connection
  (Kafka's InvalidReceiveException), logged with the peer. Before a SASL connection has
  authenticated the bound is sasl.server.max.receive.size (default 524288), checked on the 4
  size bytes before any of the body is read (kafkawire.net.connection).
* One request at a time per connection, as Kafka mutes a channel from a request's read to its
  response's send: the reader stops reading the socket while ``max_in_flight_per_connection``
  (default 1) requests are pending (the one admission rule per connection; see
  kafkawire.net.admission). With a higher setting, pipelined requests run concurrently;
  responses are always written strictly in request order.
* A handler may answer Throttled (a client quota exceeded, kafkawire.broker.quotas): the answer
  goes out at once and the connection reads nothing more for the throttle time (KIP-219, Kafka's
  ThrottledChannel), noticing meanwhile a peer that closes.
* Kafka's admission rules (``kafkawire.net.admission``): max.connections, max.connections.per.ip
  and its overrides, queued.max.request.bytes. The connection limits are applied where a
  connection is accepted, before its TLS handshake (``kafkawire.net.acceptor``, Kafka's
  Acceptor): at max.connections the listener accepts nothing and new connections wait in the
  kernel's listen backlog (50, socket.listen.backlog.size's default).
* An API key with no handler, or a version outside the handler's range, closes the connection,
  as Kafka's parseRequestHeader throwing InvalidRequestException does ("... which is not
  enabled"). The exception is ApiVersions: a version we do not know gets an ApiVersionsResponse
  v0 with UNSUPPORTED_VERSION listing the ApiVersions versions (ApiVersionsRequest.
  getErrorResponse), so the client can retry with one we know.
* A request that does not decode closes the connection, logged with the peer and the reason
  (RequestContext.parseRequest's InvalidRequestException). Responses to requests received
  before it are written first, since Kafka would not have read it before answering them.
* A handler that raises, or returns a response that does not encode in the request's version,
  gets its request answered with UNKNOWN_SERVER_ERROR: through the handler's
  ``error_response`` if it has one, else in the response's top-level error code when the
  version has one; otherwise the connection is closed (Kafka closes when getErrorResponse has
  nothing to say). Logged with the traceback, except for an authorizer that has not loaded the
  ACLs yet (AuthorizerNotReady): the same answer, as Kafka's, logged as a refusal in one line.
* A connection with nothing in flight and no bytes either way for connections.max.idle.ms is
  closed (Selector's idle expiry).
* ``close()`` stops accepting, stops reading, lets in-flight handlers finish and their
  responses go out (up to a timeout), then closes every connection.
* Listener security (``kafkawire.net.security``): an SSL or SASL_SSL listener runs the TLS
  handshake once the connection is admitted, bounded by ``tls_handshake_timeout_ms`` (the
  event loop's TLS; a failed one is logged as Kafka's "Failed authentication ... (SSL handshake
  failed)" and closed); a SASL listener authenticates each
  connection before anything but ApiVersions and SaslHandshake/SaslAuthenticate is read
  (``kafkawire.net.authentication``). ``RequestContext.principal`` says who is asking. A
  failed SASL authentication's answer and close are held ``failed_authentication_delay_ms``
  (connection.failed.authentication.delay.ms, default 100), as Kafka's Selector delays them.
"""
from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any, Callable

from kafkawire.net.acceptor import Acceptor, listening_sockets, open_streams
from kafkawire.net.admission import AdmissionLimits, ConnectionQuotas, RequestMemoryPool
from kafkawire.net.authentication import sasl_handlers
from kafkawire.net.connection import API_VERSIONS, API_VERSIONS_MAX, Connection, MutedConnections, Registered
from kafkawire.net.request_metrics import RequestMetrics
from kafkawire.net.security import server_ssl_context
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.framing import DEFAULT_MAX_FRAME
from kafkawire.protocol.handler import (NO_RESPONSE, ApiHandler, CloseConnection, Handler, RequestContext,
                                        top_level_error_response)

# The handler types are re-exported: they are what a KafkaServer is built from.
__all__ = ["KafkaServer", "RequestContext", "ApiHandler", "Handler", "NO_RESPONSE", "CloseConnection",
           "top_level_error_response", "DEFAULT_CONNECTIONS_MAX_IDLE_MS",
           "DEFAULT_FAILED_AUTHENTICATION_DELAY_MS"]

log = logging.getLogger(__name__)

DEFAULT_CONNECTIONS_MAX_IDLE_MS = 10 * 60 * 1000       # SocketServerConfigs.CONNECTIONS_MAX_IDLE_MS_DEFAULT
DEFAULT_FAILED_AUTHENTICATION_DELAY_MS = 100         # SocketServerConfigs.FAILED_AUTHENTICATION_DELAY_MS_DEFAULT
DEFAULT_MAX_IN_FLIGHT = 1             # Kafka mutes a channel until its request is answered


def _register(handlers: dict, unstable: bool = False) -> dict[int, Registered]:
    """The registry of ``handlers``; an API's latest version marked unstable in its schema is
    served only with ``unstable`` (unstable.api.versions.enable)."""
    table = api_table()
    out = {}
    for key, handler in handlers.items():
        if key == API_VERSIONS:
            raise ValueError("ApiVersions (18) is answered by the server from the registry; do not register it")
        if key not in table:
            raise ValueError(f"no request and response schema for API key {key}")
        if not isinstance(handler, ApiHandler):
            handler = ApiHandler(handler)
        api = table[key]
        stable_high = api.max_version - (1 if api.request.LATEST_VERSION_UNSTABLE and not unstable else 0)
        low = api.min_version if handler.min_version is None else max(handler.min_version, api.min_version)
        high = stable_high if handler.max_version is None else min(handler.max_version, api.max_version)
        if low > high:
            raise ValueError(f"API key {key}: version range {low}..{high} is empty")
        out[key] = Registered(key, handler, low, high, api.response, handler.advertised_min_version)
    return out


class KafkaServer:
    """An asyncio server speaking Kafka's protocol on one listener: it frames requests, answers
    ApiVersions from its handlers, checks versions and sizes (``max_request_bytes``, Kafka's
    socket.request.max.bytes), keeps per-connection order, and calls ``handlers[api_key]`` for
    each request (optionally TLS and SASL, through ``security``). Start with ``await start()``.
    """
    def __init__(self, handlers: dict, *, host: str = "127.0.0.1", port: int = 0,
                 listener_name: str = "PLAINTEXT", max_request_bytes: int = DEFAULT_MAX_FRAME,
                 connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS,
                 max_in_flight_per_connection: int = DEFAULT_MAX_IN_FLIGHT,
                 api_versions_max_version: int = API_VERSIONS_MAX, admission: AdmissionLimits | None = None,
                 security=None, scram_lookup=None, token_lookup=None, tls_handshake_timeout_ms: int = 10_000,
                 connection_quotas: ConnectionQuotas | None = None,
                 failed_authentication_delay_ms: int = DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
                 unstable_api_versions: bool = False):
        if max_in_flight_per_connection < 1:
            raise ValueError("max_in_flight_per_connection must be at least 1")
        if security is not None and security.uses_sasl:
            handlers = {**sasl_handlers(), **handlers}      # advertised in ApiVersions
        self.unstable_api_versions = unstable_api_versions
        self.muted_connections = MutedConnections()
        self._registry = _register(handlers, unstable_api_versions)
        self.host, self._port = host, port
        self.listener_name = listener_name
        self.max_request_bytes = max_request_bytes
        self.connections_max_idle_ms = connections_max_idle_ms
        self.failed_authentication_delay_ms = failed_authentication_delay_ms
        self.max_in_flight = max_in_flight_per_connection
        self.api_versions_max_version = min(api_versions_max_version, API_VERSIONS_MAX)
        self.admission = admission or AdmissionLimits()
        # kafkawire.net.security.ListenerSecurity (None: PLAINTEXT); the TLS context is built
        # here so that a bad key store fails at construction, naming its key.
        self.security = security
        self.ssl_context = None
        if security is not None and security.uses_ssl:
            self.ssl_context = server_ssl_context(security)
        if getattr(security, "oauthbearer", None) is not None:
            security.oauthbearer.start()         # an OIDC validator's keys: a bad JWKS fails here, named
        if security is not None and security.gssapi is not None:
            security.gssapi.acquire()            # a keytab without the principal's key fails here, too
        self.scram_lookup = scram_lookup         # (mechanism, user) -> stored SCRAM credential or None
        self.token_lookup = token_lookup         # (mechanism, token id) -> (credential, owner, expiry) or None
        self.reauthentications = 0                # SASL re-authentications completed (KIP-368)
        self.request_metrics = RequestMetrics()   # kafka.network RequestMetrics (a node may share one)
        self.tls_handshake_timeout_ms = tls_handshake_timeout_ms
        # Shared by a node's listeners, as Kafka counts max.connections and each address's
        # connections across a broker's listeners; else made when the server binds.
        self._quotas: ConnectionQuotas | None = connection_quotas
        self.memory_pool: RequestMemoryPool | None = None
        self._sockets: list[socket.socket] = []              # listening
        self._acceptors: list[Acceptor] = []
        self._accept_tasks: list[asyncio.Task] = []
        self._connections: set[Connection] = set()
        self.open_sockets = 0            # accepted and not yet closed, TLS handshakes included
        self._next_connection = 0
        self._closing = False
        # Fills supported/finalized features into ApiVersions answers (a KRaft node's kraft.version).
        self.api_versions_features: Callable[[Any], None] | None = None
        # Called with a connection's id once it is closed (client telemetry forgets its instance).
        self.connection_closed_listeners: list[Callable[[str], None]] = []

    # -- registry --

    def api_versions(self) -> list[tuple[int, int, int]]:
        """(api_key, min_version, max_version) of every API this server answers, ApiVersions included."""
        apis = {r.key: (r.key, r.advertised_low, r.high) for r in self._registry.values() if r.handler.advertised}
        av = api_table()[API_VERSIONS]
        apis[API_VERSIONS] = (API_VERSIONS, av.min_version, min(av.max_version, self.api_versions_max_version))
        return [apis[k] for k in sorted(apis)]

    def register(self, key: int, handler) -> None:
        """Add or replace a handler; connections see it from their next request."""
        self._registry.update(_register({key: handler}, self.unstable_api_versions))

    # -- lifecycle --

    async def bind(self) -> None:
        if not self._sockets:
            self._quotas = self._quotas or ConnectionQuotas(self.admission)
            self.memory_pool = RequestMemoryPool(self.admission.queued_max_request_bytes)
            self._sockets = await listening_sockets(self.host, self._port)

    async def start(self) -> None:
        await self.bind()
        if not self._accept_tasks and not self._closing:
            self._acceptors = [Acceptor(sock, self._quotas, self._serve, self.listener_name) for sock in self._sockets]
            self._accept_tasks = [asyncio.create_task(a.run()) for a in self._acceptors]

    @property
    def port(self) -> int:
        """The port it listens on, or, not bound yet, the fixed port it will listen on."""
        if not self._sockets:
            if self._port:
                return self._port
            raise RuntimeError("the server is not bound yet; call bind() or start()")
        return self._sockets[0].getsockname()[1]

    @property
    def open_connections(self) -> int:
        """Connections counted against max.connections (a slot taken for the next accept included)."""
        return 0 if self._quotas is None else self._quotas.total

    async def close(self, timeout_ms: int = 5000) -> None:
        """Stop accepting; finish what is in flight (up to ``timeout_ms``); close every connection."""
        self._closing = True
        await self._stop_accepting()
        connections = list(self._connections)
        for conn in connections:
            conn.stop_reading()
        tasks = [c.task for c in connections if c.task is not None]
        if tasks:
            done, pending = await asyncio.wait(tasks, timeout=timeout_ms / 1000)
            for conn in connections:
                if conn.task in pending:
                    log.warning("connection %s still busy after %d ms of shutdown; closing it", conn.id, timeout_ms)
                    conn.abort()
            if pending:
                await asyncio.wait(pending, timeout=1)

    async def __aenter__(self):
        await self.start()
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def _stop_accepting(self) -> None:
        """Stop the accept loops, close the listening sockets and any connection still in its TLS
        handshake (the ones past it are closed by close())."""
        for task in self._accept_tasks:
            task.cancel()
        if self._accept_tasks:
            await asyncio.wait(self._accept_tasks)
        for sock in self._sockets:
            sock.close()
        handshaking = [t for a in self._acceptors for t in a.serving
                       if not any(c.task is t for c in self._connections)]
        for task in handshaking:
            task.cancel()
        if handshaking:
            await asyncio.wait(handshaking, timeout=1)

    async def _serve(self, sock: socket.socket, host: str) -> None:
        """One accepted connection, admitted by the acceptor: its TLS handshake, then its
        requests; its max.connections slot and address count are given back when it closes."""
        self.open_sockets += 1
        try:
            # The event loop's transport owns the socket from here (closing it on a failed or
            # cancelled handshake); closing ours again is then a no-op.
            listener = self.listener_name if self.security is None else self.security.listener_name
            streams = None if self._closing else await open_streams(sock, self.ssl_context,
                                                                     self.tls_handshake_timeout_ms / 1000, listener)
            if streams is None or self._closing:
                if streams is not None:
                    streams[1].transport.abort()
                sock.close()
                return
            conn = Connection(self, *streams, self._next_connection)
            self._next_connection += 1
            self._connections.add(conn)
            conn.task = asyncio.current_task()
            try:
                await conn.run()
            finally:
                self._connections.discard(conn)
                conn.give_back_memory()
        finally:
            self.open_sockets -= 1
            self._quotas.release(host, self.listener_name)
