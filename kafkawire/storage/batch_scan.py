"""Where a read of a segment starts and ends, found from the batches' headers alone.

A fetch needs the byte range of whole batches from the one holding its offset, cut at
``max_bytes`` (but one whole batch when ``min_one_batch``) and at an upper offset (the high
watermark or last stable offset: whole batches whose last offset is below it). Kafka's
FileRecords finds it reading each batch's header from the file (FileLogInputStream), never the
records. Reading the records to parse them, and reading them again to answer, cost most of a
consumer's fetch here; this reads the headers in small blocks (a block holds many small batches'
headers, and skips a large batch's records) and leaves the bytes to one read, or to sendfile.

Only v2 batches with a sane length are scanned; anything else (a legacy message, a corrupt or
short header) answers None, and the caller reads the old way, which raises or stops as it always
did. A batch that runs past the segment's size is a torn tail: the scan stops before it, as
LogSegment.batches does.
"""
from __future__ import annotations

import os
import struct
from typing import NamedTuple

from kafkawire.protocol.file_range import FileRange

__all__ = ["Extent", "scan_extent", "SCAN_BLOCK", "FILE_RANGE_MIN_BYTES"]

SCAN_BLOCK = 16384          # bytes read at a time for headers: ~100 small batches, or one large one's head
# base offset, batch length, partition leader epoch, magic, crc, attributes, last offset delta
_HEAD = struct.Struct(">qiibIhi")
_LOG_OVERHEAD = 12          # base offset and length, before the length's bytes
_MIN_LENGTH = 61 - _LOG_OVERHEAD     # a v2 batch's header without those 12 bytes
# Below this a range is read at once: sendfile's setup (a descriptor, waiting for the socket's
# buffer to drain) costs more than copying a few pages. Kafka sends every range from the file.
FILE_RANGE_MIN_BYTES = 64 * 1024


class Extent(NamedTuple):
    """Bytes [position, end_position) of ``segment``'s file: whole batches; ``first_offset`` is
    the base offset of the first batch the read found before any upper cut (None if it found
    none within max_bytes), as ReadResult.first_offset."""
    segment: object
    position: int
    end_position: int
    first_offset: int | None

    @property
    def size(self) -> int:
        return self.end_position - self.position

    def read(self) -> bytes:
        """The range's bytes, read from the segment's file."""
        return self.segment.read_bytes(self.position, self.size) if self.end_position > self.position else b""

    def records(self, in_file: bool) -> bytes | FileRange:
        """The range as a fetch answers it: with ``in_file``, a large range stays in the file (a
        FileRange with a descriptor of its own, for sendfile); else, for a small one, and when
        FileRange.MAX_OPEN ranges wait to be sent already, its bytes."""
        if in_file and self.size >= FILE_RANGE_MIN_BYTES:
            try:
                in_the_file = FileRange.of(self.segment.fileno(), self.position, self.size)
            except OSError:     # no descriptor to spare (EMFILE): the log is fine, read it
                in_the_file = None
            if in_the_file is not None:
                return in_the_file
        return self.read()


def scan_extent(fd: int, size: int, position: int, offset: int, max_bytes: int, min_one_batch: bool,
                upper: int | None):
    """(start, end, first base offset or None) of the read from file position ``position`` (the
    offset index's entry at or below ``offset``) in a segment file of ``size`` bytes; None when a
    header is not a v2 batch's; ``()`` when no batch at ``position`` or later holds ``offset`` or
    a later one (the next segment's turn)."""
    block, block_at = b"", position
    start = end = cut = -1
    first = None
    pos = position
    while pos < size:
        rel = pos - block_at
        if rel + _HEAD.size > len(block):
            block, block_at, rel = os.pread(fd, min(SCAN_BLOCK, size - pos), pos), pos, 0
            if len(block) < _HEAD.size:
                break       # a torn header at the end
        base, length, _epoch, magic, _crc, _attributes, delta = _HEAD.unpack_from(block, rel)
        if magic != 2 or length < _MIN_LENGTH:
            return None
        batch_end = pos + _LOG_OVERHEAD + length
        if batch_end > size:
            break           # a torn tail
        if start < 0:
            if base + delta < offset:
                pos = batch_end
                continue
            start = end = cut = pos
            first = base
        if batch_end - start > max_bytes and not (min_one_batch and end == start):
            break
        end = batch_end
        if upper is not None:
            if base + delta >= upper:
                break       # the cut: the bytes past it are not answered, no need to look further
            cut = end
        pos = batch_end
    if start < 0:
        return ()
    return start, (end if upper is None else cut), first if end > start else None
