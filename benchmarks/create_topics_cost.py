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

To compare with an older tree, copy this file and controller_scale.py (its helpers) into it and
run it there (it imports the tree it sits in).
"""
from __future__ import annotations

import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.controller_scale import (CREATE_TOPICS, _topic, cpu_summary, each_size, frozen_cluster,  # noqa: E402
                                         write_cost_arguments)
from kafkawire.messages.create_topics_request import CreateTopicsRequest  # noqa: E402
from tests.controller.harness import Ctx  # noqa: E402


async def measure(partitions: int, brokers: int, rounds: int, hold: bool) -> dict:
    cluster, built_s = await frozen_cluster(partitions, brokers)
    samples, held = [], None
    for i in range(rounds):
        await cluster.keep_sessions()               # untimed
        if hold:
            held = cluster.controller.image         # noqa: F841 (held across the next commit)
        request = CreateTopicsRequest(topics=[_topic(f"cost{i}", 10)], timeout_ms=30_000)
        cpu = time.thread_time()
        response = await cluster.handlers[CREATE_TOPICS].handle(Ctx(5), request)
        samples.append((time.thread_time() - cpu) * 1e6)
        assert response.topics[0].error_code == 0, response
    await cluster.stop()
    return {"partitions": partitions, "built s": built_s, **cpu_summary(samples)}


def main() -> None:
    parser = write_cost_arguments(__doc__)
    parser.add_argument("--hold", action="store_true", help="a reader holds the committed image across commits")
    args = parser.parse_args()
    for partitions in each_size(args.partitions):
        row = asyncio.run(measure(partitions, args.brokers, args.rounds, args.hold))
        print(f"{row['partitions']:>8} partitions (built in {row['built s']:.0f} s): CreateTopics of 10 partitions, "
              f"CPU p50 {row['p50 us']:.0f} us, p90 {row['p90 us']:.0f} us, mean {row['mean us']:.0f} us "
              f"({args.rounds} rounds{', image held' if args.hold else ''})", flush=True)


if __name__ == "__main__":
    main()
