"""Legacy message sets, magic 0 and 1 (LegacyRecord / AbstractLegacyRecordBatch). Read-only.

Before v2 every message stood alone in the log::

    offset int64 | size int32 | crc uint32 (CRC-32 of magic..end) | magic int8
    attributes int8 (bits 0-2 codec, bit 3 timestamp type in v1) | [timestamp int64, v1]
    keyLength int32 (-1 null) | key | valueLength int32 (-1 null) | value

Compression wrapped a whole message set in one "wrapper" message whose value is the
compressed inner messages. The wrapper's offset is the offset of the LAST inner message.
Inside a v1 wrapper the inner offsets are relative (0, 1, ...), so the absolute offset is
``wrapper_offset - last_inner_offset + inner_offset``; v0 wrappers carry absolute inner
offsets. A v1 wrapper with LOG_APPEND_TIME gives its timestamp to every inner message.

Java treats each top-level message as a "batch", and so do we: ``LegacyRecordBatch``
has the same read surface as ``RecordBatch`` (offsets, crc, compression, iteration).

Also here: ``iter_kafka07_messages`` for Kafka 0.7 logs (no offsets, CRC of the payload
only), which only matters for reading historic fixtures.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from collections.abc import Iterator

from . import compression as _compression
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE, NONE, ZSTD
from .errors import CorruptRecordError

__all__ = ["LegacyRecordBatch", "LegacyRecord", "Kafka07Message", "iter_kafka07_messages"]

_LOG_HEADER = struct.Struct(">qi")   # offset, size
_V0_HEADER = struct.Struct(">IbB")   # crc, magic, attributes (after offset+size)
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")

from .layout import LOG_OVERHEAD
CRC_OFFSET = 12                      # within the entry, after offset+size
MAGIC_OFFSET = 16
RECORD_OVERHEAD_V0 = 14              # crc, magic, attributes, key length, value length
RECORD_OVERHEAD_V1 = 22              # ... plus the timestamp
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE = 0, 1, -1
NO_TIMESTAMP = -1


class LegacyRecord:
    """One message of a magic 0/1 message set (a plain one, or one inside a wrapper)."""

    __slots__ = ("offset", "timestamp", "timestamp_type", "key", "value", "magic",
                 "attributes", "crc")

    headers = ()          # headers arrived with v2
    sequence = -1
    is_control = False

    def __init__(self, offset, timestamp, timestamp_type, key, value, magic, attributes, crc):
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.magic = magic
        self.attributes = attributes
        self.crc = crc

    def __repr__(self):
        return (f"LegacyRecord(offset={self.offset}, magic={self.magic}, timestamp={self.timestamp}, "
                f"key={None if self.key is None else bytes(self.key)!r}, "
                f"value={None if self.value is None else bytes(self.value[:64])!r})")


class LegacyRecordBatch:
    """One top-level legacy message: a plain message, or a compressed wrapper."""

    __slots__ = ("offset", "size", "crc", "magic", "attributes", "timestamp", "key", "value",
                 "position", "file", "max_decompressed_size", "_buf", "_inner")
    offset: int
    size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: memoryview | None                   # slices of the buffer, not copies
    value: memoryview | None
    position: int
    file: str | None
    max_decompressed_size: int
    _buf: bytes | bytearray | memoryview | mmap.mmap
    _inner: list[LegacyRecord] | None        # a wrapper's records, once read

    @classmethod
    def from_buffer(cls, buf, offset: int = 0, *,
                    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                    file: str | None = None) -> LegacyRecordBatch:
        """Parse the legacy message at ``buf[offset:]``; raise CorruptRecordError if its
        framing is wrong. The CRC is checked by ``verify_crc``."""
        if isinstance(buf, memoryview) and (buf.format != "B" or buf.ndim != 1):
            buf = buf.cast("B")
        self = cls.__new__(cls)
        self.position = offset
        self.file = file
        self.max_decompressed_size = max_decompressed_size
        self._buf = buf
        self._inner = None
        fields = _parse_message(buf, offset, len(buf), lambda reason, pos: CorruptRecordError(reason, pos, file))
        (self.offset, self.size, self.crc, self.magic, self.attributes, self.timestamp,
         self.key, self.value) = fields
        return self

    # -- RecordBatch-like surface --

    @property
    def compression_type(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        if self.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    @property
    def base_offset(self) -> int:
        """First offset: needs the inner messages of a wrapper (as in Java)."""
        if self.compression_type == NONE:
            return self.offset
        return self._inner_records()[0].offset

    @property
    def size_in_bytes(self) -> int:
        return self.size + LOG_OVERHEAD

    @property
    def end_position(self) -> int:
        return self.position + self.size + LOG_OVERHEAD

    @property
    def raw(self) -> memoryview:
        return memoryview(self._buf)[self.position:self.end_position]

    partition_leader_epoch = -1
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1
    last_sequence = -1
    is_transactional = False
    is_control = False

    def compute_crc(self) -> int:
        return zlib.crc32(memoryview(self._buf)[self.position + MAGIC_OFFSET:self.end_position])

    @property
    def is_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def verify_crc(self) -> None:
        computed = self.compute_crc()
        if computed != self.crc:
            raise CorruptRecordError(
                f"message CRC-32 mismatch: stored 0x{self.crc:08x}, computed 0x{computed:08x}",
                self.position + CRC_OFFSET, self.file)

    def __iter__(self) -> Iterator[LegacyRecord]:
        if self.compression_type == NONE:
            return iter((LegacyRecord(self.offset, self.timestamp, self.timestamp_type, self.key,
                                      self.value, self.magic, self.attributes, self.crc),))
        return iter(self._inner_records())

    def records(self) -> list[LegacyRecord]:
        return list(self)

    # -- wrapper (compressed) messages --

    def _inner_records(self) -> list[LegacyRecord]:
        if self._inner is None:
            self._inner = self._read_inner()
        return self._inner

    def _read_inner(self) -> list[LegacyRecord]:
        codec = self.compression_type
        batch_pos, file = self.position, self.file
        if codec == ZSTD or codec not in _compression.CODEC_NAMES:
            raise CorruptRecordError(f"invalid compression type {codec} for magic {self.magic}",
                                     batch_pos + MAGIC_OFFSET + 1, file)
        if self.value is None:
            raise CorruptRecordError(
                f"found invalid compressed record set with null value (magic = {self.magic})",
                batch_pos, file)
        try:
            data = _compression.decompress(codec, self.value, max_size=self.max_decompressed_size,
                                           magic=self.magic)
        except CorruptRecordError as e:
            raise CorruptRecordError(f"{e.reason} (value of a compressed wrapper message)",
                                     batch_pos, file) from None

        def fail(reason, pos):
            return CorruptRecordError(f"{reason} (byte {pos} of the decompressed wrapper value)",
                                      batch_pos, file)

        inner = []
        pos, end = 0, len(data)
        while pos < end:
            fields = _parse_message(data, pos, end, fail)
            offset, size, crc, magic, attributes, timestamp, key, value = fields
            if attributes & COMPRESSION_CODEC_MASK:
                raise fail("inner messages must not be compressed", pos)
            if magic == 0:
                ts_type = NO_TIMESTAMP_TYPE
            elif self.magic == 1 and self.attributes & TIMESTAMP_TYPE_MASK:
                ts_type, timestamp = LOG_APPEND_TIME, self.timestamp
            else:
                ts_type = LOG_APPEND_TIME if attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME
            inner.append(LegacyRecord(offset, timestamp, ts_type, key, value, magic, attributes, crc))
            pos += size + LOG_OVERHEAD
        if not inner:
            raise CorruptRecordError("found invalid compressed record set with no inner records",
                                     batch_pos, file)
        if self.magic == 1:
            wrapper_offset = self.offset
            last_inner = inner[-1].offset
            if wrapper_offset == 0:
                base = 0  # librdkafka produce requests leave the wrapper offset at 0
            elif wrapper_offset < last_inner:
                raise CorruptRecordError(
                    f"found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"{wrapper_offset} is less than the last inner message offset {last_inner} "
                    f"and it is not zero", batch_pos, file)
            else:
                base = wrapper_offset - last_inner
            for record in inner:
                record.offset += base
        return inner

    def __repr__(self):
        return (f"LegacyRecordBatch(offset={self.offset}, magic={self.magic}, "
                f"compression={_compression.CODEC_NAMES.get(self.compression_type)}, "
                f"size={self.size_in_bytes}, position={self.position})")


def _parse_message(buf, pos: int, end: int, fail):
    """Parse one legacy entry at ``buf[pos:end]``; returns its fields with key/value as
    memoryviews. Every length is checked before use."""
    left = end - pos
    if left < LOG_OVERHEAD + RECORD_OVERHEAD_V0:
        raise fail(f"truncated message: {left} bytes left", pos)
    offset, size = _LOG_HEADER.unpack_from(buf, pos)
    crc, magic, attributes = _V0_HEADER.unpack_from(buf, pos + LOG_OVERHEAD)
    if magic not in (0, 1):
        raise fail(f"magic {magic} is not a legacy message", pos + MAGIC_OFFSET)
    overhead = RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1
    if size < overhead:
        raise fail(f"message size {size} is smaller than the minimum overhead {overhead} for magic {magic}", pos + 8)
    if size > left - LOG_OVERHEAD:
        raise fail(f"truncated message: it declares {size + LOG_OVERHEAD} bytes but only {left} are left", pos + 8)
    msg_end = pos + LOG_OVERHEAD + size
    p = pos + LOG_OVERHEAD + 6
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(buf, p)
        p += 8
    else:
        timestamp = NO_TIMESTAMP
    mv = memoryview(buf)
    fields: list[memoryview | None] = []
    for what in ("key", "value"):
        if msg_end - p < 4:
            raise fail(f"message ends before its {what} length", p)
        (n,) = _INT32.unpack_from(buf, p)
        p += 4
        if n == -1:
            fields.append(None)
        elif 0 <= n <= msg_end - p:
            fields.append(mv[p:p + n])
            p += n
        else:
            raise fail(f"invalid {what} length {n}: {msg_end - p} bytes left in the message", p - 4)
    if p != msg_end:
        raise fail(f"message has {msg_end - p} bytes after its value", p)
    return offset, size, crc, magic, attributes, timestamp, fields[0], fields[1]


# --- Kafka 0.7 ------------------------------------------------------------------------

class Kafka07Message:
    """A Kafka 0.7 log entry: ``size int32, magic int8, [attributes int8 if magic 1],
    crc uint32 (CRC-32 of the payload), payload``. There were no offsets: a message's
    id was its byte position in the log."""

    __slots__ = ("position", "magic", "attributes", "crc", "payload")

    def __init__(self, position, magic, attributes, crc, payload):
        self.position = position
        self.magic = magic
        self.attributes = attributes
        self.crc = crc
        self.payload = payload

    @property
    def is_valid(self) -> bool:
        return zlib.crc32(self.payload) == self.crc


def iter_kafka07_messages(buf, start: int = 0, *, verify_crc: bool = True,
                          file: str | None = None) -> Iterator[Kafka07Message]:
    """Walk a Kafka 0.7 log; a partial last entry ends the walk (0.7 had torn tails too)."""
    mv = memoryview(buf)
    pos, end = start, len(mv)
    while end - pos >= 4:
        (size,) = _INT32.unpack_from(mv, pos)
        if size < 5:
            raise CorruptRecordError(f"0.7 message size {size} is too small", pos, file)
        if size > end - pos - 4:
            return
        magic = mv[pos + 4]
        if magic == 0:
            attributes, header = 0, 5
        elif magic == 1:
            if size < 6:
                raise CorruptRecordError(f"0.7 message size {size} is too small", pos, file)
            attributes, header = mv[pos + 5], 6
        else:
            raise CorruptRecordError(f"0.7 message magic {magic} is unknown", pos + 4, file)
        (crc,) = struct.unpack_from(">I", mv, pos + header)
        message = Kafka07Message(pos, magic, attributes, crc, mv[pos + header + 4:pos + 4 + size])
        if verify_crc and not message.is_valid:
            raise CorruptRecordError("0.7 message CRC-32 mismatch", pos, file)
        yield message
        pos += 4 + size
