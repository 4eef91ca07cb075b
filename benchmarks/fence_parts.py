"""Where a fence's CPU goes, per leadership moved (issue 28, goal 1: "fencing a broker that leads 10%
of 1M partitions: the leader changes committed within 2 s", which end to end is bound by the three
voters' CPU, benchmarks/README.md "The fence end to end at 1M"), in process: the active controller
of benchmarks/controller_scale.py, --brokers brokers, --partitions partitions with replication
factor 3, and a follower's state loaded from a snapshot of its image (the image's records,
controller/snapshot.py). Then the records that move broker 1's leaderships (about
partitions/brokers of them), in steps of 250 as the fence's job takes them (controller/fencing.py):

* the leader: each step's records generated (replication.leader_and_isr_updates, as the job's
  step does) and applied (ControllerState.apply_batch of the values just built, as _append_ahead
  does), the two timed apart;
* a follower: the same records as copies (bytes another node would have read from its log),
  decoded alone (decode_metadata_record), then applied as a follower replays them
  (ControllerState.apply_batch, decoding included), batch by batch.

Printed: microseconds of CPU per record for each part, and the garbage collector's CPU within
each (``--no-gc``: the collector off during the parts, to see what it costs). The built image is
frozen out of the collector first, as a node freezes at its snapshots.

    PYTHONPATH=. .venv/bin/python benchmarks/fence_parts.py [--partitions 1000000] [--brokers 10] [--no-gc]

To compare with an older tree, copy this file into it and run it there (it imports the tree it
sits in).
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
from kafkawire.controller.partition_index import partition_of  # noqa: E402
from kafkawire.controller.replication import leader_and_isr_updates  # noqa: E402
from kafkawire.controller.snapshot import image_records  # noqa: E402
from kafkawire.controller.state import ControllerState  # noqa: E402
from kafkawire.metadata.frame import decode_metadata_record  # noqa: E402
from kafkawire.metadata.registrations import NO_LEADER  # noqa: E402

VICTIM = 1
STEP = 250


class _CollectorTime:
    """The collector's CPU and collections since the last ``take``."""

    def __init__(self):
        self.cpu, self.collections, self._started = 0.0, 0, 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.cpu += time.process_time() - self._started
            self.collections += 1

    def take(self) -> str:
        text = f"collector {self.cpu:.3f} s in {self.collections} collections"
        self.cpu, self.collections = 0.0, 0
        return text


def _leader_steps(state: ControllerState):
    """The leader's part: (records per step as written, generate CPU, apply CPU)."""
    image = state.image
    led = sorted(state.partition_index._leader.of(VICTIM))
    written, generate_cpu, apply_cpu = [], 0.0, 0.0
    offset = state.next_offset
    for first in range(0, len(led), STEP):
        started = time.process_time()
        chosen = []
        for key in led[first:first + STEP]:
            topic_id, pid = partition_of(key)
            topic = image.topics_by_id[topic_id]
            chosen.append((topic, pid, topic.partitions[pid]))
        records = leader_and_isr_updates(image, broker_to_remove=VICTIM, broker_to_add=NO_LEADER, chosen=chosen,
                                         node_configs=state.node_configs)
        generated = time.process_time()
        state.apply_batch(offset, 1, 0, records)
        offset += len(records)
        apply_cpu += time.process_time() - generated
        generate_cpu += generated - started
        written.append([bytes(bytearray(value)) for value in records])      # copies: what a follower reads
    return written, generate_cpu, apply_cpu


async def measure(partitions: int, brokers: int, collector: bool, young_threshold: int = 0) -> None:
    cluster = Cluster(brokers)
    await cluster.start(partitions)
    state = cluster.controller.state
    follower = ControllerState()
    follower.load_snapshot(state.next_offset, 1, image_records(state.image, state.feature_order))
    gc.collect()
    gc.freeze()
    if not collector:
        gc.disable()
    if young_threshold:
        gc.set_threshold(young_threshold, *gc.get_threshold()[1:])
    gc_time = _CollectorTime()
    written, generate_cpu, apply_cpu = _leader_steps(state)
    n = sum(map(len, written))
    print(f"leader: generate {generate_cpu * 1e6 / n:.2f} us a record, apply {apply_cpu * 1e6 / n:.2f} us "
          f"({n} records in {len(written)} steps; {gc_time.take()})")
    started = time.process_time()
    for values in written:
        for value in values:
            decode_metadata_record(value)
    decode_cpu = time.process_time() - started
    started = time.process_time()
    offset = follower.next_offset
    for values in written:
        follower.apply_batch(offset, 1, 0, values)
        offset += len(values)
    replay_cpu = time.process_time() - started
    print(f"follower: decode alone {decode_cpu * 1e6 / n:.2f} us a record, replay (decode and apply) "
          f"{replay_cpu * 1e6 / n:.2f} us ({gc_time.take()})")
    gc.enable()
    same = all(follower.image.topics_by_id[t].partitions == topic.partitions
               for t, topic in state.image.topics_by_id.items())
    problems = len(state.problems) + len(follower.problems)
    print(f"the follower's partitions are the leader's: {same}; problems: {problems}")
    await cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=10)
    parser.add_argument("--no-gc", action="store_true", help="the collector off during the timed parts")
    parser.add_argument("--young-threshold", type=int, default=0,
                        help="gc's first threshold during the timed parts (default: as it is, 700)")
    args = parser.parse_args()
    asyncio.run(measure(args.partitions, args.brokers, not args.no_gc, args.young_threshold))


if __name__ == "__main__":
    main()
