"""GetTelemetrySubscriptions (71) and PushTelemetry (72): client telemetry (KIP-714) as Kafka
4.3.1's broker serves it (KafkaApis' handlers, ClientMetricsManager's checks).

The broker lists them in ApiVersions only when a telemetry exporter is configured, as Kafka's
DefaultApiVersionManager lists them only when a metrics reporter takes client telemetry:
``metric.reporters`` naming ``kafkawire.metrics.ClientTelemetryExporter`` (docs/broker.md,
"Client telemetry"). Like Kafka's broker (whose isApiEnabled does not look at telemetry), it
answers them either way; without an exporter a push is checked and decompressed, and goes nowhere. Pushed metrics go to each exporter in ``exporters``: the built-in one
(kafkawire.broker.telemetry_exporter, shown on the node's Prometheus endpoint) and any callable
a library user adds (``broker.telemetry.exporters.append(fn)``; ``fn(push)`` gets a TelemetryPush).

A push is checked in ClientMetricsManager.validatePushRequest's order: a zero (or reserved)
instance id INVALID_REQUEST; after a terminating push INVALID_REQUEST; a push sooner than the
push interval since the last (unless this one terminates) THROTTLING_QUOTA_EXCEEDED; a
subscription id other than the instance's UNKNOWN_SUBSCRIPTION_ID; an unknown compression type
UNSUPPORTED_COMPRESSION_TYPE; metrics over ``telemetry.max.bytes`` TELEMETRY_TOO_LARGE. Then the
export: a payload that does not decompress within ``telemetry.max.bytes``, or does not decode, or
an exporter that raises, is INVALID_RECORD (Kafka catches the plugin's Throwable). Any other
failure is INVALID_REQUEST, as KafkaApis' catch-all. No ACL is checked (KafkaApis checks none for
these two): only the listener's authentication.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from kafkawire.messages.get_telemetry_subscriptions_response import GetTelemetrySubscriptionsResponse
from kafkawire.messages.push_telemetry_response import PushTelemetryResponse
from kafkawire.protocol.error_codes import Errors
from kafkawire.net.config import CLIENT_TELEMETRY_EXPORTER
from kafkawire.protocol.handler import ApiHandler
from kafkawire.records.compression import GZIP, LZ4, NONE, SNAPPY, ZSTD

from .client_metrics import ClientInstance, ClientMetricsManager, TelemetryRefusal
from .client_metrics_stats import ClientMetricsStats
from .telemetry_exporter import PrometheusTelemetryExporter
from .telemetry_payload import TelemetryMetric, decode_metrics, metrics_data

__all__ = ["TelemetryApis", "TelemetryPush", "client_telemetry", "GET_TELEMETRY_SUBSCRIPTIONS", "PUSH_TELEMETRY"]

log = logging.getLogger(__name__)
GET_TELEMETRY_SUBSCRIPTIONS, PUSH_TELEMETRY = 71, 72
ACCEPTED_COMPRESSION_TYPES = [ZSTD, LZ4, GZIP, SNAPPY]      # SUPPORTED_COMPRESSION_TYPES, in Kafka's order
KNOWN_COMPRESSION_TYPES = frozenset({NONE, GZIP, SNAPPY, LZ4, ZSTD})     # CompressionType.forId
RESERVED_IDS = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})           # Uuid.RESERVED
OTLP_CONTENT_TYPE = "application/x-protobuf"


@dataclass
class TelemetryPush:
    """What an exporter gets (Kafka's ClientTelemetryPayload and ClientTelemetryContext):
    ``data`` is the decompressed MetricsData; ``metrics()`` decodes it (once)."""
    client_instance_id: uuid.UUID
    terminating: bool
    data: bytes
    push_interval_ms: int
    client_id: str
    principal: str
    attributes: dict[str, str | None]
    content_type: str = OTLP_CONTENT_TYPE
    _decoded: Any = field(default=None, repr=False)

    def decoded(self) -> tuple[dict[str, str], list[TelemetryMetric]]:
        """(resource attributes, metrics); PayloadError if the data is not MetricsData."""
        if self._decoded is None:
            self._decoded = decode_metrics(self.data)
        return self._decoded

    def metrics(self) -> list[TelemetryMetric]:
        return self.decoded()[1]


class TelemetryApis:
    """The two handlers over a ClientMetricsManager, and the exporters pushes go to."""

    def __init__(self, image: Callable, *, max_bytes: int, enabled: bool,
                 clock_ms: Callable[[], int] | None = None, metrics_samples: int = 2, metrics_window_ms: int = 30_000):
        clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.manager = ClientMetricsManager(image, clock_ms=clock_ms, stats=ClientMetricsStats(
            clock_ms, samples=metrics_samples, window_ms=metrics_window_ms))
        self.max_bytes = max_bytes
        self.enabled = enabled
        self.exporters: list[Callable[[TelemetryPush], None]] = []

    def handlers(self) -> dict[int, ApiHandler]:
        """Both, always served; listed in ApiVersions only when enabled (Kafka's broker answers
        them either way, and advertises them only with a reporter that takes telemetry)."""
        return {GET_TELEMETRY_SUBSCRIPTIONS: ApiHandler(self.get_subscriptions, advertised=self.enabled),
                PUSH_TELEMETRY: ApiHandler(self.push, advertised=self.enabled)}

    def set_exporter(self, on: bool) -> bool:
        """``metric.reporters`` changed dynamically: the built-in exporter added or removed (pushes
        then go nowhere). True when the pair is to be listed in ApiVersions from now on (the
        caller registers ``handlers()`` again, wrapped as the broker wraps them), as Kafka's
        ClientMetricsManager lists it once its exporter plugin holds one; a removal leaves it
        listed, as in Kafka, whose DynamicMetricsReporters takes nothing out of that plugin."""
        exporter = next((e for e in self.exporters if isinstance(e, PrometheusTelemetryExporter)), None)
        if not on:
            if exporter is not None:
                self.exporters.remove(exporter)
            return False
        if exporter is None:
            self.exporters.append(PrometheusTelemetryExporter())
        newly_listed, self.enabled = not self.enabled, True
        return newly_listed

    async def get_subscriptions(self, ctx, request) -> GetTelemetrySubscriptionsResponse:
        try:
            return self._get(ctx, request)
        except Exception:                   # KafkaApis' catch-all
            log.exception("GetTelemetrySubscriptions from %s failed", ctx.connection_id)
            return GetTelemetrySubscriptionsResponse(error_code=Errors.INVALID_REQUEST)

    def _get(self, ctx, request) -> GetTelemetrySubscriptionsResponse:
        instance_id = request.client_instance_id
        if instance_id.int == 0:
            instance_id = self.manager.new_instance_id()
        instance = self.manager.instance(instance_id, ctx)
        if (not instance.may_get(self.manager.clock_ms())
                and instance.last_error not in (Errors.UNKNOWN_SUBSCRIPTION_ID, Errors.UNSUPPORTED_COMPRESSION_TYPE)):
            self.manager.stats.record_throttle(instance_id)
            return GetTelemetrySubscriptionsResponse(error_code=Errors.THROTTLING_QUOTA_EXCEEDED)
        instance.last_error = Errors.NONE
        return GetTelemetrySubscriptionsResponse(
            client_instance_id=instance_id, subscription_id=instance.subscription_id,
            accepted_compression_types=list(ACCEPTED_COMPRESSION_TYPES), push_interval_ms=instance.push_interval_ms,
            telemetry_max_bytes=self.max_bytes, delta_temporality=True, requested_metrics=list(instance.metrics))

    async def push(self, ctx, request) -> PushTelemetryResponse:
        try:
            return PushTelemetryResponse(error_code=await self._push(ctx, request))
        except Exception:                   # KafkaApis' catch-all
            log.exception("PushTelemetry from %s failed", ctx.connection_id)
            return PushTelemetryResponse(error_code=Errors.INVALID_REQUEST)

    async def _push(self, ctx, request) -> int:
        if request.client_instance_id in RESERVED_IDS:
            return Errors.INVALID_REQUEST
        instance = self.manager.instance(request.client_instance_id, ctx)
        try:
            self._check_push(request, instance)
        except TelemetryRefusal as refusal:
            log.debug("PushTelemetry from %s refused: %s", request.client_instance_id, refusal)
            instance.last_error = refusal.error
            return refusal.error
        finally:
            instance.terminating = request.terminating
        if len(request.metrics) > 0:
            started = time.perf_counter()
            try:
                await self._export(ctx, request, instance)
            except Exception as exc:        # ClientMetricsManager catches the plugin's Throwable
                self.manager.stats.record_export_error(request.client_instance_id)
                log.warning("client telemetry of instance %s not exported: %s", request.client_instance_id, exc)
                instance.last_error = Errors.INVALID_RECORD
                return Errors.INVALID_RECORD
            self.manager.stats.record_export(request.client_instance_id, (time.perf_counter() - started) * 1000)
        instance.last_error = Errors.NONE
        return Errors.NONE

    def _check_push(self, request, instance: ClientInstance) -> None:
        """validatePushRequest, in its order."""
        who = request.client_instance_id
        if instance.terminating:
            raise TelemetryRefusal(Errors.INVALID_REQUEST, f"Client [{who}] sent the previous request with state "
                                   "terminating to TRUE, can not acceptany requests after that")
        if not instance.may_push(self.manager.clock_ms()) and not request.terminating:
            self.manager.stats.record_throttle(who)
            raise TelemetryRefusal(Errors.THROTTLING_QUOTA_EXCEEDED,
                                   f"Request from the client [{who}] arrived before the next push interval time")
        if request.subscription_id != instance.subscription_id:
            self.manager.stats.record_unknown_subscription()
            raise TelemetryRefusal(Errors.UNKNOWN_SUBSCRIPTION_ID, f"Unknown client subscription id for the client [{who}]")
        if request.compression_type not in KNOWN_COMPRESSION_TYPES:
            raise TelemetryRefusal(Errors.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression type "
                                   f"[{request.compression_type}] is received in telemetry request from [{who}]")
        if len(request.metrics) > self.max_bytes:
            raise TelemetryRefusal(Errors.TELEMETRY_TOO_LARGE, f"Telemetry request from [{who}] is larger than the "
                                   f"maximum allowed size [{self.max_bytes}]")

    async def _export(self, ctx, request, instance: ClientInstance) -> None:
        push = TelemetryPush(request.client_instance_id, request.terminating, b"", instance.push_interval_ms,
                             ctx.client_id, ctx.principal, dict(instance.attributes))
        # Decompressed and decoded (refused before any exporter sees it if it is not MetricsData)
        # in a worker thread: a payload of telemetry.max.bytes takes a few hundred ms of Python,
        # which would otherwise stall every other connection of the event loop.
        push.data = await asyncio.to_thread(self._decoded_data, request.compression_type, request.metrics, push)
        for exporter in self.exporters:
            exporter(push)

    def _decoded_data(self, compression_type: int, metrics, push: TelemetryPush) -> bytes:
        data = push.data = metrics_data(compression_type, metrics, self.max_bytes)
        if self.exporters:       # without an exporter Kafka only decompresses (its plugin holds no receiver)
            push.decoded()
        return data
        for exporter in self.exporters:
            exporter(push)

    def connection_closed(self, connection_id: str) -> None:
        self.manager.connection_closed(connection_id)


def client_telemetry(config, image) -> TelemetryApis:
    """The broker's TelemetryApis: served, with the built-in exporter, when ``metric.reporters``
    names kafkawire.metrics.ClientTelemetryExporter; else not served, as Kafka's broker without
    a reporter that takes client telemetry."""
    enabled = CLIENT_TELEMETRY_EXPORTER in config.metric_reporters
    apis = TelemetryApis(image, max_bytes=config.telemetry_max_bytes, enabled=enabled,
                         metrics_samples=config.metrics_num_samples, metrics_window_ms=config.metrics_sample_window_ms)
    if enabled:
        apis.exporters.append(PrometheusTelemetryExporter())
    return apis
