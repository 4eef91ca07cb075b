"""By-hand fuzz of the C codecs (issue 26, decompress.c) against the pure ones:

    PYTHONPATH=. .venv/bin/python tests/records/fuzz_codecs.py [--inputs 100000] [--seed 1]

Each input is a payload compressed by one codec, then damaged (bytes changed, cut, inserted,
appended) or not, read with a cap that it may pass and a magic of 0..2. The C codec alone must
return None or exactly the pure codec's bytes (it may never accept what the pure one refuses);
every 20th input is also put in a v2 batch (CRC fixed) and read by records_to_arrow with the
codecs in C and in Python, which must give the same table or error. Prints each difference and
their count; exits 1 if there is one.
"""
from __future__ import annotations

import argparse
import random
import struct
import sys

from crc32c import crc32c

from kafkawire import _native
from kafkawire.records import CorruptRecordError, RecordBatchBuilder
from kafkawire.records.compression import compress, decompress_pure


def pure_result(codec, z, max_size, magic):
    try:
        return decompress_pure(codec, z, max_size=max_size, magic=magic)
    except CorruptRecordError as e:
        return str(e)


def damage(rng: random.Random, z: bytes) -> bytes:
    out = bytearray(z)
    for _ in range(rng.randrange(0, 4)):
        r = rng.random()
        if r < 0.5 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif r < 0.7:
            del out[rng.randrange(len(out) + 1):]
        elif r < 0.85:
            out += rng.randbytes(rng.randrange(1, 10))
        elif out:
            at = rng.randrange(len(out))
            out[at:at] = rng.randbytes(rng.randrange(1, 5))
    return bytes(out)


def payload(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return rng.randbytes(rng.randrange(0, 3000))
    return rng.randbytes(rng.randrange(1, 30)) * rng.randrange(1, 2000)


def batch_with(codec: int, records_section: bytes, count: int) -> bytes:
    """A v2 batch holding ``records_section`` as its (compressed) records, CRC fixed."""
    builder = RecordBatchBuilder(compression_type=codec)
    builder.append(b"k", b"v", [], 1_700_000_000_000)
    raw = bytearray(builder.build())
    raw[61:] = records_section
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    struct.pack_into(">i", raw, 57, count)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def arrow_outcome(buf: bytes, in_c: bool):
    from kafkawire.spark.record_columns import records_to_arrow
    before = _native.records.use_codecs(_native.native_codecs() if in_c else ())
    try:
        return records_to_arrow(buf, file="f.log").to_pylist()
    except CorruptRecordError as e:
        return (e.reason, e.position)
    finally:
        _native.records.use_codecs(before)


def run(inputs: int, seed: int) -> int:
    rng = random.Random(seed)
    differences = 0
    codecs = _native.native_codecs()
    for i in range(inputs):
        codec = rng.choice(codecs)
        data = payload(rng)
        z = damage(rng, compress(codec, data)) if rng.random() < 0.8 else compress(codec, data)
        max_size = rng.choice([1 << 20, 1 << 20, len(data), max(0, len(data) - 1), 100])
        magic = rng.choice([2, 2, 2, 1, 0])
        alone = _native.records.decompress(codec, z, max_size, magic)
        if alone is not None and alone != pure_result(codec, z, max_size, magic):
            differences += 1
            print(f"DIFF codec {codec} cap {max_size} magic {magic}: {z.hex()[:160]}")
        if i % 20 == 0:
            buf = batch_with(codec, z, rng.choice([1, 2, 50]))
            if arrow_outcome(buf, True) != arrow_outcome(buf, False):
                differences += 1
                print(f"ARROW DIFF codec {codec}: {buf.hex()[:160]}")
    print(f"{inputs} inputs, {differences} differences")
    return differences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not _native.native_codecs():
        print("no codec is compiled into the C extension")
        return 1
    return 1 if run(args.inputs, args.seed) else 0


if __name__ == "__main__":
    sys.exit(main())
