"""How long a PushTelemetry's payload holds the event loop (kafkawire.broker.telemetry_payload
decodes it before any exporter sees it): decode_metrics of a MetricsData of N gauges (each with
two attributes, as Kafka's Java client pushes them), up to about ``telemetry.max.bytes``'s default
1 MiB, against ``bytes(data)`` (the floor: one copy). Medians of RUNS; MB/s of the payload.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/telemetry_decode.py [--metrics 30,900,9000] [--runs 7]

A Java producer's push is about 2 KB (30 metrics), so its decode is well under a millisecond.
"""
from __future__ import annotations

import argparse
import statistics
import struct
import time

from kafkawire.broker.telemetry_payload import decode_metrics


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _key_value(key: str, value: str) -> bytes:
    return _field(1, key.encode()) + _field(2, _field(1, value.encode()))


def metrics_data(count: int) -> bytes:
    metrics = b""
    for i in range(count):
        point = _field(7, _key_value("node.id", str(i))) + _field(7, _key_value("topic", "orders"))
        point += _varint(4 << 3 | 1) + struct.pack("<d", 1.5)
        name = f"org.apache.kafka.producer.node.request.latency.avg.{i}".encode()
        metrics += _field(2, _field(1, name) + _field(5, _field(1, point)))
    return _field(1, _field(2, metrics))


def median_s(work, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--metrics", default="30,900,9000")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(f"{'metrics':>8} {'bytes':>9} {'decode ms':>10} {'MB/s':>7} {'copy ms':>8}")
    for count in map(int, args.metrics.split(",")):
        data = metrics_data(count)
        decode = median_s(lambda: decode_metrics(data), args.runs)
        copy = median_s(lambda: bytes(bytearray(data)), args.runs)
        print(f"{count:>8} {len(data):>9} {decode * 1000:>10.2f} {len(data) / decode / 1e6:>7.2f} {copy * 1000:>8.3f}")


if __name__ == "__main__":
    main()
