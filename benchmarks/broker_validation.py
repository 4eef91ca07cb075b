"""The broker's check of a produced batch (kafkawire.broker.validation.validate_produce): the C
path (the extension's record parser: offsets, timestamps against the default bounds, and keys
for a compacted topic) against the pure loop, in one run.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/broker_validation.py

Prints the median time per batch and MB/s of each path, and their ratio, for an uncompressed
and a gzip batch of 10,000 records of 100 bytes (about 1 MB, Kafka's default
max.message.bytes), and the uncompressed one on a compacted topic (every record's key checked).
"""
from __future__ import annotations

import statistics
import time

from kafkawire import _native
from kafkawire.broker import validation
from kafkawire.broker.record_checks import RecordRules
from kafkawire.records import GZIP, NONE
from kafkawire.records.builder import build_batch

ROUNDS = 15


def median_seconds(data: bytes, compacted: bool) -> float:
    times = []
    now_ms = int(time.time() * 1000)      # the records' timestamps are now: within the bounds
    rules = RecordRules(now_ms=now_ms, compacted=compacted)
    for _ in range(ROUNDS):
        start = time.perf_counter()
        validation.validate_produce(data, topic_partition="bench-0", max_message_bytes=1 << 24,
                                    log_append_time=False, now_ms=now_ms, rules=rules)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    native = _native.records
    if native is None:
        raise SystemExit("the C extension does not run here (build it: setup.py build_ext --inplace)")
    for codec, name, compacted in ((NONE, "none", False), (GZIP, "gzip", False), (NONE, "none, compacted", True)):
        data = build_batch([(b"key-%d" % i, b"v" * 90) for i in range(10_000)], compression_type=codec)
        c_path = median_seconds(data, compacted)
        _native.records = None
        try:
            pure = median_seconds(data, compacted)
        finally:
            _native.records = native
        print(f"{name:15} {len(data):>8} bytes  C {c_path * 1000:7.2f} ms  pure {pure * 1000:7.2f} ms  "
              f"ratio {pure / c_path:5.1f}x  ({10_000 / c_path / 1e6:.2f} M records/s with C)")


if __name__ == "__main__":
    main()
