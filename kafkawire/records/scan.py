"""Framing a log tolerantly: every entry of a buffer, a batch or what is wrong with it.

``iter_batches`` (kafkawire.records) is the strict reader: it stops at the first problem and
raises. Tools that show a damaged file (dump-log, the index checks) need the rest too, so
``scan_log`` yields, position by position, one of:

* a ``RecordBatch`` (magic 2) or ``LegacyRecordBatch`` (magic 0/1) whose framing holds (its
  CRC and records are not checked here);
* a ``Corruption``: the entry's kind of damage, where it starts, the byte at fault and why;
  when its size field can be believed (at least the smallest message, inside the buffer),
  ``next_position`` is where the next entry starts and the scan goes on there, else it ends;
* a ``TruncatedTail``: the buffer ends inside an entry (a torn write); the scan ends.

The checks come in the order of Java's FileLogInputStream.nextBatch, which is what Kafka's
DumpLogSegments shows: fewer than 18 bytes left is the end (a torn header), a size below the
smallest message (14 bytes) is corruption, a size past the end is a torn write, and only then
is the magic read.
"""
from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from .batch import RecordBatch
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from .errors import CorruptRecordError
from .layout import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET
from .legacy import RECORD_OVERHEAD_V0, LegacyRecordBatch

__all__ = ["scan_log", "believable_length", "Corruption", "TruncatedTail", "MIN_ENTRY_SIZE",
           "SIZE_BELOW_MINIMUM", "UNKNOWN_MAGIC", "UNREADABLE_BATCH"]

# Java's FileLogInputStream calls any size below the smallest (magic 0) message corrupt.
MIN_ENTRY_SIZE = RECORD_OVERHEAD_V0
_OFFSET_AND_SIZE = struct.Struct(">qi")

# The kinds of Corruption.
SIZE_BELOW_MINIMUM = "size below minimum"   # the rest of the buffer cannot be framed
UNKNOWN_MAGIC = "unknown magic"             # not 0, 1 or 2; its size is believed
UNREADABLE_BATCH = "unreadable batch"       # the batch or message reader refused its header


@dataclass(frozen=True)
class TruncatedTail:
    """The buffer ended inside a batch: the normal state of a log after a crash mid-write.

    ``position`` is where the partial batch starts (where a recovering log truncates to),
    ``available`` how many of its bytes are there, ``needed`` how many it declares (or the
    bytes needed to read a header).
    """

    position: int
    available: int
    needed: int


@dataclass(frozen=True)
class Corruption:
    """An entry that cannot be read as a batch."""

    kind: str               # SIZE_BELOW_MINIMUM, UNKNOWN_MAGIC or UNREADABLE_BATCH
    position: int           # where the entry starts
    at: int                 # the byte the reason is about
    reason: str
    size: int               # the entry's size field (the bytes after offset and size)
    magic: int              # the magic byte, signed as Java reads it (0 when not read)

    @property
    def next_position(self) -> int | None:
        """Where the next entry starts, or None when this one's size cannot be believed."""
        return None if self.kind == SIZE_BELOW_MINIMUM else self.position + LOG_OVERHEAD + self.size


def scan_log(buf, start: int = 0, end: int | None = None, *, file: str | None = None,
             max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
             ) -> Iterator[RecordBatch | LegacyRecordBatch | Corruption | TruncatedTail]:
    """Every entry of ``buf[start:end]`` in order (see the module docstring)."""
    if isinstance(buf, memoryview) and (buf.format != "B" or buf.ndim != 1):
        buf = buf.cast("B")
    end = len(buf) if end is None else end
    pos = start
    while True:
        left = end - pos
        if left <= HEADER_SIZE_UP_TO_MAGIC:
            if left > 0:
                yield TruncatedTail(pos, left, HEADER_SIZE_UP_TO_MAGIC + 1)
            return
        _, size = _OFFSET_AND_SIZE.unpack_from(buf, pos)
        if size < MIN_ENTRY_SIZE:
            yield Corruption(SIZE_BELOW_MINIMUM, pos, pos + 8, f"found record size {size} smaller than minimum "
                             f"record overhead {MIN_ENTRY_SIZE}", size, 0)
            return
        if size > left - LOG_OVERHEAD:
            yield TruncatedTail(pos, left, size + LOG_OVERHEAD)
            return
        yield _entry(buf, pos, size, file, max_decompressed_size)
        pos += LOG_OVERHEAD + size


def _entry(buf, pos: int, size: int, file: str | None, max_decompressed_size: int):
    magic = buf[pos + MAGIC_OFFSET]
    signed_magic = magic - 256 if magic > 127 else magic
    if magic > 2:
        return Corruption(UNKNOWN_MAGIC, pos, pos + MAGIC_OFFSET, f"unknown magic {signed_magic}", size, signed_magic)
    try:
        cls = RecordBatch if magic == 2 else LegacyRecordBatch
        return cls.from_buffer(buf, pos, max_decompressed_size=max_decompressed_size, file=file)
    except CorruptRecordError as exc:
        return Corruption(UNREADABLE_BATCH, pos, pos if exc.position is None else exc.position, exc.reason, size,
                          signed_magic)


def believable_length(head, available: int) -> int | None:
    """The length of the entry that starts with ``head`` (at least its first 17 bytes) and has
    ``available`` bytes from its start, if its framing can be believed: a size of at least the
    smallest message, inside those bytes, and a magic of 0, 1 or 2. None otherwise: a reader
    that lost its place there must find the next batch another way (an index entry)."""
    if len(head) < HEADER_SIZE_UP_TO_MAGIC:
        return None
    _, size = _OFFSET_AND_SIZE.unpack_from(head, 0)
    if size < MIN_ENTRY_SIZE or size + LOG_OVERHEAD > available or head[MAGIC_OFFSET] > 2:
        return None
    return size + LOG_OVERHEAD
