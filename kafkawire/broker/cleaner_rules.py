"""What the log cleaner cleans, decided without I/O (Kafka's LogCleanerManager, LogToClean and the
grouping of Cleaner): the caller describes the segments, offsets and time; kafkawire.broker.log_cleaner
reads and writes the files.

    offsets = cleanable_offsets(segments, log_start_offset=0, log_end_offset=900, last_stable_offset=900,
                                checkpoint=None, min_compaction_lag_ms=0, now_ms=clock())
    candidate = log_to_clean(key, segments, offsets, max_compaction_lag_ms=..., now_ms=...)
    key = choose_filthiest([(candidate, 0.5), ...])
    groups = group_segments(segments_below_end, max_size=segment_bytes, max_index_size=..., first_uncleanable=...)

Kafka's rules:

* the dirty section starts at the ``cleaner-offset-checkpoint`` offset of the log, else at its log start
  offset; a checkpoint below the log start offset or past the log end offset is reset to the log start
  offset (and the checkpoint rewritten);
* it ends (first uncleanable offset) at the smallest of the last stable offset, the active segment's
  base offset and, with ``min.compaction.lag.ms`` > 0, the base offset of the first dirty segment whose
  largest timestamp is less than that lag old; then moved down to the base offset of its segment;
* the dirty ratio is the bytes of the segments of the dirty section over the bytes of all segments up
  to it; a log is cleanable when its ratio is above ``min.cleanable.dirty.ratio`` (strictly, as Kafka's
  ``>``), or when it must be cleaned now: a dirty inactive segment's first batch is more than
  ``max.compaction.lag.ms`` old and some bytes are cleanable; the cleaner takes the cleanable log with
  the largest ratio.
* the segments below the end of the offset map are cleaned in groups that fit ``segment.bytes`` and
  ``segment.index.bytes`` (offset and time index each) and whose offsets stay within an int32 of the
  group's base offset.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence

__all__ = ["CleanerSegment", "OffsetsToClean", "LogToClean", "cleanable_offsets", "log_to_clean",
           "choose_filthiest", "group_segments", "segments_overlapping"]

INT32_MAX = 0x7FFFFFFF


@dataclass(frozen=True)
class CleanerSegment:
    """What the cleaner's choices need of a segment: base offset, bytes, largest timestamp
    (LogSegment.largestTimestamp: the largest record timestamp, else the file's mtime), the max
    timestamp of its first batch (-1 if none), and its offset and time index sizes in bytes."""
    base_offset: int
    size: int
    largest_timestamp: int = -1
    first_batch_timestamp: int = -1
    offset_index_bytes: int = 0
    time_index_bytes: int = 0


@dataclass(frozen=True)
class OffsetsToClean:
    first_dirty_offset: int
    first_uncleanable_offset: int
    force_update_checkpoint: bool


@dataclass(frozen=True)
class LogToClean:
    key: Hashable
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def segments_overlapping(segments: Sequence[CleanerSegment], start: int, end: int) -> list[CleanerSegment]:
    """UnifiedLog.logSegments(from, to): the segments holding offsets in [start, end), from the one whose
    base offset is the floor of ``start`` (none when ``start == end``)."""
    if start >= end:
        return []
    bases = [s.base_offset for s in segments]
    first = max(bisect.bisect_right(bases, start) - 1, 0)
    return [s for s in segments[first:] if s.base_offset < end]


def _non_active_from(segments: Sequence[CleanerSegment], offset: int) -> list[CleanerSegment]:
    """LogSegments.nonActiveLogSegmentsFrom: the inactive segments from the floor of ``offset``."""
    active = segments[-1]
    if offset > active.base_offset:
        return []
    return segments_overlapping(segments[:-1], offset, active.base_offset) if len(segments) > 1 else []


def cleanable_offsets(segments: Sequence[CleanerSegment], *, log_start_offset: int, log_end_offset: int,
                      last_stable_offset: int, checkpoint: int | None, min_compaction_lag_ms: int,
                      now_ms: int) -> OffsetsToClean:
    """LogCleanerManager.cleanableOffsets (see the module docstring)."""
    checkpointed = log_start_offset if checkpoint is None else checkpoint
    force = checkpointed < log_start_offset or checkpointed > log_end_offset
    first_dirty = log_start_offset if force else checkpointed
    bounds = [last_stable_offset, segments[-1].base_offset]
    lag = max(min_compaction_lag_ms, 0)
    if lag > 0:
        for segment in _non_active_from(segments, first_dirty):
            if segment.largest_timestamp > now_ms - lag:
                bounds.append(segment.base_offset)
                break
    return OffsetsToClean(first_dirty, max(first_dirty, min(bounds)), force)


def _max_compaction_delay(segments: Sequence[CleanerSegment], first_dirty: int, max_lag_ms: int, now_ms: int) -> int:
    """How long ago the oldest dirty inactive segment's first batch passed ``max.compaction.lag.ms``; 0 if none did."""
    stamps = [s.first_batch_timestamp for s in _non_active_from(segments, first_dirty) if s.first_batch_timestamp > 0]
    clean_until = now_ms - max(max_lag_ms, 0)
    earliest = min(stamps, default=None)
    return clean_until - earliest if earliest is not None and earliest < clean_until else 0


def log_to_clean(key: Hashable, segments: Sequence[CleanerSegment], offsets: OffsetsToClean, *,
                 max_compaction_lag_ms: int, now_ms: int) -> LogToClean:
    """LogToClean: the bytes on each side of the dirty offset, and whether the maximum lag forces a clean."""
    first_dirty = offsets.first_dirty_offset
    uncleanable = _non_active_from(segments, offsets.first_uncleanable_offset)
    first_uncleanable = (uncleanable[0] if uncleanable else segments[-1]).base_offset
    clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
    cleanable_bytes = sum(s.size for s in segments_overlapping(segments, min(first_dirty, first_uncleanable),
                                                               first_uncleanable))
    delay = _max_compaction_delay(segments, first_dirty, max_compaction_lag_ms, now_ms)
    return LogToClean(key, first_dirty, first_uncleanable, clean_bytes, cleanable_bytes, delay > 0)


def choose_filthiest(candidates: Iterable[tuple[LogToClean, float]]) -> LogToClean | None:
    """grabFilthiestCompactedLog: among (log, its min.cleanable.dirty.ratio) with bytes, those that must be
    cleaned now or are dirtier than their ratio; the one with the largest dirty ratio."""
    best = None
    for candidate, min_ratio in candidates:
        if candidate.total_bytes <= 0:
            continue
        if not ((candidate.need_compaction_now and candidate.cleanable_bytes > 0)
                or candidate.cleanable_ratio > min_ratio):
            continue
        if best is None or candidate.cleanable_ratio > best.cleanable_ratio:
            best = candidate
    return best


def _last_offset_of_first(rest: Sequence[CleanerSegment], first_uncleanable: int) -> int:
    return rest[1].base_offset - 1 if len(rest) > 1 else first_uncleanable - 1


def group_segments(segments: Sequence[CleanerSegment], *, max_size: int, max_index_size: int,
                   first_uncleanable: int) -> list[list[CleanerSegment]]:
    """Cleaner.groupSegmentsBySize: consecutive segments whose sizes, offset index sizes and time index
    sizes each add up to at most the limits, and whose offsets fit an int32 past the group's base offset
    (an empty segment joins without that check)."""
    groups = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        size, index_size, time_size = group[0].size, group[0].offset_index_bytes, group[0].time_index_bytes
        while rest:
            nxt = rest[0]
            fits = (size + nxt.size <= max_size and index_size + nxt.offset_index_bytes <= max_index_size
                    and time_size + nxt.time_index_bytes <= max_index_size)
            in_range = nxt.size == 0 or \
                _last_offset_of_first(rest, first_uncleanable) - group[0].base_offset <= INT32_MAX
            if not (fits and in_range):
                break
            group.append(rest.pop(0))
            size, index_size, time_size = size + nxt.size, index_size + nxt.offset_index_bytes, \
                time_size + nxt.time_index_bytes
        groups.append(group)
    return groups
