"""The broker's client quotas in front of its APIs (Kafka's QuotaFactory.QuotaManagers as
KafkaApis uses them): a produce, a fetch and a request quota manager
(kafkawire.net.client_quotas) with ``quota.window.num`` samples of
``quota.window.size.seconds``, their quotas read from the committed metadata image.

* Produce: every request's size (the frame's size field, Kafka's request.sizeInBytes) is recorded
  against the client's ``producer_byte_rate`` once the answer is ready; a throttle time over 0
  goes in the answer's throttle_time_ms (none with acks=0) and mutes the connection that long.
* Fetch from a consumer: ``max_bytes`` is first capped to what the quota allows in a window
  (maxValueInQuotaWindow); the answer's size is recorded against ``consumer_byte_rate``, and a
  throttled fetch is answered with no partitions, its size taken back out (kafkawire.broker.fetch).
  A follower's fetch is not a client's: it answers to the replication quotas instead
  (kafkawire.broker.replication_quotas), and is exempt from the request quota as in Kafka.
* ``request_percentage`` (ClientRequestQuotaManager): the share of one request-handler thread a
  client may use. Kafka measures the request thread's time; here the handler runs on the event
  loop, so what is measured is the thread CPU time (time.thread_time_ns) of the handler's own
  steps, between its awaits (``RequestTimer``), as a percentage of a second. Every API but the
  exempt ones (WriteTxnMarkers, a cluster action; a follower's Fetch) records it, SaslHandshake and
  SaslAuthenticate past authentication included (a re-authentication's own exchange is the
  connection's, as Kafka's authenticator handles it); a Produce with acks=0 records it without being throttled for it
  (KafkaApis). Its throttle time is capped at one window (``quota.window.size.seconds``), and
  Produce and Fetch take the larger of their two throttle times. Not measured: the time spent
  decoding, encoding and sending (Kafka's network thread time), and ApiVersions, which the
  connection answers itself.
* A forwarded request's answer (kafkawire.broker.forwarding) mutes the client's connection for
  the larger of the broker's request throttle and the answer's throttle_time_ms, which carries
  the controller's (its controller mutation quota: kafkawire.controller.mutation_quota), as
  KafkaApis.sendForwardedResponse does.
"""
from __future__ import annotations

import contextvars
import dataclasses
import time

from kafkawire.net.client_quotas import (CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE,
                                         ClientQuotaManager, QuotaIndexes, principal_user)
from kafkawire.protocol.handler import NO_RESPONSE, ApiHandler, Throttled
from kafkawire.protocol.primitives import EncodeBuffer

from .forwarding import FORWARDED_APIS

__all__ = ["BrokerQuotas", "RequestTimer", "PRODUCE", "FETCH"]

PRODUCE, FETCH = 0, 1
# WriteTxnMarkers (a cluster action: sendResponseExemptThrottle). SaslHandshake and SaslAuthenticate
# reach the handlers only past authentication (a re-authentication is the connection's), and are
# answered ILLEGAL_SASL_STATE through sendResponseMaybeThrottle: they count, as in Kafka.
REQUEST_QUOTA_EXEMPT = frozenset({27})
NANOS_TO_PERCENTAGE = 100.0 / 1e9       # ClientRequestQuotaManager.NANOS_TO_PERCENTAGE_PER_SECOND
_timer: contextvars.ContextVar = contextvars.ContextVar("kafkawire_request_timer", default=None)


class RequestTimer:
    """The thread CPU time a handler's coroutine takes in its own steps, awaits excluded: what
    stands here for Kafka's request thread time. ``run(coroutine)`` is awaited in its place."""
    __slots__ = ("ns", "_step_start")

    def __init__(self):
        self.ns = 0
        self._step_start: int | None = None

    @staticmethod
    def current() -> "RequestTimer | None":
        """The timer of the request this task is handling, if its time is being measured."""
        return _timer.get()

    def so_far_ns(self) -> int:
        running = 0 if self._step_start is None else time.thread_time_ns() - self._step_start
        return self.ns + running

    def run(self, coroutine):
        return _Timed(self, coroutine)


class _Timed:
    """Drives a coroutine step by step for its RequestTimer (what it awaits is passed up to the
    task unchanged; a cancel or an error thrown in is passed down)."""
    __slots__ = ("timer", "coroutine")

    def __init__(self, timer: RequestTimer, coroutine):
        self.timer, self.coroutine = timer, coroutine

    def __await__(self):
        timer, coroutine = self.timer, self.coroutine
        token = _timer.set(timer)
        value, error = None, None
        try:
            while True:
                timer._step_start = time.thread_time_ns()
                try:
                    yielded = coroutine.send(value) if error is None else coroutine.throw(error)
                except StopIteration as stop:
                    return stop.value
                finally:
                    timer.ns += time.thread_time_ns() - timer._step_start
                    timer._step_start = None
                value, error = None, None
                try:
                    value = yield yielded
                except BaseException as exc:        # a cancel: the coroutine decides what it means
                    error = exc
        finally:
            try:
                _timer.reset(token)
            except ValueError:          # finalized outside the task that ran it
                pass


class BrokerQuotas:
    """The quota managers of ``broker`` (its ``image()`` and ``config``)."""

    def __init__(self, broker, clock=None):
        c = broker.config
        self.image = broker.image
        self.produce = ClientQuotaManager(c.quota_window_num, c.quota_window_size_seconds, clock=clock)
        self.fetch = ClientQuotaManager(c.quota_window_num, c.quota_window_size_seconds, clock=clock)
        # ClientRequestQuotaManager: a throttle time is at most one window
        self.request = ClientQuotaManager(c.quota_window_num, c.quota_window_size_seconds, clock=clock,
                                          max_throttle_ms=c.quota_window_size_seconds * 1000)
        self.index = QuotaIndexes(broker.image, (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE))
        for manager in (self.produce, self.fetch, self.request):      # the throttle-time sensors' windows
            manager.throttle_samples, manager.throttle_window_ms = c.metrics_num_samples, c.metrics_sample_window_ms

    def wrap(self, handlers: dict) -> dict:
        """``handlers`` behind the quotas (outermost, so that a refused request counts too, as
        KafkaApis records every request): Produce through both of its quotas, Fetch timed for
        the request quota (kafkawire.broker.fetch applies both), the others through the request quota."""
        wrapped = {}
        for key, handler in handlers.items():
            if key == PRODUCE:
                wrapped[key] = self._wrapped(handler, self._produce)
            elif key == FETCH:
                wrapped[key] = self._wrapped(handler, self._timed_only)
            elif key in REQUEST_QUOTA_EXEMPT:
                wrapped[key] = handler
            else:
                wrapped[key] = self._wrapped(handler, self._request_quota)
        return wrapped

    @staticmethod
    def _wrapped(handler, through):
        """``handler`` (an ApiHandler, or a bare coroutine function as SaslHandshake's) behind ``through``."""
        inner = handler.handle if isinstance(handler, ApiHandler) else handler

        async def handle(ctx, request):
            return await through(inner, ctx, request)
        return dataclasses.replace(handler, handle=handle) if isinstance(handler, ApiHandler) else handle

    def _timing(self) -> bool:
        return self.index(REQUEST_PERCENTAGE).enabled != 0

    async def _timed_only(self, handle, ctx, request):
        if not self._timing():
            return await handle(ctx, request)
        return await RequestTimer().run(handle(ctx, request))

    async def _request_quota(self, handle, ctx, request):
        timer = RequestTimer() if self._timing() else None
        response = await (handle(ctx, request) if timer is None else timer.run(handle(ctx, request)))
        throttle_ms = 0 if timer is None else self.record_request_time(ctx, timer.ns)
        self._throttled_by(self.request, REQUEST_PERCENTAGE, ctx, throttle_ms)
        if ctx.api_key in FORWARDED_APIS:
            # sendForwardedResponse: the controller's throttle time (its controller mutation
            # quota) mutes the client's connection as the broker's own would
            throttle_ms = max(throttle_ms, getattr(response, "throttle_time_ms", 0))
        return _throttled(response, throttle_ms)

    def record_request_time(self, ctx, nanos: int) -> int:
        """Record a request's handler time against the client's request_percentage; the throttle time."""
        index = self.index(REQUEST_PERCENTAGE)
        if not index.enabled:
            return 0
        return self.request.record(index, principal_user(ctx.principal), ctx.client_id, nanos * NANOS_TO_PERCENTAGE)

    # -- Produce --

    async def _produce(self, handle, ctx, request):
        timer = RequestTimer() if self._timing() else None
        response = await (handle(ctx, request) if timer is None else timer.run(handle(ctx, request)))
        bandwidth_ms = self.produce.record(self.index(PRODUCER_BYTE_RATE), principal_user(ctx.principal),
                                           ctx.client_id, ctx.request_size)
        if timer is None:
            request_ms = 0
        elif request.acks == 0:       # recorded, never throttled for (KafkaApis.handleProduceRequest)
            self.record_request_time(ctx, timer.ns)
            request_ms = 0
        else:
            request_ms = self.record_request_time(ctx, timer.ns)
        self._record_throttle(ctx, bandwidth_ms, self.produce, PRODUCER_BYTE_RATE, request_ms)
        return _throttled(response, max(bandwidth_ms, request_ms))

    def _record_throttle(self, ctx, bandwidth_ms: int, bandwidth, quota: str, request_ms: int) -> None:
        """KafkaApis: the larger throttle is the one recorded, in its quota type's throttle-time
        (the request quota's when they are equal)."""
        if bandwidth_ms > request_ms:
            self._throttled_by(bandwidth, quota, ctx, bandwidth_ms)
        else:
            self._throttled_by(self.request, REQUEST_PERCENTAGE, ctx, request_ms)

    def _throttled_by(self, manager, quota: str, ctx, throttle_ms: int) -> None:
        if throttle_ms > 0:
            manager.throttled(self.index(quota), principal_user(ctx.principal), ctx.client_id, throttle_ms)

    # -- Fetch (a consumer's) --

    def fetch_enabled(self) -> bool:
        return self.index(CONSUMER_BYTE_RATE).enabled != 0

    def fetch_window_bytes(self, ctx) -> float:
        """The most one consumer fetch may return without certain throttling."""
        return self.fetch.max_value_in_window(self.index(CONSUMER_BYTE_RATE), principal_user(ctx.principal),
                                              ctx.client_id)

    def consumer_fetch_throttle(self, ctx, answer) -> int:
        """For a consumer's fetch about to be answered with ``answer()``: its request time so far
        and the response's size recorded (KafkaApis.handleFetchRequest); the larger throttle time.
        When it is over 0 the size is taken back out: the answer will carry no partitions."""
        timer = RequestTimer.current()
        request_ms = 0 if timer is None else self.record_request_time(ctx, timer.so_far_ns())
        index = self.index(CONSUMER_BYTE_RATE)
        if not index.enabled:
            self._throttled_by(self.request, REQUEST_PERCENTAGE, ctx, request_ms)
            return request_ms
        size = fetch_response_size(answer(), ctx.api_version)
        user = principal_user(ctx.principal)
        now_ms = self.fetch.clock()
        bandwidth_ms = self.fetch.record(index, user, ctx.client_id, size, now_ms)
        throttle_ms = max(request_ms, bandwidth_ms)
        if throttle_ms > 0:
            self.fetch.unrecord(index, user, ctx.client_id, size, now_ms)
        self._record_throttle(ctx, bandwidth_ms, self.fetch, CONSUMER_BYTE_RATE, request_ms)
        return throttle_ms


def _throttled(response, throttle_ms: int):
    """``response`` carrying ``throttle_ms`` (the larger of it and what it carries: a forwarded
    answer's controller throttle), the connection muted that long (Throttled) when over 0."""
    if throttle_ms <= 0:
        return response
    if response is not NO_RESPONSE and hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = max(response.throttle_time_ms, throttle_ms)
    return Throttled(response, throttle_ms)


def fetch_response_size(response, version: int) -> int:
    """FetchResponse.sizeOf: the body's encoded size plus 4 (the batches are measured, not copied)."""
    buf = EncodeBuffer()
    response.encode_into(buf, version)
    return 4 + buf.size()
