"""Fuzz the native message decoder against the pure one (issue 26), by hand:

    PYTHONPATH=. .venv/bin/python tests/codec/fuzz_native_messages.py [--inputs 1000000] [--seed 1]

Mutates a corpus of valid encodings (random instances of every (message, version), with
nulls, unknown tagged fields and records) and requires, for each input, that the C decoder
decodes it to the pure decoder's object exactly where the pure decoder does and gives up
everywhere else (then Message.decode raises the pure error). Prints every difference found;
exits 1 if there was one. test_native_decode.py runs a few thousand of these under Hypothesis.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hypothesis import HealthCheck, given, settings  # noqa: E402

from kafkawire import messages  # noqa: E402
from tests.codec.strategies import instances  # noqa: E402
from tests.codec.test_native_decode import assert_agree  # noqa: E402

EDGE_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF)


def corpus(per_pair: int) -> list[tuple[object, bytes]]:
    """(decoder, valid encoding) for every (message, version), per_pair random instances each."""
    out: list[tuple[object, bytes]] = []
    for cls in messages.all_messages():
        for version in cls.versions():
            collect_pair(out, cls, version, per_pair)
    return out


def collect_pair(out: list, cls, version: int, per_pair: int) -> None:
    decoder = cls._DECODERS[version]

    @settings(max_examples=per_pair, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(obj=instances(cls, version))
    def collect(obj):
        out.append((decoder, obj.encode(version)))
    collect()


def mutate(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        action = rng.randrange(4)
        if action == 0 and buf:
            buf[rng.randrange(len(buf))] = rng.choice(EDGE_BYTES) if rng.random() < 0.5 else rng.randrange(256)
        elif action == 1:
            del buf[rng.randint(0, len(buf)):]
        elif action == 2:
            i = rng.randint(0, len(buf))
            buf[i:i] = bytes(rng.choice(EDGE_BYTES) for _ in range(rng.randint(1, 5)))
        elif buf:
            i = rng.randrange(len(buf))
            del buf[i:i + rng.randint(1, 4)]
    return bytes(buf)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-pair", type=int, default=4)
    args = parser.parse_args()
    if not all(hasattr(d, "native") for cls in messages.all_messages() for d in cls._DECODERS.values()):
        print("the native decoder is not in use (no C extension, or KAFKAWIRE_PURE=1)")
        return 1
    rng = random.Random(args.seed)
    seeds = corpus(args.per_pair)
    print(f"{len(seeds)} valid encodings in the corpus", flush=True)
    started, failures = time.monotonic(), 0
    for n in range(args.inputs):
        decoder, data = rng.choice(seeds)
        mutated = mutate(rng, data)
        try:
            assert_agree(decoder, mutated)
        except AssertionError as exc:
            failures += 1
            print(f"DIFFERENCE {decoder.__name__} {mutated!r:.300}: {exc}", flush=True)
        if (n + 1) % 200_000 == 0:
            print(f"{n + 1} inputs, {failures} differences, {time.monotonic() - started:.0f} s", flush=True)
    print(f"{args.inputs} inputs, {failures} differences, {time.monotonic() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
