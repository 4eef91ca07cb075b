"""Which segments of a partition log retention deletes, decided without I/O (Kafka's
UnifiedLog.deleteOldSegments): the caller describes the segments, the offsets and the time, and
applies the answer (kafkawire.broker.log_manager).

    decision = segments_to_delete([SegmentView(0, 1000, ts0), SegmentView(17, 200, ts1)],
                                  log_start_offset=0, log_end_offset=20, high_watermark=20,
                                  settings=LogSettings(retention_ms=...), now_ms=clock())
    decision.count, decision.roll_first, decision.log_start_offset

Kafka's rules, in its order of passes, each on what the previous ones left:

1. the segments wholly below the log start offset (a DeleteRecords moved it), whatever the policy;
2. with ``delete`` in ``cleanup.policy``, the oldest segments while the log stays at least
   ``retention.bytes`` without them (-1: no limit);
3. with ``delete``, the oldest segments whose largest timestamp (the largest record timestamp,
   else the file's last modification) is more than ``retention.ms`` before now (-1: no limit).

Each pass takes segments from the oldest and stops at the first that is not deletable; a segment
is deletable only when all its offsets are below the high watermark, and an empty last segment
never is. The active segment is deleted as the others when it qualifies: a new empty one is
rolled first (``roll_first``), so a log always has a segment. After a pass the log start offset
is the base offset of the first segment left.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .log_config import LogSettings

__all__ = ["RetentionDecision", "SegmentView", "segments_to_delete"]

START_OFFSET, SIZE, TIME = "log start offset breach", "retention size breach", "retention time breach"


@dataclass(frozen=True)
class SegmentView:
    """What retention needs of a segment: its base offset, size in bytes and largest timestamp
    (LogSegment.largestTimestamp: the largest record timestamp, else the file's mtime)."""
    base_offset: int
    size: int
    largest_timestamp: int


@dataclass(frozen=True)
class RetentionDecision:
    count: int                       # the oldest segments to delete
    roll_first: bool                 # every segment goes: roll an empty active segment first
    log_start_offset: int            # the log start offset once they are gone
    reasons: tuple[str, ...] = ()    # the passes that deleted something

    @property
    def nothing(self) -> bool:
        return self.count == 0


def _deletable_prefix(segments: Sequence[SegmentView], high_watermark: int, log_end_offset: int,
                      deletable: Callable[[SegmentView, SegmentView | None], bool]) -> int:
    """UnifiedLog.deletableSegments: how many of the oldest segments ``deletable`` takes."""
    count = 0
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        upper = following.base_offset if following is not None else log_end_offset
        last_and_empty = following is None and segment.size == 0
        if high_watermark >= upper and deletable(segment, following) and not last_and_empty:
            count += 1
        else:
            break
    return count


def _start_offset_pass(log_start_offset: int):
    return lambda segment, following: following is not None and following.base_offset <= log_start_offset


def _size_pass(segments: Sequence[SegmentView], retention_bytes: int):
    """None when the log is within retention.bytes (or it is unlimited)."""
    size = sum(s.size for s in segments)
    if retention_bytes < 0 or size < retention_bytes:
        return None
    excess = [size - retention_bytes]

    def deletable(segment: SegmentView, following) -> bool:
        if excess[0] - segment.size < 0:
            return False
        excess[0] -= segment.size
        return True
    return deletable


def _time_pass(retention_ms: int, now_ms: int):
    if retention_ms < 0:
        return None
    return lambda segment, following: now_ms - segment.largest_timestamp > retention_ms


def segments_to_delete(segments: Sequence[SegmentView], *, log_start_offset: int, log_end_offset: int,
                       high_watermark: int, settings: LogSettings, now_ms: int) -> RetentionDecision:
    """The oldest segments Kafka's retention deletes now (see the module docstring)."""
    left = list(segments)
    count, roll_first, reasons = 0, False, []
    passes = [(START_OFFSET, lambda rest: _start_offset_pass(log_start_offset))]
    if settings.delete:
        passes += [(SIZE, lambda rest: _size_pass(rest, settings.retention_bytes)),
                   (TIME, lambda rest: _time_pass(settings.retention_ms, now_ms))]
    for reason, make in passes:
        deletable = make(left)
        if deletable is None or not left:
            continue
        taken = _deletable_prefix(left, high_watermark, log_end_offset, deletable)
        if taken == 0:
            continue
        if taken == len(left):
            roll_first = True
            left = [SegmentView(log_end_offset, 0, now_ms)]
        else:
            left = left[taken:]
        count += taken
        reasons.append(reason)
        log_start_offset = max(log_start_offset, left[0].base_offset)
    return RetentionDecision(count, roll_first, log_start_offset, tuple(reasons))
