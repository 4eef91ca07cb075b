"""Client telemetry's subscriptions and client instances on the broker (KIP-714; Kafka 4.3.1's
ClientMetricsManager, ClientMetricsInstance and ClientMetricsInstanceMetadata).

Subscriptions are the CLIENT_METRICS config resources of the committed image
(kafkawire.metadata.client_metrics_configs): each has ``metrics`` (name prefixes, ``*`` for
all), ``interval.ms`` and ``match`` (``selector=regex``, every one must match the whole
attribute). A client instance is made at its first request (GetTelemetrySubscriptions with a
zero id gets a fresh random one) from the subscriptions that match it then: the union of their
metrics (just ``*`` if one has it), the least of their intervals (5 minutes if none), and a
subscription id derived from both and the instance id. When the subscriptions change, each
instance is made again at its next request (Kafka's subscription update version), so its
subscription id changes and its next push is refused UNKNOWN_SUBSCRIPTION_ID, after which the
client asks again.

The instance cache is bounded as Kafka's: at most CACHE_MAX_SIZE instances, the least recently
used dropped first, and an instance unused for max(60 s, 3 push intervals) expires (Kafka's
expiration timer; here checked when the instance is next looked up, and the oldest entries swept
at each request). An instance also goes when the connection that made it closes (Kafka's
ConnectionDisconnectListener).

One difference (docs/differences.md): the subscription id is computed over the metrics in sorted
order, where Kafka uses its HashSet's order, and the requested metrics are listed sorted. The id
is opaque (a client only echoes it), so only its value differs.
"""
from __future__ import annotations

import re
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from crc32c import crc32c

from kafkawire.metadata.image import CLIENT_METRICS_RESOURCE
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.message import uuid_to_kafka_string

from .client_metrics_stats import ClientMetricsStats

__all__ = ["ClientInstance", "ClientMetricsManager", "Subscription", "TelemetryRefusal", "CACHE_MAX_SIZE"]

CACHE_MAX_SIZE = 16384                 # ClientMetricsManager.CACHE_MAX_SIZE
CACHE_EXPIRY_MS = 60_000               # DEFAULT_CACHE_EXPIRY_MS
DEFAULT_INTERVAL_MS = 5 * 60 * 1000    # ClientMetricsConfigs.INTERVAL_MS_DEFAULT
ALL_METRICS = "*"
UNKNOWN_SOFTWARE = "unknown"           # ClientInformation.UNKNOWN_NAME_OR_VERSION
_SWEEP_PER_REQUEST = 8                 # expired instances dropped per request, so each request's work is bounded


class TelemetryRefusal(Exception):
    """A request refused with ``error`` (an Errors code), as Kafka's ApiException."""

    def __init__(self, error: int, message: str):
        super().__init__(message)
        self.error = error


@dataclass(frozen=True)
class Subscription:
    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: tuple[tuple[str, re.Pattern], ...]


@dataclass
class ClientInstance:
    """ClientMetricsInstance: what one client instance was told, and its request times."""
    instance_id: uuid.UUID
    attributes: dict[str, str | None]
    subscription_id: int
    subscription_version: int
    metrics: tuple[str, ...]
    push_interval_ms: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    terminating: bool = False
    last_error: int = Errors.NONE
    expires_at_ms: int = 0

    def may_get(self, now_ms: int) -> bool:
        """maybeUpdateGetRequestTimestamp: a push interval since its last request of either kind."""
        if now_ms - max(self.last_get_ms, self.last_push_ms) >= self.push_interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def may_push(self, now_ms: int) -> bool:
        """maybeUpdatePushRequestTimestamp: the first push after a GetTelemetrySubscriptions is
        accepted at once (the client jitters its interval), later ones a push interval apart."""
        accepted = self.last_get_ms > self.last_push_ms or now_ms - self.last_push_ms >= self.push_interval_ms
        if accepted:
            self.last_push_ms = now_ms
        return accepted


def parse_subscription(name: str, configs: dict[str, str]) -> Subscription:
    """A stored (already validated) subscription's configs, with ClientMetricsConfigs' defaults."""
    def listed(key):
        return [v.strip() for v in configs.get(key, "").split(",") if v.strip()]
    match = []
    for pattern in listed("match"):
        selector, _, regex = pattern.partition("=")
        try:
            match.append((selector.strip(), re.compile(regex.strip())))
        except re.error:       # the controller validated it; an older log's value matches nothing
            match.append((selector.strip(), re.compile(r"(?!)")))
    interval = configs.get("interval.ms", "").strip()
    return Subscription(name, frozenset(listed("metrics")), int(interval) if interval.isdigit() else DEFAULT_INTERVAL_MS,
                        tuple(match))


def matches(subscription: Subscription, attributes: dict[str, str | None]) -> bool:
    """ClientMetricsInstanceMetadata.isMatch: every selector's regex matches its whole attribute."""
    return all(attributes.get(selector) is not None and regex.fullmatch(attributes[selector])
               for selector, regex in subscription.match)


def java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >> 31 else value


def uuid_hash(value: uuid.UUID) -> int:
    """org.apache.kafka.common.Uuid.hashCode."""
    h = (value.int >> 64) ^ (value.int & 0xFFFFFFFFFFFFFFFF)
    return java_int((h >> 32) ^ h)


def subscription_id(metrics: tuple[str, ...], interval_ms: int, instance_id: uuid.UUID) -> int:
    """computeSubscriptionId: CRC32C of the metrics' set as Java prints it and the interval,
    xor the instance id's hash (the metrics sorted here: see the module docstring)."""
    text = "[" + ", ".join(metrics) + "]" + str(interval_ms)
    return java_int(crc32c(text.encode("utf-8"))) ^ uuid_hash(instance_id)


class ClientMetricsManager:
    """The broker's subscriptions (read from ``image()``) and client instances."""

    def __init__(self, image: Callable, *, clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 cache_max_size: int = CACHE_MAX_SIZE, cache_expiry_ms: int = CACHE_EXPIRY_MS,
                 stats: ClientMetricsStats | None = None):
        self.image = image
        self.clock_ms = clock_ms
        self.stats = ClientMetricsStats(clock_ms) if stats is None else stats     # the client-metrics meters
        self.cache_max_size = cache_max_size
        self.cache_expiry_ms = cache_expiry_ms
        self.instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()   # least recently used first
        self.connections: dict[str, uuid.UUID] = {}                              # connection id -> instance made on it
        self.subscriptions: dict[str, Subscription] = {}
        self.version = 0
        self._seen_configs: dict[str, dict[str, str]] = {}

    # -- subscriptions --

    def refresh_subscriptions(self) -> None:
        """Take the image's CLIENT_METRICS resources; any change bumps the version, so every
        instance is made again at its next request (DynamicClientMetricsConfigPublisher)."""
        current = {name: configs for (kind, name), configs in self.image().configs.items()
                   if kind == CLIENT_METRICS_RESOURCE}
        if current == self._seen_configs:
            return
        self._seen_configs = {name: dict(configs) for name, configs in current.items()}
        self.subscriptions = {name: parse_subscription(name, configs) for name, configs in current.items()}
        self.version += 1

    # -- instances --

    def new_instance_id(self) -> uuid.UUID:
        """Uuid.randomUuid (never a reserved id, nor one whose text starts with "-"), not cached yet."""
        while True:
            candidate = uuid.uuid4()
            if (candidate not in self.instances and candidate.int not in (0, 1)
                    and not uuid_to_kafka_string(candidate).startswith("-")):
                return candidate

    def instance(self, instance_id: uuid.UUID, ctx) -> ClientInstance:
        """ClientMetricsManager.clientInstance: the cached instance (made again if the
        subscriptions changed since), else a new one; its expiry pushed out."""
        now = self.clock_ms()
        self.refresh_subscriptions()
        self._sweep(now)
        found = self.instances.get(instance_id)
        if found is not None and found.expires_at_ms <= now:
            self._drop(instance_id)
            found = None
        if found is None:
            found = self._made(instance_id, attributes_of(instance_id, ctx), ctx.connection_id)
        elif found.subscription_version < self.version:
            found = self._made(instance_id, found.attributes, ctx.connection_id)
        else:
            self.instances.move_to_end(instance_id)
        found.expires_at_ms = now + max(self.cache_expiry_ms, 3 * found.push_interval_ms)
        return found

    def _made(self, instance_id: uuid.UUID, attributes: dict, connection_id: str) -> ClientInstance:
        interval = DEFAULT_INTERVAL_MS
        metrics: set[str] = set()
        for subscription in self.subscriptions.values():
            if matches(subscription, attributes):
                metrics |= subscription.metrics
                interval = min(interval, subscription.interval_ms)
        chosen = (ALL_METRICS,) if ALL_METRICS in metrics else tuple(sorted(metrics))
        made = ClientInstance(instance_id, attributes, subscription_id(chosen, interval, instance_id), self.version,
                              chosen, interval)
        self.instances.pop(instance_id, None)
        self.instances[instance_id] = made
        self.connections[connection_id] = instance_id
        self.stats.add_instance(instance_id)
        while len(self.instances) > self.cache_max_size:         # LRUCache's eviction
            evicted, _ = self.instances.popitem(last=False)
            self.stats.remove_instance(evicted)                  # client_metrics_stats says why
        return made

    def _sweep(self, now: int) -> None:
        for _ in range(_SWEEP_PER_REQUEST):
            oldest = next(iter(self.instances.values()), None)
            if oldest is None or oldest.expires_at_ms > now:
                return
            self._drop(oldest.instance_id)

    def _drop(self, instance_id: uuid.UUID) -> None:
        self.instances.pop(instance_id, None)
        self.stats.remove_instance(instance_id)

    def connection_closed(self, connection_id: str) -> None:
        """ConnectionDisconnectListener: the instance made on this connection goes."""
        instance_id = self.connections.pop(connection_id, None)
        if instance_id is not None:
            self._drop(instance_id)


def attributes_of(instance_id: uuid.UUID, ctx) -> dict[str, str | None]:
    """ClientMetricsInstanceMetadata: what a subscription's ``match`` selectors compare."""
    software_name, software_version = getattr(ctx, "client_software", None) or (UNKNOWN_SOFTWARE, UNKNOWN_SOFTWARE)
    host, port = ctx.peer
    return {"client_instance_id": uuid_to_kafka_string(instance_id), "client_id": ctx.client_id,
            "client_software_name": software_name, "client_software_version": software_version,
            "client_source_address": host, "client_source_port": str(port)}
