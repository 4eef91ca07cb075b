"""Writing v2 record batches: RecordBatchBuilder (every header field settable, so a stored
batch re-encodes byte for byte) and the one-call builders of data, control and transaction
marker batches."""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from crc32c import crc32c

from .. import _native
from . import compression as _compression
from .compression import NONE
from .native_compress import build_compressed
from .control import ControlRecordType, encode_control_key, encode_end_txn_marker
from .layout import (
    CONTROL_FLAG_MASK,
    CREATE_TIME,
    DELETE_HORIZON_FLAG_MASK,
    INT32_MAX,
    INT64_MAX,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MAGIC,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    POST_CRC,
    PRE_CRC,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
)

if TYPE_CHECKING:
    from .batch import RecordBatch

__all__ = ["RecordBatchBuilder", "build_batch", "build_control_batch", "build_end_txn_marker_batch"]


_BYTE = [bytes((i,)) for i in range(256)]


def _uvarint(z: int) -> bytes:
    """Unsigned varint of an already zigzagged value (the writer's slow path)."""
    if z < 16384:
        return _VARINT[z]
    if z >> 64:
        raise ValueError(f"value out of varlong range (zigzag {z})")
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


# Encoded varints for every zigzagged value below 2**14 (all 1- and 2-byte varints: record
# lengths, value lengths and timestamp deltas of typical records). ~0.6 MB, built once.
_VARINT = _BYTE[:128] + [bytes(((z & 0x7F) | 0x80, z >> 7)) for z in range(128, 16384)]


# With the C extension, the builder's record state and its append live in RecordWriter (C);
# the pure append below stays its oracle and takes the calls the C code does not (see there).
_WriterBase: Any = object if _native.records is None else _native.records.RecordWriter


class RecordBatchBuilder(_WriterBase):  # type: ignore[misc]
    """Write one v2 batch, with every header field settable.

    Defaults are what the Java producer writes for a plain (non-idempotent) batch:
    partition leader epoch -1 (the broker or the raft leader fills it in), producer id
    -1, producer epoch -1, base sequence -1, CREATE_TIME. Derived fields (last offset
    delta, base/max timestamp, length, record count, CRC) are computed at ``build()``
    unless given explicitly, which is how a stored batch is re-encoded exactly.
    """

    def __init__(self, *, base_offset: int = 0,
                 partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                 compression_type: int = NONE, compression_level: int | None = None,
                 timestamp_type: int = CREATE_TIME, is_transactional: bool = False,
                 is_control: bool = False, has_delete_horizon: bool = False,
                 producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                 base_sequence: int = NO_SEQUENCE, base_timestamp: int | None = None,
                 max_timestamp: int | None = None, last_offset_delta: int | None = None):
        if compression_type not in _compression.CODEC_NAMES:
            raise ValueError(f"unknown compression type {compression_type}")
        if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise ValueError(f"timestamp type must be 0 (create) or 1 (log append), not {timestamp_type}")
        if base_timestamp is not None and base_timestamp < 0 and base_timestamp != NO_TIMESTAMP \
                and not has_delete_horizon:
            raise ValueError(f"invalid base timestamp {base_timestamp}")
        _check_header_widths(base_offset=(base_offset, 64), partition_leader_epoch=(partition_leader_epoch, 32),
                             producer_id=(producer_id, 64), producer_epoch=(producer_epoch, 16),
                             base_sequence=(base_sequence, 32))
        self.base_offset = base_offset
        self.partition_leader_epoch = partition_leader_epoch
        self.compression_type = compression_type
        self.compression_level = compression_level
        self.timestamp_type = timestamp_type
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.has_delete_horizon = has_delete_horizon
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.last_offset_delta = last_offset_delta
        self._records = bytearray()
        self._count = 0
        self._last_offset_delta = -1
        self._max_record_timestamp = NO_TIMESTAMP

    @classmethod
    def from_batch(cls, batch: RecordBatch) -> RecordBatchBuilder:
        """A builder holding ``batch``'s header fields and records: ``build()`` gives back
        the same bytes for an uncompressed batch (the codec output of a compressed one
        may differ from the original compressor's)."""
        builder = cls(**batch.header_fields())
        append = builder.append
        for r in batch:
            append(r.key, r.value, r.headers, timestamp_delta=r.timestamp_delta,
                   offset_delta=r.offset_delta, attributes=r.attributes)
        return builder

    def __len__(self) -> int:
        return self._count

    def _append_pure(self, key, value, headers: Iterable = (), timestamp: int | None = None, *,
                     offset_delta: int | None = None, timestamp_delta: int | None = None,
                     attributes: int = 0) -> int:
        """Add a record; returns its offset delta.

        ``timestamp`` defaults to now (ms). The first record's timestamp becomes the
        base timestamp unless one was given. ``offset_delta`` defaults to the previous
        one plus one and must increase. ``timestamp_delta`` (raw, instead of timestamp)
        and ``attributes`` exist for exact re-encoding.
        """
        if offset_delta is None:
            offset_delta = self._last_offset_delta + 1
        elif offset_delta <= self._last_offset_delta:
            raise ValueError(f"offset delta {offset_delta} does not follow {self._last_offset_delta}")
        if not 0 <= offset_delta <= INT32_MAX:
            raise ValueError(f"offset delta {offset_delta} out of range")
        base_ts = self.base_timestamp
        if timestamp_delta is None:
            if timestamp is None:
                timestamp = int(time.time() * 1000)
            elif timestamp < 0 and timestamp != NO_TIMESTAMP:
                raise ValueError(f"invalid negative timestamp {timestamp}")
            if base_ts is None:
                base_ts = self.base_timestamp = timestamp
            timestamp_delta = timestamp - base_ts
        else:
            if timestamp is not None:
                raise ValueError("give timestamp or timestamp_delta, not both")
            if base_ts is None:
                raise ValueError("timestamp_delta needs an explicit base_timestamp")
            timestamp = base_ts + timestamp_delta
        if timestamp > self._max_record_timestamp:
            self._max_record_timestamp = timestamp

        # Each record is a list of parts joined once; 1- and 2-byte varints (nearly all
        # of them) come from a table instead of the general encoder.
        byte = _BYTE
        varint = _VARINT
        z = (timestamp_delta << 1) ^ (timestamp_delta >> 63)  # zigzag
        v = offset_delta << 1
        parts = [byte[attributes & 0xFF], varint[z] if z < 16384 else _uvarint(z),
                 varint[v] if v < 16384 else _uvarint(v)]
        add = parts.append
        if key is None:
            add(b"\x01")  # zigzag(-1): null
        else:
            v = len(key) << 1
            add(varint[v] if v < 16384 else _uvarint(v))
            add(key)
        if value is None:
            add(b"\x01")
        else:
            v = len(value) << 1
            add(varint[v] if v < 16384 else _uvarint(v))
            add(value)
        if headers:
            if not isinstance(headers, (list, tuple)):
                headers = list(headers)
            v = len(headers) << 1
            add(varint[v] if v < 16384 else _uvarint(v))
            for hkey, hvalue in headers:
                if type(hkey) is not str:
                    if hkey is None:
                        raise ValueError("record header keys cannot be null")
                    hkey = bytes(hkey)
                else:
                    hkey = hkey.encode("utf-8", "surrogateescape")
                v = len(hkey) << 1
                add(varint[v] if v < 16384 else _uvarint(v))
                add(hkey)
                if hvalue is None:
                    add(b"\x01")
                else:
                    v = len(hvalue) << 1
                    add(varint[v] if v < 16384 else _uvarint(v))
                    add(hvalue)
        else:
            add(b"\x00")
        body = b"".join(parts)
        v = len(body) << 1
        records = self._records
        records += varint[v] if v < 16384 else _uvarint(v)
        records += body
        self._count += 1
        self._last_offset_delta = offset_delta
        return offset_delta

    append = _append_pure if _WriterBase is object else _WriterBase.append

    def _append_values_pure(self, values, timestamp) -> int:
        """Add a record of each value: no key, no headers, attributes 0, offset deltas
        following the last, every one at ``timestamp`` (ms; None: now, read per record);
        returns the last offset delta. The definition of ``append_values``, whose C version
        (RecordWriter.append_values) writes a raft leader's batch of ~1000 records in one call
        instead of one append call per record."""
        append = self._append_pure
        for value in values:
            append(None, value, (), timestamp)
        return self._last_offset_delta

    append_values = _append_values_pure if _WriterBase is object else _WriterBase.append_values

    def records_bytes(self) -> bytes:
        """The uncompressed records section written so far."""
        return bytes(self._records)

    def _attributes(self) -> int:
        attributes = self.compression_type
        if self.timestamp_type == LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
        if self.is_transactional:
            attributes |= TRANSACTIONAL_FLAG_MASK
        if self.is_control:
            attributes |= CONTROL_FLAG_MASK
        if self.has_delete_horizon:
            attributes |= DELETE_HORIZON_FLAG_MASK
        return attributes

    def build(self) -> bytes:
        """The complete batch bytes, CRC included. A compressed batch is written in C when the
        extension has its codec (compress.c writes the very bytes the pure path below does)."""
        count = self._count
        last_offset_delta = self.last_offset_delta
        if last_offset_delta is None:
            last_offset_delta = max(self._last_offset_delta, 0)
        base_ts = self.base_timestamp
        if base_ts is None:
            base_ts = NO_TIMESTAMP
        max_ts = self.max_timestamp
        if max_ts is None:
            max_ts = self._max_record_timestamp if count else NO_TIMESTAMP
        if self.base_offset + last_offset_delta > INT64_MAX:
            raise ValueError(f"a batch at base offset {self.base_offset} cannot hold {last_offset_delta + 1} "
                             f"offsets: its last offset would pass {INT64_MAX}")
        post = POST_CRC.pack(self._attributes(), last_offset_delta, base_ts, max_ts,
                              self.producer_id, self.producer_epoch, self.base_sequence, count)
        payload: bytes | bytearray = self._records
        if self.compression_type != NONE:
            batch = build_compressed(self.compression_type, self.compression_level, payload,
                                     self.base_offset, self.partition_leader_epoch, post)
            if batch is not None:
                return batch
            payload = _compression.compress(self.compression_type, payload, self.compression_level)
        crc = crc32c(payload, crc32c(post))
        pre = PRE_CRC.pack(self.base_offset, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(payload),
                            self.partition_leader_epoch, MAGIC, crc)
        return b"".join((pre, post, payload))


def _check_header_widths(**fields: tuple[int, int]) -> None:
    """ValueError naming the first header field whose value does not fit its signed width."""
    for name, (value, bits) in fields.items():
        bound = 1 << (bits - 1)
        if not -bound <= value < bound:
            raise ValueError(f"batch header field {name} = {value} does not fit an int{bits}")


def build_batch(records: Iterable, **fields) -> bytes:
    """Build a batch from ``(key, value[, headers[, timestamp]])`` tuples.

    ``fields`` are RecordBatchBuilder keyword arguments.
    """
    builder = RecordBatchBuilder(**fields)
    append = builder.append
    for rec in records:
        append(*rec)
    return builder.build()


def build_control_batch(control_type: int, value, *, key_version: int = 0,
                        timestamp: int | None = None, is_transactional: bool | None = None,
                        **fields) -> bytes:
    """A control batch with one record: key = (int16 version, int16 type), value as given.

    Transaction markers (ABORT/COMMIT) are transactional batches; the KRaft control
    records are not. ``fields`` are RecordBatchBuilder keyword arguments (base_offset,
    partition_leader_epoch, producer_id, ...).
    """
    if is_transactional is None:
        is_transactional = control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT)
    builder = RecordBatchBuilder(is_control=True, is_transactional=is_transactional, **fields)
    builder.append(encode_control_key(control_type, key_version), value, (), timestamp)
    return builder.build()


def build_end_txn_marker_batch(commit: bool, *, producer_id: int, producer_epoch: int,
                               coordinator_epoch: int, timestamp: int | None = None,
                               **fields) -> bytes:
    """A COMMIT or ABORT marker, as the broker writes it for a transactional producer."""
    return build_control_batch(
        ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
        encode_end_txn_marker(coordinator_epoch), timestamp=timestamp,
        producer_id=producer_id, producer_epoch=producer_epoch, **fields)


if _native.records is not None:
    _native.records.set_pure_append(RecordBatchBuilder._append_pure)
