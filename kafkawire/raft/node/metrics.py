"""The KIP-595 / KIP-853 raft metrics (Kafka's KafkaRaftMetrics, group "raft-metrics"), kept
by the driver and published as JSON (a file an operator can read, and the node's log).

Names are Kafka's: current-leader, current-vote, current-epoch, current-state,
high-watermark, log-end-offset, log-end-epoch, commit-latency-avg/max, election-latency-avg/max,
append-records-rate, fetch-records-rate, number-of-voters, number-of-observers,
uncommitted-voter-change, number-unknown-voter-connections. Latencies are over a sliding
window of the last samples (Kafka uses 30 s windows); rates are per second since the last
publication.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from collections import deque

from kafkawire.raft.io import RaftStatus


class LatencyWindow:
    def __init__(self, size: int = 16384):
        self.samples: deque[float] = deque(maxlen=size)

    def record(self, ms: float) -> None:
        self.samples.append(ms)

    def avg(self) -> float | None:
        return statistics.fmean(self.samples) if self.samples else None

    def max(self) -> float | None:
        return max(self.samples) if self.samples else None

    def percentile(self, p: float) -> float | None:
        if not self.samples:
            return None
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


class RaftMetrics:
    def __init__(self, node_id: int):
        self.node_id = node_id
        self.values: dict[str, object] = {}
        self.high_watermark = -1
        self.commit_latency = LatencyWindow()
        self.election_latency = LatencyWindow()
        self.appends_refused = 0          # AppendQueueFull answers (kafkawire's addition)
        self._leaderless_since: int | None = None
        self._counts_at = (time.monotonic(), 0, 0)

    def on_leader_change(self, leader, now_ms: int) -> None:
        if leader.leader_id is None:
            if self._leaderless_since is None:
                self._leaderless_since = now_ms
        elif self._leaderless_since is not None:
            self.election_latency.record(now_ms - self._leaderless_since)
            self._leaderless_since = None

    def update_from(self, status: RaftStatus, store) -> None:
        """The gauges from the core's status after a Ready was applied (the log end as the
        store has it on disk)."""
        self.values.update({
            "current-leader": -1 if status.leader.leader_id is None else status.leader.leader_id,
            "current-epoch": status.epoch,
            "current-vote": -1 if status.voted_id is None else status.voted_id,
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

    def snapshot(self) -> dict:
        now = time.monotonic()
        counters = getattr(self, "_counters", {})
        appended, fetched = counters.get("append_records", 0), counters.get("fetch_records", 0)
        then, appended_then, fetched_then = self._counts_at
        elapsed = max(now - then, 1e-9)
        self._counts_at = (now, appended, fetched)
        out = dict(self.values)
        out.update({
            "commit-latency-avg": self.commit_latency.avg(),
            "commit-latency-max": self.commit_latency.max(),
            # kafkawire's additions (Kafka's metric has avg and max only), for benchmarks/quorum.py
            "commit-latency-p50": self.commit_latency.percentile(50),
            "commit-latency-p99": self.commit_latency.percentile(99),
            "commit-latency-samples": len(self.commit_latency.samples),
            "election-latency-avg": self.election_latency.avg(),
            "election-latency-max": self.election_latency.max(),
            "append-records-rate": (appended - appended_then) / elapsed,
            "fetch-records-rate": (fetched - fetched_then) / elapsed,
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
