"""Codecs framed as the Java client frames them, read both ways with other clients."""

from __future__ import annotations

import gzip
import os
import random
import struct
import zlib

import cramjam
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

import aiokafka.codec as ak_codec
import kafka.codec as kp_codec
from kafkawire.records import CorruptRecordError
from kafkawire.records.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    compress,
    decompress,
    xxh32,
)

PAYLOADS = [
    b"",
    b"a",
    b"hello kafka " * 1000,
    os.urandom(100_000),                      # incompressible: lz4 stores raw blocks
    (b"x" * 70_000) + os.urandom(70_000),     # more than one 64 KiB lz4 / 32 KiB snappy block
]

KP = {GZIP: (kp_codec.gzip_encode, kp_codec.gzip_decode),
      SNAPPY: (kp_codec.snappy_encode, kp_codec.snappy_decode),
      LZ4: (kp_codec.lz4_encode, kp_codec.lz4_decode),
      ZSTD: (kp_codec.zstd_encode, kp_codec.zstd_decode)}
AK = {GZIP: (ak_codec.gzip_encode, ak_codec.gzip_decode),
      SNAPPY: (ak_codec.snappy_encode, ak_codec.snappy_decode),
      LZ4: (ak_codec.lz4_encode, ak_codec.lz4_decode),
      ZSTD: (ak_codec.zstd_encode, ak_codec.zstd_decode)}


@pytest.mark.parametrize("codec", [NONE, GZIP, SNAPPY, LZ4, ZSTD])
@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: f"{len(p)}B")
def test_round_trip(codec, payload):
    assert decompress(codec, compress(codec, payload)) == payload


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
@pytest.mark.parametrize("lib", [KP, AK], ids=["kafka-python", "aiokafka"])
@pytest.mark.parametrize("payload", PAYLOADS[1:], ids=lambda p: f"{len(p)}B")
def test_other_clients_read_ours_and_we_read_theirs(codec, lib, payload):
    encode, decode = lib[codec]
    assert bytes(decode(compress(codec, payload))) == payload
    assert decompress(codec, encode(payload)) == payload


def test_gzip_header_is_javas():
    # GZIPOutputStream: magic, deflate, no flags, mtime 0, XFL 0, OS 255 (JDK 16+).
    z = compress(GZIP, b"abc")
    assert z[:10] == bytes.fromhex("1f8b08000000000000ff")
    assert gzip.decompress(z) == b"abc"
    # Default level is zlib's default (Deflater.DEFAULT_COMPRESSION).
    data = b"some text " * 500
    body = compress(GZIP, data)[10:-8]
    d = zlib.compressobj(6, zlib.DEFLATED, -15)
    assert body == d.compress(data) + d.flush()


def test_gzip_reads_concatenated_members_and_ignores_trailing_garbage():
    data = gzip.compress(b"one") + gzip.compress(b"two")
    assert decompress(GZIP, data) == b"onetwo"
    assert decompress(GZIP, gzip.compress(b"one") + b"junk") == b"one"


def test_snappy_uses_xerial_framing_with_32k_blocks():
    data = os.urandom(80_000)
    z = compress(SNAPPY, data)
    assert z[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(z):
        (n,) = struct.unpack_from(">i", z, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(z[pos + 4:pos + 4 + n])))
        pos += 4 + n
    assert [len(b) for b in blocks] == [32768, 32768, 80_000 - 65536]
    assert b"".join(blocks) == data


def test_snappy_reads_raw_blocks_and_concatenated_xerial_streams():
    data = b"raw snappy as librdkafka and sarama write it " * 10
    assert decompress(SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data
    assert decompress(SNAPPY, compress(SNAPPY, b"abc") + compress(SNAPPY, b"def")) == b"abcdef"


def test_lz4_frame_is_what_kafka_lz4_block_output_stream_writes():
    z = compress(LZ4, b"abc" * 100)
    # magic, FLG 0x60 (v01, independent blocks), BD 0x40 (64 KiB), HC 0x82
    assert z[:7] == bytes.fromhex("04224d18604082")
    assert z[-4:] == b"\x00\x00\x00\x00"  # EndMark, no content checksum
    hc = (xxhash.xxh32_intdigest(bytes([0x60, 0x40])) >> 8) & 0xFF
    assert z[6] == hc


def test_lz4_block_starting_like_a_size_prefix_is_read_as_a_plain_block():
    # The records of six empty records (batch offset deltas 8, 296..300): their compressed
    # block begins c2 0c 00 00, which reads as a 4-byte little-endian length of 3266. An LZ4
    # frame block has no such prefix; taking one decoded 45 bytes of garbage.
    data = bytes.fromhex("0c0000100101000e0000d0040101000e0000d2040101000e0000d4040101000e0000d6"
                         "040101000e0000d804010100")
    z = compress(LZ4, data)
    (size,) = struct.unpack_from("<I", z, 7)
    assert not size & 0x80000000, "the block must be compressed for this test to mean anything"
    assert struct.unpack_from("<I", z, 11)[0] < 64 * 1024, "its first 4 bytes must look like a length"
    assert decompress(LZ4, z) == data
    assert kp_codec.lz4_decode(z) == data


def test_lz4_incompressible_blocks_are_stored_raw():
    data = os.urandom(1000)
    z = compress(LZ4, data)
    (size,) = struct.unpack_from("<I", z, 7)
    assert size == 0x80000000 | 1000 and z[11:1011] == data


# text-like records past one 64 KiB block, on which the HC levels compress better
RECORD_TEXT = b"".join(b"key-%d value-%d " % (i, i * 7) for i in range(8000))


def test_lz4_levels_other_than_kafkas_default_compress_with_hc():
    """compression.lz4.level other than 9 gets Lz4BlockOutputStream's HC compressor at that level
    (cramjam's block compressor ignores levels): smaller frames than the default's, higher levels
    smaller still, and still Kafka's frame, read back by us and by kafka-python."""
    sizes = {level: len(compress(LZ4, RECORD_TEXT, level)) for level in (None, 9, 3, 12)}
    assert sizes[None] == sizes[9] > sizes[3] > sizes[12], sizes
    for level in (1, 2, 3, 10, 12, 17):
        z = compress(LZ4, RECORD_TEXT, level)
        assert z[:7] == bytes.fromhex("04224d18604082") and z[-4:] == bytes(4)
        assert decompress(LZ4, z) == RECORD_TEXT and kp_codec.lz4_decode(z) == RECORD_TEXT
    data = os.urandom(1000)
    assert compress(LZ4, data, 12)[7:1011] == struct.pack("<I", 0x80000000 | 1000) + data  # stored raw


@pytest.mark.parametrize("level", [0, -1, 18])
def test_lz4_levels_outside_kafkas_are_refused(level):
    """CompressionType.LZ4's levels are 1..17: another is a ValueError, not silently another level."""
    with pytest.raises(ValueError, match=f"lz4 doesn't support compression level {level}"):
        compress(LZ4, b"abc", level)


def test_lz4_reads_frames_with_content_size_and_checksums():
    import lz4.frame

    data = b"0123456789" * 20_000
    for kwargs in ({"store_size": True}, {"content_checksum": True}, {"block_checksum": True},
                   {"block_size": lz4.frame.BLOCKSIZE_MAX4MB}):
        frame = lz4.frame.compress(data, block_linked=False, **kwargs)
        assert decompress(LZ4, frame) == data, kwargs


def test_lz4_block_checksum_mismatch_is_corrupt():
    import lz4.frame

    frame = bytearray(lz4.frame.compress(b"abc" * 1000, block_linked=False, block_checksum=True,
                                         store_size=False))
    frame[-5] ^= 0xFF  # last byte of the block checksum (before the EndMark)
    with pytest.raises(CorruptRecordError, match="checksum"):
        decompress(LZ4, bytes(frame))


def test_lz4_dependent_blocks_are_refused_like_java():
    import lz4.frame

    frame = lz4.frame.compress(b"abc" * 100_000, block_linked=True)
    with pytest.raises(CorruptRecordError, match="dependent block"):
        decompress(LZ4, frame)


def test_lz4_old_kafka_header_checksum_accepted_only_for_legacy_magic():
    data = b"legacy lz4 " * 100
    broken = kp_codec.lz4_encode_old_kafka(data)  # HC computed over magic+FLG+BD
    assert decompress(LZ4, broken, magic=0) == data
    assert decompress(LZ4, broken, magic=1) == data
    with pytest.raises(CorruptRecordError, match="descriptor checksum"):
        decompress(LZ4, broken, magic=2)


def test_zstd_is_refused_for_legacy_magic():
    with pytest.raises(CorruptRecordError, match="not allowed with magic 1"):
        decompress(ZSTD, compress(ZSTD, b"abc"), magic=1)


def test_zstd_frames_without_content_size_and_multiple_frames():
    import zstandard

    data = os.urandom(1000) * 300
    cctx = zstandard.ZstdCompressor(write_content_size=False)
    frame = cctx.compress(data)
    assert decompress(ZSTD, frame) == data
    assert decompress(ZSTD, frame + compress(ZSTD, b"tail")) == data + b"tail"


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_decompression_is_capped(codec):
    bomb = compress(codec, bytes(5_000_000))
    assert len(bomb) < 300_000
    assert len(decompress(codec, bomb, max_size=5_000_000)) == 5_000_000
    with pytest.raises(CorruptRecordError, match="limit"):
        decompress(codec, bomb, max_size=4_999_999)


def test_zstd_declared_content_size_beyond_cap_is_refused_before_decompressing():
    frame = bytes(cramjam.zstd.compress(bytes(2_000_000)))
    with pytest.raises(CorruptRecordError, match="limit"):
        decompress(ZSTD, frame, max_size=1_000_000)


GARBAGE = {
    "empty": b"",
    "zero": b"\x00",
    "noise": random.Random(25).randbytes(64),      # fixed, so every run decodes the same bytes
    # xerial's magic, version 1, compatible 1, then a chunk claiming 2 GiB with 10 bytes left
    "xerial": b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 0x7FFFFFFF) + bytes(10),
    # an LZ4 frame (magic, FLG, BD, HC) whose first block claims 2 GiB
    "lz4": bytes.fromhex("04224d18604082") + b"\xff\xff\xff\x7f",
}
GZIP_CORRUPT = "gzip data is corrupt: Error -3 while decompressing data: incorrect header check"
LZ4_SHORT = "LZ4 frame shorter than its 7-byte header"
LZ4_MAGIC = "LZ4 stream has invalid magic bytes"
SNAPPY_CORRUPT = "snappy data is corrupt: snappy: corrupt input ("
NO_ZSTD_FRAME = "zstd data does not start with a zstd frame"
# What decompress says about each garbage input: the start of the message, naming what is wrong.
GARBAGE_ERRORS = {
    GZIP: {"empty": "gzip data is truncated", "zero": "gzip data is truncated", "noise": GZIP_CORRUPT,
           "xerial": GZIP_CORRUPT, "lz4": GZIP_CORRUPT},
    SNAPPY: {"empty": SNAPPY_CORRUPT + "empty)", "noise": SNAPPY_CORRUPT,
             "xerial": "xerial snappy chunk length 2147483647 at byte 16 exceeds the 10 bytes left",
             "lz4": SNAPPY_CORRUPT},
    LZ4: {"empty": LZ4_SHORT, "zero": LZ4_SHORT, "noise": LZ4_MAGIC, "xerial": LZ4_MAGIC,
          "lz4": "LZ4 block size 2147483647 exceeds max 65536"},
    ZSTD: dict.fromkeys(GARBAGE, NO_ZSTD_FRAME),
    5: dict.fromkeys(GARBAGE, "unknown compression type 5"),
    7: dict.fromkeys(GARBAGE, "unknown compression type 7"),
}


@pytest.mark.parametrize("codec, garbage, message", [
    (codec, name, message) for codec, errors in GARBAGE_ERRORS.items() for name, message in errors.items()])
def test_garbage_is_corrupt(codec, garbage, message):
    """Garbage raises CorruptRecordError itself (no other class, no subclass) whose message
    names the codec and what is wrong with the bytes."""
    with pytest.raises(CorruptRecordError) as raised:
        decompress(codec, GARBAGE[garbage])
    assert type(raised.value) is CorruptRecordError
    assert str(raised.value).startswith(message), str(raised.value)


def test_a_lone_zero_byte_is_an_empty_snappy_block():
    """The one garbage input above that is not corrupt: xerial's SnappyInputStream (Kafka's
    reader) takes input without its magic as one raw snappy block, and 0x00 is the raw block of
    length 0."""
    assert decompress(SNAPPY, GARBAGE["zero"]) == b""


@settings(max_examples=300, deadline=None)
@given(codec=st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]), data=st.binary(max_size=2000),
       cut=st.integers(min_value=0, max_value=3000), flip=st.integers(min_value=0, max_value=3000))
def test_mutated_streams_raise_only_corrupt_record_error(codec, data, cut, flip):
    z = bytearray(compress(codec, data))
    if z:
        z[flip % len(z)] ^= 0x5A
    z = bytes(z[:cut])
    try:
        out = decompress(codec, z, max_size=1 << 20)
    except CorruptRecordError:
        return
    assert len(out) <= 1 << 20


@given(st.binary(max_size=200), st.integers(min_value=0, max_value=2**32 - 1))
def test_xxh32_matches_the_reference_implementation(data, seed):
    assert xxh32(data, seed) == xxhash.xxh32_intdigest(data, seed)
