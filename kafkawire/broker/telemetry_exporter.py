"""kafkawire's built-in client telemetry exporter (``metric.reporters`` naming
``kafkawire.metrics.ClientTelemetryExporter``): the last push of each client instance, shown as
Prometheus families on the node's metrics endpoint (when ``kafkawire.metrics.PrometheusReporter``
is on too) and readable in Python (``latest``).

A metric's name becomes a family name as the OpenTelemetry Prometheus exporter names it (every
character outside ``[a-zA-Z0-9_]`` an underscore, e.g. ``org.apache.kafka.producer.record.
queue.time.avg`` -> ``org_apache_kafka_producer_record_queue_time_avg``; a name that would start
``kafka_`` or a digit gets ``client_`` in front), each sample labelled
with the client's ``client_instance_id`` and ``client_id`` and its data point's attributes. Each
value is the one last pushed, as an untyped sample: sums are pushed as deltas (the broker asks
for delta temporality, as Kafka's), histograms and summaries as their count.

Bounded: at most MAX_SERIES samples are kept across all clients; a push that would pass it drops
the clients pushed to least recently (and a single push keeps only its first MAX_SERIES). A
client's samples are shown for max(60 s, 3 push intervals) after its last push, as long as Kafka
keeps a client instance it hears nothing from, so the final push of a client that closed (its
terminating push) is still scraped.
"""
from __future__ import annotations

import re
import time
from collections import OrderedDict
from typing import Callable, Iterator

from kafkawire.net.metrics_http import Family, FamilyOrPause
from kafkawire.protocol.message import uuid_to_kafka_string

from .client_metrics import CACHE_EXPIRY_MS

__all__ = ["PrometheusTelemetryExporter", "MAX_SERIES", "telemetry_families"]

MAX_SERIES = 20_000
_NOT_NAME = re.compile(r"[^a-zA-Z0-9_]")


def prometheus_name(name: str) -> str:
    """A family name: never one of the node's own (they all start ``kafka_``), whose HELP and
    TYPE lines a second family of the same name would repeat, failing the whole scrape."""
    cleaned = _NOT_NAME.sub("_", name) or "_"
    if cleaned[0].isdigit() or cleaned.startswith("kafka_"):
        return "client_" + cleaned
    return cleaned


def label_name(key: str) -> str:
    """A label name Prometheus accepts: ``[a-zA-Z_][a-zA-Z0-9_]*``, not the reserved ``__``."""
    cleaned = _NOT_NAME.sub("_", key).lstrip("_")
    return "attribute_" + cleaned if not cleaned or cleaned[0].isdigit() else cleaned


class PrometheusTelemetryExporter:
    """An exporter (``exporter(push)``) keeping each client instance's last pushed samples."""

    def __init__(self, max_series: int = MAX_SERIES, clock_ms: Callable[[], float] = lambda: time.monotonic() * 1000):
        self.max_series = max_series
        self.clock_ms = clock_ms
        # instance id (Kafka's text) -> [(family name, labels, value)], least recently pushed first
        self.latest: OrderedDict[str, list[tuple[str, dict[str, str], float]]] = OrderedDict()
        self._shown_until: dict[str, float] = {}
        self._series = 0

    def __call__(self, push) -> None:
        instance = uuid_to_kafka_string(push.client_instance_id)
        samples = []
        for metric in push.metrics():                   # PayloadError (-> INVALID_RECORD) before any change
            family = prometheus_name(metric.name)
            for attributes, value in metric.points:
                if len(samples) >= self.max_series:
                    break
                labels = {label_name(k): v for k, v in attributes.items()}
                labels.update(client_instance_id=instance, client_id=push.client_id)
                samples.append((family, labels, value))
        self._forget(instance)
        self._expire()
        while self.latest and self._series + len(samples) > self.max_series:
            self._forget(next(iter(self.latest)))
        self.latest[instance] = samples
        self._shown_until[instance] = self.clock_ms() + max(CACHE_EXPIRY_MS, 3 * push.push_interval_ms)
        self._series += len(samples)

    def _forget(self, instance: str) -> None:
        self._series -= len(self.latest.pop(instance, ()))
        self._shown_until.pop(instance, None)

    def _expire(self) -> None:
        now = self.clock_ms()
        for instance in [i for i, until in self._shown_until.items() if until <= now]:
            self._forget(instance)

    def families(self) -> Iterator[Family]:
        self._expire()
        by_name: dict[str, Family] = {}
        for samples in self.latest.values():
            for name, labels, value in samples:
                family = by_name.get(name)
                if family is None:
                    family = by_name[name] = Family(name, "a client's metric, as last pushed (KIP-714)", kind="unknown")
                family.samples.append((labels, value))
        yield from by_name.values()


def telemetry_families(apis) -> Iterator[FamilyOrPause]:
    """The broker's client-metrics meters (kafkawire.broker.client_metrics_stats), then the
    built-in exporters' families (none when telemetry is off)."""
    yield from apis.manager.stats.families(len(apis.manager.instances))
    for exporter in apis.exporters:
        if isinstance(exporter, PrometheusTelemetryExporter):
            yield from exporter.families()
