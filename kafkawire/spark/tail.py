"""The end of a partition's log: its log end offset and last stable offset, kept up to date
by reading batch headers from where the previous look stopped.

Only whole batches count: a batch still being written (torn tail) is not there yet, so the
end offset never points past what a task can read in full. Segments rolled since the last
look are walked in order; a segment that disappeared (retention) or shrank (truncation)
makes the tail find its place again from the offset index.

On a live broker's log, ``upto`` (the high watermark, watermarks.py) stops the tail before
the first batch that reaches past it: such a batch is not committed yet, and a transaction
marker there does not end its transaction yet (Kafka's first unstable offset counts a
transaction until its marker is below the high watermark), so the LSO is Kafka's too.
"""
from __future__ import annotations

from .files import LOCAL, Files
from .indexes import SegmentIndexes
from .layout import Segment
from .scan import Skipped, scan_batches
from .transactions import OpenTransactions

__all__ = ["LogTail"]


class LogTail:
    """Follows one partition. ``next_offset`` is the log end offset seen so far;
    ``last_stable_offset`` the LSO when transactions are tracked."""

    def __init__(self, start_offset: int | None = None, *, track_transactions: bool = False,
                 files: Files = LOCAL):
        self.next_offset = start_offset
        self._files = files
        self._from = start_offset          # batches ending before this are not noted
        self._track = track_transactions
        self._open = OpenTransactions()
        self._segment: int | None = None   # base offset of the segment being read
        self._position = 0

    @classmethod
    def at_end(cls, segments: list[Segment], files: Files = LOCAL) -> LogTail:
        """A tail that only needs the log end: it starts at the last segment's last index entry."""
        tail = cls(files=files)
        if segments:
            last = segments[-1]
            entries = SegmentIndexes(last, files).offset_entries()
            tail._segment, tail.next_offset = last.base_offset, last.base_offset
            tail._position = entries[-1][1] if entries else 0
        return tail

    @property
    def last_stable_offset(self) -> int | None:
        return None if self.next_offset is None else self._open.last_stable_offset(self.next_offset)

    def _find_place(self, segments: list[Segment]) -> None:
        target = self.next_offset
        chosen = segments[0]
        if target is not None:
            for s in segments:
                if s.base_offset <= target:
                    chosen = s
        self._segment = chosen.base_offset
        self._position = 0 if target is None else SegmentIndexes(chosen, self._files).position_for_offset(target)
        if target is None or target < chosen.base_offset:
            self.next_offset = chosen.base_offset

    def advance(self, segments: list[Segment], upto: int | None = None) -> LogTail:
        """Read the batch headers written since the last call, no further than ``upto``
        (batches ending at or below it; None: every whole batch)."""
        if not segments:
            return self
        bases = [s.base_offset for s in segments]
        here = bases.index(self._segment) if self._segment in bases else None
        if here is None or segments[here].size < self._position:
            self._find_place(segments)
            here = bases.index(self._segment)
        for i in range(here, len(segments)):
            segment = segments[i]
            if i > here:
                self._segment, self._position = segment.base_offset, 0
            position, reached = self._advance_in(segment, upto)
            self._position = position
            if self.next_offset is None or self.next_offset < segment.base_offset:
                self.next_offset = segment.base_offset
            if reached:
                break
        return self

    def _advance_in(self, segment: Segment, upto: int | None) -> tuple[int, bool]:
        """Note the batches of one segment from the tail's position; (where it stopped,
        whether it stopped at ``upto``)."""
        position = self._position
        for item in scan_batches(segment.path, position, None, segment.size, verify_crc=False,
                                 skip_corrupt=True, files=self._files):
            if isinstance(item, Skipped):
                position = item.position + item.length
                continue
            pos, batch = item
            if upto is not None and batch.next_offset > upto:
                return pos, True      # not committed yet: looked at again next time
            position = pos + batch.size_in_bytes
            if self._from is not None and batch.last_offset < self._from:
                continue
            if self._track:
                self._open.note(batch)
            if self.next_offset is None or batch.next_offset > self.next_offset:
                self.next_offset = batch.next_offset
        return position, False
