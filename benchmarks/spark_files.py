"""The Spark reader without Spark, on local files and on S3: what reading through a
filesystem costs, and how many requests a remote read makes.

Run by hand (not part of the tests):

    PYTHONPATH=. .venv/bin/python benchmarks/spark_files.py [--mb 256] [--runs 5] [--s3]

Workload: ``--mb`` of uncompressed v2 segments written by our Log writer into one partition
(benchmarks/spark_read.py's records: batches of 100, 16-byte keys, 100-byte values), split
into segments of ``--segment-mb`` with Kafka's default 4 KiB index interval. Each run plans
the read (``plan_batch``) and runs every task (``read_task``, all columns, the C
extension's record columns where built) in this process, one core; printed are the
medians of the CPU time per row and of rows per CPU-second.

``--s3`` also uploads the partition to an S3 server (moto's, on 127.0.0.1, started here)
and reads it through ``s3a://``: the same rows, the wall and CPU time (moto runs in this
process, so the CPU time includes the server's), and the requests the read made, by kind
(LIST, HEAD, GET), for the plan and for the tasks: the numbers docs/spark.md's cost plan
for 1 TB starts from.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.spark_read import generate  # noqa: E402
from kafkawire.records import NONE  # noqa: E402


def read_all(path: str, options: dict) -> tuple[int, float, float, float]:
    """(rows, plan CPU seconds, total CPU seconds, wall seconds) of one planned and read batch read."""
    from kafkawire.spark.filters import PushedFilters
    from kafkawire.spark.options import parse_options
    from kafkawire.spark.plan import plan_batch
    from kafkawire.spark.reader import default_names, read_task, settings_for
    wall, cpu = time.perf_counter(), time.process_time()
    opts = parse_options({"path": path, **options}, streaming=False)
    pushed = PushedFilters()
    settings = settings_for(default_names(opts), opts, pushed)
    tasks = plan_batch(opts, pushed)
    planned = time.process_time() - cpu
    rows = 0
    for task in tasks:
        for batch in read_task(task, settings):
            rows += batch.num_rows
    return rows, planned, time.process_time() - cpu, time.perf_counter() - wall


def report(label: str, runs: list) -> None:
    rows = runs[0][0]
    cpu = statistics.median(r[2] for r in runs)
    wall = statistics.median(r[3] for r in runs)
    plan = statistics.median(r[1] for r in runs)
    print(f"{label:>8}: {rows:,} rows, {cpu / rows * 1e6:.3f} us/row CPU, {rows / cpu:,.0f} rows "
          f"per CPU-second (plan {plan * 1e3:.1f} ms CPU), wall {wall:.2f} s   (median of {len(runs)})")


class _Requests(logging.Handler):
    """Counts the S3 requests moto's server logs, by kind."""

    def __init__(self):
        super().__init__()
        self.counts: Counter = Counter()

    def emit(self, record):
        m = re.search(r"(GET|HEAD|PUT|POST) (\S+)", record.getMessage())
        if m:
            listing = m.group(1) == "GET" and "list-type" in m.group(2)
            self.counts["LIST" if listing else m.group(1)] += 1


def s3_reads(partition: Path, runs: int) -> None:
    from moto.server import ThreadedMotoServer
    import pyarrow.fs as pafs
    counter = _Requests()
    log = logging.getLogger("werkzeug")
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(counter)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{server._server.server_port}"
        options = {"fs.s3a.endpoint": endpoint, "fs.s3a.access.key": "bench",
                   "fs.s3a.secret.key": "bench", "fs.s3a.endpoint.region": "us-east-1"}
        fs = pafs.S3FileSystem(access_key="bench", secret_key="bench", scheme="http",
                               endpoint_override=endpoint[7:], region="us-east-1",
                               allow_bucket_creation=True)
        fs.create_dir("bench")
        pafs.copy_files(str(partition), f"bench/logs/{partition.name}",
                        source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
        uri = f"s3a://bench/logs/{partition.name}"
        counter.counts.clear()
        from kafkawire.spark.filters import PushedFilters
        from kafkawire.spark.options import parse_options
        from kafkawire.spark.plan import plan_batch
        tasks = plan_batch(parse_options({"path": uri, **options}, streaming=False), PushedFilters())
        print(f"      s3 plan: {len(tasks)} tasks, requests {dict(counter.counts)}")
        counter.counts.clear()
        results = [read_all(uri, options) for _ in range(runs)]
        per_run = {k: v // runs for k, v in counter.counts.items()}
        report("s3", results)
        print(f"      s3 requests per run (plan and tasks): {per_run}")
    finally:
        server.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=256, help="record bytes in the partition")
    ap.add_argument("--segment-mb", type=int, default=64)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--s3", action="store_true", help="also read it from a local moto S3 server")
    ap.add_argument("--dir", default="/tmp/kafkawire-files-bench")
    args = ap.parse_args()
    partition = Path(args.dir) / "bench-0"
    rows = generate(partition, args.mb << 20, NONE, args.segment_mb << 20)
    size = sum(f.stat().st_size for f in partition.glob("*.log"))
    print(f"{rows:,} records, {size / 2**20:.0f} MiB of segments in {partition}; load {os.getloadavg()[0]:.2f}")
    read_all(str(partition), {})   # warm the page cache
    report("local", [read_all(str(partition), {}) for _ in range(args.runs)])
    if args.s3:
        s3_reads(partition, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
