"""The metadata log as MetadataTopic reads it on a node whose raft driver installs fetched
snapshots on its disk thread.

A follower's install (DiskLogStore.prepare_install, then its disk half on the driver's disk
thread) empties the log and starts it at the snapshot's offset while the event loop goes on
serving clients. Reading the log's segments then would race that thread: a segment closed
or gone under a read (a traceback, answered UNKNOWN_SERVER_ERROR), or a log start, an end and
the bytes from different moments. So from the moment the install is decided until it is done,
this view answers what the install makes of the log, which the store already tells the raft
core: an empty log starting and ending at the snapshot's offset, no batches, no timestamps.
That is the state a client sees once the install is done, so an answer does not go back
later: a fetch below it gets OFFSET_OUT_OF_RANGE (a consumer resets to the new log start), a
fetch at it waits for data. Kafka's replica never shows a client a half-cut log either: its
UnifiedLog.truncateFullyAndStartAt swaps the segments under the log's lock and deletes the
old ones' files only later, so a read sees the log before the cut or after it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

from kafkawire.storage.log import Log, OffsetOutOfRangeError
from kafkawire.storage.batch_scan import Extent


class InstallAwareLog:
    """``log`` (what MetadataTopic reads of it), or, while ``installing_at()`` names an offset,
    the empty log an install in flight makes of it, starting at that offset."""

    def __init__(self, log: Log, installing_at: Callable[[], int | None]):
        self._log = log
        self._installing_at = installing_at
        self.directory = log.directory

    @property
    def log_start_offset(self) -> int:
        at = self._installing_at()
        return self._log.log_start_offset if at is None else at

    @property
    def log_end_offset(self) -> int:
        at = self._installing_at()
        return self._log.log_end_offset if at is None else at

    @property
    def segments(self) -> list:
        return self._log.segments if self._installing_at() is None else []

    def read_extent(self, from_offset: int, max_bytes: int, *, min_one_batch: bool = True,
                    upper: int | None = None) -> Extent:
        at = self._installing_at()
        if at is None:
            return self._log.read_extent(from_offset, max_bytes, min_one_batch=min_one_batch, upper=upper)
        if from_offset != at:
            raise OffsetOutOfRangeError(f"offset {from_offset} is outside the log [{at}, {at}) a snapshot "
                                        f"install is starting")
        return Extent(None, 0, 0, None)     # empty: its read() touches no segment

    def batches(self, from_offset: int | None = None) -> Iterator:
        if self._installing_at() is None:
            yield from self._log.batches(from_offset)

    def find_offset_by_timestamp(self, timestamp: int):
        return self._log.find_offset_by_timestamp(timestamp) if self._installing_at() is None else None
