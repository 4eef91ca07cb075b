"""The broker's keeping of its partition logs, led or followed, as Kafka's LogManager and
ReplicaManager keep them: retention, the files of deleted segments, the checkpoint files of the log
directory, and the log cleaner's guard around a follower's truncation (``truncation``).

    manager = LogManager(broker)                       # raises BrokerStartError on a bad retention time
    options = manager.open_options(image, "orders", 0, topic_id)   # Log(...) keywords
    manager.start()                                    # the periodic tasks on the running loop
    manager.cleanup_logs()                             # one retention pass (kafka-log-retention)
    manager.shutdown()                                 # flush, then the clean-shutdown checkpoints

Periodic tasks, with Kafka's settings and first delays: retention every
``log.retention.check.interval.ms`` (kafkawire.broker.retention decides, this module applies),
``recovery-point-offset-checkpoint`` every ``log.flush.offset.checkpoint.interval.ms`` and
``log-start-offset-checkpoint`` every ``log.flush.start.offset.checkpoint.interval.ms``, all three
first after ``log.initial.task.delay.ms``; ``replication-offset-checkpoint`` (each partition's high
watermark) every ``replica.high.watermark.checkpoint.interval.ms`` from the start. A
retention pass renames a deleted segment's files (and the producer snapshot at its base offset,
kafkawire.broker.producer_snapshots) ``.deleted`` and removes them
``file.delete.delay.ms`` later; files left ``.deleted`` by a stop are removed when the partition
opens again, as Kafka's log loading does. The same due-queue removes the renamed directories of
deleted partitions (kafkawire.broker.log_deletion).

The recovery point of a log (what ``recovery-point-offset-checkpoint`` says) is the offset below
which it is on disk: the base offset of its active segment (a roll fsyncs the segment it closes),
the log end offset after the flush of a clean stop, as Kafka's. kafkawire's recovery checks the
last segment of every log at each open whatever the checkpoint says. The checkpointed log start
offset is read once, at the first open of each partition whose directory (and topic id) it was
written for; a log whose end is below it starts again empty at it (LogLoader's rule).

Several log directories (kafkawire.broker.log_dirs): each has its own three checkpoint files, with
the logs that live in it, as each of Kafka's log directories has.
"""
from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import os
import time

from kafkawire.storage.segment import DELETED_SUFFIX
from kafkawire.storage.state_files import (StateFileError, read_offset_checkpoint, read_partition_metadata,
                                           write_offset_checkpoint)

from .log_config import LONG_MAX, LogSettings, retention_time_ms
from .log_deletion import remove_deleted
from .log_dir_failure import storage_failure
from .partition import partition_dir_name
from .producer_snapshots import retire_snapshots
from .retention import SegmentView, segments_to_delete

__all__ = ["LogManager", "PendingDeletes", "log_dir_paths", "RECOVERY_POINT_CHECKPOINT", "REPLICATION_CHECKPOINT",
           "LOG_START_CHECKPOINT"]

log = logging.getLogger(__name__)
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class PendingDeletes:
    """Files renamed ``.deleted``, each with the time it may be removed (without I/O)."""

    def __init__(self):
        self._heap: list[tuple[int, int, str]] = []
        self._added = 0

    def add(self, paths, due_ms: int) -> None:
        for path in paths:
            self._added += 1
            heapq.heappush(self._heap, (due_ms, self._added, path))

    def due(self, now_ms: int) -> list[str]:
        """The paths whose time has come (taken out)."""
        out = []
        while self._heap and self._heap[0][0] <= now_ms:
            out.append(heapq.heappop(self._heap)[2])
        return out

    def next_due_ms(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)


def _segment_views(log_) -> list[SegmentView]:
    views = []
    for segment in log_.segments:
        largest = segment.max_timestamp
        if largest < 0:                          # no record timestamp: the file's last modification
            largest = int(os.stat(segment.log_path).st_mtime * 1000)
        views.append(SegmentView(segment.base_offset, segment.size, largest))
    return views


def log_dir_paths(broker) -> list[str]:
    """The broker's log directories (absolute): its LogDirs, or the one ``log_dir`` of a broker without."""
    dirs = getattr(broker, "log_dirs", None)
    return list(dirs.paths) if dirs is not None else [os.path.abspath(broker.log_dir)]


def _read_checkpoint_file(path: str) -> dict:
    try:
        return read_offset_checkpoint(path) if os.path.exists(path) else {}
    except (StateFileError, OSError, ValueError) as exc:
        log.warning("cannot read %s, ignored as Kafka ignores it: %s", path, exc)
        return {}


class LogManager:
    """Retention and checkpoints of ``broker``'s logs (its ``partitions``, ``image()``, ``config``, ``log_dir``)."""

    def __init__(self, broker, *, clock=None):
        from .broker import BrokerStartError           # a cycle: the broker module imports this one
        c = broker.config
        if retention_time_ms(c.log_retention_ms, c.log_retention_minutes, c.log_retention_hours) == 0:
            raise BrokerStartError("log.retention.ms must be unlimited (-1) or, greater than or equal to 1")
        self.broker = broker
        self.clock = clock or _wall_clock_ms
        self.pending = PendingDeletes()
        self.recovery_points: dict[tuple[str, int], int] = {}
        self.paths = log_dir_paths(broker)
        # log directory -> its checkpoint's offsets (each taken at the first open of its partition)
        self._recovery_checkpoint = {d: _read_checkpoint_file(os.path.join(d, RECOVERY_POINT_CHECKPOINT))
                                     for d in self.paths}
        self._start_checkpoint = {d: _read_checkpoint_file(os.path.join(d, LOG_START_CHECKPOINT)) for d in self.paths}
        self._hw_checkpoint = {d: _read_checkpoint_file(os.path.join(d, REPLICATION_CHECKPOINT)) for d in self.paths}
        self._handles: dict[str, asyncio.TimerHandle] = {}
        self.cleaner = self._make_cleaner(c, BrokerStartError)

    def _make_cleaner(self, c, error):
        """The log cleaner, unless ``log.cleaner.enable`` is false or ``log.cleaner.threads`` 0."""
        from .log_cleaner import LogCleaner
        if c.log_cleaner_threads > 1:
            raise error(f"log.cleaner.threads={c.log_cleaner_threads}: kafkawire's broker runs one log cleaner thread")
        if not c.log_cleaner_enable or c.log_cleaner_threads == 0:
            return None
        try:
            return LogCleaner(self, c)
        except ValueError as exc:
            raise error(str(exc)) from None

    def _log_dir(self, log_dir: str | None) -> str:
        return self.paths[0] if log_dir is None else os.path.abspath(log_dir)

    def logs_per_dir(self) -> dict[str, int]:
        """Log directory -> the logs open in it (LogManager.nextLogDirs counts them)."""
        counts: dict[str, int] = {}
        for partition in self.replicas().values():
            parent = os.path.dirname(os.path.abspath(partition.log.directory))
            counts[parent] = counts.get(parent, 0) + 1
        return counts

    def settings(self, image, topic: str) -> LogSettings:
        return self.broker.topic_configs.log_settings(image, topic)

    # -- opening a log --

    def open_options(self, image, topic: str, index: int, topic_id, log_dir: str | None = None) -> dict:
        """The keywords of kafkawire.storage.log.Log for this partition in ``log_dir`` (None: the
        first): its settings, the clock and the checkpointed log start offset (once, and only for
        the directory it was written for)."""
        s = self.settings(image, topic)
        options = dict(segment_bytes=s.segment_bytes, segment_ms=s.roll_ms, max_index_size=s.segment_index_bytes,
                       segment_jitter_ms=s.roll_jitter_bound_ms, clock=self.clock,
                       index_interval_bytes=s.index_interval_bytes, flush_messages=s.flush_messages)
        log_dir = self._log_dir(log_dir)
        start = self._start_checkpoint.get(log_dir, {}).pop((topic, index), None)
        directory = os.path.join(log_dir, partition_dir_name(topic, index))
        if start is not None and self._written_for(directory, topic_id):
            options["log_start_offset"] = start
        return options

    def checkpointed_high_watermark(self, topic: str, index: int, topic_id, log_dir: str | None = None) -> int:
        """Partition.createLog's start: the ``replication-offset-checkpoint`` value (once, and only for the
        directory it was written for), else 0 (LeaderPartition keeps it within the log)."""
        log_dir = self._log_dir(log_dir)
        hw = self._hw_checkpoint.get(log_dir, {}).pop((topic, index), None)
        directory = os.path.join(log_dir, partition_dir_name(topic, index))
        return hw if hw is not None and self._written_for(directory, topic_id) else 0

    def keep_offsets(self, log_dir: str, key: tuple[str, int], *, high_watermark: int, log_start_offset: int,
                     recovery_point: int | None) -> None:
        """A log closed to move to ``log_dir`` (kafkawire.broker.alter_log_dirs) opens there again with
        these, as if that directory's checkpoints had them."""
        log_dir = os.path.abspath(log_dir)
        self._hw_checkpoint.setdefault(log_dir, {})[key] = high_watermark
        self._start_checkpoint.setdefault(log_dir, {})[key] = log_start_offset
        if recovery_point is not None:
            self._recovery_checkpoint.setdefault(log_dir, {})[key] = recovery_point

    @staticmethod
    def _written_for(directory: str, topic_id) -> bool:
        try:
            return read_partition_metadata(os.path.join(directory, "partition.metadata")) == topic_id
        except (StateFileError, OSError, ValueError):
            return False

    @staticmethod
    def remove_stray_files(directory: str, name: str) -> None:
        """Before the log of ``name`` in ``directory`` opens, its ``.deleted`` files left over from
        before a restart are removed (LogLoader.removeTempFilesAndCollectSwapFiles, at debug level);
        an I/O error is raised (the log is not opened: its directory goes offline, LogManager.loadLogs'
        "Error while loading log dir")."""
        parent = os.path.dirname(os.path.abspath(directory))
        for file in os.listdir(directory):
            if file.endswith(DELETED_SUFFIX):
                path = os.path.join(directory, file)
                log.debug("[LogLoader partition=%s, dir=%s] Deleting stray temporary file %s", name, parent,
                          os.path.abspath(path))
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass

    def opened(self, partition) -> None:
        """After a partition's log opened: a log end below the checkpointed start restarted there,
        the recovery point set."""
        log_ = partition.log
        if log_.log_start_offset > log_.log_end_offset:
            log.warning("%s: the log ends at %d, below its checkpointed start %d: it starts again there",
                        partition.name, log_.log_end_offset, log_.log_start_offset)
            log_.truncate_fully_and_start_at(log_.log_start_offset)
        key = (partition.topic, partition.partition)
        checkpoint = self._recovery_checkpoint.get(os.path.dirname(os.path.abspath(log_.directory)), {})
        checkpointed = checkpoint.pop(key, log_.active_segment.base_offset)
        self.recovery_points[key] = min(checkpointed, log_.log_end_offset)

    def configure(self, partition, image) -> None:
        """A topic's or the broker's configs may have changed: the open log takes the new roll and flush
        settings (a new jitter bound and index interval apply to the segments made from now on, as Kafka
        draws a segment's jitter and fixes its index interval at its open)."""
        s = self.settings(image, partition.topic)
        log_ = partition.log
        log_.segment_bytes, log_.segment_ms, log_.max_index_size = s.segment_bytes, s.roll_ms, s.segment_index_bytes
        log_.segment_jitter_ms, log_.index_interval_bytes = s.roll_jitter_bound_ms, s.index_interval_bytes
        log_.flush_messages = s.flush_messages
        partition.producers.expiration_ms = self.producer_id_expiration_ms(image)

    def producer_id_expiration_ms(self, image) -> int:
        """producer.id.expiration.ms as set dynamically (DynamicProducerStateManagerConfig: every
        partition's producer state takes it), else server.properties'."""
        return self.broker.topic_configs.cached_broker_value(image, "producer.id.expiration.ms",
                                                             self.broker.config.producer_id_expiration_ms)

    # -- retention (kafka-log-retention) --

    def cleanup_logs(self) -> int:
        """One retention pass over every log not compacted, led or followed (the log cleaner applies
        retention to the compacted ones, as Kafka's LogManager.cleanupLogs leaves them); the number of
        segments deleted. A follower's pass is bounded by its own high watermark, as Kafka's."""
        image = self.broker.image()
        total = 0
        for key, partition in list(self.replicas().items()):
            settings = self.settings(image, partition.topic)
            if settings.compact or self.replica(key) is not partition:     # not: closed, its directory failed
                continue
            for log_ in [partition, *self._future_of(partition)]:     # a future log too, as Kafka's
                try:
                    total += self.delete_old_segments(log_, settings)
                except OSError as exc:      # UnifiedLog.deleteSegments: the directory goes offline
                    storage_failure(self.broker, log_, "delete", exc, future=log_ is not partition)
                    break
        return total

    def _future_of(self, partition) -> list:
        """The future log (kafkawire.broker.log_dir_copy) of a replica being moved, as a LeaderPartition."""
        alter = getattr(self.broker, "alter_log_dirs", None)
        future = None if alter is None else alter.futures.futures.get((partition.topic, partition.partition))
        return [] if future is None else [future.partition]

    def delete_old_segments(self, partition, settings: LogSettings) -> int:
        log_ = partition.log
        if self.broker.state_writes.pending(log_.directory):
            return 0           # a producer snapshot that deleted segments leave to is not on disk yet: next pass
        now = self.clock()
        decision = segments_to_delete(_segment_views(log_), log_start_offset=log_.log_start_offset,
                                      log_end_offset=log_.log_end_offset, high_watermark=partition.high_watermark(),
                                      settings=settings, now_ms=now)
        if decision.nothing:
            return 0
        if decision.roll_first:
            partition.maybe_snapshot()       # UnifiedLog.roll snapshots the state at the new segment's base
        bases = [segment.base_offset for segment in log_.segments]
        # UnifiedLog.deleteSegments moves the log start before the segments go (epochs trimmed,
        # producer state told), then removes them
        partition.maybe_increment_log_start_offset(decision.log_start_offset)
        renamed = log_.retire_oldest_segments(decision.count, roll_first=decision.roll_first)
        kept = {segment.base_offset for segment in log_.segments}    # an empty active one rolled again stays
        renamed += retire_snapshots(log_.directory, [base for base in bases if base not in kept])
        self.pending.add(renamed, now + settings.file_delete_delay_ms)
        log.info("%s: deleted %d segments (%s); the log starts at %d", partition.name, decision.count,
                 ", ".join(decision.reasons), log_.log_start_offset)
        return decision.count

    @contextlib.contextmanager
    def truncation(self, partition, *, below_active: bool):
        """Around a follower's truncation (LogManager.truncateTo, truncateFullyAndStartAt): when the cut
        reaches below the active segment, a cleaning of the log in progress is given up first (its
        swap would meet cut segments, or ones cut and written again since, and put back what was
        cut) and the cleaner checkpoint comes down to the new active segment after (what is written
        again there is dirty)."""
        if self.cleaner is None or not below_active:
            yield
            return
        self.cleaner.abort(partition)
        yield
        self.cleaner.maybe_truncate_checkpoint(partition, partition.log.active_segment.base_offset)

    def delete_due_files(self) -> int:
        due = self.pending.due(self.clock())
        on_failure = getattr(self.broker, "fail_log_dir", None)      # the directory goes offline
        for path in due:
            remove_deleted(path, on_failure)        # segment files, and the directories of deleted partitions
        return len(due)

    # -- checkpoints --

    def replicas(self) -> dict:
        """Every partition with a log here, led or followed (kafkawire.broker.replica_roles): Kafka's
        LogManager keeps, cleans and checkpoints every log of the directory whatever its role."""
        replicas = dict(self.broker.partitions)
        replicas.update((key, f.partition) for key, f in self.broker.replica_roles.followers.items())
        return replicas

    def replica(self, key: tuple[str, int]):
        """The partition of ``key`` led or followed here, else None: one look-up each, without
        building replicas() (the log cleaner's thread asks it between two batches)."""
        partition = self.broker.partitions.get(key)
        if partition is None:
            follower = self.broker.replica_roles.followers.get(key)
            partition = None if follower is None else follower.partition
        return partition

    def checkpoint_recovery_points(self) -> None:
        offsets = {}
        for key, partition in self.replicas().items():
            # never below the log start (UnifiedLog.updateLogStartOffset moves the recovery point up with it)
            # and up to the last flush since the open (flush.messages: UnifiedLog.flush moves it)
            flushed = partition.log.flushed_offset if partition.log.flush_count else 0
            point = max(self.recovery_points.get(key, 0), partition.log.active_segment.base_offset,
                        partition.log.log_start_offset, flushed)
            self.recovery_points[key] = offsets[key] = min(point, partition.log.log_end_offset)
        self._write(RECOVERY_POINT_CHECKPOINT, offsets)

    def checkpoint_high_watermarks(self) -> None:
        marks = {k: p.high_watermark() for k, p in self.broker.partitions.items()}
        marks.update((key, f.high_watermark) for key, f in self.broker.replica_roles.followers.items())
        self._write(REPLICATION_CHECKPOINT, marks)

    def checkpoint_log_start_offsets(self) -> None:
        """Only the logs whose start is past their first segment's base, as Kafka writes them."""
        self._write(LOG_START_CHECKPOINT, {k: p.log.log_start_offset for k, p in self.replicas().items()
                                           if p.log.log_start_offset > p.log.segments[0].base_offset})

    def _write(self, name: str, offsets: dict) -> None:
        """Each log directory's file, with the offsets of the logs in it."""
        replicas = self.replicas()
        by_dir: dict[str, dict] = {d: {} for d in self.paths}
        for key, offset in offsets.items():
            partition = replicas.get(key)
            parent = self.paths[0] if partition is None else os.path.dirname(os.path.abspath(partition.log.directory))
            by_dir.setdefault(parent, {})[key] = offset
        offline = getattr(getattr(self.broker, "log_dirs", None), "offline", ())
        for log_dir, dir_offsets in by_dir.items():
            if log_dir in offline:
                continue
            try:
                write_offset_checkpoint(os.path.join(log_dir, name), dir_offsets)
            except OSError as exc:
                log.error("cannot write %s in %s: %s", name, log_dir, exc)
                fail = getattr(self.broker, "fail_log_dir", None)      # as Kafka's LogDirFailureChannel
                if fail is not None:
                    fail(log_dir, exc)

    # -- the periodic tasks --

    def start(self) -> None:
        c = self.broker.config
        delay = c.log_initial_task_delay_ms
        self._every("kafka-log-retention", delay, c.log_retention_check_interval_ms, self.cleanup_logs)
        self._every("kafka-recovery-point-checkpoint", delay, c.log_flush_offset_checkpoint_interval_ms,
                    self.checkpoint_recovery_points)
        self._every("kafka-log-start-offset-checkpoint", delay, c.log_flush_start_offset_checkpoint_interval_ms,
                    self.checkpoint_log_start_offsets)
        self._every("highwatermark-checkpoint", 0, c.replica_high_watermark_checkpoint_interval_ms,
                    self.checkpoint_high_watermarks)
        self._every("delete-file", 0, 1000, self.delete_due_files)
        self._every("kafka-log-flusher", delay, c.log_flush_scheduler_interval_ms, self.flush_dirty_logs)
        if self.cleaner is not None:
            self.cleaner.start()

    def _every(self, name: str, delay_ms: int, period_ms: int, task) -> None:
        loop = asyncio.get_running_loop()

        def run():
            try:
                task()
            except Exception:                   # a periodic task must never take the loop down
                log.exception("log manager task %s failed", name)
            if period_ms < LONG_MAX:            # Long.MAX_VALUE: once, as Kafka's scheduler runs it
                self._handles[name] = loop.call_later(max(period_ms, 1) / 1000, run)
        self._handles[name] = loop.call_later(max(delay_ms, 0) / 1000, run)

    def flush_dirty_logs(self) -> int:
        """The log flusher (LogManager.flushDirtyLogs): every log, a future one too, with offsets
        unflushed ``flush.ms`` or more after its last flush is flushed; the number flushed. The
        fsyncs run here, on the loop, as Kafka's run on its scheduler's thread."""
        image = self.broker.image()
        now = self.clock()
        flushed = 0
        for key, partition in list(self.replicas().items()):
            flush_ms = self.settings(image, partition.topic).flush_ms
            if flush_ms >= LONG_MAX:
                continue
            for replica in [partition, *self._future_of(partition)]:
                log_ = replica.log
                if log_.unflushed_messages > 0 and now - log_.last_flush_ms >= flush_ms:
                    try:
                        log_.flush()
                    except OSError as exc:          # UnifiedLog.flush: the directory goes offline
                        storage_failure(self.broker, replica, "flush", exc, future=replica is not partition)
                        break
                    flushed += 1
                    if replica is partition:
                        self.recovery_points[key] = log_.flushed_offset
        return flushed

    def shutdown(self) -> None:
        """A clean stop (LogManager.shutdown, ReplicaManager's last high watermarks): the logs flushed,
        their recovery points at their ends, and the three checkpoints written."""
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()
        if self.cleaner is not None:
            self.cleaner.shutdown()
        self.checkpoint_high_watermarks()
        for key, partition in self.replicas().items():
            try:
                partition.log.flush()
                self.recovery_points[key] = partition.log.log_end_offset
            except OSError as exc:
                log.warning("flushing %s: %s", partition.name, exc)
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()

