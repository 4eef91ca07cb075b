"""What a new active controller's activation costs when the previous one left fenced brokers that
still lead partitions (issue 28, goal 5: "re-arming" in the activation's INFO line took 0.7-1.1 s
of wall time at 1M partitions, 500 brokers and ~100 brokers fenced by a cold start), in process:
benchmarks/controller_scale.py's Cluster (the fake raft of tests/controller/harness.py), --brokers
brokers registered and unfenced, --partitions partitions with replication factor 3, then brokers
1..--fenced fenced by their fence records alone (what a leader that lost its leadership mid-job
leaves: the brokers still lead and are in their ISRs; benchmarks/broker_fencing.py's ``restart``
set-up), and --leaderless of the partitions they lead left without a leader, their ISR that
broker alone (what the moves of all three of a partition's replicas leave: Kafka keeps the last
ISR member; at 1M, 500 brokers and 100 fenced some 8,000 partitions, which the activation looks
at to see whether an unfencing sweep is due), then:

* re-arm: the activation's own work after its records (``MetadataController.rearm``: the sessions
  started, the moves resumed), on a fresh PartitionMoves each round, as a new active controller
  has; the thread's CPU, median and max of --rounds (the built image frozen out of the collector,
  as create_topics_cost.py does, so a round is not charged a full collection);
* first steps: the CPU of each of the first --steps move events that follow (``next_records``,
  records generated and dropped: what the loop holds per event), max and median, to show where
  the work went.

    PYTHONPATH=. .venv/bin/python benchmarks/activation_rearm.py [--partitions 1000000] [--brokers 500] [--fenced 100]

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
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.controller_scale import Cluster  # noqa: E402
from kafkawire.controller.cluster import FENCE  # noqa: E402
from kafkawire.controller.fencing import PartitionMoves  # noqa: E402
from kafkawire.controller.frames import frame  # noqa: E402
from kafkawire.controller.partition_index import partition_of  # noqa: E402


async def _fence_alone(cluster: Cluster, brokers: list[int]) -> None:
    records = [frame("BrokerRegistrationChangeRecord", 0, broker_id=b, broker_epoch=cluster.epochs[b], fenced=FENCE)
               for b in brokers]
    await cluster.controller._write(lambda: (records, None))


async def _leaderless(cluster: Cluster, brokers: list[int], count: int) -> None:
    """``count`` partitions led by ``brokers`` (in turn) left leaderless, that broker their ISR alone."""
    index = cluster.controller.state.partition_index
    led = [sorted(index._leader.of(b)) for b in brokers]
    chosen = [(b, keys[i]) for i in range(max(map(len, led), default=0)) for b, keys in zip(brokers, led)
              if i < len(keys)][:count]
    for first in range(0, len(chosen), 5000):
        changes = [frame("PartitionChangeRecord", 0, topic_id=topic_id, partition_id=pid, leader=-1, isr=[b])
                   for b, key in chosen[first:first + 5000] for topic_id, pid in [partition_of(key)]]
        await cluster.controller._write(lambda: (changes, None))


def _cpu_ms(work) -> float:
    started = time.thread_time()
    work()
    return (time.thread_time() - started) * 1000


async def measure(partitions: int, brokers: int, fenced: int, leaderless: int, rounds: int, steps: int) -> dict:
    cluster = Cluster(brokers)
    controller = cluster.controller
    controller.sessions.session_timeout_ms = 10**9          # nobody heartbeats here: no session may expire
    started = time.monotonic()
    await cluster.start(partitions)
    built_s = time.monotonic() - started
    await _fence_alone(cluster, list(range(1, fenced + 1)))
    await _leaderless(cluster, list(range(1, fenced + 1)), leaderless)
    index = controller.state.partition_index
    still_leading = sum(index.has_leaderships(b) for b in range(1, fenced + 1))
    led = sum(len(index._leader.of(b)) for b in range(1, fenced + 1))
    await cluster.stop()             # no move loop from here: the rounds call what the activation calls
    gc.collect()
    gc.freeze()
    rearm_ms = []
    for _ in range(rounds):
        controller.moves = PartitionMoves()
        rearm_ms.append(_cpu_ms(lambda: controller.rearm(controller.clock())))
    moves, state, step_ms = controller.moves, controller.state, []
    for _ in range(steps):
        if not moves:
            break
        step_ms.append(_cpu_ms(lambda: moves.next_records(state)))
    gc.unfreeze()
    return {"built s": built_s, "still leading": still_leading, "led": led, "leaderless": index.leaderless_count(),
            "rearm p50 ms": statistics.median(rearm_ms), "rearm max ms": max(rearm_ms),
            "steps": len(step_ms), "step p50 ms": statistics.median(step_ms), "step max ms": max(step_ms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=500)
    parser.add_argument("--fenced", type=int, default=100, help="brokers fenced by their fence records alone")
    parser.add_argument("--leaderless", type=int, default=8000, help="partitions of theirs left without a leader")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200, help="move events timed after the re-arming")
    args = parser.parse_args()
    row = asyncio.run(measure(args.partitions, args.brokers, args.fenced, args.leaderless, args.rounds, args.steps))
    print(f"{args.partitions} partitions, {args.brokers} brokers (built in {row['built s']:.0f} s), "
          f"{args.fenced} fenced still leading {row['led']:,} partitions ({row['still leading']} of them lead), {row['leaderless']:,} partitions leaderless: "
          f"re-arm CPU p50 {row['rearm p50 ms']:.1f} ms, max {row['rearm max ms']:.1f} ms ({args.rounds} rounds); "
          f"the next {row['steps']} move events' CPU p50 {row['step p50 ms']:.2f} ms, max {row['step max ms']:.2f} ms "
          f"(load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
