"""Compressed batches written by the C extension (compress.c), used only where they are the pure
path's bytes.

The pure encoder (compression.py) is the oracle, and its bytes come from libraries: zlib for
gzip, cramjam (Rust `snap`, a bundled liblz4 and libzstd) for the others. compress.c writes gzip
with the system's zlib, snappy with its own encoder that makes the choices `snap` makes, and lz4
and zstd with the liblz4 1.10.0 and libzstd 1.5.7 compiled into the extension
(kafkawire/_native_src/vendor: the releases cramjam 2.14 bundles), at every level Kafka allows.
Library releases can compress the same input differently (libzstd 1.5.4 and 1.5.7 do, on skewed
data; liblz4's HC levels change too), and another cramjam release may bundle others, so a
(codec, level) goes through C only once C has written the same bytes as the pure path for every
probe below (once per process and pair); otherwise that pair stays pure. compress.c itself steps
aside for bad levels, whose errors are the pure path's. A pair is also refused when the codec's
default level disagrees: that means other library releases, and a probe that happens to pass at
another level proves nothing then (seen with zstd levels 1, -1 and -7 against libzstd 1.5.4).
"""

from __future__ import annotations

import random
from typing import Any

from .. import _native
from . import compression as _compression

__all__ = ["build_compressed"]

_NATIVE_BUILD: Any = None if _native.records is None else _native.records.build_compressed
_HEADER = 61
_AGREES: dict[tuple[int, int | None], bool] = {}


def _probe_inputs() -> list[bytes]:
    """Inputs on which library releases have been seen to differ: skewed (two-symbol) data,
    where the entropy coders' table choices show; text-like runs; incompressible bytes that
    span several blocks; records mixing all three (the entropy stage's block splits); the empty
    and the tiny."""
    rng = random.Random(26)
    two = bytes.maketrans(bytes(range(256)), b"ab" * 128)
    text = bytes.maketrans(bytes(range(256)), b"abcdefgh " * 28 + b"abcd")
    mixed = [rng.randbytes(rng.choice((10, 100, 1000))).translate(rng.choice((two, text, bytes(range(256)))))
             + b"value-%d " % i * rng.choice((0, 10, 100)) for i in range(150)]
    return [b"", b"x", rng.randbytes(1000).translate(two), rng.randbytes(20_000).translate(two),
            rng.randbytes(20_000).translate(text), rng.randbytes(70_000),
            b"".join(b"key-%d value-%d " % (i, i * 7) for i in range(2000)),
            b"".join(mixed[:40]), b"".join(mixed)]


def _agrees(codec: int, level: int | None) -> bool | None:
    """Whether C writes the pure path's bytes for every probe; None when C steps aside for this
    pair (a level it does not take, or the codec turned off): nothing learned."""
    if _NATIVE_BUILD(codec, level, b"", 0, -1, bytes(40)) is None:
        return None
    for data in _probe_inputs():
        batch = _NATIVE_BUILD(codec, level, data, 0, -1, bytes(40))
        if batch is None:
            return None
        if batch[_HEADER:] != _compression.compress(codec, data, level):
            return False
    return True


def _pair_agrees(codec: int, level: int | None) -> bool:
    key = (codec, level)
    agrees = _AGREES.get(key)
    if agrees is None:
        agrees = _agrees(codec, level)
        if agrees is None:  # not learned: asked again next time
            return False
        _AGREES[key] = agrees
    return agrees


def build_compressed(codec: int, level: int | None, records, base_offset: int,
                     partition_leader_epoch: int, post: bytes) -> bytes | None:
    """The batch's bytes from C, or None: the pure path writes it (module docstring)."""
    if _NATIVE_BUILD is None or not (level is None or type(level) is int):
        return None
    if not (_pair_agrees(codec, None) and _pair_agrees(codec, level)):
        return None
    return _NATIVE_BUILD(codec, level, records, base_offset, partition_leader_epoch, post)
