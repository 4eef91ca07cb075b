"""The broker's client quotas in front of its APIs (Kafka's QuotaFactory.QuotaManagers as
KafkaApis uses them): a produce quota manager and a fetch quota manager
(kafkawire.broker.client_quotas) with ``quota.window.num`` samples of
``quota.window.size.seconds``, their quotas read from the committed metadata image.

* Produce: every request's size (the frame's size field, Kafka's request.sizeInBytes) is recorded
  against the client's ``producer_byte_rate`` once the answer is ready; a throttle time over 0
  goes in the answer's throttle_time_ms (none with acks=0) and mutes the connection that long.
* Fetch from a consumer: ``max_bytes`` is first capped to what the quota allows in a window
  (maxValueInQuotaWindow); the answer's size is recorded against ``consumer_byte_rate``, and a
  throttled fetch is answered with no partitions, its size taken back out (kafkawire.broker.fetch).
  A follower's fetch is not a client's: replication quotas (leader/follower.replication.throttled.rate)
  are not enforced.

``request_percentage`` (ClientRequestQuotaManager, the share of request-handler time) is not
enforced: an asyncio handler's time is not a request thread's.
"""
from __future__ import annotations

from kafkawire.protocol.handler import NO_RESPONSE, ApiHandler, Throttled
from kafkawire.protocol.primitives import EncodeBuffer

from .client_quotas import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, ClientQuotaManager, QuotaIndex, principal_user

__all__ = ["BrokerQuotas", "PRODUCE"]

PRODUCE = 0
_EMPTY = QuotaIndex({})


class BrokerQuotas:
    """The quota managers of ``broker`` (its ``image()`` and ``config``)."""

    def __init__(self, broker, clock=None):
        c = broker.config
        self.image = broker.image
        self.produce = ClientQuotaManager(c.quota_window_num, c.quota_window_size_seconds, clock=clock)
        self.fetch = ClientQuotaManager(c.quota_window_num, c.quota_window_size_seconds, clock=clock)
        self._source = None               # the client_quotas dict the indexes were built from
        self._offset = None               # and the image's offset then
        self._indexes = {PRODUCER_BYTE_RATE: _EMPTY, CONSUMER_BYTE_RATE: _EMPTY}

    def index(self, key: str) -> QuotaIndex:
        """The image's quotas of ``key``, rebuilt only when the image changed."""
        image = self.image()
        quotas = getattr(image, "client_quotas", None)
        offset = image.provenance.offset if image is not None else None
        if quotas is not self._source or offset != self._offset:
            self._source, self._offset = quotas, offset
            self._indexes = {k: QuotaIndex.of(quotas or {}, k) for k in self._indexes}
        return self._indexes[key]

    # -- Produce --

    def wrap_produce(self, handlers: dict) -> dict:
        """``handlers`` with Produce answered through the produce quota (outermost, so that a
        refused request counts too, as KafkaApis records every Produce)."""
        handler = handlers.get(PRODUCE)
        if handler is None:
            return handlers

        async def produce(ctx, request):
            response = await handler.handle(ctx, request)
            throttle_ms = self.produce.record(self.index(PRODUCER_BYTE_RATE), principal_user(ctx.principal),
                                              ctx.client_id, ctx.request_size)
            if throttle_ms <= 0:
                return response
            if response is not NO_RESPONSE:
                response.throttle_time_ms = throttle_ms
            return Throttled(response, throttle_ms)

        return {**handlers, PRODUCE: ApiHandler(produce, handler.min_version, handler.max_version,
                                                handler.error_response)}

    # -- Fetch (a consumer's) --

    def fetch_enabled(self) -> bool:
        return self.index(CONSUMER_BYTE_RATE).enabled != 0

    def fetch_window_bytes(self, ctx) -> float:
        """The most one consumer fetch may return without certain throttling."""
        return self.fetch.max_value_in_window(self.index(CONSUMER_BYTE_RATE), principal_user(ctx.principal),
                                              ctx.client_id)

    def record_fetch(self, ctx, response) -> int:
        """Record the size of ``response`` (a FetchResponse as it would go out) against the
        client's consumer_byte_rate; the throttle time, the size taken back out when throttled."""
        index = self.index(CONSUMER_BYTE_RATE)
        if not index.enabled:
            return 0
        size = fetch_response_size(response, ctx.api_version)
        user = principal_user(ctx.principal)
        now_ms = self.fetch.clock()
        throttle_ms = self.fetch.record(index, user, ctx.client_id, size, now_ms)
        if throttle_ms > 0:
            self.fetch.unrecord(index, user, ctx.client_id, size, now_ms)
        return throttle_ms


def fetch_response_size(response, version: int) -> int:
    """FetchResponse.sizeOf: the body's encoded size plus 4 (the batches are measured, not copied)."""
    buf = EncodeBuffer()
    response.encode_into(buf, version)
    return 4 + buf.size()
