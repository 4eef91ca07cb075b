"""Kafka's producer-state snapshots (``<offset>.snapshot``, ProducerStateManager.readSnapshot).

Layout (big-endian)::

    version int16 (=1) | crc uint32 (CRC-32C of everything after it) | count int32
    count x (producerId int64, producerEpoch int16, lastSequence int32, lastOffset int64,
             offsetDelta int32, timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64)
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from crc32c import crc32c

__all__ = ["ProducerSnapshotEntry", "ProducerSnapshotError", "encode_producer_snapshot", "read_producer_snapshot",
           "snapshot_file_name"]

SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")
_ENTRY = struct.Struct(">qhiqiqiq")
_VERSION_CRC = struct.Struct(">hI")
_COUNT = struct.Struct(">i")


class ProducerSnapshotError(ValueError):
    """A snapshot Kafka would refuse (CorruptSnapshotException); ``position`` is the byte at fault."""

    def __init__(self, message: str, position: int | None):
        super().__init__(message)
        self.position = position


class ProducerSnapshotEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    current_txn_first_offset: int      # -1: no transaction open
    timestamp: int
    last_sequence: int
    first_sequence: int                # lastSequence - offsetDelta, wrapped as Java's decrementSequence
    last_offset: int                   # -1: no batch metadata kept
    offset_delta: int


def read_producer_snapshot(data) -> list[ProducerSnapshotEntry]:
    """The entries of a snapshot file's bytes; ProducerSnapshotError with Kafka's message (and
    the byte position) for a short file, an unknown version, a CRC mismatch or a bad count."""
    if len(data) < 10:
        raise ProducerSnapshotError(f"Snapshot of {len(data)} bytes is too short for its 10-byte header", 0)
    version, crc, count = _HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise ProducerSnapshotError(f"Snapshot contained an unknown file version {version}", 0)
    computed = crc32c(memoryview(data)[6:])
    if computed != crc:
        raise ProducerSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                    f"Computed crc: {computed}", 2)
    if count < 0 or count * _ENTRY.size != len(data) - 10:
        raise ProducerSnapshotError(f"Snapshot declares {count} entries but holds {len(data) - 10} bytes of "
                                    f"entries ({_ENTRY.size} bytes each)", 6)
    entries = []
    for pid, epoch, last_seq, last_offset, offset_delta, ts, coordinator_epoch, txn_first in \
            _ENTRY.iter_unpack(data[10:]):
        first_seq = last_seq - offset_delta
        if first_seq < 0:
            first_seq += 0x80000000  # DefaultRecordBatch.decrementSequence wraps
        entries.append(ProducerSnapshotEntry(pid, epoch, coordinator_epoch, txn_first, ts, last_seq, first_seq,
                                             last_offset, offset_delta))
    return entries


def encode_producer_snapshot(entries) -> bytes:
    """A snapshot file's bytes for ``entries`` (ProducerSnapshotEntry, or anything with the same
    fields), as ProducerStateManager.writeSnapshot lays them out: version 1, the CRC-32C of what
    follows it, the count, then one fixed-size entry per producer."""
    body = bytearray()
    count = 0
    for e in entries:
        body += _ENTRY.pack(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
                            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
        count += 1
    after_crc = _COUNT.pack(count) + bytes(body)
    return _VERSION_CRC.pack(SNAPSHOT_VERSION, crc32c(after_crc)) + after_crc


def snapshot_file_name(offset: int) -> str:
    """LogFileUtils.producerSnapshotFile: the offset on 20 digits, then ``.snapshot``."""
    return f"{offset:020d}.snapshot"
