"""Produce and consume throughput of a one-node combined kafkawire (`kafkawire server-start`, its
own process) against Apache Kafka 4.3.1's broker in combined mode (one JVM, -Xmx512m, the jars
of .kafka-dist), with the same client (confluent-kafka / librdkafka) and the same workload.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/broker_throughput.py [--records 200000] [--rounds 3]
        [--codecs none,lz4] [--acks 1,all] [--only kafkawire]
    PYTHONPATH=$PWD .venv/bin/python benchmarks/broker_throughput.py --client java [--records 500000]
    PYTHONPATH=$PWD .venv/bin/python benchmarks/broker_throughput.py --profile /tmp/node.prof

Each case (codec x acks) produces N records of 100-byte values (hex text drawn from a pool of
1,024, so lz4 finds repeats in a batch) to a new one-partition topic, waits for every delivery
report, then consumes the topic back from the earliest offset (assign, no group). Rounds are
interleaved (kafkawire, Kafka, kafkawire, ...); the medians over the rounds are printed with the
ratios kafkawire/Kafka, and each broker process's CPU seconds (utime + stime from
/proc/<pid>/stat) and the client's (this process, librdkafka's threads included) per million
records. The client runs in this process, so it competes with the brokers for the CPUs: when
both peers come out alike and the client's CPU is the larger, the client is the bottleneck and
the brokers' CPU per record is the figure to compare. Say the load average with the numbers.

``--client java`` drives both brokers with Kafka 4.3.1's own load tools instead (issue 29's
judges): ProducerPerformance (N records of 100 bytes, the same linger.ms, batch.size, acks and
codec; its own records/s, from its first send to its last acknowledgement) and ConsumerPerformance
(a group of its own from the earliest offset; its fetch records/s, the group's join left out),
each in a JVM of its own, whose CPU is the client's (RUSAGE_CHILDREN). Their payloads are
ProducerPerformance's random letters, not the pool of hex values.

``--profile FILE`` runs only kafkawire's node, its main thread (the event loop) under cProfile
during one produce case (none, acks=1; after a warm-up, so start-up is left out), and prints the
top costs in microseconds per produced record. With ``--profile-phase consume`` the records are
produced unprofiled and the profile covers their consumption instead (by ``--client``'s consumer:
confluent-kafka here, or ConsumerPerformance), in microseconds per consumed record.
"""
from __future__ import annotations

import argparse
import os
import pstats
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kafkawire.storage.state_files import random_uuid, uuid_to_kafka  # noqa: E402
from kafkawire.testing import EmbeddedBroker  # noqa: E402
from tests.interop.kafka_procs import KafkaNode, run_in_own_jvm  # noqa: E402

VALUE_BYTES = 100
CLK_TCK = os.sysconf("SC_CLK_TCK")
PRODUCER_SETTINGS = {"linger.ms": 10, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                     "queue.buffering.max.kbytes": 1_048_576, "enable.idempotence": False}


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (fields 14 and 15 of /proc/<pid>/stat), all its threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


class KafkawirePeer:
    name = "kafkawire"

    def __init__(self, profile_to: str | None = None):
        self.node = _ProfiledBroker(profile_to) if profile_to else EmbeddedBroker()

    def start(self) -> None:
        self.node.start()
        self.bootstrap, self.pid = self.node.bootstrap_servers, self.node.pid

    def stop(self) -> None:
        self.node.stop()


# The node's main thread (its event loop: the network, the handlers, the log appends) profiled
# only between SIGUSR1 and SIGUSR2, so start-up (imports, codec generation) is left out; the
# signal handlers run in the main thread, which is the one cProfile.enable() then follows. The
# timer is the thread's CPU time, not the wall clock: on a shared machine the wall clock would
# charge the moments the node is descheduled (or waits for the GIL) to whatever runs then.
PROFILED_NODE = """
import cProfile, runpy, signal, sys, time
profiler, profile_to = cProfile.Profile(time.thread_time), sys.argv[1]
signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
signal.signal(signal.SIGUSR2, lambda *_: (profiler.disable(), profiler.dump_stats(profile_to)))
sys.argv = ["kafkawire", "server-start", sys.argv[2]]
runpy.run_module("kafkawire.tools.cli", run_name="__main__")
"""


class _ProfiledBroker(EmbeddedBroker):
    """The same node, its main thread under cProfile between ``enable()`` and ``dump()``."""

    def __init__(self, profile_to: str):
        super().__init__()
        self.profile_to = profile_to

    def launch(self) -> None:
        with open(self.node_log, "ab") as log:
            self.process = subprocess.Popen([self.python, "-c", PROFILED_NODE, self.profile_to, self.config_path],
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def enable(self) -> None:
        self.process.send_signal(signal.SIGUSR1)

    def dump(self, timeout_s: float = 30) -> None:
        if os.path.exists(self.profile_to):
            os.remove(self.profile_to)
        self.process.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(self.profile_to):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the node wrote no profile to {self.profile_to} in {timeout_s} s")
            time.sleep(0.05)
        time.sleep(0.5)                         # dump_stats writes the file in one go; let it finish


class KafkaPeer:
    name = "Kafka"

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="kafka-tput-")
        self.node = KafkaNode(Path(self.directory), node_id=1, roles="broker,controller", heap="512m",
                              properties={"offsets.topic.num.partitions": "1"})

    def start(self) -> None:
        self.node.format(uuid_to_kafka(random_uuid()), "--standalone")
        self.node.start()
        self.node.wait_ready()
        self.bootstrap, self.pid = self.node.broker_address, self.node.process.pid

    def stop(self) -> None:
        self.node.kill()
        shutil.rmtree(self.directory, ignore_errors=True)


def values(count: int) -> list[bytes]:
    rng = random.Random(29)
    pool = [rng.randbytes(VALUE_BYTES // 2).hex().encode() for _ in range(1024)]
    return [pool[rng.randrange(len(pool))] for _ in range(count)]


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30).values():
        future.result(timeout=60)


def produce(bootstrap: str, topic: str, payloads: list[bytes], codec: str, acks: str) -> float:
    """Seconds from the first produce() to the last delivery report."""
    failures = []

    def on_delivery(err, _msg):
        if err is not None:
            failures.append(err)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "compression.type": codec,
                         **PRODUCER_SETTINGS})
    producer.list_topics(topic, timeout=30)              # connected and the leader known before the clock
    start = time.perf_counter()
    for value in payloads:
        while True:
            try:
                producer.produce(topic, value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
    if producer.flush(120) != 0 or failures:
        raise RuntimeError(f"produce to {topic}: {producer.flush(0)} undelivered, errors {failures[:3]}")
    return time.perf_counter() - start


def consume(bootstrap: str, topic: str, count: int) -> float:
    """Seconds from assign (earliest) until ``count`` records are read."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tput", "enable.auto.commit": False,
                         "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760})
    consumer.list_topics(topic, timeout=30)              # connected before the clock, as the producer
    start = time.perf_counter()
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    read, deadline = 0, time.monotonic() + 300
    while read < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"consume {topic}: {read} of {count} records in 300 s")
        for message in consumer.consume(num_messages=10_000, timeout=1):
            if message.error() is not None:
                raise RuntimeError(f"consume {topic}: {message.error()}")
            read += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def _java_tool(main_class: str, *args) -> str:
    result = run_in_own_jvm(main_class, tuple(map(str, args)), 600, None)
    if result.returncode != 0:
        raise RuntimeError(f"{main_class} exited {result.returncode}: {result.stderr[-2000:]}")
    return result.stdout


def produce_java(bootstrap: str, topic: str, count: int, codec: str, acks: str) -> float:
    """ProducerPerformance's own measure, as seconds for ``count`` records."""
    out = _java_tool("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", count,
                     "--record-size", VALUE_BYTES, "--throughput", -1, "--producer-props",
                     f"bootstrap.servers={bootstrap}", f"acks={acks}", f"compression.type={codec}", "linger.ms=10",
                     "batch.size=1000000", "enable.idempotence=false")
    final = [line for line in out.splitlines() if f"{count} records sent" in line]
    if not final:
        raise RuntimeError(f"ProducerPerformance: no summary in {out[-2000:]}")
    return count / float(final[-1].split(",")[1].split()[0])


def consume_java(bootstrap: str, topic: str, count: int) -> float:
    """ConsumerPerformance's fetch rate (its group's join left out), as seconds for ``count`` records."""
    out = _java_tool("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                     "--messages", count, "--timeout", 120_000, "--group", f"tput-{topic}")
    header, row = [line.split(", ") for line in out.strip().splitlines()[-2:]]
    stats = dict(zip((c.strip() for c in header), (v.strip() for v in row)))
    if int(stats["data.consumed.in.nMsg"]) < count:
        raise RuntimeError(f"ConsumerPerformance read {stats['data.consumed.in.nMsg']} of {count}")
    return count / float(stats["fetch.nMsg.sec"])


def client_cpu(client: str) -> float:
    """This process's CPU (the Python client), or its waited-for children's (the Java tools)."""
    if client == "java":
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    return time.process_time()


def run_case(peer, case: tuple[str, str], round_no: int, payloads: list[bytes],
             client: str = "python") -> dict[str, float]:
    codec, acks = case
    topic = f"tput-{codec}-{acks}-{round_no}"
    create_topic(peer.bootstrap, topic)
    cpu0, client0 = cpu_seconds(peer.pid), client_cpu(client)
    if client == "java":
        produce_s = produce_java(peer.bootstrap, topic, len(payloads), codec, acks)
    else:
        produce_s = produce(peer.bootstrap, topic, payloads, codec, acks)
    cpu1, client1 = cpu_seconds(peer.pid), client_cpu(client)
    if client == "java":
        consume_s = consume_java(peer.bootstrap, topic, len(payloads))
    else:
        consume_s = consume(peer.bootstrap, topic, len(payloads))
    cpu2, client2 = cpu_seconds(peer.pid), client_cpu(client)
    millions = len(payloads) / 1e6
    return {"produce rec/s": len(payloads) / produce_s, "produce MB/s": len(payloads) * VALUE_BYTES / produce_s / 1e6,
            "consume rec/s": len(payloads) / consume_s, "consume MB/s": len(payloads) * VALUE_BYTES / consume_s / 1e6,
            "broker CPU s/M produced": (cpu1 - cpu0) / millions, "broker CPU s/M consumed": (cpu2 - cpu1) / millions,
            "client CPU s/M produced": (client1 - client0) / millions,
            "client CPU s/M consumed": (client2 - client1) / millions}


def report(results: dict, cases: list, peers: list) -> None:
    print(f"\nmedians over the rounds; load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for case in cases:
        print(f"\ncompression {case[0]}, acks={case[1]}:")
        print(f"  {'':26}" + "".join(f"{p.name:>12}" for p in peers) + ("  kw/Kafka" if len(peers) == 2 else ""))
        for metric in results[(peers[0].name, case)][0]:
            medians = [statistics.median(r[metric] for r in results[(p.name, case)]) for p in peers]
            digits = 2 if "CPU" in metric else 1        # CPU per million records: a few hundredths count
            line = f"  {metric:26}" + "".join(f"{m:12,.{digits}f}" for m in medians)
            if len(peers) == 2:
                line += f"  {medians[0] / medians[1]:8.2f}"
            print(line)


def measure(args) -> None:
    cases = [(codec, acks) for codec in args.codecs.split(",") for acks in args.acks.split(",")]
    peers = [KafkawirePeer()] + ([] if args.only == "kafkawire" else [KafkaPeer()])
    payloads = values(args.records)
    results: dict = {}
    try:
        for peer in peers:
            peer.start()
        print(f"{args.records:,} records of {VALUE_BYTES} B; client {args.client}; peers {[p.name for p in peers]}; "
              f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        for round_no in range(args.rounds):
            for case in cases:
                for peer in peers:
                    result = run_case(peer, case, round_no, payloads, args.client)
                    results.setdefault((peer.name, case), []).append(result)
                    print(f"  round {round_no} {peer.name:9} {case[0]:4} acks={case[1]:3} "
                          f"produce {result['produce rec/s']:10,.0f} rec/s  consume {result['consume rec/s']:10,.0f} "
                          f"rec/s  load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        for peer in peers:
            peer.stop()
    report(results, cases, peers)


def profile(args) -> None:
    peer = KafkawirePeer(profile_to=args.profile)
    payloads = values(args.records)
    peer.start()
    try:
        create_topic(peer.bootstrap, "tput-profile")
        produce(peer.bootstrap, "tput-warm-up", payloads[:10_000], "none", "1")
        if args.profile_phase == "consume":
            produce(peer.bootstrap, "tput-profile", payloads, "none", "1")
            (consume_java if args.client == "java" else consume)(peer.bootstrap, "tput-warm-up", 10_000)
            peer.node.enable()
            seconds = (consume_java if args.client == "java" else consume)(peer.bootstrap, "tput-profile",
                                                                           len(payloads))
        else:
            peer.node.enable()
            seconds = produce(peer.bootstrap, "tput-profile", payloads, "none", "1")
        peer.node.dump()
        print(f"under cProfile: {len(payloads) / seconds:,.0f} records/s {args.profile_phase}d; "
              f"load {os.getloadavg()[0]:.1f}")
    finally:
        peer.stop()
    print_top(pstats.Stats(args.profile), len(payloads), args.top, args.profile_phase)


def print_top(stats: pstats.Stats, records: int, top: int, phase: str = "produce") -> None:
    rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:top]
    print(f"\nthe main thread's CPU under the profiler: {stats.total_tt / records * 1e6:.2f} us a record; "
          f"top {top} by own CPU time, microseconds per {phase}d record (cProfile inflates small calls):")
    for (filename, line, function), (_cc, calls, own, cumulative, _callers) in rows:
        where = f"{Path(filename).name}:{line}({function})"
        print(f"  {own / records * 1e6:7.2f} own {cumulative / records * 1e6:8.2f} cum "
              f"{calls:>10,} calls  {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--codecs", default="none,lz4")
    parser.add_argument("--acks", default="1,all")
    parser.add_argument("--only", choices=["kafkawire"], help="skip the Kafka peer")
    parser.add_argument("--client", choices=["python", "java"], default="python",
                        help="confluent-kafka in this process, or Kafka's ProducerPerformance/ConsumerPerformance")
    parser.add_argument("--profile", metavar="FILE", help="profile kafkawire's node under produce load instead")
    parser.add_argument("--profile-phase", choices=["produce", "consume"], default="produce",
                        help="what --profile covers: the produce case, or the consumption of its records")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    profile(args) if args.profile else measure(args)


if __name__ == "__main__":
    main()
