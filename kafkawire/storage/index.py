"""Kafka's sparse segment indexes: ``.index`` (OffsetIndex) and ``.timeindex`` (TimeIndex).

File formats (big-endian, no header, entries back to back; as written by Kafka's
``OffsetIndex`` / ``TimeIndex`` in storage/src/main/java/org/apache/kafka/storage/internals/log)::

    .index      8 bytes per entry: int32 relative offset (offset - segment base offset),
                                   int32 physical position of a batch in the .log file
    .timeindex 12 bytes per entry: int64 timestamp (ms), int32 relative offset

Rules kept from Kafka:

* OffsetIndex.append requires a strictly larger offset than the last entry
  (``InvalidOffsetException`` in Java); TimeIndex.maybe_append only appends a timestamp
  strictly larger than the last one and refuses a smaller timestamp or offset.
* Relative offsets must fit an int32 (``IndexOffsetOverflowException``).
* ``lookup`` returns the floor entry (largest key <= target); with none, the offset index
  answers ``(base_offset, 0)`` and the time index ``(-1, base_offset)``, as Java does.
* ``truncate_to(offset)`` drops every entry whose offset is >= ``offset``.

Loading Kafka's files. Kafka preallocates an active segment's index files
(``segment.index.bytes``, 10 MiB by default) and only trims them to the valid entries on
a clean roll / close, so after a crash a file may end in zero bytes. Java itself cannot
tell (it counts the whole file as entries and relies on recovery to rebuild). We read
entries while they keep increasing (offset index: relative offset and position strictly
increasing; time index: timestamp strictly increasing, offset non-decreasing); the first
entry that does not is where the entries end, and everything from there must be zero
bytes (preallocated space) or the file is corrupt (``CorruptIndexError`` with file and
byte position). An all-zero first entry followed by zeros (or alone) is read as "no
entries": it is indistinguishable from preallocation, and dropping it is harmless because
the fallback answer of a lookup is the same ``(base_offset, 0)`` / ``base_offset``.
A size that is not a multiple of the entry size is corruption too (Java's sanity check).

The in-memory entries are the truth; the file is kept trimmed (exactly the valid entries,
which is the byte form Kafka leaves after a clean shutdown). Appends are written through
to the file; ``flush()`` fsyncs.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array

from kafkawire.protocol.errors import BadBytesError

__all__ = ["CorruptIndexError", "InvalidOffsetError", "OffsetIndex", "TimeIndex",
           "OffsetPosition", "TimestampOffset", "read_offset_index_entries", "read_time_index_entries",
           "fsync_and_close"]

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_INT32_MAX = 0x7FFFFFFF
NO_TIMESTAMP = -1


def fsync_and_close(fds) -> None:
    """fsync each descriptor (duplicates from ``sync_handle``/``sync_handles``), then close
    them all, even when an fsync fails."""
    try:
        for fd in fds:
            os.fsync(fd)
    finally:
        for fd in fds:
            os.close(fd)


def _all_zero(data, start: int) -> bool:
    data = bytes(data)
    return data.count(0, start) == len(data) - start


def read_offset_index_entries(data, base_offset: int) -> list[tuple[int, int]]:
    """Every whole entry of an ``.index`` file's bytes as ``(offset, position)``, unchecked:
    what Kafka's DumpLogSegments reads (preallocated zero entries included, a partial last
    entry left out). ``OffsetIndex`` is the checked reader a log opens."""
    usable = len(data) - len(data) % _OFFSET_ENTRY.size
    return [(base_offset + rel, pos) for rel, pos in _OFFSET_ENTRY.iter_unpack(data[:usable])]


def read_time_index_entries(data, base_offset: int) -> list[tuple[int, int]]:
    """Every whole entry of a ``.timeindex`` file's bytes as ``(timestamp, offset)``, unchecked
    (see read_offset_index_entries)."""
    usable = len(data) - len(data) % _TIME_ENTRY.size
    return [(ts, base_offset + rel) for ts, rel in _TIME_ENTRY.iter_unpack(data[:usable])]


class CorruptIndexError(BadBytesError):
    """An index file Kafka would reject (CorruptIndexException in Java)."""

    def __init__(self, reason: str, position: int | None = None, file: str | None = None):
        self.reason, self.position, self.file = reason, position, file
        where = []
        if position is not None:
            where.append(f"at byte {position}")
        if file is not None:
            where.append(f"in {file}")
        super().__init__(f"{reason} ({' '.join(where)})" if where else reason)


class InvalidOffsetError(ValueError):
    """An append that would break the index's ordering (InvalidOffsetException)."""


class OffsetPosition(tuple):
    __slots__ = ()

    def __new__(cls, offset: int, position: int):
        return tuple.__new__(cls, (offset, position))

    offset = property(lambda self: self[0])
    position = property(lambda self: self[1])

    def __repr__(self):
        return f"OffsetPosition(offset={self[0]}, position={self[1]})"


class TimestampOffset(tuple):
    __slots__ = ()

    def __new__(cls, timestamp: int, offset: int):
        return tuple.__new__(cls, (timestamp, offset))

    timestamp = property(lambda self: self[0])
    offset = property(lambda self: self[1])

    def __repr__(self):
        return f"TimestampOffset(timestamp={self[0]}, offset={self[1]})"


class _Index:
    ENTRY_SIZE = 0

    def __init__(self, path, base_offset: int, *, max_index_size: int = 10 * 1024 * 1024,
                 load: bool = True):
        self.path = os.fspath(path) if path is not None else None
        self.base_offset = base_offset
        self.max_entries = max_index_size // self.ENTRY_SIZE
        self._keys = array("q")   # lookup key: relative offset (offset index) / timestamp
        self._vals = array("q")   # position (offset index) / relative offset (time index)
        self._file = None
        if load and self.path is not None and os.path.exists(self.path):
            with open(self.path, "rb") as f:
                self._parse(f.read())
            if os.path.getsize(self.path) != self.size_in_bytes:
                self._rewrite()   # trim preallocated zeros, as Kafka's trimToValidSize

    # -- loading --

    @classmethod
    def from_bytes(cls, data: bytes, base_offset: int, *, file: str | None = None):
        self = cls(None, base_offset)
        self.path = file
        self._parse(data)
        self.path = None
        return self

    def _parse(self, data) -> None:
        size = self.ENTRY_SIZE
        if len(data) % size:
            raise CorruptIndexError(
                f"index file size {len(data)} is not a multiple of the entry size {size}",
                len(data) - len(data) % size, self.path)
        n = len(data) // size
        entries = list(self._struct().iter_unpack(data))
        count = 0
        for i, (a, b) in enumerate(entries):
            if i == 0:
                if a == 0 and b == 0 and _all_zero(data, size):
                    break
            elif not self._follows(entries[i - 1], (a, b)):
                break
            self._check_entry(a, b, i * size)
            count += 1
        if count < n and not _all_zero(data, count * size):
            prev = tuple(entries[count - 1]) if count else None
            raise CorruptIndexError(
                f"entry {count} {tuple(entries[count])} does not follow {prev} and the rest "
                f"of the file is not zero (preallocated) space", count * size, self.path)
        for a, b in entries[:count]:
            self._keys.append(a)
            self._vals.append(b)

    # -- common --

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def entries(self) -> int:
        return len(self._keys)

    @property
    def size_in_bytes(self) -> int:
        return len(self._keys) * self.ENTRY_SIZE

    @property
    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    def _relative(self, offset: int) -> int:
        rel = offset - self.base_offset
        if not 0 <= rel <= _INT32_MAX:
            raise InvalidOffsetError(
                f"offset {offset} cannot be stored relative to base offset {self.base_offset} "
                f"in {self.path or 'the index'} (IndexOffsetOverflow)")
        return rel

    def to_bytes(self) -> bytes:
        st = self._struct()
        return b"".join(st.pack(a, b) for a, b in zip(self._keys, self._vals))

    def _open(self):
        if self._file is None and self.path is not None:
            self._file = open(self.path, "ab")
        return self._file

    def _write_entry(self, a: int, b: int) -> None:
        f = self._open()
        if f is not None:
            f.write(self._struct().pack(a, b))
            f.flush()

    def _rewrite(self) -> None:
        if self.path is None:
            return
        if self._file is not None:
            self._file.close()
            self._file = None
        with open(self.path, "r+b" if os.path.exists(self.path) else "wb") as f:
            f.truncate(self.size_in_bytes)
            f.seek(0)
            f.write(self.to_bytes())

    def _truncate_entries(self, n: int) -> None:
        if n >= len(self._keys):
            return
        del self._keys[n:]
        del self._vals[n:]
        if self.path is not None:
            f = self._open()
            f.flush()
            os.ftruncate(f.fileno(), n * self.ENTRY_SIZE)

    def reset(self) -> None:
        """Drop every entry and empty the file (before a rebuild)."""
        del self._keys[:]
        del self._vals[:]
        if self.path is not None:
            f = self._open()
            f.flush()
            os.ftruncate(f.fileno(), 0)

    def flush(self) -> None:
        """fsync the file (``sync_handle`` and an fsync of its descriptor)."""
        fd = self.sync_handle()
        if fd is not None:
            fsync_and_close([fd])

    def ensure_file(self) -> None:
        """Create the file if it does not exist yet: a segment's .index and .timeindex exist
        from its first flush on, as Kafka creates them with the segment, whether or not an
        entry was written (readers of the directory open them)."""
        self._open()

    def sync_handle(self) -> int | None:
        """The file's buffer written out and a duplicate of its descriptor, for an fsync on
        another thread (None when the index has no file)."""
        f = self._open()
        if f is None:
            return None
        f.flush()
        return os.dup(f.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def delete(self) -> None:
        self.close()
        if self.path is not None and os.path.exists(self.path):
            os.remove(self.path)

    def rename(self, new_path) -> None:
        self.close()
        os.replace(self.path, new_path)
        self.path = os.fspath(new_path)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class OffsetIndex(_Index):
    """``.index``: offset -> file position of the batch holding it (see module docstring)."""

    ENTRY_SIZE = 8

    @staticmethod
    def _struct():
        return _OFFSET_ENTRY

    @staticmethod
    def _follows(prev, cur) -> bool:
        return cur[0] > prev[0] and cur[1] > prev[1]

    def _check_entry(self, rel, pos, at):
        if rel < 0 or pos < 0:
            raise CorruptIndexError(f"negative relative offset {rel} or position {pos}",
                                    at, self.path)

    def entry(self, n: int) -> OffsetPosition:
        return OffsetPosition(self.base_offset + self._keys[n], self._vals[n])

    def __iter__(self):
        base = self.base_offset
        return (OffsetPosition(base + k, v) for k, v in zip(self._keys, self._vals))

    @property
    def last_offset(self) -> int:
        return self.base_offset + self._keys[-1] if self._keys else self.base_offset

    def last_entry(self) -> OffsetPosition:
        return self.entry(-1) if self._keys else OffsetPosition(self.base_offset, 0)

    def append(self, offset: int, position: int) -> None:
        rel = self._relative(offset)
        if self._keys and rel <= self._keys[-1]:
            raise InvalidOffsetError(
                f"attempt to append an offset ({offset}) to position {len(self._keys)} no "
                f"larger than the last offset appended ({self.last_offset}) to {self.path}")
        if self._vals and position <= self._vals[-1]:
            raise InvalidOffsetError(
                f"attempt to append position {position} not after the last position "
                f"({self._vals[-1]}) to {self.path}")
        if self.is_full:
            raise InvalidOffsetError(f"attempt to append to a full index (size = {len(self)})")
        self._keys.append(rel)
        self._vals.append(position)
        self._write_entry(rel, position)

    def lookup(self, offset: int) -> OffsetPosition:
        """The entry with the largest offset <= ``offset``, or (base_offset, 0)."""
        i = bisect.bisect_right(self._keys, offset - self.base_offset) - 1
        return self.entry(i) if i >= 0 else OffsetPosition(self.base_offset, 0)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= ``offset``."""
        self._truncate_entries(bisect.bisect_left(self._keys, offset - self.base_offset))


class TimeIndex(_Index):
    """``.timeindex``: timestamp -> first offset whose batch has that max timestamp."""

    ENTRY_SIZE = 12

    @staticmethod
    def _struct():
        return _TIME_ENTRY

    @staticmethod
    def _follows(prev, cur) -> bool:
        return cur[0] > prev[0] and cur[1] >= prev[1]

    def _check_entry(self, ts, rel, at):
        if rel < 0:
            raise CorruptIndexError(f"negative relative offset {rel}", at, self.path)

    def entry(self, n: int) -> TimestampOffset:
        return TimestampOffset(self._keys[n], self.base_offset + self._vals[n])

    def __iter__(self):
        base = self.base_offset
        return (TimestampOffset(k, base + v) for k, v in zip(self._keys, self._vals))

    def last_entry(self) -> TimestampOffset:
        return self.entry(-1) if self._keys else TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Append (timestamp, offset) if the timestamp is larger than the last one.

        Returns whether an entry was added. A smaller timestamp or offset than the last
        entry is an error, as in Kafka's TimeIndex.maybeAppend.
        """
        rel = self._relative(offset)
        if not skip_full_check and self.is_full:
            raise InvalidOffsetError(f"attempt to append to a full time index (size = {len(self)})")
        if self._keys:
            if rel < self._vals[-1]:
                raise InvalidOffsetError(
                    f"attempt to append an offset ({offset}) to slot {len(self)} no larger "
                    f"than the last offset appended ({self.base_offset + self._vals[-1]}) to {self.path}")
            if timestamp < self._keys[-1]:
                raise InvalidOffsetError(
                    f"attempt to append a timestamp ({timestamp}) to slot {len(self)} no larger "
                    f"than the last timestamp appended ({self._keys[-1]}) to {self.path}")
            if timestamp == self._keys[-1]:
                return False
        self._keys.append(timestamp)
        self._vals.append(rel)
        self._write_entry(timestamp, rel)
        return True

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= ``timestamp``, or (-1, base_offset)."""
        i = bisect.bisect_right(self._keys, timestamp) - 1
        return self.entry(i) if i >= 0 else TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= ``offset``."""
        self._truncate_entries(bisect.bisect_left(self._vals, offset - self.base_offset))
