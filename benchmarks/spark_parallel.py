"""Parallelism within one Kafka partition: the same single-partition log read by Spark at
local[1] and at local[2], for the speed-up that cutting a large segment at offset-index
entries into several input partitions buys.

Run by hand (not part of the tests; needs Java 17 and the dev extra):

    PYTHONPATH=. .venv/bin/python benchmarks/spark_parallel.py [--mb 300] [--runs 3]

Workload: ONE partition directory, one segment of about ``--mb`` MB of uncompressed v2
batches written by our Log writer (spark_read.py's records: batches of 100, 16-byte keys,
100-byte values, Kafka's default 4 KiB index interval). First the plan is printed: how
many input partitions the planner makes of it and their byte ranges (each one starts at an
offset-index entry, and together they cover the segment once). Then each run starts a
Spark session at local[cores], warms it up with one read, and times one read that
materialises every column of every row (noop sink). The core counts alternate within a
round and the order flips each round (1,2 / 2,1 / 1,2 ...), so a burst of other load on a
shared machine falls on both; printed are the medians of the wall time, rows/s, CPU
seconds of the Spark process tree, the cores it kept busy (CPU s / wall s: how many cores
the read used, which other load on the machine lowers but cannot raise), the speed-up (local[1] wall / local[2] wall, of the
medians and of each round's pair) and the load average before and after.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_read import generate, spark_session, tree_cpu_seconds  # noqa: E402

from kafkawire.records import NONE  # noqa: E402


def show_plan(path: Path) -> int:
    """Print the input partitions the planner makes of ``path``; returns their count."""
    from kafkawire.spark.filters import PushedFilters
    from kafkawire.spark.options import parse_options
    from kafkawire.spark.plan import pack_tasks, plan_batch
    opts = parse_options({"path": str(path)}, streaming=False)
    packs = pack_tasks(plan_batch(opts, PushedFilters()), opts.split_bytes)
    print(f"plan: {len(packs)} input partitions")
    for i, pack in enumerate(packs):
        ranges = ", ".join(f"[{t.start:,}, {(t.stop if t.stop is not None else t.limit):,})" for t in pack)
        print(f"  {i}: {Path(pack[0].path).name} bytes {ranges}")
    return len(packs)


def one_run(path: Path, cores: int) -> tuple[float, float, int]:
    """(wall s, CPU s, rows) of one timed read after a warm-up, in a fresh local[cores] session."""
    spark = spark_session(cores)
    try:
        read = lambda: spark.read.format("kafkawire").load(str(path))   # noqa: E731
        read().write.format("noop").mode("overwrite").save()             # warm-up: workers, page cache
        rows = read().count()
        c, t = tree_cpu_seconds(os.getpid()), time.perf_counter()
        read().write.format("noop").mode("overwrite").save()
        return time.perf_counter() - t, tree_cpu_seconds(os.getpid()) - c, rows
    finally:
        spark.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=300, help="uncompressed record MB in the one partition")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/kafkawire-spark-parallel")
    args = ap.parse_args()
    path = Path(args.dir) / "big-0"
    t = time.perf_counter()
    n = generate(path, int(args.mb * 1e6), NONE)
    size = sum(f.stat().st_size for f in path.glob("*.log"))
    print(f"one partition: {n:,} records, {len(list(path.glob('*.log')))} segment(s), {size / 1e6:,.0f} MB "
          f"({time.perf_counter() - t:.0f} s to write)")
    show_plan(path)
    from kafkawire import _native
    print(f"record path {_native.status()}; load average before: {os.getloadavg()}", flush=True)
    results = {1: [], 2: []}
    for round_ in range(args.runs):
        for cores in ((1, 2) if round_ % 2 == 0 else (2, 1)):
            wall, cpu, rows = one_run(path, cores)
            results[cores].append((wall, cpu))
            print(f"  round {round_ + 1} local[{cores}]: {wall:6.2f} s wall, {rows / wall:11,.0f} rows/s, "
                  f"{cpu:6.2f} CPU s, {cpu / wall:4.2f} cores busy, load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"load average after: {os.getloadavg()}")
    print(f"\nmedians of {args.runs} runs, {n:,} rows in one partition:")
    walls = {}
    for cores, pairs in results.items():
        walls[cores] = statistics.median(w for w, _ in pairs)
        cpu = statistics.median(c for _, c in pairs)
        print(f"  local[{cores}]  {walls[cores]:6.2f} s wall  {n / walls[cores]:11,.0f} rows/s  "
              f"{cpu:6.2f} CPU s  {n / cpu:11,.0f} rows/CPU-s  {cpu / walls[cores]:4.2f} cores busy")
    pairs = [a[0] / b[0] for a, b in zip(results[1], results[2])]
    print(f"speed-up local[2] over local[1]: {walls[1] / walls[2]:.2f}x of the medians; "
          f"per round {', '.join(f'{p:.2f}x' for p in pairs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
