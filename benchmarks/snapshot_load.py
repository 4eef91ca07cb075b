"""How long a follower's load of an installed snapshot holds the event loop (issue 28): the
raft driver's _load_snapshot reads the snapshot file's records (SnapshotReader) and hands them to
the state machine, whose on_snapshot_loaded decodes and replays every record into a new state,
all on the loop. In process: the active controller of benchmarks/controller_scale.py builds
--partitions partitions (replication factor 3, --brokers brokers), its snapshot is written to a
file as the driver writes one (SnapshotWriter), then, --rounds times, a second controller loads it
as a follower's driver would: the file's records read, then on_snapshot_loaded.

    PYTHONPATH=. .venv/bin/python benchmarks/snapshot_load.py [--partitions 100000] [--brokers 10]

Printed: the snapshot's records and bytes; per round the read's and the load's wall and CPU time
(time.thread_time of the loop's thread: the machine is shared), median and max over the rounds.
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

from benchmarks.controller_scale import Cluster  # noqa: E402
from kafkawire.raft.node.snapshot_writer import SNAPSHOT_BATCH_RECORDS  # noqa: E402
from kafkawire.raft.types import OffsetAndEpoch  # noqa: E402
from kafkawire.storage.snapshot import SnapshotId, SnapshotReader, SnapshotWriter  # noqa: E402
from tests.controller.harness import FakeQuorum, add_controller  # noqa: E402


def _timed(work):
    wall, cpu = time.perf_counter(), time.thread_time()
    result = work()
    return result, (time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000


async def measure(partitions: int, brokers: int, rounds: int) -> dict:
    cluster = Cluster(brokers)
    await cluster.start(partitions)
    records = cluster.controller.snapshot_records()
    snapshot_id = OffsetAndEpoch(cluster.controller.committed_offset + 1, 1)
    await cluster.stop()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with SnapshotWriter(tmp, SnapshotId(snapshot_id.offset, snapshot_id.epoch),
                            last_contained_log_timestamp=0, time_ms=lambda: 0) as writer:
            for i in range(0, len(records), SNAPSHOT_BATCH_RECORDS):
                writer.append(records[i:i + SNAPSHOT_BATCH_RECORDS], timestamp=0)
        path = writer.path
        size = os.path.getsize(path)
        for _ in range(rounds):
            follower = add_controller(FakeQuorum(), 2)
            values, read_ms, read_cpu = _timed(lambda: [bytes(r.value) for r in SnapshotReader(path).records()])
            _, load_ms, load_cpu = _timed(lambda: follower.on_snapshot_loaded(snapshot_id, values))
            assert len(follower.image.topics_by_id) == len(cluster.controller.image.topics_by_id)
            rows.append((read_ms, read_cpu, load_ms, load_cpu))
    return {"records": len(records), "bytes": size, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    result = asyncio.run(measure(args.partitions, args.brokers, args.rounds))
    columns = list(zip(*result["rows"]))
    names = ("read wall", "read CPU", "on_snapshot_loaded wall", "on_snapshot_loaded CPU")
    print(f"{args.partitions} partitions: snapshot of {result['records']} records, {result['bytes'] / 1e6:.1f} MB; "
          + "; ".join(f"{name} median {statistics.median(c):.0f} ms max {max(c):.0f} ms"
                      for name, c in zip(names, columns)), flush=True)


if __name__ == "__main__":
    main()
