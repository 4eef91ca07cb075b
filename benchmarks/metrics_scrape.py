"""What one Prometheus scrape costs the node's event loop: rendering GET /metrics's body (the
controller families count the committed image's partitions and brokers on every scrape, on
the loop that also serves raft and the listeners).

Run by hand (not part of the tests):

    .venv/bin/python benchmarks/metrics_scrape.py [--partitions 1000,10000,100000] [--runs 15]

The image is a MetadataImage filled with topics of 10 partitions each (replication factor 3,
every tenth partition led by its second replica) and 100 brokers; the raft families are left
out (they are a fixed handful of gauges). Each figure is the median over ``--runs`` renders in
ms, with min-max; the ratio is per 1000 partitions, to show the cost is linear.

``--broker`` renders a broker's families instead (kafkawire.broker.metrics: ReplicaManager's
gauges and the per-partition Partition and Log gauges): the broker leads every partition of
the image (replication factor 3, every tenth partition under-replicated), each with one
segment and a few records' offsets; the log and replica objects are stand-ins holding what
the families read.

Each size is also rendered in steps as the endpoint renders it (``render.in_steps``), beside a
task that takes every loop turn it can: the longest the loop went without a turn is what a
scrape costs the node's other work at once.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
import uuid
from types import SimpleNamespace

from kafkawire.metadata.image import MetadataImage, TopicImage
from kafkawire.raft.node.prometheus import _image_families, exposition


class _Partition:
    __slots__ = ("replicas", "leader", "adding_replicas", "removing_replicas")

    def __init__(self, replicas, leader):
        self.replicas, self.leader = replicas, leader
        self.adding_replicas = self.removing_replicas = ()


class _Broker:
    __slots__ = ("id", "fenced", "in_controlled_shutdown")

    def __init__(self, broker_id):
        self.id, self.fenced, self.in_controlled_shutdown = broker_id, broker_id % 10 == 0, False


def image_with(partitions: int) -> MetadataImage:
    image = MetadataImage()
    for t in range(partitions // 10):
        topic = TopicImage(name=f"topic-{t}", id=uuid.UUID(int=t + 1))
        for p in range(10):
            replicas = ((t + p) % 100, (t + p + 1) % 100, (t + p + 2) % 100)
            topic.partitions[p] = _Partition(replicas, replicas[1] if p == 0 else replicas[0])
        image.topics_by_name[topic.name] = topic
    image.brokers = {b: _Broker(b) for b in range(100)}
    return image


class _Log:
    __slots__ = ("log_start_offset", "log_end_offset", "size", "segment_count")

    def __init__(self, end):
        self.log_start_offset, self.log_end_offset, self.size, self.segment_count = 0, end, end * 70, 1


class _Replicas:
    """What the families read of a led partition's replication (LeaderReplicas)."""
    __slots__ = ("state", "followers", "effective_min_isr")

    def __init__(self, isr):
        self.state = SimpleNamespace(isr=isr)
        self.followers, self.effective_min_isr = {1: None, 2: None}, 2


class _Led:
    __slots__ = ("topic", "partition", "log", "replicas", "producers")

    def __init__(self, topic, index, under_replicated):
        self.topic, self.partition, self.log = topic, index, _Log(index * 1000 + 7)
        self.replicas = _Replicas((0, 1) if under_replicated else (0, 1, 2))
        self.producers = SimpleNamespace(producers={})

    def high_watermark(self):
        return self.log.log_end_offset

    def last_stable_offset(self):
        return self.log.log_end_offset


def broker_with(image) -> SimpleNamespace:
    from kafkawire.broker.metrics import BrokerTopicStats, IsrUpdateMeters
    from kafkawire.net.client_quotas import ClientQuotaManager
    from kafkawire.broker.telemetry_apis import TelemetryApis
    from kafkawire.net.request_metrics import RequestMetrics
    partitions = {(name, p): _Led(name, p, p == 0) for name, topic in image.topics_by_name.items()
                  for p in topic.partitions}
    return SimpleNamespace(lifecycle=None, partitions=partitions, image=lambda: image, offline_partitions={},
                           replica_roles=SimpleNamespace(followers={}), topic_stats=BrokerTopicStats(),
                           replication=SimpleNamespace(isr_meters=IsrUpdateMeters()), request_metrics=RequestMetrics(),
                           quotas=SimpleNamespace(produce=ClientQuotaManager(11, 1), fetch=ClientQuotaManager(11, 1),
                                                  request=ClientQuotaManager(11, 1)),
                           telemetry=TelemetryApis(lambda: None, max_bytes=1024, enabled=False),
                           config=SimpleNamespace(metrics_jmx_include=".*", metrics_jmx_exclude=""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="1000,10000,100000")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--broker", action="store_true", help="a broker's families, not a controller's")
    args = parser.parse_args()
    for count in (int(n) for n in args.partitions.split(",")):
        image = image_with(count)
        if args.broker:
            from kafkawire.broker.metrics import broker_families
            broker = broker_with(image)
            render = exposition(lambda broker=broker: broker_families(broker))
        else:
            render = exposition(lambda image=image: _image_families(image))
        # A node freezes what survives its first long full collection (kafkawire.gc.freeze.after.ms,
        # raft/node/gc_pauses.py): without that, the first scrapes here would time the collector
        # walking the image just built.
        gc.collect()
        gc.freeze()
        body = render()
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            render()
            times.append((time.perf_counter() - started) * 1000)
        median = statistics.median(times)
        print(f"{count:>7} partitions: {median:7.2f} ms per scrape (min {min(times):.2f}, max {max(times):.2f}), "
              f"{median / count * 1000:.3f} ms per 1000 partitions, body {len(body)} B")
        holds = [asyncio.run(_longest_hold(render)) for _ in range(args.runs)]
        walls, cpus = [h[0] for h in holds], [h[1] for h in holds]
        print(f"{'':>7}   rendered in steps, as the endpoint does: the loop held at most "
              f"{statistics.median(walls):.2f} ms at once (median over runs; max {max(walls):.2f}), "
              f"{statistics.median(cpus):.2f} ms of CPU (max {max(cpus):.2f})")


async def _longest_hold(render) -> tuple[float, float]:
    """The longest the event loop went without a turn while ``render.in_steps()`` ran, in ms of
    wall time and of this thread's CPU time (the gaps a task that yields on every turn sees;
    on a loaded machine the wall time also counts the time the process waited for a core)."""
    longest = longest_cpu = 0.0
    done = False

    async def ticker():
        nonlocal longest, longest_cpu
        last, last_cpu = time.perf_counter(), time.thread_time()
        while not done:
            await asyncio.sleep(0)
            now, now_cpu = time.perf_counter(), time.thread_time()
            longest, longest_cpu = max(longest, now - last), max(longest_cpu, now_cpu - last_cpu)
            last, last_cpu = now, now_cpu
    task = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    await render.in_steps()
    done = True
    await task
    return longest * 1000, longest_cpu * 1000


if __name__ == "__main__":
    main()
