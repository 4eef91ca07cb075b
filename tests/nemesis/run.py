"""The nemesis run: a three-voter kafkawire quorum on 127.0.0.1, clients creating topics,
and faults one after another (kill -9, a torn segment tail, SIGSTOP, a network partition through
the proxies in front of the controller listeners, a flood of long-poll fetches, hostile raft requests and tenants, a storm of broker
heartbeats at the leader), each held 1-5 s and healed (every kind at least once, however short
the run); then everything heals, a leader must appear within a bound, the voters must catch up,
and the checks of checks.py run.

    python -m tests.nemesis.run --duration 3600 [--seed N] [--dir DIR]

It prints the figures (appends acknowledged, faults by kind, lost, duplicated, reordered,
leaderless time) and exits 1 if a check fails. tests/nemesis/test_nemesis.py runs it briefly.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass

from kafkawire.net.client import TransportError
from kafkawire.raft.node.local_quorum import QuorumError, describe_quorum

from .checks import Verdict, check
from .cluster import BROKER_METADATA_VERSION, nemesis_cluster
from .runnable_clock import RunnableClock
from .workload import Outcomes, QuorumClient, create_topics, keep_a_broker, monitor_leadership, race_on_names

LEADER_BOUND_S = 30          # after the last fault heals, a leader within this
CATCH_UP_BOUND_S = 60        # and every voter's log end at the leader's high watermark within this


@dataclass
class Report:
    duration_s: float
    acked: int
    maybe: int
    refused: int
    faults: dict
    leaderless_s: float
    leader_after_heal_s: float
    verdict: Verdict
    races: dict
    tenant: dict
    tenant_unexpected: list
    slowest_leader_after_a_fault_s: float
    storm: dict
    storm_epoch_moves: list
    cut_fetch_checks: int        # partitions after which the leader of their start was asked
    cut_fetch_leaks: list        # a fetch that leader took across a cut (the proxies let it by)

    def lines(self) -> str:
        v = self.verdict
        return "\n".join([
            f"nemesis: {self.duration_s:.0f} s of faults: {sum(self.faults.values())} faults "
            f"({', '.join(f'{k} {n}' for k, n in sorted(self.faults.items()))})",
            f"nemesis: topics created: {self.acked} acknowledged, {self.maybe} indeterminate, {self.refused} refused",
            f"nemesis: lost {len(v.lost)}, duplicated {len(v.duplicated)}, reordered {len(v.reordered)}, "
            f"unknown {len(v.unknown_names)}; voters agree: {v.voters_agree} ({v.committed_batches} batches, "
            f"{v.topics_in_log} topics below the high watermark)",
            f"nemesis: leaderless {self.leaderless_s:.1f} s in all; a leader {self.leader_after_heal_s:.1f} s "
            f"after the last heal, at most {self.slowest_leader_after_a_fault_s:.1f} s after any heal",
            f"nemesis: racing writers: {', '.join(f'{k} {n}' for k, n in sorted(self.races.items()))}; "
            f"replay problems in the committed log: {len(v.replay_problems)}",
            f"nemesis: hostile tenant: {', '.join(f'{k} {n}' for k, n in sorted(self.tenant.items()))}; "
            f"unexpected answers: {len(self.tenant_unexpected)}",
            f"nemesis: heartbeat storms: {', '.join(f'{k} {n}' for k, n in sorted(self.storm.items()))}; "
            f"leader epoch moved across a storm: {len(self.storm_epoch_moves)}",
            f"nemesis: partitions checked at their leader: {self.cut_fetch_checks}; "
            f"fetches across a cut: {len(self.cut_fetch_leaks)}",
        ] + [f"nemesis:   {p}" for p in v.replay_problems[:10] + self.tenant_unexpected[:10] + self.storm_epoch_moves
             + self.cut_fetch_leaks])


def _pids(cluster):
    """This driver's process and every voter's running now: the processes whose wait for a core
    does not count against a liveness bound (runnable_clock.py)."""
    return lambda: [os.getpid()] + [p.pid for p in cluster.quorum.processes.values() if p.poll() is None]


async def _wait_for_leader(qc: QuorumClient, bound_s: float, pids) -> float:
    """Seconds (of wall time) until a leader, within ``bound_s`` of the time the voters could run."""
    clock = RunnableClock(pids)
    started = time.monotonic()
    while clock.elapsed() < bound_s:
        if await qc.leader() is not None:
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    raise QuorumError(f"no leader within {bound_s} s of the last heal ({clock.describe()})")


async def _caught_up(cluster, leader_id: int, bound_s: float):
    clock = RunnableClock(_pids(cluster))
    while clock.elapsed() < bound_s:
        try:
            view = await describe_quorum(cluster.quorum.address(leader_id), timeout_ms=2000)
        except (QuorumError, TransportError, OSError):
            await asyncio.sleep(0.2)
            continue
        ends = {r.replica_id: r.log_end_offset for r in view.voters}
        if view.leader_id == leader_id and all(ends.get(i, -1) >= view.high_watermark for i in cluster.ids):
            return view
        await asyncio.sleep(0.2)
    raise QuorumError(f"the voters did not reach the leader's high watermark within {bound_s} s "
                      f"({clock.describe()})")


async def run(base_dir: str, duration_s: float, seed: int, log=print) -> Report:
    props = {"metadata.log.max.record.bytes.between.snapshots": str(1 << 40)}
    async with nemesis_cluster(base_dir, seed=seed, properties=props) as cluster:
        qc = QuorumClient(cluster.addresses())
        outcomes, stop, races = Outcomes(), asyncio.Event(), Counter()
        await _wait_for_leader(qc, LEADER_BOUND_S, _pids(cluster))
        clients = [asyncio.create_task(keep_a_broker(qc, cluster.quorum.cluster_id, BROKER_METADATA_VERSION, stop)),
                   asyncio.create_task(create_topics(qc, outcomes, stop, created=cluster.topics_created)),
                   asyncio.create_task(monitor_leadership(qc, outcomes, stop)),
                   asyncio.create_task(race_on_names(qc, stop, random.Random(seed), races))]
        started = time.monotonic()
        leader_after_fault = []
        while time.monotonic() - started < duration_s or cluster.first_round_pending:   # every kind once
            log(f"nemesis: {await cluster.one_fault(await qc.leader())}")
            leader_after_fault.append(await _wait_for_leader(qc, LEADER_BOUND_S, _pids(cluster)))   # after each heal
            await asyncio.sleep(cluster.rng.uniform(0.5, 2.0))
        faults_s = time.monotonic() - started
        leader_after = await _wait_for_leader(qc, LEADER_BOUND_S, _pids(cluster))
        await asyncio.sleep(2)                     # the writer goes on a little on the healed quorum
        stop.set()
        await asyncio.gather(*clients, return_exceptions=True)
        leader = await qc.leader()
        view = await _caught_up(cluster, leader, CATCH_UP_BOUND_S)
        await qc.close()
        cluster.quorum.stop_all()
        dirs = {i: cluster.quorum.metadata_partition_dir(i) for i in cluster.ids}
        sent = set(outcomes.acked) | set(outcomes.maybe) | set(outcomes.refused)
        verdict = check(dirs, view.high_watermark, outcomes.acked, sent)
        return Report(faults_s, len(outcomes.acked), len(outcomes.maybe), len(outcomes.refused),
                      dict(cluster.faults), outcomes.leaderless_seconds(), leader_after, verdict, dict(races),
                      dict(cluster.tenant.counts), list(cluster.tenant.unexpected), max(leader_after_fault, default=0),
                      dict(cluster.storm), list(cluster.storm_epoch_moves),
                      cluster.cut_fetch_checks, list(cluster.cut_fetch_leaks))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.nemesis.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60, help="seconds of faults (default 60)")
    parser.add_argument("--seed", type=int, default=int(time.time()), help="the fault schedule's seed")
    parser.add_argument("--dir", help="where the nodes live (default: a fresh temporary directory)")
    parser.add_argument("--json", action="store_true", help="also print the report as JSON")
    args = parser.parse_args(argv)
    print(f"nemesis: seed {args.seed}")
    with tempfile.TemporaryDirectory(prefix="kafkawire-nemesis-") as tmp:
        report = asyncio.run(run(args.dir or tmp, args.duration, args.seed))
    print(report.lines())
    if args.json:
        print(json.dumps(asdict(report), default=str))
    return 0 if report.verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
