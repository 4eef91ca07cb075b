"""The automatic leader balancing's cost at scale (issue 29; kafkawire/controller/leader_balance.py,
Kafka's electPreferred task), in process: the active controller of benchmarks/controller_scale.py,
--brokers brokers, --partitions partitions with replication factor 3. Broker 1 loses the
leadership of every partition it leads and leaves their ISRs (the records a fence writes, as
benchmarks/fence_parts.py makes them): those partitions are then led by another replica while
their first replica, broker 1, is out of the ISR. Timed (process CPU):

* the apply of those records, per record (what the imbalanced-partition bookkeeping adds to each
  partition change shows here: compare with an older tree);
* a walk of the task that elects nothing (broker 1 may not lead: out of the ISR): every
  imbalanced partition looked at, in runs of at most MAX_LOOKS_PER_RUN (--max-looks; Kafka's
  one run looks at all): the runs, the longest run's CPU and the walk's;
* broker 1 back in those ISRs (one PartitionChangeRecord each, as its leaders' AlterPartition
  would write), then the runs that give it its leaderships back, 1,000 elections a run
  (MAX_ELECTIONS_PER_IMBALANCE): the longest run's CPU, and all of them per election;
* ``pending()``, which the controller's loop asks at every wake: it must not grow with the
  partitions.

    PYTHONPATH=. .venv/bin/python benchmarks/leader_balance.py [--partitions 100000] [--brokers 10] [--max-looks N]
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.controller_scale import Cluster  # noqa: E402
from benchmarks.fence_parts import VICTIM, _leader_steps  # noqa: E402
from kafkawire.controller.frames import frame  # noqa: E402
from kafkawire.controller.partition_index import partition_of  # noqa: E402

LIMIT = 1000


def _rejoin_records(state) -> list[bytes]:
    """Broker 1 back in the ISR of each partition whose first replica it is and that it does not lead."""
    image = state.image
    records = []
    for key in state.partition_index.imbalanced_keys():
        topic_id, pid = partition_of(key)
        p = image.topics_by_id[topic_id].partitions[pid]
        if p.replicas[0] == VICTIM and VICTIM not in p.isr:
            records.append(frame("PartitionChangeRecord", topic_id=topic_id, partition_id=pid,
                                 isr=list(p.isr) + [VICTIM]))
    return records


def _walk(state, task, apply: bool) -> tuple[int, int, float, float]:
    """Runs of the task until its walk ends and a run elects nothing more: (runs, records, the
    longest run's CPU, all runs' CPU), the records applied between runs when ``apply``."""
    runs, written, longest, total = 0, 0, 0.0, 0.0
    while True:
        started = time.process_time()
        records = task.records(state, LIMIT)
        spent = time.process_time() - started
        runs, written, longest, total = runs + 1, written + len(records), max(longest, spent), total + spent
        if apply and records:
            state.apply_batch(state.next_offset, 1, 0, records)
        if not records and not task.unfinished():
            return runs, written, longest, total


async def measure(partitions: int, brokers: int, max_looks: int | None) -> None:
    cluster = Cluster(brokers)
    await cluster.start(partitions)
    controller = cluster.controller
    state = controller.state
    task = controller.leader_balance
    if max_looks is not None:
        task.max_looks = max_looks
    gc.collect()
    gc.freeze()
    written, _, apply_cpu = _leader_steps(state)
    moved = sum(map(len, written))
    imbalanced = state.partition_index.imbalanced_count()
    print(f"{partitions} partitions, {brokers} brokers: {moved} leaderships of broker 1 moved, apply "
          f"{apply_cpu * 1e6 / moved:.2f} us a record; {imbalanced} partitions imbalanced")
    runs, written, longest, total = _walk(state, task, apply=False)
    print(f"a walk that elects nothing ({task.max_looks} looks a run at most): {runs} runs, {written} records, "
          f"longest run {longest * 1e3:.1f} ms CPU, all {total * 1e3:.1f} ms")
    rejoin = _rejoin_records(state)
    state.apply_batch(state.next_offset, 1, 0, rejoin)
    runs, elected, longest, total = _walk(state, task, apply=True)
    print(f"broker 1 back in {len(rejoin)} ISRs: {runs} runs elected {elected} leaders; longest run "
          f"{longest * 1e3:.1f} ms CPU, {total * 1e6 / max(elected, 1):.1f} us an election (generate only); "
          f"{state.partition_index.imbalanced_count()} left imbalanced")
    started = time.perf_counter()
    for _ in range(100_000):
        task.pending(state)
    print(f"pending(): {(time.perf_counter() - started) * 1e9 / 100_000:.0f} ns a call; problems: {len(state.problems)}")
    await cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--max-looks", type=int, default=None, help="the partitions a run looks at, at most")
    args = parser.parse_args()
    asyncio.run(measure(args.partitions, args.brokers, args.max_looks))


if __name__ == "__main__":
    main()
