"""How long the raft driver holds the event loop for an election's quorum-state write, and how
long a snapshot install's fsync takes (issue 28, goal 4: "fsync and disk writes off the event
loop"), on this machine's disk:

    .venv/bin/python benchmarks/raft_disk_stalls.py [--votes 50]

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
  62 MB snapshot from a single-voter leader RaftDriver in the same process (its requests handed
  to the leader's handler, as the tests do) and installs it. Printed: the follower driver's
  longest Ready applied (RaftDriver._apply: the disk work on the loop, where the chunks' writes
  and the install's fsyncs ran before), its longest step (that and the core's own work on the
  input: the core keeps the fetched snapshot's bytes and checks all of it before the install),
  the loop's longest hold from the follower's start to the install done (a probe as
  above; it also counts the leader's chunk reads, in the same process), and the time to the
  install. The snapshot's load into the state machine (records decoded on the loop, not disk
  work) is left out: the follower's _load_snapshot only notes the time.

To compare with an older tree, copy this file into it and run it there (it imports the tree it
sits in).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
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


class _ToLeader:
    """The follower's NetworkClient: every request goes to the leader driver's handler."""

    def __init__(self, leader: RaftDriver):
        self.leader = leader

    async def connect(self, address, timeout_ms):
        return {key: (api.min_version, api.max_version) for key, api in api_table().items()}

    async def send(self, address, body, *, api_version, timeout_ms):
        ctx = _Ctx()
        ctx.api_version = api_version
        return await self.leader.handle_request(ctx, body)


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
    leader.start()
    follower = None
    try:
        while not leader.is_leader():
            await asyncio.sleep(0.01)
        follower = RaftDriver(RaftConfig(node_id=2, cluster_id=CLUSTER_ID, static_voters=voters,
                                         endpoints=Endpoints((("CONTROLLER", "127.0.0.1", 2),))),
                              DiskLogStore(os.path.join(directory, "follower")), client=_ToLeader(leader), seed=2)
        loaded = asyncio.Event()

        def load_snapshot(installed: OffsetAndEpoch) -> None:
            follower.applied_offset = installed.offset
            loaded.set()
        follower._load_snapshot = load_snapshot
        steps, step = [], follower._step

        def timed_step(event):
            started = time.perf_counter()
            try:
                step(event)
            finally:
                steps.append((time.perf_counter() - started) * 1000)
        follower._step = timed_step
        applies, apply = [], follower._apply

        def timed_apply(ready):
            started = time.perf_counter()
            try:
                apply(ready)
            finally:
                applies.append((time.perf_counter() - started) * 1000)
        follower._apply = timed_apply
        async with _LagProbe() as during:
            started = time.perf_counter()
            follower.start()
            await asyncio.wait_for(loaded.wait(), 120)
            took = time.perf_counter() - started
        return {"step max ms": max(steps), "apply max ms": max(applies), "longest hold ms": during.worst_ms, "took ms": took * 1000}
    finally:
        if follower is not None:
            await follower.close()
        await leader.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as directory:     # the project's disk, not a tmpfs
        row = asyncio.run(votes(os.path.join(directory, "votes"), args.votes))
        print(f"{args.votes} votes, each an election written to quorum-state: the driver's steps on the loop "
              f"per vote p50 {row['step p50 ms']:.2f} ms, max {row['step max ms']:.2f} ms; the loop held at most "
              f"{row['longest hold ms']:.1f} ms (idle: {row['idle ms']:.1f} ms); vote answered in "
              f"p50 {row['answer p50 ms']:.1f} ms, max {row['answer max ms']:.1f} ms", flush=True)
        for megabytes in (12, 62):
            row = install(os.path.join(directory, f"snapshot-{megabytes}"), megabytes)
            print(f"snapshot install of {megabytes} MB: {row['chunk ms']:.1f} ms per 1 MB chunk written, "
                  f"{row['install ms']:.0f} ms for the install (fsync, rename, log emptied), the store alone",
                  flush=True)
        for megabytes in (12, 62):
            row = asyncio.run(install_from_leader(os.path.join(directory, f"fetched-{megabytes}"), megabytes))
            print(f"snapshot of {megabytes} MB fetched and installed by a follower driver: its longest Ready "
                  f"applied {row['apply max ms']:.1f} ms, its longest step (core included) "
                  f"{row['step max ms']:.1f} ms, the loop held at most {row['longest hold ms']:.1f} ms, "
                  f"installed after {row['took ms']:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
