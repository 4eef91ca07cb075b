"""What ``kafkawire.gc.freeze.after.ms`` leaks over a long churn (issue 28): a three-voter quorum
of kafkawire controllers (the processes and fake brokers of benchmarks/controller_cost_curve.py,
fsync on, loopback) built to --size partitions in topics of 1,000, then for --seconds a churn in
rounds, each on a connection of its own opened and closed with it (so that connections come and
go as an admin client's do): CreateTopics of a topic of 1,000 partitions, DeleteTopics of the
oldest topic (the build's, then the churn's own), and AlterPartitionReassignments of the new
topic's first --reassign partitions to other brokers and back (start, then cancel); the whole
image is replaced every size/1,000 rounds. The fake brokers heartbeat every 5 s on their own
long-lived connections.

    .venv/bin/python benchmarks/controller_churn.py [--size 100000] [--seconds 600] [--every 30]
                                                    [--set kafkawire.gc.freeze.after.ms=50] [--dir DIR]

Every --every seconds a line: the rounds so far, the active controller's resident memory and the
followers', the freezes the active controller has made (its log's "froze" lines: the count each
line gives is what that freeze moved to the permanent generation, the objects that survived the
full collection before it; those after a snapshot's write or load, counted apart, log their
records instead; the node does not count the frozen objects, gc.get_freeze_count() being a walk
of all of them on its loop), and its full
collections logged since the last line (those of 100 ms or more, kafkawire.raft.node.gc_pauses).
What a freeze leaks is what was alive at it and later died in a reference cycle: it stays in the
permanent generation and in memory, so over a churn that keeps the image's size a leak shows as
resident memory that grows from freeze to freeze. At the end: the resident
memory's slope over the churn (a least-squares line through the samples after the first minute,
MB per 10 minutes).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from controller_cost_curve import Run, _expect, _setting  # noqa: E402

from kafkawire.messages.alter_partition_reassignments_request import (  # noqa: E402
    AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic)
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState  # noqa: E402
from kafkawire.net.client import NetworkClient  # noqa: E402
from tests.nemesis.paced_storm import TOPIC_PARTITIONS, FakeBrokers, _topic, rss_mb  # noqa: E402

HEARTBEAT_EVERY_S = 5
REQUEST_TIMEOUT_MS = 120_000
FROZE = re.compile(r"froze (\d+) objects after a full collection of (\d+) ms|froze what survived .* of (\d+) records")
LONG_FULL = re.compile(r"garbage collection of generation 2 took (\d+) ms")


class LeaderLog:
    """The active controller's node log, read on from where the last look stopped."""

    def __init__(self, path: str):
        self.path, self.offset = path, 0
        self.freezes, self.frozen = 0, 0          # freezes seen; what the last one moved
        self.after_writes = 0                     # of them, those after a snapshot's write or load
        self.frozen_counts: list[int] = []

    def read(self) -> list[int]:
        """The full collections (ms) logged since the last read; freezes counted on the way."""
        with open(self.path, errors="replace") as f:
            f.seek(self.offset)
            text = f.read()
            self.offset = f.tell()
        for match in FROZE.finditer(text):
            self.freezes += 1
            if match.group(1):
                self.frozen = int(match.group(1))
                self.frozen_counts.append(self.frozen)
            else:                            # gc_pauses.freeze_after_load logs its records, not the count
                self.after_writes += 1
        return [int(ms) for ms in LONG_FULL.findall(text)]


class Churn:
    def __init__(self, run: Run, fakes: FakeBrokers, reassign: int):
        self.run, self.fakes, self.reassign = run, fakes, reassign
        self.topics = [f"scale-{t}" for t in range(run.size // TOPIC_PARTITIONS)]   # oldest first
        self.rounds = 0

    async def round(self) -> None:
        name = f"churn-{self.rounds}"
        address = self.run.address()
        async with NetworkClient(client_id="churn", request_timeout_ms=REQUEST_TIMEOUT_MS) as client:
            reply = await client.send(address, _topic(name, TOPIC_PARTITIONS))
            _expect(reply.topics[0].error_code, f"CreateTopics {name}")
            self.topics.append(name)
            oldest = self.topics.pop(0)
            reply = await client.send(address, DeleteTopicsRequest(
                topics=[DeleteTopicState(name=oldest)], topic_names=[oldest], timeout_ms=REQUEST_TIMEOUT_MS))
            _expect(reply.responses[0].error_code, f"DeleteTopics {oldest}")
            for cancel in (False, True):
                await self._reassign(client, name, cancel)
        self.rounds += 1

    async def _reassign(self, client: NetworkClient, topic: str, cancel: bool) -> None:
        brokers = self.run.broker_count
        partitions = [ReassignablePartition(partition_index=p, replicas=None if cancel else [
            (p + k) % brokers + 1 for k in (3, 4, 5)]) for p in range(self.reassign)]
        reply = await client.send(self.run.address(), AlterPartitionReassignmentsRequest(
            timeout_ms=REQUEST_TIMEOUT_MS, topics=[ReassignableTopic(name=topic, partitions=partitions)]))
        _expect(reply.error_code, "AlterPartitionReassignments")

    async def heartbeats(self, until: float) -> None:
        while time.monotonic() < until:
            await self.fakes.beat_round()
            await asyncio.sleep(HEARTBEAT_EVERY_S)


def _slope_mb_per_10_min(samples: list[tuple[float, float]]) -> float:
    later = [(t, mb) for t, mb in samples if t >= 60] or samples
    if len(later) < 2:
        return 0.0
    return statistics.linear_regression([t for t, _ in later], [mb for _, mb in later]).slope * 600


async def churn(run: Run, seconds: float, every: float, reassign: int) -> None:
    fakes = FakeBrokers(run.address(), run.quorum.ours.cluster_id, run.broker_count)
    beats = None
    try:
        await run.timed("build", run._build(fakes), lambda _, wall, cpu: f"{run.size / wall:,.0f} partitions/s")
        log = LeaderLog(run.quorum.ours.log_path(run.leader))
        log.read()
        work = Churn(run, fakes, reassign)
        started = time.monotonic()
        until = started + seconds
        beats = asyncio.ensure_future(work.heartbeats(until))
        samples: list[tuple[float, float]] = []
        print(f"{'s':>6} {'rounds':>7} {'leader RSS MB':>14} {'followers MB':>13} {'freezes (snap.)':>15} {'moved':>9}  "
              f"full collections >= 100 ms since the last line (load)", flush=True)
        next_line = started
        while True:
            now = time.monotonic()
            if now >= next_line or now >= until:
                elapsed = now - started
                samples.append((elapsed, rss_mb(run.quorum.pid(run.leader))))
                followers = "/".join(f"{rss_mb(run.quorum.pid(i)):.0f}" for i in run.quorum.ids if i != run.leader)
                long_ones = log.read()
                print(f"{elapsed:6.0f} {work.rounds:7d} {samples[-1][1]:14.1f} {followers:>13} {log.freezes:4d} ({log.after_writes:2d}) "
                      f"{log.frozen:9d}  {len(long_ones)} (max {max(long_ones, default=0)} ms) "
                      f"({os.getloadavg()[0]:.1f})", flush=True)
                next_line += every
                if now >= until:
                    break
            await work.round()
        await beats
        if await run._leader_now() != run.leader:
            print(f"LEADERSHIP LOST during the churn: node {run.leader} no longer leads")
        print(f"{work.rounds} rounds ({work.rounds * TOPIC_PARTITIONS:,} partitions created and deleted, the image "
              f"replaced {work.rounds * TOPIC_PARTITIONS / run.size:.1f} times); leader RSS {samples[0][1]:.1f} -> "
              f"{samples[-1][1]:.1f} MB, slope after the first minute {_slope_mb_per_10_min(samples):+.1f} MB/10 min; "
              f"{log.freezes} freezes ({log.after_writes} after a snapshot's write or load), "
              f"the objects each of the others moved: {log.frozen_counts}")
    finally:
        if beats is not None and not beats.done():      # a round failed: the heartbeats stop with it
            beats.cancel()
        await fakes.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="partitions built before the churn")
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=600, help="the churn's length")
    parser.add_argument("--every", type=float, default=30, help="seconds between lines")
    parser.add_argument("--reassign", type=int, default=10, help="partitions of each new topic reassigned and back")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting for every node (repeatable)")
    parser.add_argument("--dir", help="keep the quorum's nodes (their logs) in DIR (default: deleted)")
    args = parser.parse_args()
    if args.size < 2 * TOPIC_PARTITIONS or args.seconds <= 0 or args.every <= 0:
        parser.error(f"--size must be at least {2 * TOPIC_PARTITIONS}, --seconds and --every above 0")
    if not 0 <= args.reassign <= TOPIC_PARTITIONS:
        parser.error(f"--reassign must be 0-{TOPIC_PARTITIONS}, not {args.reassign}")
    settings = dict(_setting(text) for text in args.set)
    print(f"churn at {args.size:,} partitions for {args.seconds:.0f} s, settings {settings or 'default'} "
          f"(load {os.getloadavg()[0]:.1f})", flush=True)
    with tempfile.TemporaryDirectory(prefix="controller-churn-") as tmp:
        run = Run("kafkawire", args.size, args.brokers, args.dir or tmp, "1g", settings=settings)
        try:
            run.quorum.start_all()
            run.leader = run.quorum.wait_for_leader(120).leader_id
            asyncio.run(churn(run, args.seconds, args.every, args.reassign))
        finally:
            run.quorum.kill_all()


if __name__ == "__main__":
    main()
