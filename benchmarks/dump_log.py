"""``kafkawire dump-log`` against Kafka 4.3.1's own DumpLogSegments, on ~100 MB logs (issue 26).

Generates, with our writer:

* a ``__cluster_metadata`` segment (a controller's mix: topic creations with their partitions and
  configs, leader and ISR changes, broker registration changes, producer-id blocks and a
  NoOpRecord every so often, in batches of 1-20 records);
* a topic segment of text records (keys, JSON-ish values, headers on some batches, idempotent
  producers on some) in batches of 20-200, compressed in turn with none, gzip, snappy, lz4, zstd;

then times, in interleaved rounds, median of ``--runs``, each a whole process (the JVM's start
included, and Python's), its output written to a file:

* ``kafkawire dump-log --cluster-metadata-decoder`` and Kafka's
  ``org.apache.kafka.tools.DumpLogSegments --cluster-metadata-decoder`` on the metadata log;
* both with ``--deep-iteration`` on the topic log (batch and record lines), and with
  ``--deep-iteration --print-data-log`` (the keys, values and headers too).

Kafka runs from the Maven jars the interop tests use (tests/interop/kafka_dist.py, ``.kafka-dist``),
with the JVM options of Kafka's ``bin/kafka-run-class.sh`` (``-Xmx256M -server -XX:+UseG1GC ...``).
The first round's outputs are compared byte for byte; a difference fails the benchmark. It prints
the medians of wall time, the ratios (Kafka's time / ours: above 1 means ours is faster) and
``uptime``; and, for what the machine's other work did to the wall times, each side's median CPU
time (user + system of the process and its threads: the JVM's compiler and collector threads
count).
``--floors`` also times, in this process, reading the file, framing it and decoding its records.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/dump_log.py [--mb 100] [--runs 5] [--dir DIR] [--floors]
"""
from __future__ import annotations

import argparse
import filecmp
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

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


WORDS = ("order", "shipped", "customer", "amount", "EUR", "pending", "warehouse", "Zürich", "priority",
         "express", "item", "sku", "returned", "paid", "invoice", "København")
CODECS = (0, 1, 2, 3, 4)    # none, gzip, snappy, lz4, zstd


def _topic_value(rng) -> bytes:
    fields = ",".join(f'"{rng.choice(WORDS)}":"{rng.choice(WORDS)}-{rng.getrandbits(40):x}"'
                      for _ in range(rng.randint(2, 6)))
    return f'{{"id":{rng.getrandbits(48)},{fields}}}'.encode()


def generate_topic(path: str, target_bytes: int, seed: int = 2) -> tuple[int, int]:
    """Write a topic segment of about ``target_bytes``; returns (batches, records)."""
    rng = random.Random(seed)
    offset, ts, batches, records = 0, 1_700_000_000_000, 0, 0
    with open(path, "wb") as f:
        written = 0
        while written < target_bytes:
            n = rng.randint(20, 200)
            idempotent = rng.random() < 0.3
            builder = RecordBatchBuilder(base_offset=offset, partition_leader_epoch=3,
                                         compression_type=CODECS[batches % len(CODECS)],
                                         producer_id=1000 + batches % 7 if idempotent else -1,
                                         producer_epoch=0 if idempotent else -1,
                                         base_sequence=offset % 100_000 if idempotent else -1)
            headers = [("trace-id", rng.getrandbits(64).to_bytes(8, "big").hex().encode()),
                       ("source", b"bench")] if batches % 3 == 0 else ()
            for i in range(n):
                builder.append(f"user-{rng.randrange(100_000)}".encode(), _topic_value(rng), headers, ts + i)
            data = builder.build()
            f.write(data)
            written += len(data)
            offset += n
            ts += n + rng.randint(0, 100)
            batches += 1
            records += n
    return batches, records


def kafka_command(*args: str) -> list[str]:
    """Kafka's DumpLogSegments as bin/kafka-dump-log.sh runs it (kafka-run-class.sh's JVM options)."""
    from tests.interop import kafka_dist
    kafka_dist.ensure()
    return ["java", "-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={kafka_dist.LOG4J_TOOLS}",
            "-cp", kafka_dist.classpath(), "org.apache.kafka.tools.DumpLogSegments", *args]


def ours_command(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from kafkawire.tools.cli import main; sys.exit(main())",
            "dump-log", *args]


def installed_python_env(directory: str) -> dict:
    """The environment kafkawire runs in, with its bytecode compiled as ``pip install`` leaves
    it (a shell that sets PYTHONDONTWRITEBYTECODE would otherwise compile ~100 modules per run)."""
    import kafkawire
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYTHONPYCACHEPREFIX", os.path.join(directory, "pycache"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(kafkawire.__file__)], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    return env


def _timed(command: list[str], out: str, env: dict | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of the command's process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out, "wb") as sink:
        start = time.perf_counter()
        result = subprocess.run(command, stdout=sink, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
        seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):
        raise SystemExit(f"{command[:3]}... exited {result.returncode}: {result.stderr[-2000:]!r}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare_tools(workloads: dict, runs: int, directory: str) -> dict:
    """Interleaved rounds: each workload's kafkawire run then Kafka's; outputs compared in round 1."""
    times: dict = {(name, tool): [] for name in workloads for tool in ("kafkawire", "kafka")}
    env = installed_python_env(directory)
    for round_number in range(runs):
        for name, args in workloads.items():
            outs = {tool: os.path.join(directory, f"{name}.{tool}.txt") for tool in ("kafkawire", "kafka")}
            times[(name, "kafkawire")].append(_timed(ours_command(*args), outs["kafkawire"], env))
            times[(name, "kafka")].append(_timed(kafka_command(*args), outs["kafka"]))
            if round_number == 0 and not filecmp.cmp(outs["kafkawire"], outs["kafka"], shallow=False):
                raise SystemExit(f"{name}: kafkawire's output differs from Kafka's: diff {outs['kafkawire']} "
                                 f"{outs['kafka']}")
            if round_number == 0:
                print(f"  {name}: outputs identical ({os.path.getsize(outs['kafka']) / 1e6:.0f} MB of text)",
                      flush=True)
            for out in outs.values():
                os.remove(out)
    return {key: (statistics.median(v[0] for v in values), statistics.median(v[1] for v in values))
            for key, values in times.items()}


def _median(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def floors(path: str, runs: int) -> None:
    """In this process: reading the file, framing it, and decoding its records too."""
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

    size = os.path.getsize(path)
    for name, fn in (("read", read), ("iter_batches", frame), ("iter_batches + records", frame_and_records)):
        seconds = _median(fn, runs)
        print(f"  {name:25s} {seconds:8.3f} s  {size / 1e6 / seconds:9.1f} MB/s")


def _generated(path: str, what: str, make, target: int) -> None:
    if os.path.exists(path) and os.path.getsize(path) >= target * 0.95:
        print(f"{what}: reusing {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
        return
    start = time.perf_counter()
    batches, records = make(path, target)
    print(f"{what}: generated {os.path.getsize(path) / 1e6:.1f} MB, {batches} batches, {records} records "
          f"in {time.perf_counter() - start:.1f} s: {path}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", help="keep the generated logs here (and reuse them when they are there)")
    parser.add_argument("--floors", action="store_true", help="also time reading, framing and decoding in-process")
    args = parser.parse_args()

    directory = args.dir or tempfile.mkdtemp()
    meta_dir, topic_dir = Path(directory, "__cluster_metadata-0"), Path(directory, "orders-0")
    meta_dir.mkdir(parents=True, exist_ok=True)
    topic_dir.mkdir(parents=True, exist_ok=True)
    meta, topic = str(meta_dir / "00000000000000000000.log"), str(topic_dir / "00000000000000000000.log")
    target = int(args.mb * 1024 * 1024)
    _generated(meta, "metadata log", generate, target)
    _generated(topic, "topic log", generate_topic, target)
    if args.floors:
        for path in (meta, topic):
            print(f"floors, median of {args.runs}, {path}:")
            floors(path, args.runs)

    from kafkawire import _native
    print(f"kafkawire's path: {_native.status()}; CPython {sys.version.split()[0]}; "
          f"uptime: {os.popen('uptime').read().strip()}", flush=True)
    workloads = {"--cluster-metadata-decoder": ("--cluster-metadata-decoder", "--files", meta),
                 "--deep-iteration": ("--deep-iteration", "--files", topic),
                 "--deep-iteration --print-data-log": ("--deep-iteration", "--print-data-log", "--files", topic)}
    medians = compare_tools(workloads, args.runs, directory)
    print(f"\nmedian of {args.runs} interleaved runs, whole processes (JVM start included):")
    for name, dump_args in workloads.items():
        size = os.path.getsize(dump_args[-1]) / 1e6
        (ours, ours_cpu), (kafka, kafka_cpu) = medians[(name, "kafkawire")], medians[(name, "kafka")]
        print(f"  {name:36s} kafkawire {ours:7.2f} s ({size / ours:6.1f} MB/s)   Kafka {kafka:7.2f} s "
              f"({size / kafka:6.1f} MB/s)   ratio {kafka / ours:5.2f}x   CPU: kafkawire {ours_cpu:6.2f} s, "
              f"Kafka {kafka_cpu:6.2f} s")
    print(f"uptime: {os.popen('uptime').read().strip()}")
    if not args.dir:
        for path in (meta, topic):
            os.remove(path)


if __name__ == "__main__":
    main()
