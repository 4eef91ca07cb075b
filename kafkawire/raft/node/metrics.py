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

from kafkawire.raft.states import Candidate, Follower, Leader, Prospective, Resigned, Unattached

_STATE_NAMES = {Leader: "leader", Follower: "follower", Candidate: "candidate", Prospective: "prospective",
                Unattached: "unattached", Resigned: "resigned"}


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

    def update_from(self, core, store) -> None:
        state = core.state
        voted = getattr(state, "voted_key", None)
        leader = core.leader_and_epoch()
        voters = core.voters()
        self.values.update({
            "current-leader": -1 if leader.leader_id is None else leader.leader_id,
            "current-epoch": core.epoch,
            "current-vote": -1 if voted is None else voted.id,
            "current-state": _STATE_NAMES.get(type(state), type(state).__name__.lower()),
            "high-watermark": self.high_watermark,
            "log-end-offset": store.end_offset(),
            "log-end-epoch": core.log.last_fetched_epoch,
            "number-of-voters": len(voters),
            # Kafka: voters whose connection information is not known (no endpoint on our listener).
            "number-unknown-voter-connections": sum(
                1 for v in voters if v.key.id != core.config.node_id
                and v.endpoints.address(core.config.listener) is None),
            "uncommitted-voter-change": int(core.reconfig.pending is not None) if isinstance(state, Leader) else 0,
        })
        if isinstance(state, Leader):
            self.values["number-of-observers"] = len(state.book.observer_states)
        else:
            self.values["number-of-observers"] = 0
        self._counters = dict(core.counters)

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
