"""The broker's log cleaner for ``cleanup.policy=compact`` topics (Kafka's LogCleaner and
LogCleanerManager): a background task that, every ``log.cleaner.backoff.ms`` when it found nothing
to do, picks the dirtiest compacted log, led or followed (kafkawire.broker.cleaner_rules; a log
is cleaned below its own last stable offset, a follower's bounded by the high watermark its leader
sent), cleans it on its own thread (kafkawire.broker.cleaner_work), swaps the cleaned segments in on
the event loop (kafkawire.storage.swap) and records where the next cleaning starts in
``cleaner-offset-checkpoint`` of the log directory (Kafka's offset checkpoint format). After each
round it applies retention to the compacted logs (``compact,delete``; the log start offset for
``compact``), which the retention task leaves to it, as Kafka's cleaner does.

    cleaner = LogCleaner(log_manager, server_config)     # its log.cleaner.* keys
    cleaner.start()                 # on the running loop
    await cleaner.clean_once()      # one round (tests)
    cleaner.shutdown()

The reading, hashing and writing run on one thread (``log.cleaner.threads`` 1, the default; more
are refused as a start error): a cleaning is CPU work in Python and would hold the event loop for
seconds if done there in one go, and cut in chunks it would need its state kept across them; on a
thread it reads and writes files without care for the loop, and hands the interpreter to the loop
between two batches (the loop then waits no longer than it does on an idle node). The swap, which
changes the log's segment list, runs on the loop between two requests, and gives up when the log
changed under the cleaning (a segment deleted or replaced) or a follower's truncation stopped it
(``abort``, through LogManager.truncation).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
from concurrent.futures import ThreadPoolExecutor

from kafkawire.records import CorruptRecordError
from kafkawire.storage.state_files import write_offset_checkpoint

from .cleaner_filter import LastRecord, OffsetMap
from .cleaner_rules import choose_filthiest, cleanable_offsets, log_to_clean
from .cleaner_work import Cleaner, CleaningAborted, CleaningJob, SourceSegment, Throttler
from .log_dir_failure import storage_failure

__all__ = ["LogCleaner", "CLEANER_CHECKPOINT", "offset_map_memory"]

log = logging.getLogger(__name__)
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"     # LogCleanerManager.OFFSET_CHECKPOINT_FILE
_INT_MAX = 0x7FFFFFFF
_HEADER_BYTES = 43                 # a v2 batch header up to and with its max timestamp


def offset_map_memory(c) -> int:
    """LogCleaner's map size: log.cleaner.dedupe.buffer.size shared by the threads, at most an int."""
    return int(min(c.log_cleaner_dedupe_buffer_size // max(c.log_cleaner_threads, 1), _INT_MAX))


def _first_batch_timestamp(path: str) -> int:
    """LogSegment.getFirstBatchTimestamp: the first batch's max timestamp (-1 without one)."""
    try:
        with open(path, "rb") as f:
            header = f.read(_HEADER_BYTES)
    except OSError:
        return -1
    return int.from_bytes(header[35:43], "big", signed=True) if len(header) == _HEADER_BYTES else -1


def _last_stable_offset(partition) -> int:
    lso = getattr(partition, "last_stable_offset", None)      # the transactions' LSO, once partitions have one
    return lso() if callable(lso) else partition.high_watermark()


def _last_records(partition) -> dict:
    producers = getattr(getattr(partition, "producers", None), "producers", {})
    return {pid: LastRecord(e.last_data_offset if e.last_data_offset >= 0 else None, e.producer_epoch)
            for pid, e in producers.items()}


class LogCleaner:
    """The cleaner of a broker's compacted logs (see the module docstring); ``manager`` is its LogManager."""

    def __init__(self, manager, config):
        self.manager = manager
        self.broker = manager.broker
        self.config = config
        self.backoff_ms = config.log_cleaner_backoff_ms
        self._map_settings = (offset_map_memory(config), config.log_cleaner_io_buffer_load_factor)
        self.offset_map = OffsetMap(*self._map_settings)
        from .log_manager import _read_checkpoint_file          # a cycle: log_manager makes the cleaner
        self.checkpoints: dict = {}          # every log directory's cleaner-offset-checkpoint (a log is in one)
        for log_dir in manager.paths:
            self.checkpoints.update(_read_checkpoint_file(os.path.join(log_dir, CLEANER_CHECKPOINT)))
        self.uncleanable: dict = {}        # partition key -> the partition whose cleaning failed (Kafka's uncleanable set)
        self.paused: set = set()           # partition keys not cleaned meanwhile (a log being moved: abortAndPauseCleaning)
        self._first_batch_ts: dict[tuple[str, int], int] = {}
        self._current: tuple | None = None    # (partition key, partition, {base offset: LogSegment}) being cleaned
        self._aborted = False
        self._task: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafka-log-cleaner-thread-0")
        self.cleaner = Cleaner(self.offset_map, throttler=Throttler(config.log_cleaner_io_max_bytes_per_second),
                               check_done=self._check_done)

    # -- the background task --

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while not self._aborted:
            try:
                cleaned = await self.clean_once()
            except Exception:                     # the cleaner must go on with the other logs
                log.exception("the log cleaner's round failed")
                cleaned = False
            if not cleaned:
                await asyncio.sleep(self.backoff_ms / 1000)

    def shutdown(self) -> None:
        self._aborted = True
        if self._task is not None:
            self._task.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _check_done(self) -> None:
        if self._aborted or not self._still_current():
            raise CleaningAborted("the cleaning was stopped")

    def _still_current(self) -> bool:
        """The partition being cleaned is still the broker's, led or followed (not deleted, nor created
        again), and its cleaning was not given up (abort)."""
        current = self._current
        return current is not None and self.manager.replica(current[0]) is current[1]

    def abort(self, partition) -> None:
        """LogCleanerManager.abortCleaning, before a follower's log is truncated: a cleaning of it in
        progress stops, swaps nothing more, marks nothing uncleanable and moves no checkpoint (the
        thread may read cut files meanwhile: what it makes of them is dropped)."""
        if self._current is not None and self._current[1] is partition:
            self._current = None

    def pause(self, partition) -> None:
        """LogCleanerManager.abortAndPauseCleaning: a cleaning in progress stops, none starts until ``resume``."""
        self.abort(partition)
        self.paused.add((partition.topic, partition.partition))

    def resume(self, key) -> None:
        self.paused.discard(key)

    def _uncleanable(self, key, partition) -> bool:
        return self.uncleanable.get(key) is partition

    async def clean_once(self) -> bool:
        """One round (CleanerThread.cleanFilthiestLog): clean the dirtiest log if one is cleanable, then
        retention on the compacted logs; whether a log was cleaned."""
        self.reconfigure()
        job = self.grab_filthiest()
        if job is not None:
            await self._clean(job)
        self._delete_old_segments()
        return job is not None

    def reconfigure(self) -> None:
        """LogCleaner.reconfigure, between two cleanings: log.cleaner.backoff.ms,
        io.max.bytes.per.second, dedupe.buffer.size and io.buffer.load.factor as set dynamically
        for this broker, then for every broker, else server.properties. The map gets the whole
        dedupe buffer: there is one cleaner thread whatever log.cleaner.threads says (a change of
        it is taken by the dynamic config check, as Kafka takes it, and not applied)."""
        c, image = self.config, self.broker.image()
        value = functools.partial(self.broker.topic_configs.broker_value, image)
        self.backoff_ms = value("log.cleaner.backoff.ms", c.log_cleaner_backoff_ms)
        self.cleaner.throttler.rate = value("log.cleaner.io.max.bytes.per.second",
                                            float(c.log_cleaner_io_max_bytes_per_second))
        memory = min(value("log.cleaner.dedupe.buffer.size", c.log_cleaner_dedupe_buffer_size), _INT_MAX)
        settings = (memory, value("log.cleaner.io.buffer.load.factor", c.log_cleaner_io_buffer_load_factor))
        if settings != self._map_settings:
            try:
                self.offset_map = self.cleaner.offset_map = OffsetMap(*settings)
            except ValueError as exc:       # too small for one entry: Kafka's cleaner threads fail to start
                log.error("the log cleaner keeps its offset map of %d bytes: %s", self._map_settings[0], exc)
                return
            self._map_settings = settings
            log.info("the log cleaner's offset map is now %d bytes, load factor %s", *settings)

    # -- choosing (on the loop) --

    def _segments(self, log_, seen: dict) -> list[SourceSegment]:
        """The log's segments as the cleaner reads them; ``seen`` collects the first-batch timestamps
        read (the cache of the next round, so it holds only segments that still exist)."""
        from .log_manager import _segment_views               # a cycle: log_manager makes the cleaner
        segments, views = log_.segments, _segment_views(log_)
        out = []
        for i, (segment, view) in enumerate(zip(segments, views)):
            following = segments[i + 1].base_offset if i + 1 < len(segments) else log_.log_end_offset
            first_ts = -1
            if i + 1 < len(segments):       # an inactive segment's first batch does not change
                cached = (segment.log_path, segment.size)          # a cleaned segment has another size
                first_ts = self._first_batch_ts.get(cached)
                if first_ts is None:
                    first_ts = _first_batch_timestamp(segment.log_path)
                seen[cached] = first_ts
            out.append(SourceSegment(segment.base_offset, following, segment.log_path, segment.size,
                                     int(os.stat(segment.log_path).st_mtime * 1000), view.largest_timestamp, first_ts,
                                     segment.offset_index.size_in_bytes, segment.time_index.size_in_bytes))
        return out

    def grab_filthiest(self) -> CleaningJob | None:
        """LogCleanerManager.grabFilthiestCompactedLog, and the job for that log."""
        image, now = self.broker.image(), self.manager.clock()
        candidates, found, seen = [], {}, {}
        for key, partition in self.manager.replicas().items():        # leaders and followers, as Kafka's
            settings = self.manager.settings(image, partition.topic)
            if not settings.compact or self._uncleanable(key, partition) or key in self.paused:
                continue
            log_ = partition.log
            segments = self._segments(log_, seen)
            views = [s.view() for s in segments]
            offsets = cleanable_offsets(views, log_start_offset=log_.log_start_offset,
                                        log_end_offset=log_.log_end_offset,
                                        last_stable_offset=_last_stable_offset(partition),
                                        checkpoint=self.checkpoints.get(key),
                                        min_compaction_lag_ms=settings.min_compaction_lag_ms, now_ms=now)
            if offsets.force_update_checkpoint:
                self._update_checkpoint(key, offsets.first_dirty_offset)
            candidate = log_to_clean(key, views, offsets, max_compaction_lag_ms=settings.max_compaction_lag_ms,
                                     now_ms=now)
            candidates.append((candidate, settings.min_cleanable_dirty_ratio))
            found[key] = (partition, segments, settings)
        self._first_batch_ts = seen
        best = choose_filthiest(candidates)
        if best is None:
            return None
        partition, segments, settings = found[best.key]
        self._current = (best.key, partition, {s.base_offset: s for s in partition.log.segments})
        return CleaningJob(partition.name, partition.log.directory,
                           [s for s in segments if s.base_offset < best.first_uncleanable_offset],
                           best.first_dirty_offset, best.first_uncleanable_offset, settings, now,
                           _last_records(partition), partition.log.index_interval_bytes)

    # -- cleaning (on the thread) and swapping (on the loop) --

    async def _clean(self, job: CleaningJob) -> None:
        """LogCleaner.cleanLog: the checkpoint moves to where the cleaning ended (its start if it stopped)."""
        if self._current is None:                # grab_filthiest set it; an abort since gave it up
            return
        key, _, _ = self._current
        end = job.first_dirty_offset
        loop = asyncio.get_running_loop()
        try:
            end, stats = await loop.run_in_executor(self._executor, self.cleaner.clean, job, self._swapper(loop))
            log.info("Cleaned log %s: %d messages read, %d kept, %d bytes read, %d written; it is clean up to %d",
                     job.name, stats.messages_read, stats.messages_written, stats.bytes_read, stats.bytes_written, end)
        except CleaningAborted as exc:
            log.info("The cleaning of %s stopped: %s", job.name, exc)
        except OSError as exc:          # IOException: the log's directory goes offline (not uncleanable)
            if self._still_current():
                self._directory_failed(job, exc)
        except (CorruptRecordError, ValueError) as exc:
            if self._still_current():          # not a log deleted or truncated under the cleaning
                log.error("Cleaning %s failed; it is uncleanable until it is opened again: %s", job.name, exc)
                self._mark_uncleanable()
        except Exception:              # LogCleaningException: any other failure marks the log too
            if self._still_current():
                log.exception("Cleaning %s failed; it is uncleanable until it is opened again", job.name)
                self._mark_uncleanable()
        finally:
            done = self._still_current() and not self._aborted     # doneCleaning: an aborted one moves nothing
            self._current = None
        if done:
            self._update_checkpoint(key, end)

    def _directory_failed(self, job: CleaningJob, error: OSError) -> None:
        """LogCleaner's IOException: the directory of the log being cleaned goes offline with Kafka's
        message (LogDirFailureChannel), or, for a broker without failure handling, the log is uncleanable."""
        path = os.path.dirname(os.path.abspath(job.directory))
        message = f"Failed to clean up log for {job.name} in dir {path} due to IOException"
        fail = getattr(self.broker, "fail_log_dir", None)
        if fail is None:
            log.error("%s: %s", message, error)
            self._mark_uncleanable()
        else:
            fail(path, error, message=message)

    def _mark_uncleanable(self) -> None:
        assert self._current is not None
        key, partition, _ = self._current
        self.uncleanable[key] = partition

    def _swapper(self, loop):
        """For the thread: run the swap on the loop and wait for it (False when it gave up or stopped)."""
        def swap(new_base: int, old_bases: list[int]) -> bool:
            try:
                future = asyncio.run_coroutine_threadsafe(self._swap(new_base, old_bases), loop)
            except RuntimeError:              # the loop is closed
                return False
            while True:
                try:
                    return future.result(timeout=0.5)
                except concurrent.futures.TimeoutError:
                    if self._aborted:
                        future.cancel()
                        return False
        return swap

    async def _swap(self, new_base: int, old_bases: list[int]) -> bool:
        if self._aborted or self._current is None or not self._still_current():
            return False
        key, partition, handles = self._current
        now = {s.base_offset: s for s in partition.log.segments}
        if any(now.get(base) is not handles.get(base) for base in old_bases):
            return False
        renamed = partition.log.replace_segments(new_base, old_bases)
        settings = self.manager.settings(self.broker.image(), partition.topic)
        self.manager.pending.add(renamed, self.manager.clock() + settings.file_delete_delay_ms)
        self._current = (key, partition, {s.base_offset: s for s in partition.log.segments})
        return True

    # -- retention and the checkpoint --

    def _delete_old_segments(self) -> None:
        """LogCleanerManager.deletableLogs: retention of every compacted log, led or followed."""
        image = self.broker.image()
        for key, partition in list(self.manager.replicas().items()):
            if self.manager.replica(key) is not partition:
                continue            # closed: its directory failed in this pass
            settings = self.manager.settings(image, partition.topic)
            if settings.compact and not self._uncleanable(key, partition):
                try:
                    self.manager.delete_old_segments(partition, settings)
                except OSError as exc:      # UnifiedLog.deleteSegments: the directory goes offline
                    storage_failure(self.broker, partition, "delete", exc)

    def maybe_truncate_checkpoint(self, partition, offset: int) -> None:
        """LogCleanerManager.maybeTruncateCheckpoint, after a follower's truncation: a compacted log's
        checkpoint above ``offset`` comes down to it."""
        key = (partition.topic, partition.partition)
        if self.manager.settings(self.broker.image(), partition.topic).compact and self.checkpoints.get(key, 0) > offset:
            self._update_checkpoint(key, offset)

    def _update_checkpoint(self, key, offset: int) -> None:
        """LogCleanerManager.updateCheckpoints: the file of the log's directory keeps the logs the
        broker has there, led or followed."""
        self.checkpoints[key] = offset
        partition = self.manager.replica(key)
        if partition is None:
            return
        log_dir = os.path.dirname(os.path.abspath(partition.log.directory))
        live = {}
        for k, v in self.checkpoints.items():
            replica = self.manager.replica(k)
            if replica is not None and os.path.dirname(os.path.abspath(replica.log.directory)) == log_dir:
                live[k] = v
        path = os.path.join(log_dir, CLEANER_CHECKPOINT)
        try:
            write_offset_checkpoint(path, live)
        except OSError as exc:
            log.error("Failed to access checkpoint file %s in dir %s: %s", path, log_dir, exc)
            self._fail_soon(log_dir, exc, f"Error while writing to checkpoint file {path}")

    def _fail_soon(self, log_dir: str, error: OSError, message: str) -> None:
        """CheckpointFileWithFailureHandler: the directory goes offline, once the work under way
        (a pass over the partitions, a follower's truncation) is done, on the loop's next turn."""
        fail = getattr(self.broker, "fail_log_dir", None)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:            # not on the loop: logged only
            return
        if fail is not None:
            loop.call_soon(functools.partial(fail, log_dir, error, message=message))
