"""The logs of deleted topics, removed as Kafka's LogManager removes them (asyncDelete, then its
kafka-delete-logs task): the partition's log is closed, its directory renamed at once to
``<topic>-<partition>.<uuid>-delete`` (so that a topic created again under the same name starts
a new log beside it) and removed ``file.delete.delay.ms`` later (the broker's
``log.segment.delete.delay.ms``, 60000 by default, set dynamically or in server.properties).

    deleter = LogDeleter(log_dir, delay_ms=lambda: 60_000)
    deleter.delete(partition)      # a LeaderPartition of a topic no longer in the metadata
    deleter.schedule_leftovers()   # directories already renamed (before a restart, or set aside)
    deleter.close()                # on stop: what is still waiting stays renamed, removed at the next start

A directory whose removal fails is logged and left (Kafka's LogManager logs it too).
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
import uuid
from typing import Callable

__all__ = ["LogDeleter", "DELETE_SUFFIX", "delete_dir_name"]

log = logging.getLogger(__name__)
DELETE_SUFFIX = "-delete"
_MAX_NAME = 255          # UnifiedLog.logDeleteDirName keeps the name within a file name's length


def delete_dir_name(name: str) -> str:
    """``<topic>-<partition>.<uuid>-delete``, the topic part cut so that the name fits 255 characters."""
    suffix = f".{uuid.uuid4().hex}{DELETE_SUFFIX}"
    return name[:_MAX_NAME - len(suffix)] + suffix


class LogDeleter:
    """Renames and later removes the directories of deleted partitions under ``log_dir``;
    ``delay_ms()`` is the delay in force when a directory is scheduled."""

    def __init__(self, log_dir: str, delay_ms: Callable[[], int]):
        self.log_dir = log_dir
        self.delay_ms = delay_ms
        self._waiting: dict[str, asyncio.Task] = {}        # renamed directory -> its removal

    def delete(self, partition) -> None:
        """Close ``partition`` (a LeaderPartition), rename its directory and schedule its removal."""
        directory = os.path.join(self.log_dir, partition.name)
        try:
            partition.close()
        except OSError as exc:
            log.warning("closing %s: %s", partition.name, exc)
        renamed = os.path.join(self.log_dir, delete_dir_name(partition.name))
        try:
            os.rename(directory, renamed)
        except OSError as exc:
            log.error("cannot rename %s for deletion: %s", directory, exc)
            return
        log.info("Log for partition %s is renamed to %s and is scheduled for deletion", partition.name, renamed)
        self._schedule(renamed)

    def schedule_leftovers(self) -> None:
        """Schedule every ``*-delete`` directory of the log dir not yet waiting (Kafka's loadLogs
        schedules those it finds at start)."""
        try:
            names = os.listdir(self.log_dir)
        except OSError as exc:
            log.warning("cannot list %s: %s", self.log_dir, exc)
            return
        for name in names:
            path = os.path.join(self.log_dir, name)
            if name.endswith(DELETE_SUFFIX) and path not in self._waiting and os.path.isdir(path):
                self._schedule(path)

    def _schedule(self, path: str) -> None:
        task = asyncio.ensure_future(self._remove_later(path, max(self.delay_ms(), 0) / 1000))
        self._waiting[path] = task
        task.add_done_callback(lambda _: self._waiting.pop(path, None))

    @staticmethod
    async def _remove_later(path: str, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        loop = asyncio.get_running_loop()
        try:      # off the event loop: a big log is many files
            await loop.run_in_executor(None, shutil.rmtree, path)
        except OSError as exc:
            log.error("Exception while deleting %s: %s", path, exc)
            return
        log.info("Deleted log directory %s", path)

    def close(self) -> None:
        for task in list(self._waiting.values()):
            task.cancel()
        self._waiting.clear()
