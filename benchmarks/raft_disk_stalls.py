"""How long the raft driver holds the event loop for an election's quorum-state write, and how
long a snapshot install's fsync takes (issue 28, goal 4: "fsync and disk writes off the event
loop"), on this machine's disk:

    .venv/bin/python benchmarks/raft_disk_stalls.py [--votes 50] [--megabytes 12 62]

* votes: node 1 of a three-voter quorum (a real RaftDriver on a DiskLogStore with fsync, no
  network: node 2 asks by calling its handler) grants --votes VoteRequests of node 2, each of a
  new epoch, so each is an election the node writes to its quorum-state file (tmp file, fsync,
  rename, directory fsync) before its answer leaves. Printed: the time the driver's steps took
  on the loop per vote (its busy time, RaftDriver.metrics.busy_ms), the loop's longest hold over the
  votes (a probe task sleeping 1 ms at a time: its worst lateness), next to the same probe's
  over as long a time with nothing to do (the machine's own noise), and the vote answers'
  latency p50/max, which holds the write wherever it runs.
* snapshot install, the store alone: the DiskLogStore writes a fetched snapshot of 12 and 62 MB
  in 1 MB chunks (WriteSnapshotChunk, as a follower's FetchSnapshot answers bring them) and
  installs it (InstallSnapshot: fsync, rename, the log emptied): what the disk work costs.
* snapshot install through the driver: a follower RaftDriver (an observer) fetches a 12 and a
  62 MB snapshot (--megabytes) from a single-voter leader RaftDriver in the same process, on an
  event loop of its own in another thread (the follower's requests handed to the leader's
  handler there; FetchSnapshot chunks of 8 MiB, the default), and installs it. Printed: the follower driver's longest Ready applied
  (RaftDriver._apply: the disk work on the loop, where the chunks' writes and the install's
  fsyncs ran before), its longest step (that and the core's own work on the input: the core kept
  the fetched bytes and decoded all of them at the install before; it checks each chunk as it
  comes now) in wall time and in the loop thread's CPU time (time.thread_time: what the step
  itself costs, without the waits of a loaded machine), its steps in all, the leader's longest
  step in CPU time (its chunk reads), the follower's loop's longest hold from its start to the
  install done (a probe as above; the leader's loop is another, but the GIL is shared),
  the longest garbage collection meanwhile, the probe's worst over as long a time after (the
  machine's noise), and the time to the install. The snapshot's load into the state machine
  (records decoded on the loop, not disk work) is left out: the follower's _load_snapshot only
  notes the time.

To compare with an older tree, copy this file into it and run it there (it imports the tree it
sits in).
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

from benchmarks.controller_scale import _LagProbe  # noqa: E402
from kafkawire.raft import rpc  # noqa: E402
from kafkawire.raft.config import RaftConfig  # noqa: E402
from kafkawire.protocol.apis import api_table  # noqa: E402
from kafkawire.raft.io import InstallSnapshot, TruncateFully, WriteSnapshotChunk  # noqa: E402
from kafkawire.raft.node.snapshot_writer import freeze_image, write_image  # noqa: E402
from kafkawire.raft.node.disk_store import DiskLogStore  # noqa: E402
from kafkawire.raft.node.driver import RaftDriver  # noqa: E402
from kafkawire.raft.types import Endpoints, OffsetAndEpoch  # noqa: E402
from kafkawire.raft.voters import VoterSet  # noqa: E402

CLUSTER_ID = "c"


class _Ctx:
    api_version, peer = 1, ("127.0.0.1", 2)


async def votes(directory: str, count: int) -> dict:
    endpoints = {i: Endpoints((("CONTROLLER", "127.0.0.1", 1 + i),)) for i in (1, 2, 3)}
    voters = VoterSet.static(endpoints)
    config = RaftConfig(node_id=1, cluster_id=CLUSTER_ID, endpoints=endpoints[1], static_voters=voters,
                        election_timeout_ms=600_000, fetch_timeout_ms=600_000)     # it never stands itself
    driver = RaftDriver(config, DiskLogStore(directory), client=None, seed=1)
    driver.start()
    latencies, held = [], []
    try:
        await asyncio.sleep(0.1)
        async with _LagProbe() as during:
            started = time.perf_counter()
            for epoch in range(1, count + 1):
                request = rpc.vote_request(CLUSTER_ID, epoch, voters.node(2).key, voters.node(1).key, 0, 0, False)
                asked, busy = time.perf_counter(), driver.metrics.busy_ms
                answer = await driver.handle_request(_Ctx(), request)
                latencies.append((time.perf_counter() - asked) * 1000)
                held.append(driver.metrics.busy_ms - busy)
                assert answer.topics[0].partitions[0].vote_granted, answer
            took = time.perf_counter() - started
        async with _LagProbe() as idle:
            await asyncio.sleep(took)
    finally:
        await driver.close()
    return {"step p50 ms": statistics.median(held), "step max ms": max(held), "longest hold ms": during.worst_ms, "idle ms": idle.worst_ms,
            "answer p50 ms": statistics.median(latencies), "answer max ms": max(latencies)}


def install(directory: str, megabytes: int) -> dict:
    store = DiskLogStore(directory)
    snapshot_id, chunk = OffsetAndEpoch(1000 * megabytes, 1), os.urandom(1 << 20)
    try:
        started = time.perf_counter()
        for i in range(megabytes):
            store.apply(WriteSnapshotChunk(snapshot_id, i << 20, chunk))
        written = time.perf_counter()
        store.apply(InstallSnapshot(snapshot_id))
        return {"chunk ms": (written - started) * 1000 / megabytes,
                "install ms": (time.perf_counter() - written) * 1000}
    finally:
        store.close()


class _GcPauses:
    """The longest garbage collection while it is entered (one holds the loop whatever it
    collects: the process's heap, not the install's work)."""

    def __init__(self):
        self.worst_ms, self._started = 0.0, 0.0

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.worst_ms = max(self.worst_ms, (time.perf_counter() - self._started) * 1000)

    def __enter__(self):
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._callback)


class _LeaderLoop:
    """An event loop of its own, in another thread, for the leader driver: the probe on the
    follower's loop then times the follower, not the leader's chunk reads (a leader is another
    node; here the two still share the GIL)."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="leader-loop", daemon=True)
        self._thread.start()

    async def run(self, coroutine):
        """``coroutine`` run on the leader's loop, awaited from the follower's."""
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self.loop))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self.loop.close()


class _ToLeader:
    """The follower's NetworkClient: every request goes to the leader driver's handler, on the
    leader's loop."""

    def __init__(self, leader: RaftDriver, leader_loop: _LeaderLoop):
        self.leader, self.leader_loop = leader, leader_loop

    async def connect(self, address, timeout_ms):
        return {key: (api.min_version, api.max_version) for key, api in api_table().items()}

    async def send(self, address, body, *, api_version, timeout_ms):
        ctx = _Ctx()
        ctx.api_version = api_version
        return await self.leader_loop.run(self.leader.handle_request(ctx, body))


async def _start_leader(leader: RaftDriver) -> None:
    leader.start()
    while not leader.is_leader():
        await asyncio.sleep(0.01)


async def install_from_leader(directory: str, megabytes: int) -> dict:
    api_table()      # built once, on first use (a second or so): not in what is measured
    leader_endpoints = Endpoints((("CONTROLLER", "127.0.0.1", 1),))
    voters = VoterSet.static({1: leader_endpoints})
    snapshot_id = OffsetAndEpoch(epoch=1, offset=1000 * megabytes)
    leader_dir = os.path.join(directory, "leader")
    store = DiskLogStore(leader_dir)
    store.apply(TruncateFully(snapshot_id.offset))
    values = [os.urandom(1000) for _ in range(1000 * megabytes)]
    write_image(leader_dir, freeze_image(snapshot_id, 0, None, values, int(time.time() * 1000)))
    store.add_snapshot(snapshot_id)
    leader = RaftDriver(RaftConfig(node_id=1, cluster_id=CLUSTER_ID, endpoints=leader_endpoints, static_voters=voters,
                                   election_timeout_ms=50), store, client=None, seed=1)
    leader_loop = _LeaderLoop()
    follower = None
    try:
        await leader_loop.run(_start_leader(leader))
        follower = RaftDriver(RaftConfig(node_id=2, cluster_id=CLUSTER_ID, static_voters=voters,
                                         endpoints=Endpoints((("CONTROLLER", "127.0.0.1", 2),))),
                              DiskLogStore(os.path.join(directory, "follower")), client=_ToLeader(leader, leader_loop),
                              seed=2)
        loaded = asyncio.Event()

        def load_snapshot(installed: OffsetAndEpoch) -> None:
            follower.applied_offset = installed.offset
            loaded.set()
        follower._load_snapshot = load_snapshot
        steps, cpu, step = [], [], follower._step

        def timed_step(event):
            started, started_cpu = time.perf_counter(), time.thread_time()
            try:
                step(event)
            finally:
                steps.append((time.perf_counter() - started) * 1000)
                cpu.append((time.thread_time() - started_cpu) * 1000)
        follower._step = timed_step
        leader_cpu, leader_step = [], leader._step

        def timed_leader_step(event):
            started_cpu = time.thread_time()
            try:
                leader_step(event)
            finally:
                leader_cpu.append((time.thread_time() - started_cpu) * 1000)
        leader._step = timed_leader_step
        applies, apply = [], follower._apply

        def timed_apply(ready):
            started = time.perf_counter()
            try:
                apply(ready)
            finally:
                applies.append((time.perf_counter() - started) * 1000)
        follower._apply = timed_apply
        with _GcPauses() as collections:
            async with _LagProbe() as during:
                started = time.perf_counter()
                follower.start()
                await asyncio.wait_for(loaded.wait(), 120)
                took = time.perf_counter() - started
        async with _LagProbe() as idle:
            await asyncio.sleep(took)
        return {"step max ms": max(steps), "step total ms": sum(steps), "apply max ms": max(applies),
                "step cpu max ms": max(cpu), "step cpu total ms": sum(cpu), "leader cpu max ms": max(leader_cpu),
                "longest hold ms": during.worst_ms, "gc max ms": collections.worst_ms, "idle ms": idle.worst_ms,
                "took ms": took * 1000}
    finally:
        if follower is not None:
            await follower.close()
        await leader_loop.run(leader.close())
        leader_loop.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", type=int, default=50, help="0: no votes measured")
    parser.add_argument("--megabytes", type=int, nargs="+", default=[12, 62], help="the snapshots' sizes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as directory:     # the project's disk, not a tmpfs
        if args.votes > 0:
            _print_votes(args.votes, asyncio.run(votes(os.path.join(directory, "votes"), args.votes)))
        for megabytes in args.megabytes:
            row = install(os.path.join(directory, f"snapshot-{megabytes}"), megabytes)
            print(f"snapshot install of {megabytes} MB: {row['chunk ms']:.1f} ms per 1 MB chunk written, "
                  f"{row['install ms']:.0f} ms for the install (fsync, rename, log emptied), the store alone",
                  flush=True)
        for megabytes in args.megabytes:
            row = asyncio.run(install_from_leader(os.path.join(directory, f"fetched-{megabytes}"), megabytes))
            print(f"snapshot of {megabytes} MB fetched and installed by a follower driver: its longest Ready "
                  f"applied {row['apply max ms']:.1f} ms, its longest step (core included) "
                  f"{row['step max ms']:.1f} ms ({row['step cpu max ms']:.1f} ms of CPU), its steps in all "
                  f"{row['step total ms']:.1f} ms ({row['step cpu total ms']:.1f} ms of CPU); the leader's longest "
                  f"step {row['leader cpu max ms']:.1f} ms of CPU; the loop held "
                  f"at most {row['longest hold ms']:.1f} ms (its longest garbage collection {row['gc max ms']:.1f} "
                  f"ms; idle after: {row['idle ms']:.1f} ms), installed after {row['took ms']:.0f} ms", flush=True)


def _print_votes(count: int, row: dict) -> None:
    print(f"{count} votes, each an election written to quorum-state: the driver's steps on the loop "
          f"per vote p50 {row['step p50 ms']:.2f} ms, max {row['step max ms']:.2f} ms; the loop held at most "
          f"{row['longest hold ms']:.1f} ms (idle: {row['idle ms']:.1f} ms); vote answered in "
          f"p50 {row['answer p50 ms']:.1f} ms, max {row['answer max ms']:.1f} ms", flush=True)


if __name__ == "__main__":
    main()
