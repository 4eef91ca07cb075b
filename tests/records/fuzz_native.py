"""Fuzz the native record path against the pure one (issue 26), by hand:

    PYTHONPATH=. .venv/bin/python tests/records/fuzz_native.py [--inputs 1000000] [--seed 1] [--arrow]

Mutates a corpus of valid batches (every codec, control batches, headers, nulls, large
varints) and requires both paths to give the same records and the same error for each input
(native_diff.outcome); with --arrow, records_to_arrow's native table or error against its
oracle's too. Prints every difference found; exits 1 if there was one.
test_records_native.py runs a few thousand of these.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafkawire.records import (  # noqa: E402
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    RecordBatchBuilder,
    build_batch,
    build_control_batch,
)
from native_diff import mutate, outcome  # noqa: E402

TS = 1_700_000_000_000


def corpus() -> list[bytes]:
    out = []
    for codec in (NONE, GZIP, SNAPPY, LZ4, ZSTD):
        out.append(build_batch([(b"k%d" % i, b"v" * i, [("h", b"x"), ("g", None)][:i % 3], TS + i)
                                for i in range(6)], compression_type=codec))
        out.append(build_batch([(None, None, [], TS)], compression_type=codec, timestamp_type=1))
    builder = RecordBatchBuilder(base_timestamp=0)
    builder.append(b"k" * 130, b"v" * 300, [("key", b"y" * 200)], timestamp_delta=-(1 << 62), offset_delta=1 << 30)
    out.append(builder.build())
    out.append(build_control_batch(0, b"\x00\x00\x00\x00\x00\x07", timestamp=TS))
    return [raw + build_batch([(b"after", b"x", [], TS)], base_offset=9) for raw in out]


def arrow_outcome(buf: bytes, native: bool, verify: bool):
    from kafkawire.records import CorruptRecordError
    from kafkawire.spark.record_columns import records_to_arrow
    try:
        table = records_to_arrow(buf, native=native, verify_crc=verify, file="f.log")
    except CorruptRecordError as e:
        return ("CorruptRecordError", e.reason, e.position, e.file)
    except (OverflowError, ValueError) as e:
        return (type(e).__name__, str(e))
    table.validate(full=True)
    return table.to_pylist()


def run(batches: list[bytes], inputs: int, seed: int, arrow: bool = False) -> list[str]:
    rng = random.Random(seed)
    failures = []
    for n in range(inputs):
        buf = mutate(rng, rng.choice(batches))
        verify = rng.random() < 0.3
        if arrow:
            pure, native = arrow_outcome(buf, False, verify), arrow_outcome(buf, True, verify)
        else:
            pure, native = outcome(buf, "pure", verify), outcome(buf, "native", verify)
        if pure != native:
            failures.append(f"input {n}: {buf.hex()}\n  pure:   {pure}\n  native: {native}")
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--arrow", action="store_true", help="fuzz records_to_arrow instead of record iteration")
    args = ap.parse_args()
    t0 = time.monotonic()
    failures = run(corpus(), args.inputs, args.seed, args.arrow)
    for f in failures[:20]:
        print(f)
    print(f"{args.inputs} inputs, {len(failures)} differences, {time.monotonic() - t0:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
