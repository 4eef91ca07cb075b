"""How long a snapshot's load holds the event loop (issue 28 goal 2): a follower's load of an
installed snapshot, and a node's start from its latest snapshot (cold restart).

In process: the active controller of benchmarks/controller_scale.py builds --partitions
partitions (replication factor 3, --brokers brokers) and its snapshot is written as the driver
writes one (kept in
--snapshot-dir, reused when there, so that trees compare on the same bytes).
Then, --rounds times:

* install: a raft driver (its core idle: no peer answers) whose state machine is a follower
  controller (empty, or with --old-state holding the snapshot's state loaded at once: a
  follower far behind holds one as large, which the load replaces) gets the snapshot installed
  in its store as a fetched one is, and the Ready that loads it
  (``_apply_effects(Ready(load_snapshot=...))``, what the core hands the driver after an
  install); a probe task sleeping 1 ms at a time measures its worst lateness until the
  controller's committed image holds the snapshot and the replaced state is released (where
  that runs in steps of its own). Printed: the probe's worst (the loop's longest stall), the
  most CPU time the loop's thread used between two of the probe's turns (an upper bound on
  the loop's longest hold whatever the machine's load: every task's turns in between count), the load's wall time
  and the loop thread's CPU time (time.thread_time: the probe's own turns included), the
  driver's longest step in wall and CPU time and its steps (a tree that loads in one go: the
  whole load, one step), the longest garbage collection meanwhile, and the probe's worst and
  the longest garbage collection over as long a time after (at least 1 s; idle, or growing:
  ``--grow-after N`` keeps N more objects, made a thousand per probe turn, as a node's state
  grows after a load, which brings the first full collection after it: without a freeze it
  walks the whole loaded image).
* ``--freeze-after-ms MS``: the node's freeze policy (kafkawire.raft.node.gc_pauses, as
  kafkawire.gc.freeze.after.ms; 0, the default here, for none) installed for each round; the
  round's end then prints the objects frozen, the RSS, and the cyclic garbage the freezes kept
  from the collector (a full collection, gc.unfreeze(), then another: what the second finds).
* start (unless --skip-start): a driver started on that store (``start()``: the node's load of its latest
  snapshot before it listens): wall and CPU time.

    PYTHONPATH=. .venv/bin/python benchmarks/snapshot_load.py [--partitions 100000] [--rounds 5]

Medians and max over the rounds. Runs on older trees too (the driver API it uses is the same).
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.controller_scale import Cluster  # noqa: E402
from kafkawire.raft.config import RaftConfig  # noqa: E402
from kafkawire.raft.io import Ready, WriteSnapshotChunk  # noqa: E402
from kafkawire.raft.node.disk_store import DiskLogStore  # noqa: E402
from kafkawire.raft.node import gc_pauses as freeze_policy  # noqa: E402
from kafkawire.raft.node.driver import RaftDriver  # noqa: E402
from kafkawire.raft.node.snapshot_writer import SNAPSHOT_BATCH_RECORDS  # noqa: E402
from kafkawire.raft.types import Endpoints, OffsetAndEpoch  # noqa: E402
from kafkawire.raft.voters import VoterSet  # noqa: E402
from kafkawire.storage.snapshot import (SnapshotId, SnapshotWriter, parse_snapshot_file_name,  # noqa: E402
                                        stream_snapshot_data)
from tests.controller.harness import FakeQuorum, add_controller  # noqa: E402

ME = Endpoints((("CONTROLLER", "127.0.0.1", 2),))
VOTERS = VoterSet.static({1: Endpoints((("CONTROLLER", "127.0.0.1", 1),)), 2: ME})


class NoPeer:
    async def connect(self, address, timeout_ms):
        await asyncio.Event().wait()


class GcPauses:
    def __init__(self):
        self.longest_ms, self._start = 0.0, None

    def __call__(self, phase, info):
        if phase == "start":
            self._start = time.perf_counter()
        elif self._start is not None:
            self.longest_ms = max(self.longest_ms, (time.perf_counter() - self._start) * 1000)


async def _probe(stop: asyncio.Event, worst: list) -> None:
    """worst: [the longest lateness (wall), turns, the most loop-thread CPU between two turns]."""
    while not stop.is_set():
        before, cpu = time.perf_counter(), time.thread_time()
        await asyncio.sleep(0.001)
        worst[0] = max(worst[0], (time.perf_counter() - before) * 1000 - 1)
        worst[1] += 1
        worst[2] = max(worst[2], (time.thread_time() - cpu) * 1000)


async def _probe_turn(worst: list) -> None:
    """Until the probe has measured a turn that began after now (a load that held the loop
    shows in it)."""
    turns = worst[1]
    while worst[1] < turns + 2:
        await asyncio.sleep(0)


async def _build(partitions: int, brokers: int, directory: str) -> str:
    cluster = Cluster(brokers)
    await cluster.start(partitions)
    records = cluster.controller.snapshot_records()
    offset = cluster.controller.committed_offset + 1
    await cluster.stop()
    with SnapshotWriter(directory, SnapshotId(offset, 1), last_contained_log_timestamp=0,
                        time_ms=lambda: 0) as writer:
        for i in range(0, len(records), SNAPSHOT_BATCH_RECORDS):
            writer.append(records[i:i + SNAPSHOT_BATCH_RECORDS], timestamp=0)
    return writer.path


def _driver(directory: str, controller) -> RaftDriver:
    return RaftDriver(RaftConfig(node_id=2, cluster_id="c", endpoints=ME, static_voters=VOTERS,
                                 election_timeout_ms=600_000), DiskLogStore(directory), client=NoPeer(), seed=2,
                      state_machine=controller)


async def _grow(stop: asyncio.Event, count: int, kept: list) -> None:
    """``count`` more objects kept, a thousand per loop turn (a node's state growing)."""
    while len(kept) < count and not stop.is_set():
        kept.extend({"n": i} for i in range(1000))
        await asyncio.sleep(0.001)


def _frozen_report() -> None:
    """The freeze policy's objects frozen, the RSS, and the cyclic garbage it kept from the
    collector, the controller still running (what a node's freezes leak: its own state is alive)."""
    frozen = gc.get_freeze_count()
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    gc.collect()
    gc.unfreeze()
    kept = gc.collect()
    print(f"    frozen {frozen} objects ({freeze_policy.freezes[0]} freezes so far), RSS {rss / 2**20:.0f} MB, "
          f"cyclic garbage the freezes kept: {kept} objects", flush=True)


async def _install_round(snapshot: bytes, snapshot_id: OffsetAndEpoch, directory: str, old_state: bool,
                         freeze_after_ms: int = 0, grow_after: int = 0) -> tuple:
    token = freeze_policy.log_long_pauses(freeze_after_ms) if freeze_after_ms else None
    controller = add_controller(FakeQuorum(), 2)
    if old_state:       # a follower far behind: a state as large as the snapshot's, a little older
        values = [v for batch in stream_snapshot_data(snapshot, "snapshot") for v in batch.values()]
        controller.state.load_snapshot(snapshot_id.offset - 100, snapshot_id.epoch, values)
        del values
    driver = _driver(directory, controller)
    driver.start()
    try:
        store = driver.store
        store.prepare_chunk(WriteSnapshotChunk(snapshot_id, 0, snapshot))()
        store.prepare_install(snapshot_id)()
        store.finish_install()
        gc_pauses = GcPauses()
        gc.collect()
        gc.callbacks.append(gc_pauses)
        stop, worst = asyncio.Event(), [0.0, 0, 0.0]
        probe = asyncio.ensure_future(_probe(stop, worst))
        await asyncio.sleep(0.01)
        worst[0] = worst[2] = 0.0
        wall, cpu = time.perf_counter(), time.thread_time()
        driver._apply_effects(Ready(load_snapshot=snapshot_id))
        while controller.committed_offset != snapshot_id.offset - 1 or getattr(driver, "_load", None) is not None:
            await asyncio.sleep(0.001)
        release = sys.modules.get("kafkawire.controller.state_release")     # the replaced state's release in steps
        while release is not None and release._running:
            await asyncio.sleep(0.001)
        wall, cpu = (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000
        await _probe_turn(worst)
        stalled, load_gc, loop_cpu = worst[0], gc_pauses.longest_ms, worst[2]
        gc_pauses.longest_ms = 0.0
        steps = getattr(driver, "last_load", None)      # the driver's own account of its steps (after only)
        longest = (steps.longest_step_ms, steps.longest_step_cpu_ms, steps.steps) if steps else (wall, cpu, 1)
        worst[0] = 0.0
        kept: list = []
        grower = asyncio.ensure_future(_grow(stop, grow_after, kept))
        await asyncio.sleep(max(wall / 1000, 1.0))
        while not grower.done():
            await asyncio.sleep(0.01)
        idle = worst[0]
        gc.callbacks.remove(gc_pauses)
        stop.set()
        await probe
        del kept
        if token is not None:
            _frozen_report()
        return (stalled, loop_cpu, wall, cpu, *longest, load_gc, idle, gc_pauses.longest_ms)
    finally:
        await driver.close()
        if token is not None:
            freeze_policy.stop_logging_long_pauses(token)


def _start_round(directory: str, snapshot_id: OffsetAndEpoch) -> tuple:
    async def run():
        controller = add_controller(FakeQuorum(), 2)
        driver = _driver(directory, controller)
        wall, cpu = time.perf_counter(), time.thread_time()
        driver.start()
        wall, cpu = (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000
        assert controller.committed_offset == snapshot_id.offset - 1
        await driver.close()
        return wall, cpu
    return asyncio.run(run())


def measure(path: str, rounds: int, start: bool = True, old_state: bool = False, freeze_after_ms: int = 0,
            grow_after: int = 0) -> list[tuple]:
    file_id = parse_snapshot_file_name(os.path.basename(path))[0]
    snapshot_id = OffsetAndEpoch(offset=file_id.end_offset, epoch=file_id.epoch)
    with open(path, "rb") as f:
        snapshot = f.read()
    rows = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            directory = os.path.join(tmp, "node")
            installed = asyncio.run(_install_round(snapshot, snapshot_id, directory, old_state, freeze_after_ms,
                                                   grow_after))
            started = _start_round(directory, snapshot_id) if start else ()
            shutil.rmtree(directory)
        rows.append(installed + started)
        print("  round: " + ", ".join(f"{v:.1f}" for v in rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-start", action="store_true", help="measure the install's load only, not the start "
                                                                   "from the snapshot (seconds at 1M partitions)")
    parser.add_argument("--old-state", action="store_true", help="the follower holds a state as large before the "
                                                                  "install (a follower far behind), which the load replaces")
    parser.add_argument("--freeze-after-ms", type=int, default=0, help="the node's gc freeze policy in each round "
                                                                      "(kafkawire.gc.freeze.after.ms; 0: none)")
    parser.add_argument("--grow-after", type=int, default=0, help="objects kept after the load, a thousand per "
                                                                  "loop turn (brings the first full collection)")
    parser.add_argument("--snapshot-dir", help="where the snapshot is kept: built there when it holds none, "
                                               "reused otherwise (so that trees compare on the same bytes)")
    args = parser.parse_args()
    directory = args.snapshot_dir or tempfile.mkdtemp()
    os.makedirs(directory, exist_ok=True)
    found = sorted(n for n in os.listdir(directory) if n.endswith(".checkpoint"))
    if found:
        path = os.path.join(directory, found[-1])
    else:
        path = asyncio.run(_build(args.partitions, args.brokers, directory))
    if args.rounds == 0:
        print(f"snapshot kept in {path}")
        return
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    rows = measure(path, args.rounds, start=not args.skip_start, old_state=args.old_state,
                   freeze_after_ms=args.freeze_after_ms, grow_after=args.grow_after)
    names = ("install: loop held at most", "loop CPU between two probe turns at most", "load wall", "load CPU", "longest step wall", "longest step CPU",
             "steps", "longest GC", "probe after (idle or growing)", "longest GC after", "start wall", "start CPU")
    print(f"{os.path.getsize(path) / 1e6:.1f} MB snapshot, {args.rounds} rounds: "
          + "; ".join(f"{name} median {statistics.median(c):.1f} ms (max {max(c):.1f})"
                      for name, c in zip(names, zip(*rows))), flush=True)


if __name__ == "__main__":
    main()
