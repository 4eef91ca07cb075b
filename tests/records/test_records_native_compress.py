"""Compressed batches written in C (issue 26, compress.c) against the pure encoder, their oracle.

The rules: the C writer gives the pure path's batch byte for byte, at every level (gzip wherever
its zlib is Python's, snappy always, lz4 and zstd wherever the pure path's cramjam bundles the
liblz4 and libzstd releases vendored into the extension, which a probe checks); whatever C writes decompresses, with the pure codec, to exactly the uncompressed
records section and decodes to the records given, with a good CRC; a level the C code cannot
match, a codec turned off, or a library release that writes other bytes makes RecordBatchBuilder
write the batch in Python; and bad levels raise the pure path's errors.
"""
from __future__ import annotations

import contextlib

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crc32c import crc32c
from kafkawire import _native
from kafkawire.records import RecordBatch, RecordBatchBuilder, builder, native_compress
from kafkawire.records.compression import GZIP, LZ4, SNAPPY, ZSTD, decompress_pure
from records_testlib import plain_headers

IN_C = tuple(c for c in _native.native_codecs())
pytestmark = pytest.mark.skipif(not IN_C, reason="no codec compiled into the C extension")
C_BUILD = _native.records.build_compressed if _native.records is not None else None
SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# Levels compress.c takes for each codec (None: the codec's default), each strategy of the codec
# (lz4: fast, HC, HC's optimal parser; zstd: fast, dfast, greedy, lazy, lazy2, btlazy2, btopt,
# btultra2); bad ones step aside.
C_LEVELS = {GZIP: [None, -1, 1, 5, 9], SNAPPY: [None], LZ4: [None, 1, 2, 5, 9, 10, 12, 17],
            ZSTD: [None, -131072, -7, -1, 1, 3, 4, 5, 7, 12, 15, 17, 19]}
# The cramjam release whose liblz4 and libzstd are the vendored ones (kafkawire/_native_src/vendor/*/SOURCE)
VENDORED_FROM_CRAMJAM = "2.14.0"
SAME_LIBRARIES = (LZ4, ZSTD) if cramjam.__version__ == VENDORED_FROM_CRAMJAM else ()
POST = bytes(range(40))


@contextlib.contextmanager
def pure_build():
    """RecordBatchBuilder.build compressing in Python (the oracle), the C append unchanged."""
    saved = builder.build_compressed
    builder.build_compressed = lambda *args: None
    try:
        yield
    finally:
        builder.build_compressed = saved


def libraries_agree(codec: int) -> bool:
    """Whether the C library writes the pure path's bytes (the probe build() trusts)."""
    return native_compress._pair_agrees(codec, None)


values = st.one_of(st.none(), st.just(b""), st.binary(max_size=200),
                   st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=30), st.integers(1, 4000)),
                   st.sampled_from([b"\0" * 70_000, bytes(range(256)) * 300]))
records = st.lists(st.tuples(values, values, st.lists(st.tuples(st.text(max_size=6), values), max_size=3)),
                   max_size=40)


@st.composite
def batches(draw):
    codec = draw(st.sampled_from(IN_C))
    b = RecordBatchBuilder(compression_type=codec, compression_level=draw(st.sampled_from(C_LEVELS[codec])),
                           base_offset=draw(st.integers(0, 1 << 40)), base_timestamp=1_700_000_000_000,
                           partition_leader_epoch=draw(st.integers(-1, (1 << 31) - 1)))
    for i, (key, value, headers) in enumerate(draw(records)):
        b.append(key, value, headers, 1_700_000_000_000 + i)
    return b


def pure_bytes(b: RecordBatchBuilder) -> bytes:
    with pure_build():
        return b.build()


@SETTINGS
@given(b=batches())
def test_the_c_writer_gives_the_pure_batch_where_the_libraries_agree(b):
    """The C batch equals the pure one byte for byte (every codec whose library agrees: lz4 and
    zstd at every level with the cramjam the vendored libraries come from; with another release,
    build() still gives the pure bytes)."""
    codec, level = b.compression_type, b.compression_level
    c_batch = C_BUILD(codec, level, b._records, b.base_offset, b.partition_leader_epoch, POST)
    assert c_batch is not None  # every level drawn is one C takes: no silent fallback
    expected = pure_bytes(b)
    # snappy's block encoder is our own: it must agree wherever the pure path's cramjam uses `snap`
    if codec in (SNAPPY, *SAME_LIBRARIES) or (libraries_agree(codec) and native_compress._pair_agrees(codec, level)):
        assert c_batch[21:61] == POST and c_batch[61:] == expected[61:]
        assert c_batch[:17] == expected[:17]  # offset, length, epoch, magic
    assert b.build() == expected


@SETTINGS
@given(b=batches())
def test_what_c_writes_decompresses_to_the_records_and_decodes(b):
    """Kafka-readable: the pure codec gives back the records section exactly, the CRC-32C is
    right, and the batch decodes (codecs in Python) to the records appended."""
    codec = b.compression_type
    batch = C_BUILD(codec, b.compression_level, b._records, b.base_offset, b.partition_leader_epoch, POST)
    assert decompress_pure(codec, batch[61:]) == bytes(b._records)
    assert int.from_bytes(batch[17:21], "big") == crc32c(batch[21:])
    assert int.from_bytes(batch[8:12], "big") == len(batch) - 12
    built = b.build()
    before = _native.records.use_codecs(())
    try:
        got = [(r.key, r.value, plain_headers(r.headers)) for r in RecordBatch.from_buffer(built)]
        assert got == [(r.key, r.value, plain_headers(r.headers))
                       for r in RecordBatch.from_buffer(pure_bytes(b))]
    finally:
        _native.records.use_codecs(before)


def test_a_codec_not_in_c_is_written_by_the_pure_path():
    """A codec left out of the build (KAFKAWIRE_NATIVE_CODECS, or use_codecs) is not written in C."""
    b = RecordBatchBuilder(compression_type=IN_C[0], base_timestamp=0)
    b.append(b"k", b"v" * 1000, (), 0)
    expected = pure_bytes(b)
    before = _native.records.use_codecs(())
    try:
        assert C_BUILD(IN_C[0], None, b._records, 0, -1, POST) is None
        assert builder.build_compressed(IN_C[0], None, b._records, 0, -1, POST) is None
        assert b.build() == expected
    finally:
        _native.records.use_codecs(before)


@pytest.mark.skipif(not SAME_LIBRARIES, reason=f"cramjam {cramjam.__version__} bundles other codec releases than "
                                                f"the vendored ones (cramjam {VENDORED_FROM_CRAMJAM}'s)")
@pytest.mark.parametrize("codec", [LZ4, ZSTD])
def test_with_the_vendored_libraries_every_level_is_written_in_c(codec):
    """lz4 (HC levels too) and zstd (every strategy) compiled from the releases cramjam bundles:
    the probe finds C's bytes the pure path's at every level, so no level falls back to Python."""
    if codec not in IN_C:
        pytest.skip("codec not compiled in")
    assert {level: native_compress._pair_agrees(codec, level) for level in C_LEVELS[codec]} \
        == dict.fromkeys(C_LEVELS[codec], True)


@pytest.mark.parametrize("codec, level", [(LZ4, 0), (LZ4, 18), (ZSTD, 23), (ZSTD, -131073), (GZIP, 1.0)])
def test_bad_levels_step_aside(codec, level):
    """A level outside the codec's (Kafka's lz4 1..17, libzstd's -131072..22) or not an int: C leaves it
    to the pure path, which raises or clamps as it does without the extension."""
    if codec not in IN_C:
        pytest.skip("codec not compiled in")
    assert C_BUILD(codec, level, b"abc" * 100, 0, -1, POST) is None


@pytest.mark.parametrize("codec, level, message", [(GZIP, 0, "gzip doesn't support compression level 0"),
                                                   (GZIP, 10, "gzip doesn't support compression level 10"),
                                                   (LZ4, 0, "lz4 doesn't support compression level 0"),
                                                   (LZ4, 18, "lz4 doesn't support compression level 18")])
def test_a_bad_level_raises_the_pure_error(codec, level, message):
    """A level the codec refuses gets the pure path's ValueError, native path on."""
    b = RecordBatchBuilder(compression_type=codec, compression_level=level, base_timestamp=0)
    b.append(b"k", b"v", (), 0)
    with pytest.raises(ValueError, match=message):
        b.build()


def test_a_library_writing_other_bytes_is_not_trusted(monkeypatch):
    """When the C library compresses differently from the pure path's (another release), the probe
    refuses the pair and the batch is written in Python, for every level of that codec."""
    codec = IN_C[0]

    def other_release(*args):
        batch = C_BUILD(*args)
        return None if batch is None else batch + b"\0"

    monkeypatch.setattr(native_compress, "_NATIVE_BUILD", other_release)
    monkeypatch.setattr(native_compress, "_AGREES", {})
    assert native_compress.build_compressed(codec, None, b"x" * 100, 0, -1, POST) is None
    assert native_compress._AGREES[(codec, None)] is False
