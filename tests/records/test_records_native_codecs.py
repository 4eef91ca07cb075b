"""Decompression in C (issue 26, decompress.c) against the pure-Python codecs, its oracle.

The C codecs take only input they can decompress whole within the cap and hand anything else
back (None) to the pure codec, which returns the same bytes or raises its CorruptRecordError. So
the rules checked here are: on any input, damaged or not, ``decompress`` gives what
``decompress_pure`` gives (bytes, or the error's class and message); the C codec never accepts
what the pure one refuses, nor returns other bytes; on good input it does run (no silent
fallback); a bomb stops at the cap without allocating past it; and the batch and Arrow paths give
the same records or errors with the codecs in C and in Python.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafka.codec as kp_codec
from kafkawire import _native
from kafkawire.records import CorruptRecordError, compression
from kafkawire.records.compression import GZIP, LZ4, SNAPPY, ZSTD, compress, decompress, decompress_pure
from native_diff import fix_crc, outcome
from records_testlib import batch_fields, build, record_specs

HAVE_PYARROW = importlib.util.find_spec("pyarrow") is not None
if HAVE_PYARROW:
    from test_records_arrow import table_or_error  # the Arrow tests' table-or-error snapshot

IN_C = _native.native_codecs()
pytestmark = pytest.mark.skipif(not IN_C, reason="no codec compiled into the C extension")
native = _native.records.decompress if _native.records is not None else None
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def result(fn, codec, data, **kwargs):
    try:
        return bytes(fn(codec, data, **kwargs))
    except CorruptRecordError as e:
        return (type(e).__name__, str(e))


@contextlib.contextmanager
def codecs_in_python():
    """Every codec decompressed in Python, the C record loops unchanged."""
    before = _native.records.use_codecs(())
    try:
        yield
    finally:
        _native.records.use_codecs(before)


payloads = st.one_of(st.binary(max_size=3000),
                     st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=40), st.integers(1, 3000)))
damage = st.one_of(st.none(), st.tuples(st.sampled_from(["flip", "cut", "append"]), st.integers(0, 1 << 16),
                                        st.binary(min_size=1, max_size=8)))


def damaged(z: bytes, how) -> bytes:
    if how is None:
        return z
    kind, at, extra = how
    if kind == "flip" and z:
        out = bytearray(z)
        out[at % len(z)] ^= extra[0] or 0x5A
        return bytes(out)
    if kind == "cut":
        return z[:at % (len(z) + 1)]
    return z + extra


@SETTINGS
@given(codec=st.sampled_from(IN_C or [GZIP]), data=payloads, how=damage,
       max_size=st.sampled_from([1 << 20, 1000, 0]), magic=st.sampled_from([2, 2, 2, 1]))
def test_the_c_codec_gives_the_pure_codecs_bytes_or_error(codec, data, how, max_size, magic):
    """Any input, good or damaged, any cap: decompress's result (bytes, or the error class and
    message) is decompress_pure's; the C codec alone returns None or those very bytes."""
    z = damaged(compress(codec, data), how)
    expected = result(decompress_pure, codec, z, max_size=max_size, magic=magic)
    assert result(decompress, codec, z, max_size=max_size, magic=magic) == expected
    alone = native(codec, z, max_size, magic)
    assert alone is None or alone == expected
    if how is None and len(data) <= max_size and (codec != ZSTD or magic == 2):
        assert alone == data, "the C codec stepped aside on good input"


@pytest.mark.parametrize("codec", IN_C)
def test_a_bomb_stops_at_the_cap_with_the_pure_error_and_bounded_memory(codec):
    """5 MB of zeros decompressed with a 1 MiB cap: the C codec gives up (None) having held at
    most a few MiB, and decompress raises the pure path's 'more than the limit' error."""
    bomb = compress(codec, bytes(5_000_000))
    tracemalloc.start()
    try:
        assert native(codec, bomb, 1 << 20, 2) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 << 20, peak
    assert result(decompress, codec, bomb, max_size=1 << 20) == result(decompress_pure, codec, bomb,
                                                                        max_size=1 << 20)
    with pytest.raises(CorruptRecordError, match="limit"):
        decompress(codec, bomb, max_size=1 << 20)


@pytest.mark.skipif(LZ4 not in IN_C, reason="lz4 is not compiled in")
def test_lz4_old_kafka_checksum_is_taken_in_c_only_for_legacy_magic():
    data = b"legacy lz4 " * 100
    broken = kp_codec.lz4_encode_old_kafka(data)
    assert native(LZ4, broken, 1 << 20, 1) == data
    assert native(LZ4, broken, 1 << 20, 2) is None
    with pytest.raises(CorruptRecordError, match="descriptor checksum mismatch"):
        decompress(LZ4, broken)


@pytest.mark.skipif(SNAPPY not in IN_C, reason="snappy is not compiled in")
def test_snappy_raw_blocks_and_xerial_streams_are_read_in_c():
    data = b"raw snappy as librdkafka writes it " * 40
    raw = compress(SNAPPY, data)[20:]  # xerial header (16) and the chunk length (4) off: a raw block
    assert native(SNAPPY, raw, 1 << 20, 2) == data
    assert native(SNAPPY, compress(SNAPPY, b"abc") + compress(SNAPPY, b"def"), 1 << 20, 2) == b"abcdef"
    # a chunk length past the bytes left: the pure path words it, naming the byte
    bad = b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 0x7FFFFFFF) + bytes(10)
    assert native(SNAPPY, bad, 1 << 20, 2) is None
    with pytest.raises(CorruptRecordError, match="at byte 16 exceeds the 10 bytes left"):
        decompress(SNAPPY, bad)


@pytest.mark.skipif(ZSTD not in IN_C, reason="zstd is not compiled in")
def test_zstd_frames_without_content_size_and_several_frames_are_read_in_c():
    zstandard = pytest.importorskip("zstandard")
    data = os.urandom(1000) * 300
    streamed = zstandard.ZstdCompressor(write_content_size=False).compress(data)  # as zstd-jni streams
    assert native(ZSTD, streamed, 1 << 20, 2) == data
    assert native(ZSTD, streamed + compress(ZSTD, b"tail"), 1 << 20, 2) == data + b"tail"
    assert native(ZSTD, streamed, 299_999, 2) is None


def compressed_batches(draw_batches):
    return b"".join(build(fields, specs) for fields, specs in draw_batches)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batches=st.lists(st.tuples(batch_fields(), record_specs(max_records=6)), min_size=1, max_size=3),
       flip=st.integers(0, 1 << 16), value=st.integers(0, 255))
def test_batches_read_the_same_with_the_codecs_in_c_and_in_python(batches, flip, value):
    """Iterating batches (good, and with one byte of the first batch's compressed records changed
    under a fixed CRC) gives the same records, or the same error (class, reason, byte), with the
    codecs in C as in Python."""
    buf = compressed_batches(batches)
    damaged_buf = bytearray(buf)
    if len(buf) > 61:
        (length,) = struct.unpack_from(">i", buf, 8)
        damaged_buf[61 + flip % max(1, min(length + 12, len(buf)) - 61)] = value
        fix_crc(damaged_buf)
    for data in (buf, bytes(damaged_buf)):
        in_c = outcome(data, "native")
        with codecs_in_python():
            assert outcome(data, "native") == in_c


@pytest.mark.skipif(not HAVE_PYARROW, reason="pyarrow is not installed")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(batches=st.lists(st.tuples(batch_fields(), record_specs(max_records=6)), min_size=1, max_size=3),
       flip=st.integers(0, 1 << 16), value=st.integers(0, 255), cap=st.sampled_from([1 << 20, 64]))
def test_arrow_tables_are_the_same_with_the_codecs_in_c_and_in_python(batches, flip, value, cap):
    """records_to_arrow's table or error, the batch's compressed records damaged or not, and a
    cap some batches pass: the same with the codecs in C (add_batches' one pass) as in Python."""
    buf = bytearray(compressed_batches(batches))
    if len(buf) > 61 and flip % 2:
        (length,) = struct.unpack_from(">i", buf, 8)
        buf[61 + flip % max(1, min(length + 12, len(buf)) - 61)] = value
        fix_crc(buf)
    in_c = table_or_error(bytes(buf), True, max_decompressed_size=cap)
    with codecs_in_python():
        assert table_or_error(bytes(buf), True, max_decompressed_size=cap) == in_c
    assert table_or_error(bytes(buf), False, max_decompressed_size=cap) == in_c


def test_use_codecs_switches_the_c_codecs_and_decompress_falls_back():
    """A codec not in C (not compiled in, or switched off) is decompressed in Python, same bytes."""
    z = compress(IN_C[0], b"fallback " * 50)
    with codecs_in_python():
        assert native(IN_C[0], z, 1 << 20, 2) is None
        assert decompress(IN_C[0], z) == b"fallback " * 50
    assert native(IN_C[0], z, 1 << 20, 2) == b"fallback " * 50
    assert compression._NATIVE_CODECS == frozenset(IN_C)
