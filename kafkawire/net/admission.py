"""Kafka's admission rules for a listener: how many connections, from whom, and how many request
bytes may wait in memory (SocketServer's Acceptor and ConnectionQuotas, and the MemoryPool behind
``queued.max.request.bytes``).

Settings, with Kafka's names, defaults and meaning:

* ``max.connections`` (default Int.MaxValue): connections open on the listener at once. As
  Kafka's Acceptor, the listener stops accepting when the limit is reached: further connections
  wait in the kernel's listen backlog (the client sees a connect that succeeds and a request,
  or a TLS handshake, that waits) until one closes.
* ``max.connections.per.ip`` (default Int.MaxValue) and ``max.connections.per.ip.overrides``
  (``host:count,...``, default empty): a connection over its address's limit is closed as soon
  as it is accepted, before any TLS handshake, and logged, as Kafka's TooManyConnectionsException
  is.

* ``max.connection.creation.rate`` (default Int.MaxValue: none): connections accepted per second, node-wide, measured as a client quota's rate (``quota.window.num`` samples of
  ``quota.window.size.seconds``). The connection that takes the rate over it waits out the
  throttle time (at most one window) before it is served, and the acceptor accepts nothing
  meanwhile, as Kafka's acceptor blocks in ConnectionQuotas.waitForConnectionSlot.
* ``connection_creation_rate`` of an ``ip`` client quota entity (AlterClientQuotas; an address,
  or the default entity for every address without its own): connections accepted per second
  from one address. A connection over it is not served: it is held open, unread, for the
  throttle time and then closed, and taken back out of the address's and the broker's rate
  (Kafka's ConnectionThrottledException and its delayed close).
* ``listener.name.<listener>.max.connections`` and ``listener.name.<listener>.max.connection.creation.rate``:
  the same limits for one listener, on top of the node's (a connection waits for both; its
  throttle is the longer of the two), as Kafka's ListenerConnectionQuota.
* The inter-broker listener (``protected_listener``), when the node has other listeners too, is
  exempt from the node-wide ``max.connections`` and ``max.connection.creation.rate`` (Kafka's
  protectedListener; its own listener limits still hold), so that replication and the
  coordinators' traffic keep their connections.

All are checked where the connection is accepted (kafkawire.net.acceptor), before anything is
read from it. All but the ip quotas' rates (already dynamic) are also taken as dynamic broker
configs, for one node or every node, with no restart (DynamicAdmissionLimits); as in Kafka, a
lowered limit closes no open connection, it only holds the next ones.
* ``queued.max.request.bytes`` (default -1, no limit): the request bytes held in memory across
  all connections, read but not yet answered. As Kafka's pool, a frame is held whole from the
  moment its size is read, and the pool is not strict: a frame starts while anything is left, so
  one frame may take it past the limit. While it is spent, no connection starts reading a new
  frame until an answer (or a closed connection) gives bytes back.

One request at a time per connection: Kafka mutes a channel from the moment a request is read
until its response is sent, so pipelined requests wait unread in the socket. ``KafkaServer``'s
``max_in_flight_per_connection`` defaults to 1 for the same reason: a client that pipelines
long-poll fetches cannot hold more than one handler (and its memory) per connection.
"""
from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs, image_version

from .client_quotas import ClientQuotaManager, SampledRate, throttle_time_ms
from .host_addresses import HOSTS

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
_FULL_LOG_INTERVAL_S = 60.0
# While the node is at max.connections, how often the acceptor looks at the limits again even
# though no connection closed: a dynamic max.connections raised meanwhile takes effect within it.
_LIMITS_RECHECK_S = 0.5


@dataclass(frozen=True)
class AdmissionLimits:
    max_connections: int = INT_MAX
    max_connections_per_ip: int = INT_MAX
    max_connections_per_ip_overrides: dict = field(default_factory=dict)   # host -> count
    queued_max_request_bytes: int = -1                                      # -1: no limit
    max_connection_creation_rate: int = INT_MAX                             # per second; INT_MAX: none
    # listener.name.<listener>.max.connections / .max.connection.creation.rate: listener -> value
    listener_max_connections: dict = field(default_factory=dict)
    listener_max_connection_creation_rate: dict = field(default_factory=dict)
    quota_window_num: int = 11                   # the rates' samples ...
    quota_window_size_seconds: int = 1           # ... of this many seconds each

    @classmethod
    def of(cls, config) -> "AdmissionLimits":
        """A node's limits from its ServerConfig."""
        return cls(max_connections=config.max_connections, max_connections_per_ip=config.max_connections_per_ip,
                   max_connections_per_ip_overrides=dict(config.max_connections_per_ip_overrides),
                   queued_max_request_bytes=config.queued_max_request_bytes,
                   max_connection_creation_rate=config.max_connection_creation_rate,
                   listener_max_connections={listener: value for listener, key, value in
                                             config.listener_connection_limits if key == "max.connections"},
                   listener_max_connection_creation_rate={
                       listener: value for listener, key, value in config.listener_connection_limits
                       if key == "max.connection.creation.rate"},
                   quota_window_num=config.quota_window_num,
                   quota_window_size_seconds=config.quota_window_size_seconds)

    def __post_init__(self):
        if self.max_connections_per_ip_overrides:
            self._overrides_by_address()          # the host names' lookups start with the limits

    def limit_for(self, host: str) -> int:
        if not self.max_connections_per_ip_overrides:
            return self.max_connections_per_ip
        return self._overrides_by_address().get(_address(host), self.max_connections_per_ip)

    def _overrides_by_address(self) -> dict:
        """The overrides by the address each host stands for (host_addresses: a name once its
        lookup has finished), kept until a lookup finishes."""
        cached = self.__dict__.get("_by_address")
        if cached is None or cached[0] != HOSTS.version:
            by_address = {}
            for host, count in self.max_connections_per_ip_overrides.items():
                address = HOSTS.address(host)
                if address is not None:
                    by_address[address] = count
            cached = (HOSTS.version, by_address)
            object.__setattr__(self, "_by_address", cached)      # a cache, not a field
        return cached[1]


class ConnectionQuotas:
    """Counts a listener's connections, per address and in all (Kafka's ConnectionQuotas). The
    acceptor (kafkawire.net.acceptor) takes a slot before it accepts, checks the address of what
    it accepted, and releases both when the connection closes."""

    def __init__(self, limits: AdmissionLimits | Callable[[], AdmissionLimits], *,
                 ip_rates: Callable[[], dict] | None = None,
                 protected_listener: str | None = None, clock: Callable[[], int] | None = None):
        """``limits``: the limits, or a callable giving them now (DynamicAdmissionLimits: they
        change with the node's dynamic configs); ``ip_rates()``: the ``connection_creation_rate``
        of the ip quota entities now (client_quotas.ip_connection_rates of the node's image);
        ``protected_listener``: the inter-broker listener's name; ``clock``: monotonic
        milliseconds. The rates' windows are the first limits' (quota.window.* are static)."""
        self._limits_now: Callable[[], AdmissionLimits] = (
            (lambda: limits) if isinstance(limits, AdmissionLimits) else limits)
        first = self._limits_now()
        self.per_ip: Counter = Counter()
        self.total = 0                   # connections open, and a slot taken for the next accept
        self._slot_freed = asyncio.Event()
        self._next_full_log = 0.0
        self.ip_rates = ip_rates or dict
        self.protected_listener = protected_listener
        self.listeners: set[str] = set()             # the listeners accepting within these quotas
        self.clock = clock or (lambda: int(time.monotonic() * 1000))
        self._samples, self._window_s = first.quota_window_num, first.quota_window_size_seconds
        self.max_throttle_ms = self._window_s * 1000       # Kafka's maxThrottleTimeMs: one window
        self.broker_rate = SampledRate(self._samples, self._window_s * 1000)
        self.address_rates = ClientQuotaManager(self._samples, self._window_s, clock=self.clock)  # per address, bounded
        self.per_listener: Counter = Counter()       # slots taken per listener
        self.listener_rates: dict[str, SampledRate] = {}     # made at a listener's first bounded connection

    @property
    def limits(self) -> AdmissionLimits:
        return self._limits_now()

    def over_ip_limit(self, host: str) -> bool:
        return self.per_ip[host] >= self.limits.limit_for(host)

    def protected(self, listener: str | None) -> bool:
        """Kafka's protectedListener: the inter-broker listener of a node with other listeners."""
        return listener is not None and listener == self.protected_listener and len(self.listeners) > 1

    async def wait_for_slot(self, listener: str | None = None) -> None:
        """Take a max.connections slot, waiting while the listener has none free: the acceptor
        accepts nothing meanwhile, and new connections wait in the kernel's backlog."""
        if not self._slot_available(listener) and time.monotonic() >= self._next_full_log:
            self._next_full_log = time.monotonic() + _FULL_LOG_INTERVAL_S       # once a minute under a flood
            log.info("the node has max.connections=%d connections (listener %s: %d of %s); accepting no more "
                     "until one closes", self.limits.max_connections, listener, self.per_listener[listener],
                     self.limits.listener_max_connections.get(listener, "no limit"))
        while not self._slot_available(listener):
            self._slot_freed.clear()
            try:
                async with asyncio.timeout(_LIMITS_RECHECK_S):
                    await self._slot_freed.wait()
            except TimeoutError:
                pass            # no connection closed; a dynamic max.connections may have been raised
        self.total += 1
        self.per_listener[listener] += 1

    def _slot_available(self, listener: str | None) -> bool:
        """ConnectionQuotas.connectionSlotAvailable: the listener's own limit, then the node's
        (which the protected listener is exempt from)."""
        if self.per_listener[listener] >= self.limits.listener_max_connections.get(listener, INT_MAX):
            return False
        return self.protected(listener) or self.total < self.limits.max_connections

    def record_connection(self, listener: str | None = None, now_ms: int | None = None) -> int:
        """Count an accepted connection against max.connection.creation.rate; the time the
        acceptor then waits before accepting another (0: none)."""
        now_ms = self.clock() if now_ms is None else now_ms
        limits = self.limits
        bound = limits.max_connection_creation_rate
        throttle_ms = 0
        if bound < INT_MAX and not self.protected(listener):
            throttle_ms = self._record(self.broker_rate, bound, now_ms)
        listener_bound = limits.listener_max_connection_creation_rate.get(listener)
        if listener is not None and listener_bound is not None:      # the longer of the two throttles
            rate = self.listener_rates.get(listener)
            if rate is None:
                rate = self.listener_rates[listener] = SampledRate(self._samples, self._window_s * 1000)
            throttle_ms = max(throttle_ms, self._record(rate, listener_bound, now_ms))
        return throttle_ms

    def record_address_connection(self, host: str, listener: str | None = None, now_ms: int | None = None) -> int:
        """Count a connection from ``host`` against its ip connection_creation_rate; over it, the
        throttle time (the connection is then held that long and closed, and taken back out of
        the rates), else 0."""
        rates = self.ip_rates()
        if not rates:
            return 0
        bound = rates.get(_address(host), rates.get(None))
        if bound is None or bound >= INT_MAX:
            return 0
        now_ms = self.clock() if now_ms is None else now_ms
        rate = self.address_rates.stat_for((host, ""), now_ms)
        throttle_ms = self._record(rate, bound, now_ms)
        if throttle_ms > 0:
            rate.record(-1.0, now_ms)
            if self.limits.max_connection_creation_rate < INT_MAX and not self.protected(listener):
                self.broker_rate.record(-1.0, now_ms)
            if listener in self.listener_rates:
                self.listener_rates[listener].record(-1.0, now_ms)
        return throttle_ms

    def _record(self, rate: SampledRate, bound: int, now_ms: int) -> int:
        rate.record(1.0, now_ms)
        observed = rate.measure(now_ms)
        if observed <= bound:
            return 0
        if bound <= 0:
            return self.max_throttle_ms
        return min(throttle_time_ms(observed, bound, rate.window_size_ms(now_ms)), self.max_throttle_ms)

    def give_back_slot(self, listener: str | None = None) -> None:
        """Give back a slot ``wait_for_slot(listener)`` took."""
        self.total -= 1
        self.per_listener[listener] -= 1
        if self.per_listener[listener] <= 0:
            del self.per_listener[listener]
        self._slot_freed.set()

    def admit_address(self, host: str) -> bool:
        """Count a connection from ``host`` that holds a slot; False if its address is at its
        limit (the caller gives the slot back and closes the connection)."""
        if self.over_ip_limit(host):
            log.info("Rejected connection from %s, address already has the configured maximum of %d connections.",
                     host, self.limits.limit_for(host))
            return False
        self.per_ip[host] += 1
        return True

    def release(self, host: str, listener: str | None = None) -> None:
        """A connection admitted from ``host`` on ``listener`` has closed."""
        self.per_ip[host] -= 1
        if self.per_ip[host] <= 0:
            del self.per_ip[host]
        self.give_back_slot(listener)


class RequestMemoryPool:
    """queued.max.request.bytes as Kafka's non-strict SimpleMemoryPool: bytes are taken as they
    are read and given back when the request they belong to is answered (or its connection
    closes). ``wait_for_room`` blocks a reader while nothing is left."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0
        self._room = asyncio.Event()
        self._room.set()

    @property
    def bounded(self) -> bool:
        return self.limit > 0

    async def wait_for_room(self) -> None:
        if self.bounded:
            await self._room.wait()

    def take(self, n: int) -> None:
        self.used += n
        if self.bounded and self.used >= self.limit:
            self._room.clear()

    def give_back(self, n: int) -> None:
        self.used -= n
        if self.used < self.limit or not self.bounded:
            self._room.set()


class DynamicAdmissionLimits:
    """The admission limits as a node applies them, with Kafka's dynamic connection quotas
    (DynamicConnectionQuota's and ListenerConnectionQuota's reconfigurable configs):
    ``max.connections``, ``max.connections.per.ip``, ``max.connections.per.ip.overrides``,
    ``max.connection.creation.rate`` and their ``listener.name.<listener>.`` forms, each set
    dynamically for this node's id, else for every node, else in server.properties (``static``), as
    DynamicBrokerConfig resolves them (ConfigRecords of the broker resource in ``image()``). Read
    again when the image changes. A dynamic value that does not parse keeps the value below it,
    logged (the controller validates what it accepts; this guards what an older one wrote)."""

    _INTS = {"max.connections": "max_connections", "max.connections.per.ip": "max_connections_per_ip",
             "max.connection.creation.rate": "max_connection_creation_rate"}
    _LISTENER = re.compile(r"^listener\.name\.([^.]+)\.(max\.connections|max\.connection\.creation\.rate)$")

    def __init__(self, image: Callable, node_id: int, static: AdmissionLimits):
        self.image, self.node_id, self.static = image, node_id, static
        self._version: tuple | None = None
        self._limits = static

    def __call__(self) -> AdmissionLimits:
        image = self.image()
        version = image_version(image)
        if version != self._version:
            self._version = version
            self._limits = self.static if image is None else self._resolve(image)
        return self._limits

    def _resolve(self, image) -> AdmissionLimits:
        configs = {**dynamic_broker_configs(image, ""), **dynamic_broker_configs(image, str(self.node_id))}
        if not configs:
            return self.static
        changes: dict = {}
        for key, attribute in self._INTS.items():
            if key in configs and (value := self._count(key, configs[key])) is not None:
                changes[attribute] = value
        if "max.connections.per.ip.overrides" in configs:
            try:
                changes["max_connections_per_ip_overrides"] = parse_per_ip_overrides(
                    configs["max.connections.per.ip.overrides"])
            except ValueError as e:
                log.warning("max.connections.per.ip.overrides set dynamically is not valid (%s); the value "
                            "below it applies", e)
        by_listener = {"max.connections": dict(self.static.listener_max_connections),
                       "max.connection.creation.rate": dict(self.static.listener_max_connection_creation_rate)}
        for key, text in configs.items():
            m = self._LISTENER.match(key)
            if m and (value := self._count(key, text)) is not None:
                by_listener[m.group(2)][m.group(1).upper()] = value
        changes["listener_max_connections"] = by_listener["max.connections"]
        changes["listener_max_connection_creation_rate"] = by_listener["max.connection.creation.rate"]
        return dataclasses.replace(self.static, **changes)

    @staticmethod
    def _count(key: str, text: str) -> int | None:
        try:
            value = int(text)
        except (TypeError, ValueError):
            value = -1
        if value < 0:
            log.warning("%s=%r set dynamically is not a count of at least 0; the value below it applies", key, text)
            return None
        return value


def _address(host: str) -> str:
    """``host`` as ip_connection_rates names addresses."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def parse_per_ip_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` pairs, comma separated. Raises
    ValueError naming the broken entry."""
    overrides = {}
    for entry in (e.strip() for e in (text or "").split(",")):
        if not entry:
            continue
        host, sep, count = entry.rpartition(":")
        if not sep or not host:
            raise ValueError(f"entry {entry!r} is not host:count")
        try:
            overrides[host] = int(count)
        except ValueError:
            raise ValueError(f"entry {entry!r}: {count!r} is not a number") from None
        if overrides[host] < 0:
            raise ValueError(f"entry {entry!r}: the count must be at least 0")
    return overrides
