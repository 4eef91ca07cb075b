"""The group coordinator's load of ``__consumer_offsets`` (kafkawire.broker.group_log's replay):
how long a restart spends replaying committed offsets, against reading the same batches' records
alone, in one run.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/group_load.py [--groups 1000] [--partitions 100]

Builds one OffsetCommit record per (group, partition) in batches of 100 (a consumer committing
100 partitions at once writes one such batch) and prints the median of 5 rounds: the records read
(iter_batches, each record's key and value touched) and the full replay (decoded as Kafka's
OffsetCommitKey/Value and stored), with records/s and the ratio.
"""
from __future__ import annotations

import argparse
import statistics
import time

from kafkawire.broker.group_coordinator import GroupCoordinator, GroupSettings
from kafkawire.broker.group_offsets import GroupOffsets
from kafkawire.broker.group_records import OffsetAndMetadata, offset_record
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch

ROUNDS = 5


def log_bytes(groups: int, partitions: int) -> bytes:
    batches = []
    for g in range(groups):
        records = [offset_record(f"group-{g}", "orders", p, OffsetAndMetadata(1000 + p, 3, "", 1_700_000_000_000))
                   for p in range(partitions)]
        for i in range(0, len(records), 100):
            batches.append(build_batch(records[i:i + 100]))
    return b"".join(batches)


def read_only(data: bytes) -> int:
    n = 0
    for batch in iter_batches(data):
        for record in batch:
            n += len(record.key) + len(record.value)
    return n


def replay(data: bytes) -> int:
    offsets = GroupOffsets(GroupCoordinator(GroupSettings(), timer=None, persist=None, now_ms=lambda: 0))
    for batch in iter_batches(data):
        for record in batch:
            offsets.replay(record.key, record.value)
    return sum(len(v) for v in offsets.offsets.values())


def median_seconds(fn, data: bytes) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        fn(data)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=100)
    args = parser.parse_args()
    data = log_bytes(args.groups, args.partitions)
    count = args.groups * args.partitions
    assert replay(data) == count
    read, full = median_seconds(read_only, data), median_seconds(replay, data)
    print(f"{count} OffsetCommit records, {len(data) / 1e6:.1f} MB of batches")
    print(f"read only: {read * 1000:8.1f} ms  {count / read / 1e6:5.2f} M records/s")
    print(f"replay:    {full * 1000:8.1f} ms  {count / full / 1e6:5.2f} M records/s  ({full / read:.1f}x the read)")


if __name__ == "__main__":
    main()
