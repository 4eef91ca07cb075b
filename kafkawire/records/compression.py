"""Compression codecs framed exactly as the Java client frames them.

Kafka does not compress records with a codec's "native" container in every case; the
wire bytes are whatever the Java streams write:

* gzip   - ``java.util.zip.GZIPOutputStream``: a plain RFC 1952 member with mtime 0,
           XFL 0 and OS 255 (JDK 16+), deflate level -1 (= zlib 6) by default.
* snappy - snappy-java's ``SnappyOutputStream`` ("xerial" framing): the 16-byte header
           ``0x82 'SNAPPY' 0x00``, int32 version 1, int32 compat 1, then for every 32 KiB
           of input a big-endian int32 length and a raw snappy block. Readers must also
           accept raw (unframed) snappy, which some non-Java clients write.
* lz4    - ``Lz4BlockOutputStream``: an LZ4 frame (v1.5.1) with independent 64 KiB blocks,
           no block/content checksum, no content size; incompressible blocks stored raw.
           Magic < 2 data from Kafka 0.8/0.9 has a wrong header checksum (computed over
           the magic too), so for legacy message sets the header checksum is ignored, as
           the Java reader does for magic 0.
* zstd   - zstd-jni streaming output: standard zstd frames, level 3 by default.

Codecs run in ``cramjam`` (maintained Rust bindings, one wheel for snappy/lz4/zstd) and
stdlib ``zlib`` for gzip: zlib's ``decompressobj(...).decompress(data, max_length)`` lets
us stop at a size cap, which cramjam's one-shot gzip cannot do.

Every decompressor is bounded by ``max_size`` (default 256 MiB): a zip bomb raises
CorruptRecordError before it allocates more than that. Framing we parse ourselves (xerial,
LZ4 frames) checks every length against the bytes left before slicing.

With the C extension, ``decompress`` first runs the codec in C when it was compiled in
(``kafkawire._native.native_codecs()``; decompress.c): the same framing, the same cap. Any
input the C code does not take whole goes to ``decompress_pure`` (these functions), which
returns the same bytes or raises its CorruptRecordError: every error is worded here.
"""

from __future__ import annotations

import struct
import threading
import zlib
from typing import Any

import cramjam

from .. import _native
from .errors import CorruptRecordError

__all__ = [
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "CODEC_NAMES",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "compress",
    "decompress",
    "decompress_pure",
    "xxh32",
]

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024

_DecompressionError = cramjam.DecompressionError


def compress(codec: int, data, level: int | None = None) -> bytes:
    """Compress ``data`` the way the Java producer would for ``codec``."""
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return _gzip_compress(data, -1 if level is None else level)
    if codec == SNAPPY:
        return _xerial_snappy_compress(data)
    if codec == LZ4:
        return _lz4_frame_compress(data, level)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=3 if level is None else level))
    raise ValueError(f"unknown compression type {codec}")


_NATIVE_DECOMPRESS: Any = None if _native.records is None else _native.records.decompress
_NATIVE_CODECS = frozenset(_native.native_codecs())


def decompress(codec: int, data, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
               magic: int = 2) -> bytes:
    """Decompress a records section; raise CorruptRecordError on bad or oversized input.

    ``magic`` is the message format of the enclosing batch: below 2, LZ4 frames may carry
    old Kafka's broken header checksum and zstd is not allowed (Kafka added it with v2).
    The codec runs in C when it is compiled in (module docstring), else in Python.
    """
    if codec in _NATIVE_CODECS:
        out = _NATIVE_DECOMPRESS(codec, data, max_size, magic)
        if out is not None:
            return out
    return decompress_pure(codec, data, max_size=max_size, magic=magic)


def decompress_pure(codec: int, data, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                    magic: int = 2) -> bytes:
    """``decompress`` in Python only: the oracle of the C codecs, and the one that words errors."""
    if codec == GZIP:
        return _gzip_decompress(data, max_size)
    if codec == SNAPPY:
        return _snappy_decompress(data, max_size)
    if codec == LZ4:
        return _lz4_frame_decompress(data, max_size, check_header=magic >= 2)
    if codec == ZSTD:
        if magic < 2:
            raise CorruptRecordError(f"zstd compression is not allowed with magic {magic}")
        return _zstd_decompress(data, max_size)
    if codec == NONE:
        return bytes(data)
    raise CorruptRecordError(f"unknown compression type {codec}")


def _too_big(codec: str, max_size: int) -> CorruptRecordError:
    return CorruptRecordError(
        f"{codec} data decompresses to more than the {max_size}-byte limit"
    )


# --- gzip -----------------------------------------------------------------------------

# ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=0 OS=255: the header GZIPOutputStream writes.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def _gzip_compress(data, level: int) -> bytes:
    if level != -1 and not 1 <= level <= 9:
        raise ValueError(f"gzip doesn't support compression level {level}")
    deflater = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return _GZIP_HEADER + body + trailer


def _gzip_decompress(data, max_size: int) -> bytes:
    out = bytearray()
    rest: memoryview | bytes = memoryview(data)
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip wrapper, checks CRC/ISIZE
        try:
            out += inflater.decompress(rest, max_size - len(out) + 1)
        except zlib.error as e:
            raise CorruptRecordError(f"gzip data is corrupt: {e}") from None
        if len(out) > max_size:
            raise _too_big("gzip", max_size)
        if not inflater.eof:
            raise CorruptRecordError("gzip data is truncated")
        rest = inflater.unused_data
        # GZIPInputStream reads concatenated members and ignores trailing bytes that do
        # not start another member; so do we.
        if rest[:2] != b"\x1f\x8b":
            return bytes(out)


# --- snappy (xerial framing) ----------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream.DEFAULT_BLOCK_SIZE
_INT32_BE = struct.Struct(">i")


def _xerial_snappy_compress(data) -> bytes:
    mv = memoryview(data)
    out = bytearray(_XERIAL_HEADER)
    for start in range(0, len(mv), _XERIAL_BLOCK):
        block = cramjam.snappy.compress_raw(mv[start:start + _XERIAL_BLOCK])
        out += _INT32_BE.pack(len(block))
        out += block
    return bytes(out)


def _raw_snappy(block, max_left: int) -> cramjam.Buffer:
    try:
        # The raw format starts with the uncompressed length; check it before inflating.
        if cramjam.snappy.decompress_raw_len(block) > max_left:
            raise CorruptRecordError("snappy block decompresses past the size limit")
        return cramjam.snappy.decompress_raw(block)
    except _DecompressionError as e:
        raise CorruptRecordError(f"snappy data is corrupt: {e}") from None


def _snappy_decompress(data, max_size: int) -> bytes:
    mv = memoryview(data)
    n = len(mv)
    if n < 16 or mv[:8] != _XERIAL_MAGIC:
        return bytes(_raw_snappy(mv, max_size))
    # The version/compat ints are not checked: redpanda writes them little-endian and
    # every reader in the wild (kafka-python, librdkafka) ignores them.
    out = bytearray()
    pos = 16
    while pos < n:
        # snappy-java also accepts a second stream header in the middle (concatenation).
        if mv[pos:pos + 8] == _XERIAL_MAGIC:
            if n - pos < 16:
                raise CorruptRecordError(f"xerial snappy header truncated at byte {pos}")
            pos += 16
            continue
        if n - pos < 4:
            raise CorruptRecordError(f"xerial snappy chunk length truncated at byte {pos}")
        (size,) = _INT32_BE.unpack_from(mv, pos)
        pos += 4
        if size < 0 or size > n - pos:
            raise CorruptRecordError(
                f"xerial snappy chunk length {size} at byte {pos - 4} exceeds the {n - pos} bytes left"
            )
        out += _raw_snappy(mv[pos:pos + size], max_size - len(out))
        pos += size
    return bytes(out)


# --- lz4 (frame format, KafkaLZ4Block{Input,Output}Stream) -----------------------------

_LZ4_MAGIC = 0x184D2204
_LZ4_FLG = 0x60  # version 01, independent blocks, no checksums, no content size
_LZ4_BD = 0x40   # 64 KiB max block (Lz4BlockOutputStream.BLOCKSIZE_64KB)
_LZ4_BLOCK = 64 * 1024
_LZ4_DEFAULT_LEVEL = 9  # Kafka's default; Java then uses the fast (non-HC) compressor
_LZ4_RAW_BIT = 0x80000000
_U32_LE = struct.Struct("<I")

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data, seed: int = 0) -> int:
    """XXH32 in pure Python: only the LZ4 frame header (2-10 bytes) and the rare block
    checksum need it, so a C dependency is not worth it."""
    mv = memoryview(data)
    n = len(mv)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        unpack = struct.Struct("<4I").unpack_from
        while i <= n - 16:
            a, b, c, d = unpack(mv, i)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (w,) = _U32_LE.unpack_from(mv, i)
        h = (_rotl((h + w * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + mv[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h = ((h ^ (h >> 15)) * _P2) & _M32
    h = ((h ^ (h >> 13)) * _P3) & _M32
    return h ^ (h >> 16)


_LZ4_HEADER = (
    _U32_LE.pack(_LZ4_MAGIC)
    + bytes((_LZ4_FLG, _LZ4_BD, (xxh32(bytes((_LZ4_FLG, _LZ4_BD))) >> 8) & 0xFF))
)


_LZ4_LEVELS = range(1, 18)  # CompressionType.LZ4's minLevel..maxLevel
_LZ4F_BLOCK_CHECKSUM = 0x10  # FLG bit: a 4-byte checksum follows each block


def _lz4f_takes_options() -> bool:
    """Whether cramjam's lz4 Compressor (the LZ4F frame API, which honours the level) can write
    independent blocks without a content checksum, as Kafka's frames are (2.14's can; from a
    release whose Compressor lacks these keywords, compress_block is asked for HC instead)."""
    try:
        cramjam.lz4.Compressor(level=_LZ4_DEFAULT_LEVEL, content_checksum=False, block_linked=False)
    except TypeError:
        return False
    return True


_LZ4F_OPTIONS = _lz4f_takes_options()


def _lz4_frame_compress(data, level: int | None) -> bytes:
    mv = memoryview(data)
    # Lz4BlockOutputStream: fast compressor at the default level, HC otherwise.
    if level is None or level == _LZ4_DEFAULT_LEVEL:
        kwargs: dict[str, Any] = {}
    elif level not in _LZ4_LEVELS:
        raise ValueError(f"lz4 doesn't support compression level {level}")
    elif _LZ4F_OPTIONS:
        return _lz4_hc_frame(data, level)
    else:  # a cramjam without those Compressor options: ask its block compressor for HC
        kwargs = {"mode": "high_compression", "compression": level}
    out = bytearray(_LZ4_HEADER)
    for start in range(0, len(mv), _LZ4_BLOCK):
        chunk = mv[start:start + _LZ4_BLOCK]
        block = cramjam.lz4.compress_block(chunk, store_size=False, **kwargs)
        if len(block) >= len(chunk):  # incompressible: store raw, flag the high bit
            out += _U32_LE.pack(len(chunk) | _LZ4_RAW_BIT)
            out += chunk
        else:
            out += _U32_LE.pack(len(block))
            out += block
    out += b"\x00\x00\x00\x00"  # EndMark; Java writes no content checksum
    return bytes(out)


def _lz4_hc_frame(data, level: int) -> bytes:
    """Kafka's frame with the blocks liblz4's frame API compresses at ``level`` (HC; cramjam's
    block compressor ignores levels): LZ4F's frame has the same independent 64 KiB blocks, but
    its own descriptor and a checksum after each block, which are dropped here."""
    compressor = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
    compressor.compress(data if type(data) is bytes else bytes(data))  # it takes bytes only
    frame = memoryview(bytes(compressor.finish()))
    trailer = 4 if frame[4] & _LZ4F_BLOCK_CHECKSUM else 0
    out = bytearray(_LZ4_HEADER)
    pos = 7  # magic, FLG, BD, header checksum: no content size was given
    while True:
        (size,) = _U32_LE.unpack_from(frame, pos)
        end = pos + 4 + (size & ~_LZ4_RAW_BIT)
        out += frame[pos:end]
        if size == 0:  # EndMark
            return bytes(out)
        pos = end + trailer


# The descriptor checksums seen (FLG and BD bytes, without a content size: at most 65536 keys):
# every batch of a log has the same descriptor, and XXH32 in Python costs 2 us (measured).
_LZ4_DESCRIPTOR_CHECK: dict[bytes, int] = {}
# Each thread's block buffer, reused: a fresh 64 KiB bytearray is zeroed on every batch.
_LZ4_SCRATCH = threading.local()


def _lz4_descriptor_check(descriptor) -> int:
    if len(descriptor) != 2:
        return (xxh32(descriptor) >> 8) & 0xFF
    key = bytes(descriptor)
    check = _LZ4_DESCRIPTOR_CHECK.get(key)
    if check is None:
        check = _LZ4_DESCRIPTOR_CHECK[key] = (xxh32(key) >> 8) & 0xFF
    return check


def _lz4_scratch(size: int) -> bytearray:
    scratch = getattr(_LZ4_SCRATCH, "buffer", None)
    if scratch is None or len(scratch) < size:
        scratch = _LZ4_SCRATCH.buffer = bytearray(size)
    return scratch


def _lz4_frame_decompress(data, max_size: int, *, check_header: bool) -> bytes:
    mv = memoryview(data)
    n = len(mv)
    if n < 7:
        raise CorruptRecordError("LZ4 frame shorter than its 7-byte header")
    if _U32_LE.unpack_from(mv, 0)[0] != _LZ4_MAGIC:
        raise CorruptRecordError("LZ4 stream has invalid magic bytes")
    flg, bd = mv[4], mv[5]
    if flg >> 6 != 1:
        raise CorruptRecordError(f"LZ4 frame version {flg >> 6} is unsupported")
    if flg & 0x03 or bd & 0x8F:
        raise CorruptRecordError("LZ4 frame descriptor has reserved bits set")
    if not flg & 0x20:
        # Kafka never writes dependent blocks and its reader refuses them.
        raise CorruptRecordError("LZ4 dependent block stream is unsupported")
    block_checksum = flg & 0x10
    content_checksum = flg & 0x04
    size_id = (bd >> 4) & 0x07
    if size_id < 4:
        raise CorruptRecordError(f"LZ4 block size id {size_id} must be between 4 and 7")
    block_max = 1 << (2 * size_id + 8)
    pos = 6
    if flg & 0x08:
        if n - pos < 9:
            raise CorruptRecordError("LZ4 frame header truncated")
        if struct.unpack_from("<Q", mv, pos)[0] > max_size:
            raise _too_big("LZ4", max_size)
        pos += 8
    if check_header and mv[pos] != _lz4_descriptor_check(mv[4:pos]):
        raise CorruptRecordError("LZ4 frame descriptor checksum mismatch")
    pos += 1

    out = bytearray()
    scratch = _lz4_scratch(block_max)
    while True:
        if n - pos < 4:
            raise CorruptRecordError("LZ4 stream ended prematurely")
        (size,) = _U32_LE.unpack_from(mv, pos)
        pos += 4
        raw = size & _LZ4_RAW_BIT
        size &= ~_LZ4_RAW_BIT
        if size == 0:
            if content_checksum:  # Java skips it unverified; the batch CRC covers it
                if n - pos < 4:
                    raise CorruptRecordError("LZ4 stream ended prematurely")
                pos += 4
            # Like Java, bytes after the EndMark are not read.
            return bytes(out)
        if size > block_max:
            raise CorruptRecordError(f"LZ4 block size {size} exceeds max {block_max}")
        if size > n - pos:
            raise CorruptRecordError("LZ4 stream ended prematurely")
        block = mv[pos:pos + size]
        chunk = _lz4_block(block, raw, scratch, block_max)
        if len(out) + len(chunk) > max_size:
            raise _too_big("LZ4", max_size)
        if not out and not (block_checksum or content_checksum) and n - pos - size >= 4 \
                and _U32_LE.unpack_from(mv, pos + size)[0] == 0:
            return bytes(chunk)   # the one block, the EndMark next (a batch under 64 KiB): one copy
        out += chunk
        pos += size
        if block_checksum:
            if n - pos < 4:
                raise CorruptRecordError("LZ4 stream ended prematurely")
            if _U32_LE.unpack_from(mv, pos)[0] != xxh32(block):
                raise CorruptRecordError("LZ4 block checksum mismatch")
            pos += 4


def _lz4_block(block, raw: int, scratch: bytearray, block_max: int):
    """A block's bytes: itself when stored raw, else decompressed into ``scratch``."""
    if raw:
        return block
    try:
        # output_len is what says "no size prefix": without it cramjam reads the
        # block's first 4 bytes as one when they fit the buffer, and decodes garbage.
        produced = cramjam.lz4.decompress_block_into(block, scratch, output_len=block_max)
    except _DecompressionError as e:
        raise CorruptRecordError(f"LZ4 block is corrupt: {e}") from None
    return memoryview(scratch)[:produced]


# --- zstd -----------------------------------------------------------------------------

_ZSTD_MAGIC = 0xFD2FB528


def _zstd_content_size(mv) -> int | None:
    """Frame_Content_Size of the first frame, or None when the header omits it."""
    if len(mv) < 6 or _U32_LE.unpack_from(mv, 0)[0] != _ZSTD_MAGIC:
        return None
    fhd = mv[4]
    fcs_flag = fhd >> 6
    single_segment = fhd & 0x20
    dict_id_size = (0, 1, 2, 4)[fhd & 0x03]
    fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
    if fcs_size == 0:
        return None
    pos = 5 + (0 if single_segment else 1) + dict_id_size
    if len(mv) < pos + fcs_size:
        return None
    value = int.from_bytes(mv[pos:pos + fcs_size], "little")
    return value + 256 if fcs_size == 2 else value


def _zstd_decompress(data, max_size: int) -> bytes:
    mv = memoryview(data)
    first = _U32_LE.unpack_from(mv, 0)[0] if len(mv) >= 4 else 0
    if first != _ZSTD_MAGIC and first & 0xFFFFFFF0 != 0x184D2A50:  # frame or skippable frame
        raise CorruptRecordError("zstd data does not start with a zstd frame")
    # cramjam decompresses into a caller-sized buffer and fails when it is too small, so
    # the cap holds: start from the declared content size (or a guess) and grow to the cap.
    declared = _zstd_content_size(mv)
    if declared is not None and declared > max_size:
        raise _too_big("zstd", max_size)
    size = declared if declared is not None else max(4 * len(mv), 64 * 1024)
    size = min(size, max_size)
    while True:
        out = bytearray(size)
        try:
            produced = cramjam.zstd.decompress_into(mv, out)
        except _DecompressionError as e:
            if "whole buffer" not in str(e):
                raise CorruptRecordError(f"zstd data is corrupt: {e}") from None
            if size >= max_size:
                raise _too_big("zstd", max_size) from None
            size = min(max_size, max(size * 4, 64 * 1024))
            continue
        del out[produced:]
        return bytes(out)
