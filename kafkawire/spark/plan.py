"""Planning: which byte ranges of which files a read covers, as picklable ReadTasks.

One task per segment, more for a segment larger than the split size (``maxPartitionBytes``,
smaller for a smaller read: spread_split_bytes, where ``minPartitions`` sets the divisor),
cut at offset-index entries, which are batch starts. Small tasks are then packed into one Spark
input partition, as Spark's own file sources pack small files: a Spark task costs tens of
milliseconds whatever it reads, which would dominate a directory of small segments. Where a partition's read starts and ends
is decided here, in offsets, from the options (offsets, timestamps), the pushed-down
filters and, for read_committed, the last stable offset; the offset and time indexes
turn offsets and timestamps into byte positions without scanning the segment.

Timestamps are found the way Kafka's ListOffsets finds them (UnifiedLog
fetchOffsetByTimestamp): the first segment whose largest timestamp (the time index's last
entry, written when Kafka rolls a segment) reaches the target, then the time index, the
offset index, and a scan of the few batches from there to the first record at or after it.

A running broker's log (``liveLog``, ``highWatermark``): each partition is read no further
than its high watermark (watermarks.py), read before its segments are listed, and a
read_committed read no further than the LSO below it. Everything below the high watermark
was whole on disk when the broker recorded it, so a batch there that does not read (torn
or corrupt) is corruption, named by file and byte; nothing at or past it is read. A segment
that retention deletes (renames to ``.deleted``) between the listing and its reading has
left the log: planning drops it and goes on from the next one, and a task whose segment is
gone reads nothing when the read started at the log start or ``failOnDataLoss=false``, and
otherwise fails saying so (ReadTask.if_vanished).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .files import LOCAL, Files, is_remote
from .filters import PushedFilters
from .indexes import SegmentIndexes
from .layout import METADATA_TOPIC, Segment, discover
from .options import EARLIEST, LATEST, ReadOptions
from .scan import Skipped, scan_batches
from .tail import LogTail
from .watermarks import HighWatermarks

__all__ = ["PlanError", "ReadTask", "plan_batch", "tasks_for_range", "offset_for_timestamp",
           "partition_key", "start_offset", "latest_offset", "log_start_offset", "pack_tasks", "vanished_rule",
           "after_vanished", "spread_split_bytes", "task_bytes"]

# Packing small files: each costs as much as this many bytes to open and plan (Spark's
# spark.sql.files.openCostInBytes), and a small read is still spread over about
# PACK_SPREAD input partitions.
OPEN_COST_BYTES = 4 * 1024 * 1024
PACK_SPREAD = 8
# Partitions of a remote read planned at once (see _each).
REMOTE_PLAN_THREADS = 16


class PlanError(ValueError):
    """A read that cannot be planned as asked (offsets gone, no such timestamp, ...)."""


@dataclass(frozen=True)
class ReadTask:
    """One input partition: batches starting in ``[start, stop)`` of ``path``, file read no
    further than ``limit`` (None: its size when the task runs); rows with offsets in
    ``[offset_min, offset_end)`` (None: unbounded)."""

    path: str
    topic: str
    partition: int
    start: int
    stop: int | None
    limit: int | None
    offset_min: int | None
    offset_end: int | None
    complete_file: bool           # a torn last batch is corruption (snapshot, rolled segment)
    index_path: str | None        # for resynchronising after a corrupt batch
    following: tuple = ()         # (path, limit) of later segments, for transaction markers
    files: Files = field(default=LOCAL, repr=False)   # how to reach path (a URI's filesystem)
    if_vanished: str = "error"    # path gone when the task runs: "error" | "skip" | "data_loss"

    @property
    def is_metadata_log(self) -> bool:
        return self.topic == METADATA_TOPIC


def partition_key(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def _max_timestamp(batch) -> int:
    ts = getattr(batch, "max_timestamp", None)
    return batch.timestamp if ts is None else ts


def _index_path(segment: Segment) -> str | None:
    return segment.path[:-4] + ".index" if segment.path.endswith(".log") else None


def offset_for_timestamp(segments: list[Segment], timestamp: int, files: Files = LOCAL) -> int | None:
    """The first offset whose record timestamp is >= ``timestamp`` (Kafka's rule), or None."""
    for i, segment in enumerate(segments):
        indexes = SegmentIndexes(segment, files)
        hint = indexes.max_timestamp_hint()
        if i < len(segments) - 1 and hint is not None and hint < timestamp:
            continue
        begin = indexes.position_for_timestamp(timestamp)
        for item in scan_batches(segment.path, begin, None, segment.size, verify_crc=False,
                                 skip_corrupt=True, files=files):
            if isinstance(item, Skipped):
                continue
            batch = item[1]
            if _max_timestamp(batch) >= timestamp:
                for record in batch:
                    if record.timestamp >= timestamp:
                        return record.offset
    return None


def tasks_for_range(topic: str, partition: int, segments: list[Segment], start: int | None,
                    end: int | None, *, split_bytes: int, timestamp_low_ms: int | None = None,
                    with_following: bool = False, fixed_limits: bool = True,
                    complete: bool = False, files: Files = LOCAL,
                    if_vanished: str = "error") -> list[ReadTask]:
    """Tasks reading offsets [start, end) of one partition's segments (None: unbounded).

    ``fixed_limits``: read no further than the sizes seen now (a batch read's snapshot of a
    live log); streaming reads are bounded by offsets instead. ``complete``: every file is
    complete (a snapshot, or a range below a high watermark), so a torn end is corruption
    even in the last one."""
    tasks = []
    for i, segment in enumerate(segments):
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        last = next_base is None
        if end is not None and segment.base_offset >= end:
            break
        if start is not None and next_base is not None and next_base <= start:
            continue
        if segment.size == 0:
            continue
        indexes = SegmentIndexes(segment, files)
        if timestamp_low_ms is not None and not last:
            hint = indexes.max_timestamp_hint()
            if hint is not None and hint < timestamp_low_ms:
                continue
        begin = indexes.position_for_offset(start) if start is not None and start > segment.base_offset else 0
        if timestamp_low_ms is not None:
            begin = max(begin, indexes.position_for_timestamp(timestamp_low_ms))
        stop = segment.size
        if end is not None:
            after = indexes.position_after_offset(end)
            if after is not None:
                stop = min(stop, after)
        if begin >= stop:
            continue
        # The offset index is read only for a range it may cut (one request less per small
        # segment on a remote filesystem).
        cuts = indexes.split_positions(begin, stop, split_bytes) if stop - begin > split_bytes else []
        bounds = [begin, *cuts, stop]
        following = tuple((s.path, s.size if fixed_limits else None) for s in segments[i + 1:]) \
            if with_following else ()
        for a, b in zip(bounds, bounds[1:]):
            last_piece = b == stop and stop == segment.size
            tasks.append(ReadTask(
                path=segment.path, topic=topic, partition=partition, start=a,
                stop=b if not (last_piece and not fixed_limits) else None,
                limit=segment.size if fixed_limits else None,
                offset_min=start, offset_end=end,
                complete_file=complete or not last,
                index_path=_index_path(segment), following=following, files=files,
                if_vanished=if_vanished))
    return tasks


def latest_offset(segments: list[Segment], hw: int | None, files: Files = LOCAL) -> int:
    """Where "latest" is: the end of the whole batches, or the high watermark below it."""
    end = LogTail.at_end(segments, files).advance(segments, upto=hw).next_offset
    return end if hw is None else max(min(end, hw), segments[0].base_offset)


def log_start_offset(segments: list[Segment], floor: int | None) -> int:
    """The first segment's base offset, or the checkpointed log start above it."""
    return segments[0].base_offset if floor is None else max(floor, segments[0].base_offset)


def start_offset(opts: ReadOptions, key, label: str, segments: list[Segment],
                 hw: int | None = None, floor: int | None = None) -> tuple[bool, int | None]:
    """(anything to read?, start offset or None for the log start); ``hw`` bounds "latest",
    ``floor`` is a checkpointed log start offset (watermarks.py)."""
    log_start = log_start_offset(segments, floor)
    timestamps = opts.starting_timestamps
    ts = timestamps.for_partition(key) if timestamps is not None else None
    if ts is not None:
        found = offset_for_timestamp(segments, ts, opts.files)
        if found is not None:
            found = max(found, log_start)
        if found is None:
            if opts.timestamp_miss_is_error:
                raise PlanError(f"{label}: no record has a timestamp at or after {ts} "
                                f"(startingTimestamp); set startingOffsetsByTimestampStrategy="
                                f"latest to start at the end of the log instead")
            return False, None
        return True, found
    wanted = opts.starting.for_partition(key)
    if wanted == EARLIEST:
        return True, None
    if wanted == LATEST:
        return True, latest_offset(segments, hw, opts.files)
    if wanted < log_start:
        if opts.fail_on_data_loss:
            raise PlanError(f"{label}: startingOffsets asks for offset {wanted}, but the log "
                            f"now starts at {log_start} (older segments were deleted); set "
                            f"failOnDataLoss=false to start at {log_start}")
        return True, log_start
    return True, wanted


def _end_offset(opts: ReadOptions, key, segments: list[Segment]) -> int | None:
    timestamps = opts.ending_timestamps
    ts = timestamps.for_partition(key) if timestamps is not None else None
    if ts is not None:
        return offset_for_timestamp(segments, ts, opts.files)   # None: no record that late, read to the end
    wanted = opts.ending.for_partition(key)
    return None if wanted == LATEST else wanted


def _merge(start, end, pushed: PushedFilters):
    if pushed.offset_min is not None:
        start = pushed.offset_min if start is None else max(start, pushed.offset_min)
    if pushed.offset_end is not None:
        end = pushed.offset_end if end is None else min(end, pushed.offset_end)
    return start, end


def vanished_rule(opts: ReadOptions, start: int | None) -> str:
    """What a task does when its segment is gone (ReadTask.if_vanished): on a live log,
    nothing is lost when the read began at the log start, which merely moved."""
    if not opts.live_log:
        return "error"
    return "skip" if start is None or not opts.fail_on_data_loss else "data_loss"


def _plan_partition(topic, partition, segments, opts, pushed, split_bytes, *, complete=False,
                    hw: int | None = None, floor: int | None = None) -> list[ReadTask]:
    if not segments:
        return []
    key = (topic, partition)
    label = f"{partition_key(topic, partition)} ({Files.dirname(segments[0].path)})"
    anything, start = start_offset(opts, key, label, segments, hw, floor)
    if not anything:
        return []
    if_vanished = vanished_rule(opts, start)
    if floor is not None and floor > segments[0].base_offset:
        start = max(start, floor) if start is not None else floor
    start, end = _merge(start, _end_offset(opts, key, segments), pushed)
    if hw is not None:
        end = hw if end is None else min(end, hw)
    if not opts.include_aborted:
        lso = LogTail(start, track_transactions=True, files=opts.files).advance(segments, upto=hw).last_stable_offset
        end = lso if end is None else min(end, lso)
    if start is not None and end is not None and start >= end:
        return []
    low_us = pushed.timestamp_lower_us
    return tasks_for_range(topic, partition, segments, start, end, split_bytes=split_bytes,
                           timestamp_low_ms=None if low_us is None else -(-low_us // 1000),
                           with_following=not opts.include_aborted,
                           complete=complete or hw is not None, files=opts.files,
                           if_vanished=if_vanished)


def after_vanished(segments: list[Segment], error: FileNotFoundError) -> list[Segment] | None:
    """The segments after the one that ``error`` says is gone (retention deletes from the
    log start, so the ones before it are gone too); None when it names none of them."""
    gone = [i for i, s in enumerate(segments) if s.path == error.filename]
    return segments[gone[-1] + 1:] if gone else None


def without_vanished(segments: list[Segment], fn, live_log: bool):
    """``fn(segments)``; on a live log, again from the next segment each time one turns out
    deleted (after_vanished); otherwise a missing file is the caller's error."""
    while True:
        try:
            return fn(segments)
        except FileNotFoundError as e:
            rest = after_vanished(segments, e) if live_log else None
            if rest is None:
                raise
            segments = rest


def _plan_live_partition(topic, partition, segments, opts, pushed, split_bytes, *, hw, floor) -> list[ReadTask]:
    """_plan_partition, again from the next segment each time one turns out deleted."""
    return without_vanished(segments, lambda rest: _plan_partition(topic, partition, rest, opts, pushed, split_bytes,
                                                                  hw=hw, floor=floor), opts.live_log)


def spread_split_bytes(total_bytes: int, split_bytes: int, min_partitions: int | None = None) -> int:
    """The split size for a read of ``total_bytes``: ``maxPartitionBytes``, but smaller for
    a smaller read, so that it still spreads over about PACK_SPREAD tasks (Spark's file
    sources shrink their splits the same way, by the default parallelism), never below
    OPEN_COST_BYTES. With ``minPartitions`` (k), ``total_bytes // k`` with no such floor: the
    user asked for k pieces, as Spark's Kafka source then cuts offset ranges however small."""
    if min_partitions is None:
        return max(1, min(split_bytes, max(OPEN_COST_BYTES, -(-total_bytes // PACK_SPREAD))))
    return max(1, min(split_bytes, total_bytes // min_partitions))


def task_bytes(task: ReadTask) -> int:
    """The bytes a task reads (to the file's present size when its end is open)."""
    stop = task.stop if task.stop is not None else task.limit
    return max((stop if stop is not None else task.files.size(task.path)) - task.start, 0)


def plan_batch(opts: ReadOptions, pushed: PushedFilters) -> list[ReadTask]:
    """Every task of a batch read."""
    layout = discover(opts.paths, files=opts.files)
    logs = []   # (topic, partition, segments, is a snapshot, high watermark, log start floor)
    for snap in layout.snapshots:
        if opts.selects(snap.topic, snap.partition) and pushed.keeps_partition(snap.topic, snap.partition):
            logs.append((snap.topic, snap.partition, [Segment(0, snap.path, opts.files.size(snap.path))],
                         True, None, None))
    parts = [p for p in layout.partitions
             if opts.selects(p.topic, p.partition) and pushed.keeps_partition(p.topic, p.partition)]
    hws = HighWatermarks(opts.high_watermark, opts.files, log_starts=opts.live_log)
    hws.load(p.path for p in parts)      # before the listing: see watermarks.py
    for part, segments in zip(parts, _each(opts, lambda p: p.segments(), parts)):
        logs.append((part.topic, part.partition, segments, False, hws.bound(part.path, *part.key),
                     hws.log_start(part.path, *part.key)))
    split_bytes = spread_split_bytes(sum(s.size for _, _, segments, *_ in logs for s in segments),
                                     opts.split_bytes, opts.min_partitions)
    planned = _each(opts, lambda log: _plan_log(log, opts, pushed, split_bytes), logs)
    return [task for tasks in planned for task in tasks]


def _plan_log(log, opts, pushed, split_bytes) -> list[ReadTask]:
    topic, partition, segments, snapshot, hw, floor = log
    if snapshot:   # complete by construction; no high watermark
        return _plan_partition(topic, partition, segments, opts, pushed, split_bytes, complete=True)
    return _plan_live_partition(topic, partition, segments, opts, pushed, split_bytes, hw=hw, floor=floor)


def _each(opts: ReadOptions, fn, items: list) -> list:
    """``[fn(item) for item in items]``; for a read of remote paths, in up to
    REMOTE_PLAN_THREADS threads, since planning a partition there waits on one request after
    another (its LIST, each segment's offset index), and pyarrow waits without the GIL."""
    if len(items) < 2 or not any(is_remote(p) for p in opts.paths):
        return [fn(item) for item in items]
    with ThreadPoolExecutor(min(REMOTE_PLAN_THREADS, len(items))) as pool:
        return list(pool.map(fn, items))


def _weight(task: ReadTask) -> int:
    size = (task.stop if task.stop is not None else task.limit or 0) - task.start
    return max(size, 0) + OPEN_COST_BYTES


def pack_tasks(tasks: list[ReadTask], split_bytes: int, min_partitions: int | None = None) -> list[tuple]:
    """Tasks grouped, in order, into packs of about ``split_bytes`` (counting the open cost),
    smaller when that leaves fewer than PACK_SPREAD packs (``minPartitions`` when given)."""
    total = sum(map(_weight, tasks))
    target = min(split_bytes, max(OPEN_COST_BYTES, total // (min_partitions or PACK_SPREAD)))
    packs, current, weight = [], [], 0
    for task in tasks:
        w = _weight(task)
        if current and weight + w > target:
            packs.append(tuple(current))
            current, weight = [], 0
        current.append(task)
        weight += w
    if current:
        packs.append(tuple(current))
    return packs
