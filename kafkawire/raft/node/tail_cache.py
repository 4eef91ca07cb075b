"""The newest batches of the metadata log, kept as the bytes that were written: what the
leader's Fetch answers and every node's commits read, without going to the file.

A caught-up follower fetches what the leader appended a moment ago, and the driver hands the
listeners what it appended a moment ago. Read from the segment, each such read cost three
``pread``s of the segment's tail (the offset's lookup, the size walk, the bytes) and two parses
of every batch header in it: 17% of a 3-voter leader's loop at 100,000 records/s, under
cProfile (benchmarks/README.md, "A tail cache for Fetch answers and commits"). etcd keeps its
recent entries in memory likewise (raft's unstable log and MemoryStorage); Kafka relies on the
page cache and sendfile, which a Python server does not have.

The cache holds whole batches, contiguous, the newest ``max_bytes`` of them; a read answers
exactly what the segment would (whole batches from the one holding the offset, at most
``max_bytes`` but one batch at least, never across a segment boundary) or says it cannot
(None), and the store reads the file then. Every change of the log goes through DiskLogStore,
which keeps the cache in step: a truncation drops what it cuts, a snapshot install or a full
truncation empties it, retention drops what went below the log start.
"""
from __future__ import annotations

import bisect

DEFAULT_TAIL_CACHE_BYTES = 8 * 1024 * 1024      # ~0.3 s of appends at 100,000 records/s of 256 B


class TailCache:
    def __init__(self, max_bytes: int = DEFAULT_TAIL_CACHE_BYTES):
        self.max_bytes = max_bytes
        # One entry per batch, oldest first, from index self._first on (older ones are dropped
        # lazily: a pop from the front of a list is O(n)).
        self._first = 0
        self._bases: list[int] = []
        self._lasts: list[int] = []
        self._data: list[bytes] = []
        self._segments: list[int] = []      # the base offset of the segment each batch went to
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._data) - self._first

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    def start_offset(self) -> int | None:
        """The first offset the cache holds, None when empty."""
        return self._bases[self._first] if len(self) else None

    def end_offset(self) -> int | None:
        """One past the last offset the cache holds, None when empty."""
        return self._lasts[-1] + 1 if len(self) else None

    def append(self, data: bytes, base_offset: int, last_offset: int, segment_base: int) -> None:
        """A batch just written at the log end, in segment ``segment_base``."""
        if len(self) and base_offset != self._lasts[-1] + 1:
            self.clear()        # not contiguous (no caller does this): start over rather than serve a gap
        if self.max_bytes <= 0 or len(data) > self.max_bytes:
            self.clear()
            return
        self._bases.append(base_offset)
        self._lasts.append(last_offset)
        self._data.append(data)
        self._segments.append(segment_base)
        self._bytes += len(data)
        while self._bytes > self.max_bytes:
            self._bytes -= len(self._data[self._first])
            self._data[self._first] = b""
            self._first += 1
        self._compact()

    def read(self, offset: int, max_bytes: int, stop_offset: int | None = None) -> bytes | None:
        """Whole batches from the one holding ``offset``: at most ``max_bytes`` but the first
        whole, within its segment, and (with ``stop_offset``) none that starts at or after it.
        None when the cache does not hold the batch with ``offset``; b"" at or past its end."""
        if not len(self) or offset < self._bases[self._first]:
            return None
        i = bisect.bisect_left(self._lasts, offset, self._first)
        end = len(self._data)
        if i == end:
            return b""
        segment = self._segments[i]
        j, total = i, 0
        while j < end and self._segments[j] == segment and (stop_offset is None or self._bases[j] < stop_offset):
            size = len(self._data[j])
            if total + size > max_bytes and j > i:
                break
            total += size
            j += 1
        if j == i + 1:
            return self._data[i]
        return b"".join(self._data[i:j])

    def batches_from(self, offset: int, stop_offset: int) -> list[bytes] | None:
        """Each batch from the one holding ``offset`` to the last that starts below
        ``stop_offset``, one bytes each (no join: the committed batches the listeners get);
        None when the cache does not hold the batch with ``offset``."""
        if not len(self) or offset < self._bases[self._first]:
            return None
        i = bisect.bisect_left(self._lasts, offset, self._first)
        j = bisect.bisect_left(self._bases, stop_offset, i)
        return self._data[i:j]

    def truncate_from(self, offset: int) -> None:
        """The log was cut at ``offset``: every batch holding it or later goes."""
        cut = bisect.bisect_left(self._lasts, offset, self._first)
        for data in self._data[cut:]:
            self._bytes -= len(data)
        del self._bases[cut:], self._lasts[cut:], self._data[cut:], self._segments[cut:]
        if cut <= self._first:
            self.clear()

    def drop_before(self, offset: int) -> None:
        """The log now starts at ``offset``: batches that start below it go (a read of the log
        start in the middle of a batch goes to the file, which knows where the segment starts)."""
        while len(self) and self._bases[self._first] < offset:
            self._bytes -= len(self._data[self._first])
            self._data[self._first] = b""
            self._first += 1
        self._compact()

    def clear(self) -> None:
        self._first = 0
        self._bases, self._lasts, self._data, self._segments = [], [], [], []
        self._bytes = 0

    def _compact(self) -> None:
        if self._first and self._first * 2 >= len(self._data):
            if self._first == len(self._data):
                self.clear()
                return
            first = self._first
            del self._bases[:first], self._lasts[:first], self._data[:first], self._segments[:first]
            self._first = 0
