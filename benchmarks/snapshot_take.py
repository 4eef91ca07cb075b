"""How long taking a snapshot holds the event loop while the controller serves (issue 28 goal 2).

In process: the active controller of benchmarks/controller_scale.py (the fake raft) builds
--partitions partitions (replication factor 3, --brokers brokers), then serves: every broker
heartbeats every 500 ms and a client creates a topic of 10 partitions 4 times a second (--no-serve:
nothing). A real RaftDriver (one voter, on disk) whose state machine is that controller takes
--takes snapshots (driver.write_snapshot, as the driver does once enough bytes were replayed:
the image frozen on the loop, the records encoded and written by a worker thread), after one
that warms up. For each take, and for a window as long with no take (the serving alone):

* loop held: the worst lateness of a task sleeping 1 ms at a time (wall: the loop's own work,
  the worker thread's holds of the GIL and the machine's other load all count);
* loop CPU: the most CPU time (time.thread_time) the loop's thread used between two of the
  probe's turns: an upper bound on its longest hold whatever the machine does (every task's
  turns in between count);
* freeze: the loop thread's CPU in the state machine's ``frozen_snapshot`` (the image frozen);
* GC: the longest garbage collection (either thread);
* take: the whole snapshot's wall time.

    PYTHONPATH=. .venv/bin/python benchmarks/snapshot_take.py [--partitions 100000] [--takes 3]

Medians (and max) over the takes. --switch-interval sets sys.setswitchinterval (ms) for the run.
To compare with an older tree, copy this file into it (it imports the tree it sits in).
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.controller_scale import CREATE_TOPICS, Cluster, _Machine, _topic  # noqa: E402
from kafkawire.messages.create_topics_request import CreateTopicsRequest  # noqa: E402
from kafkawire.raft.config import RaftConfig  # noqa: E402
from kafkawire.raft.node.disk_store import DiskLogStore  # noqa: E402
from kafkawire.raft.node.driver import RaftDriver  # noqa: E402
from kafkawire.raft.types import Endpoints  # noqa: E402
from kafkawire.raft.voters import VoterSet  # noqa: E402
from tests.controller.harness import Ctx, until  # noqa: E402


class Probe:
    """A task sleeping 1 ms at a time: its worst lateness (wall) and the most loop-thread CPU
    between two of its turns, since the last ``reset``."""

    def __init__(self):
        self.worst_ms = self.worst_cpu_ms = 0.0
        self._stop = asyncio.Event()

    def reset(self) -> None:
        self.worst_ms = self.worst_cpu_ms = 0.0

    async def _run(self):
        while not self._stop.is_set():
            wall, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(0.001)
            self.worst_ms = max(self.worst_ms, (time.perf_counter() - wall) * 1000 - 1)
            self.worst_cpu_ms = max(self.worst_cpu_ms, (time.thread_time() - cpu) * 1000)

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        self._stop.set()
        await self._task


class GcPauses:
    """The longest garbage collection, and of which generation and on which thread."""

    def __init__(self):
        self.loop_thread = threading.get_ident()
        self.reset()

    def reset(self) -> None:
        self.longest_ms, self.what, self._start = 0.0, "-", None

    def __call__(self, phase, info):
        if phase == "start":
            self._start = time.perf_counter()
        elif self._start is not None:
            took = (time.perf_counter() - self._start) * 1000
            if took > self.longest_ms:
                thread = "loop" if threading.get_ident() == self.loop_thread else "worker"
                self.longest_ms, self.what = took, f"gen {info['generation']} on the {thread} thread"


async def _serve(cluster: Cluster, stop: asyncio.Event) -> None:
    """Heartbeats every 500 ms from every broker, a CreateTopics of 10 partitions 4 times a second."""
    created = [0]

    async def broker(b: int):
        await asyncio.sleep(b * 0.5 / cluster.brokers)
        while not stop.is_set():
            await cluster.beat(b)
            await asyncio.sleep(0.5)

    async def client():
        while not stop.is_set():
            created[0] += 1
            request = CreateTopicsRequest(topics=[_topic(f"take{created[0]}", 10)], timeout_ms=30_000)
            response = await cluster.handlers[CREATE_TOPICS].handle(Ctx(5), request)
            assert response.topics[0].error_code == 0, response
            await asyncio.sleep(0.25)

    await asyncio.gather(client(), *(broker(b) for b in range(1, cluster.brokers + 1)))


async def measure(partitions: int, brokers: int, takes: int, serve: bool) -> list[dict]:
    cluster = Cluster(brokers)
    await cluster.start(partitions)
    machine = _Machine(cluster.controller)
    freeze_cpu = [0.0]
    frozen_snapshot = machine.frozen_snapshot

    def timed_freeze():
        cpu = time.thread_time()
        try:
            return frozen_snapshot()
        finally:
            freeze_cpu[0] = (time.thread_time() - cpu) * 1000
    machine.frozen_snapshot = timed_freeze
    endpoints = Endpoints((("CONTROLLER", "127.0.0.1", 1),))
    config = RaftConfig(node_id=1, cluster_id="c", endpoints=endpoints, static_voters=VoterSet.static({1: endpoints}),
                        election_timeout_ms=50)
    stop, probe, rows = asyncio.Event(), Probe(), []
    pauses = GcPauses()
    serving = asyncio.ensure_future(_serve(cluster, stop)) if serve else None
    try:
        with tempfile.TemporaryDirectory() as directory:
            driver = RaftDriver(config, DiskLogStore(directory), client=None, seed=1, state_machine=machine,
                                snapshot_min_bytes=1 << 60)
            driver.start()
            probe.start()
            gc.callbacks.append(pauses)
            try:
                await until(driver.is_leader, "leadership", rounds=20000)
                for take in range(1 + takes):          # the first one warms up (the worker thread, imports)
                    await driver.append([b"v"])
                    probe.reset()
                    pauses.reset()
                    start = time.perf_counter()
                    assert await driver.write_snapshot() is not None
                    took = time.perf_counter() - start
                    row = {"held": probe.worst_ms, "cpu": probe.worst_cpu_ms, "freeze": freeze_cpu[0],
                           "gc": pauses.longest_ms, "take": took * 1000}
                    gc_what = pauses.what
                    probe.reset()
                    pauses.reset()
                    await asyncio.sleep(max(took, 1.0))     # as long with no take: the serving alone
                    row.update({"idle held": probe.worst_ms, "idle cpu": probe.worst_cpu_ms, "idle gc": pauses.longest_ms})
                    if take:
                        rows.append(row)
                        print("  take: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items())
                              + f" (longest GC during the take: {gc_what})", flush=True)
            finally:
                gc.callbacks.remove(pauses)
                await probe.stop()
                await driver.close()
    finally:
        stop.set()
        if serving is not None:
            await serving
        await cluster.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--takes", type=int, default=3)
    parser.add_argument("--no-serve", action="store_true", help="no heartbeats or CreateTopics during the takes")
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval, in ms (CPython's default: 5)")
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval / 1000)
    rows = asyncio.run(measure(args.partitions, args.brokers, args.takes, not args.no_serve))
    print(f"{args.partitions} partitions, {args.brokers} brokers, {len(rows)} takes, switch interval "
          f"{sys.getswitchinterval() * 1000:g} ms: " + "; ".join(
              f"{name} median {statistics.median(r[name] for r in rows):.2f} ms (max {max(r[name] for r in rows):.2f})"
              for name in rows[0]), flush=True)


if __name__ == "__main__":
    main()
