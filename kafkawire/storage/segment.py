"""One log segment: ``%020d.log`` plus its ``.index`` and ``.timeindex`` (Kafka's LogSegment).

The .log file is record batches back to back, exactly as on the wire. The indexes are
sparse: after more than ``index_interval_bytes`` (Kafka's ``index.interval.bytes``, 4096)
have been appended since the last entry, the next append adds an offset-index entry
``(largest offset of the appended batches, position where they start)`` and a time-index
entry ``(max timestamp so far, offset of that max timestamp)``, the same rule as
LogSegment.append / LogSegment.recover in Java, so a rebuild from the same batches gives
the same entries Kafka writes.

``recover()`` is LogSegment.recover: scan every batch, verify the CRC, rebuild both
indexes, and truncate the file at the first torn (partial) or corrupt batch. It returns a
RecoveryReport saying how many bytes were cut, from which position, and why.

The segment's ``.txnindex`` (``txn_index``, kafkawire.storage.txn_index) is written by the
broker when an aborted transaction's marker lands in the segment; it is cut with the segment
(``truncate_to``) and renamed and deleted with it, but ``recover()`` leaves it alone: rebuilding
it takes the producer state, which the broker's log load has (Kafka's LogSegment.recover gets
the ProducerStateManager for it).

Durability: ``append`` only writes (page cache), like Kafka; ``flush()`` fsyncs the log and
both indexes. ``truncate_to`` and ``recover`` do not fsync by themselves; call ``flush()``.

Deferred writes (``append(..., write=False)``, the raft log's): the bytes are kept in memory and
written by ``write_unwritten``, which the owner runs on its disk thread just before the fsync that
covers them, so the loop does not wait for a page the fsync is writing back (stable pages). Every
read of the file, truncation, flush, rename and close writes what is still unwritten first (under
a lock, on the caller's thread), so nothing reads or cuts the file before it holds every append.
"""

from __future__ import annotations

import collections
import os
import threading
from dataclasses import dataclass

from kafkawire.records import CorruptRecordError, iter_batches

from .batch_scan import Extent, scan_extent
from .flush_stats import timed_flush
from .index import NO_TIMESTAMP, OffsetIndex, TimeIndex
from .txn_index import TXN_INDEX_SUFFIX, TransactionIndex

__all__ = ["LogSegment", "RecoveryReport", "ReadResult", "log_file_name", "DEFAULT_INDEX_INTERVAL_BYTES"]

DEFAULT_INDEX_INTERVAL_BYTES = 4096
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024
LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"       # LogFileUtils.DELETED_FILE_SUFFIX: files waiting for their delete


def _max_ts(batch) -> int:
    """A v2 batch's max timestamp; a legacy (magic 0/1) message's timestamp, -1 for v0."""
    ts = getattr(batch, "max_timestamp", None)
    if ts is None:
        ts = getattr(batch, "timestamp", None)
    return NO_TIMESTAMP if ts is None else ts


def _offsets_out_of_order(batch, position: int, next_offset: int | None, segment_base: int,
                          contiguous: bool) -> str | None:
    """Why ``batch`` cannot follow the batches before it in a segment, or None."""
    expected = segment_base if next_offset is None else next_offset
    if batch.base_offset < expected or batch.last_offset < batch.base_offset:
        return (f"offsets go back: the batch at byte {position} holds [{batch.base_offset}, {batch.last_offset}] "
                f"after offset {expected - 1}")
    if contiguous and batch.base_offset != expected:
        return (f"offsets do not follow: the batch at byte {position} starts at {batch.base_offset}, "
                f"expected {expected}")
    return None


def log_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}{LOG_SUFFIX}"


@dataclass(frozen=True)
class RecoveryReport:
    """What ``recover()`` did. ``truncated_bytes`` is 0 when the segment was intact."""

    file: str
    valid_bytes: int
    truncated_bytes: int
    truncated_at: int | None
    reason: str | None
    batches: int
    next_offset: int | None

    @property
    def truncated(self) -> bool:
        return self.truncated_bytes > 0


@dataclass(frozen=True)
class ReadResult:
    """Bytes of whole batches read from a segment, and where they were in the file."""

    data: bytes
    position: int
    end_position: int
    first_offset: int | None


class LogSegment:
    """One segment (``.log`` with ``.index`` and ``.timeindex``) as its owner uses it: opened
    read-write, appended to, recovered and truncated (Kafka's LogSegment). Opening one may rewrite
    its index files; to read a segment without writing, use ``kafkawire.storage.reader.read_segment``.
    """
    def __init__(self, directory, base_offset: int, *,
                 index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                 max_index_size: int = DEFAULT_MAX_INDEX_SIZE, create: bool = False,
                 load_indexes: bool = True, suffix: str = ""):
        # ``suffix`` (Kafka's LogSegment.open fileSuffix): the log cleaner writes ``.cleaned`` segments
        self.directory = os.fspath(directory)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        stem = os.path.join(self.directory, f"{base_offset:020d}")
        self.log_path = stem + LOG_SUFFIX + suffix
        self.index_path = stem + INDEX_SUFFIX + suffix
        self.time_index_path = stem + TIME_INDEX_SUFFIX + suffix
        self.txn_index = TransactionIndex(stem + TXN_INDEX_SUFFIX + suffix)   # written by the broker's transactions
        if create:
            if os.path.exists(self.log_path):
                raise FileExistsError(self.log_path)
            open(self.log_path, "xb").close()
        elif not os.path.exists(self.log_path):
            raise FileNotFoundError(self.log_path)
        self._log = open(self.log_path, "r+b")
        self._size = os.fstat(self._log.fileno()).st_size
        self.offset_index = OffsetIndex(self.index_path, base_offset,
                                        max_index_size=max_index_size, load=load_indexes)
        self.time_index = TimeIndex(self.time_index_path, base_offset,
                                    max_index_size=max_index_size, load=load_indexes)
        self._bytes_since_last_index_entry = 0
        # (max timestamp, offset of the batch that has it), as maxTimestampAndOffsetSoFar.
        last = self.time_index.last_entry()
        self._max_timestamp, self._offset_of_max_timestamp = last.timestamp, last.offset
        self._next_offset: int | None = None
        # Deferred appends, (position, bytes), oldest first; the lock orders their writers.
        self._unwritten: collections.deque[tuple[int, bytes]] = collections.deque()
        self._write_lock = threading.Lock()

    def moved_to(self, directory) -> None:
        """Its directory was renamed to ``directory`` (the files stay open): every path follows."""
        self.directory = os.fspath(directory)
        for attr in ("log_path", "index_path", "time_index_path"):
            setattr(self, attr, os.path.join(self.directory, os.path.basename(getattr(self, attr))))
        for index in (self.offset_index, self.time_index, self.txn_index):
            if index.path is not None:
                index.path = os.path.join(self.directory, os.path.basename(index.path))

    # -- basic facts --

    @property
    def size(self) -> int:
        return self._size

    @property
    def max_timestamp(self) -> int:
        return self._max_timestamp

    def __repr__(self):
        return f"LogSegment({self.log_path!r}, base_offset={self.base_offset}, size={self._size})"

    def _read_all(self) -> bytes:
        self.write_unwritten()
        return os.pread(self._log.fileno(), self._size, 0) if self._size else b""

    def fileno(self) -> int:
        """The .log's descriptor, every deferred append written to it first (a sendfile from it
        must see them)."""
        self.write_unwritten()
        return self._log.fileno()

    def read_bytes(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes of the .log from ``position``, every append included."""
        self.write_unwritten()
        return os.pread(self._log.fileno(), size, position)

    @property
    def has_unwritten(self) -> bool:
        return bool(self._unwritten)

    def write_unwritten(self) -> None:
        """Write the deferred appends to the file, in order (any thread; the first that
        fails stays unwritten and its error is raised)."""
        if not self._unwritten:
            return
        with self._write_lock:
            while self._unwritten:
                position, data = self._unwritten[0]
                view, done = memoryview(data), 0
                while done < len(view):
                    done += os.pwrite(self._log.fileno(), view[done:], position + done)
                self._unwritten.popleft()

    def batches(self, start_position: int = 0, *, verify_crc: bool = False,
                chunk_size: int = 1 << 20):
        """Yield ``(file_position, batch)`` from a byte position, reading the file in
        chunks (so a lookup in a 1 GiB segment does not read it all). Stops at a torn tail;
        corruption raises CorruptRecordError with the file position."""
        pos = start_position
        end = self._size
        while pos < end:
            want = min(max(chunk_size, 0), end - pos)
            data = self.read_bytes(pos, want)
            it = iter_batches(data, verify_crc=verify_crc)
            try:
                for batch in it:
                    yield pos + batch.position, batch
            except CorruptRecordError as e:
                raise CorruptRecordError(e.reason, None if e.position is None else pos + e.position,
                                         self.log_path) from None
            if it.tail is None:
                pos += it.position
                if it.position == 0:
                    break
                continue
            if pos + it.tail.position + it.tail.needed > end:
                return  # torn tail
            if it.tail.position == 0:
                chunk_size = max(chunk_size, it.tail.needed)  # a batch bigger than the chunk
            else:
                pos += it.tail.position

    def read_next_offset(self) -> int:
        """One past the last offset in the segment (its base offset when empty)."""
        if self._next_offset is None:
            last = self.offset_index.last_entry()
            nxt = self.base_offset
            for _, batch in self.batches(last.position):
                nxt = batch.next_offset
            self._next_offset = nxt
        return self._next_offset

    # -- append --

    def append(self, records: bytes, largest_offset: int | None = None,
               largest_timestamp: int | None = None,
               offset_of_max_timestamp: int | None = None, batches=None, write: bool = True, head=None) -> int:
        """Append the bytes of one or more whole batches; returns the position written at.

        ``largest_offset`` / ``largest_timestamp`` / ``offset_of_max_timestamp`` are
        computed from the batches when not given. ``batches``: each batch's (position in
        ``records``, last offset, largest timestamp), for several: each is then indexed on its
        own as LogSegment.append does (without it the chunk is indexed as one batch). ``write``
        False: the bytes are written later, by ``write_unwritten`` (the module docstring).
        ``head``: bytes written in place of the first ones of ``records`` (a batch header given its
        offset and epoch, so that the records need no stamped copy); the offsets are then given.
        """
        if not records:
            return self._size
        if largest_offset is None or largest_timestamp is None or offset_of_max_timestamp is None:
            lo, lt, ot = None, NO_TIMESTAMP, None
            it = iter_batches(records, verify_crc=False)
            for batch in it:
                lo = batch.last_offset
                if _max_ts(batch) > lt or ot is None:
                    lt, ot = max(_max_ts(batch), lt), batch.last_offset
            if it.tail is not None or lo is None:
                raise ValueError("append needs whole batches; the data ends inside a batch")
            largest_offset = lo if largest_offset is None else largest_offset
            largest_timestamp = lt if largest_timestamp is None else largest_timestamp
            offset_of_max_timestamp = ot if offset_of_max_timestamp is None else offset_of_max_timestamp
        if not 0 <= largest_offset - self.base_offset <= 0x7FFFFFFF:
            raise ValueError(f"offset {largest_offset} does not fit segment {self.base_offset}")
        position = self._size
        if write:
            self.write_unwritten()
            self._log.seek(position)
            if head is None:
                self._log.write(records)
            else:
                self._log.write(head)
                self._log.write(memoryview(records)[len(head):])
            self._log.flush()
        else:
            self._unwritten.append((position, bytes(records) if head is None
                                    else b"".join((head, memoryview(records)[len(head):]))))
        self._size += len(records)
        if batches is not None and len(batches) > 1:
            self._index_each(batches, position, len(records))
        else:
            self._index_chunk(largest_offset, largest_timestamp, offset_of_max_timestamp, position, len(records))
        self._next_offset = largest_offset + 1
        return position

    def _index_chunk(self, largest_offset: int, largest_timestamp: int, offset_of_max_timestamp: int,
                     position: int, size: int) -> None:
        if largest_timestamp > self._max_timestamp:
            self._max_timestamp, self._offset_of_max_timestamp = largest_timestamp, offset_of_max_timestamp
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_index.append(largest_offset, position)
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += size

    def _index_each(self, batches, position: int, size: int) -> None:
        """LogSegment.append's loop: each batch checked against index.interval.bytes in turn."""
        for i, (start, last_offset, max_timestamp) in enumerate(batches):
            end = batches[i + 1][0] if i + 1 < len(batches) else size
            self._index_chunk(last_offset, max_timestamp, last_offset, position + start, end - start)

    # -- lookups --

    def translate_offset(self, offset: int, starting_position: int = 0):
        """``(position, batch)`` of the first batch whose last offset is >= ``offset``, or
        None (Java translateOffset)."""
        entry = self.offset_index.lookup(offset)
        start = max(entry.position, starting_position)
        for position, batch in self.batches(start):
            if batch.last_offset >= offset:
                return position, batch
        return None

    def read(self, offset: int, max_bytes: int, *, min_one_batch: bool = True) -> ReadResult | None:
        """Whole batches starting at the batch that contains ``offset``.

        At most ``max_bytes``, except that the first batch is always returned whole when
        ``min_one_batch`` (Kafka's minOneMessage). None if no batch holds ``offset`` or later.
        """
        extent = self.read_extent(offset, max_bytes, min_one_batch=min_one_batch)
        if extent is None:
            return None
        return ReadResult(extent.read(), extent.position, extent.end_position, extent.first_offset)

    def read_extent(self, offset: int, max_bytes: int, *, min_one_batch: bool = True,
                    upper: int | None = None) -> Extent | None:
        """Where ``read`` would read, without reading the records (kafkawire.storage.batch_scan),
        cut below ``upper`` when given (the whole batches whose last offset is below it); None as
        ``read``. A segment whose headers the scan does not take is read the old way."""
        entry = self.offset_index.lookup(offset)
        found = scan_extent(self.fileno(), self._size, entry.position, offset, max_bytes, min_one_batch, upper)
        if found is None:
            return self._read_extent_by_parsing(offset, max_bytes, min_one_batch, upper)
        if not found:
            return None
        return Extent(self, *found)

    def _read_extent_by_parsing(self, offset: int, max_bytes: int, min_one_batch: bool,
                                upper: int | None) -> Extent | None:
        """read_extent by parsing every batch (legacy messages, and corruption raised as it was)."""
        found = self.translate_offset(offset)
        if found is None:
            return None
        start, first = found
        end = cut = start
        for position, batch in self.batches(start):
            batch_end = position + batch.size_in_bytes
            if batch_end - start > max_bytes and not (min_one_batch and end == start):
                break
            if cut == end and (upper is None or batch.last_offset < upper):
                cut = batch_end
            end = batch_end
        return Extent(self, start, cut, first.base_offset if end > start else None)

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int | None = None):
        """(offset, timestamp) of the first record with a timestamp >= ``timestamp``, or None."""
        entry = self.time_index.lookup(timestamp)
        start_off = entry.offset if starting_offset is None else max(entry.offset, starting_offset)
        found = self.translate_offset(start_off)
        if found is None:
            return None
        for _, batch in self.batches(found[0]):
            if _max_ts(batch) >= timestamp:
                for record in batch:
                    if record.timestamp >= timestamp and (starting_offset is None
                                                          or record.offset >= starting_offset):
                        return record.offset, record.timestamp
        return None

    # -- truncation and recovery --

    def truncate_to(self, offset: int) -> int:
        """Drop the batch containing ``offset`` and everything after it; returns bytes cut."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position = found[0]
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        cut = self._size - position
        self.write_unwritten()      # before the cut: a late write would bring the cut bytes back
        self._log.truncate(position)
        self._size = position
        self._bytes_since_last_index_entry = 0
        self._next_offset = None
        self._reload_max_timestamp()
        return cut

    def _reload_max_timestamp(self) -> None:
        last = self.time_index.last_entry()
        self._max_timestamp, self._offset_of_max_timestamp = last.timestamp, last.offset
        start = self.offset_index.lookup(last.offset).position
        for _, batch in self.batches(start):
            if _max_ts(batch) > self._max_timestamp:
                self._max_timestamp, self._offset_of_max_timestamp = _max_ts(batch), batch.last_offset

    def recover(self, *, contiguous: bool = False) -> RecoveryReport:
        """Rebuild the indexes from the batches and cut a torn or corrupt tail.

        The base offset is outside the CRC, so a flipped bit there passes the CRC check: a
        batch whose offsets go back (or, with ``contiguous``, as in a KRaft log that is never
        compacted, do not follow the previous batch exactly) is corrupt too, and cut."""
        self.offset_index.reset()
        self.time_index.reset()
        self._max_timestamp, self._offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset
        data = self._read_all()
        valid = 0
        last_index_entry = 0
        batches = 0
        next_offset = None
        reason = None
        it = iter_batches(data, verify_crc=True, file=self.log_path)
        try:
            for batch in it:
                if not 0 <= batch.last_offset - self.base_offset <= 0x7FFFFFFF:
                    reason = (f"batch offsets [{batch.base_offset}, {batch.last_offset}] do not "
                              f"fit segment base offset {self.base_offset}")
                    break
                reason = _offsets_out_of_order(batch, valid, next_offset, self.base_offset, contiguous)
                if reason is not None:
                    break
                if _max_ts(batch) > self._max_timestamp:
                    self._max_timestamp, self._offset_of_max_timestamp = _max_ts(batch), batch.last_offset
                if valid - last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(batch.last_offset, valid)
                    self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp)
                    last_index_entry = valid
                valid += batch.size_in_bytes
                batches += 1
                next_offset = batch.next_offset
        except CorruptRecordError as e:
            reason = f"corrupt batch: {e.reason} (at byte {e.position})"
        if reason is None and it.tail is not None:
            t = it.tail
            reason = (f"torn write: partial batch at byte {t.position} "
                      f"({t.available} of {t.needed} bytes present)")
        cut = len(data) - valid
        if cut:
            self._log.truncate(valid)
            self._size = valid
        if reason is None and cut:
            reason = "trailing bytes"
        self._bytes_since_last_index_entry = valid - last_index_entry
        self._next_offset = next_offset if next_offset is not None else self.base_offset
        return RecoveryReport(self.log_path, valid, cut, valid if cut else None,
                              reason if cut else None, batches, next_offset)

    def on_become_inactive(self) -> None:
        """Before a roll: add the final time-index entry and trim (Java onBecomeInactiveSegment)."""
        if self._max_timestamp != NO_TIMESTAMP:
            self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp,
                                         skip_full_check=True)

    # -- durability and lifecycle --

    def flush(self) -> None:
        """fsync the .log, .index and .timeindex files: ``sync_handles`` and an fsync of each,
        timed (LogFlushStats, kafkawire.storage.flush_stats)."""
        self.write_unwritten()
        timed_flush(self.sync_handles())

    def sync_handles(self, *, indexes: bool = True) -> list[int]:
        """For an fsync on another thread: the .log (and with ``indexes`` the .index and
        .timeindex) files' buffers written out, and a duplicate descriptor of each (the caller
        fsyncs and closes them; a duplicate stays valid if the segment is closed or deleted
        meanwhile). The .txnindex, when there is one, always: no recovery rebuilds the entries
        below the producer snapshot it starts from."""
        self._log.flush()
        fds = [os.dup(self._log.fileno())]
        txn_fd = self.txn_index.sync_handle()
        if txn_fd is not None:
            fds.append(txn_fd)
        for index in (self.offset_index, self.time_index):
            if not indexes:
                index.ensure_file()      # not synced (recovery rebuilds them), but present
                continue
            fd = index.sync_handle()
            if fd is not None:
                fds.append(fd)
        return fds

    def close(self) -> None:
        try:
            if self._log is not None:
                self.write_unwritten()      # its error is raised, once the files are closed
        finally:
            if self._max_timestamp != NO_TIMESTAMP and self._log is not None:
                self.time_index.maybe_append(self._max_timestamp, self._offset_of_max_timestamp,
                                             skip_full_check=True)
            self.offset_index.close()
            self.time_index.close()
            if self._log is not None:
                self._log.close()
                self._log = None

    def rename_to_deleted(self) -> list[str]:
        """Close the segment and add ``.deleted`` to the names of its files, as Kafka does before
        it deletes them after ``file.delete.delay.ms``; the renamed paths."""
        if self._log is not None:
            self.write_unwritten()
        self.offset_index.close()
        self.time_index.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        renamed = []
        for path in (self.log_path, self.index_path, self.time_index_path, self.txn_index.path):
            if os.path.exists(path):
                os.replace(path, path + DELETED_SUFFIX)
                renamed.append(path + DELETED_SUFFIX)
        return renamed

    def delete(self) -> None:
        with self._write_lock:      # a disk thread writing now finishes first; the rest never reach the file
            self._unwritten.clear()
        self.offset_index.delete()
        self.time_index.delete()
        if self._log is not None:
            self._log.close()
            self._log = None
        for p in (self.log_path, self.txn_index.path):
            if os.path.exists(p):
                os.remove(p)
