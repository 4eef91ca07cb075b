"""Kafka's LogFlushStats timer (``kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs``): every
flush of a segment to disk, timed. Kafka's timer is one for the process (a static of its
LogSegment), so this one is too: the partitions' logs and the metadata log of a node count in it
alike, as in Kafka, where the metadata log is a UnifiedLog too.

A flush is one segment's fsyncs (its .log, and its indexes unless it is the active segment:
kafkawire.storage.log.Log.prepare_flush says why), as Kafka times each LogSegment.flush: at a
roll (the closed segment), at a log's flush (a clean stop, the metadata log's commits, a
topic's flush.messages or flush.ms).
Only the count and the last RECENT_SAMPLES durations are kept; the node's metrics endpoint
turns them into the timer's percentiles when scraped (kafkawire.broker.metrics).
"""
from __future__ import annotations

import threading
import time
from collections import deque

from .index import fsync_and_close

# Yammer's ExponentiallyDecayingReservoir keeps 1028 samples; this keeps the last 1028.
RECENT_SAMPLES = 1028


class FlushTimes:
    """The flushes timed so far: their count and the recent durations in milliseconds. Flushes
    run on the writer's thread or a disk thread, so recording takes a lock."""

    def __init__(self):
        self.count = 0
        self.recent: deque = deque(maxlen=RECENT_SAMPLES)
        self._lock = threading.Lock()

    def record(self, ms: float) -> None:
        with self._lock:
            self.count += 1
            self.recent.append(ms)

    def snapshot(self) -> tuple[int, list[float]]:
        with self._lock:
            return self.count, list(self.recent)


LOG_FLUSHES = FlushTimes()


def timed_flush(fds: list[int]) -> None:
    """fsync and close one segment's descriptors (fsync_and_close), timed in LOG_FLUSHES."""
    started = time.perf_counter()
    fsync_and_close(fds)
    LOG_FLUSHES.record((time.perf_counter() - started) * 1000)


__all__ = ["FlushTimes", "LOG_FLUSHES", "timed_flush", "RECENT_SAMPLES"]
