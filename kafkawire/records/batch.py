"""Magic v2 record batches (DefaultRecordBatch / DefaultRecord in the Java client).

Layout (big-endian; the records are varint-framed)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 (=2)
    crc uint32 (CRC-32C of attributes..end) | attributes int16 | lastOffsetDelta int32
    baseTimestamp int64 | maxTimestamp int64 | producerId int64 | producerEpoch int16
    baseSequence int32 | recordsCount int32 | records (compressed as one stream if the
    codec bits are set)

    record: length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
            keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value
            headerCount varint | headers: keyLength varint, key (UTF-8, not nullable),
                                          valueLength varint (-1 = null), value

This module is the reader; the record objects are in ``record``, their decoding loop in
``record_decoding``, the writer in ``builder`` and the layout constants in ``layout``; the
names of all of them stay importable from here.

The reader is lazy: ``RecordBatch.from_buffer`` parses the 61-byte header and checks the
framing; the CRC is checked on request (``verify_crc`` / ``is_valid``), as the Java
``ensureValid`` is; records are decoded while iterating, with keys, values and header
values as memoryview slices of the buffer (or of the decompressed records) - no copies.
Every length is checked against the bytes left before it is used, so hostile input only
ever raises CorruptRecordError.

Why ``struct`` and not ``construct`` for the header: measured on this machine (CPython
3.11, construct 2.10.70 with ``.compile()``), parsing the 61-byte header took 142 ns with
``struct.Struct.unpack_from`` and 4,678 ns with the compiled construct Struct; building
took 200 ns vs 5,463 ns. construct is ~30x slower here, so the header is a precompiled
``struct.Struct``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from crc32c import crc32c

from . import compression as _compression
from .builder import RecordBatchBuilder, build_batch, build_control_batch, build_end_txn_marker_batch
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE, NONE
from .errors import CorruptRecordError
# The layout names are imported from here too (dump-log, tests): they stay importable.
from .layout import (  # noqa: F401
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    CREATE_TIME,
    DELETE_HORIZON_FLAG_MASK,
    HEADER,
    HEADER_SIZE_UP_TO_MAGIC,
    INT32_MAX,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    MIN_RECORD_SIZE,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)
from .record import ControlRecord, Record
from .record_decoding import decode_records
from .. import _native as _native_module

_native_decode_values = None if _native_module.records is None else _native_module.records.decode_values

__all__ = [
    "RecordBatch",
    "Record",
    "ControlRecord",
    "RecordBatchBuilder",
    "build_batch",
    "build_control_batch",
    "build_end_txn_marker_batch",
]

_INT32 = struct.Struct(">i")
_EMPTY = ()


def _as_bytes_buffer(buf):
    """Index-able as unsigned bytes: bytes, bytearray, mmap and 'B' memoryviews are."""
    if isinstance(buf, memoryview) and (buf.format != "B" or buf.ndim != 1):
        return buf.cast("B")
    return buf


class RecordBatch:
    """A v2 record batch read lazily from a buffer (see the module docstring)."""

    __slots__ = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc",
                 "attributes", "last_offset_delta", "base_timestamp", "max_timestamp",
                 "producer_id", "producer_epoch", "base_sequence", "records_count",
                 "position", "file", "max_decompressed_size", "_buf", "_decompressed")
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int
    file: str | None
    max_decompressed_size: int
    _buf: Any
    _decompressed: bytes | None

    @classmethod
    def from_buffer(cls, buf, offset: int = 0, *,
                    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                    file: str | None = None) -> RecordBatch:
        """Parse the batch header at ``buf[offset:]`` and check its framing.

        Raises CorruptRecordError if the bytes are too short, the magic is not 2, or the
        declared length is below the 61-byte header or beyond the buffer. Does not check
        the CRC (call ``verify_crc``).
        """
        buf = _as_bytes_buffer(buf)
        left = len(buf) - offset
        if offset < 0 or left < 0:
            raise ValueError(f"offset {offset} outside a buffer of {len(buf)} bytes")
        if left < HEADER_SIZE_UP_TO_MAGIC:
            raise CorruptRecordError(
                f"truncated record batch: {left} bytes left, {HEADER_SIZE_UP_TO_MAGIC} needed to read the magic",
                offset, file)
        magic = buf[offset + MAGIC_OFFSET]
        if magic != MAGIC:
            raise CorruptRecordError(
                f"magic {magic - 256 if magic > 127 else magic} is not a v2 record batch", offset + MAGIC_OFFSET, file)
        (length,) = _INT32.unpack_from(buf, offset + 8)
        if length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
            raise CorruptRecordError(
                f"record batch size {length + LOG_OVERHEAD} is smaller than the minimum "
                f"allowed overhead {RECORD_BATCH_OVERHEAD}", offset + 8, file)
        if length > left - LOG_OVERHEAD:
            raise CorruptRecordError(
                f"truncated record batch: it declares {length + LOG_OVERHEAD} bytes but "
                f"only {left} are left", offset + 8, file)
        self = cls.__new__(cls)
        (self.base_offset, self.batch_length, self.partition_leader_epoch, self.magic,
         self.crc, self.attributes, self.last_offset_delta, self.base_timestamp,
         self.max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence,
         self.records_count) = HEADER.unpack_from(buf, offset)
        self.position = offset
        self.file = file
        self.max_decompressed_size = max_decompressed_size
        self._buf = buf
        self._decompressed = None
        return self

    # -- derived header fields (Java names in snake_case) --

    @property
    def compression_type(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        return CREATE_TIME if not self.attributes & TIMESTAMP_TYPE_MASK else LOG_APPEND_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        """With the delete-horizon flag (KIP-534) the base timestamp holds the horizon."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        seq = self.base_sequence + self.last_offset_delta
        return seq - 0x80000000 if seq > INT32_MAX else seq

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def end_position(self) -> int:
        """Where the next batch starts in the buffer."""
        return self.position + self.batch_length + LOG_OVERHEAD

    @property
    def raw(self) -> memoryview:
        """The batch's bytes, as stored."""
        return memoryview(self._buf)[self.position:self.end_position]

    @property
    def records_data(self) -> memoryview:
        """The records section as stored (compressed if the batch is)."""
        return memoryview(self._buf)[self.position + RECORD_BATCH_OVERHEAD:self.end_position]

    # -- integrity --

    def compute_crc(self) -> int:
        return crc32c(memoryview(self._buf)[self.position + ATTRIBUTES_OFFSET:self.end_position])

    @property
    def is_valid(self) -> bool:
        return self.compute_crc() == self.crc

    def verify_crc(self) -> None:
        computed = self.compute_crc()
        if computed != self.crc:
            raise CorruptRecordError(
                f"record batch CRC-32C mismatch: stored 0x{self.crc:08x}, computed 0x{computed:08x}",
                self.position + CRC_OFFSET, self.file)

    # -- records --

    def decompressed_records(self) -> bytes | memoryview:
        """The uncompressed records section (decompressed once, then cached)."""
        if self.compression_type == NONE:
            return self.records_data
        if self._decompressed is None:
            try:
                self._decompressed = _compression.decompress(
                    self.compression_type, self.records_data, max_size=self.max_decompressed_size)
            except CorruptRecordError as e:
                raise CorruptRecordError(
                    f"{e.reason} (records of a {_compression.CODEC_NAMES.get(self.compression_type, '?')} batch)",
                    self.position + RECORD_BATCH_OVERHEAD, self.file) from None
        return self._decompressed

    def fail_at(self, compressed: bool):
        """``fail(reason, pos)`` for the record decoders: the CorruptRecordError of a byte of
        the records (of the decompressed records when ``compressed``)."""
        file = self.file
        if not compressed:
            return lambda reason, pos: CorruptRecordError(reason, pos, file)
        batch_pos = self.position

        def fail(reason, pos):
            return CorruptRecordError(
                f"{reason} (byte {pos} of the decompressed records)", batch_pos, file)
        return fail

    def records_range(self) -> tuple[Any, int, int, int, bool]:
        """(data, start, end, count, compressed): where the records are (decompressed if the
        batch is), once the count is checked; count 0 means none to read (Java returns an
        empty iterator without looking at the records)."""
        count = self.records_count
        if count == 0:
            return self._buf, 0, 0, 0, False
        if count < 0:
            raise CorruptRecordError(f"found invalid record count {count} in magic v2 batch",
                                     self.position + RECORD_BATCH_OVERHEAD - 4, self.file)
        compressed = self.compression_type != NONE
        if compressed:
            data = self.decompressed_records()
            start, end = 0, len(data)
        else:
            data = self._buf
            start, end = self.position + RECORD_BATCH_OVERHEAD, self.end_position
        if count > (end - start) // MIN_RECORD_SIZE:
            raise CorruptRecordError(
                f"record count {count} cannot fit in {end - start} bytes of records",
                self.position + RECORD_BATCH_OVERHEAD - 4, self.file)
        return data, start, end, count, compressed

    def __iter__(self) -> Iterator[Record]:
        data, start, end, count, compressed = self.records_range()
        if count == 0:
            return iter(_EMPTY)
        return decode_records(
            data, start, end, count, self.base_offset, self.base_timestamp,
            self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None,
            self, ControlRecord if self.is_control else Record,
            self.fail_at(compressed))

    def records(self) -> list[Record]:
        return list(self)

    def values(self) -> list[bytes]:
        """Every record's value as bytes, in order (what a raft node hands its listeners); by
        definition ``[bytes(r.value) for r in self]``, so a null value raises TypeError and a
        bad record CorruptRecordError. With the C extension, one call makes the bytes without a
        Record object or a memoryview per record."""
        decode = _native_decode_values
        if decode is None or self.is_control:
            return [bytes(r.value) for r in self]
        data, start, end, count, compressed = self.records_range()
        if count == 0:
            return []
        try:
            values, error = decode(data, start, end, count, self.base_offset, self.base_timestamp,
                                   self.max_timestamp if self.attributes & TIMESTAMP_TYPE_MASK else None)
        except BufferError:     # not one contiguous run of bytes: the pure definition reads it
            return [bytes(r.value) for r in self]
        if None in values:      # a null value (before any bad record): the definition's TypeError
            return [bytes(r.value) for r in self]
        if error is not None:
            raise self.fail_at(compressed)(*error)
        return values

    def __len__(self) -> int:
        return max(self.records_count, 0)

    def header_fields(self) -> dict:
        """The settable header fields, as RecordBatchBuilder keyword arguments."""
        return dict(
            base_offset=self.base_offset,
            partition_leader_epoch=self.partition_leader_epoch,
            compression_type=self.compression_type,
            timestamp_type=self.timestamp_type,
            is_transactional=self.is_transactional,
            is_control=self.is_control,
            has_delete_horizon=self.has_delete_horizon,
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence,
            base_timestamp=self.base_timestamp,
            max_timestamp=self.max_timestamp,
            last_offset_delta=self.last_offset_delta,
        )

    def __repr__(self):
        return (f"RecordBatch(offsets=[{self.base_offset}, {self.last_offset}], "
                f"records={self.records_count}, epoch={self.partition_leader_epoch}, "
                f"compression={_compression.CODEC_NAMES.get(self.compression_type, self.compression_type)}, "
                f"control={self.is_control}, transactional={self.is_transactional}, "
                f"producer=({self.producer_id}, {self.producer_epoch}, {self.base_sequence}), "
                f"size={self.size_in_bytes}, position={self.position})")
