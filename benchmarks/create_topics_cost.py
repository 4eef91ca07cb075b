"""The CPU of one CreateTopics of a topic of 10 partitions on the active controller, at a
cluster's size (issue 28: a write's fixed cost independent of the number of topics), in
process: benchmarks/controller_scale.py's Cluster (the fake raft of tests/controller/
harness.py, appends commit on the next loop turn; --brokers brokers, topics of 100 partitions),
then --rounds CreateTopics one after the other, each timed in the thread's CPU (time.thread_time)
from the request until its answer (its commit included); between rounds, once a second has
passed, every broker heartbeats (untimed) so that no session expires. ``--hold``: a reader keeps the
committed image it last read across the next commit (as a combined node's broker does), which
makes the commit copy the maps it changes.

    .venv/bin/python benchmarks/create_topics_cost.py [--partitions 100000,1000000] [--rounds 300] [--hold]

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

from benchmarks.controller_scale import CREATE_TOPICS, Cluster, _topic  # noqa: E402
from kafkawire.messages.create_topics_request import CreateTopicsRequest  # noqa: E402
from tests.controller.harness import Ctx  # noqa: E402


async def measure(partitions: int, brokers: int, rounds: int, hold: bool) -> dict:
    cluster = Cluster(brokers)
    start = time.monotonic()
    await cluster.start(partitions)
    built_s = time.monotonic() - start
    gc.collect()
    gc.freeze()                     # the built image out of the collections timed below
    samples, held, last_beats = [], None, time.monotonic()
    for i in range(rounds):
        if time.monotonic() - last_beats > 1:       # untimed: the brokers' sessions must not expire
            for b in cluster.epochs:
                await cluster.beat(b)
            last_beats = time.monotonic()
        if hold:
            held = cluster.controller.image         # noqa: F841 (held across the next commit)
        request = CreateTopicsRequest(topics=[_topic(f"cost{i}", 10)], timeout_ms=30_000)
        cpu = time.thread_time()
        response = await cluster.handlers[CREATE_TOPICS].handle(Ctx(5), request)
        samples.append((time.thread_time() - cpu) * 1e6)
        assert response.topics[0].error_code == 0, response
    await cluster.stop()
    samples.sort()
    return {"partitions": partitions, "built s": built_s, "p50 us": statistics.median(samples),
            "p90 us": samples[int(len(samples) * 0.9)], "mean us": statistics.fmean(samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="100000,1000000", help="cluster sizes, comma-separated")
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--hold", action="store_true", help="a reader holds the committed image across commits")
    args = parser.parse_args()
    for partitions in (int(p) for p in args.partitions.split(",")):
        row = asyncio.run(measure(partitions, args.brokers, args.rounds, args.hold))
        print(f"{row['partitions']:>8} partitions (built in {row['built s']:.0f} s): CreateTopics of 10 partitions, "
              f"CPU p50 {row['p50 us']:.0f} us, p90 {row['p90 us']:.0f} us, mean {row['mean us']:.0f} us "
              f"({args.rounds} rounds{', image held' if args.hold else ''})", flush=True)
        gc.unfreeze()
        gc.collect()


if __name__ == "__main__":
    main()
