"""Kafka's request metrics (``kafka.network:type=RequestMetrics``, RequestChannel.Metrics) for a
KafkaServer's requests, as the JMX exporter's usual Kafka rules name them:

* RequestsPerSec with ``request`` and ``version`` keys: the counter
  ``kafka_network_requestmetrics_requests_total{request="Produce",version="9"}``;
* ErrorsPerSec with ``request`` and ``error`` keys: ``kafka_network_requestmetrics_errors_total``,
  counting every ``error_code`` each response carries in its version (top level, topic and
  partition: what most of Kafka's ``errorCounts`` count, NONE included; a few of Kafka's skip
  their top-level code, Metadata v13's for one, which this counts);
* the histograms TotalTimeMs, RequestQueueTimeMs, LocalTimeMs, RemoteTimeMs,
  ResponseQueueTimeMs, ResponseSendTimeMs with a ``request`` key: the rules turn a Yammer
  histogram's percentile attributes into gauges labelled ``quantile`` ("0.50", "0.75", "0.95",
  "0.98", "0.99", "0.999") and its Count into ``_count`` (no ``_sum``: the rules drop it), so each
  is ``kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"}`` and
  ``kafka_network_requestmetrics_totaltimems_count{request="Produce"}``. The percentiles are of
  the last RECENT_SAMPLES requests of that name (Yammer's biased reservoir keeps 1028, weighted
  to the last minutes), in whole milliseconds as Kafka rounds them.

What each time is, in kafkawire's one event loop (Kafka's RequestChannel.updateRequestMetrics
measures the same points of its threads):

* RequestQueueTimeMs: from the request frame taken off the socket until its handler runs (Kafka:
  until a request handler thread dequeues it): the loop's delay;
* LocalTimeMs: the handler's own work; RemoteTimeMs: its wait for others (a Produce's acks=all
  replication, a Fetch's long poll after its first read: Kafka's purgatories), marked by the
  handler with ``local_work_done(ctx)`` (0 for handlers that never wait);
* ResponseQueueTimeMs: from the answer ready until the connection's writer takes it (answers
  go out in request order); ResponseSendTimeMs: writing it to the socket until drained;
* TotalTimeMs: from the frame taken off the socket to the answer drained.

Cost on the request path: five ``perf_counter`` reads, one tuple appended to a bounded deque, a
dict count and a walk of the response's error codes (a counter per response class and version,
made once); every duration is computed when scraped (benchmarks/request_metrics_cost.py).
"""
from __future__ import annotations

import time
from collections import deque
from typing import Callable, Iterator

from kafkawire.protocol.error_codes import Errors

from .metrics_http import Family

REQUEST_METRICS = "kafka_network_requestmetrics_"
# Yammer's ExponentiallyDecayingReservoir keeps 1028 samples; these keep the last 1028.
RECENT_SAMPLES = 1028
QUANTILES = (("0.50", 0.5), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99), ("0.999", 0.999))
now = time.perf_counter


# A request's moments (perf_counter seconds), a list for its cost: [received, started, local done,
# handled]; local done stays 0 unless the handler waits for others (``local_work_done``).
RECEIVED, STARTED, LOCAL_DONE, HANDLED = range(4)


def request_times(received: float) -> list[float]:
    return [received, 0.0, 0.0, 0.0]


def local_work_done(ctx) -> None:
    """A handler about to wait in a purgatory (acks=all, a long poll): what follows is RemoteTimeMs."""
    times = getattr(ctx, "timing", None)        # a context made in process (tests, tools) may have none
    if times is not None and not times[LOCAL_DONE]:
        times[LOCAL_DONE] = now()


class ApiStats:
    """One request name's counts and recent moments."""
    __slots__ = ("name", "versions", "recent", "errors")

    def __init__(self, name: str):
        self.name = name
        self.versions: dict[int, int] = {}      # requests answered by version; their sum is the timers' count
        # (received, started, local done, handled, ready, sent) of the last requests
        self.recent: deque = deque(maxlen=RECENT_SAMPLES)
        self.errors: dict[int, int] = {}


class RequestMetrics:
    """The request metrics of the requests a KafkaServer answered (shared by a node's listeners)."""

    def __init__(self):
        self.apis: dict[int, ApiStats] = {}

    def _stats(self, api_key: int, name: str) -> ApiStats:
        stats = self.apis.get(api_key)
        if stats is None:
            stats = self.apis[api_key] = ApiStats(name)
        return stats

    def count_errors(self, api_key: int, name: str, version: int, response) -> None:
        """ErrorsPerSec: the response's error codes (before it is encoded)."""
        stats = self.apis.get(api_key) or self._stats(api_key, name)
        counter = _COUNTERS.get((type(response), version)) or _counter(type(response), version)
        counter(response, stats.errors)

    def completed(self, api_key: int, name: str, version: int, times: list, ready: float, sent: float) -> None:
        """A request answered (its answer drained at ``sent``; ``ready`` when the writer took it)."""
        stats = self.apis.get(api_key) or self._stats(api_key, name)
        versions = stats.versions
        versions[version] = versions.get(version, 0) + 1
        stats.recent.append((*times, ready, sent))

    def families(self) -> Iterator[Family]:
        apis = sorted(self.apis.values(), key=lambda s: s.name)
        yield Family(REQUEST_METRICS + "requests", "RequestsPerSec: requests answered, by version",
                     [({"request": s.name, "version": str(v)}, float(n)) for s in apis
                      for v, n in sorted(s.versions.items())], kind="counter")
        yield Family(REQUEST_METRICS + "errors", "ErrorsPerSec: the error codes of the responses",
                     [({"request": s.name, "error": Errors.for_code(code).name}, float(n)) for s in apis
                      for code, n in sorted(s.errors.items())], kind="counter")
        columns = [(s, _durations_ms(s.recent)) for s in apis if s.recent]
        for index, (name, what) in enumerate(TIMERS):
            samples, counts = [], []
            for s, durations in columns:
                ordered = sorted(durations[index])
                samples += [({"request": s.name, "quantile": label}, percentile(ordered, q)) for label, q in QUANTILES]
                counts.append(({"request": s.name}, float(sum(s.versions.values()))))
            yield Family(REQUEST_METRICS + name, what, samples, kind="summary", counts=counts)


# The histograms, in the order _durations_ms gives them.
TIMERS = (("requestqueuetimems", "RequestQueueTimeMs: from the request read to its handler running (ms)"),
          ("localtimems", "LocalTimeMs: the handler's own work (ms)"),
          ("remotetimems", "RemoteTimeMs: the handler's wait for replication or a long poll (ms)"),
          ("responsequeuetimems", "ResponseQueueTimeMs: from the answer ready to its turn on the connection (ms)"),
          ("responsesendtimems", "ResponseSendTimeMs: writing the answer to the socket (ms)"),
          ("totaltimems", "TotalTimeMs: from the request read to its answer sent (ms)"))


def _durations_ms(recent) -> list[list[int]]:
    """Each timer's durations of the recent requests, in whole milliseconds (Kafka's Math.round)."""
    columns: list[list[int]] = [[] for _ in TIMERS]
    queue, local, remote, response_queue, send, total = columns
    for received, started, local_done, handled, ready, sent in recent:
        local_done = local_done or handled
        queue.append(round((started - received) * 1000))
        local.append(round((local_done - started) * 1000))
        remote.append(round((handled - local_done) * 1000))
        response_queue.append(round((ready - handled) * 1000))
        send.append(round((sent - ready) * 1000))
        total.append(round((sent - received) * 1000))
    return columns


def percentile(ordered: list, quantile: float) -> float:
    """Yammer's Snapshot.getValue: the interpolated value at ``quantile`` of ``ordered`` (0 with none)."""
    if not ordered:
        return 0.0
    position = quantile * (len(ordered) + 1)
    if position < 1:
        return float(ordered[0])
    if position >= len(ordered):
        return float(ordered[-1])
    lower, upper = ordered[int(position) - 1], ordered[int(position)]
    return lower + (position - int(position)) * (upper - lower)


# --- the error codes of a response ----------------------------------------------------------------

_COUNTERS: dict[tuple[type, int], Callable] = {}


def count_error_codes(message, version: int, counts: dict[int, int]) -> None:
    """Count every ``error_code`` that ``message`` (in ``version``) and the structs it holds carry."""
    (_COUNTERS.get((type(message), version)) or _counter(type(message), version))(message, counts)


def _counter(cls: type, version: int) -> Callable:
    """``count(message, counts)`` for a class in a version, made once: one function whose body
    walks the fields that hold error codes (loops over arrays of structs inlined), compiled from
    the class's field names, so that a response costs one call however deep its codes are."""
    key = (cls, version)
    counter = _COUNTERS.get(key)
    if counter is None:
        lines = _walk_lines(cls, version, "message", 1, set())
        if not lines:
            counter = _no_error_codes
        else:
            source = "def count(message, counts):\n" + "\n".join(lines)
            scope: dict = {}
            exec(compile(source, f"<error codes of {cls.__name__} v{version}>", "exec"), scope)   # noqa: S102
            counter = scope["count"]
        _COUNTERS[key] = counter
    return counter


def _walk_lines(cls: type, version: int, name: str, depth: int, seen: set) -> list[str]:
    """The body lines counting ``name``'s error codes (a ``cls`` in ``version``): its own, then
    those of the structs its fields hold. Python identifiers only: the fields' generated names."""
    if cls in seen:                 # a struct that holds itself has no error codes here (none does)
        return []
    seen = seen | {cls}
    pad = "    " * depth
    lines = []
    fields = [f for f in getattr(cls, "_FIELDS", ()) if f.present(version)]
    for f in fields:
        if f.name == "ErrorCode" and f.kind == "int16":
            lines += [f"{pad}code = {name}.{f.py_name}", f"{pad}counts[code] = counts.get(code, 0) + 1"]
    for f in fields:
        if f.struct is None or not (f.kind == "struct" or f.element == "struct"):
            continue
        inner = f"v{depth}"
        body = _walk_lines(f.struct, version, inner, depth + 1, seen)
        if body:
            loop = f"for {inner} in {name}.{f.py_name} or ():" if f.kind == "array" else \
                f"{inner} = {name}.{f.py_name}\n{pad}if {inner} is not None:"
            lines += [pad + loop, *body]
    return lines


def _no_error_codes(message, counts) -> None:
    pass


__all__ = ["RequestMetrics", "request_times", "local_work_done", "count_error_codes", "percentile", "now"]
