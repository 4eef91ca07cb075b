"""One connection of a KafkaServer (kafkawire.net.server, whose docstring lists the Kafka
behaviour copied): a reader task that splits frames and starts each request's handler, a writer
task that sends the answers strictly in request order, and between them the in-flight gate:
while ``max_in_flight_per_connection`` requests (one by default, as Kafka mutes a channel) are
unanswered, the reader reads nothing more from the socket. ApiVersions is answered here, from
the server's registry; a SASL listener's connection goes through kafkawire.net.authentication
until it has authenticated.
"""
from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import TYPE_CHECKING

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.api_versions_response import ApiVersion, ApiVersionsResponse
from kafkawire.net.authorizer_not_ready import AuthorizerNotReady, log_not_loaded
from kafkawire.net.authentication import authenticated_step, connection_principal, sasl_dispatch, sasl_session
from kafkawire.net.error_responses import failed_request_response
from kafkawire.net.file_send import write_file_frame
from kafkawire.net.reauthentication import SessionClock
from kafkawire.net.request_metrics import HANDLED, STARTED, now, request_times
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import DecodeError, EncodeError
from kafkawire.protocol.file_range import FileFrame
from kafkawire.protocol.framing import FrameReader, decode_request, encode_response, peek_request_api
from kafkawire.protocol.handler import NO_RESPONSE, ApiHandler, CloseConnection, RequestContext, Throttled

if TYPE_CHECKING:       # the server imports this module to make its connections
    from kafkawire.net.server import KafkaServer

log = logging.getLogger(__name__)

API_VERSIONS = 18
API_VERSIONS_NAME = "ApiVersions"
# ApiVersions v5 adds ClusterId/NodeId checks (KIP-1242) that this server does not make.
API_VERSIONS_MAX = 4
# ApiVersionsRequest.isValid (KIP-511): client software name and version, v3+.
_SOFTWARE_RE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


class Registered:
    """A handler as the server registered it: its API key, its version range, its response class,
    and the lowest version ApiVersions advertises (``advertised_low``, below ``low`` only for
    ApiHandler.advertised_min_version)."""
    __slots__ = ("key", "handler", "low", "high", "response_cls", "advertised_low", "name")

    def __init__(self, key, handler: ApiHandler, low, high, response_cls, advertised_low=None):
        self.key, self.handler, self.low, self.high, self.response_cls = key, handler, low, high, response_cls
        self.advertised_low = low if advertised_low is None else min(advertised_low, low)
        # Kafka's ApiKeys name, the ``request`` of its request metrics: "Produce" of ProduceResponse
        self.name = response_cls.NAME.removesuffix("Response")


class _Frames(FrameReader):
    def feed_until_error(self, data: bytes, max_frames: int | None = None):
        """The whole frames in ``data`` (at most ``max_frames``) and, if a bad size follows
        them, the error.

        The frames before a bad size are still to be answered, as Kafka answers them before it
        reads the bad size. The buffer is dropped then: nothing more is read, and the bad size
        is never held.
        """
        frames, error = self.take_frames(data, max_frames)
        if error is not None:
            self.discard()
        return frames, error


_END = object()
_INT32_MAX = 2**31 - 1
# All the stream holds (it stops reading the socket past twice acceptor.STREAM_LIMIT): a 1 MB
# produce request in a few reads rather than sixteen of 64 KiB, each a pass of the read loop.
_READ_AT_MOST = 1 << 20


class Connection:
    """One client connection of a KafkaServer (``server``): its reader, its ordered writer and the
    in-flight gate between them."""

    def __init__(self, server: KafkaServer, reader, writer, index: int):
        self.server = server
        self.reader, self.writer = reader, writer
        peer = writer.get_extra_info("peername") or ("?", 0)
        local = writer.get_extra_info("sockname") or ("?", 0)
        self.peer = (peer[0], peer[1])
        self.id = f"{local[0]}:{local[1]}-{peer[0]}:{peer[1]}-{index}"
        self.task: asyncio.Task | None = None
        # Requests in order, each (ctx, task yielding its answer, frame size), then _END. Unbounded:
        # the in-flight gate in _enqueue (max_in_flight pending, one by default) is what bounds it.
        self._queue: asyncio.Queue = asyncio.Queue()
        self._in_flight = 0
        self._slot_free = asyncio.Event()       # set while fewer than max_in_flight are pending
        self._slot_free.set()
        self._held_bytes = 0                    # taken from the server's memory pool
        self._unanswered_bytes = 0              # frames of the requests read and not yet answered
        self._answering: asyncio.Future | None = None   # the handler whose answer the writer awaits
        self._frames = _Frames(server.max_request_bytes)
        self._read_task: asyncio.Task | None = None
        # Set with the read task's cancel: asyncio.wait_for (Python 3.11) may swallow a cancel that
        # comes as what it waits for completes, and the loop must not then go on reading.
        self._reading_stopped = False
        self._last_activity = time.monotonic()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._peer_gone = False                 # seen closed while muted (MutedConnections)
        # A client quota's throttle (KIP-219): nothing is read before this time (time.monotonic()).
        self._muted_until = 0.0
        self.sasl = sasl_session(server)                 # None unless the listener is SASL_*
        # TLS client certificate, else ANONYMOUS; None: no ssl.principal.mapping.rules rule applied.
        self.principal = connection_principal(writer, server.security.principal_mapper
                                              if server.security is not None else None)
        self.token_authenticated = False                   # SASL/SCRAM with a delegation token (tokenauth)
        self.session_clock = SessionClock()                # the SASL session's expiry (KIP-368)
        self.security_protocol = server.security.protocol if server.security is not None else "PLAINTEXT"
        self.client_software = ("unknown", "unknown")         # ClientInformation.EMPTY until an ApiVersions

    # -- control --

    def stop_reading(self) -> None:
        self._reading_stopped = True
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
                async with asyncio.timeout(1):
                    await self.writer.wait_closed()
            except (asyncio.TimeoutError, ConnectionError, OSError):
                pass
            log.debug("closed connection %s", self.id)
            for listener in self.server.connection_closed_listeners:   # Kafka's ConnectionDisconnectListeners
                listener(self.id)

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
        self._queue.put_nowait(_END)

    async def _read_loop(self) -> None:
        frames = self._frames
        self._arm_idle_timer()
        try:
            # Kafka fails the connection when it builds the principal (the request's context);
            # nothing of it can be served, so it closes before reading.
            while not self._reading_stopped and self.principal is not None:
                if frames.pending == 0:
                    # queued.max.request.bytes: a new frame waits for room; one being read goes on.
                    await self.server.memory_pool.wait_for_room()
                if self._muted_until > time.monotonic():
                    await self._throttled()
                try:
                    data = await self.reader.read(_READ_AT_MOST)
                except (ConnectionError, OSError) as exc:
                    log.info("connection %s from %s:%s failed: %s", self.id, *self.peer, exc)
                    return
                if not data:
                    self._cancel_pending()      # the peer is gone: nobody to answer (Kafka closes on EOF)
                    return
                self._last_activity = time.monotonic()
                if not await self._take_frames(data):
                    return
        except (asyncio.CancelledError, _PeerClosed):
            return
        finally:
            self._idle_timer.cancel()
            self._finish_reading()

    # connections.max.idle.ms, as Kafka's Selector expires idle channels: one timer a connection,
    # re-armed when it finds the connection active, rather than a timeout around every read (two
    # timer handles a request, a fifth of a small request's CPU).
    def _arm_idle_timer(self) -> None:
        idle = self.server.connections_max_idle_ms / 1000
        delay = max(self._last_activity + idle - time.monotonic(), 0) if self._in_flight == 0 else idle
        self._idle_timer = asyncio.get_running_loop().call_later(delay, self._idle_check)

    def _idle_check(self) -> None:
        if self._reading_stopped:
            return
        idle = self.server.connections_max_idle_ms / 1000
        if self._in_flight == 0 and time.monotonic() - self._last_activity >= idle:
            log.info("closing idle connection %s from %s:%s (connections.max.idle.ms=%d)",
                     self.id, *self.peer, self.server.connections_max_idle_ms)
            self.stop_reading()
            return
        self._arm_idle_timer()

    def throttle(self, throttle_ms: int) -> None:
        """Read nothing for ``throttle_ms`` from now (Kafka's ThrottledChannel: the throttle
        starts as the throttled answer is made, and the channel is unmuted when it ends)."""
        if throttle_ms > 0:
            self._muted_until = max(self._muted_until, time.monotonic() + throttle_ms / 1000)

    async def _throttled(self) -> None:
        """Wait out the throttle, noticing a peer that closes meanwhile; the wait is not idle time."""
        while (remaining := self._muted_until - time.monotonic()) > 0:
            await asyncio.sleep(min(remaining, _MUTED_EOF_POLL_S))
            if _peer_closed(self.reader):
                self._cancel_pending()
                raise _PeerClosed()
        self._last_activity = time.monotonic()

    def _authenticating(self) -> bool:
        return self.sasl is not None and not self.sasl.complete

    async def _take_frames(self, data: bytes) -> bool:
        """Split ``data`` into frames and dispatch them; False closes the connection.

        Before a SASL connection has authenticated, frames are taken one at a time and bounded by
        sasl.server.max.receive.size, as Kafka's SaslServerAuthenticator reads one bounded receive
        at a time: a larger size closes the connection once its 4 bytes are read, the body unread
        (CVE-2022-34917). Frames after the one that completes authentication are bounded by
        socket.request.max.bytes."""
        frames = self._frames
        while True:
            authenticating = self._authenticating()
            frames.max_frame, frames.limit_name = self._frame_limit(authenticating)
            good, error = frames.feed_until_error(data, 1 if authenticating else None)
            data = b""
            self._unanswered_bytes += sum(len(p) + 4 for p in good)
            self._account_memory()
            for payload in good:
                if not await self._dispatch(payload):
                    return False
            if error is not None:
                self._log_invalid_receive(authenticating, error.reason)
                if authenticating:      # Kafka's SaslAuthenticationException: a delayed close
                    await self.answer_failed_authentication(self.raw_context(), NO_RESPONSE, 0)
                return False
            if not (authenticating and good):
                return True

    def _frame_limit(self, authenticating: bool) -> tuple[int, str]:
        if not authenticating:
            return self.server.max_request_bytes, "socket.request.max.bytes"
        limit = self.server.security.sasl_server_max_receive_size
        # -1 is NetworkReceive.UNLIMITED: no bound but the int32 size field's.
        return (_INT32_MAX if limit == -1 else limit), "sasl.server.max.receive.size"

    def _log_invalid_receive(self, authenticating: bool, reason: str) -> None:
        if authenticating:
            log.info("Failed authentication with /%s (listener %s: Failing SASL authentication due to invalid "
                     "receive size: %s)", self.peer[0], self.server.listener_name, reason)
        else:
            log.warning("closing connection %s from %s:%s: invalid receive: %s", self.id, *self.peer, reason)

    async def _dispatch(self, payload: bytes) -> bool:
        """Start handling one request; False means close the connection after earlier responses."""
        received = now()
        server = self.server
        if self._authenticating():
            return await sasl_dispatch(self, payload)
        try:
            api_key, api_version, correlation_id = peek_request_api(payload)
        except DecodeError as exc:
            log.warning("closing connection %s from %s:%s: malformed request header: %s", self.id, *self.peer, exc)
            return False
        if self.sasl is not None:
            step = authenticated_step(self, api_key)
            if step != "serve":
                return step == "reauthenticate" and await sasl_dispatch(self, payload)
        if api_key == API_VERSIONS:
            return await self.api_versions(payload, api_version, correlation_id, received)
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
        ctx = self.context(request, len(payload), request_times(received))
        await self._enqueue(ctx, asyncio.create_task(self._handle(registered, ctx, request.body)), len(payload) + 4)
        return True

    def context(self, request, size: int = 0, timing: list | None = None) -> RequestContext:
        header = request.header
        return RequestContext(request.api_key, request.api_version, request.correlation_id,
                              header.client_id or "", self.peer, self.server.listener_name, self.id, header,
                              self.principal, self.security_protocol, size, self.token_authenticated,
                              client_software=self.client_software, timing=timing)

    def raw_context(self) -> RequestContext:
        """The context of what is not a request: a raw SASL token, a frame refused unread."""
        return RequestContext(-1, 0, -1, "", self.peer, self.server.listener_name, self.id)

    async def _enqueue(self, ctx, task, size: int) -> None:
        """Queue a task that yields the response frame (or NO_RESPONSE), in request order; then
        wait (not reading the socket) until fewer than max_in_flight requests are pending.
        ``size`` is the request's frame, given back to the memory pool once it is answered."""
        self._in_flight += 1
        if self._in_flight >= self.server.max_in_flight:
            self._slot_free.clear()
        self._queue.put_nowait((ctx, task, size))
        if self._slot_free.is_set():
            return
        # Muted, as Kafka's channel is; but a peer that closes is noticed (MutedConnections), and
        # what it was waiting for (a long-poll fetch) is cancelled instead of running to its timeout.
        muted = self.server.muted_connections
        muted.add(self)
        try:
            await self._slot_free.wait()
        finally:
            muted.discard(self)
        if self._peer_gone:
            raise _PeerClosed()

    def peer_closed_while_muted(self) -> None:
        self._peer_gone = True
        self._cancel_pending()
        self._slot_free.set()

    async def answer(self, ctx: RequestContext, frame: bytes, size: int) -> None:
        """Queue an answer already encoded (``size``: its request's frame, as for _enqueue)."""
        await self._enqueue(ctx, _done(frame), size)

    async def answer_failed_authentication(self, ctx: RequestContext, frame, size: int) -> None:
        """Queue the answer to a failed authentication (NO_RESPONSE when Kafka sends none), held
        connection.failed.authentication.delay.ms, as Kafka's Selector holds a channel whose
        authentication failed (DelayedResponseAuthenticationException): the answer and the
        close that follows go out together after the delay, which slows a client guessing
        passwords. The writer closes the connection once it has sent it; the caller reads
        nothing more."""
        delay_ms = self.server.failed_authentication_delay_ms
        last = _LastAnswer(frame)
        held = _done(last) if delay_ms <= 0 else asyncio.ensure_future(_after(delay_ms / 1000, last))
        await self._enqueue(ctx, held, size)

    async def api_versions(self, payload, api_version, correlation_id, received: float | None = None) -> bool:
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
            # SocketServer registers a valid request's ClientInformation (KIP-511)
            self.client_software = (body.client_software_name, body.client_software_version)
            response = ApiVersionsResponse(api_keys=[ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                                     for k, lo, hi in apis])
            if self.server.api_versions_features is not None:
                self.server.api_versions_features(response)
                if api_version < 4:     # ApiVersionsResponse's alterFeatureLevel0 (KAFKA-17492)
                    response.supported_features = [f for f in response.supported_features if f.min_version != 0]
        ctx = self.context(request, timing=None if received is None else _answered_here(received))
        if received is not None:
            self.server.request_metrics.count_errors(API_VERSIONS, API_VERSIONS_NAME, api_version, response)
        await self._enqueue(ctx, _done(encode_response(response, api_version, correlation_id)), len(payload) + 4)
        return True

    async def _handle(self, registered: Registered, ctx: RequestContext, request):
        """Run the handler and encode its answer: the response frame, or NO_RESPONSE."""
        times = ctx.timing
        times[STARTED] = now()
        try:
            response = await registered.handler.handle(ctx, request)
            times[HANDLED] = now()
            if isinstance(response, Throttled):         # muted before the reader may go on
                self.throttle(response.throttle_ms)
                response = response.response
            if response is NO_RESPONSE:
                return response
            self.server.request_metrics.count_errors(ctx.api_key, registered.name, ctx.api_version, response)
            return encode_response(response, ctx.api_version, ctx.correlation_id, file_frame=True)
        except (CloseConnection, asyncio.CancelledError):
            raise
        except AuthorizerNotReady:        # a check before the ACLs are loaded: no traceback, it is no fault
            log_not_loaded(ctx.api_key, ctx)
        except Exception as exc:
            what = "does not encode" if isinstance(exc, EncodeError) else "raised"
            log.exception("the handler for api key %d v%d (correlation id %d) from %s:%s %s",
                          ctx.api_key, ctx.api_version, ctx.correlation_id, *ctx.peer, what)
        times[HANDLED] = now()
        response = self._error_response(registered, ctx, request)
        if response is not None:
            self.server.request_metrics.count_errors(ctx.api_key, registered.name, ctx.api_version, response)
            try:
                return encode_response(response, ctx.api_version, ctx.correlation_id)
            except EncodeError:
                log.exception("the error response to api key %d v%d does not encode either", ctx.api_key,
                              ctx.api_version)
        raise CloseConnection(f"no error response to {registered.response_cls.NAME} v{ctx.api_version}")

    @staticmethod
    def _error_response(registered, ctx, request):
        """The request's UNKNOWN_SERVER_ERROR answer: the handler's own, else Kafka's
        getErrorResponse of the request (kafkawire.net.error_responses); None closes."""
        try:
            return failed_request_response(registered.handler, ctx, request, int(Errors.UNKNOWN_SERVER_ERROR))
        except Exception:
            log.exception("the error response to api key %d failed too", ctx.api_key)
            return None

    async def _write_loop(self) -> None:
        while True:
            item = await self._queue.get()
            if item is _END:
                return
            ctx, task, size = item
            self._answering = task
            try:
                frame = await task
                ready = now()
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
            last = isinstance(frame, _LastAnswer)
            if last:
                frame = frame.frame
            elif frame is NO_RESPONSE:
                self._completed(ctx, ready, ready)
                continue
            try:
                if type(frame) is FileFrame:        # a fetch's records still in the log's files
                    await write_file_frame(self.writer, frame)
                elif frame is not NO_RESPONSE:
                    self.writer.write(frame)
                if last and self.writer.can_write_eof():
                    # The FIN in the same step, as Kafka sends the response and closes the
                    # channel in one call: the client reads the answer and the end together.
                    self.writer.write_eof()
                await self.writer.drain()
            except (ConnectionError, OSError) as exc:
                log.info("connection %s from %s:%s failed while writing: %s", self.id, *self.peer, exc)
                return
            if last:
                return
            self._completed(ctx, ready, now())
            self._last_activity = time.monotonic()

    def _completed(self, ctx: RequestContext, ready: float, sent: float) -> None:
        """The request metrics of an answered request (not of a SASL token: it has no timing)."""
        if ctx.timing is not None:
            registered = self.server._registry.get(ctx.api_key)
            name = API_VERSIONS_NAME if registered is None else registered.name
            self.server.request_metrics.completed(ctx.api_key, name, ctx.api_version, ctx.timing, ready, sent)


_MUTED_EOF_POLL_S = 0.25


class MutedConnections:
    """The server's connections muted while their requests are answered. A muted connection
    reads nothing, so a peer that closes meanwhile is seen only in what its transport already
    got: every _MUTED_EOF_POLL_S, one timer for all of them (armed only while any is muted) looks,
    and cancels what a closed peer was waiting for."""

    def __init__(self):
        self._muted: set[Connection] = set()
        self._timer: asyncio.TimerHandle | None = None

    def add(self, connection: Connection) -> None:
        self._muted.add(connection)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(_MUTED_EOF_POLL_S, self._look)

    def discard(self, connection: Connection) -> None:
        self._muted.discard(connection)

    def _look(self) -> None:
        self._timer = None
        for connection in [c for c in self._muted if _peer_closed(c.reader)]:
            self._muted.discard(connection)
            connection.peer_closed_while_muted()
        if self._muted:
            self._timer = asyncio.get_running_loop().call_later(_MUTED_EOF_POLL_S, self._look)


class _PeerClosed(Exception):
    """The peer closed its side while the connection was muted."""


def _peer_closed(reader: asyncio.StreamReader) -> bool:
    """Whether the peer has closed its side. A muted connection reads nothing, so this looks at
    what the transport already saw (StreamReader's EOF flag, set by feed_eof)."""
    return bool(getattr(reader, "_eof", False)) or reader.exception() is not None


class _LastAnswer:
    """What the writer sends last (a frame or NO_RESPONSE) before it closes the connection."""
    __slots__ = ("frame",)

    def __init__(self, frame):
        self.frame = frame


async def _after(seconds: float, result):
    await asyncio.sleep(seconds)
    return result


def _answered_here(received: float) -> list:
    """The moments of a request answered by the connection itself (ApiVersions): no handler ran."""
    times = request_times(received)
    times[STARTED] = times[HANDLED] = now()
    return times


def _done(result) -> asyncio.Future:
    future = asyncio.get_running_loop().create_future()
    future.set_result(result)
    return future
