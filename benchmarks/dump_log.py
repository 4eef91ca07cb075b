"""How fast is ``kafkawire dump-log --cluster-metadata-decoder`` on a ~100 MB metadata log?

Generates a __cluster_metadata segment with our writer (a controller's mix: topic creations
with their partitions and configs, leader and ISR changes, broker heartbeats' registration
changes, producer-id blocks and a NoOpRecord every so often, in batches of 1-20 records), then
times, median of a few runs, in one process:

* read:          reading the file's bytes (the floor);
* iter_batches:  framing and CRC-checking every batch (kafkawire.records.iter_batches);
* + records:     the same, also decoding every record of every batch;
* dump-log:      the whole tool, Kafka's text written to /dev/null;
* dump-log json: the same with --json.

    .venv/bin/python benchmarks/dump_log.py [--mb 100] [--runs 3] [--keep PATH]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import tempfile
import time
import uuid

from kafkawire import messages
from kafkawire.metadata import encode_metadata_record
from kafkawire.records import RecordBatchBuilder, iter_batches

M = messages.by_name


def _record(record_name, version=0, **fields):
    return encode_metadata_record(M(record_name)(**fields), version)


def generate(path: str, target_bytes: int, seed: int = 1) -> tuple[int, int]:
    """Write a metadata log of about ``target_bytes``; returns (batches, records)."""
    rng = random.Random(seed)
    brokers = [1, 2, 3]
    topics: list[tuple[uuid.UUID, int]] = []
    offset, epoch, ts = 0, 1, 1_700_000_000_000
    batches = records = 0
    with open(path, "wb") as f:
        written = 0
        while written < target_bytes:
            values = []
            kind = rng.random()
            if kind < 0.15 or not topics:
                tid = uuid.UUID(int=rng.getrandbits(128))
                n = rng.randint(1, 12)
                values.append(_record("TopicRecord", name=f"orders-{len(topics)}-{rng.randint(0, 999999)}",
                                      topic_id=tid))
                for p in range(n):
                    replicas = rng.sample(brokers, 3)
                    values.append(_record("PartitionRecord", 1, partition_id=p, topic_id=tid, replicas=replicas,
                                          isr=replicas, leader=replicas[0], leader_epoch=0, partition_epoch=0,
                                          directories=[uuid.UUID(int=rng.getrandbits(128)) for _ in replicas]))
                for key, value in (("retention.ms", str(rng.randint(1, 10) * 86400000)),
                                   ("cleanup.policy", rng.choice(["delete", "compact"]))):
                    values.append(_record("ConfigRecord", resource_type=2, resource_name=f"orders-{len(topics)}",
                                          name=key, value=value))
                topics.append((tid, n))
            elif kind < 0.55:
                for _ in range(rng.randint(1, 20)):
                    tid, n = rng.choice(topics)
                    isr = rng.sample(brokers, rng.randint(1, 3))
                    values.append(_record("PartitionChangeRecord", 0, partition_id=rng.randrange(n), topic_id=tid,
                                          isr=isr, leader=isr[0] if rng.random() < 0.5 else -2))
            elif kind < 0.7:
                values.append(_record("BrokerRegistrationChangeRecord", 1, broker_id=rng.choice(brokers),
                                      broker_epoch=rng.randint(1, 1000), fenced=rng.choice([-1, 0, 1]),
                                      in_controlled_shutdown=0))
            elif kind < 0.72:
                values.append(_record("ProducerIdsRecord", broker_id=rng.choice(brokers), broker_epoch=5,
                                      next_producer_id=rng.randint(0, 1 << 40)))
            else:
                values.append(_record("NoOpRecord"))
            builder = RecordBatchBuilder(base_offset=offset, partition_leader_epoch=epoch)
            for v in values:
                builder.append(None, v, (), ts)
            data = builder.build()
            f.write(data)
            written += len(data)
            offset += len(values)
            ts += rng.randint(1, 500)
            batches += 1
            records += len(values)
    return batches, records


def _median(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", help="write the generated log here and keep it")
    args = parser.parse_args()

    from kafkawire.tools.cli import main as kafkawire

    directory = tempfile.mkdtemp()
    path = args.keep or os.path.join(directory, "00000000000000000000.log")
    start = time.perf_counter()
    batches, records = generate(path, int(args.mb * 1024 * 1024))
    size = os.path.getsize(path)
    print(f"generated {size / 1e6:.1f} MB, {batches} batches, {records} records in "
          f"{time.perf_counter() - start:.1f} s: {path}")

    def read():
        with open(path, "rb") as f:
            f.read()

    def frame():
        with open(path, "rb") as f:
            for _ in iter_batches(f.read()):
                pass

    def frame_and_records():
        with open(path, "rb") as f:
            for batch in iter_batches(f.read()):
                for _ in batch:
                    pass

    def dump(*extra):
        def go():
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
                status = kafkawire(["dump-log", "--cluster-metadata-decoder", *extra, "--files", path])
            assert status == 0
        return go

    results = {}
    for name, fn in (("read", read), ("iter_batches", frame), ("iter_batches + records", frame_and_records),
                     ("dump-log --cluster-metadata-decoder", dump()),
                     ("dump-log --cluster-metadata-decoder --json", dump("--json"))):
        results[name] = _median(fn, args.runs)
    base = results["iter_batches + records"]
    print(f"\nmedian of {args.runs} runs (CPython {sys.version.split()[0]}):")
    for name, seconds in results.items():
        print(f"  {name:45s} {seconds:8.3f} s  {size / 1e6 / seconds:9.1f} MB/s  "
              f"x{seconds / results['read']:8.1f} read  x{seconds / base:6.2f} iter_batches+records")
    if not args.keep:
        os.remove(path)
        os.rmdir(directory)


if __name__ == "__main__":
    main()
