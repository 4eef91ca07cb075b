"""Run one ReadTask: scan its batches, drop what the options exclude, yield Arrow batches.

This is what a Spark task executes (in the Python worker), for batch and streaming reads
alike; nothing here imports pyspark, so it is tested and benchmarked on its own.

A task stops reading once it has a batch reaching its end offset (a high watermark, on a
live log): what follows may be a batch still being written, which is never looked at.
"""
from __future__ import annotations

import errno
import gc
import os
from dataclasses import dataclass

from kafkawire import _native
from kafkawire.records import CorruptRecordError

from .columns import column_names
from .files import Files
from .filters import PushedFilters
from .indexes import SegmentIndexes
from .layout import Segment
from .options import ReadOptions, column_options
from .plan import ReadTask
from .rows import MetadataDecoder, RowFilter, RowsBuilder
from .scan import Skipped, scan_batches
from .transactions import TransactionOutcomes

__all__ = ["ReadSettings", "read_task", "settings_for", "default_names", "names_for_options"]

# An Arrow batch handed to Spark holds about this many rows or record-batch bytes.
ROWS_PER_ARROW_BATCH = 32768
BYTES_PER_ARROW_BATCH = 32 * 1024 * 1024


@dataclass(frozen=True)
class ReadSettings:
    """What every task of one query shares."""

    names: tuple
    include_control: bool = False
    include_aborted: bool = True
    decode_metadata: bool = False
    fail_on_corruption: bool = True
    offset_in: frozenset | None = None
    timestamp_bounds: tuple = ()
    filters_pushed: bool = False   # offset/timestamp filters: a corruption row (null offset) fails them
    native: bool | None = None     # the C extension's record columns (where it is built); False: pure


def default_names(opts: ReadOptions) -> list[str]:
    """The columns a read has when the user gives no schema."""
    return column_names(include_headers=opts.include_headers, decode_metadata=opts.decode_metadata,
                        corruption=not opts.fail_on_corruption)


def names_for_options(options) -> list[str]:
    """The same, from the raw options (before knowing whether the read is a stream)."""
    shape = column_options(options)
    return column_names(include_headers=shape["include_headers"], decode_metadata=shape["decode_metadata"],
                        corruption=not shape["fail_on_corruption"])


def settings_for(names, opts: ReadOptions, pushed: PushedFilters) -> ReadSettings:
    return ReadSettings(
        names=tuple(names), include_control=opts.include_control,
        include_aborted=opts.include_aborted, decode_metadata=opts.decode_metadata,
        fail_on_corruption=opts.fail_on_corruption, offset_in=pushed.offset_in,
        timestamp_bounds=tuple(pushed.timestamp_bounds),
        filters_pushed=pushed.offset_min is not None or pushed.offset_end is not None
        or bool(pushed.timestamp_bounds))


def _resync_positions(task: ReadTask) -> list[int]:
    if task.index_path is None:
        return []
    base = int(Files.basename(task.path)[:20])
    size = task.limit if task.limit is not None else task.files.size(task.path)
    return [p for _, p in SegmentIndexes(Segment(base, task.path, size), task.files).offset_entries()]


def _located(e: CorruptRecordError, position: int, batch, path: str) -> CorruptRecordError:
    """The error with its position in the file (batches are parsed from a chunk buffer)."""
    where = position if e.position is None else e.position - batch.position + position
    return CorruptRecordError(e.reason, where, path)


class _LazyPositions:
    """Offset-index positions, loaded only when a corrupt batch needs them."""

    def __init__(self, task: ReadTask):
        self._task, self._positions = task, None

    def _load(self):
        if self._positions is None:
            self._positions = _resync_positions(self._task)
        return self._positions

    def __len__(self):
        return len(self._load())

    def __getitem__(self, i):
        return self._load()[i]


def _outcomes(task: ReadTask) -> TransactionOutcomes:
    """Markers for every transaction with data in the task, looking past its end if needed."""
    outcomes = TransactionOutcomes()
    for item in scan_batches(task.path, task.start, task.stop, task.limit, verify_crc=False,
                             skip_corrupt=True, files=task.files):
        if not isinstance(item, Skipped):
            outcomes.note(item[1])
    pending = outcomes.unresolved()
    ahead = []
    if task.stop is not None:
        ahead.append((task.path, task.stop, task.limit))
    ahead += [(path, 0, limit) for path, limit in task.following]
    for path, start, limit in ahead:
        if not pending:
            break
        try:
            _note_markers(outcomes, pending, scan_batches(path, start, None, limit, verify_crc=False,
                                                          skip_corrupt=True, files=task.files))
        except FileNotFoundError:
            if task.if_vanished == "error":
                raise
            # deleted by retention since planning; markers after the task's data are in later segments
    return outcomes


def _note_markers(outcomes: TransactionOutcomes, pending: set, scan) -> None:
    for item in scan:
        if isinstance(item, Skipped):
            continue
        batch = item[1]
        if batch.is_control and batch.is_transactional and batch.producer_id in pending:
            outcomes.note(batch)
            pending.discard(batch.producer_id)
            if not pending:
                return


def _until(scan, end: int):
    """The scan's items, up to and including the first batch reaching ``end``."""
    for item in scan:
        yield item
        if not isinstance(item, Skipped) and item[1].next_offset >= end:
            scan.close()   # releases the file now
            return


def _vanished(task: ReadTask) -> FileNotFoundError:
    """The error for a segment deleted after planning, when the read may not skip it."""
    return FileNotFoundError(
        errno.ENOENT, f"{os.strerror(errno.ENOENT)}: deleted while the query read it (retention moved "
        f"the log start of {task.topic}-{task.partition} past offsets the read was asked for; set "
        f"failOnDataLoss=false to skip deleted segments)", task.path)


def read_task(task: ReadTask, settings: ReadSettings):
    """Yield the task's rows as pyarrow RecordBatches (see columns.py for the columns).

    Python's cyclic garbage collector is paused while the task reads: decoding creates a
    record object per row and holds a batch's worth alive, which sets the collector off
    over and over (about a fifth of the CPU time, measured), and nothing here makes
    reference cycles for it to find; reference counting frees everything as usual.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield from _read_task(task, settings)
    except FileNotFoundError as e:
        # Only opening the task's own file can fail so (an open file stays readable when
        # retention deletes it), so no row of this task has been yielded yet.
        if task.if_vanished == "error" or e.filename != task.path:
            raise
        if task.if_vanished == "data_loss":
            raise _vanished(task) from None
    finally:
        if collecting:
            gc.enable()


def _read_task(task: ReadTask, settings: ReadSettings):
    fail = settings.fail_on_corruption
    row_filter = RowFilter(task.offset_min, task.offset_end, settings.offset_in,
                           settings.timestamp_bounds)
    native = _native.records is not None and settings.native is not False
    builder = RowsBuilder(settings.names, task.topic, task.partition,
                          decode_metadata=settings.decode_metadata and task.is_metadata_log,
                          row_filter=row_filter, native=native)
    decode_metadata = MetadataDecoder() if builder.decode_metadata else None
    record_objects = not native or decode_metadata is not None
    report_skips = "corruption" in settings.names and not settings.filters_pushed
    outcomes = None if settings.include_aborted else _outcomes(task)
    include_control = settings.include_control
    end = task.offset_end
    filtering = row_filter.active
    scan = scan_batches(task.path, task.start, task.stop, task.limit, skip_corrupt=not fail,
                        resync_positions=_LazyPositions(task),
                        torn_tail_is_corrupt=task.complete_file, files=task.files)
    if end is not None:
        scan = _until(scan, end)
    for item in scan:
        if isinstance(item, Skipped):
            if report_skips:
                yield from _flush(builder)
                yield builder.skipped_row(item)
            continue
        position, batch = item
        if batch.is_control and not include_control:
            continue
        if end is not None and batch.base_offset >= end:
            break
        if filtering and not row_filter.batch_may_match(batch.base_offset, batch.last_offset,
                                                        getattr(batch, "max_timestamp", None)):
            continue
        if outcomes is not None and batch.is_transactional and not batch.is_control \
                and not outcomes.committed(batch.producer_id, batch.last_offset):
            continue
        if native and builder.rows and builder.takes_natively(batch) != builder.native_rows:
            yield from _flush(builder)   # a legacy message set next to v2 batches
        try:
            records = list(batch) if record_objects else None
            metadata = None if decode_metadata is None else decode_metadata(batch, records)
            if metadata is not None and fail:
                bad = next((m for m in metadata if isinstance(m, str)), None)
                if bad is not None:
                    raise CorruptRecordError(bad, batch.position)   # located below
            builder.add(batch, records, metadata=metadata,
                        where=f"batch at byte {position} in {task.path}")
        except CorruptRecordError as e:
            located = _located(e, position, batch, task.path)
            if fail:
                raise located from None
            if report_skips:
                yield from _flush(builder)
                yield builder.skipped_row(Skipped(task.path, position, batch.size_in_bytes,
                                                  f"{e.reason} (at byte {located.position})"))
            continue
        if builder.rows >= ROWS_PER_ARROW_BATCH or builder.bytes >= BYTES_PER_ARROW_BATCH:
            yield from _flush(builder)
    yield from _flush(builder)


def _flush(builder: RowsBuilder):
    batch = builder.take()
    if batch is not None:
        yield batch
