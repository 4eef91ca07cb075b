"""The future logs of AlterReplicaLogDirs (kafkawire.broker.alter_log_dirs): a replica copied to
another log directory while it keeps serving, as Kafka's ReplicaAlterLogDirsThread copies it.

    futures = FutureLogs(broker)
    futures.create(partition, destination)     # the future log made; the copier task started
    futures.on_metadata()                      # after each metadata change: resumes and drops
    await futures.stop()

The future log is a second log of the partition, ``<topic>-<partition>.<32 hex>-future`` in the
destination directory, written as a follower writes its log (kafkawire.broker.follower: the
batches as they are, the leader epoch cache from their partition leader epochs, the producer
state replayed, an abort's ``.txnindex`` entry, a producer snapshot at each roll). One task on
the event loop copies one partition at a time (Kafka's inProgressPartition), in steps of at most
``replica.fetch.max.bytes`` read from the current log (a fetch from the local replica up to its
log end, LocalLeaderEndPoint's), giving the loop back between steps, so produce and fetch on the
partition go on throughout. Each step first follows what happened to the current log since the
last one, as the fetcher does against its leader: a truncation (a follower's) by the leader epochs
(OffsetForLeaderEpoch against the current log: AbstractFetcherThread.getOffsetTruncationState), a
log end below the future's, a log start moved past the future's end (retention, DeleteRecords:
the future restarts at the current log start), and after the append the current high watermark
and log start (maybeIncrementLogStartOffset). What was copied is fsynced off the loop every
``FLUSH_BYTES``.

When the future log has caught up with the current one (and what it holds is mostly fsynced:
more than ``SWAP_FLUSH_BYTES`` not yet, fsynced off the loop first), the controller is told first
(AssignReplicasToDirs through kafkawire.broker.dir_assignments, as
ReplicaAlterLogDirsThread.maybePromoteFutureReplica): the swap waits for its answer NONE for that
partition (Kafka's successCallback; a refusal is sent again after the backoff). Meanwhile the
future log is kept caught up, a step between those of the next partition's copy (the in-progress
one is the first not waiting), the replica serves from its directory, and a metadata naming
either directory is not assigned back (Broker._assign_directories skips it). A move stopped before
its swap (cancelled, its replica gone, a failed directory) assigns the replica back to the current
log's directory (ReplicaAlterLogDirsThread.removePartitions). In a metadata.version without
directory assignment (before 3.7-IV2) nothing is asked: the swap follows the catch-up (see
docs/differences.md).

The swap (Partition.maybeReplaceCurrentWithFutureReplica, LogManager.replaceCurrentWithFutureLog)
happens in the step that finds the accepted future at the current log end, within one turn of the
event loop, so no produce or fetch of the partition sees it half done: the future log renamed
``<topic>-<partition>`` in its directory, the current one renamed ``-delete`` (removed later,
kafkawire.broker.log_deletion), and the partition object serving on with the new log (the same
open files, LocalLog.renameDir), its leader epoch entries and its producer state (their files
written in the background: the future log's own, replayed from the same batches, are there
already). Then, off the loop, the new log's last writes and both parent directories are fsynced
(on the state-file thread, produce waiting meanwhile as for a new leader epoch's checkpoint, so
nothing is appended to the new log before its name is on disk). A crash before those fsyncs finds
either the renames (two equal logs, the first in ``log.dirs`` order opening, or the new one alone)
or the future log again, whose copy resumes (the metadata may name its directory already: the
replica is assigned back to where its log opened, and the future asks again once caught up, as
Kafka after a restart). An fsync that fails takes the destination directory offline
(Broker.fail_log_dir); so does any I/O error of a step, on the directory Kafka names
(kafkawire.broker.log_dir_copy_failures). While a replica is moved its log is not cleaned (the
log cleaner paused, LogCleanerManager.abortAndPauseCleaning); retention runs on its future log as
on the current one (kafkawire.broker.log_manager).

The rate: ``replica.alter.log.dirs.io.max.bytes.per.second`` (a dynamic broker config, this broker's
value then the cluster default, as Kafka's ConfigHandler reads it; unset: no bound) over
``alter.log.dirs.replication.quota.window.num`` samples of
``alter.log.dirs.replication.quota.window.size.seconds``: while the measured rate is above it no
step is taken, and the copier waits ``replica.fetch.backoff.ms`` (LocalLeaderEndPoint.buildFetch
builds no fetch, and the fetcher backs off).

A restart resumes: ``find_future_logs`` lists the ``-future`` directories at start, and the first
metadata that hosts their partition opens each again (recovered as any log) and the copy goes on
from its end, truncated first where it diverged. A future log whose replica goes (deleted,
reassigned away, its topic created again, a failed directory) is closed, renamed ``-delete`` and
removed later, as Partition.removeFutureLocalReplica.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
import time

from kafkawire.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from kafkawire.storage.log import Log, fsync_dir
from kafkawire.storage.state_files import (StateFileError, read_partition_metadata, write_leader_epoch_checkpoint,
                                           write_partition_metadata)

from .follower import FollowerReplica, offset_truncation_state
from .hosted_partitions import directory_assignment_supported
from .log_deletion import delete_dir_name
from .log_dir_copy_failures import CopyFailures, CopyStepError
from .log_dir_failure import LogTruncationError, append_step
from .partition import PARTITION_METADATA, LeaderPartition, partition_dir_name
from .producer_snapshots import load_producer_state
from .replication_quotas import ReplicationQuota

__all__ = ["CopyStepError", "FutureLog", "FutureLogs", "FUTURE_SUFFIX", "find_future_logs", "ALTER_LOG_DIRS_QUOTA"]

log = logging.getLogger(__name__)
FUTURE_SUFFIX = "-future"
FLUSH_BYTES = 4 * 1024 * 1024       # copied bytes fsynced off the loop, at most, while the copy goes on
SWAP_FLUSH_BYTES = 256 * 1024       # caught up with more than this not fsynced: fsynced first, then the swap
QUEUED, ACCEPTED = "queued", "accepted"     # ReplicaAlterLogDirsThread's ReassignmentState (None, Effective aside)
# (rate config, throttled-replicas config): every moved replica is throttled, as Kafka's alterLogDirs quota
ALTER_LOG_DIRS_QUOTA = ("replica.alter.log.dirs.io.max.bytes.per.second", None)


class _EveryReplica(ReplicationQuota):
    def is_throttled(self, topic: str, partition: int) -> bool:
        return True


class FutureLog:
    """A replica's future log: ``follower`` (a FollowerReplica over the future LeaderPartition)
    and its log directory ``destination``."""

    def __init__(self, follower: FollowerReplica, destination: str):
        self.follower = follower
        self.destination = destination
        self.unflushed = 0                   # bytes appended since the last fsync
        self.metadata_synced = False         # partition.metadata fsynced (with the first flush, off the loop)
        self.started = time.monotonic()
        self.assignment: str | None = None  # None, QUEUED (told to the controller) or ACCEPTED (by it)
        self.origin = None                   # the current log's directory id when the controller was told

    @property
    def waiting(self) -> bool:
        """Caught up once and told to the controller: kept caught up until the swap, not the copy in progress."""
        return self.assignment is not None

    @property
    def partition(self) -> LeaderPartition:
        return self.follower.partition

    @property
    def log(self) -> Log:
        return self.follower.log


def _parse_future_name(name: str) -> tuple[str, int] | None:
    if not name.endswith(FUTURE_SUFFIX):
        return None
    partition_name = name[:-len(FUTURE_SUFFIX)].rpartition(".")[0]
    topic, _, index = partition_name.rpartition("-")
    return (topic, int(index)) if topic and index.isdigit() else None


def find_future_logs(log_dirs) -> dict[tuple[str, int], str]:
    """At start: partition -> the ``-future`` directory to resume, for each whose partition's own log
    is in one of ``log_dirs``; one without is left with a warning; a second one of a partition is
    renamed ``-delete`` (Kafka refuses duplicate logs; kafkawire keeps the first in ``log.dirs``
    order)."""
    found: dict[tuple[str, int], str] = {}
    for log_dir in log_dirs:
        try:
            names = sorted(os.listdir(log_dir))
        except OSError as exc:
            log.warning("cannot list %s: %s", log_dir, exc)
            continue
        for name in names:
            key = _parse_future_name(name)
            if key is None:
                continue
            path = os.path.join(log_dir, name)
            if not any(os.path.isdir(os.path.join(d, partition_dir_name(*key))) for d in log_dirs):
                log.warning("%s in %s: a future log whose current log is nowhere; left as it is", name, log_dir)
            elif key in found:
                _set_aside(path)
            else:
                found[key] = path
    return found


def _set_aside(path: str) -> str | None:
    key = _parse_future_name(os.path.basename(path))
    aside = os.path.join(os.path.dirname(path), delete_dir_name(partition_dir_name(*key)))
    try:
        os.rename(path, aside)
    except OSError as exc:
        log.warning("cannot set %s aside: %s", path, exc)
        return None
    return aside


class FutureLogs(CopyFailures):
    """The future logs of ``broker`` (its ``log_manager``, ``state_writes``, ``log_deleter``, ``config``)
    and the task that copies them."""

    def __init__(self, broker):
        self.broker = broker
        self.futures: dict[tuple[str, int], FutureLog] = {}
        self.resumable: dict[tuple[str, int], str] = {}        # found at start, opened once hosted
        self.stalled: dict[tuple[str, int], FutureLog] = {}     # their current log's directory failed
        c = broker.config
        self.step_bytes = max(c.replica_fetch_max_bytes, 1)
        self.quota = _EveryReplica(ALTER_LOG_DIRS_QUOTA, broker.image, broker.node_id,
                                   c.alter_log_dirs_replication_quota_window_num,
                                   c.alter_log_dirs_replication_quota_window_size_seconds)
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()

    # -- making and dropping --

    def create(self, current, destination: str) -> FutureLog:
        """The future log of ``current`` (a LeaderPartition, led or followed) in ``destination``: an
        empty log (its directory, partition.metadata) from which the copier starts."""
        name = f"{partition_dir_name(current.topic, current.partition)}.{os.urandom(16).hex()}{FUTURE_SUFFIX}"
        directory = os.path.join(destination, name)
        parent = os.path.abspath(destination)
        try:
            os.makedirs(directory)
        except OSError as exc:          # LogManager.createLogDirectory: the directory goes offline
            self.broker.fail_log_dir(parent, exc, message=f"Error while creating log for {name} in dir {parent}")
            raise
        metadata = os.path.join(directory, PARTITION_METADATA)
        try:
            try:     # fsynced with the first flush of the copy, off the loop
                write_partition_metadata(metadata, current.topic_id, fsync=False)
            except OSError as exc:      # PartitionMetadataFile.maybeFlush
                self.broker.fail_log_dir(parent, exc, message=f"Error while writing partition metadata file "
                                                              f"{os.path.abspath(metadata)}")
                raise
            future = self._open(current, directory)
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        log.info("broker %d: copying %s to %s (%s)", self.broker.node_id, current.name, destination, name)
        return future

    def _open(self, current, directory: str) -> FutureLog:
        broker = self.broker
        options = broker.log_manager.open_options(broker.image(), current.topic, current.partition, current.topic_id,
                                                  os.path.dirname(directory))
        options.pop("log_start_offset", None)      # a future log's start comes from the current log
        log_ = Log(directory, **options)
        expiration_ms = broker.log_manager.producer_id_expiration_ms(broker.image())
        producers, loaded_from = load_producer_state(log_, current.name, now_ms=int(time.time() * 1000),
                                                     expiration_ms=expiration_ms)
        partition = LeaderPartition(log_, current.topic, current.partition, current.topic_id, -1, producers=producers,
                                    snapshot_offset=loaded_from, state_writes=broker.state_writes,
                                    expiration_check_interval_ms=broker.config.producer_id_expiration_check_interval_ms)
        partition.epochs.writer = functools.partial(broker.state_writes.submit, directory)
        follower = FollowerReplica(partition, leader_id=broker.node_id, leader_epoch=-1,
                                   high_watermark=log_.log_end_offset)
        future = FutureLog(follower, os.path.dirname(directory))
        self.futures[(current.topic, current.partition)] = future
        if broker.log_manager.cleaner is not None:
            broker.log_manager.cleaner.pause(current)
        self._ensure_task()
        return future

    def busy(self) -> bool:
        """A copy is under way (or waits for the controller to accept its destination)."""
        return bool(self.futures) or (self._task is not None and not self._task.done())

    def destination(self, key) -> str | None:
        future = self.futures.get(key)
        return None if future is None else future.destination

    def drop(self, key, reason: str) -> None:
        """Partition.removeFutureLocalReplica: the future log closed, renamed ``-delete``, removed later."""
        future = self.futures.pop(key, None)
        if future is None:
            return
        self._resume_cleaning(key)
        self.revert_assignment(key, future)
        log.info("broker %d: the future log of %s-%d in %s goes: %s", self.broker.node_id, *key, future.destination,
                 reason)
        self.broker.log_deleter.delete(future.partition)

    def waiting(self) -> set:
        """The partitions whose move the controller was told of and that are not swapped yet: the
        metadata may name either directory meanwhile (not reassigned back to the current log's)."""
        return {key for key, future in self.futures.items() if future.waiting}

    def request_assignment(self, key, future: FutureLog, current) -> None:
        """The future log caught up: the controller told (AssignReplicasToDirs) before any swap, as
        ReplicaAlterLogDirsThread.maybePromoteFutureReplica; its acceptance lets the swap happen."""
        log_dirs = self.broker.log_dirs
        future.origin = log_dirs.id_of_log(current.log.directory)
        destination = log_dirs.id_of_log(future.log.directory)
        future.assignment = QUEUED
        log.info("broker %d: %s caught up in %s; waiting for the controller to accept it there", self.broker.node_id,
                 current.name, future.destination)

        def accepted() -> None:
            if self.futures.get(key) is future and future.assignment == QUEUED:
                future.assignment = ACCEPTED
                self._wake.set()
        self.broker.dir_assignments.submit(current.topic_id, key[1], destination, on_accepted=accepted)

    def revert_assignment(self, key, future: FutureLog) -> None:
        """A move told to the controller and not swapped stops: the replica assigned back to the
        directory its log is in (ReplicaAlterLogDirsThread.removePartitions)."""
        if future.assignment is not None and future.origin is not None:
            self.broker.dir_assignments.submit(future.partition.topic_id, key[1], future.origin)
        future.assignment = None

    def _resume_cleaning(self, key) -> None:
        if self.broker.log_manager.cleaner is not None:
            self.broker.log_manager.cleaner.resume(key)

    def on_metadata(self) -> None:
        """After Broker.on_metadata: a future log whose replica is no longer here (or is another
        topic's now) goes; one found at start is opened once its replica is hosted."""
        manager = self.broker.log_manager
        offline = self.broker.log_dirs.offline
        for key, future in list(self.futures.items()):
            current = manager.replica(key)
            if current is None or current.topic_id != future.partition.topic_id or future.destination in offline:
                self.drop(key, "its replica is no longer hosted here")
        for key, future in list(self.stalled.items()):      # LogManager.asyncDelete of a replica gone
            if not self._assigned_here(key, future.partition.topic_id):
                self.broker.log_deleter.delete(self.stalled.pop(key).partition)
        for key, path in list(self.resumable.items()):
            current = manager.replica(key)
            if current is None:
                if not self._assigned_here(key):
                    del self.resumable[key]
                    self._discard(path, "its replica is not assigned to this broker")
                continue
            del self.resumable[key]
            self._resume(current, path)

    def _assigned_here(self, key, topic_id=None) -> bool:
        image = self.broker.image()
        topic = None if image is None else image.topics_by_name.get(key[0])
        registration = None if topic is None else topic.partitions.get(key[1])
        return (registration is not None and self.broker.node_id in registration.replicas
                and topic_id in (None, topic.id))

    def _resume(self, current, path: str) -> None:
        try:
            topic_id = read_partition_metadata(os.path.join(path, PARTITION_METADATA))
        except (StateFileError, OSError, ValueError):
            topic_id = None
        if topic_id != current.topic_id or os.path.dirname(path) == os.path.dirname(current.log.directory):
            self._discard(path, "it is not a future log of the replica hosted here")
            return
        parent = os.path.dirname(os.path.abspath(path))
        try:
            self.broker.log_manager.remove_stray_files(path, current.name)
            future = self._open(current, path)
        except OSError as exc:      # LogManager.loadLogs: the directory goes offline
            self.broker.fail_log_dir(parent, exc, message=f"Error while loading log dir {parent}")
            return
        log.info("broker %d: resuming the copy of %s to %s from offset %d", self.broker.node_id, current.name,
                 future.destination, future.log.log_end_offset)

    def _discard(self, path: str, reason: str) -> None:
        aside = _set_aside(path)
        if aside is not None:
            log.info("%s: %s; renamed to be deleted", path, reason)
            self.broker.log_deleter.schedule(aside)

    # -- the copier --

    def _ensure_task(self) -> None:
        self._wake.set()
        if self._task is not None and not self._task.done():
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:           # no loop yet: the next create or on_metadata on the loop starts it
            return
        self._task = asyncio.ensure_future(self._run())

    def _turn(self) -> list:
        """The partitions stepped in one turn of the copier: those waiting for the controller (kept
        caught up) and the first other one, in the order asked (the copy in progress)."""
        waiting = [key for key, future in self.futures.items() if future.waiting]
        copying = next((key for key, future in self.futures.items() if not future.waiting), None)
        return waiting if copying is None else [*waiting, copying]

    async def _run(self) -> None:
        backoff = max(self.broker.config.replica_fetch_backoff_ms, 1) / 1000
        while self.futures:
            progressed = False
            self._wake.clear()          # before the steps: an acceptance during one is not lost
            for key in self._turn():
                if key not in self.futures:          # gone during an earlier step of this turn
                    continue
                try:
                    progressed = await self.step(key) or progressed
                except asyncio.CancelledError:
                    raise
                except CopyStepError as exc:             # a directory goes offline
                    self._step_failed(key, exc)
                    progressed = True
                except Exception:                        # the copy of one partition must never stop the others
                    log.exception("broker %d: the copy of %s-%d failed", self.broker.node_id, *key)
                    self.drop(key, "its copy failed")
                    progressed = True
            if progressed:
                await asyncio.sleep(0)              # the loop's other work between two steps
                continue
            try:
                async with asyncio.timeout(backoff):
                    await self._wake.wait()
            except TimeoutError:
                pass

    async def step(self, key) -> bool:
        """One step of ``key``'s copy; whether it made progress (False: throttled, or its replica not
        hosted now)."""
        future = self.futures[key]
        current = self.broker.log_manager.replica(key)
        if current is None or self.quota.is_quota_exceeded():
            return False
        follower = future.follower
        copied = 0
        end = future.log.log_end_offset
        try:
            _follow_truncation(follower, current)
        except LogTruncationError as exc:
            raise CopyStepError(exc, append_step(exc), end) from exc
        end = future.log.log_end_offset
        if end < current.log.log_end_offset:
            # from the log start when the future restarted at the base of the batch holding it
            # no more than a segment of the future log holds at once (one batch at least)
            limit = min(self.step_bytes, future.log.segment_bytes)
            try:
                data = current.log.read(max(end, current.log.log_start_offset), limit, min_one_batch=True).data
            except OSError as exc:
                raise CopyStepError(exc, "read", end, source=True) from exc
            try:
                info = follower.append(data) if data else None      # FollowerAppendError: the copy fails
            except OSError as exc:
                raise CopyStepError(exc, append_step(exc), end) from exc
            copied = 0 if info is None else info.size
        follower.update_from_leader(high_watermark=min(current.high_watermark(), future.log.log_end_offset),
                                    log_start_offset=current.log.log_start_offset)
        self.quota.record(copied)
        future.unflushed += copied
        if future.log.log_end_offset != current.log.log_end_offset:
            if future.unflushed > FLUSH_BYTES:
                await self._flush(future)
            return True
        if future.unflushed > SWAP_FLUSH_BYTES or not future.metadata_synced:
            await self._flush(future)            # most of it on disk before the swap, off the loop
            return True
        if future.assignment is None and directory_assignment_supported(self.broker.image()):
            # its state files written first: one that failed takes its directory offline, not told
            self.broker.state_writes.settle(future.log.directory)
            if self.futures.get(key) is future:
                self.request_assignment(key, future, current)
            return True
        if future.assignment == QUEUED:          # kept caught up meanwhile: progress only when it copied
            return copied > 0
        for directory in (current.log.directory, future.log.directory):      # before the swap renames them
            self.broker.state_writes.settle(directory)     # a state file failed: its directory goes offline
        if self.futures.get(key) is not future or self.broker.log_manager.replica(key) is not current:
            return True
        failed = self.swap(key, future, current)
        await self.broker.state_writes.appends_allowed()    # the swap durable (produce waits for it too)
        if failed:
            log.error("broker %d: the move of %s to %s cannot be made durable: %s", self.broker.node_id,
                      current.name, future.destination, failed[0])
            self.broker.fail_log_dir(future.destination, failed[0])
            return True
        log.info("broker %d: moved %s to %s in %.3f s", self.broker.node_id, current.name, future.destination,
                 time.monotonic() - future.started)
        return True

    async def _flush(self, future: FutureLog) -> None:
        sync = future.log.prepare_flush()
        future.unflushed = 0
        metadata = None if future.metadata_synced else os.path.join(future.log.directory, PARTITION_METADATA)
        future.metadata_synced = True

        def flush() -> None:
            if metadata is not None:
                try:
                    _fsync_file(metadata)
                except OSError as exc:
                    raise CopyStepError(exc, "metadata", future.log.log_end_offset,
                                        path=os.path.abspath(metadata)) from exc
            try:
                sync()
            except OSError as exc:      # UnifiedLog.flush
                raise CopyStepError(exc, "flush", future.log.log_end_offset) from exc
        await asyncio.to_thread(flush)

    def swap(self, key, future: FutureLog, current) -> list[OSError]:
        """Partition.maybeReplaceCurrentWithFutureReplica, in one turn of the loop (see the module
        docstring); made durable on the state-file thread, produce waiting (``appends_allowed``)
        until it is; the list that error goes into if it fails."""
        broker = self.broker
        writes = broker.state_writes
        source = current.log.directory        # its and the future's state files written (step)
        new_log = future.log
        new_log.log_start_offset = max(new_log.log_start_offset, current.log.log_start_offset)
        sync = new_log.prepare_flush()
        name = partition_dir_name(*key)
        aside = os.path.join(os.path.dirname(source), delete_dir_name(name))
        # the future takes the partition's name before the current log goes: a crash in between
        # leaves two whole, equal logs (the first in log.dirs order opens), never none; before the
        # renames are on disk, a crash finds the future log again and resumes the copy
        try:
            new_log.rename_dir(os.path.join(future.destination, name))
        except OSError as exc:
            _close_fds(sync)
            raise CopyStepError(exc, "rename", new_log.log_end_offset) from exc
        try:
            os.rename(source, aside)
        except OSError as exc:       # UnifiedLog.renameDir of the current log: its directory goes offline
            _close_fds(sync)
            raise CopyStepError(exc, "rename", new_log.log_end_offset, source=True) from exc
        del self.futures[key]
        old_log = current.log
        current.log = new_log
        failed: list[OSError] = []
        destination, source_parent = future.destination, os.path.dirname(source)

        def durable() -> None:
            try:
                sync()
                fsync_dir(destination)
                fsync_dir(source_parent)
            except OSError as exc:
                failed.append(exc)
        # first on the thread: nothing is appended to the new log before its name is on disk (as
        # nothing is before a new epoch's checkpoint)
        writes.submit(new_log.directory, durable, blocks_appends=True)
        # the partition's epochs and producer state go on with it; their files are written in the
        # background (the future's own, replayed from the same batches, are there already)
        epochs = LeaderEpochFileCache(os.path.join(new_log.directory, LEADER_EPOCH_CHECKPOINT), current.epochs.entries)
        writes.submit(new_log.directory, functools.partial(write_leader_epoch_checkpoint, epochs.path, epochs.entries))
        epochs.writer = functools.partial(writes.submit, new_log.directory, blocks_appends=True)
        current.epochs = epochs
        current.snapshot_offset = future.partition.snapshot_offset
        current.maybe_snapshot(background=True)
        broker.log_manager.recovery_points[key] = new_log.active_segment.base_offset
        try:
            old_log.close()
        except OSError as exc:
            log.warning("closing the old log of %s: %s", current.name, exc)
        broker.log_deleter.schedule(aside)
        self._resume_cleaning(key)
        return failed

    async def stop(self) -> None:
        """A stop: the copy ends where it is (resumed at the next start), the future logs flushed and closed."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for future in [*self.futures.values(), *self.stalled.values()]:
            try:
                future.partition.close()
            except OSError as exc:
                log.warning("closing the future log %s: %s", future.log.directory, exc)
        self.futures.clear()
        self.stalled.clear()


def _follow_truncation(follower: FollowerReplica, current) -> None:
    """The future log cut where it diverges from the current log (by leader epochs, as the fetcher
    asks OffsetForLeaderEpoch), and never past the current log end."""
    for _ in range(len(follower.epochs.entries) + 1):
        end = follower.log.log_end_offset
        latest = follower.latest_epoch()
        if latest < 0:
            break
        epoch, current_end = current.epochs.end_offset_for(latest, current.log.log_end_offset)
        state = offset_truncation_state(follower.epochs, end, end, epoch, current_end)
        if state.offset < end:
            follower.truncate_to(state.offset)
        if state.completed:
            break
    if follower.log.log_end_offset > current.log.log_end_offset:
        follower.truncate_to(current.log.log_end_offset)
    end, start = follower.log.log_end_offset, current.log.log_start_offset
    if end < start:
        # behind the current log start (retention, DeleteRecords): it starts again empty at the
        # base offset of the batch holding the log start, which may be inside a batch
        result = current.log.read(start, 1, min_one_batch=True)
        base = start if result.first_offset is None else min(result.first_offset, start)
        if end < base:
            follower.truncate_fully_and_start_at(base)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _close_fds(sync) -> None:          # a prepared flush not run: its duplicated descriptors closed (run)
    try:
        sync()
    except OSError:
        pass
