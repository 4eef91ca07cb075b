"""The native (C) record path against its oracle, the pure-Python loop (issue 26).

Every test reads the same bytes through both paths and requires the same records (same
values and types), the same re-encoded bytes, and on bad input the same error: class,
reason, byte position and message (native_diff.outcome). With KAFKAWIRE_REQUIRE_NATIVE=1 a
missing extension fails instead of skipping.
"""
from __future__ import annotations

import gc
import mmap
import os
import random
import struct
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkawire import _native
from kafkawire.records import (
    Record,
    RecordBatch,
    RecordBatchBuilder,
    build_batch,
    build_control_batch,
    build_end_txn_marker_batch,
    record_decoding,
)
from native_diff import fix_crc, mutate, outcome, using
from records_testlib import CODECS, batch_fields, build, record_specs

pytestmark = pytest.mark.skipif(record_decoding.decode_records_native is None,
                                reason="the C extension is not built (pip install -e . builds it)")

TS = 1_700_000_000_000
REPO = Path(__file__).resolve().parents[2]
DIFF = settings(max_examples=300, deadline=timedelta(seconds=5),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def assert_same(buf, verify_crc=True):
    pure = outcome(buf, "pure", verify_crc)
    assert outcome(buf, "native", verify_crc) == pure
    return pure


@DIFF
@given(fields=batch_fields(), specs=record_specs())
def test_valid_batches_of_every_codec_decode_and_reencode_identically(fields, specs):
    records, error, _ = assert_same(build(fields, specs))
    assert error is None and len(records) == len(specs) + 1


@DIFF
@given(control_type=st.integers(0, 8), value=st.binary(max_size=12), n=st.integers(1, 3))
def test_control_and_transaction_marker_batches_decode_identically(control_type, value, n):
    buf = b"".join([build_control_batch(control_type, value, base_offset=i, timestamp=TS) for i in range(n)]
                   + [build_end_txn_marker_batch(True, producer_id=7, producer_epoch=1, coordinator_epoch=3,
                                                 base_offset=n, timestamp=TS)])
    records, error, _ = assert_same(buf)
    assert error is None and records[0][0] == "ControlRecord"


def test_null_keys_values_header_values_and_empty_batches():
    buf = b"".join([
        build_batch([(None, None, [("h", None), ("", b"")], TS), (b"", b"", [], TS)]),
        RecordBatchBuilder(base_offset=2).build(),                  # no records at all
        build_batch([(b"k", None, [("\udcff-invalid-utf8", b"v")] * 3, TS)], base_offset=2),
    ])
    records, error, _ = assert_same(buf)
    assert error is None and records[0][3] == ("NoneType", None) and records[0][6][0][2] == ("NoneType", None)


@pytest.mark.parametrize("ts_delta", [-(1 << 63), (1 << 63) - 1, -1, 0, 63, 64, 8191, 8192, -8193])
@pytest.mark.parametrize("offset_delta", [0, 63, 64, (1 << 31) - 1])
def test_smallest_and_largest_varints(ts_delta, offset_delta):
    builder = RecordBatchBuilder(base_timestamp=0)
    builder.append(b"k" * 200, b"v" * 20000, [("h", b"x" * 70)], timestamp_delta=ts_delta, offset_delta=offset_delta)
    assert_same(builder.build())


@pytest.mark.parametrize("base_offset", [(1 << 63) - 1, 1 << 62])
def test_offsets_and_timestamps_past_int64_are_exact(base_offset):
    """A hostile base offset (not CRC-covered) plus a delta passes int64; both paths give the exact int."""
    builder = RecordBatchBuilder(base_timestamp=(1 << 63) - 1, max_timestamp=0)
    builder.append(b"k", b"v", timestamp_delta=(1 << 62), offset_delta=(1 << 31) - 1)
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base_offset)
    records, error, _ = assert_same(bytes(raw))
    assert records[0][1] == base_offset + (1 << 31) - 1 and records[0][2] == (1 << 63) - 1 + (1 << 62)


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "memoryview-slice", "mmap"])
def test_every_buffer_type(kind, tmp_path):
    data = b"".join(build(dict(compression_type=c), [(b"k", b"v", [("a", b"b")], TS, 0)]) for c in CODECS)
    if kind == "mmap":
        path = tmp_path / "seg.log"
        path.write_bytes(data)
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            assert_same(m)
            gc.collect()  # the record views are gone before the map closes
        return
    buf = {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data),
           "memoryview-slice": memoryview(b"xx" + data + b"yy")[2:-2]}[kind]
    assert_same(buf)


def test_a_non_contiguous_buffer_goes_to_the_pure_loop():
    data = build_batch([(b"k", b"v", [], TS)] * 3)
    spread = bytearray(len(data) * 2)
    spread[::2] = data
    view = memoryview(spread)[::2]
    records = [(r.offset, bytes(r.value)) for r in record_decoding.decode_records_native(
        view, 61, len(data), 3, 0, TS, None, None, Record,
        lambda reason, pos: AssertionError(reason))]
    assert records == [(0, b"v"), (1, b"v"), (2, b"v")]


def test_record_views_keep_their_bytes_alive_and_lock_a_bytearray():
    """A key outlives its batch and buffer (the view holds the buffer), and, as with Python
    slices, a bytearray cannot be resized while a record's view of it lives."""
    data = bytearray(build_batch([(b"key-1", b"value-1", [("h", b"hv")], TS)]))
    with using("native"):
        record = next(iter(RecordBatch.from_buffer(data)))
    key, header_value = record.key, record.headers[0][1]
    with pytest.raises(BufferError):
        data.extend(b"more")
    del record
    gc.collect()
    assert isinstance(key, memoryview) and key.readonly is False
    assert bytes(key) == b"key-1" and bytes(header_value) == b"hv"
    with using("native"):
        compressed = build_batch([(b"k", b"zipped", [], TS)], compression_type=CODECS[1])
        value = next(iter(RecordBatch.from_buffer(compressed))).value
    gc.collect()
    assert bytes(value) == b"zipped"


@DIFF
@given(seed=st.integers(0, 2**32 - 1), fields=batch_fields(), specs=record_specs(max_records=5))
def test_mutated_batches_give_the_same_records_then_the_same_error(seed, fields, specs):
    rng = random.Random(seed)
    buf = build(fields, specs) + build_batch([(b"next", b"batch", [], TS)], base_offset=1 << 40)
    assert_same(mutate(rng, buf), verify_crc=rng.random() < 0.5)


@DIFF
@given(st.binary(min_size=0, max_size=400), st.sampled_from(CODECS), st.integers(0, 2**31 - 1),
       st.binary(max_size=30))
def test_random_records_sections_behind_a_valid_header(records_section, codec, count, after):
    """A valid header (CRC included) in front of arbitrary records bytes, then more bytes: the
    loop may read past a record's end into them, and must do so alike."""
    header = struct.pack(">qiibIhiqqqhii", 0, 49 + len(records_section), -1, 2, 0, codec, 0,
                         TS, TS, -1, -1, -1, count % 1000)
    raw = bytearray(header + records_section)
    fix_crc(raw)
    assert_same(bytes(raw) + after)


@DIFF
@given(st.lists(st.tuples(st.integers(-(1 << 70), 1 << 70), st.sampled_from([1, 2, 5, 9, 10, 11])), max_size=12),
       st.integers(1, 3))
def test_hand_made_varints_of_every_length_and_range(fields, count):
    """Records of raw varints (over-long, past int32/int64, truncated): the same records or error."""
    body = bytearray()
    for value, width in fields:
        value &= (1 << (7 * width)) - 1
        for i in range(width):
            body.append(((value >> (7 * i)) & 0x7F) | (0x80 if i < width - 1 else 0))
    header = struct.pack(">qiibIhiqqqhii", 0, 49 + len(body), -1, 2, 0, 0, 0, TS, TS, -1, -1, -1, count)
    raw = bytearray(header + body)
    fix_crc(raw)
    assert_same(bytes(raw))


def test_bounded_fuzz_run():
    """A few thousand seeded mutations of the test corpus (the by-hand script runs 1M)."""
    from fuzz_native import corpus, run
    failures = run(corpus(), inputs=3000, seed=26)
    assert failures == []


def test_pure_is_forced_by_kafkawire_pure_and_reported_by_status():
    """status() names the path and the codecs decompressed in C; KAFKAWIRE_PURE=1 forces pure."""
    names = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    in_c = ", ".join(names[c] for c in _native.native_codecs()) or "none"
    assert _native.status() == f"native (C extension; codecs in C: {in_c})"
    code = ("import kafkawire._native as n; from kafkawire.records import record_decoding as rd; "
            "print(n.status(), rd.decode_records is rd.decode_records_pure)")
    env = dict(os.environ, KAFKAWIRE_PURE="1", PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.split("\n")[0] == "pure Python True", out.stderr


@pytest.mark.parametrize("deltas", [[0, 0, 0], [5, 5, 7, 7, 5], [-1, -1, 3, 3]])
def test_records_sharing_a_timestamp_decode_identically(deltas):
    """The native loop reuses the previous record's timestamp int when the delta repeats."""
    builder = RecordBatchBuilder(base_timestamp=TS)
    for i, delta in enumerate(deltas):
        builder.append(b"k%d" % i, b"v", timestamp_delta=delta, offset_delta=i)
    records, error, _ = assert_same(builder.build())
    timestamps = [seen[2] for seen in records if isinstance(seen, tuple)]
    assert error is None and timestamps == [TS + d for d in deltas]


def test_record_objects_made_from_freed_ones_and_subclasses_stay_whole():
    """Record's memory goes to the C extension's free list and back: the records of a batch
    decoded after others were freed, a record that outlives its batch's others, and subclasses
    of Record (with a __dict__ and weak references, which the free list does not take) all keep
    their own values."""
    import weakref

    buf = build_batch([(b"key-%d" % i, b"value-%d" % i, [("h", b"%d" % i)], TS + i) for i in range(300)])
    kept = None
    for _ in range(3):
        records = list(RecordBatch.from_buffer(buf))
        kept = records[150]
        del records
        gc.collect()
    again = list(RecordBatch.from_buffer(buf))
    assert [(r.offset, bytes(r.key), bytes(r.value), r.timestamp) for r in again] == [
        (i, b"key-%d" % i, b"value-%d" % i, TS + i) for i in range(300)]
    assert (kept.offset, bytes(kept.key), bytes(kept.headers[0][1])) == (150, b"key-150", b"150")

    class Annotated(Record):
        pass

    mine = Annotated(1, 2, b"k", b"v", (), 0, 0, None)
    mine.note = "kept"
    ref = weakref.ref(mine)
    assert (mine.offset, mine.note) == (1, "kept")
    del mine
    assert ref() is None
    assert [r.offset for r in RecordBatch.from_buffer(buf)][:3] == [0, 1, 2]
