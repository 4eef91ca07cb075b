"""The partition state files a leader writes while it serves (the ``leader-epoch-checkpoint`` of a
new epoch, the producer snapshot of a segment roll), written and fsynced on one thread of their
own instead of the event loop, in the order they were asked for (the raft driver's disk thread
does the same for the metadata log's fsyncs).

Kafka writes both on the request thread, synchronously; the orders it gets from that are kept:

* a new epoch's checkpoint is on disk before the first batch appended in that epoch: Produce
  waits (``appends_allowed``) while an epoch checkpoint is being written, so the file never misses
  an epoch that is in the log (LeaderEpochFileCache.assign);
* a producer snapshot is on disk before a segment it stands in for is deleted: retention skips a
  partition whose state files are still being written (``pending``) until its next pass;
* closing a partition (leadership moved, the topic deleted, the stop) waits for its writes
  (``wait``), so nothing is written into a directory after it was renamed or handed on.

    writes = StateWrites()
    writes.submit(directory, job, blocks_appends=True)    # job(): the write, on the disk thread
    await writes.appends_allowed()
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from typing import Callable

__all__ = ["StateWrites"]

log = logging.getLogger(__name__)


class StateWrites:
    """One thread writing partition state files, in submission order."""

    def __init__(self, on_failure: Callable[[str, Callable, OSError], None] | None = None):
        """``on_failure(directory, job, error)``: a write's I/O error, called on the event loop that
        submitted it (the broker takes the directory offline, as Kafka's checkpoint writes do)."""
        self.on_failure = on_failure
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kafkawire-state-files")
        self._by_directory: dict[str, list[concurrent.futures.Future]] = {}
        self._blocking_appends: list[concurrent.futures.Future] = []

    def submit(self, directory: str, job: Callable[[], object], *, blocks_appends: bool = False) -> None:
        """Run ``job`` on the disk thread after every write submitted before it; an OSError is
        logged (the state stays in memory) and handed to ``on_failure`` on the submitting loop."""
        report = None
        if self.on_failure is not None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:           # no loop (a partition opened alone): logged only
                loop = None
            if loop is not None:
                report = functools.partial(loop.call_soon_threadsafe, self.on_failure, directory, job)
        future = self._executor.submit(_logged, directory, job, report)
        self._by_directory.setdefault(directory, []).append(future)
        if blocks_appends:
            self._blocking_appends.append(future)

    def pending(self, directory: str) -> bool:
        """Whether a write into ``directory`` has not finished."""
        futures = self._by_directory.get(directory)
        if futures is None:
            return False
        futures[:] = [f for f in futures if not f.done()]
        if not futures:
            del self._by_directory[directory]
        return bool(futures)

    async def appends_allowed(self) -> None:
        """Until every epoch checkpoint submitted so far is written."""
        while True:
            self._blocking_appends = waiting = [f for f in self._blocking_appends if not f.done()]
            if not waiting:
                return
            await asyncio.wait([asyncio.wrap_future(f) for f in waiting])

    def wait(self, directory: str) -> list[tuple[Callable, OSError]]:
        """Block until the writes into ``directory`` are done (closing its partition); the jobs
        that failed with their I/O errors (each handed to ``on_failure`` too, on the loop's next turn)."""
        done, _ = concurrent.futures.wait(self._by_directory.pop(directory, ()))
        return [failed for failed in (f.result() for f in done) if failed is not None]

    def settle(self, directory: str) -> None:
        """``wait``, and the failures handed to ``on_failure`` now (the caller is about to rename
        ``directory``; the later report of each finds its directory failed already)."""
        for job, error in self.wait(directory):
            if self.on_failure is not None:
                self.on_failure(directory, job, error)

    def wait_all(self) -> None:
        """Block until every write submitted so far is done (a copy of the directories as they
        are on disk, in tests, must not race a rename of the thread's)."""
        for directory in list(self._by_directory):
            self.wait(directory)

    def close(self) -> None:
        """Finish every write submitted, then stop the thread."""
        self._executor.shutdown(wait=True)
        self._by_directory.clear()
        self._blocking_appends.clear()


def _logged(directory: str, job: Callable[[], object], report) -> tuple[Callable, OSError] | None:
    try:
        job()
    except OSError as exc:
        log.error("%s: cannot write a state file: %s", directory, exc)
        if report is not None:
            try:
                report(exc)
            except RuntimeError:        # the loop closed meanwhile (the broker stopped)
                pass
        return job, exc
    return None
