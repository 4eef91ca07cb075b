"""Walking a buffer of batches (a log segment), torn tails, and hostile input."""

from __future__ import annotations

import mmap
import struct
from datetime import timedelta

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafka.record.legacy_records as kp_legacy
from kafkawire.records import (
    GZIP,
    CorruptRecordError,
    LegacyRecordBatch,
    RecordBatch,
    TruncatedTail,
    build_batch,
    build_control_batch,
    iter_batches,
)
from records_testlib import CODECS, batch_fields, build, record_specs

TS = 1_700_000_000_000


def segment():
    a = build_batch([(b"a", b"1", (), TS), (b"b", b"2", (), TS)], base_offset=0)
    b = build_batch([(b"c", b"3", [("h", None)], TS)], base_offset=2, compression_type=GZIP)
    c = build_control_batch(2, b"\x00\x00", base_offset=3, timestamp=TS)
    return [a, b, c]


def test_walks_back_to_back_batches():
    parts = segment()
    data = b"".join(parts)
    it = iter_batches(data)
    batches = list(it)
    assert [b.base_offset for b in batches] == [0, 2, 3]
    assert [b.position for b in batches] == [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    assert it.tail is None and it.position == len(data)
    assert [r.offset for b in batches for r in b] == [0, 1, 2, 3]


def test_mixed_magic_buffer():
    legacy = kp_legacy.LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    legacy.append(0, timestamp=TS, key=b"old", value=b"msg")
    data = bytes(legacy.build()) + segment()[0]
    kinds = [type(b) for b in iter_batches(data)]
    assert kinds == [LegacyRecordBatch, RecordBatch]


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "mmap"])
def test_buffer_types(kind, tmp_path):
    data = b"".join(segment())
    if kind == "mmap":
        path = tmp_path / "seg.log"
        path.write_bytes(data)
        with open(path, "rb") as f:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                assert [r.offset for b in iter_batches(buf) for r in b] == [0, 1, 2, 3]
                headers = [r.headers for b in iter_batches(buf) for r in b]
                assert headers[2][0][0] == "h"
            finally:
                del headers
                buf.close()
        return
    buf = {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data)}[kind]
    assert [r.offset for b in iter_batches(buf) for r in b] == [0, 1, 2, 3]
    assert [r.headers for b in iter_batches(buf) for r in b][2] == (("h", None),)


def test_torn_tail_at_every_cut_of_the_last_batch():
    parts = segment()
    whole = b"".join(parts)
    start = len(parts[0]) + len(parts[1])
    for cut in range(start + 1, len(whole)):
        it = iter_batches(whole[:cut])
        assert len(list(it)) == 2
        needed = 17 if cut - start < 17 else len(parts[2])
        assert it.tail == TruncatedTail(position=start, available=cut - start, needed=needed)
        assert it.position == start


def test_corruption_in_the_middle_raises_with_position_and_file():
    parts = segment()
    bad = bytearray(parts[1])
    bad[-1] ^= 0xFF
    data = parts[0] + bytes(bad) + parts[2]
    it = iter_batches(data, file="00000000000000000000.log")
    assert next(it).base_offset == 0
    with pytest.raises(CorruptRecordError) as e:
        next(it)
    assert e.value.position == len(parts[0]) + 17
    assert "00000000000000000000.log" in str(e.value)
    # Without CRC checks the bad batch is returned; its records then fail or decode.
    assert len(list(iter_batches(data, verify_crc=False))) == 3


def test_zeroed_region_and_unknown_magic_are_corruption_not_a_tail():
    parts = segment()
    with pytest.raises(CorruptRecordError, match="smaller than minimum"):
        list(iter_batches(parts[0] + bytes(100)))
    bad = bytearray(parts[1])
    bad[16] = 3
    with pytest.raises(CorruptRecordError, match="unknown magic 3"):
        list(iter_batches(parts[0] + bytes(bad)))


# --- hostile input ---------------------------------------------------------------------

def consume(buf, **kw):
    """Everything a reader might do with a buffer: must only raise CorruptRecordError."""
    it = iter_batches(buf, max_decompressed_size=1 << 20, **kw)
    for batch in it:
        batch.is_valid
        for rec in batch:
            rec.offset, rec.timestamp, rec.key, rec.value, rec.headers, rec.sequence
            if rec.is_control:
                try:
                    rec.control_key
                    rec.control_value
                except CorruptRecordError:
                    pass
    return it


HOSTILE = settings(max_examples=400, deadline=timedelta(seconds=5),
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def valid_buffers(draw):
    raws = [build(draw(batch_fields()), draw(record_specs(max_records=5)))
            for _ in range(draw(st.integers(min_value=1, max_value=3)))]
    if draw(st.booleans()):
        raws.append(build_control_batch(draw(st.integers(min_value=0, max_value=8)),
                                        draw(st.binary(max_size=12)), timestamp=TS))
    return b"".join(raws)


@HOSTILE
@given(buf=valid_buffers(), data=st.data())
def test_mutated_batches_raise_only_corrupt_record_error(buf, data):
    buf = bytearray(buf)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        i = data.draw(st.integers(min_value=0, max_value=len(buf) - 1))
        buf[i] = data.draw(st.integers(min_value=0, max_value=255))
    if data.draw(st.booleans()):
        buf = buf[:data.draw(st.integers(min_value=0, max_value=len(buf)))]
    verify = data.draw(st.booleans())
    try:
        consume(bytes(buf), verify_crc=verify)
    except CorruptRecordError:
        pass


@HOSTILE
@given(buf=valid_buffers(), data=st.data())
def test_mutations_with_a_fixed_crc_reach_the_record_parser(buf, data):
    """Fix up the CRC after mutating, so corruption inside records is not caught early."""
    first = RecordBatch.from_buffer(buf)
    end = first.end_position
    body = bytearray(buf[:end])
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        i = data.draw(st.integers(min_value=57, max_value=end - 1))
        body[i] = data.draw(st.integers(min_value=0, max_value=255))
    struct.pack_into(">I", body, 17, crc32c(bytes(body[21:])))
    try:
        consume(bytes(body))
    except CorruptRecordError:
        pass


@HOSTILE
@given(st.binary(max_size=600))
def test_random_bytes_raise_only_corrupt_record_error(buf):
    try:
        it = consume(buf, verify_crc=False)
    except CorruptRecordError:
        return
    assert it.tail is None or it.tail.position + it.tail.available == len(buf)


@HOSTILE
@given(st.binary(min_size=0, max_size=400), st.sampled_from(CODECS), st.integers(0, 2**31 - 1))
def test_random_records_sections_behind_a_valid_header(records_section, codec, count):
    """A valid header (CRC included) in front of arbitrary records bytes."""
    header = struct.pack(">qiibIhiqqqhii", 0, 49 + len(records_section), -1, 2, 0, codec, 0,
                         TS, TS, -1, -1, -1, count % 1000)
    raw = bytearray(header + records_section)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    try:
        consume(bytes(raw))
    except CorruptRecordError:
        pass
