"""Client quotas on the broker role: the byte rates of KIP-13/KIP-55 (``producer_byte_rate``,
``consumer_byte_rate``) as Kafka's ClientQuotaManager measures and enforces them.

Where a quota comes from: the committed metadata image's client quota entities
(``image.client_quotas``: ClientQuotaRecords, set with AlterClientQuotas or ``kafka-configs
--alter --add-config producer_byte_rate=...``). An entity is a user, a client id, or both, each
named or the default (a record's null name); entities with an ``ip`` are connection-rate quotas
and are not read here. For one (user principal, client id) the quota is found in Kafka's order:

    /config/users/<user>/clients/<client-id>   /config/users/<user>/clients/<default>
    /config/users/<user>                       /config/users/<default>/clients/<client-id>
    /config/users/<default>/clients/<default>  /config/users/<default>
    /config/clients/<client-id>                /config/clients/<default>

and, as in Kafka's DefaultQuotaCallback, the rate is shared by everything the matching entity
covers: with only client-id quotas, every user with one client id shares one rate; with a
``/config/users/<user>`` quota, every client id of that user does (``quota_tags``).

How a rate is measured (Kafka's Rate over a WindowedSum, ``SampledRate``): the values recorded
fall in samples of ``quota.window.size.seconds`` each, ``quota.window.num`` of them kept (plus the
one Kafka keeps for overlap); a sample with no event for the whole span is reset; the rate is
the samples' sum over the elapsed time, which counts as at least ``quota.window.num - 1`` whole
samples, so a first burst is not judged over a few milliseconds.

Throttle time (QuotaUtils.throttleTime): a record that takes the rate O above the quota T asks
for X = (O - T) / T * W ms, W the window the rate was measured over: the delay after which,
with nothing more recorded, the rate is back at the quota. Produce records the request's size
(every Produce, acks=0 included); Fetch from a consumer records the response's size, and a
throttled consumer fetch is answered with no partitions and its recorded size taken back out
(unrecordQuotaSensor), as Kafka returns an empty response. The answer carries the throttle time
and the connection is muted that long (KIP-219; kafkawire.protocol.handler.Throttled).

Bounded: a rate (Kafka's sensor) per quota-sharing group, dropped after an hour without a
record as Kafka expires sensors, and at most ``MAX_TRACKED`` per quota type (the least recently
used goes first: a new one starts from an empty rate, as a new client id would).
"""
from __future__ import annotations

import ipaddress
import math
import time
from collections import OrderedDict
from typing import Callable

from .host_addresses import HOSTS

__all__ = ["SampledRate", "SampledAvg", "TokenBucket", "throttle_time_ms", "QuotaIndex", "QuotaIndexes", "quota_tags",
           "quota_limit", "ClientQuotaManager", "PRODUCER_BYTE_RATE", "CONSUMER_BYTE_RATE", "REQUEST_PERCENTAGE",
           "CONTROLLER_MUTATION_RATE", "CONNECTION_CREATION_RATE", "DEFAULT", "principal_user", "ip_connection_rates",
           "IpConnectionRates"]

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
IP = "ip"
USER, CLIENT_ID = "user", "client-id"

INACTIVE_EXPIRY_MS = 3600 * 1000        # ClientQuotaManager.INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS
MAX_TRACKED = 10_000                    # rates kept per quota type (Kafka bounds them by expiry alone)

# Kafka's quotaTypesEnabled bits
CLIENT_ID_QUOTA, USER_QUOTA, USER_CLIENT_ID_QUOTA = 1, 2, 4


class _Default:
    """The default entity (a null name in a ClientQuotaRecord; ``<default>`` in kafka-configs)."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "<default>"


DEFAULT = _Default()


def principal_user(principal: str) -> str:
    """KafkaPrincipal.getName of ``User:alice``: the name a user quota entity is matched against."""
    return principal.split(":", 1)[1] if ":" in principal else principal


# -- the rate --

class _Sample:
    __slots__ = ("start_ms", "last_event_ms", "value", "events")

    def __init__(self, now_ms: int):
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0
        self.events = 0


class SampledRate:
    """Kafka's Rate (per second) over a WindowedSum with ``samples`` samples of ``window_ms`` each."""
    __slots__ = ("samples", "window_ms", "_slots", "_current", "last_record_ms")

    def __init__(self, samples: int, window_ms: int):
        self.samples, self.window_ms = samples, window_ms
        self._slots: list[_Sample] = []
        self._current = 0
        self.last_record_ms = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now_ms
        self.last_record_ms = now_ms

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._slots:
            self._slots.append(_Sample(now_ms))
        return self._slots[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # one slot more than the samples: the "overlapping sample" Kafka keeps
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._slots):
            self._slots.append(_Sample(now_ms))
        else:
            self._slots[self._current].reset(now_ms)
        return self._slots[self._current]

    def _purge(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._slots:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        """The span the rate is measured over (Rate.windowSize): at least samples - 1 whole windows."""
        self._purge(now_ms)
        oldest = min((s.start_ms for s in self._slots), default=now_ms)
        elapsed = now_ms - oldest
        full_windows = elapsed // self.window_ms
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """Per second."""
        self._purge(now_ms)
        total = sum(s.value for s in self._slots)
        return total / (self.window_size_ms(now_ms) / 1000.0)


class SampledAvg:
    """Kafka's Avg over ``samples`` windows of ``window_ms`` (the throttle-time sensor, with the
    broker's metrics.num.samples and metrics.sample.window.ms): the mean of the values recorded in
    the windows not yet expired, NaN with none; ``maximum``, Kafka's Max over the same windows."""
    __slots__ = ("samples", "window_ms", "_windows")

    def __init__(self, samples: int, window_ms: int):
        self.samples, self.window_ms = samples, window_ms
        self._windows: list[list] = []          # [start ms, total, count, max], oldest first, at most ``samples``

    def record(self, value: float, now_ms: int) -> None:
        windows = self._windows
        if not windows or now_ms - windows[-1][0] >= self.window_ms:
            windows.append([now_ms, 0.0, 0, value])
            del windows[:-self.samples]
        window = windows[-1]
        window[1] += value
        window[2] += 1
        window[3] = max(window[3], value)

    def _live(self, now_ms: int) -> list[list]:
        return [w for w in self._windows if now_ms - w[0] < self.samples * self.window_ms]

    def measure(self, now_ms: int) -> float:
        live = self._live(now_ms)
        count = sum(w[2] for w in live)
        return sum(w[1] for w in live) / count if count else math.nan

    def maximum(self, now_ms: int) -> float:
        live = self._live(now_ms)
        return max(w[3] for w in live) if live else math.nan


class TokenBucket:
    """Kafka's TokenBucket stat (the controller mutation quota, KIP-599): tokens refill at the
    quota's rate per second up to a burst of ``samples`` x window x quota, and each record takes
    its value out (the balance may go below zero). A new bucket starts full: Kafka's starts from
    time 0, so its first refill fills it."""
    __slots__ = ("samples", "window_ms", "tokens", "last_update_ms", "last_record_ms")

    def __init__(self, samples: int, window_ms: int):
        self.samples, self.window_ms = samples, window_ms
        self.tokens: float | None = None        # None: full
        self.last_update_ms = self.last_record_ms = 0

    def measure(self, quota: float, now_ms: int) -> float:
        """The tokens left at ``now_ms`` for a quota of ``quota`` per second."""
        burst = self.samples * (self.window_ms / 1000.0) * quota
        if self.tokens is None:
            self.tokens = burst
        else:
            self.tokens = min(burst, self.tokens + quota * (now_ms - self.last_update_ms) / 1000.0)
        self.last_update_ms = now_ms
        return self.tokens

    def record(self, quota: float, value: float, now_ms: int) -> float:
        """Take ``value`` out; the tokens left."""
        burst = self.samples * (self.window_ms / 1000.0) * quota
        self.tokens = min(burst, self.measure(quota, now_ms) - value)
        self.last_record_ms = now_ms
        return self.tokens


def throttle_time_ms(observed: float, bound: float, window_ms: int) -> int:
    """QuotaUtils.throttleTime: X = (O - T) / T * W, rounded as Java's Math.round (a zero quota: X is infinite,
    rounded to Long.MAX_VALUE)."""
    return java_round((observed - bound) / bound * window_ms if bound else math.inf)


_LONG_MIN, _LONG_MAX = -2**63, 2**63 - 1


def java_round(value: float) -> int:
    """Java's Math.round(double): half up, NaN 0, saturating at the long range."""
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return _LONG_MAX if value > 0 else _LONG_MIN
    return max(_LONG_MIN, min(_LONG_MAX, math.floor(value + 0.5)))


def java_int_cast(value: int) -> int:
    """Java's (int) cast of a long: its low 32 bits. The quota managers cast their long throttle time so; an
    infinite one (a zero quota) becomes -1, which throttles nothing."""
    return (value + 2**31) % 2**32 - 2**31


# -- which quota applies --

class QuotaIndex:
    """One quota key's entities of an image: {(user, client id): value}, each part a name,
    DEFAULT, or None (absent), and Kafka's quotaTypesEnabled bits for them."""
    __slots__ = ("entries", "enabled")

    def __init__(self, entries: dict):
        self.entries = entries
        enabled = 0
        for user, client in entries:
            enabled |= USER_CLIENT_ID_QUOTA if user is not None and client is not None else \
                USER_QUOTA if user is not None else CLIENT_ID_QUOTA
        self.enabled = enabled

    @classmethod
    def of(cls, client_quotas: dict, key: str) -> "QuotaIndex":
        """From ``image.client_quotas`` ({frozenset((entity type, name or None)): {key: value}})."""
        entries = {}
        for entity, values in client_quotas.items():
            if key not in values:
                continue
            parts = dict(entity)
            if not parts or not set(parts) <= {USER, CLIENT_ID}:
                continue        # ip entities are connection-rate quotas (ConnectionQuotas), not read here
            user = (DEFAULT if parts[USER] is None else parts[USER]) if USER in parts else None
            client = (DEFAULT if parts[CLIENT_ID] is None else parts[CLIENT_ID]) if CLIENT_ID in parts else None
            entries[(user, client)] = float(values[key])
        return cls(entries)


def quota_tags(index: QuotaIndex, user: str, client_id: str) -> tuple[str, str]:
    """DefaultQuotaCallback.quotaMetricTags: the (user, client id) whose rate this client shares;
    "" for a part the matching quota does not name."""
    enabled, has = index.enabled, index.entries.__contains__
    if enabled in (0, CLIENT_ID_QUOTA):
        return "", client_id
    if enabled == USER_QUOTA:
        return user, ""
    if enabled == USER_CLIENT_ID_QUOTA:
        return user, client_id
    # quotas at more than one level: the first entity in the precedence order that exists
    if has((user, client_id)) or has((user, DEFAULT)):
        return user, client_id
    if has((user, None)):
        return user, ""
    if has((DEFAULT, client_id)) or has((DEFAULT, DEFAULT)):
        return user, client_id
    if has((DEFAULT, None)):
        return user, ""
    return "", client_id


def quota_limit(index: QuotaIndex, tags: tuple[str, str]) -> float | None:
    """DefaultQuotaCallback.quotaLimit for the tags; None: no quota."""
    user, client = tags
    get = index.entries.get
    if user and client:
        order = [(user, client), (user, DEFAULT), (DEFAULT, client), (DEFAULT, DEFAULT)]
    elif user:
        order = [(user, None), (DEFAULT, None)]
    elif client:
        order = [(None, client), (None, DEFAULT)]
    else:
        return None
    for entity in order:
        value = get(entity)
        if value is not None:
            return value
    return None


class _FromImage:
    """What ``build(image.client_quotas)`` gives for the image ``image()`` gives (None: no image
    yet), rebuilt only when the image changed (its offset says so; a stand-in image without
    provenance: by identity)."""

    def __init__(self, image: Callable, build: Callable):
        self.image, self.build = image, build
        self._source = None               # the client_quotas dict it was built from
        self._offset = None               # and the image's offset then
        self._built = build({})

    def current(self):
        image = self.image()
        quotas = getattr(image, "client_quotas", None)
        offset = getattr(getattr(image, "provenance", None), "offset", None)
        if quotas is not self._source or offset != self._offset:
            self._source, self._offset = quotas, offset
            self._built = self.build(quotas or {})
        return self._built


class QuotaIndexes(_FromImage):
    """The QuotaIndex of each of ``keys`` for the image ``image()`` gives: ``indexes(key)``."""

    def __init__(self, image: Callable, keys):
        keys = tuple(keys)
        super().__init__(image, lambda quotas: {k: QuotaIndex.of(quotas, k) for k in keys})

    def __call__(self, key: str) -> QuotaIndex:
        return self.current()[key]


class IpConnectionRates(_FromImage):
    """ip_connection_rates of the image ``image()`` gives: ``rates()``."""

    def __init__(self, image: Callable):
        super().__init__(image, lambda quotas: ip_connection_rates(quotas))
        self._hosts_version = HOSTS.version

    def __call__(self) -> dict:
        if self._hosts_version != HOSTS.version:       # a host name's lookup finished: build again
            self._hosts_version, self._source = HOSTS.version, None
        return self.current()


def ip_connection_rates(client_quotas: dict) -> dict:
    """The ``connection_creation_rate`` of the ``ip`` entities of ``image.client_quotas``:
    {address (normalized, as ipaddress writes it) or None (the default entity): connections per
    second}. An entity named by a host name stands for its address once the name's lookup has
    finished (host_addresses: Kafka resolves it once, when the quota arrives)."""
    rates = {}
    for entity, values in client_quotas.items():
        if CONNECTION_CREATION_RATE not in values:
            continue
        parts = dict(entity)
        if set(parts) != {IP}:
            continue
        name = parts[IP]
        if name is not None:
            name = HOSTS.address(name)
            if name is None:
                continue
        rates[name] = int(values[CONNECTION_CREATION_RATE])
    return rates


# -- the manager --

class ClientQuotaManager:
    """One quota type's rates (Kafka's ClientQuotaManager for FETCH or PRODUCE): ``record``
    returns the throttle time, 0 when within the quota or when no quota of this type exists."""

    def __init__(self, samples: int, window_seconds: int, *, max_tracked: int = MAX_TRACKED,
                 max_throttle_ms: int | None = None, clock: Callable[[], int] | None = None):
        self.samples, self.window_ms = samples, window_seconds * 1000
        self.max_tracked, self.max_throttle_ms = max_tracked, max_throttle_ms
        self.clock = clock or (lambda: int(time.monotonic() * 1000))
        self.rates: OrderedDict[tuple[str, str], SampledRate] = OrderedDict()
        # The throttle-time sensors (Avg), of the tags whose rate is kept; made at a first throttle.
        self.throttle_times: dict[tuple[str, str], SampledAvg] = {}
        self.throttle_samples, self.throttle_window_ms = 2, 30_000      # metrics.num.samples, .sample.window.ms

    def _new_stat(self):
        return SampledRate(self.samples, self.window_ms)

    def stat_for(self, tags: tuple, now_ms: int):
        """The rate (or other stat) of ``tags``, made if new. Rates are kept least recently used first: those idle
        an hour are dropped (Kafka's sensor expiry), and the first ones beyond ``max_tracked``."""
        rates = self.rates
        while rates and now_ms - next(iter(rates.values())).last_record_ms >= INACTIVE_EXPIRY_MS:
            rates.popitem(last=False)
        rate = rates.get(tags)
        if rate is not None:
            rates.move_to_end(tags)
            return rate
        while len(rates) >= self.max_tracked:
            rates.popitem(last=False)
        rate = rates[tags] = self._new_stat()
        rate.last_record_ms = now_ms
        return rate

    def record(self, index: QuotaIndex, user: str, client_id: str, value: float, now_ms: int | None = None) -> int:
        """maybeRecordAndGetThrottleTimeMs: record ``value`` and return the throttle time in ms."""
        if not index.enabled:
            return 0
        now_ms = self.clock() if now_ms is None else now_ms
        tags = quota_tags(index, user, client_id)
        rate = self.stat_for(tags, now_ms)
        rate.record(value, now_ms)
        bound = quota_limit(index, tags)
        if bound is None:
            return 0
        observed = rate.measure(now_ms)
        if observed <= bound:
            return 0
        return self._capped(throttle_time_ms(observed, bound, rate.window_size_ms(now_ms)))

    def _capped(self, ms: int) -> int:
        """The throttle time as Kafka's managers give it: at most ``max_throttle_ms`` (the request quota's
        boundedThrottleTime), cast to an int (so a zero byte rate, an infinite time, throttles nothing)."""
        return java_int_cast(ms if self.max_throttle_ms is None else min(ms, self.max_throttle_ms))

    def unrecord(self, index: QuotaIndex, user: str, client_id: str, value: float, now_ms: int | None = None) -> None:
        """unrecordQuotaSensor: take a recorded value back out (a throttled fetch sends nothing)."""
        if not index.enabled:
            return
        now_ms = self.clock() if now_ms is None else now_ms
        self.stat_for(quota_tags(index, user, client_id), now_ms).record(-value, now_ms)

    def throttled(self, index: QuotaIndex, user: str, client_id: str, throttle_ms: int,
                  now_ms: int | None = None) -> None:
        """ClientQuotaManager.throttle: a request throttled ``throttle_ms`` by this quota type (the
        larger of a request's throttles) is recorded in the client's throttle-time sensor."""
        if throttle_ms <= 0 or not index.enabled:
            return
        now_ms = self.clock() if now_ms is None else now_ms
        tags = quota_tags(index, user, client_id)
        avg = self.throttle_times.get(tags)
        if avg is None:
            if len(self.throttle_times) >= self.max_tracked:        # those whose rate went first
                self.throttle_times = {t: a for t, a in self.throttle_times.items() if t in self.rates}
            avg = self.throttle_times[tags] = SampledAvg(self.throttle_samples, self.throttle_window_ms)
        avg.record(throttle_ms, now_ms)

    def measured(self, now_ms: int | None = None) -> list[tuple[tuple[str, str], float, float]]:
        """(tags, rate, average throttle time or NaN) of every client rate kept, for the metrics."""
        now_ms = self.clock() if now_ms is None else now_ms
        out = []
        for tags, rate in self.rates.items():
            avg = self.throttle_times.get(tags)
            out.append((tags, rate.measure(now_ms), math.nan if avg is None else avg.measure(now_ms)))
        return out

    def max_value_in_window(self, index: QuotaIndex, user: str, client_id: str) -> float:
        """maxValueInQuotaWindow: the most one record can be without certain throttling (a consumer
        fetch's max_bytes is capped to it)."""
        if not index.enabled:
            return math.inf
        limit = quota_limit(index, quota_tags(index, user, client_id))
        if limit is None:
            return math.inf
        return limit * (self.samples - 1) * (self.window_ms / 1000)
