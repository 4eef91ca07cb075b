"""Fuzz the C writer of compressed batches (compress.c) against the pure encoder (issue 26), by hand:

    PYTHONPATH=. .venv/bin/python tests/records/fuzz_native_compress.py [--inputs 20000] [--seed 1]

Each input is a records section of random shape (random, skewed, text-like and repeated runs,
empty and tiny, up to 1.5 MB (past zstd's streaming window), across the 32 KiB snappy and 64 KiB lz4 block edges),
written by build_compressed for a random codec and level. Required: where C writes the pure
path's bytes for the pair (native_compress's probe), the very bytes of the pure codec; always,
that the pure codec decompresses what C wrote back to the input and the CRC-32C is right. Run it
under PYTHONMALLOC=debug to catch writes past a buffer. Prints every difference; exits 1 if any.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from crc32c import crc32c  # noqa: E402

from kafkawire import _native  # noqa: E402
from kafkawire.records import native_compress  # noqa: E402
from kafkawire.records.compression import GZIP, LZ4, SNAPPY, ZSTD, compress, decompress_pure  # noqa: E402

LEVELS = {GZIP: [None, -1, 1, 6, 9, 0], SNAPPY: [None], LZ4: [None, 9, 1, 2, 3, 10, 12, 17, 18],
          ZSTD: [None, -7, 1, 3, 4, 9, 12, 16, 19]}
POST = bytes(40)


def payload(rng: random.Random) -> bytes:
    size = rng.choice([0, 1, 3, 16, 17, 18, 100, 1000, 32767, 32768, 32769, 65535, 65536, 65537,
                       rng.randrange(300_000), rng.randrange(1_500_000)])
    kind = rng.randrange(4)
    if kind == 0:
        return rng.randbytes(size)
    if kind == 1:
        alphabet = rng.choice([b"ab", b"abcdefgh ", b"\0\1"])
        return rng.randbytes(size).translate(bytes.maketrans(bytes(range(256)), (alphabet * 256)[:256]))
    if kind == 2:
        unit = rng.randbytes(rng.randrange(1, 80))
        return (unit * (size // len(unit) + 1))[:size]
    parts = [rng.randbytes(rng.randrange(50)) + b"value-%d " % i * rng.randrange(5) for i in range(size // 40)]
    return b"".join(parts)[:size]


def check(codec: int, level, data: bytes) -> str | None:
    batch = _native.records.build_compressed(codec, level, data, 0, -1, POST)
    if batch is None:
        return None
    body = batch[61:]
    if decompress_pure(codec, body) != data:
        return "does not decompress to the input"
    if int.from_bytes(batch[17:21], "big") != crc32c(batch[21:]):
        return "bad CRC"
    if native_compress._pair_agrees(codec, None) and native_compress._pair_agrees(codec, level) \
            and body != compress(codec, data, level):
        return "other bytes than the pure codec"
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    codecs = _native.native_codecs()
    bad, start = 0, time.monotonic()
    for i in range(args.inputs):
        codec = rng.choice(codecs)
        level = rng.choice(LEVELS[codec])
        data = payload(rng)
        problem = check(codec, level, data)
        if problem:
            bad += 1
            print(f"input {i}: codec {codec} level {level} {len(data)} bytes: {problem}")
    print(f"{args.inputs} inputs, {bad} differences, {time.monotonic() - start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
