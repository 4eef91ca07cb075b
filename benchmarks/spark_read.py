"""Spark reading Kafka segments through kafkawire.spark, against Spark reading the same
records from Parquet, in one run; and where kafkawire's time goes.

Run by hand (not part of the tests; needs Java 17 and the dev extra):

    PYTHONPATH=. .venv/bin/python benchmarks/spark_read.py [--gb 1.0] [--runs 3] [--cores 2]

Workload: ``--gb`` of v2 segments written by our Log writer into one partition each,
uncompressed and lz4 (the same records): batches of 100 records, 16-byte keys, 100-byte
values (half random hex, half repeated text, so lz4 has something to do), no headers, one
segment of up to 1 GiB with Kafka's default 4 KiB index interval. The Parquet copy holds
exactly the rows (all columns) kafkawire produces for the uncompressed log, written by
Spark with its default snappy codec.

Each read materialises every column of every row (``df.write.format("noop")``), in a
local[--cores] session, ``--runs`` times after a warm-up run; printed are the medians of
the wall time (rows/s) and of the CPU time the JVM and its Python workers used (rows per
CPU-second: the per-core rate, which other load on a shared machine does not distort),
each with its ratio to Parquet read with the same columns, and to Parquet read with all of
them. The pruned case reads two columns: kafkawire with a schema naming them
(``.schema("value binary, timestamp timestamp")``: Spark hands a Python data source the
schema it was given and has no other column pruning for it), Parquet with ``.select``.
The record path the Spark workers run is printed (the C extension's, or pure Python when
it is not built or KAFKAWIRE_PURE=1 is set). Then, in this process on one core (CPU time,
so other load on the machine counts less), the read path is taken apart on the first
64 MiB of each log: the pure path's stages (framing and CRC, lz4, record decoding, Arrow
columns), and the whole of ``read_task`` native and pure, all columns and two. What Spark
itself costs to take Arrow batches from a Python data source is measured by a probe
source that yields one prebuilt batch of the same columns over and over (the same row
count and task count, no reading at all). Last, the share of the log's bytes the planner
gives tasks for an hour of a day (1/24 of the records) by offset filters, by timestamp
filters and by startingTimestamp/endingTimestamp.
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkawire.records import LZ4, NONE, RecordBatchBuilder  # noqa: E402
from kafkawire.storage.log import DEFAULT_SEGMENT_BYTES, Log  # noqa: E402

RECORDS_PER_BATCH = 100
T0 = 1_700_000_000_000
SAMPLE_BYTES = 64 * 1024 * 1024
# The pruned read: a schema naming two columns (Spark hands a Python source the schema it was
# given, and asks for no other column pruning).
PRUNED_NAMES = ("value", "timestamp")
PRUNED_DDL = "value binary, timestamp timestamp"


def _values(n: int) -> list[bytes]:
    filler = b"order-status=SHIPPED;warehouse=EU-WEST;" * 2
    return [os.urandom(25).hex().encode() + filler[:50] for _ in range(n)]


def generate(path: Path, target_bytes: int, compression: int, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> int:
    """Write about target_bytes of uncompressed records into partition dir ``path``;
    returns the record count."""
    if path.exists():
        shutil.rmtree(path)
    values = _values(1024)
    log = Log(path, segment_bytes=segment_bytes)
    n = 0
    written = 0
    try:
        while written < target_bytes:
            b = RecordBatchBuilder(compression_type=compression, partition_leader_epoch=1)
            for _ in range(RECORDS_PER_BATCH):
                b.append(b"key-%012d" % n, values[n & 1023], (), T0 + n)
                n += 1
            data = b.build()
            log.append(data, assign_offsets=True)
            written += 16 * RECORDS_PER_BATCH + 100 * RECORDS_PER_BATCH + 61
        log.flush()
    finally:
        log.close()
    return n


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def spark_session(cores: int):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(f"local[{cores}]").appName("kafkawire-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "2g").config("spark.sql.shuffle.partitions", str(cores))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    from kafkawire.spark import register
    register(spark)
    return spark


def register_handover_probe(spark, sample_log: Path, arrow_file: Path):
    """A data source that yields one prebuilt Arrow batch of kafkawire's columns (32768 rows
    of the log, read once here and saved as an Arrow IPC file) over and over: what Spark
    costs to take Arrow batches from a Python data source, with no reading at all."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from kafkawire.spark.columns import column_names
    from kafkawire.spark.rows import RowsBuilder
    from kafkawire.spark.scan import scan_batches

    builder = RowsBuilder(column_names(), "bench", 0)
    for _, batch in scan_batches(str(sorted(sample_log.glob("*.log"))[0])):
        builder.add(batch, list(batch))
        if builder.rows >= 32768:
            break
    sample = builder.take()
    with pa.OSFile(str(arrow_file), "wb") as sink, pa.ipc.new_file(sink, sample.schema) as writer:
        writer.write_batch(sample)

    class HandoverReader(DataSourceReader):
        def __init__(self, options, names):
            self.rows, self.parts = int(options["rows"]), int(options["partitions"])
            self.names = names

        def partitions(self):
            return [InputPartition(i) for i in range(self.parts)]

        def read(self, partition):
            import pyarrow as pa
            arrow = pa.ipc.open_file(pa.memory_map(str(arrow_file))).get_batch(0).select(self.names)
            left = self.rows // self.parts
            while left > 0:
                yield arrow.slice(0, min(left, arrow.num_rows))
                left -= arrow.num_rows

    class HandoverProbe(DataSource):
        @classmethod
        def name(cls):
            return "handover_probe"

        def schema(self):
            from kafkawire.spark.columns import ddl
            return ddl(column_names())

        def reader(self, schema):
            return HandoverReader(self.options, [f.name for f in schema.fields])

    spark.dataSource.register(HandoverProbe)


_TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by ``root`` and every process below it (the JVM and Spark's
    Python workers, which Spark reuses across tasks, so none of their time is lost)."""
    parents, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / _TICK
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += [child for child, parent in parents.items() if parent == pid]
    return total


def timed_rounds(makers: dict, runs: int) -> tuple[dict, dict]:
    """(wall seconds, CPU seconds of the whole Spark process tree) of each reader's runs.

    Every reader is read once to warm up (Python workers, page cache), then the readers take
    turns, one read each per round. Timed one after another, any warm-up cost still being
    paid (the JVM's JIT compiles Spark's code paths for a while after the first reads, on
    threads whose CPU the tree's total counts) fell on whichever came first: on a quiet
    machine the uncompressed log, first in this script's order, came out at 1.31 us of CPU
    per row against the lz4 log's 1.13; taking turns, the two came within 3% of each other."""
    walls = {name: [] for name in makers}
    cpus = {name: [] for name in makers}
    for make in makers.values():
        make().write.format("noop").mode("overwrite").save()
    for _ in range(runs):
        for name, make in makers.items():
            c, t = tree_cpu_seconds(os.getpid()), time.perf_counter()
            make().write.format("noop").mode("overwrite").save()
            walls[name].append(time.perf_counter() - t)
            cpus[name].append(tree_cpu_seconds(os.getpid()) - c)
    return walls, cpus


def stages(path: Path) -> dict:
    """CPU seconds per row of each stage of the Python read path, on one core."""
    from kafkawire.spark.columns import column_names
    from kafkawire.spark.rows import RowsBuilder
    from kafkawire.spark.scan import scan_batches
    segment = sorted(path.glob("*.log"))[0]
    limit = min(os.path.getsize(segment), SAMPLE_BYTES)

    def run(decompress, decode, arrow):
        rows = 0
        builder = RowsBuilder(column_names(), "bench", 0)
        t = time.process_time()
        for _, batch in scan_batches(str(segment), 0, limit, limit):
            rows += batch.records_count
            if decompress:
                batch.decompressed_records()
            if decode:
                records = list(batch)
                if arrow:
                    builder.add(batch, records)
                    if builder.rows >= 32768:
                        builder.take()
        if arrow:
            builder.take()
        return (time.process_time() - t) / rows

    gc.disable()   # as read_task does while it reads
    best = {}
    for name, args in (("read, frame, CRC", (False, False, False)), ("+ decompress", (True, False, False)),
                       ("+ decode records", (True, True, False)), ("+ Arrow columns", (True, True, True))):
        best[name] = min(run(*args) for _ in range(3))
    gc.enable()
    return best


def read_paths(path: Path) -> dict:
    """CPU seconds per row of the whole read path Spark's tasks run (read_task), native
    and pure, all columns and value+timestamp, on the same sample, on one core."""
    from kafkawire.spark.columns import column_names
    from kafkawire.spark.plan import ReadTask
    from kafkawire.spark.reader import ReadSettings, read_task
    segment = sorted(path.glob("*.log"))[0]
    limit = min(os.path.getsize(segment), SAMPLE_BYTES)
    task = ReadTask(str(segment), "bench", 0, 0, limit, limit, None, None, False, None)

    def run(native, names):
        rows, t = 0, time.process_time()
        for batch in read_task(task, ReadSettings(names=tuple(names), native=native)):
            rows += batch.num_rows
        return (time.process_time() - t) / rows

    from kafkawire import _native
    best = {}
    for native in (True, False) if _native.records is not None else (False,):
        for label, names in (("all columns", column_names()), ("value+timestamp", PRUNED_NAMES)):
            best[f"{'native' if native else 'pure'}, {label}"] = min(run(native, names) for _ in range(3))
    return best


def planned_share(path: Path, rows: int) -> None:
    """The share of the log's bytes the planner gives tasks for a 1/24 slice (an hour of a
    day) at its start, middle and end: by pushed offset filters, by pushed timestamp filters
    (exact, so only the lower bound can move the start: Kafka timestamps are not ordered),
    and by startingTimestamp/endingTimestamp (Kafka's offsets-for-times on both ends)."""
    from kafkawire.spark.filters import PushedFilters
    from kafkawire.spark.options import parse_options
    from kafkawire.spark.plan import plan_batch
    total = sum(f.stat().st_size for f in path.glob("*.log"))

    def share(pushed=None, **options):
        opts = parse_options({"path": str(path), **options}, streaming=False)
        tasks = plan_batch(opts, pushed or PushedFilters())
        return sum((t.stop if t.stop is not None else os.path.getsize(t.path)) - t.start for t in tasks) / total

    print(f"\nbytes planned for 1/24 of {path.name} ({total / 1e6:,.0f} MB), at its start, middle and end:")
    for label, fraction in (("start", 0.0), ("middle", 11 / 24), ("end", 23 / 24)):
        first, end = int(rows * fraction), int(rows * (fraction + 1 / 24))
        by_offset = share(PushedFilters(offset_min=first, offset_end=end))
        by_filter = share(PushedFilters(timestamp_bounds=[("greater_equal", (T0 + first) * 1000),
                                                          ("less", (T0 + end) * 1000)]))
        by_option = share(startingTimestamp=str(T0 + first), endingTimestamp=str(T0 + end))
        print(f"  {label:6} offset filter {by_offset:6.1%}   timestamp filter {by_filter:6.1%}   "
              f"starting/endingTimestamp {by_option:6.1%}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=1.0, help="uncompressed record bytes per log")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--dir", default="/tmp/kafkawire-spark-bench")
    args = ap.parse_args()
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    target = int(args.gb * (1 << 30))

    print(f"generating {args.gb} GB of records per log in {root} ...", flush=True)
    logs = {}
    for name, codec in (("uncompressed", NONE), ("lz4", LZ4)):
        path = root / f"bench-{name}-0"
        t = time.perf_counter()
        n = generate(path, target, codec)
        logs[name] = path
        print(f"  {name:12} {n:,} records, {_dir_bytes(path) / 1e6:,.0f} MB on disk "
              f"({time.perf_counter() - t:.0f} s to write)", flush=True)

    spark = spark_session(args.cores)
    parquet = root / "parquet"
    spark.read.format("kafkawire").load(str(logs["uncompressed"])).write.mode("overwrite").parquet(str(parquet))
    print(f"  parquet      {_dir_bytes(parquet) / 1e6:,.0f} MB on disk (snappy)", flush=True)
    rows = spark.read.parquet(str(parquet)).count()

    tasks = spark.read.format("kafkawire").load(str(logs["uncompressed"])).rdd.getNumPartitions()
    register_handover_probe(spark, logs["uncompressed"], root / "sample.arrow")
    kw = lambda name: spark.read.format("kafkawire").load(str(logs[name]))          # noqa: E731
    kw2 = lambda name: spark.read.format("kafkawire").schema(PRUNED_DDL).load(str(logs[name]))  # noqa: E731
    probe = lambda: spark.read.format("handover_probe").option("rows", rows).option("partitions", tasks)  # noqa: E731
    # name -> (DataFrame maker, the Parquet read it is compared with)
    all_cols, two_cols = "Spark Parquet (same rows)", "Parquet value+timestamp"
    readers = {
        "kafkawire uncompressed": (lambda: kw("uncompressed"), all_cols),
        "kafkawire lz4": (lambda: kw("lz4"), all_cols),
        all_cols: (lambda: spark.read.parquet(str(parquet)), all_cols),
        "hand-over only (no reading)": (lambda: probe().load(), all_cols),
        "kafkawire uncomp. 2 columns": (lambda: kw2("uncompressed"), two_cols),
        "kafkawire lz4 2 columns": (lambda: kw2("lz4"), two_cols),
        two_cols: (lambda: spark.read.parquet(str(parquet)).select(*PRUNED_NAMES), two_cols),
        "hand-over only, 2 columns": (lambda: probe().schema(PRUNED_DDL).load(), two_cols),
    }
    from kafkawire import _native
    print(f"\nSpark local[{args.cores}], {rows:,} rows, all {len(spark.read.parquet(str(parquet)).columns)} "
          f"columns materialised (noop sink), or the two of a schema '{PRUNED_DDL}' (Parquet: "
          f".select); kafkawire plans {tasks} input partitions per log, record path "
          f"{_native.status()}; median of {args.runs} runs\n")
    walls, cpus = timed_rounds({name: make for name, (make, _) in readers.items()}, args.runs)
    results = {name: statistics.median(w) for name, w in walls.items()}
    cpu = {name: statistics.median(c) for name, c in cpus.items()}
    print(f"{'reader':28} {'wall s':>7} {'rows/s':>11} {'CPU s':>7} {'rows/CPU-s':>11} "
          f"{'vs Parquet, same columns (wall, CPU)':>37} {'CPU vs all-column Parquet':>26}")
    for name, (_, base) in readers.items():
        wall_rate, cpu_rate = rows / results[name], rows / cpu[name]
        print(f"{name:28} {results[name]:7.2f} {wall_rate:11,.0f} {cpu[name]:7.2f} {cpu_rate:11,.0f} "
              f"{wall_rate * results[base] / rows:18.3f} {cpu_rate * cpu[base] / rows:18.3f} "
              f"{cpu_rate * cpu[all_cols] / rows:26.3f}")
    print("rows/CPU-s is the per-core rate: rows per second of CPU used by the JVM and its Python "
          "workers together (robust to other load on the machine, which the wall times are not)")
    spark.stop()
    breakdown(logs, cpu, rows)
    planned_share(logs["uncompressed"], rows)
    return 0


def breakdown(logs: dict, cpu: dict, rows: int) -> None:
    handover = cpu["hand-over only (no reading)"] / rows
    print(f"\nwhere kafkawire's CPU time goes, per row: the read path taken apart in this process "
          f"(first {SAMPLE_BYTES >> 20} MiB of each log, one core), Spark's own cost from the hand-over "
          f"probe, against the CPU the Spark read used per row")
    for name, path in logs.items():
        parts = stages(path)
        spark_per_row = cpu[f"kafkawire {name}"] / rows
        print(f"  {name}: the pure path's stages")
        previous = 0.0
        for stage, cumulative in parts.items():
            step = cumulative - previous
            previous = cumulative
            print(f"    {stage:22} {step * 1e6:6.2f} us/row")
        paths = read_paths(path)
        print(f"  {name}: the whole read path (read_task), as Spark's tasks run it")
        for label, per_row in paths.items():
            print(f"    {label:28} {per_row * 1e6:6.2f} us/row  = {1 / per_row:,.0f} rows/s on one core")
        used = paths.get("native, all columns", paths["pure, all columns"])   # what the workers ran
        print(f"    {'Spark hand-over':28} {handover * 1e6:6.2f} us/row  {handover / spark_per_row:6.1%} "
              f"of the Spark read's CPU (the no-reading probe: Arrow to the JVM, rows, tasks, noop sink)")
        rest = spark_per_row - used - handover
        print(f"    {'residual':28} {rest * 1e6:6.2f} us/row  {rest / spark_per_row:6.1%} "
              f"(planning, index lookups, the worker's own GC and caches; +/- measurement)")


if __name__ == "__main__":
    sys.exit(main())
