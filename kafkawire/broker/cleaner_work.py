"""The log cleaner's work on one log (Kafka's Cleaner.doClean), done on the cleaner's thread: the offset
map over the dirty section, then each group of segments below the map's end written into one
``.cleaned`` segment and swapped in (the swap itself runs on the event loop, through ``swap``).

    cleaner = Cleaner(OffsetMap(128 << 20), throttler=Throttler(rate), check_done=lambda: None)
    end_offset, stats = cleaner.clean(job, swap=lambda new_base, old_bases: True)

The job (CleaningJob) is a description the event loop made of the log: paths and sizes of its
segments below the first uncleanable offset, the offsets, the topic's settings and the last records
of its active producers. The cleaner reads the segment files by path (they no longer change) and
writes only ``.cleaned`` files; ``check_done`` raises CleaningAborted when the cleaning must stop.
The rules are in kafkawire.broker.cleaner_rules (what to clean) and kafkawire.broker.cleaner_filter
(what to keep).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

from kafkawire.storage.reader import SegmentFile
from kafkawire.storage.segment import LogSegment
from kafkawire.storage.swap import CLEANED_SUFFIX, segment_file_paths
from kafkawire.storage.txn_index import AbortedTxn, encode_aborted_txn, read_txn_index

from .cleaner_filter import BatchFilter, CleanerStats, OffsetMap, TransactionMetadata
from .cleaner_rules import CleanerSegment, group_segments, segments_overlapping
from .log_config import LogSettings

__all__ = ["Cleaner", "CleaningJob", "SourceSegment", "CleaningAborted", "Throttler"]



class CleaningAborted(Exception):
    """LogCleaningAbortedException: the cleaning of a log stopped (shutdown, or the log changed)."""


@dataclass(frozen=True)
class SourceSegment:
    """A segment of the log as the cleaner reads it."""
    base_offset: int
    next_base: int                   # the base offset of the segment after it
    path: str                        # its .log
    size: int
    last_modified_ms: int
    largest_timestamp: int = -1
    first_batch_timestamp: int = -1
    offset_index_bytes: int = 0
    time_index_bytes: int = 0

    def view(self) -> CleanerSegment:
        return CleanerSegment(self.base_offset, self.size, self.largest_timestamp, self.first_batch_timestamp,
                              self.offset_index_bytes, self.time_index_bytes)

    def aborted_txns(self, start: int, upper: int) -> list[AbortedTxn]:
        """The segment's ``.txnindex`` entries overlapping [start, upper) (collectAbortedTxns)."""
        path = self.path[:-len(".log")] + ".txnindex"
        try:
            with open(path, "rb") as f:
                entries, _ = read_txn_index(f.read())
        except FileNotFoundError:
            return []
        return [t for t in entries if t.last_offset >= start and t.first_offset < upper]


@dataclass
class CleaningJob:
    name: str
    directory: str
    segments: list[SourceSegment]          # the log's segments below the first uncleanable offset
    first_dirty_offset: int
    first_uncleanable_offset: int
    settings: LogSettings
    now_ms: int
    last_records: dict = field(default_factory=dict)    # producer id -> cleaner_filter.LastRecord
    index_interval_bytes: int = 4096


class Throttler:
    """log.cleaner.io.max.bytes.per.second: sleeps the cleaner's thread when it reads and writes faster."""

    def __init__(self, bytes_per_second: float, *, sleep=time.sleep, clock=time.monotonic, check_every_s: float = 0.3):
        self.rate = bytes_per_second
        self.sleep, self.clock, self.check_every_s = sleep, clock, check_every_s
        self._start, self._observed = clock(), 0.0

    def maybe_throttle(self, amount: int) -> None:
        self._observed += amount
        now = self.clock()
        elapsed = now - self._start
        if elapsed < self.check_every_s:
            return
        if self._observed / elapsed > self.rate:
            self.sleep(self._observed / self.rate - elapsed)
        self._start, self._observed = self.clock(), 0.0


def _remove_cleaned(directory: str, base: int) -> None:
    for path in segment_file_paths(directory, base, CLEANED_SUFFIX):
        os.remove(path)


class Cleaner:
    """One cleaner thread's state: its offset map, throttler and the check for a stop."""

    def __init__(self, offset_map: OffsetMap, *, throttler: Throttler | None = None,
                 check_done: Callable[[], None] = lambda: None):
        self.offset_map = offset_map
        self.throttler = throttler or Throttler(float("inf"))
        self.check_done = check_done

    def _batches(self, segment: SourceSegment):
        for _, batch in SegmentFile(segment.path, verify_crc=False, last=False).entries():
            self.check_done()
            # Let the event loop's thread have the interpreter between two batches: without it the
            # loop waited up to ~100 ms behind the cleaning on a busy machine, with it ~its idle noise.
            time.sleep(0)
            self.throttler.maybe_throttle(batch.size_in_bytes)
            yield batch

    def clean(self, job: CleaningJob, swap: Callable[[int, list[int]], bool]) -> tuple[int, CleanerStats]:
        """Clean ``job``'s log (Cleaner.doClean); the offset the next cleaning starts from, and the counts."""
        stats = CleanerStats()
        below_dirty = [s for s in job.segments if s.base_offset < job.first_dirty_offset]
        legacy_horizon = below_dirty[-1].last_modified_ms - job.settings.delete_retention_ms if below_dirty else 0
        self.build_offset_map(job, stats)
        end_offset = self.offset_map.latest_offset + 1
        txns = TransactionMetadata()
        views = [s.view() for s in job.segments]
        by_base = {s.base_offset: s for s in job.segments}
        groups = group_segments(segments_overlapping(views, 0, end_offset), max_size=job.settings.segment_bytes,
                                max_index_size=job.settings.segment_index_bytes,
                                first_uncleanable=job.first_uncleanable_offset)
        for group in groups:
            self.clean_group(job, [by_base[v.base_offset] for v in group], txns, legacy_horizon, end_offset,
                             stats, swap)
        return end_offset, stats

    def build_offset_map(self, job: CleaningJob, stats: CleanerStats) -> None:
        """Cleaner.buildOffsetMap: the keys of [first dirty, first uncleanable), segment by segment, until
        the map is full."""
        start, end = job.first_dirty_offset, job.first_uncleanable_offset
        self.offset_map.clear()
        views = [s.view() for s in job.segments]
        dirty = {v.base_offset for v in segments_overlapping(views, start, end)}
        segments = [s for s in job.segments if s.base_offset in dirty]
        txns = TransactionMetadata()
        for segment in segments:
            txns.add_aborted(segment.aborted_txns(start, end))
        for i, segment in enumerate(segments):
            next_start = segments[i + 1].base_offset if i + 1 < len(segments) else end
            for batch in self._batches(segment):
                stats.index_bytes_read += batch.size_in_bytes
                if self.offset_map.add_batch(batch, start, txns, stats):
                    return
            self.offset_map.latest_offset = next_start - 1      # past a gap in offsets, to the segment's end

    def clean_group(self, job: CleaningJob, group: list[SourceSegment], txns: TransactionMetadata,
                    legacy_horizon: int, upper_bound: int, stats: CleanerStats,
                    swap: Callable[[int, list[int]], bool]) -> None:
        """Cleaner.cleanSegments: the group written into one ``.cleaned`` segment, then swapped in."""
        base = group[0].base_offset
        _remove_cleaned(job.directory, base)
        dest = LogSegment(job.directory, base, create=True, suffix=CLEANED_SUFFIX,
                          index_interval_bytes=job.index_interval_bytes, max_index_size=job.settings.segment_index_bytes)
        txns.cleaned_index = []
        keep = BatchFilter(self.offset_map, txns, job.last_records, upper_bound_offset=upper_bound, now_ms=job.now_ms,
                           delete_retention_ms=job.settings.delete_retention_ms, stats=stats)
        try:
            for segment in group:
                txns.add_aborted(segment.aborted_txns(segment.base_offset, segment.next_base))
                keep.retain_legacy_deletes = segment.last_modified_ms > legacy_horizon
                for batch in self._batches(segment):
                    data = keep.filter(batch)
                    if data is not None:
                        dest.append(data)
                        stats.bytes_written += len(data)
                        self.throttler.maybe_throttle(len(data))
            self._finish(job.directory, dest, txns.cleaned_index, group[-1].last_modified_ms)
        except BaseException:
            dest.close()
            _remove_cleaned(job.directory, base)
            raise
        if not swap(base, [s.base_offset for s in group]):
            _remove_cleaned(job.directory, base)
            raise CleaningAborted(f"{job.name}: the log changed during its cleaning")

    @staticmethod
    def _finish(directory: str, dest: LogSegment, aborted: list[AbortedTxn], last_modified_ms: int) -> None:
        """The cleaned segment closed and durable, its ``.txnindex`` written, its mtime the old one's."""
        if aborted:
            path = os.path.join(directory, f"{dest.base_offset:020d}.txnindex{CLEANED_SUFFIX}")
            with open(path, "wb") as f:
                f.write(b"".join(encode_aborted_txn(entry) for entry in aborted))
                f.flush()
                os.fsync(f.fileno())
        dest.on_become_inactive()
        dest.flush()
        dest.close()
        seconds = last_modified_ms / 1000
        for path in (dest.log_path, dest.index_path, dest.time_index_path):
            if os.path.exists(path):
                os.utime(path, (seconds, seconds))
