"""The broker's own meters of client telemetry (KIP-714): Kafka's ClientMetricsManager's
ClientMetricsStats, group ``client-metrics``.

* ``instance-count``: the client instances cached now;
* ``unknown-subscription-request-rate`` / ``-count``: pushes refused UNKNOWN_SUBSCRIPTION_ID;
* per client instance (tag ``client_instance_id``): ``throttle-rate`` / ``-count`` (requests
  refused THROTTLING_QUOTA_EXCEEDED, GetTelemetrySubscriptions and PushTelemetry),
  ``plugin-export-rate`` / ``-count`` and ``plugin-export-time-avg`` / ``-max`` (ms: exports to
  the telemetry exporters, timed), ``plugin-error-rate`` / ``-count`` (exports that raised).

A meter is Kafka's: the count since it was made, and a rate per second over a WindowedCount of
``metrics.num.samples`` windows of ``metrics.sample.window.ms``; the time's avg and max are
sampled stats over the same windows (NaN with no sample in them). An instance's meters are made
with its first cache entry and go when it expires or its connection closes, as Kafka's; also
when the cache's size bound evicts it (Kafka keeps them until its expiry timer fires: here the
evicted instance has no timer left, and the bound is what keeps these meters bounded).

On the Prometheus endpoint they are named as the JMX exporter names an MBean without rules
(``kafka.server:type=client-metrics,client_instance_id=I`` attribute ``throttle-count`` is
``kafka_server_client_metrics_throttle_count{client_instance_id="I"}``).
"""
from __future__ import annotations

import uuid
from typing import Callable, Iterator

from kafkawire.protocol.message import uuid_to_kafka_string
from kafkawire.net.client_quotas import SampledAvg, SampledRate
from kafkawire.net.metrics_http import PAUSE, Family, FamilyOrPause, gauge, number

PREFIX = "kafka_server_client_metrics_"
INSTANCES_PER_STEP = 1000       # instances rendered between two PAUSEs of a scrape


class Meter:
    """Kafka's Meter over a WindowedCount: ``count`` since made, ``rate`` per second."""
    __slots__ = ("count", "rate")

    def __init__(self, samples: int, window_ms: int):
        self.count = 0
        self.rate = SampledRate(samples, window_ms)

    def record(self, now_ms: int) -> None:
        self.count += 1
        self.rate.record(1, now_ms)


class InstanceMeters:
    """One client instance's sensors (ClientMetricsStats.maybeAddClientInstanceMetrics)."""
    __slots__ = ("throttle", "plugin_export", "plugin_error", "export_time")

    def __init__(self, samples: int, window_ms: int):
        self.throttle = Meter(samples, window_ms)
        self.plugin_export = Meter(samples, window_ms)
        self.plugin_error = Meter(samples, window_ms)
        self.export_time = SampledAvg(samples, window_ms)          # its avg and max


class ClientMetricsStats:
    """The meters, recorded by the telemetry handlers; ``families`` for the endpoint."""

    def __init__(self, clock_ms: Callable[[], int], *, samples: int = 2, window_ms: int = 30_000):
        self.clock_ms, self.samples, self.window_ms = clock_ms, samples, window_ms
        self.unknown_subscription = Meter(samples, window_ms)
        self.instances: dict[uuid.UUID, InstanceMeters] = {}

    def add_instance(self, instance_id: uuid.UUID) -> None:
        if instance_id not in self.instances:
            self.instances[instance_id] = InstanceMeters(self.samples, self.window_ms)

    def remove_instance(self, instance_id: uuid.UUID) -> None:
        self.instances.pop(instance_id, None)

    def record_unknown_subscription(self) -> None:
        self.unknown_subscription.record(self.clock_ms())

    def record_throttle(self, instance_id: uuid.UUID) -> None:
        meters = self.instances.get(instance_id)
        if meters is not None:
            meters.throttle.record(self.clock_ms())

    def record_export(self, instance_id: uuid.UUID, elapsed_ms: float) -> None:
        meters = self.instances.get(instance_id)
        if meters is not None:
            now = self.clock_ms()
            meters.plugin_export.record(now)
            meters.export_time.record(elapsed_ms, now)

    def record_export_error(self, instance_id: uuid.UUID) -> None:
        meters = self.instances.get(instance_id)
        if meters is not None:
            meters.plugin_error.record(self.clock_ms())

    def families(self, instance_count: int) -> Iterator[FamilyOrPause]:
        now = self.clock_ms()
        yield gauge(PREFIX + "instance_count", "The current number of client metrics instances being managed "
                    "by the broker", instance_count)
        yield gauge(PREFIX + "unknown_subscription_request_count", "The total number of "
                    "unknown-subscription-request", self.unknown_subscription.count)
        yield gauge(PREFIX + "unknown_subscription_request_rate", "The number of unknown-subscription-request "
                    "per second", self.unknown_subscription.rate.measure(now))
        names = ("throttle_count", "throttle_rate", "plugin_export_count", "plugin_export_rate",
                 "plugin_export_time_avg", "plugin_export_time_max", "plugin_error_count", "plugin_error_rate")
        lines: list[list[str]] = [[] for _ in names]
        for index, (instance_id, meters) in enumerate(list(self.instances.items())):
            if index % INSTANCES_PER_STEP == 0:
                yield PAUSE
            # a Kafka Uuid's text is URL-safe base64: nothing to escape in a label
            labels = f'{{client_instance_id="{uuid_to_kafka_string(instance_id)}"}} '
            values = (meters.throttle.count, meters.throttle.rate.measure(now), meters.plugin_export.count,
                      meters.plugin_export.rate.measure(now), meters.export_time.measure(now),
                      meters.export_time.maximum(now), meters.plugin_error.count,
                      meters.plugin_error.rate.measure(now))
            for rows, name, value in zip(lines, names, values):
                rows.append(f"{PREFIX}{name}{labels}{number(value)}\n")
        helps = ("The total number of throttle", "The number of throttle per second",
                 "The total number of plugin-export", "The number of plugin-export per second",
                 "Average time broker spent in invoking plugin exportMetrics call",
                 "Maximum time broker spent in invoking plugin exportMetrics call",
                 "The total number of plugin-error", "The number of plugin-error per second")
        for name, help_text, rows in zip(names, helps, lines):
            yield Family(PREFIX + name, help_text, lines=rows)


__all__ = ["ClientMetricsStats", "InstanceMeters", "Meter"]
