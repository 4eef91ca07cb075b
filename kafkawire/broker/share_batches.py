"""The batches a ShareFetch reads, as a share-partition sees them: each stored batch's offsets,
whether it is a control batch, its producer and whether it is transactional, read from its
header in place (nothing decoded), and, for ``share.isolation.level=read_committed``, which
batches belong to aborted transactions, as Kafka's SharePartition filters them (the consumer's
algorithm: an aborted transaction of a producer starts at its first offset and ends at the
producer's next control batch, its marker).

    bounds = list(batch_bounds(data))
    deliverable(bounds, aborted)        # [(first, last, skip)]: skip = never deliver (archive)
"""
from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = ["Bounds", "batch_bounds", "deliverable"]

_HEAD = struct.Struct(">qi")            # base offset, batch length
_PRODUCER = struct.Struct(">q")         # at byte 43 of a v2 batch
CONTROL, TRANSACTIONAL = 0x20, 0x10     # attribute bits
MIN_V2_LENGTH = 49                      # a v2 batch's length field without records


class Bounds(NamedTuple):
    first: int
    last: int
    is_control: bool
    start: int                          # byte position in the data read
    end: int
    producer_id: int
    transactional: bool


def batch_bounds(data: bytes):
    """The Bounds of each whole batch of ``data`` (a partial one at the end is left out)."""
    position, size = 0, len(data)
    while position + 12 <= size:
        base, length = _HEAD.unpack_from(data, position)
        end = position + 12 + length
        if end > size or length < 14:
            return
        if data[position + 16] < 2:         # a legacy message set entry: its offset is its last
            yield Bounds(base, base, False, position, end, -1, False)
        else:
            if length < MIN_V2_LENGTH:
                return
            attributes = int.from_bytes(data[position + 21:position + 23], "big")
            last_delta = int.from_bytes(data[position + 23:position + 27], "big", signed=True)
            producer_id, = _PRODUCER.unpack_from(data, position + 43)
            yield Bounds(base, base + last_delta, bool(attributes & CONTROL), position, end, producer_id,
                         bool(attributes & TRANSACTIONAL))
        position = end


def deliverable(bounds: list, aborted=()) -> list[tuple[int, int, bool]]:
    """(first, last, skip) per batch: control batches skipped, and with ``aborted`` (the aborted
    transactions overlapping the read, each with ``producer_id`` and ``first_offset``: what
    read_committed gets) the transactional batches of those transactions too."""
    pending = sorted(aborted, key=lambda a: a.first_offset)
    index, open_aborted, out = 0, set(), []
    for b in bounds:
        while index < len(pending) and pending[index].first_offset <= b.last:
            open_aborted.add(pending[index].producer_id)
            index += 1
        if b.is_control:
            open_aborted.discard(b.producer_id)         # the marker ends the producer's transaction
            out.append((b.first, b.last, True))
        else:
            out.append((b.first, b.last, b.transactional and b.producer_id in open_aborted))
    return out
