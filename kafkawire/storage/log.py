"""A partition log: the segments of one partition directory (Kafka's UnifiedLog/LocalLog,
without producer state, transactions, remote storage or compaction).

Layout: ``<dir>/%020d.log`` (+ ``.index``, ``.timeindex``) named by each segment's base
offset. Opening discovers the segments, loads the indexes of the older ones (rebuilding
any that are missing or corrupt) and recovers the last one (CRC check, index rebuild,
torn/corrupt tail cut; see ``LogSegment.recover``); the reports are in
``Log.recovery_reports``. Files that are not ``<20 digits>.log`` (``.deleted``,
``.cleaned``, ``.swap``, checkpoints, snapshots) are not segments; an interrupted swap of the
log cleaner (``.cleaned``/``.swap`` files) is completed or rolled back first (kafkawire.storage.swap).

Appends take whole v2 batches: either with offsets already set (as the raft layer and a
follower do: the first base offset must be >= the log end offset and offsets must
increase), or with ``assign_offsets=True``, which rewrites each batch's base offset (a
field outside the CRC, as Kafka's LogValidator does for uncompressed v2 batches) starting
at the log end offset. The active segment is rolled when the append would take it past
``segment_bytes`` (Kafka's ``segment.bytes``; ``metadata.log.segment.bytes`` for
__cluster_metadata), when its offset or time index is full (``max_index_size``, Kafka's
``segment.index.bytes``), or when the offsets would not fit
an int32 relative to its base offset, or (with ``segment_ms``, Kafka's ``segment.ms``;
``metadata.log.segment.ms`` for __cluster_metadata) when the new data's largest timestamp is
more than ``segment_ms`` past the largest timestamp of the active segment's first batch, less
that segment's jitter (Kafka's LogSegment.shouldRoll; without timestamps, ``clock()`` ms since the
segment was made or opened). The jitter is drawn once per segment when it is made or opened,
below ``segment_jitter_ms`` (Kafka's LogConfig.randomSegmentJitter, whose bound is
min(``segment.jitter.ms``, ``segment.ms``): the caller passes that bound; 0, the default, is no
jitter), by ``jitter(bound)``. An append bigger than ``segment_bytes`` is refused
(RecordBatchTooLargeException in Kafka).

Durability: appends reach the page cache; ``flush()`` fsyncs every segment written since
the last flush (only the .log of the last one, whose indexes recovery rebuilds on every open)
and the directory (for created/deleted segment files). A roll fsyncs the segment it closes,
indexes included. With ``flush_messages`` (Kafka's ``flush.messages``; Long.MAX_VALUE, the
default, is never) an append flushes the log once the offsets appended since the last flush
(or the open) reach it, before it returns, as UnifiedLog.append does; ``flushed_offset`` and
``last_flush_ms`` say where and when the last ``flush()`` was (a caller applying ``flush.ms``
reads them, as Kafka's LogManager flusher reads lastFlushTime).

With ``deferred_writes`` (the raft log's) an append does not write its bytes: the function
``prepare_writes`` (or ``prepare_flush``) returns writes them, on the owner's disk thread before
its fsync; a read, truncation, roll or close writes what is left first (LogSegment's docstring).
"""

from __future__ import annotations

import bisect
import os
import random
import re
import struct
import time

from kafkawire.records import iter_batches

from .batch_scan import Extent
from .flush_stats import timed_flush
from .index import CorruptIndexError
from .swap import CLEANED_SUFFIX, SWAP_SUFFIX, recover_interrupted_swaps, rename_segment_files
from .segment import (DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_INDEX_SIZE, DELETED_SUFFIX, LogSegment, ReadResult,
                      RecoveryReport, _max_ts)

__all__ = ["Log", "OffsetOutOfRangeError", "DEFAULT_SEGMENT_BYTES", "NEVER", "fsync_dir", "random_segment_jitter",
           "SegmentRollError", "LogFlushError"]

DEFAULT_SEGMENT_BYTES = 1 << 30
NEVER = (1 << 63) - 1       # Long.MAX_VALUE: Kafka's flush.messages and flush.ms defaults, no flush
_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
# v2 batch header: baseOffset 8, length 4, leader epoch 4, magic 1, crc 4, attributes 2,
# lastOffsetDelta 4, baseTimestamp 8, then maxTimestamp.
_MAX_TIMESTAMP_POSITION = 35


class SegmentRollError(OSError):
    """An append's I/O error rolling the active segment (told apart from the write's, as Kafka's
    roll reports its own failure)."""


class LogFlushError(OSError):
    """An append's I/O error flushing the log (``flush_messages`` reached)."""


def _raised_as(cls, error: OSError) -> OSError:
    """``error`` as a ``cls``, its errno, text and file name kept."""
    if error.errno is None:
        return cls(str(error))
    return cls(error.errno, error.strerror, error.filename)


def _wall_clock_ms() -> float:
    return time.time() * 1000


def random_segment_jitter(bound: int) -> int:
    """LogConfig.randomSegmentJitter's draw: a non-negative 31-bit random int modulo ``bound``
    (not a uniform draw below ``bound``: a jitter is never above 2^31 - 1 ms, as Kafka's)."""
    return random.getrandbits(31) % bound


class OffsetOutOfRangeError(ValueError):
    """A read or a log start offset outside the log's [start, end) offsets (Kafka's
    OffsetOutOfRangeException).
    """
    pass


def fsync_dir(path) -> None:
    fd = os.open(os.fspath(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _close_all(fds) -> None:
    for fd in fds:
        os.close(fd)


class Log:
    """The OWNER'S WRITER of a partition directory: never open one on a directory a broker or
    controller uses, or on data you want to keep as it is. Opening a Log creates the directory,
    recovers the last segment (and TRUNCATES a torn or corrupt tail), rebuilds and rewrites
    missing or preallocated indexes; appends, roll, truncation and retention write and delete
    files. To read someone else's log use ``kafkawire.storage.reader.read_log_directory`` (or
    ``kafkawire.read_log_directory``), which never writes.

    See the module docstring for recovery, rolling and durability.
    """
    def __init__(self, directory, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                 log_start_offset: int | None = None, recover_all: bool = False,
                 contiguous_offsets: bool = False, segment_ms: int | None = None,
                 max_index_size: int = DEFAULT_MAX_INDEX_SIZE, clock=None, segment_jitter_ms: int = 0,
                 jitter=None, flush_messages: int = NEVER, deferred_writes: bool = False):
        self.deferred_writes = deferred_writes
        self.directory = os.fspath(directory)
        self.segment_ms = segment_ms
        self.segment_jitter_ms = segment_jitter_ms    # the bound of each new segment's roll jitter
        self.jitter = jitter or random_segment_jitter
        self._roll_jitter: dict[int, int] = {}
        self.max_index_size = max_index_size     # segment.index.bytes, for the segments made from now on
        self.clock = clock or _wall_clock_ms     # ms: when a segment was opened, for segment.ms without timestamps
        self._opened_ms: dict[int, float] = {}
        self._first_batch_timestamp: tuple[int, int] | None = None   # (active base offset, its value)
        # A log that is never compacted (KRaft's) has no gaps: recovery cuts at the first one.
        self.contiguous_offsets = contiguous_offsets
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.recovery_reports: list[RecoveryReport] = []
        self._dirty: set[int] = set()
        self._dir_dirty = False
        os.makedirs(self.directory, exist_ok=True)
        recover_interrupted_swaps(self.directory)       # a cleaner's swap a stop interrupted
        bases = sorted(int(m.group(1)) for m in map(_SEGMENT_RE.match, os.listdir(self.directory)) if m)
        self._segments: dict[int, LogSegment] = {}
        for i, base in enumerate(bases):
            last = i == len(bases) - 1
            seg = self._open_segment(base, recover=last or recover_all)
            self._segments[base] = seg
        if not self._segments:
            start = log_start_offset or 0
            self._segments[start] = self._new_segment(start)
        self._bases = sorted(self._segments)
        first = self._bases[0]
        self.log_start_offset = first if log_start_offset is None else max(first, log_start_offset)
        self.flush_messages = flush_messages     # flush.messages: flush once this many offsets are unflushed
        self.flushed_offset = self.log_end_offset      # the log end at the last flush() (or the open)
        self.last_flush_ms = self.clock()
        self.flush_count = 0                     # flush() calls since the open

    # -- segments --

    def _segment_opened(self, base: int) -> None:
        """A segment made or opened: its roll clock starts and its roll jitter is drawn (LogSegment.open)."""
        self._opened_ms[base] = self.clock()
        self._roll_jitter[base] = self.jitter(self.segment_jitter_ms) if self.segment_jitter_ms > 0 else 0

    def _segment_gone(self, base: int) -> None:
        self._opened_ms.pop(base, None)
        self._roll_jitter.pop(base, None)

    def _open_segment(self, base: int, *, recover: bool) -> LogSegment:
        self._segment_opened(base)
        kwargs = dict(index_interval_bytes=self.index_interval_bytes, max_index_size=self.max_index_size)
        stem = os.path.join(self.directory, f"{base:020d}")
        needs_rebuild = recover or not (os.path.exists(stem + ".index")
                                        and os.path.exists(stem + ".timeindex"))
        try:
            seg = LogSegment(self.directory, base, **kwargs, load_indexes=not needs_rebuild)
        except CorruptIndexError:
            seg = LogSegment(self.directory, base, **kwargs, load_indexes=False)
            needs_rebuild = True
        if needs_rebuild:
            report = seg.recover(contiguous=self.contiguous_offsets)
            self.recovery_reports.append(report)
            if report.truncated:
                self._dirty.add(base)
        return seg

    def _new_segment(self, base: int) -> LogSegment:
        self._segment_opened(base)
        seg = LogSegment(self.directory, base, index_interval_bytes=self.index_interval_bytes,
                         max_index_size=self.max_index_size, create=True)
        self._dir_dirty = True
        self._dirty.add(base)
        return seg

    @property
    def segments(self) -> list[LogSegment]:
        return [self._segments[b] for b in self._bases]

    @property
    def segment_count(self) -> int:
        return len(self._bases)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[self._bases[-1]]

    @property
    def log_end_offset(self) -> int:
        return self.active_segment.read_next_offset()

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments.values())

    def _segment_for(self, offset: int) -> int:
        """Index in _bases of the segment whose base offset is the floor of ``offset``."""
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def roll(self, new_base: int | None = None) -> LogSegment:
        """Close the active segment (final time-index entry, fsync) and start a new one."""
        active = self.active_segment
        if new_base is None:
            new_base = self.log_end_offset
        if new_base in self._segments:
            if active.size == 0 and active.base_offset == new_base:
                return active
            raise ValueError(f"a segment with base offset {new_base} already exists")
        active.on_become_inactive()
        active.flush()
        self._dirty.discard(active.base_offset)
        seg = self._new_segment(new_base)
        self._segments[new_base] = seg
        self._bases.append(new_base)
        return seg

    def _reached_roll_ms(self, active: LogSegment, new_max_ts: int) -> bool:
        """segment.ms less the segment's jitter: measured from the active segment's first batch's
        max timestamp to the new data's; without timestamps, from when this process opened or made
        the segment (as Kafka's LogSegment 'created' time)."""
        if self.segment_ms is None or active.size == 0:
            return False
        limit = self.segment_ms - self._roll_jitter.get(active.base_offset, 0)
        first_ts = self._first_timestamp(active)
        if first_ts >= 0:
            return new_max_ts - first_ts > limit
        opened_ms = self._opened_ms.get(active.base_offset, self.clock())
        return self.clock() - opened_ms > limit

    def _first_timestamp(self, active: LogSegment) -> int:
        """The max timestamp of the active segment's first batch, read once per segment (Kafka's
        rollingBasedTimestamp), not at every append."""
        cached = self._first_batch_timestamp
        if cached is not None and cached[0] == active.base_offset:
            return cached[1]
        header = active.read_bytes(0, _MAX_TIMESTAMP_POSITION + 8)
        first_ts = _INT64.unpack_from(header, _MAX_TIMESTAMP_POSITION)[0] if len(header) == 43 else -1
        self._first_batch_timestamp = (active.base_offset, first_ts)
        return first_ts

    # -- append --

    def append(self, records, *, assign_offsets: bool = False,
               leader_epoch: int | None = None, crc_verified: bool = False) -> tuple[int, int]:
        """Append whole batches; returns ``(first offset, last offset)`` appended.

        ``leader_epoch`` (if given) is written into each v2 batch's partition leader
        epoch field (outside the CRC), as a leader does. ``crc_verified``: the caller
        checked every batch's CRC already (a leader's produce path), so it is not checked
        again. ``records`` (bytes-like) is written from where it is: one long batch that gets
        an offset or the epoch has its header stamped apart (a large produce request's records
        are not copied); else they are copied once, into the buffer that gets them.
        """
        data = records
        if not data:
            raise ValueError("nothing to append")
        if len(data) > self.segment_bytes:
            raise ValueError(f"{len(data)} bytes is larger than the segment size "
                             f"{self.segment_bytes} (RecordBatchTooLarge)")
        leo = self.log_end_offset
        next_offset = leo
        first_offset = last_offset = None
        max_ts, offset_of_max_ts = -1, None
        batches = []        # (position, last offset, largest timestamp): the segment indexes each
        stamps = []         # (position, base offset to write or None): the headers to stamp
        it = iter_batches(data, verify_crc=not crc_verified)
        for batch in it:
            pos = batch.position
            if assign_offsets or leader_epoch is not None:
                if getattr(batch, "magic", 2) != 2 or not hasattr(batch, "last_offset_delta"):
                    raise ValueError("only v2 batches can have offsets or leader epoch assigned")
            if assign_offsets:
                base, last = next_offset, next_offset + batch.last_offset_delta
            else:
                base, last = batch.base_offset, batch.last_offset
                if base < next_offset:
                    raise ValueError(f"batch base offset {base} is below the expected offset "
                                     f"{next_offset} (log end offset {leo}); offsets must increase")
            if assign_offsets or leader_epoch is not None:
                stamps.append((pos, base if assign_offsets else None))
            if first_offset is None:
                first_offset = base
            batch_max_ts = _max_ts(batch)
            if batch_max_ts > max_ts or offset_of_max_ts is None:
                max_ts, offset_of_max_ts = max(batch_max_ts, max_ts), last
            last_offset = last
            next_offset = last + 1
            batches.append((pos, last, batch_max_ts))
        if it.tail is not None:
            raise ValueError(f"append data ends inside a batch at byte {it.tail.position}")
        data, head = _stamped(data, stamps, leader_epoch)
        active = self.active_segment
        if (active.size > 0 and active.size > self.segment_bytes - len(data)) \
                or self._reached_roll_ms(active, max_ts) \
                or active.offset_index.is_full or active.time_index.is_full \
                or last_offset - active.base_offset > 0x7FFFFFFF:
            try:
                active = self.roll(first_offset)
            except OSError as exc:
                raise _raised_as(SegmentRollError, exc) from exc
        active.append(data, last_offset, max_ts, offset_of_max_ts, batches=batches, write=not self.deferred_writes,
                      head=head)
        self._dirty.add(active.base_offset)
        if last_offset + 1 - self.flushed_offset >= self.flush_messages:
            try:
                self.flush()
            except OSError as exc:
                raise _raised_as(LogFlushError, exc) from exc
        return first_offset, last_offset

    @property
    def unflushed_messages(self) -> int:
        """The offsets appended since the last flush (LocalLog.unflushedMessages)."""
        return self.log_end_offset - self.flushed_offset

    # -- read --

    def read(self, from_offset: int, max_bytes: int, *, min_one_batch: bool = True) -> ReadResult:
        """Whole batches from the one containing ``from_offset``, at most ``max_bytes``
        (but one whole batch at least when ``min_one_batch``); empty at the log end."""
        extent = self.read_extent(from_offset, max_bytes, min_one_batch=min_one_batch)
        return ReadResult(extent.read(), extent.position, extent.end_position, extent.first_offset)

    def read_extent(self, from_offset: int, max_bytes: int, *, min_one_batch: bool = True,
                    upper: int | None = None) -> Extent:
        """Where ``read`` reads (a segment and a byte range of its file), cut below ``upper`` when
        given (LogSegment.read_extent), without reading the records."""
        leo = self.log_end_offset
        active = self.active_segment
        if from_offset == leo:
            return Extent(active, active.size, active.size, None)
        if from_offset < self.log_start_offset or from_offset > leo:
            raise OffsetOutOfRangeError(
                f"offset {from_offset} is outside the log [{self.log_start_offset}, {leo})")
        i = self._segment_for(from_offset)
        offset = from_offset
        while i < len(self._bases):
            extent = self._segments[self._bases[i]].read_extent(offset, max_bytes, min_one_batch=min_one_batch,
                                                                upper=upper)
            if extent is not None:
                return extent
            i += 1
            if i < len(self._bases):
                offset = self._bases[i]
        return Extent(active, active.size, active.size, None)

    def batches(self, from_offset: int | None = None):
        """Yield every batch from the one holding ``from_offset`` (default: log start)."""
        offset = self.log_start_offset if from_offset is None else from_offset
        for base in list(self._bases):
            seg = self._segments[base]
            if seg.size == 0 or (base != self._bases[-1] and
                                 self._bases[self._bases.index(base) + 1] <= offset):
                continue
            found = seg.translate_offset(offset)
            if found is None:
                continue
            for _, batch in seg.batches(found[0]):
                yield batch

    def find_offset_by_timestamp(self, timestamp: int):
        for seg in self.segments:
            if seg.max_timestamp >= timestamp or seg is self.active_segment:
                found = seg.find_offset_by_timestamp(timestamp, self.log_start_offset)
                if found is not None:
                    return found
        return None

    # -- truncation and retention --

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch from the one containing ``offset`` on (Kafka truncateTo).

        Returns False if there was nothing to remove. Truncating below the log start
        offset empties the log and restarts it at ``offset``.
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {offset}")
        if offset >= self.log_end_offset:
            return False
        if offset < self.log_start_offset or offset < self._bases[0]:
            self.truncate_fully_and_start_at(offset)
            return True
        for base in [b for b in self._bases if b > offset]:
            self._delete_segment(base)
        self.active_segment.truncate_to(offset)
        self._dirty.add(self.active_segment.base_offset)
        if self.active_segment.size == 0:
            self._first_batch_timestamp = None
        self.flushed_offset = min(self.flushed_offset, offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._first_batch_timestamp = None
        for base in list(self._bases):
            self._delete_segment(base)
        self._segments[offset] = self._new_segment(offset)
        self._bases = [offset]
        self.log_start_offset = offset
        self.flushed_offset = offset

    def _delete_segment(self, base: int) -> None:
        seg = self._segments.pop(base)
        self._bases.remove(base)
        self._dirty.discard(base)
        seg.delete()
        self._dir_dirty = True

    def retire_oldest_segments(self, count: int, *, roll_first: bool = False) -> list[str]:
        """Take the ``count`` oldest segments out of the log and rename their files ``.deleted``
        (Kafka's asynchronous delete: the caller removes them later); the log start offset moves
        to the first segment left. ``roll_first`` rolls a new active segment before, for when
        every segment goes. Returns the renamed paths."""
        if roll_first:
            self.roll()
        count = min(count, len(self._bases) - 1)
        renamed = []
        for base in self._bases[:count]:
            seg = self._segments.pop(base)
            self._dirty.discard(base)
            self._segment_gone(base)
            renamed += seg.rename_to_deleted()
        if count > 0:
            del self._bases[:count]
            self._dir_dirty = True
            self.log_start_offset = max(self.log_start_offset, self._bases[0])
        return renamed

    def replace_segments(self, new_base: int, old_bases: list[int]) -> list[str]:
        """Swap in the cleaned segment at ``new_base`` (its files named ``.cleaned``) for the segments
        ``old_bases`` (LocalLog.replaceSegments, the steps of kafkawire.storage.swap); the old
        segments' files renamed ``.deleted`` (the caller removes them later)."""
        if any(base not in self._segments or base == self._bases[-1] for base in old_bases):
            raise ValueError(f"segments {old_bases} are not all inactive segments of {self.directory}")
        rename_segment_files(self.directory, new_base, CLEANED_SUFFIX, SWAP_SUFFIX)
        renamed = []
        for base in sorted(old_bases):
            seg = self._segments.pop(base)
            self._bases.remove(base)
            self._dirty.discard(base)
            self._segment_gone(base)
            renamed += seg.rename_to_deleted()           # its .txnindex too
        rename_segment_files(self.directory, new_base, SWAP_SUFFIX, "")
        self._segments[new_base] = LogSegment(self.directory, new_base, index_interval_bytes=self.index_interval_bytes,
                                              max_index_size=self.max_index_size)
        bisect.insort(self._bases, new_base)
        self._segment_opened(new_base)
        self._dir_dirty = True
        return renamed

    def delete_segments_before(self, offset: int) -> int:
        """Advance the log start offset to ``offset`` and delete the segments that hold
        only offsets below it (never the active segment). Returns how many were deleted."""
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot move the log start offset to {offset}, past the log end offset "
                f"{self.log_end_offset}")
        if offset > self.log_start_offset:
            self.log_start_offset = offset
        deleted = 0
        while len(self._bases) > 1 and self._bases[1] <= self.log_start_offset:
            self._delete_segment(self._bases[0])
            deleted += 1
        return deleted

    # -- durability --

    def flush(self) -> None:
        """fsync the segments written since the last flush, and the directory."""
        end = self.log_end_offset
        self.prepare_flush()()
        self.flushed_offset, self.last_flush_ms = end, self.clock()
        self.flush_count += 1

    def prepare_flush(self):
        """The flush in two halves: this one, on the writer's thread, takes what was written
        since the last flush (buffers written out, duplicated descriptors); the function it
        returns does the fsyncs and may run on another thread while the writer goes on
        appending (what it appends then waits for the next flush). Call that function
        exactly once."""
        write = self.prepare_writes()
        segments_fds: list[list[int]] = []
        try:
            for base in sorted(self._dirty):
                if base in self._segments:
                    # The last segment's indexes are rebuilt from its batches whenever the log
                    # opens (recovery), so only its .log needs to be durable: one fsync, not three.
                    segments_fds.append(self._segments[base].sync_handles(indexes=base != self._bases[-1]))
        except BaseException:
            _close_all(fd for fds in segments_fds for fd in fds)
            raise
        self._dirty.clear()
        directory = self.directory if self._dir_dirty else None
        self._dir_dirty = False

        def sync() -> None:
            try:
                write()
            except BaseException:
                _close_all(fd for fds in segments_fds for fd in fds)
                raise
            for done, fds in enumerate(segments_fds):
                try:
                    timed_flush(fds)            # each segment's fsyncs timed, as Kafka's LogSegment.flush
                except BaseException:
                    _close_all(fd for later in segments_fds[done + 1:] for fd in later)
                    raise
            if directory is not None:
                fsync_dir(directory)
        return sync

    def prepare_writes(self):
        """The deferred appends (``deferred_writes``) written so far, taken on the writer's
        thread; the function it returns writes them, in order, and may run on another thread
        (the segments write on the caller's thread what a read or a cut needs first)."""
        pending = [seg for seg in self._segments.values() if seg.has_unwritten]

        def write() -> None:
            for seg in pending:
                seg.write_unwritten()
        return write

    def rename_dir(self, directory) -> None:
        """Rename the log's directory to ``directory`` (in the same file system) and keep using
        its open files there, as Kafka's LocalLog.renameDir: no segment is opened or recovered again."""
        directory = os.fspath(directory)
        os.rename(self.directory, directory)
        self.directory = directory
        for seg in self._segments.values():
            seg.moved_to(directory)

    def close(self) -> None:
        """Close every segment; a deferred write that fails is raised once all are closed."""
        failed = None
        for seg in self._segments.values():
            try:
                seg.close()
            except OSError as exc:
                failed = failed or exc
        if failed is not None:
            raise failed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_STAMPED_HEAD = 16      # a v2 batch's base offset, length and partition leader epoch
# A batch this long is written in two parts, its stamped head and the rest, rather than copied
# whole to be stamped: a second write costs less than the copy from here (a shorter one would
# cost a write more than its copy; io.BufferedRandom takes one write of 8 KiB in its buffer).
_STAMP_APART_MIN = 1 << 16


def _stamped(data, stamps: list, leader_epoch: int | None) -> tuple:
    """``(data, head)`` to write for Log.append: the headers at ``stamps`` ((position, base offset
    or None)) given their offset and ``leader_epoch``. One long batch: ``data`` as it is and its
    first bytes stamped in ``head``; else a copy of ``data`` stamped, ``head`` None."""
    if not stamps:
        return data, None
    one = len(stamps) == 1 and len(data) >= _STAMP_APART_MIN
    buf = bytearray(memoryview(data)[:_STAMPED_HEAD] if one else data)
    for pos, base in stamps:
        if base is not None:
            _INT64.pack_into(buf, pos, base)
        if leader_epoch is not None:
            _INT32.pack_into(buf, pos + 12, leader_epoch)
    return (data, buf) if one else (buf, None)
