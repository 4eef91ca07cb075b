"""What the controller's image costs CPython's garbage collector (issue 28), in process: one
controller on the fake raft of benchmarks/controller_scale.py (its Cluster: --brokers
registered and unfenced, topics of 100 partitions with replication factor 3), built to each
size, then:

* tracked objects/partition: the objects gc tracks after the build that it did not track
  before (gc.get_objects(), after two full collections so that tuples of atomic values are
  untracked, as CPython does lazily), over the partitions, with the most common types. The
  fake raft's own copy of every record is dropped first: a real node keeps its log on disk.
  The controller's uncommitted image and its committed view share their partitions (copy on
  write, kafkawire.controller.committed), so both are in the count once.
* full collection ms: gc.collect() (generation 2), median of 5; what a node pays each time
  CPython decides on a full collection while the image is this large. "its CPU ms" is the
  thread's CPU time in it, less sensitive than the wall time to the machine's other load.
* RSS/partition: the resident set's growth over the build, over the partitions.
* traced bytes/partition (--tracemalloc): what tracemalloc saw allocated and still alive after
  the build, over the partitions (slows the build some 3x).

    .venv/bin/python benchmarks/gc_image.py [--sizes 100000,1000000] [--brokers 100] [--tracemalloc]

--churn SECONDS (one size): the node's freeze policy (kafkawire.raft.node.gc_pauses, here with
--freeze-after-ms, 0 for none) installed before the build, then for SECONDS a loop that creates
a topic of 100 partitions and deletes the oldest topic, so that the whole image is replaced every
size/100 rounds (each replacement's survivors bring full collections, and so freezes, back), with
a round of heartbeats each second; every 10 s a
line with the RSS, the objects frozen, the freezes made and the longest collection since the
last line. At the end a full collection, then gc.unfreeze() and another: the objects the second
collects are the cyclic garbage the freezes had kept from the collector (what the policy leaked).

    .venv/bin/python benchmarks/gc_image.py --sizes 100000 --churn 300 --freeze-after-ms 20

To compare with an older tree, copy this file and controller_scale.py into it and run it there.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import os
import statistics
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from controller_scale import Cluster, _rss_bytes, _topic  # noqa: E402

from kafkawire.messages.create_topics_request import CreateTopicsRequest  # noqa: E402
from kafkawire.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState  # noqa: E402
from kafkawire.raft.node import gc_pauses  # noqa: E402
from tests.controller.harness import Ctx  # noqa: E402

CREATE_TOPICS, DELETE_TOPICS = 19, 20

COLLECTIONS = 5


def full_collection_ms() -> tuple[float, float]:
    """(wall ms, CPU ms) of a full collection, medians."""
    wall, cpu = [], []
    for _ in range(COLLECTIONS):
        start, start_cpu = time.perf_counter(), time.thread_time()
        gc.collect()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.thread_time() - start_cpu) * 1000)
    return statistics.median(wall), statistics.median(cpu)


async def measure(partitions: int, brokers: int, traced: bool) -> dict:
    gc.collect()
    before = {id(o) for o in gc.get_objects()}
    rss_before = _rss_bytes()
    if traced:
        tracemalloc.start()
        traced_before = tracemalloc.get_traced_memory()[0]
    cluster = Cluster(brokers)
    start = time.monotonic()
    await cluster.start(partitions)
    built_s = time.monotonic() - start
    quorum = cluster.quorum
    quorum.entries.clear()
    quorum.batches.clear()
    quorum.committed_batches.clear()
    gc.collect()
    gc.collect()
    out = {"partitions": partitions, "build s": built_s}
    if traced:
        out["traced B/partition"] = (tracemalloc.get_traced_memory()[0] - traced_before) / partitions
        tracemalloc.stop()
    new = [o for o in gc.get_objects() if id(o) not in before]
    out["tracked/partition"] = len(new) / partitions
    out["types"] = collections.Counter(type(o).__name__ for o in new).most_common(4)
    del new, before
    out["RSS B/partition"] = (_rss_bytes() - rss_before) / partitions
    out["full collection ms"], out["its CPU ms"] = full_collection_ms()
    await cluster.stop()
    return out


class _Pauses:
    """The longest collection since the last read, by generation."""

    def __init__(self):
        self.longest = [0.0, 0.0, 0.0]
        self._start = 0.0
        gc.callbacks.append(self._on_collection)

    def _on_collection(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            generation = info["generation"]
            self.longest[generation] = max(self.longest[generation], (time.perf_counter() - self._start) * 1000)

    def read(self) -> list[float]:
        out, self.longest = self.longest, [0.0, 0.0, 0.0]
        return out


async def churn(partitions: int, brokers: int, seconds: float, freeze_after_ms: int) -> None:
    gc_pauses.log_long_pauses(freeze_after_ms)
    pauses = _Pauses()
    cluster = Cluster(brokers)
    await cluster.start(partitions)
    quorum = cluster.quorum
    create, delete = cluster.handlers[CREATE_TOPICS], cluster.handlers[DELETE_TOPICS]
    start = last_line = last_beats = time.monotonic()
    rounds, built_topics = 0, partitions // 100
    print(f"built {partitions} partitions; churn for {seconds:.0f} s, kafkawire.gc.freeze.after.ms={freeze_after_ms}")
    print("s  RSS MB  frozen objects  freezes  longest gen0/1/2 ms  create+delete rounds")
    while time.monotonic() - start < seconds:
        quorum.entries.clear()            # the fake raft's copy of every record: a real node's is on disk
        quorum.batches.clear()
        quorum.committed_batches.clear()
        # Turnover: a new topic, and the oldest goes (the build's t0, t1, ..., then the churn's own),
        # so the whole image is replaced every partitions/100 rounds.
        oldest = f"t{rounds}" if rounds < built_topics else f"c{rounds - built_topics}"
        reply = await create.handle(Ctx(5), CreateTopicsRequest(topics=[_topic(f"c{rounds}", 100)], timeout_ms=60_000))
        assert reply.topics[0].error_code == 0, reply
        reply = await delete.handle(Ctx(6), DeleteTopicsRequest(topics=[DeleteTopicState(name=oldest)], timeout_ms=60_000))
        assert reply.responses[0].error_code == 0, reply
        rounds += 1
        now = time.monotonic()
        if now - last_beats > 1:
            for b in cluster.epochs:
                await cluster.beat(b)
            last_beats = now
        if now - last_line >= 10 or now - start >= seconds:
            longest = "/".join(f"{ms:.0f}" for ms in pauses.read())
            print(f"{now - start:4.0f}  {_rss_bytes() / 2**20:6.0f}  {gc.get_freeze_count():14d}  "
                  f"{gc_pauses.freezes[0]:7d}  {longest:>19s}  {rounds}")
            last_line = now
    await cluster.stop()
    gc.callbacks.remove(pauses._on_collection)
    gc.callbacks.remove(gc_pauses._on_collection)
    not_frozen = gc.collect()
    gc.unfreeze()
    print(f"a full collection collected {not_frozen} objects; after gc.unfreeze() one more collected "
          f"{gc.collect()} (the cyclic garbage the freezes kept)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--churn", type=float, default=0, help="seconds of create/delete after the build")
    parser.add_argument("--freeze-after-ms", type=int, default=0, help="the freeze policy's setting in --churn")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {args.brokers} brokers, load average {os.getloadavg()[0]:.1f}")
    if args.churn:
        asyncio.run(churn(int(args.sizes), args.brokers, args.churn, args.freeze_after_ms))
        return
    for size in (int(s) for s in args.sizes.split(",")):
        result = asyncio.run(measure(size, args.brokers, args.tracemalloc))
        types = ", ".join(f"{name} {count / size:.2f}" for name, count in result.pop("types"))
        print("  ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))
        print(f"  tracked per partition by type: {types}")


if __name__ == "__main__":
    main()
