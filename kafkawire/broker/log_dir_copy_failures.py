"""What a failed I/O does to AlterReplicaLogDirs' copy (kafkawire.broker.log_dir_copy): the error
a copy step raises (``CopyStepError``), what the copier does with it (``_step_failed``: which
directory goes offline, with Kafka's messages, and which log is closed) and a log directory's
failure as it touches the moves (``on_log_dir_failure``, called from
kafkawire.broker.log_dir_failure). ``CopyFailures`` is FutureLogs' part for these: it uses its
``broker``, ``futures``, ``stalled``, ``_resume_cleaning`` and ``revert_assignment``.
"""
from __future__ import annotations

import logging
import os

from .log_dir_failure import storage_failure

__all__ = ["CopyFailures", "CopyStepError"]

log = logging.getLogger(__name__)
_THREAD = "[ReplicaAlterLogDirsThread-0]:"     # Kafka's fetcher's log prefix (one copier here)


class CopyStepError(Exception):
    """An I/O error of one step of a copy: reading the current log (``source``) or writing the
    future log (truncating, appending, rolling, flushing it, or its partition.metadata), ``step``
    a key of kafkawire.broker.log_dir_failure's messages or "metadata"; ``offset``: the future
    log's end when it failed (the fetch offset Kafka's fetcher names)."""

    def __init__(self, error: OSError, step: str, offset: int, *, source: bool = False, path: str | None = None):
        super().__init__(str(error))
        self.error, self.step, self.offset, self.source, self.path = error, step, offset, source, path


class CopyFailures:
    """FutureLogs' handling of I/O errors (mixed into kafkawire.broker.log_dir_copy.FutureLogs)."""

    def _step_failed(self, key, failure: CopyStepError) -> None:
        """A KafkaStorageException of a copy step. Reading the current log (LocalLeaderEndPoint's
        fetch answered KAFKA_STORAGE_ERROR): the current log's directory goes offline and the move
        stops there (``on_log_dir_failure``). Writing the future log (ReplicaAlterLogDirsThread
        marks the partition failed; a flush fails outside the fetcher, in Kafka's flusher): the
        future log's directory goes offline with UnifiedLog's message and the future log is closed
        there, not renamed; the replica stays where it is (a move the controller was told of is
        assigned back to it, as ReplicaAlterLogDirsThread.removePartitions does). The swap's rename of the current log
        (LogManager.replaceCurrentWithFutureLog, the future log renamed in place already): the
        current log's directory goes offline, its replica with it, and the new log is closed."""
        broker, name = self.broker, "%s-%d" % key
        current = broker.log_manager.replica(key)
        if failure.step == "read":
            log.error(_THREAD + " Error for partition %s at offset %d: %s", name, failure.offset, failure.error)
            if current is not None:
                storage_failure(broker, current, "read", failure.error)
            return
        future = self.futures.get(key)
        if future is None:
            return
        if failure.step in ("truncate", "truncate_fully"):
            log.error(_THREAD + " Failed to truncate %s at offset %d: %s", name, failure.error.offset, failure.error)
        elif failure.step not in ("flush", "metadata"):
            log.error(_THREAD + " Error while processing data for partition %s at offset %d: %s", name,
                      failure.offset, failure.error)
        if failure.step not in ("flush", "metadata"):
            log.warning(_THREAD + " Partition %s marked as failed", name)
        if failure.source:
            self._close_future(key)
            if current is not None:
                storage_failure(broker, current, failure.step, failure.error)
        elif failure.step == "metadata":
            broker.fail_log_dir(future.destination, failure.error,
                                message=f"Error while writing partition metadata file {failure.path}")
        else:       # the directory's failure closes the future log (on_log_dir_failure)
            storage_failure(broker, future.partition, failure.step, failure.error, future=True)
        if self.futures.get(key) is future:          # the directory had failed already
            self._close_future(key)

    def _close_future(self, key) -> None:
        future = self.futures.pop(key)
        self._resume_cleaning(key)
        self.revert_assignment(key, future)
        self.broker.close_partition(future.partition)

    def on_log_dir_failure(self, path: str) -> list:
        """ReplicaManager.handleLogDirFailure's part for moves, ``path`` failed: a future log there
        is closed where it is (Partition.removeFutureLocalReplica(deleteFromLogDir = false)); the
        move of a replica whose current log is there stops, its future log left open elsewhere and
        idle (LogManager keeps it: listed by DescribeLogDirs without a lag, deleted when the
        replica leaves the metadata, resumed at a restart). The keys of the future logs closed."""
        manager, closed = self.broker.log_manager, []
        for key, future in list(self.futures.items()):
            current = manager.replica(key)
            if future.destination == path:
                self._close_future(key)
                closed.append(key)
            elif current is not None and os.path.dirname(os.path.abspath(current.log.directory)) == path:
                del self.futures[key]
                self.revert_assignment(key, future)
                self.stalled[key] = future
        for key, future in list(self.stalled.items()):
            if future.destination == path:
                del self.stalled[key]
                self.broker.close_partition(future.partition)
                closed.append(key)
        return closed
