"""The core's view of the replicated log: offsets, the leader epoch cache, snapshots, and the
writes of the current step that the driver has not applied yet.

Reads of record bytes go to the driver's LogStore (read-only from here). Writes leave as
``Ready.log_ops``; until the driver applies them, reads of the offsets they cover are served
from the pending writes, as etcd's unstable log does.

The epoch cache follows Kafka's LeaderEpochFileCache: a list of (epoch, start offset) with
increasing epochs and offsets. ``end_offset_for_epoch`` is Kafka's endOffsetFor, and
``validate_offset_and_epoch`` is ReplicatedLog.validateOffsetAndEpoch, whose answer tells a
leader whether a follower's fetch position is valid, diverging, or behind the snapshot.
"""
from __future__ import annotations

import bisect
import collections
from dataclasses import dataclass
from typing import Protocol

from .io import Append, DeleteBefore, InstallSnapshot, TruncateFully, TruncateTo, WriteSnapshotChunk
from .types import OffsetAndEpoch
from kafkawire.records import LegacyRecordBatch, RecordBatch, iter_batches
from kafkawire.records.errors import CorruptRecordError

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


class LogStore(Protocol):
    """What the driver provides: read access to the log and snapshots as applied so far."""

    def start_offset(self) -> int: ...
    def end_offset(self) -> int: ...
    def epoch_entries(self) -> list[tuple[int, int]]: ...          # (epoch, start offset)
    def read(self, offset: int, max_bytes: int) -> bytes: ...      # whole batches from the one holding offset
    def snapshot_ids(self) -> list[OffsetAndEpoch]: ...            # frozen snapshots, ascending
    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int: ...
    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes: ...


@dataclass(frozen=True, slots=True)
class ValidOffsetAndEpoch:
    kind: str                    # "valid" | "diverging" | "snapshot"
    offset_and_epoch: OffsetAndEpoch


class EpochCache:
    """Kafka's leader epoch cache: epoch -> first offset of that epoch."""

    def __init__(self, entries=()):
        self.epochs: list[int] = []
        self.starts: list[int] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self.epochs, self.starts))

    def latest_epoch(self) -> int | None:
        return self.epochs[-1] if self.epochs else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (the first batch of an epoch)."""
        if self.epochs and epoch <= self.epochs[-1]:
            if epoch == self.epochs[-1]:
                return
            raise ValueError(f"epoch {epoch} at offset {start_offset} is older than the latest epoch "
                             f"{self.epochs[-1]} (starting at {self.starts[-1]})")
        if self.starts and start_offset < self.starts[-1]:
            raise ValueError(f"epoch {epoch} cannot start at {start_offset}, before epoch "
                             f"{self.epochs[-1]} at {self.starts[-1]}")
        self.epochs.append(epoch)
        self.starts.append(start_offset)

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs that start at or after ``end_offset`` (a log truncation)."""
        while self.starts and self.starts[-1] >= end_offset:
            self.epochs.pop()
            self.starts.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """After log cleaning or a snapshot install: epochs wholly before ``start_offset``
        go, and the epoch holding it now starts there (Kafka's truncateFromStart)."""
        i = bisect.bisect_right(self.starts, start_offset) - 1
        if i > 0:
            del self.epochs[:i]
            del self.starts[:i]
        if self.starts and self.starts[0] < start_offset:
            self.starts[0] = start_offset

    def clear(self) -> None:
        self.epochs.clear()
        self.starts.clear()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset): the largest epoch <= requested and the offset where it ends.

        Kafka's LeaderEpochFileCache.endOffsetFor: the latest epoch ends at the log end; an
        epoch larger than every known one is undefined; an epoch smaller than every known one
        answers (requested, start of the first known epoch).
        """
        if requested_epoch == UNDEFINED_EPOCH or not self.epochs:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if requested_epoch == self.epochs[-1]:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self.epochs, requested_epoch)
        if higher >= len(self.epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if higher == 0:
            return requested_epoch, self.starts[0]
        return self.epochs[higher - 1], self.starts[higher]

    def epoch_for_offset(self, offset: int) -> int | None:
        i = bisect.bisect_right(self.starts, offset) - 1
        return self.epochs[i] if i >= 0 else None


class RaftLog:
    """Offsets, epochs and snapshots of the local log, kept in step with the writes the core
    emits. Invariants: start_offset <= end_offset; the epoch cache covers [start, end)."""

    def __init__(self, store: LogStore):
        self.store = store
        self.start_offset = store.start_offset()
        self.end_offset = store.end_offset()
        self.epochs = EpochCache(store.epoch_entries())
        self.snapshots: list[OffsetAndEpoch] = list(store.snapshot_ids())
        self.pending: list = []
        self.flush_needed = False
        # Appends of this step, readable before the driver applies them.
        self._unstable: list[Append] = []
        self._stable_end = self.end_offset
        # async_flush: the log end known durable (what the driver opened is), the flushes
        # asked for and not reported yet as [flush id, log end it makes durable], and whether
        # this step wrote something whose messages must wait for its fsync.
        self.durable_end = self.end_offset
        self._flushes: collections.deque[list[int]] = collections.deque()
        self._flush_ids = 0
        self.hold_needed = False
        self._truncate_to_latest_snapshot()

    def _truncate_to_latest_snapshot(self) -> None:
        """A snapshot past the end of the log (the log lost unflushed records, or was never
        written up to it) replaces the log, as Kafka's KafkaMetadataLog does on open."""
        latest = self.latest_snapshot()
        if latest is None or latest.offset <= self.end_offset and (
                latest.offset <= self.start_offset
                or self.epochs.epoch_for_offset(latest.offset - 1) == latest.epoch):
            return
        self.epochs.clear()
        self.start_offset = self.end_offset = self._stable_end = latest.offset
        self.snapshots = [s for s in self.snapshots if s.offset >= latest.offset]
        self.pending.append(TruncateFully(latest.offset))
        self.flush_needed = True
        self._clamp_durable(latest.offset)

    # --- the step boundary -------------------------------------------------------------------
    def take_pending(self) -> tuple[list, bool, bool]:
        """(log ops, flush, hold): this step's writes, whether to fsync them, and whether
        the step's messages must wait for that fsync (anything but a leader's own appends)."""
        ops, flush, hold = self.pending, self.flush_needed, self.hold_needed
        self.pending, self.flush_needed, self.hold_needed = [], False, False
        self._unstable = []
        self._stable_end = self.end_offset
        return ops, flush, flush and hold

    # --- durability (RaftConfig.async_flush) -----------------------------------------------------
    def request_flush(self) -> int:
        """A flush of everything written so far is asked for; returns its id."""
        self._flush_ids += 1
        self._flushes.append([self._flush_ids, self.end_offset])
        return self._flush_ids

    def flushed(self, flush_id: int) -> bool:
        """The driver's fsync covering flush ``flush_id`` (and every earlier one) is done;
        returns whether ``durable_end`` moved. An id never asked for is ignored."""
        moved = False
        while self._flushes and self._flushes[0][0] <= flush_id:
            end = self._flushes.popleft()[1]
            if end > self.durable_end:
                self.durable_end, moved = end, True
        return moved

    def _clamp_durable(self, offset: int) -> None:
        """After a truncation to ``offset``, records from there on are new: neither what is
        durable nor what a flush in flight makes durable counts beyond it."""
        self.durable_end = min(self.durable_end, offset)
        for flush in self._flushes:
            flush[1] = min(flush[1], offset)
        self.hold_needed = True

    # --- queries -------------------------------------------------------------------------------
    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last record, or of the snapshot the log starts at."""
        epoch = self.epochs.latest_epoch()
        if epoch is not None:
            return epoch
        snapshot = self.latest_snapshot()
        return snapshot.epoch if snapshot else 0

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return max(self.snapshots, key=lambda s: (s.offset, s.epoch)) if self.snapshots else None

    def earliest_snapshot(self) -> OffsetAndEpoch | None:
        return min(self.snapshots, key=lambda s: (s.offset, s.epoch)) if self.snapshots else None

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Kafka's KafkaMetadataLog.endOffsetForEpoch, including its snapshot override."""
        found_epoch, found_offset = self.epochs.end_offset_for(epoch, self.end_offset)
        earliest = self.earliest_snapshot()
        if found_offset == UNDEFINED_OFFSET:
            return OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)
        if earliest is not None and found_offset == earliest.offset and found_epoch < earliest.epoch:
            return OffsetAndEpoch(earliest.epoch, earliest.offset)
        return OffsetAndEpoch(found_epoch, found_offset)

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> ValidOffsetAndEpoch:
        """Where a fetcher at (offset, last fetched epoch) stands against this log."""
        if self.start_offset == 0 and offset == 0:
            return ValidOffsetAndEpoch("valid", OffsetAndEpoch(0, 0))
        earliest = self.earliest_snapshot()
        if earliest is not None and (offset < self.start_offset
                                     or (offset == self.start_offset and epoch != earliest.epoch)
                                     or epoch < earliest.epoch):
            latest = self.latest_snapshot()
            assert latest is not None     # there is an earliest snapshot, so there is a latest
            return ValidOffsetAndEpoch("snapshot", latest)
        end = self.end_offset_for_epoch(epoch)
        if end.epoch != epoch or end.offset < offset:
            return ValidOffsetAndEpoch("diverging", end)
        return ValidOffsetAndEpoch("valid", OffsetAndEpoch(epoch, offset))

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``; at least one batch if any."""
        if offset >= self.end_offset:
            return b""
        if offset < self._stable_end:
            data = self.store.read(offset, max_bytes)
            if data:
                return data
        out: list[bytes] = []
        size = 0
        for op in self._unstable:
            if op.last_offset >= offset:
                if out and size + len(op.batch) > max_bytes:
                    break
                out.append(op.batch)
                size += len(op.batch)
        return b"".join(out)

    # --- writes (become Ready.log_ops) -----------------------------------------------------------
    def append(self, batch: bytes, base_offset: int, last_offset: int, epoch: int, *, flush: bool,
               hold: bool = True) -> None:
        if base_offset != self.end_offset:
            raise ValueError(f"batch at offset {base_offset} does not follow the log end {self.end_offset}")
        op = Append(batch, base_offset, last_offset, epoch)
        self.epochs.assign(epoch, base_offset)
        self.end_offset = last_offset + 1
        self.pending.append(op)
        self._unstable.append(op)
        self.flush_needed = self.flush_needed or flush
        self.hold_needed = self.hold_needed or hold

    def truncate_to(self, offset: int) -> None:
        if offset >= self.end_offset:
            return
        if offset < self.start_offset:
            raise ValueError(f"cannot truncate to {offset}, before the log start {self.start_offset}")
        self.epochs.truncate_from_end(offset)
        self.end_offset = offset
        self._stable_end = min(self._stable_end, offset)
        self._unstable = [op for op in self._unstable if op.last_offset < offset]
        self.pending.append(TruncateTo(offset))
        self.flush_needed = True
        self._clamp_durable(offset)

    def write_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, position: int, data: bytes) -> None:
        self.pending.append(WriteSnapshotChunk(snapshot_id, position, data))

    def install_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """A fetched snapshot replaces the whole log (Kafka's truncateToLatestSnapshot)."""
        self.pending.append(InstallSnapshot(snapshot_id))
        # Older snapshots go with the log they summarised (Kafka's truncateToLatestSnapshot):
        # the earliest snapshot must be the one at the log start.
        self.snapshots = [s for s in self.snapshots if s.offset >= snapshot_id.offset and s != snapshot_id]
        self.snapshots.append(snapshot_id)
        self.epochs.clear()
        self.start_offset = self.end_offset = self._stable_end = snapshot_id.offset
        self._unstable = []
        self.flush_needed = True
        self._clamp_durable(snapshot_id.offset)

    def snapshot_frozen(self, snapshot_id: OffsetAndEpoch) -> None:
        if snapshot_id not in self.snapshots:
            self.snapshots.append(snapshot_id)

    def delete_before(self, offset: int) -> None:
        """Advance the log start to the latest snapshot at or below ``offset``."""
        keep = max((s for s in self.snapshots if s.offset <= offset), key=lambda s: s.offset, default=None)
        if keep is None or keep.offset <= self.start_offset:
            return
        self.start_offset = keep.offset
        self.epochs.truncate_from_start(keep.offset)
        self.snapshots = [s for s in self.snapshots if s.offset >= keep.offset]
        self.pending.append(DeleteBefore(keep.offset, keep))


def check_fetched_batches(data: bytes, end_offset: int, last_epoch: int, current_epoch: int):
    """The batches of a fetched response to append, or why the response breaks the log's rules:
    bytes that do not decode or fail their CRC, a batch that does not start at the log end
    offset (a gap or an overlap: the base offset is outside the CRC), or a leader epoch that
    goes back or is newer than the epoch being followed. Returns ``(batches, problem)``; nothing
    of a refused response is appended (Kafka's follower likewise keeps its log end offset)."""
    out: list[RecordBatch | LegacyRecordBatch] = []
    expected, epoch = end_offset, last_epoch
    try:
        for batch in iter_batches(data):
            if not out and batch.last_offset < end_offset:
                continue   # already held (an answer to a fetch sent before the last append)
            where = f"batch {batch.base_offset}..{batch.last_offset}"
            if batch.base_offset != expected:
                return [], f"{where} does not start at the log end offset {expected}"
            if not epoch <= batch.partition_leader_epoch <= current_epoch:
                return [], (f"{where} has leader epoch {batch.partition_leader_epoch}, outside "
                            f"[{epoch}, {current_epoch}]")
            out.append(batch)
            expected, epoch = batch.next_offset, batch.partition_leader_epoch
    except CorruptRecordError as e:
        return [], f"corrupt records: {e}"
    return out, None
