"""The KIP-595 / KIP-853 raft metrics (Kafka's KafkaRaftMetrics, group "raft-metrics"), kept
by the driver and published as JSON (a file an operator can read, and the node's log) and, when
enabled, on the node's Prometheus endpoint (prometheus.py).

Names are Kafka's: current-leader, current-vote, current-epoch, current-state,
high-watermark, log-end-offset, log-end-epoch, commit-latency-avg/max, election-latency-avg/max,
append-records-rate, fetch-records-rate, poll-idle-ratio-avg, number-of-voters, number-of-observers,
uncommitted-voter-change, number-unknown-voter-connections. The sensors are Kafka's sampled
stats: ``metrics.num.samples`` windows (2) of ``metrics.sample.window.ms`` (30 s) each, so an
average, a maximum or a rate covers the last 30 to 60 s; with no sample in them an average or
a maximum is NaN, as Kafka's Avg and Max measure. Rates are read from the core's counters
(append_records, fetch_records), not counted a second time. poll-idle-ratio-avg is the share
of those windows the driver was not stepping the core (Kafka's raft thread is idle while it
waits for a message; here the node's event loop runs the raft work between other work), read
from the driver's total of busy milliseconds like a rate, so reading it resets nothing.
"""
from __future__ import annotations

import bisect
import itertools
import json
import math
import os
import time
from collections import Counter, deque
from typing import Callable

from kafkawire.raft.io import RaftStatus

# MetricConfig's defaults (metrics.num.samples, metrics.sample.window.ms).
DEFAULT_SAMPLES = 2
DEFAULT_WINDOW_MS = 30_000


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


class LatencyHistogram:
    """The kept samples' weights by latency, for percentiles without a sort: buckets of 0.01 ms
    below 100 ms and of 1 ms below 10 s, a percentile read as its bucket's lower bound; above
    10 s the exact values. Sorting the kept samples at each read held a benchmark leader's loop
    5-50 ms once a second (the window holds a benchmark's whole measuring window of appends),
    which was most of its commits over 20 ms."""

    FINE_MS, FINE_STEP = 100, 0.01        # 10,000 buckets
    COARSE_MS = 10_000                    # then 1 ms buckets: 9,900 more

    def __init__(self):
        self._fine = int(self.FINE_MS / self.FINE_STEP)
        self.counts = [0] * (self._fine + self.COARSE_MS - self.FINE_MS)
        self.beyond: Counter = Counter()   # ms -> weight, for latencies of COARSE_MS or more

    def _bucket(self, ms: float) -> int | None:
        if ms < self.FINE_MS:
            return max(0, int(ms / self.FINE_STEP))
        if ms < self.COARSE_MS:
            return self._fine + int(ms - self.FINE_MS)
        return None

    def _lower_bound(self, bucket: int) -> float:
        if bucket < self._fine:
            return round(bucket * self.FINE_STEP, 2)
        return float(self.FINE_MS + bucket - self._fine)

    def add(self, ms: float, weight: int) -> None:
        bucket = self._bucket(ms)
        if bucket is None:
            self.beyond[ms] += weight
        else:
            self.counts[bucket] += weight

    def remove(self, ms: float, weight: int) -> None:
        bucket = self._bucket(ms)
        if bucket is None:
            self.beyond[ms] -= weight
            if self.beyond[ms] <= 0:
                del self.beyond[ms]
        else:
            self.counts[bucket] -= weight

    def percentiles(self, ps, total: int) -> list[float]:
        """Nearest rank of each of ``ps`` among ``total`` appends."""
        cumulative = list(itertools.accumulate(self.counts))
        in_buckets = cumulative[-1]
        beyond = sorted(self.beyond.items())
        out = []
        for p in ps:
            rank = min(total - 1, int(p / 100 * total))
            if rank < in_buckets:
                out.append(self._lower_bound(bisect.bisect_right(cumulative, rank)))
                continue
            seen = in_buckets
            for ms, weight in beyond:
                seen += weight
                if seen > rank:
                    out.append(ms)
                    break
        return out


class LatencyWindow:
    """Kafka's Avg and Max over sampled windows, plus percentiles over the last ``size``
    appends (kafkawire's addition, for benchmarks/quorum.py). A sample may stand for several
    appends (its weight): a leader's workload commits its one-record appends in chunks of
    hundreds, and one weighted sample per chunk, not one per record, keeps the metric's cost
    per batch. Averages and percentiles count each append; the samples kept are the newest
    that stand for ``size`` appends (the oldest of them may stand for a few more)."""

    # record_spread stands for a chunk by at most this many samples, at the middle of equal
    # shares of it: a percentile is off by at most 1/8 of the chunk's spread of latencies.
    SPREAD_POINTS = 4

    def __init__(self, size: int = 16384, *, samples: int = DEFAULT_SAMPLES, window_ms: int = DEFAULT_WINDOW_MS,
                 clock: Callable[[], float] = _monotonic_ms):
        self.size = size
        self.samples: deque[tuple[float, int]] = deque()               # (ms, weight)
        self._timed: deque[tuple[float, float, int]] = deque()     # (when, ms, weight)
        self._kept = self._timed_kept = 0      # the appends samples and _timed stand for
        self._histogram = LatencyHistogram()   # the weights of ``samples``, for percentiles
        # avg and max of _timed kept as it changes (a benchmark's window holds ~10^5 samples:
        # a walk at each read held its leader's loop for tens of ms): the weighted sum, and the
        # entries that may yet be the maximum, as (entry number, ms), falling.
        self._timed_sum = 0.0
        self._timed_max: deque[tuple[int, float]] = deque()
        self._timed_pushed = self._timed_popped = 0
        self.span_ms = samples * window_ms
        self.clock = clock

    def record(self, ms: float, weight: int = 1) -> None:
        """``weight`` appends that each took ``ms``."""
        self._add(self.clock(), ms, weight)

    def _add(self, when: float, ms: float, weight: int) -> None:
        samples, timed, size = self.samples, self._timed, self.size
        samples.append((ms, weight))
        self._push_timed(when, ms, weight)
        self._histogram.add(ms, weight)
        self._kept += weight
        while self._kept - samples[0][1] >= size:
            old_ms, old_weight = samples.popleft()
            self._kept -= old_weight
            self._histogram.remove(old_ms, old_weight)
        while self._timed_kept - timed[0][2] >= size:
            self._pop_timed()

    def _push_timed(self, when: float, ms: float, weight: int) -> None:
        self._timed.append((when, ms, weight))
        self._timed_kept += weight
        self._timed_sum += ms * weight
        falling = self._timed_max
        while falling and falling[-1][1] <= ms:
            falling.pop()
        falling.append((self._timed_pushed, ms))
        self._timed_pushed += 1

    def _pop_timed(self) -> None:
        _, ms, weight = self._timed.popleft()
        self._timed_popped += 1
        self._timed_kept -= weight
        self._timed_sum = self._timed_sum - ms * weight if self._timed else 0.0   # no drift kept
        falling = self._timed_max
        while falling and falling[0][0] < self._timed_popped:
            falling.popleft()

    def record_spread(self, oldest_ms: float, newest_ms: float, count: int) -> None:
        """``count`` appends whose latencies fall evenly from ``oldest_ms`` (the first
        appended) to ``newest_ms`` (the last): a chunk scheduled at a fixed spacing and
        committed at once."""
        points = min(count, self.SPREAD_POINTS)
        if points <= 1:
            self.record(oldest_ms, count)
            return
        step = (oldest_ms - newest_ms) / (count - 1)
        share, extra = divmod(count, points)
        when = self.clock()
        first = 0
        for i in range(points):
            weight = share + (i < extra)
            self._add(when, oldest_ms - step * (first + (weight - 1) / 2), weight)    # this share's middle append
            first += weight

    def count(self) -> int:
        """The appends the kept samples stand for."""
        return self._kept

    def _recent(self) -> deque[tuple[float, float, int]]:
        since = self.clock() - self.span_ms
        while self._timed and self._timed[0][0] < since:
            self._pop_timed()
        return self._timed

    def avg(self) -> float:
        return self._timed_sum / self._timed_kept if self._recent() and self._timed_kept else math.nan

    def max(self) -> float:
        return self._timed_max[0][1] if self._recent() else math.nan

    def percentile(self, p: float) -> float | None:
        """The latency below which ``p`` % of the kept appends fall (nearest rank, to the
        histogram's resolution)."""
        return self.percentiles((p,))[0]

    def percentiles(self, ps) -> list[float | None]:
        """``percentile`` of each of ``ps`` (LatencyHistogram's resolution: 0.01 ms below 100 ms,
        1 ms below 10 s)."""
        if not self.samples:
            return [None for _ in ps]
        return list(self._histogram.percentiles(ps, self._kept))


class CounterRate:
    """Kafka's Rate over a WindowedSum, read from a counter that only grows: the counter's value
    at the start of each window is kept, and the rate is what it grew since the oldest kept
    window over the time elapsed, counted as at least ``samples - 1`` full windows (Rate.windowSize)."""

    def __init__(self, *, samples: int = DEFAULT_SAMPLES, window_ms: int = DEFAULT_WINDOW_MS,
                 clock: Callable[[], float] = _monotonic_ms):
        self.samples, self.window_ms, self.clock = samples, window_ms, clock
        self._starts: deque[tuple[float, float]] = deque(maxlen=samples)   # (window start, counter then)

    def observe(self, total: float) -> None:
        now = self.clock()
        if not self._starts or now - self._starts[-1][0] >= self.window_ms:
            self._starts.append((now, total))

    def rate(self, total: float) -> float:
        """Per second."""
        self.observe(total)
        started, then = self._starts[0]
        elapsed_ms = self.clock() - started
        full_windows = int(elapsed_ms // self.window_ms)
        if full_windows < self.samples - 1:
            elapsed_ms += (self.samples - 1 - full_windows) * self.window_ms
        return (total - then) / (max(elapsed_ms, 1) / 1000)


def kafka_state(status: RaftStatus, is_voter: bool) -> str:
    """KafkaRaftMetrics' current-state: the role, with the vote and voter membership folded in
    as Kafka names them (a resigned leader falls through to "unattached" there too)."""
    role = status.role
    if role in ("leader", "candidate"):
        return role
    if role == "prospective":
        return "prospective" if status.voted_id is None else "prospective-voted"
    if role == "follower":
        return "follower" if is_voter else "observer"
    return "unattached" if status.voted_id is None else "unattached-voted"


def current_vote(status: RaftStatus, node_id: int) -> int:
    """KafkaRaftMetrics' current-vote: a leader or candidate voted for itself; -1 for no vote."""
    if status.role in ("leader", "candidate"):
        return node_id
    return -1 if status.voted_id is None else status.voted_id


class RaftMetrics:
    def __init__(self, node_id: int, *, samples: int = DEFAULT_SAMPLES, window_ms: int = DEFAULT_WINDOW_MS):
        self.node_id = node_id
        self.values: dict[str, object] = {}
        self.high_watermark = -1
        self.commit_latency = LatencyWindow(samples=samples, window_ms=window_ms)
        self.election_latency = LatencyWindow(samples=samples, window_ms=window_ms)
        self.append_records = CounterRate(samples=samples, window_ms=window_ms)
        self.fetch_records = CounterRate(samples=samples, window_ms=window_ms)
        # Milliseconds the driver spent stepping the core (poll-idle-ratio-avg: the rest is idle).
        self.busy_ms = 0.0
        self.busy = CounterRate(samples=samples, window_ms=window_ms)
        self.appends_refused = 0          # AppendQueueFull answers (kafkawire's addition)
        self.new_leaders = 0              # leader changes to a known leader (NewActiveControllersCount)
        self._leaderless_since: int | None = None
        self._counters: dict[str, int] = {}
        self._status_source: tuple[Callable[[], RaftStatus], object] | None = None   # see status_changed

    def on_leader_change(self, leader, now_ms: int) -> None:
        if leader.leader_id is None:
            if self._leaderless_since is None:
                self._leaderless_since = now_ms
        else:
            self.new_leaders += 1
            if self._leaderless_since is not None:
                self.election_latency.record(now_ms - self._leaderless_since)
                self._leaderless_since = None

    def set_high_watermark(self, high_watermark: int) -> None:
        """The high watermark the driver exposed (after the fsync it depends on)."""
        self.high_watermark = self.values["high-watermark"] = high_watermark

    def status_changed(self, status_of: Callable[[], RaftStatus], store) -> None:
        """A Ready was applied: the gauges are taken from ``status_of()`` when next read
        (snapshot), not now. Building the core's status after every step was ~9% of a 3-voter
        leader's loop at 100,000 records/s, for gauges read once a second at most."""
        self._status_source = (status_of, store)

    def _refresh(self) -> None:
        if self._status_source is not None:
            status_of, store = self._status_source
            self._status_source = None
            self.update_from(status_of(), store)

    def update_from(self, status: RaftStatus, store) -> None:
        """The gauges from the core's status after a Ready was applied (the log end as the
        store has it on disk)."""
        self.values.update({
            "current-leader": -1 if status.leader.leader_id is None else status.leader.leader_id,
            "current-epoch": status.epoch,
            "current-vote": current_vote(status, self.node_id),
            "current-state": status.role,
            "high-watermark": self.high_watermark,
            "log-end-offset": store.end_offset(),
            "log-end-epoch": status.last_fetched_epoch,
            "number-of-voters": status.voters,
            # Kafka: voters whose connection information is not known (no endpoint on our listener).
            "number-unknown-voter-connections": status.unknown_voter_connections,
            "uncommitted-voter-change": int(status.uncommitted_voter_change),
            "number-of-observers": status.observers,
        })
        self._counters = dict(status.counters)
        self.append_records.observe(self._counters.get("append_records", 0))
        self.fetch_records.observe(self._counters.get("fetch_records", 0))

    def rates(self, counters: dict[str, int]) -> dict[str, float]:
        """append-records-rate and fetch-records-rate (per second) for the core's counters now."""
        return {"append-records-rate": self.append_records.rate(counters.get("append_records", 0)),
                "fetch-records-rate": self.fetch_records.rate(counters.get("fetch_records", 0))}

    def poll_idle_ratio(self) -> float:
        """poll-idle-ratio-avg: the share of the sampled windows the driver did no raft work (Kafka's
        TimeRatio of its raft thread's waits; 1.0 before anything is measured, as Kafka's default)."""
        return min(1.0, max(0.0, 1.0 - self.busy.rate(self.busy_ms) / 1000))

    def snapshot(self) -> dict:
        self._refresh()
        counters = self._counters
        out = dict(self.values)
        out.update({
            "commit-latency-avg": _finite(self.commit_latency.avg()),
            "commit-latency-max": _finite(self.commit_latency.max()),
            # kafkawire's additions (Kafka's metric has avg and max only), for benchmarks/quorum.py
            **dict(zip(("commit-latency-p50", "commit-latency-p99"), self.commit_latency.percentiles((50, 99)))),
            "commit-latency-samples": self.commit_latency.count(),
            "election-latency-avg": _finite(self.election_latency.avg()),
            "election-latency-max": _finite(self.election_latency.max()),
            **self.rates(counters),
            "poll-idle-ratio-avg": self.poll_idle_ratio(),
            "elections": counters.get("elections", 0),
            "leaderships": counters.get("leaderships", 0),
            "appends-refused": self.appends_refused,
        })
        return out

    def write(self, path: str) -> None:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"node-id": self.node_id, "group": "raft-metrics", "metrics": self.snapshot()}, f, indent=1)
        os.replace(tmp, path)


def _finite(value: float) -> float | None:
    """JSON has no NaN: a measure without samples is null in the file."""
    return None if math.isnan(value) else value
