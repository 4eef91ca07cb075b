"""The PySpark data source ``kafkawire``: batch and streaming readers of Kafka's log files.

Spark calls ``schema``/``reader``/``streamReader`` in a planning worker, ``partitions`` to
plan, and ``read`` in the tasks; the work itself lives in the pyspark-free modules
(``plan``, ``reader``, ``tail``), which this file only wires to Spark's interfaces.
"""
from __future__ import annotations

import sys

from kafkawire._extras import require

require("pyspark", "spark", "the Spark data source kafkawire")
from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    InputPartition)
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxRows,
                                              SupportsTriggerAvailableNow)

from .columns import column_types, ddl
from .filters import PushedFilters, push_filters
from .layout import LayoutError, discover
from .options import OptionError, ReadOptions, parse_options
from .plan import (PlanError, latest_offset, log_start_offset, pack_tasks, partition_key,
                   plan_batch, spread_split_bytes, start_offset, task_bytes, tasks_for_range,
                   vanished_rule, without_vanished)
from .reader import ReadSettings, default_names, names_for_options, read_task, settings_for
from .remote_options import with_session_defaults
from .tail import LogTail
from .watermarks import HighWatermarks

__all__ = ["KafkaWireDataSource"]

FORMAT = "kafkawire"


def _requested_names(schema, opts: ReadOptions) -> tuple:
    """The columns of ``schema`` (Spark's, or one the user gave), checked against ours."""
    known = column_types()
    offered = set(default_names(opts))
    names = []
    for f in schema.fields:
        if f.name not in offered:
            why = "it needs decode=metadata" if f.name in ("recordType", "recordVersion", "record") else \
                "it needs failOnCorruption=false" if f.name == "corruption" else \
                "it needs includeHeaders=true" if f.name == "headers" else "no such column"
            raise OptionError(f"schema column {f.name!r}: {why} (format {FORMAT} offers "
                              f"{', '.join(default_names(opts))})")
        if f.dataType.simpleString() != known[f.name]:
            raise OptionError(f"schema column {f.name!r} must be {known[f.name]}, not "
                              f"{f.dataType.simpleString()}")
        names.append(f.name)
    return tuple(names)


def _planning_for_pushdown() -> bool:
    """Whether Spark is asking for a reader in its filter-pushdown planner.

    Spark refuses a reader that implements pushFilters unless
    spark.sql.python.filterPushdown.enabled is set, and a reader cannot see that setting;
    but with it set, Spark plans the read in its own worker module. So the reader offers
    pushdown exactly there, and reads without it (Spark filtering the rows) elsewhere.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith("data_source_pushdown_filters.py"):
            return True
        frame = frame.f_back
    return False


class KafkaWireDataSource(DataSource):
    """``spark.read.format("kafkawire").load(path)``; see kafkawire.spark for the options."""

    # the session's spark.hadoop.* settings that register() copied into a subclass it made;
    # they travel with the class to the planner and the tasks (Spark pickles it by value)
    session_options: dict = {}

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _options(self):
        return with_session_defaults(self.options, self.session_options)

    def schema(self) -> str:
        return ddl(names_for_options(self._options()))

    def reader(self, schema) -> DataSourceReader:
        cls = KafkaWirePushdownReader if _planning_for_pushdown() else KafkaWireBatchReader
        return cls(self._options(), schema)

    def streamReader(self, schema) -> DataSourceStreamReader:
        return KafkaWireStreamReader(self._options(), schema)


class KafkaWireBatchReader(DataSourceReader):
    def __init__(self, options, schema):
        self.opts = parse_options(options, streaming=False)
        self.names = _requested_names(schema, self.opts)
        self.pushed = PushedFilters()
        self.settings = settings_for(self.names, self.opts, self.pushed)

    def partitions(self):
        return _input_partitions(plan_batch(self.opts, self.pushed), self.opts)

    def read(self, partition):
        return _read_pack(partition, self.settings)


class KafkaWirePushdownReader(KafkaWireBatchReader):
    def pushFilters(self, filters):
        self.pushed, rejected = push_filters(filters)
        self.settings = settings_for(self.names, self.opts, self.pushed)
        return rejected


def _input_partitions(tasks, opts: ReadOptions) -> list:
    return [InputPartition(pack) for pack in pack_tasks(tasks, opts.split_bytes, opts.min_partitions)]


def _read_pack(partition, settings: ReadSettings):
    # partition.value is None for Spark's stand-in partition when there is nothing to read.
    for task in partition.value or ():
        yield from read_task(task, settings)


def _nested(offsets: dict) -> dict:
    """{(topic, partition): n} -> Spark's Kafka offset JSON shape {"topic": {"0": n}}."""
    out: dict = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def _flat(nested: dict | None) -> dict:
    return {(topic, int(p)): n for topic, parts in (nested or {}).items() for p, n in parts.items()}


class KafkaWireStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are log offsets, ``{"topic": {"partition": next offset to read}}``. On a live
    log they advance no further than each partition's high watermark (read again at every
    trigger, before the segments are listed), or its LSO below it for read_committed."""

    def __init__(self, options, schema):
        self.opts = parse_options(options, streaming=True)
        self.names = _requested_names(schema, self.opts)
        self.settings = settings_for(self.names, self.opts, PushedFilters())
        self._tails: dict = {}
        self._target: dict | None = None   # Trigger.AvailableNow's end
        self._last: dict | None = None
        self._known: dict = {}             # key -> (partition, marks) as the last _partitions() found them

    def _partitions(self):
        """(partition, (high watermark, checkpointed log start)) of the partitions read, as
        recorded now (watermarks.py)."""
        layout = discover(self.opts.paths, allow_empty=True, files=self.opts.files)
        if layout.snapshots:
            raise LayoutError(f"{layout.snapshots[0].path}: a snapshot is complete when written; "
                              f"read it with spark.read, not spark.readStream")
        chosen = [p for p in layout.partitions if self.opts.selects(p.topic, p.partition)]
        seen = {}
        for p in chosen:
            if seen.setdefault(p.key, p.path) != p.path:
                raise LayoutError(f"{seen[p.key]} and {p.path} both hold {partition_key(*p.key)}: a "
                                  f"stream's offsets are per topic-partition, so read them apart")
        hws = HighWatermarks(self.opts.high_watermark, self.opts.files, log_starts=self.opts.live_log)
        hws.load(p.path for p in chosen)
        found = [(p, (hws.bound(p.path, *p.key), hws.log_start(p.path, *p.key))) for p in chosen]
        self._known = {p.key: (p, marks) for p, marks in found}
        return found

    def _segments(self, part, fn):
        """``fn(segments)`` over the partition's segments listed now; on a live log, again
        without those retention deleted meanwhile (plan.after_vanished)."""
        return without_vanished(part.segments(), fn, self.opts.live_log)

    def _log_start(self, segments, floor: int | None = None) -> int:
        return log_start_offset(segments, floor) if segments else 0

    def initialOffset(self) -> dict:
        offsets = {}
        for part, marks in self._partitions():
            offsets[part.key] = self._segments(part, lambda segments: self._initial(part, marks, segments))
        return _nested(offsets)

    def _initial(self, part, marks, segments) -> int:
        if not segments:
            return 0
        hw, floor = marks
        anything, start = start_offset(self.opts, part.key, partition_key(*part.key), segments, hw, floor)
        if not anything:   # no record that late (strategy latest): start at the end
            start = latest_offset(segments, hw, self.opts.files)
        return self._log_start(segments, floor) if start is None else start

    def _checked_start(self, key, wanted: int | None, segments, floor: int | None = None) -> int:
        log_start = self._log_start(segments, floor)
        if wanted is None:
            return log_start   # a partition that appeared since: from its beginning
        if wanted < log_start:
            if self.opts.fail_on_data_loss:
                raise PlanError(f"{partition_key(*key)}: the stream is at offset {wanted} but the "
                                f"log now starts at {log_start} (segments were deleted before "
                                f"they were read); set failOnDataLoss=false to skip ahead")
            return log_start
        return wanted

    def _available(self, starts: dict) -> dict:
        """{key: (where the stream is, how far whole batches (or the LSO) reach)}."""
        ranges = {}
        for part, marks in self._partitions():
            ranges[part.key] = self._segments(part, lambda segments: self._range(part, marks, starts, segments))
        return ranges

    def _range(self, part, marks, starts: dict, segments) -> tuple:
        hw, floor = marks
        start = self._checked_start(part.key, starts.get(part.key), segments, floor)
        tail = self._tails.get(part.key)
        if tail is None or tail.next_offset is None or tail.next_offset < start:
            tail = self._tails[part.key] = LogTail(
                start, track_transactions=not self.opts.include_aborted, files=self.opts.files)
        tail.advance(segments, upto=hw)
        end = tail.next_offset if self.opts.include_aborted else tail.last_stable_offset
        if end is not None and hw is not None:
            end = min(end, hw)
        return start, max(start, end if end is not None else start)

    def latestOffset(self, start=None, limit=None) -> dict:
        starts = _flat(start if start is not None else self._last)
        ranges = self._available(starts)
        ends = {}
        budget = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        for key in sorted(ranges):
            begin, end = ranges[key]
            if self._target is not None:
                end = max(begin, min(end, self._target.get(key, (0, end))[1]))
            if budget is not None:
                end = begin + min(end - begin, budget)
                budget -= end - begin
            ends[key] = end
        for key, offset in starts.items():
            ends.setdefault(key, offset)   # a partition that vanished keeps its place
        self._last = _nested(ends)
        return self._last

    def getDefaultReadLimit(self):
        n = self.opts.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._available({})

    def reportLatestOffset(self):
        return self._last

    def partitions(self, start: dict, end: dict):
        """The micro-batch's input partitions, cut at ``maxPartitionBytes``; with
        ``minPartitions`` (k), at ``min(maxPartitionBytes, B // k)`` for a micro-batch of B
        bytes, as Spark's Kafka source divides each micro-batch's offset ranges. The partitions
        and log-start floors are those latestOffset found (read again only when it did not run
        in this reader); each partition's segments are listed once, for both cuts."""
        starts, ends = _flat(start), _flat(end)
        by_key = self._known
        if any(key not in by_key for key in ends):   # not planned after latestOffset here (a restart)
            by_key = {p.key: (p, marks) for p, marks in self._partitions()}
        listed = [(by_key[key][0], starts.get(key), stop, by_key[key][1][1], by_key[key][0].segments())
                  for key, stop in sorted(ends.items()) if key in by_key]
        tasks = self._range_tasks(listed, self.opts.split_bytes)
        if self.opts.min_partitions is not None:
            split = spread_split_bytes(sum(map(task_bytes, tasks)), self.opts.split_bytes,
                                       self.opts.min_partitions)
            if split < self.opts.split_bytes:
                tasks = self._range_tasks(listed, split)
        return _input_partitions(tasks, self.opts)

    def _range_tasks(self, listed, split_bytes: int) -> list:
        """The tasks of each (partition, start, stop, log start floor, its segments as listed)."""
        tasks = []
        for part, wanted, stop, floor, segments in listed:
            tasks += without_vanished(segments, lambda rest: self._tasks(part, wanted, stop, rest, floor, split_bytes),
                                      self.opts.live_log)
        return tasks

    def _tasks(self, part, wanted, stop: int, segments, floor, split_bytes: int) -> list:
        begin = self._checked_start(part.key, wanted, segments, floor)
        if begin >= stop:
            return []
        # Offsets below ``stop`` were below a high watermark: whole on disk (complete).
        bounded = self.opts.high_watermark != "logend"
        return tasks_for_range(part.topic, part.partition, segments, begin, stop,
                               split_bytes=split_bytes,
                               with_following=not self.opts.include_aborted,
                               fixed_limits=False, complete=bounded, files=self.opts.files,
                               if_vanished=vanished_rule(self.opts, begin))

    def read(self, partition):
        return _read_pack(partition, self.settings)

    def commit(self, end: dict) -> None:
        pass   # nothing is held: Spark's checkpoint is the only state that matters
