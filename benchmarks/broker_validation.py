"""The broker's check of a produced batch (kafkawire.broker.validation.validate_produce): the C
path (the extension's record parser, offsets only) against the pure loop, in one run.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/broker_validation.py

Prints the median time per batch and MB/s of each path, and their ratio, for an uncompressed
and a gzip batch of 10,000 records of 100 bytes (about 1 MB, Kafka's default
max.message.bytes).
"""
from __future__ import annotations

import statistics
import time

from kafkawire import _native
from kafkawire.broker import validation
from kafkawire.records import GZIP, NONE
from kafkawire.records.builder import build_batch

ROUNDS = 15


def median_seconds(data: bytes) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        validation.validate_produce(data, topic_partition="bench-0", max_message_bytes=1 << 24,
                                    log_append_time=False, now_ms=0)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    native = _native.records
    if native is None:
        raise SystemExit("the C extension does not run here (build it: setup.py build_ext --inplace)")
    for codec, name in ((NONE, "none"), (GZIP, "gzip")):
        data = build_batch([(b"key-%d" % i, b"v" * 90) for i in range(10_000)], compression_type=codec)
        c_path = median_seconds(data)
        _native.records = None
        try:
            pure = median_seconds(data)
        finally:
            _native.records = native
        print(f"{name:5} {len(data):>8} bytes  C {c_path * 1000:7.2f} ms  pure {pure * 1000:7.2f} ms  "
              f"ratio {pure / c_path:5.1f}x  ({10_000 / c_path / 1e6:.2f} M records/s with C)")


if __name__ == "__main__":
    main()
