"""The active controller at a large cluster's scale (issue 28), in process: one controller on
the fake raft of tests/controller/harness.py (appends commit at once, so what is measured is
the controller's own CPU), 100 brokers registered and unfenced, topics of 100 partitions with
replication factor 3, at each size.

    .venv/bin/python benchmarks/controller_scale.py [--sizes 1000,10000,100000] [--brokers 100] [--seconds 10]

How each number is obtained:

* memory/partition: the process's resident set before and after the cluster is built, over
  the number of partitions (the image, the controller's indexes, the fake raft's copy of
  every record, and the allocator's slack).
* heartbeat CPU: the thread CPU time (time.thread_time) of one BrokerHeartbeat that changes
  nothing (each broker in turn, at the current offset), median of 2000; "ratio" is over the
  smallest size, and is ~1 when a heartbeat's cost does not grow with the partitions.
* under load: every broker heartbeats every 500 ms (as Kafka brokers do by default) while a
  client creates a topic of 10 partitions 4 times a second, for --seconds; CreateTopics
  latency p50/p99, heartbeats answered per second (100 brokers ask 200), and the process's
  CPU over the window, in % of one core.
* snapshot stall: a real RaftDriver (one voter, on disk) whose state machine is this
  controller writes a snapshot (driver.write_snapshot, as the driver does once enough bytes
  have been replayed) while a probe task sleeps 1 ms at a time; the longest stall is the
  probe's worst lateness, next to its worst lateness over as long a time with nothing to do
  (what the machine's other load costs); medians over 3 snapshots, after one that warms up.
  "snapshot s" is the whole snapshot.

To compare with an older tree, copy this file into it and run it there (it imports the tree
it sits in): ``git archive 79f8ea6 | tar -x -C /tmp/before``.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest  # noqa: E402
from tests.controller.harness import (Ctx, FakeQuorum, Running, add_controller, broker_request,  # noqa: E402
                                      heartbeat, until)

HEARTBEAT, REGISTRATION, CREATE_TOPICS = 63, 62, 19
PARTITIONS_PER_TOPIC = 100
SNAPSHOTS = 3


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _topic(name: str, partitions: int) -> CreatableTopic:
    return CreatableTopic(name=name, num_partitions=partitions, replication_factor=3, configs=[], assignments=[])


class Cluster:
    def __init__(self, brokers: int):
        self.quorum = FakeQuorum()
        self.controller = add_controller(self.quorum, 1, clock=lambda: int(time.monotonic() * 1000))
        self.handlers = self.controller.handlers()
        self.running = Running(self.controller)
        self.brokers = brokers
        self.epochs: dict[int, int] = {}
        self._last_beats = time.monotonic()

    async def start(self, partitions: int) -> None:
        await self.running.__aenter__()
        self.quorum.elect(1)
        await until(lambda: self.controller.is_active(), "activation", rounds=20000)
        for b in range(1, self.brokers + 1):
            reply = await self.handlers[REGISTRATION].handle(Ctx(0), broker_request(b))
            self.epochs[b] = reply.broker_epoch
            await self.beat(b)
        topics = partitions // PARTITIONS_PER_TOPIC
        self._last_beats = time.monotonic()
        for first in range(0, topics, 10):
            await self.keep_sessions()
            request = CreateTopicsRequest(topics=[_topic(f"t{i}", PARTITIONS_PER_TOPIC)
                                                  for i in range(first, min(first + 10, topics))], timeout_ms=600_000)
            response = await self.handlers[CREATE_TOPICS].handle(Ctx(5), request)
            assert all(t.error_code == 0 for t in response.topics), response

    async def beat(self, broker_id: int):
        request = heartbeat(broker_id, self.epochs[broker_id], self.quorum.end_offset)
        return await self.handlers[HEARTBEAT].handle(Ctx(0), request)

    async def keep_sessions(self) -> None:
        """Every broker heartbeats once a second has passed since they last all did: a long build,
        or a long run of timed rounds (which call this outside their timing), must not let the
        brokers' sessions expire."""
        if time.monotonic() - self._last_beats > 1:
            for b in self.epochs:
                await self.beat(b)
            self._last_beats = time.monotonic()

    async def stop(self) -> None:
        await self.running.__aexit__(None, None, None)


async def frozen_cluster(partitions: int, brokers: int) -> tuple[Cluster, float]:
    """A started cluster of ``partitions`` and the seconds its build took; the built image is
    frozen (gc.freeze), so that the collections of the rounds timed after it do not walk it.
    The caller unfreezes once done (each_size does)."""
    cluster = Cluster(brokers)
    start = time.monotonic()
    await cluster.start(partitions)
    built_s = time.monotonic() - start
    gc.collect()
    gc.freeze()
    return cluster, built_s


def cpu_summary(samples_us: list[float]) -> dict:
    """p50, p90 and mean of per-round CPU samples, in microseconds."""
    samples = sorted(samples_us)
    return {"p50 us": statistics.median(samples), "p90 us": samples[int(len(samples) * 0.9)],
            "mean us": statistics.fmean(samples)}


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(p) for p in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < PARTITIONS_PER_TOPIC:
        raise argparse.ArgumentTypeError(f"{text!r}: partition counts of at least {PARTITIONS_PER_TOPIC} "
                                         "(topics of that many partitions), comma-separated")
    return sizes


def write_cost_arguments(doc: str) -> argparse.ArgumentParser:
    """The arguments of the benchmarks that time --rounds writes one after the other on a cluster
    of --brokers built at each of --partitions (a list of ints once parsed)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--partitions", type=_sizes, default="100000,1000000", help="cluster sizes, comma-separated")
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=300)
    return parser


def each_size(sizes: list[int]):
    """The sizes one after the other; after each, what its cluster froze (frozen_cluster) is
    unfrozen and collected, so that the next size's build does not start with it."""
    for size in sizes:
        yield size
        gc.unfreeze()
        gc.collect()


async def heartbeat_cpu_us(cluster: Cluster, rounds: int = 2000) -> float:
    samples = []
    for i in range(rounds):
        broker = i % cluster.brokers + 1
        start = time.thread_time()
        reply = await cluster.beat(broker)
        samples.append((time.thread_time() - start) * 1e6)
        assert reply.error_code == 0 and not reply.is_fenced
    return statistics.median(samples)


async def under_load(cluster: Cluster, seconds: float, created: list[int]) -> dict:
    """Heartbeats every 500 ms from every broker and 4 CreateTopics a second, for ``seconds``."""
    answered = [0]
    deadline = time.monotonic() + seconds

    async def broker(b: int):
        due = time.monotonic() + b * 0.5 / cluster.brokers         # spread over the interval
        while due < deadline:
            await asyncio.sleep(max(due - time.monotonic(), 0))
            reply = await cluster.beat(b)
            answered[0] += reply.error_code == 0
            due = max(due + 0.5, time.monotonic())                   # a late answer delays the next one

    async def client():
        latencies = []
        while time.monotonic() < deadline:
            created[0] += 1
            start = time.perf_counter()
            request = CreateTopicsRequest(topics=[_topic(f"load{created[0]}", 10)], timeout_ms=30_000)
            response = await cluster.handlers[CREATE_TOPICS].handle(Ctx(5), request)
            latencies.append((time.perf_counter() - start) * 1000)
            assert response.topics[0].error_code == 0, response
            await asyncio.sleep(max(0.25 - latencies[-1] / 1000, 0))
        return latencies

    cpu, wall = time.process_time(), time.monotonic()
    results = await asyncio.gather(client(), *(broker(b) for b in range(1, cluster.brokers + 1)))
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    latencies = sorted(results[0])
    return {"create p50 ms": statistics.median(latencies),
            "create p99 ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
            "heartbeats/s": answered[0] / wall, "CPU %": 100 * cpu / wall}


class _Machine:
    """The controller as the raft driver's state machine, its state already built; the
    driver's own records (one opaque value) do not change it."""
    in_transaction = False

    def __init__(self, controller):
        self.controller = controller
        if hasattr(controller, "frozen_snapshot"):
            self.frozen_snapshot = controller.frozen_snapshot

    def on_committed(self, *args):
        pass

    def on_snapshot_loaded(self, *args):
        pass

    def on_leader_change(self, *args):
        pass

    def snapshot_records(self):
        return self.controller.snapshot_records()


class _LagProbe:
    """A task sleeping 1 ms at a time; ``worst_ms``: its worst lateness, the longest the loop
    was kept from running it."""

    def __init__(self):
        self.worst_ms = 0.0
        self._stop = asyncio.Event()

    async def _probe(self):
        while not self._stop.is_set():
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst_ms = max(self.worst_ms, (time.perf_counter() - start) * 1000 - 1)

    async def __aenter__(self):
        self._task = asyncio.ensure_future(self._probe())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc):
        self._stop.set()
        await self._task


async def snapshot_stall(cluster: Cluster) -> dict:
    from kafkawire.raft.config import RaftConfig
    from kafkawire.raft.node.disk_store import DiskLogStore
    from kafkawire.raft.node.driver import RaftDriver
    from kafkawire.raft.types import Endpoints
    from kafkawire.raft.voters import VoterSet

    endpoints = Endpoints((("CONTROLLER", "127.0.0.1", 1),))
    config = RaftConfig(node_id=1, cluster_id="c", endpoints=endpoints, static_voters=VoterSet.static({1: endpoints}),
                        election_timeout_ms=50)
    with tempfile.TemporaryDirectory() as directory:
        driver = RaftDriver(config, DiskLogStore(directory), client=None, seed=1,
                            state_machine=_Machine(cluster.controller), snapshot_min_bytes=1 << 60)
        driver.start()
        try:
            await until(driver.is_leader, "leadership", rounds=20000)
            stalls, idle_stalls, took = [], [], []
            for _ in range(1 + SNAPSHOTS):            # the first one warms up (the worker thread, imports)
                await driver.append([b"v"])
                start = time.perf_counter()
                async with _LagProbe() as during:
                    assert await driver.write_snapshot() is not None
                took.append(time.perf_counter() - start)
                async with _LagProbe() as idle:       # the machine's own noise, for comparison
                    await asyncio.sleep(took[-1])
                stalls.append(during.worst_ms)
                idle_stalls.append(idle.worst_ms)
            return {"longest stall ms": statistics.median(stalls[1:]),
                    "idle stall ms": statistics.median(idle_stalls[1:]), "snapshot s": statistics.median(took[1:])}
        finally:
            await driver.close()


async def measure(partitions: int, brokers: int, seconds: float) -> dict:
    rss = _rss_bytes()
    cluster = Cluster(brokers)
    start = time.perf_counter()
    await cluster.start(partitions)
    row: dict = {"partitions": partitions, "build s": time.perf_counter() - start,
                 "bytes/partition": (_rss_bytes() - rss) / max(partitions, 1)}
    try:
        row["heartbeat CPU us"] = await heartbeat_cpu_us(cluster)
        row.update(await under_load(cluster, seconds, [0]))
        row.update(await snapshot_stall(cluster))
    finally:
        await cluster.stop()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="partition counts, comma-separated")
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the load window")
    args = parser.parse_args()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        row = asyncio.run(measure(size, args.brokers, args.seconds))
        rows.append(row)
        base = rows[0]["heartbeat CPU us"]
        print(f"{row['partitions']:>8} partitions: build {row['build s']:.1f} s, "
              f"{row['bytes/partition']:.0f} B/partition; heartbeat {row['heartbeat CPU us']:.0f} us CPU "
              f"(ratio {row['heartbeat CPU us'] / base:.2f}); under load: CreateTopics p50 "
              f"{row['create p50 ms']:.1f} ms p99 {row['create p99 ms']:.1f} ms, "
              f"{row['heartbeats/s']:.0f} heartbeats/s, CPU {row['CPU %']:.0f}%; snapshot "
              f"{row['snapshot s']:.2f} s, longest loop stall {row['longest stall ms']:.1f} ms "
              f"(idle: {row['idle stall ms']:.1f} ms)", flush=True)


if __name__ == "__main__":
    main()
