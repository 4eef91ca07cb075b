"""Message encode / decode throughput: kafkawire.messages against kafka-python and kio.

Run by hand (not part of the tests):

    .venv/bin/python benchmarks/codec.py [--partitions 10] [--runs 7] [--seconds 0.3]
    .venv/bin/python benchmarks/codec.py --profile [--partitions 10]  # cProfile kafkawire, top 15

Workloads (the same logical message is built with each library, and the script first checks
that all three encode it to identical bytes, so every decoder parses the same input):

* MetadataResponse v12: 20 brokers, 100 topics x 1 partition (6.4 KB), exactly the instance
  of kio's own benchmarks/roundtrip-serialization.py (uuid4 topic ids replaced by fixed ones).
  With ``--partitions N`` a second shape is added: 100 topics x N partitions, replication
  factor 3 (replicas == isr), leaders spread over the 20 brokers (N=10: 46 KB).
* FetchResponse v12: 10 topics x 10 partitions, each partition's ``records`` holding the same
  uncompressed v2 record batch (100 records, 10 B keys, 110 B values, one header: 14,633 B;
  1.46 MB in all). The batch is opaque bytes to all three codecs. kafka-python and kio copy
  each batch out as ``bytes``; kafkawire hands back a memoryview slice of the input, as Kafka's
  Java reader wraps a slice of its buffer. kafka-python's encode returns a bytearray, the
  others bytes.

"encode" turns the already-built message object into bytes; "decode" turns bytes into the
message object (kafka-python and kafkawire in pure Python, kio's reader is its Rust
extension, its writer pure Python). Each figure is ops/s: the median of ``--runs`` rounds,
each round a loop sized to take about ``--seconds``; rounds are interleaved across libraries
and the garbage collector is disabled while timing; min-max of the rounds is shown next to
it. Ratios are kafkawire / other, from the medians. ``--repeat K`` measures everything K times
and ends with the median and range of each ratio over the K measurements.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import gc
import importlib.metadata
import io
import os
import platform
import pstats
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VERSION_METADATA = 12
VERSION_FETCH = 12
N_BROKERS = 20
N_TOPICS = 100
FETCH_TOPICS = 10
FETCH_PARTITIONS = 10


# --- the logical messages, as plain data -------------------------------------------------
#
# Each library's builder below turns these dicts into its own objects, field by field.

def metadata_spec(partitions_per_topic):
    brokers = [dict(node_id=n, host="foo.bar", port=1234, rack=None) for n in range(N_BROKERS)]
    topics = []
    for t in range(N_TOPICS):
        if partitions_per_topic == 1:
            # kio's benchmark instance: one partition, odd but valid values.
            partitions = [dict(error_code=67, partition_index=5679, leader_id=2345,
                               leader_epoch=6445678, replica_nodes=[12345, 7651],
                               isr_nodes=[], offline_replicas=[])]
        else:
            partitions = []
            for p in range(partitions_per_topic):
                replicas = [(t + p + r) % N_BROKERS for r in range(3)]
                partitions.append(dict(error_code=0, partition_index=p, leader_id=replicas[0],
                                       leader_epoch=17, replica_nodes=replicas,
                                       isr_nodes=list(replicas), offline_replicas=[]))
        topics.append(dict(error_code=56 if partitions_per_topic == 1 else 0,
                           name=f"topic {t}",
                           topic_id=uuid.UUID(int=(0x1234_5678_9ABC_DEF0 << 64) | (t + 1)),
                           is_internal=False, partitions=partitions,
                           topic_authorized_operations=765443))
    return dict(throttle_time_ms=123, brokers=brokers, cluster_id="556", controller_id=3,
                topics=topics)


def record_batch():
    """One uncompressed v2 batch of 100 records (built with kafka-python's builder)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    for i in range(100):
        value = (b"value%05d" % i) * 11  # 110 bytes
        b.append(i, timestamp=1_700_000_000_000 + i, key=b"key-%06d" % i, value=value,
                 headers=[("header", b"hdrvalue")])
    return bytes(b.build())


def fetch_spec():
    batch = record_batch()
    responses = []
    for t in range(FETCH_TOPICS):
        partitions = [dict(partition_index=p, error_code=0, high_watermark=1_000_000 + p,
                           last_stable_offset=1_000_000 + p, log_start_offset=0,
                           aborted_transactions=[], preferred_read_replica=-1, records=batch)
                      for p in range(FETCH_PARTITIONS)]
        responses.append(dict(topic=f"topic-{t}", partitions=partitions))
    return dict(throttle_time_ms=0, error_code=0, session_id=123456, responses=responses)


# --- kafkawire ---------------------------------------------------------------------------

def kafkawire_metadata(spec):
    from kafkawire import messages
    from kafkawire.messages.metadata_response import (
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic)
    MetadataResponse = messages.by_name("MetadataResponse")
    msg = MetadataResponse(
        throttle_time_ms=spec["throttle_time_ms"],
        brokers=[MetadataResponseBroker(**b) for b in spec["brokers"]],
        cluster_id=spec["cluster_id"],
        controller_id=spec["controller_id"],
        topics=[MetadataResponseTopic(
            error_code=t["error_code"], name=t["name"], topic_id=t["topic_id"],
            is_internal=t["is_internal"],
            partitions=[MetadataResponsePartition(**p) for p in t["partitions"]],
            topic_authorized_operations=t["topic_authorized_operations"],
        ) for t in spec["topics"]],
    )
    return (lambda: msg.encode(VERSION_METADATA),
            lambda data: MetadataResponse.decode(data, VERSION_METADATA))


def kafkawire_fetch(spec):
    from kafkawire import messages
    from kafkawire.messages.fetch_response import FetchableTopicResponse, PartitionData
    FetchResponse = messages.by_name("FetchResponse")
    msg = FetchResponse(
        throttle_time_ms=spec["throttle_time_ms"],
        error_code=spec["error_code"],
        session_id=spec["session_id"],
        responses=[FetchableTopicResponse(
            topic=t["topic"],
            partitions=[PartitionData(**p) for p in t["partitions"]],
        ) for t in spec["responses"]],
    )
    return (lambda: msg.encode(VERSION_FETCH),
            lambda data: FetchResponse.decode(data, VERSION_FETCH))


# --- kafka-python ------------------------------------------------------------------------

def kafka_python_metadata(spec):
    from kafka.protocol.metadata import MetadataResponse
    from kafka.protocol.schemas.fields.codecs.types import BitField
    Broker = MetadataResponse.MetadataResponseBroker
    Topic = MetadataResponse.MetadataResponseTopic
    Partition = Topic.MetadataResponsePartition
    msg = MetadataResponse(
        version=VERSION_METADATA,
        throttle_time_ms=spec["throttle_time_ms"],
        brokers=[Broker(**b) for b in spec["brokers"]],
        cluster_id=spec["cluster_id"],
        controller_id=spec["controller_id"],
        topics=[Topic(
            error_code=t["error_code"], name=t["name"], topic_id=t["topic_id"],
            is_internal=t["is_internal"],
            partitions=[Partition(**p) for p in t["partitions"]],
            # kafka-python models authorized operations as a set of bit numbers.
            authorized_operations=BitField.from_32_bit_field(t["topic_authorized_operations"]),
        ) for t in spec["topics"]],
    )
    return (lambda: msg.encode(VERSION_METADATA),
            lambda data: MetadataResponse.decode(data, VERSION_METADATA))


def kafka_python_fetch(spec):
    from kafka.protocol.consumer import FetchResponse
    Topic = FetchResponse.FetchableTopicResponse
    Partition = Topic.PartitionData
    msg = FetchResponse(
        version=VERSION_FETCH,
        throttle_time_ms=spec["throttle_time_ms"],
        error_code=spec["error_code"],
        session_id=spec["session_id"],
        responses=[Topic(topic=t["topic"], partitions=[Partition(**p) for p in t["partitions"]])
                   for t in spec["responses"]],
    )
    return (lambda: msg.encode(VERSION_FETCH),
            lambda data: FetchResponse.decode(data, VERSION_FETCH))


# --- kio ---------------------------------------------------------------------------------
#
# kio's writer and reader work on streams / buffers with an offset; encode writes into a fresh
# BytesIO each time, decode reads from offset 0 (the Rust reader returns (entity, size)).

def kio_metadata(spec):
    from kio.schema.metadata.v12.response import (
        MetadataResponse, MetadataResponseBroker, MetadataResponsePartition,
        MetadataResponseTopic)
    from kio.schema.errors import ErrorCode
    from kio.serial import entity_reader, entity_writer
    from kio.static.primitive import i32, i32Timedelta

    msg = MetadataResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(milliseconds=spec["throttle_time_ms"])),
        brokers=tuple(MetadataResponseBroker(node_id=i32(b["node_id"]), host=b["host"],
                                             port=i32(b["port"]), rack=b["rack"])
                      for b in spec["brokers"]),
        cluster_id=spec["cluster_id"],
        controller_id=i32(spec["controller_id"]),
        topics=tuple(MetadataResponseTopic(
            error_code=ErrorCode(t["error_code"]), name=t["name"], topic_id=t["topic_id"],
            is_internal=t["is_internal"],
            partitions=tuple(MetadataResponsePartition(
                error_code=ErrorCode(p["error_code"]), partition_index=i32(p["partition_index"]),
                leader_id=i32(p["leader_id"]), leader_epoch=i32(p["leader_epoch"]),
                replica_nodes=tuple(i32(n) for n in p["replica_nodes"]),
                isr_nodes=tuple(i32(n) for n in p["isr_nodes"]),
                offline_replicas=tuple(i32(n) for n in p["offline_replicas"]),
            ) for p in t["partitions"]),
            topic_authorized_operations=i32(t["topic_authorized_operations"]),
        ) for t in spec["topics"]),
    )
    return _kio_codec(MetadataResponse, msg, entity_reader, entity_writer)


def kio_fetch(spec):
    from kio.schema.fetch.v12.response import FetchableTopicResponse, FetchResponse, PartitionData
    from kio.schema.errors import ErrorCode
    from kio.serial import entity_reader, entity_writer
    from kio.static.primitive import i32, i32Timedelta, i64

    msg = FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(milliseconds=spec["throttle_time_ms"])),
        error_code=ErrorCode(spec["error_code"]),
        session_id=i32(spec["session_id"]),
        responses=tuple(FetchableTopicResponse(
            topic=t["topic"],
            partitions=tuple(PartitionData(
                partition_index=i32(p["partition_index"]), error_code=ErrorCode(p["error_code"]),
                high_watermark=i64(p["high_watermark"]),
                last_stable_offset=i64(p["last_stable_offset"]),
                log_start_offset=i64(p["log_start_offset"]),
                aborted_transactions=tuple(p["aborted_transactions"]),
                preferred_read_replica=i32(p["preferred_read_replica"]),
                records=p["records"],
            ) for p in t["partitions"]),
        ) for t in spec["responses"]),
    )
    return _kio_codec(FetchResponse, msg, entity_reader, entity_writer)


def _kio_codec(cls, msg, entity_reader, entity_writer):
    write = entity_writer(cls)
    read = entity_reader(cls)

    def encode():
        out = io.BytesIO()
        write(out, msg)
        return out.getvalue()

    def decode(data):
        entity, _size = read(data, 0)
        return entity

    return encode, decode


# --- harness -----------------------------------------------------------------------------

def loop_size(call, seconds):
    """Warm ``call`` up and return how many calls take about ``seconds``."""
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds / 3:
        call()
        n += 1
    return max(1, n * 3)


def measure(calls, runs, seconds):
    """calls: {key: zero-argument callable}. Returns {key: (median, min, max) ops/s}.

    The rounds are interleaved (round 1 of every callable, then round 2, ...), so a slow
    patch of the machine hits all libraries alike rather than one of them.
    """
    loops = {key: loop_size(call, seconds) for key, call in calls.items()}
    rates = {key: [] for key in calls}
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            for key, call in calls.items():
                n = loops[key]
                t0 = time.perf_counter()
                for _ in range(n):
                    call()
                rates[key].append(n / (time.perf_counter() - t0))
    finally:
        if gc_was_enabled:
            gc.enable()
    return {key: (statistics.median(r), min(r), max(r)) for key, r in rates.items()}


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def check_identical(workload, encoded):
    """encoded: {library: bytes}. Print and return False if they are not all equal."""
    names = list(encoded)
    ref = encoded[names[0]]
    ok = True
    for name in names[1:]:
        other = encoded[name]
        if other != ref:
            ok = False
            i = first_difference(ref, other)
            print(f"!! {workload}: {names[0]} ({len(ref)} B) and {name} ({len(other)} B) "
                  f"differ at byte {i}:")
            print(f"   {names[0]:<13} ...{ref[max(0, i - 8):i + 16].hex(' ')}")
            print(f"   {name:<13} ...{other[max(0, i - 8):i + 16].hex(' ')}")
    return ok


def build_workloads(partitions):
    shapes = [1] if partitions in (None, 1) else [1, partitions]
    workloads = []
    for n in shapes:
        spec = metadata_spec(n)
        label = f"Metadata v12 {N_TOPICS}t x {n}p"
        workloads.append((label, {
            "kafkawire": kafkawire_metadata(spec),
            "kafka-python": kafka_python_metadata(spec),
            "kio": kio_metadata(spec),
        }))
    spec = fetch_spec()
    workloads.append((f"Fetch v12 {FETCH_TOPICS}t x {FETCH_PARTITIONS}p", {
        "kafkawire": kafkawire_fetch(spec),
        "kafka-python": kafka_python_fetch(spec),
        "kio": kio_fetch(spec),
    }))
    return workloads


def fmt_rate(r):
    med, lo, hi = r
    return f"{med:>9,.0f} ({lo:,.0f}-{hi:,.0f})"


def run(args):
    print(f"Python {sys.version.split()[0]} ({platform.python_implementation()}), "
          f"{platform.system()} {platform.release()} {platform.machine()}, {_cpu_model()}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    print(f"kafkawire {_version('kafkawire')}, kafka-python {_version('kafka-python')}, "
          f"kio {_version('kio')} (kio decodes in Rust, encodes in Python)")
    print(f"median ops/s of {args.runs} interleaved rounds of ~{args.seconds}s (min-max), "
          f"GC off while timing")
    workloads = build_workloads(args.partitions)

    all_ok = True
    for label, impls in workloads:
        # bytes(): kafka-python hands back a bytearray (it is timed as such).
        encoded = {name: bytes(enc()) for name, (enc, _dec) in impls.items()}
        all_ok &= check_identical(label, encoded)
        data = encoded["kafkawire"]
        # Every decoder is timed on kafkawire's bytes: make sure each accepts them, and that
        # kafkawire's decode re-encodes to the same bytes.
        for name, (_enc, dec) in impls.items():
            dec(data)
        assert impls["kafkawire"][1](data).encode(VERSION_METADATA if "Metadata" in label
                                                  else VERSION_FETCH) == data
        print(f"{label}: {len(data):,} B on the wire, "
              + ("identical bytes from all three" if len(set(encoded.values())) == 1
                 else "ENCODINGS DIFFER"))
    if not all_ok:
        print("!! encodings differ: the comparison below is not apples to apples")
    print()

    all_ratios = []
    for repetition in range(args.repeat):
        if args.repeat > 1:
            print(f"--- measurement {repetition + 1} of {args.repeat}, load average "
                  f"{os.getloadavg()[0]:.2f}")
        all_ratios.append(measure_all(workloads, args))
    if args.repeat > 1:
        print(f"=== ratios over the {args.repeat} measurements: median (min-max)")
        print(RATIO_HEADER)
        print("-" * len(RATIO_HEADER))
        for label in all_ratios[0]:
            cells = []
            for i in range(len(RATIO_COLUMNS)):
                values = [ratios[label][i] for ratios in all_ratios]
                cells.append(f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
            print(f"{label:<24} " + " ".join(f"{c:>20}" for c in cells))


RATIO_COLUMNS = [("kafka-python", 0), ("kafka-python", 1), ("kio", 0), ("kio", 1)]
RATIO_HEADER = (f"{'workload':<24} {'kw/kafka-python enc':>20} {'kw/kafka-python dec':>20} "
                f"{'kw/kio enc':>20} {'kw/kio dec':>20}")


def measure_all(workloads, args):
    """Time every workload once; print the rates and ratios; return {label: ratios}."""
    header = (f"{'workload':<24} {'library':<13} {'encode ops/s (min-max)':>32} "
              f"{'decode ops/s (min-max)':>32}")
    print(header)
    print("-" * len(header))
    summary = []
    for label, impls in workloads:
        data = bytes(impls["kafkawire"][0]())
        calls = {}
        for name, (enc, dec) in impls.items():
            calls[name, "encode"] = enc
            calls[name, "decode"] = lambda dec=dec: dec(data)
        rates = measure(calls, args.runs, args.seconds)
        results = {}
        for name in impls:
            results[name] = (rates[name, "encode"], rates[name, "decode"])
            print(f"{label:<24} {name:<13} {fmt_rate(results[name][0]):>32} "
                  f"{fmt_rate(results[name][1]):>32}", flush=True)
        summary.append((label, results))
    print()

    print(RATIO_HEADER)
    print("-" * len(RATIO_HEADER))
    ratios = {}
    for label, results in summary:
        ratios[label] = [results["kafkawire"][what][0] / results[peer][what][0] for peer, what in RATIO_COLUMNS]
        print(f"{label:<24} " + " ".join(f"{r:>19.2f}x" for r in ratios[label]))
    print()
    return ratios


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu ?"


def profile(args, top=15):
    """cProfile kafkawire's encode and decode of each workload."""
    for label, impls in build_workloads(args.partitions):
        enc, dec = impls["kafkawire"]
        data = enc()
        loops = 300
        for what, call in (("encode", enc), ("decode", lambda: dec(data))):
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(loops):
                call()
            prof.disable()
            print(f"=== kafkawire {what}, {label}, {loops} calls: top {top} by total (own) time")
            pstats.Stats(prof).strip_dirs().sort_stats("tottime").print_stats(top)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=None,
                    help="also run MetadataResponse with 100 topics x N partitions (RF 3)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=0.3)
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure everything this many times and summarise the ratios")
    ap.add_argument("--profile", action="store_true",
                    help="instead of timing, cProfile kafkawire's encode and decode")
    args = ap.parse_args()
    if args.profile:
        profile(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
