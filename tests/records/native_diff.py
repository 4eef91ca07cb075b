"""The differential oracle of the native record path (issue 26): run the same bytes through
the pure-Python loop and the C loop and describe everything a caller can observe, so two runs
compare with ``==``: every record (types included), and the error (class, reason, byte position,
file, message) or the torn tail. Shared by test_records_native.py and fuzz_native.py."""
from __future__ import annotations

import contextlib
import random
import struct

from crc32c import crc32c

from kafkawire.records import CorruptRecordError, RecordBatchBuilder, batch, iter_batches, record_decoding

PATHS = {"pure": record_decoding.decode_records_pure, "native": record_decoding.decode_records_native}


@contextlib.contextmanager
def using(path: str):
    """RecordBatch iteration through one path (batch.py binds ``decode_records`` at import)."""
    saved = batch.decode_records
    batch.decode_records = PATHS[path]
    try:
        yield
    finally:
        batch.decode_records = saved


def _view(x):
    return (type(x).__name__, None if x is None else bytes(x))


def snapshot(r) -> tuple:
    """What a caller sees of a record, with the types (memoryview, str) it sees."""
    return (type(r).__name__, r.offset, r.timestamp, _view(r.key), _view(r.value),
            type(r.headers).__name__, tuple((type(k).__name__, k, _view(v)) for k, v in r.headers),
            r.attributes, r.timestamp_delta, r.offset_delta, r.sequence)


def outcome(buf, path: str, verify_crc: bool = True):
    """(records seen, error or None, torn tail) of reading ``buf`` through ``path``; re-encoding
    every good batch is part of it (its bytes must be equal too)."""
    seen: list = []
    with using(path):
        it = iter_batches(buf, verify_crc=verify_crc, file="f.log")
        try:
            for b in it:
                records = []
                for r in b:
                    records.append(r)
                    seen.append(snapshot(r))
                if hasattr(b, "header_fields"):
                    seen.append(reencode(b, records))
        except CorruptRecordError as e:
            return seen, (type(e).__name__, e.reason, e.position, e.file, str(e)), None
    return seen, None, (it.tail, it.position)


def reencode(b, records) -> bytes | str:
    """The records section RecordBatchBuilder writes back from ``records`` (or its refusal:
    hostile records may have offset deltas it does not accept)."""
    try:
        builder = RecordBatchBuilder(**b.header_fields())
        for r in records:
            builder.append(r.key, r.value, r.headers, timestamp_delta=r.timestamp_delta,
                           offset_delta=r.offset_delta, attributes=r.attributes)
    except ValueError as e:
        return f"ValueError: {e}"
    return builder.records_bytes()


def fix_crc(raw: bytearray, start: int = 0) -> None:
    """Make the batch at ``start`` pass its CRC check, so mutations reach the record loop."""
    if len(raw) - start < 61:
        return
    (length,) = struct.unpack_from(">i", raw, start + 8)
    end = min(len(raw), start + 12 + max(length, 0))
    if end - start >= 21:
        struct.pack_into(">I", raw, start + 17, crc32c(bytes(raw[start + 21:end])))


def mutate(rng: random.Random, raw: bytes) -> bytes:
    """A few byte changes (most inside the first batch's records), maybe a cut, CRC fixed or not."""
    out = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        lo = 57 if len(out) > 61 and rng.random() < 0.8 else 0
        i = rng.randrange(lo, len(out))
        out[i] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
    if rng.random() < 0.2:
        del out[rng.randrange(len(out) + 1):]
    if rng.random() < 0.8:
        fix_crc(out)
    return bytes(out)
