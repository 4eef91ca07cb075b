"""A Kafka binary-protocol TCP server: frames in, handlers, responses out in request order.

    server = KafkaServer({3: metadata_handler, 1: fetch_handler}, host="127.0.0.1", port=0)
    await server.bind()            # server.port is known from here on
    await server.start()           # accept connections
    ...
    await server.close()           # stop accepting, finish in-flight requests, close

A handler is ``async handler(ctx, request) -> response`` (``ctx`` is a RequestContext), or an
ApiHandler wrapping one with a version range and an error-response builder. It may return
NO_RESPONSE (Produce with acks=0) or raise CloseConnection (what Kafka does when an acks=0
produce fails). ApiVersions is answered by the server itself from the registry.

What the server does, and the Kafka behaviour it copies (SocketServer's Processor, RequestChannel,
KafkaApis):

* Frames are size-prefixed; a size outside 0..socket.request.max.bytes closes the connection
  (Kafka's InvalidReceiveException), logged with the peer.
* One request at a time per connection, as Kafka mutes a channel from a request's read to its
  response's send: the reader stops reading the socket while ``max_in_flight_per_connection``
  (default 1) requests are pending. With a higher setting, pipelined requests run concurrently;
  responses are always written strictly in request order.
* Kafka's admission rules (``kafkawire.net.admission``): max.connections, max.connections.per.ip
  and its overrides, queued.max.request.bytes.
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
  nothing to say). Logged with the traceback.
* A connection with nothing in flight and no bytes either way for connections.max.idle.ms is
  closed (Selector's idle expiry).
* ``close()`` stops accepting, stops reading, lets in-flight handlers finish and their
  responses go out (up to a timeout), then closes every connection.
* Listener security (``kafkawire.net.security``): an SSL or SASL_SSL listener runs the TLS
  handshake before the connection is admitted (the event loop's TLS; a failed one is logged as
  Kafka's "Failed authentication ... (SSL handshake failed)" and closed); a SASL listener authenticates each
  connection before anything but ApiVersions and SaslHandshake/SaslAuthenticate is read
  (``kafkawire.net.authentication``). ``RequestContext.principal`` says who is asking.
"""
from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from kafkawire.net.admission import AdmissionLimits, ConnectionQuotas, RequestMemoryPool
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import DecodeError, EncodeError
from kafkawire.protocol.framing import (DEFAULT_MAX_FRAME, FrameReader, decode_request, encode_response,
                                        peek_request_api)

__all__ = ["KafkaServer", "RequestContext", "ApiHandler", "NO_RESPONSE", "CloseConnection",
           "top_level_error_response", "DEFAULT_CONNECTIONS_MAX_IDLE_MS"]

log = logging.getLogger(__name__)

API_VERSIONS = 18
DEFAULT_CONNECTIONS_MAX_IDLE_MS = 10 * 60 * 1000       # SocketServerConfigs.CONNECTIONS_MAX_IDLE_MS_DEFAULT
DEFAULT_MAX_IN_FLIGHT = 1             # Kafka mutes a channel until its request is answered
# ApiVersionsRequest.isValid (KIP-511): client software name and version, v3+.
_SOFTWARE_RE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")
# ApiVersions v5 adds ClusterId/NodeId checks (KIP-1242) that this server does not make.
_API_VERSIONS_MAX = 4


class _NoResponse:
    def __repr__(self):
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


class CloseConnection(Exception):
    """Raised by a handler to close the connection instead of answering (after earlier responses)."""


@dataclass(frozen=True)
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    peer: tuple            # (host, port) of the client
    listener_name: str
    connection_id: str     # "local_host:port-peer_host:port-n", as Kafka names connections
    header: Any = None     # the decoded RequestHeader
    principal: str = "User:ANONYMOUS"      # KafkaPrincipal: User:<SASL name> or User:<TLS subject DN>
    security_protocol: str = "PLAINTEXT"


Handler = Callable[[RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True)
class ApiHandler:
    handle: Handler
    min_version: int | None = None       # default: the lowest version we have a schema for
    max_version: int | None = None       # default: the highest stable version we have a schema for
    error_response: Callable[[RequestContext, Any, int], Any] | None = None   # (ctx, request, error code)


def top_level_error_response(response_cls, version: int, error_code: int):
    """A default response carrying ``error_code`` in its top-level ErrorCode, or None if the
    version has no top-level error code."""
    for f in response_cls._FIELDS:
        if f.py_name == "error_code" and f.present(version):
            response = response_cls()
            response.error_code = error_code
            return response
    return None


class _Registered:
    __slots__ = ("key", "handler", "low", "high", "response_cls")

    def __init__(self, key, handler: ApiHandler, low, high, response_cls):
        self.key, self.handler, self.low, self.high, self.response_cls = key, handler, low, high, response_cls


def _register(handlers: dict) -> dict[int, _Registered]:
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
        stable_high = api.max_version - (1 if api.request.LATEST_VERSION_UNSTABLE else 0)
        low = api.min_version if handler.min_version is None else max(handler.min_version, api.min_version)
        high = stable_high if handler.max_version is None else min(handler.max_version, api.max_version)
        if low > high:
            raise ValueError(f"API key {key}: version range {low}..{high} is empty")
        out[key] = _Registered(key, handler, low, high, api.response)
    return out


class KafkaServer:
    def __init__(self, handlers: dict, *, host: str = "127.0.0.1", port: int = 0,
                 listener_name: str = "PLAINTEXT", max_request_bytes: int = DEFAULT_MAX_FRAME,
                 connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS,
                 max_in_flight_per_connection: int = DEFAULT_MAX_IN_FLIGHT,
                 api_versions_max_version: int = _API_VERSIONS_MAX, admission: AdmissionLimits | None = None,
                 security=None, scram_lookup=None, tls_handshake_timeout_ms: int = 10_000):
        if max_in_flight_per_connection < 1:
            raise ValueError("max_in_flight_per_connection must be at least 1")
        if security is not None and security.uses_sasl:
            from kafkawire.net.authentication import sasl_handlers
            handlers = {**sasl_handlers(), **handlers}      # advertised in ApiVersions
        self._registry = _register(handlers)
        self.host, self._port = host, port
        self.listener_name = listener_name
        self.max_request_bytes = max_request_bytes
        self.connections_max_idle_ms = connections_max_idle_ms
        self.max_in_flight = max_in_flight_per_connection
        self.api_versions_max_version = min(api_versions_max_version, _API_VERSIONS_MAX)
        self.admission = admission or AdmissionLimits()
        # kafkawire.net.security.ListenerSecurity (None: PLAINTEXT); the TLS context is built
        # here so that a bad key store fails at construction, naming its key.
        self.security = security
        self.ssl_context = None
        if security is not None and security.uses_ssl:
            from kafkawire.net.security import server_ssl_context
            self.ssl_context = server_ssl_context(security)
        self.scram_lookup = scram_lookup         # (mechanism, user) -> stored SCRAM credential or None
        self.tls_handshake_timeout_ms = tls_handshake_timeout_ms
        self._quotas: ConnectionQuotas | None = None         # made on the loop that serves
        self.memory_pool: RequestMemoryPool | None = None
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[_Connection] = set()
        self._next_connection = 0
        self._closing = False
        # Fills supported/finalized features into ApiVersions answers (a KRaft node's kraft.version).
        self.api_versions_features: Callable[[Any], None] | None = None

    # -- registry --

    def api_versions(self) -> list[tuple[int, int, int]]:
        """(api_key, min_version, max_version) of every API this server answers, ApiVersions included."""
        apis = {r.key: (r.key, r.low, r.high) for r in self._registry.values()}
        av = api_table()[API_VERSIONS]
        apis[API_VERSIONS] = (API_VERSIONS, av.min_version, min(av.max_version, self.api_versions_max_version))
        return [apis[k] for k in sorted(apis)]

    def register(self, key: int, handler) -> None:
        """Add or replace a handler; connections see it from their next request."""
        self._registry.update(_register({key: handler}))

    # -- lifecycle --

    async def bind(self) -> None:
        if self._server is None:
            self._quotas = ConnectionQuotas(self.admission)
            self.memory_pool = RequestMemoryPool(self.admission.queued_max_request_bytes)
            tls = {} if self.ssl_context is None else {
                "ssl": self.ssl_context, "ssl_handshake_timeout": self.tls_handshake_timeout_ms / 1000}
            self._server = await asyncio.start_server(self._accept, self.host, self._port, start_serving=False, **tls)

    async def start(self) -> None:
        await self.bind()
        await self._server.start_serving()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the server is not bound yet; call bind() or start()")
        return self._server.sockets[0].getsockname()[1]

    async def close(self, timeout_ms: int = 5000) -> None:
        """Stop accepting; finish what is in flight (up to ``timeout_ms``); close every connection."""
        self._closing = True
        if self._server is not None:
            self._server.close()
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

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:
            writer.close()
            return
        host = (writer.get_extra_info("peername") or ("?",))[0]
        if not await self._quotas.admit(host):
            writer.transport.abort()
            return
        try:
            if self._closing:
                writer.close()
                return
            conn = _Connection(self, reader, writer, self._next_connection)
            self._next_connection += 1
            self._connections.add(conn)
            conn.task = asyncio.current_task()
            try:
                await conn.run()
            finally:
                self._connections.discard(conn)
                conn.give_back_memory()
        finally:
            await self._quotas.release(host)


class _Frames(FrameReader):
    def feed_until_error(self, data: bytes):
        """The whole frames in ``data`` and, if a bad size follows them, the error.

        FrameReader raises at a bad size and keeps the bytes unconsumed; the frames before it
        are still to be answered, as Kafka answers them before it reads the bad size.
        """
        try:
            return self.feed(data), None
        except DecodeError as exc:
            good = FrameReader(self.max_frame).feed(bytes(self._buffer[:exc.offset]))
            return good, exc

    def partial_frame_bytes(self) -> int:
        """What the frame being read will take in memory once whole: its declared size (checked
        when fed) plus the size field, or the bytes of a size field not yet whole."""
        if len(self._buffer) < 4:
            return len(self._buffer)
        return int.from_bytes(self._buffer[:4], "big", signed=True) + 4


_END = object()


class _Connection:
    def __init__(self, server: KafkaServer, reader, writer, index: int):
        self.server = server
        self.reader, self.writer = reader, writer
        peer = writer.get_extra_info("peername") or ("?", 0)
        local = writer.get_extra_info("sockname") or ("?", 0)
        self.peer = (peer[0], peer[1])
        self.id = f"{local[0]}:{local[1]}-{peer[0]}:{peer[1]}-{index}"
        self.task: asyncio.Task | None = None
        self._queue: asyncio.Queue = asyncio.Queue(maxsize=server.max_in_flight)
        self._in_flight = 0
        self._slot_free = asyncio.Event()       # set while fewer than max_in_flight are pending
        self._slot_free.set()
        self._held_bytes = 0                    # taken from the server's memory pool
        self._unanswered_bytes = 0              # frames of the requests read and not yet answered
        self._answering: asyncio.Future | None = None   # the handler whose answer the writer awaits
        self._frames = _Frames(server.max_request_bytes)
        self._reading_done = False
        self._read_task: asyncio.Task | None = None
        self._last_activity = time.monotonic()
        from kafkawire.net.authentication import connection_principal, sasl_session
        self.sasl = sasl_session(server)                 # None unless the listener is SASL_*
        self.principal = connection_principal(writer)     # TLS client certificate, else ANONYMOUS
        self.security_protocol = server.security.protocol if server.security is not None else "PLAINTEXT"

    # -- control --

    def stop_reading(self) -> None:
        if self._read_task is not None and not self._read_task.done():
            self._read_task.cancel()

    def abort(self) -> None:
        self.stop_reading()
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.writer.transport.abort()

    # -- main --

    async def run(self) -> None:
        log.debug("accepted connection %s", self.id)
        self._read_task = asyncio.create_task(self._read_loop())
        write_task = asyncio.create_task(self._write_loop())
        try:
            await asyncio.wait({self._read_task, write_task}, return_when=asyncio.FIRST_COMPLETED)
            if write_task.done():
                # The writer stopped (a handler asked to close, the peer went away, or a write
                # failed): nothing more will be answered, so stop reading.
                self.stop_reading()
            await asyncio.gather(self._read_task, return_exceptions=True)
            await write_task
        except asyncio.CancelledError:
            self._read_task.cancel()
            write_task.cancel()
            raise
        finally:
            self._cancel_pending()
            self.writer.close()
            try:
                await asyncio.wait_for(self.writer.wait_closed(), 1)
            except (asyncio.TimeoutError, ConnectionError, OSError):
                pass
            log.debug("closed connection %s", self.id)

    def _cancel_pending(self) -> None:
        """Cancel every handler still running for this connection, the one whose answer the
        writer awaits included (a long-poll fetch of a client that went away ends now)."""
        if self._answering is not None:
            self._answering.cancel()
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is not _END:
                item[1].cancel()

    def _account_memory(self) -> None:
        """Hold in the server's pool the unanswered requests plus the whole of the frame being
        read, as Kafka allocates a frame's buffer when it has read its size."""
        target = self._unanswered_bytes + self._frames.partial_frame_bytes()
        delta, self._held_bytes = target - self._held_bytes, target
        if delta > 0:
            self.server.memory_pool.take(delta)
        elif delta < 0:
            self.server.memory_pool.give_back(-delta)

    def give_back_memory(self) -> None:
        self.server.memory_pool.give_back(self._held_bytes)
        self._held_bytes = self._unanswered_bytes = 0

    def _finish_reading(self) -> None:
        self._reading_done = True
        try:
            self._queue.put_nowait(_END)
        except asyncio.QueueFull:
            pass        # the writer sees _reading_done once it has drained the queue

    async def _read_loop(self) -> None:
        frames = self._frames
        idle = self.server.connections_max_idle_ms / 1000
        try:
            while True:
                if frames.pending == 0:
                    # queued.max.request.bytes: a new frame waits for room; one being read goes on.
                    await self.server.memory_pool.wait_for_room()
                wait = max(self._last_activity + idle - time.monotonic(), 0)
                try:
                    data = await asyncio.wait_for(self.reader.read(65536), timeout=wait)
                except asyncio.TimeoutError:
                    if self._in_flight == 0 and time.monotonic() - self._last_activity >= idle:
                        log.info("closing idle connection %s from %s:%s (connections.max.idle.ms=%d)",
                                 self.id, *self.peer, self.server.connections_max_idle_ms)
                        return
                    continue
                except (ConnectionError, OSError) as exc:
                    log.info("connection %s from %s:%s failed: %s", self.id, *self.peer, exc)
                    return
                if not data:
                    self._cancel_pending()      # the peer is gone: nobody to answer (Kafka closes on EOF)
                    return
                self._last_activity = time.monotonic()
                good, error = frames.feed_until_error(data)
                self._unanswered_bytes += sum(len(p) + 4 for p in good)
                self._account_memory()
                for payload in good:
                    if not await self._dispatch(payload):
                        return
                if error is not None:
                    log.warning("closing connection %s from %s:%s: invalid receive: %s",
                                self.id, *self.peer, error.reason)
                    return
        except (asyncio.CancelledError, _PeerClosed):
            return
        finally:
            self._finish_reading()

    async def _dispatch(self, payload: bytes) -> bool:
        """Start handling one request; False means close the connection after earlier responses."""
        server = self.server
        if self.sasl is not None and not self.sasl.complete:
            from kafkawire.net.authentication import sasl_dispatch
            return await sasl_dispatch(self, payload)
        try:
            api_key, api_version, correlation_id = peek_request_api(payload)
        except DecodeError as exc:
            log.warning("closing connection %s from %s:%s: malformed request header: %s", self.id, *self.peer, exc)
            return False
        if api_key == API_VERSIONS:
            return await self._api_versions(payload, api_version, correlation_id)
        registered = server._registry.get(api_key)
        if registered is None or not registered.low <= api_version <= registered.high:
            what = "is not enabled" if registered is None else \
                f"which is not enabled (versions {registered.low} to {registered.high} are)"
            log.warning("closing connection %s from %s:%s: received request api key %d with version %d %s",
                        self.id, *self.peer, api_key, api_version, what)
            return False
        try:
            request = decode_request(payload)
        except DecodeError as exc:
            log.warning("closing connection %s from %s:%s: error getting request for api key %d version %d: %s",
                        self.id, *self.peer, api_key, api_version, exc)
            return False
        ctx = self._context(request)
        await self._enqueue(ctx, asyncio.create_task(self._handle(registered, ctx, request.body)), len(payload) + 4)
        return True

    def _context(self, request) -> RequestContext:
        header = request.header
        return RequestContext(request.api_key, request.api_version, request.correlation_id,
                              header.client_id or "", self.peer, self.server.listener_name, self.id, header,
                              self.principal, self.security_protocol)

    async def _enqueue(self, ctx, task, size: int) -> None:
        """Queue a task that yields the response frame (or NO_RESPONSE), in request order; then
        wait (not reading the socket) until fewer than max_in_flight requests are pending.
        ``size`` is the request's frame, given back to the memory pool once it is answered."""
        self._in_flight += 1
        if self._in_flight >= self.server.max_in_flight:
            self._slot_free.clear()
        await self._queue.put((ctx, task, size))
        while not self._slot_free.is_set():
            # Muted, as Kafka's channel is; but a peer that closes is noticed, and what it was
            # waiting for (a long-poll fetch) is cancelled instead of running to its timeout.
            try:
                await asyncio.wait_for(self._slot_free.wait(), _MUTED_EOF_POLL_S)
            except asyncio.TimeoutError:
                if _peer_closed(self.reader):
                    self._cancel_pending()
                    raise _PeerClosed() from None

    async def _api_versions(self, payload, api_version, correlation_id) -> bool:
        from kafkawire.messages.api_versions_response import ApiVersion, ApiVersionsResponse
        from kafkawire.messages.api_versions_request import ApiVersionsRequest
        apis = self.server.api_versions()
        own = next(a for a in apis if a[0] == API_VERSIONS)
        if not own[1] <= api_version <= own[2]:
            # RequestContext.isUnsupportedApiVersionsRequest: not parsed, answered in v0.
            response = ApiVersionsResponse(error_code=Errors.UNSUPPORTED_VERSION,
                                           api_keys=[ApiVersion(api_key=API_VERSIONS, min_version=own[1],
                                                                max_version=own[2])])
            ctx = RequestContext(API_VERSIONS, api_version, correlation_id, "", self.peer,
                                 self.server.listener_name, self.id)
            log.debug("connection %s from %s:%s: ApiVersions v%d is not supported; answering with v0",
                     self.id, *self.peer, api_version)
            await self._enqueue(ctx, _done(encode_response(response, 0, correlation_id)), len(payload) + 4)
            return True
        try:
            request = decode_request(payload)
        except DecodeError as exc:
            log.warning("closing connection %s from %s:%s: error getting request for api key 18 version %d: %s",
                        self.id, *self.peer, api_version, exc)
            return False
        body: ApiVersionsRequest = request.body
        if api_version >= 3 and not (_SOFTWARE_RE.match(body.client_software_name)
                                     and _SOFTWARE_RE.match(body.client_software_version)):
            response = ApiVersionsResponse(error_code=Errors.INVALID_REQUEST)
        else:
            response = ApiVersionsResponse(api_keys=[ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                                     for k, lo, hi in apis])
            if self.server.api_versions_features is not None:
                self.server.api_versions_features(response)
        await self._enqueue(self._context(request), _done(encode_response(response, api_version, correlation_id)),
                            len(payload) + 4)
        return True

    async def _handle(self, registered: _Registered, ctx: RequestContext, request):
        """Run the handler and encode its answer: the response frame, or NO_RESPONSE."""
        try:
            response = await registered.handler.handle(ctx, request)
            if response is NO_RESPONSE:
                return response
            return encode_response(response, ctx.api_version, ctx.correlation_id)
        except (CloseConnection, asyncio.CancelledError):
            raise
        except Exception as exc:
            what = "does not encode" if isinstance(exc, EncodeError) else "raised"
            log.exception("the handler for api key %d v%d (correlation id %d) from %s:%s %s",
                          ctx.api_key, ctx.api_version, ctx.correlation_id, *ctx.peer, what)
        response = self._error_response(registered, ctx, request)
        if response is not None:
            try:
                return encode_response(response, ctx.api_version, ctx.correlation_id)
            except EncodeError:
                log.exception("the error response to api key %d v%d does not encode either", ctx.api_key,
                              ctx.api_version)
        raise CloseConnection(f"no error response can carry UNKNOWN_SERVER_ERROR for {registered.response_cls.NAME} "
                              f"v{ctx.api_version}")

    @staticmethod
    def _error_response(registered, ctx, request):
        code = int(Errors.UNKNOWN_SERVER_ERROR)
        if registered.handler.error_response is not None:
            try:
                return registered.handler.error_response(ctx, request, code)
            except Exception:
                log.exception("error_response for api key %d failed too", ctx.api_key)
                return None
        return top_level_error_response(registered.response_cls, ctx.api_version, code)

    async def _write_loop(self) -> None:
        while True:
            if self._reading_done and self._queue.empty():
                return
            item = await self._queue.get()
            if item is _END:
                return
            ctx, task, size = item
            self._answering = task
            try:
                frame = await task
            except CloseConnection as exc:
                log.warning("closing connection %s from %s:%s at correlation id %d: %s",
                            self.id, *self.peer, ctx.correlation_id, exc)
                return
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():
                    raise
                return          # the handler was cancelled (peer gone, or forced shutdown)
            finally:
                self._answering = None
                self._in_flight -= 1
                self._unanswered_bytes -= size
                self._account_memory()
                if self._in_flight < self.server.max_in_flight:
                    self._slot_free.set()
            if frame is NO_RESPONSE:
                continue
            try:
                self.writer.write(frame)
                await self.writer.drain()
            except (ConnectionError, OSError) as exc:
                log.info("connection %s from %s:%s failed while writing: %s", self.id, *self.peer, exc)
                return
            self._last_activity = time.monotonic()


_MUTED_EOF_POLL_S = 0.25


class _PeerClosed(Exception):
    """The peer closed its side while the connection was muted."""


def _peer_closed(reader: asyncio.StreamReader) -> bool:
    """Whether the peer has closed its side. A muted connection reads nothing, so this looks at
    what the transport already saw (StreamReader's EOF flag, set by feed_eof)."""
    return bool(getattr(reader, "_eof", False)) or reader.exception() is not None


def _done(result) -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()
    future.set_result(result)
    return future
