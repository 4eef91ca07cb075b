"""The logs of deleted topics, removed as Kafka's LogManager removes them (asyncDelete, then its
kafka-delete-logs task): the partition's log is closed, its directory renamed at once to
``<topic>-<partition>.<uuid>-delete`` (so that a topic created again under the same name starts
a new log beside it) and removed ``file.delete.delay.ms`` later (the broker's
``log.segment.delete.delay.ms``, 60000 by default, set dynamically or in server.properties).

    deleter = LogDeleter(log_dir, lambda: 60_000, log_manager.pending, log_manager.clock)
    deleter.delete(partition)      # a LeaderPartition of a topic no longer in the metadata
    deleter.schedule_leftovers()   # directories already renamed (before a restart, or set aside)

The removal is the log manager's: its due-queue of deleted segment files holds the renamed
directories too, and its delete-file task removes what is due (``remove_deleted``; a directory
on a worker thread). A stop leaves what still waits renamed, removed after the next start. A
directory whose removal fails is logged and left (Kafka's LogManager logs it too).
"""
from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
from typing import Callable

from .stray_logs import retired_dir_name

__all__ = ["LogDeleter", "DELETE_SUFFIX", "delete_dir_name", "remove_deleted"]

log = logging.getLogger(__name__)
DELETE_SUFFIX = "-delete"


def delete_dir_name(name: str) -> str:
    """``<topic>-<partition>.<uuid>-delete`` for the directory ``<topic>-<partition>``, the topic cut so
    that the name fits 255 characters (UnifiedLog.logDeleteDirName)."""
    topic, _, partition = name.rpartition("-")
    return retired_dir_name(topic, int(partition), DELETE_SUFFIX)


class LogDeleter:
    """Renames the directories of deleted partitions (in the log directory each is in, one of
    ``log_dirs``: a path or a list of them) and puts them in the log
    manager's due-queue (``pending``, a PendingDeletes read with ``clock()``), which removes them
    with the ``.deleted`` segment files (its delete-file task); ``delay_ms()`` is the delay in
    force when a directory is scheduled."""

    def __init__(self, log_dirs, delay_ms: Callable[[], int], pending, clock: Callable[[], int], *,
                 on_failure: Callable[..., None] | None = None):
        """``on_failure(path, error, message=...)``: a log directory's I/O error renaming a log in it
        (the broker takes it offline, as Kafka's UnifiedLog.renameDir)."""
        self.on_failure = on_failure
        self.log_dirs = [log_dirs] if isinstance(log_dirs, str) else list(log_dirs)
        self.delay_ms = delay_ms
        self.pending = pending
        self.clock = clock
        self._scheduled: set[str] = set()          # renamed directories in the queue (or removed)

    def delete(self, partition) -> None:
        """Close ``partition`` (a LeaderPartition), rename its directory and schedule its removal."""
        directory = partition.log.directory
        try:
            partition.close()
        except OSError as exc:
            log.warning("closing %s: %s", partition.name, exc)
        renamed = os.path.join(os.path.dirname(directory), delete_dir_name(partition.name))
        try:
            os.rename(directory, renamed)
        except OSError as exc:
            parent = os.path.dirname(os.path.abspath(directory))
            message = f"Error while renaming dir for {partition.name} in log dir {parent}"
            if self.on_failure is None:
                log.error("%s: %s", message, exc)
            else:
                self.on_failure(parent, exc, message=message)
            return
        log.info("Log for partition %s is renamed to %s and is scheduled for deletion", partition.name, renamed)
        self._schedule(renamed)

    def schedule_leftovers(self) -> None:
        """Schedule every ``*-delete`` directory of the log dirs not yet scheduled (Kafka's loadLogs
        schedules those it finds at start)."""
        found = set()
        for log_dir in self.log_dirs:
            try:
                names = os.listdir(log_dir)
            except OSError as exc:
                log.warning("cannot list %s: %s", log_dir, exc)
                continue
            found |= {os.path.join(log_dir, name) for name in names if name.endswith(DELETE_SUFFIX)}
        self._scheduled &= found                   # forget the ones removed since
        for path in sorted(found - self._scheduled):
            if os.path.isdir(path):
                self._schedule(path)

    def schedule(self, path: str) -> None:
        """A ``-delete`` directory renamed elsewhere (a replica moved to another log directory)."""
        self._schedule(path)

    def _schedule(self, path: str) -> None:
        self._scheduled.add(path)
        self.pending.add([path], self.clock() + max(self.delay_ms(), 0))


def remove_deleted(path: str, on_failure: Callable[..., None] | None = None) -> None:
    """Remove a due path of the queue: a ``.deleted`` file at once, a ``-delete`` directory (a
    whole log: many files) off the event loop when one runs. ``on_failure(log_dir, error,
    message=...)``: an I/O error removing it (the broker takes the log directory offline, as
    Kafka's delete-file and kafka-delete-logs tasks), called on the loop; else it is logged."""
    if not os.path.isdir(path):
        _remove_file(path, on_failure)
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        _remove_tree(path, on_failure)
        return
    report = None
    if on_failure is not None:
        def report(log_dir, error, message):
            loop.call_soon_threadsafe(functools.partial(on_failure, log_dir, error, message=message))
    loop.run_in_executor(None, _remove_tree, path, report)


def _remove_file(path: str, on_failure) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log_dir = os.path.dirname(os.path.dirname(os.path.abspath(path)))
        message = f"Error while deleting segments for {os.path.basename(os.path.dirname(path))} in dir {log_dir}"
        if on_failure is None:
            log.warning("%s: %s", message, exc)
        else:
            on_failure(log_dir, exc, message=message)


def _remove_tree(path: str, report) -> None:
    try:
        shutil.rmtree(path)
    except OSError as exc:
        log_dir = os.path.dirname(os.path.abspath(path))
        name = os.path.basename(path).rsplit(".", 1)[0]           # <topic>-<partition>.<uuid>-delete
        message = f"Error while deleting log for {name} in dir {log_dir}"
        log.error("%s: %s", message, exc)
        if report is not None:
            try:
                report(log_dir, exc, message)
            except RuntimeError:        # the loop closed meanwhile (the broker stopped)
                pass
        return
    log.info("Deleted log directory %s", path)
