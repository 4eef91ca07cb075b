"""Positions in a segment from its ``.index`` and ``.timeindex``, read-only.

The indexes are how a read starts at an offset or a timestamp without scanning the
segment from its first byte, and where a large segment is cut into splits (an offset-index
entry's position is always the start of a batch). They are hints Kafka keeps, so they are
checked before they are trusted: a missing or corrupt index file, or entries past the end
of the log (a stale index after a truncation), make us fall back to byte 0 of the segment,
which is always correct, only slower.

``TimeIndex`` entries are (largest timestamp so far, offset holding it); every record
before an entry's offset has a smaller or equal timestamp, which is what makes the index
usable for a lower timestamp bound.
"""
from __future__ import annotations

import bisect
import struct

from kafkawire.storage.index import CorruptIndexError, OffsetIndex, TimeIndex

from .files import LOCAL, Files
from .layout import Segment

__all__ = ["SegmentIndexes"]

_HEAD = struct.Struct(">qi")


class SegmentIndexes:
    """Read-only lookups in one segment's indexes (loaded once, on first use; an index
    file is read whole: Kafka bounds it by segment.index.bytes, 10 MiB by default)."""

    def __init__(self, segment: Segment, files: Files = LOCAL):
        self.segment = segment
        self._files = files
        # A snapshot (or any non-segment file) has no indexes: lookups answer byte 0.
        stem = segment.path[:-len(".log")] if segment.path.endswith(".log") else None
        self._index_path = stem and stem + ".index"
        self._time_index_path = stem and stem + ".timeindex"
        self._offsets: list[tuple[int, int]] | None = None
        self._times: list[tuple[int, int]] | None = None

    # -- loading --

    def _read(self, path: str | None) -> bytes | None:
        return None if path is None else self._files.read_small(path)

    def offset_entries(self) -> list[tuple[int, int]]:
        """(offset, position) entries that point inside the log, in order; [] if unusable."""
        if self._offsets is None:
            self._offsets = []
            data = self._read(self._index_path)
            if data:
                try:
                    index = OffsetIndex.from_bytes(data, self.segment.base_offset,
                                                   file=self._index_path)
                except CorruptIndexError:
                    index = None
                if index is not None:
                    size = self.segment.size
                    entries = [(o, p) for o, p in index if p < size]
                    if entries and self._entry_matches_log(*entries[-1]):
                        self._offsets = entries
        return self._offsets

    def _entry_matches_log(self, offset: int, position: int) -> bool:
        """The batch at an entry's position starts at or before the entry's offset (the
        entry names the last offset of the append that wrote there): a cheap staleness check."""
        try:
            file = self._files.open(self.segment.path)
        except FileNotFoundError:
            return False
        try:
            head = file.pread(_HEAD.size, position)
        finally:
            file.close()
        if len(head) < _HEAD.size:
            return False
        base, size = _HEAD.unpack(head)
        return self.segment.base_offset <= base <= offset and size > 0

    def time_entries(self) -> list[tuple[int, int]]:
        """(timestamp, offset) entries, in order; [] if the file is missing or corrupt."""
        if self._times is None:
            self._times = []
            data = self._read(self._time_index_path)
            if data:
                try:
                    index = TimeIndex.from_bytes(data, self.segment.base_offset,
                                                 file=self._time_index_path)
                    self._times = list(index)
                except CorruptIndexError:
                    pass
        return self._times

    # -- lookups --

    def position_for_offset(self, offset: int) -> int:
        """A batch start at or before the batch holding ``offset`` (Kafka's lookup: the
        floor entry's position, byte 0 without one)."""
        entries = self.offset_entries()
        i = bisect.bisect_right(entries, (offset, float("inf"))) - 1
        return entries[i][1] if i >= 0 else 0

    def position_after_offset(self, offset: int) -> int | None:
        """A batch start after which no offset below ``offset`` lies, or None (read to the end).

        The entry (o, p) names the last offset o of the append written at p; the appends
        after it hold larger offsets, so the first entry past the one with o >= offset
        bounds the batches that can hold anything below ``offset``.
        """
        entries = self.offset_entries()
        i = bisect.bisect_left(entries, (offset, -1))
        return entries[i + 1][1] if i + 1 < len(entries) else None

    def position_for_timestamp(self, timestamp: int) -> int:
        """A batch start before which every record's timestamp is below ``timestamp``."""
        times = self.time_entries()
        i = bisect.bisect_left(times, (timestamp, -1)) - 1
        # Records up to entry i's offset have timestamps <= its timestamp, which is below
        # ``timestamp``: start at the batch holding the offset after it.
        return 0 if i < 0 else self.position_for_offset(times[i][1] + 1)

    def max_timestamp_hint(self) -> int | None:
        """The segment's largest timestamp as its time index records it (Kafka writes a
        final entry when it rolls a segment), or None without entries."""
        times = self.time_entries()
        return times[-1][0] if times else None

    def split_positions(self, start: int, end: int, split_bytes: int) -> list[int]:
        """Batch starts inside (start, end) that cut it into pieces of about split_bytes: the
        first index entry at or after each of start + split_bytes, start + 2 x split_bytes, ...
        (one cut for several of them that share it). Measured from ``start`` rather than from
        the last cut, so pieces do not drift longer by an index interval each, and a range of
        ``k x split_bytes`` bytes is cut into k pieces whenever its index entries are at most
        split_bytes apart (minPartitions counts on it)."""
        cuts, mark = [], start + split_bytes
        for _, p in self.offset_entries():
            if mark <= p < end:
                cuts.append(p)
                mark = start + ((p - start) // split_bytes + 1) * split_bytes
        return cuts
