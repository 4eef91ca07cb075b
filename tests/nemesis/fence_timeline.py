"""A fence's timeline from the nodes' logs (issue 28, goal 1): where the wall time between a
partition-move job's start and its leaderships' commit goes, read from the DEBUG lines of
kafkawire/controller/fence_timeline.py (on when a run of ``python -m tests.nemesis.paced_storm
--fence fence --timeline`` set it on every node; or by hand, with kafka-configs' broker-loggers).

    python -m tests.nemesis.fence_timeline DIR        # DIR: the quorum's, node-N.log in it

Printed, in seconds from the job's start on the active controller: when its steps that moved
the broker's leaderships were generated (their CPU), when the last of them committed, what the
leader generated meanwhile after them (the job's next part), and each follower's replay (its
CPU, and when it had replayed the last leadership); then the same per window of WINDOW_S: the
leader's step CPU, the offset committed by its end, each follower's replay CPU and offset, and
the collections the nodes logged (raft/node/gc_pauses.py, 50 ms and over).
"""
from __future__ import annotations

import argparse
import datetime
import glob
import os
import re
import statistics
import sys
from dataclasses import dataclass, field

WINDOW_S = 0.25
_STAMP = re.compile(r"^\[([^\]]+)\]")
_T = r"t=(?P<t>[0-9.]+) "
_JOB = re.compile(_T + r"job of broker (?P<broker>\d+) started: (?P<led>\d+) leaderships"
                  r"(?:.*?\(listed in (?P<listed>[0-9.]+) ms\))?")
_STEP = re.compile(_T + r"step offsets (?P<first>\d+)-(?P<last>\d+) \((?P<n>\d+) records\) generated and applied in "
                   r"(?P<ms>[0-9.]+) ms of CPU; (?P<left>\d+) leaderships left")
_COMMITTED = re.compile(_T + r"committed offsets (?P<first>\d+)-(?P<last>\d+) \((?P<n>\d+) records\), "
                        r"(?:applied ahead|replayed in (?P<ms>[0-9.]+) ms of CPU)")
_GC = re.compile(r"garbage collection of generation (?P<gen>\d) took (?P<ms>\d+) ms")
_LOGGED = re.compile(r"leads no partition: its \d+ leaderships moved and committed (?P<ms>\d+) ms after its job started")


@dataclass
class NodeLog:
    node: int
    job_t: float | None = None
    listed_ms: float | None = None                   # the job's start: its partitions listed, in its event
    steps: list = field(default_factory=list)       # (t, first, last, cpu ms, leaderships left)
    commits: list = field(default_factory=list)     # (t, first, last, replay cpu ms or None)
    collections: list = field(default_factory=list)  # (t, generation, ms)
    logged_ms: int | None = None                      # fencing.py's INFO line: committed this long after the start

    def committed_at(self, offset: int) -> float | None:
        return next((t for t, _, last, _ in self.commits if last >= offset), None)

    def committed_by(self, when: float) -> int:
        return max((last for t, _, last, _ in self.commits if t <= when), default=-1)


def _stamp(line: str) -> float | None:
    found = _STAMP.match(line)
    if found is None:
        return None
    return datetime.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def read(path: str, node: int) -> NodeLog:
    """The timeline's lines of one node's log (the last job's, if the log holds several)."""
    found = NodeLog(node)
    with open(path, errors="replace") as f:
        for line in f:
            if (m := _JOB.search(line)) is not None:
                found = NodeLog(node, float(m.group("t")), collections=found.collections,
                                listed_ms=float(m.group("listed")) if m.group("listed") else None)
            elif (m := _STEP.search(line)) is not None:
                found.steps.append((float(m.group("t")), int(m.group("first")), int(m.group("last")),
                                    float(m.group("ms")), int(m.group("left"))))
            elif (m := _COMMITTED.search(line)) is not None:
                found.commits.append((float(m.group("t")), int(m.group("first")), int(m.group("last")),
                                      float(m.group("ms")) if m.group("ms") else None))
            elif (m := _LOGGED.search(line)) is not None:
                found.logged_ms = int(m.group("ms"))
            elif (m := _GC.search(line)) is not None and (t := _stamp(line)) is not None:
                found.collections.append((t, int(m.group("gen")), int(m.group("ms"))))
    return found


def summary(base_dir: str) -> list[str]:
    logs = {}
    for path in sorted(glob.glob(os.path.join(base_dir, "node-*.log"))):
        node = int(os.path.basename(path)[5:-4])
        logs[node] = read(path, node)
    leaders = [n for n in logs.values() if n.job_t is not None]
    if not leaders:
        return [f"no job's timeline in {base_dir}/node-*.log (was kafkawire.controller.fence_timeline at DEBUG?)"]
    leader = max(leaders, key=lambda n: n.job_t)
    followers = [n for n in logs.values() if n is not leader]
    t0 = leader.job_t
    led = [s for s in leader.steps if s[0] >= t0]
    last_led = next((i for i, s in enumerate(led) if s[4] == 0), None)
    if last_led is None:
        return ["the job's leaderships did not all move in the log"]
    led, after = led[:last_led + 1], led[last_led + 1:]
    last_offset, appended = led[-1][2], led[-1][0]
    committed = leader.committed_at(last_offset)
    lines = [f"leader {leader.node}: {len(led)} steps moved the leaderships (offsets {led[0][1]}-{last_offset}), "
             f"{sum(s[3] for s in led) / 1000:.2f} s of CPU; first appended {led[0][0] - t0:.3f} s, "
             f"last {appended - t0:.3f} s, committed {_rel(committed, t0)} s"
             + (f" (from the job's start; its partitions listed in {leader.listed_ms:.0f} ms)"
                if leader.listed_ms is not None else "")]
    if leader.logged_ms is not None and committed is not None:
        lines.append(f"  the leader's INFO line says {leader.logged_ms} ms: its answer's callback ran "
                     f"{leader.logged_ms - (committed - t0) * 1000:.0f} ms after the commit was applied")
    lags = [c - s[0] for s in led if (c := leader.committed_at(s[2])) is not None]
    if lags:
        lines.append(f"  a leadership step's append to its commit: p50 {statistics.median(lags) * 1000:.0f} ms, "
                     f"max {max(lags) * 1000:.0f} ms")
    if committed is not None:
        meanwhile = [s for s in after if s[0] <= committed]
        lines.append(f"  after the last leadership step, before its commit: {len(meanwhile)} steps of the next part, "
                     f"{sum(s[3] for s in meanwhile):.0f} ms of CPU")
    end = committed if committed is not None else appended
    for f in followers:
        replays = [c for c in f.commits if c[0] >= t0 and c[3] is not None]
        upto = [c for c in replays if c[1] <= last_offset]
        lines.append(f"follower {f.node}: replayed the leaderships in {sum(c[3] for c in upto) / 1000:.2f} s of CPU "
                     f"({len(upto)} batches), the last at {_rel(f.committed_at(last_offset), t0)} s; "
                     f"its replay CPU before the leader's commit {sum(c[3] for c in replays if c[0] <= end):.0f} ms")
    lines += _windows(leader, followers, t0, end)
    return lines


def _rel(t: float | None, t0: float) -> str:
    return "never" if t is None else f"{t - t0:.3f}"


def _windows(leader: NodeLog, followers: list, t0: float, end: float) -> list[str]:
    lines = ["  window  | leader: steps' CPU ms, committed through | " +
             " | ".join(f"follower {f.node}: replay CPU ms, replayed through" for f in followers) + " | collections"]
    start = t0
    while start < end + WINDOW_S:
        stop = start + WINDOW_S
        cpu = sum(s[3] for s in leader.steps if start <= s[0] < stop)
        row = [f"  {start - t0:5.2f} s", f"{cpu:5.0f}, {leader.committed_by(stop)}"]
        for f in followers:
            replay = sum(c[3] for c in f.commits if start <= c[0] < stop and c[3] is not None)
            row.append(f"{replay:5.0f}, {f.committed_by(stop)}")
        gcs = [f"node {n.node} gen {g} {ms} ms" for n in (leader, *followers)
               for t, g, ms in n.collections if start <= t < stop]
        row.append(", ".join(gcs) or "-")
        lines.append(" | ".join(row))
        start = stop
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.nemesis.fence_timeline", description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", help="the quorum's directory (node-N.log in it)")
    args = parser.parse_args(argv)
    print("\n".join(summary(args.dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
