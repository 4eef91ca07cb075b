"""An in-memory LogStore with a durable copy, for the simulator.

What the driver writes lands in the "written" state; a flush copies it to the "durable"
state; ``crash()`` throws away everything not flushed, as a power cut would. quorum-state
writes and snapshot installs are atomic and durable at once (tmp file, fsync, rename).

An asynchronous flush (RaftConfig.async_flush) is asked for with ``request_flush``, which
notes the written state of that moment, and finishes with ``complete_flushes``, which makes
that state durable: writes made in between (a truncation among them) are not durable yet.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from kafkawire.raft.io import Append, DeleteBefore, InstallSnapshot, TruncateFully, TruncateTo, WriteSnapshotChunk
from kafkawire.raft.types import OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class StoredBatch:
    base: int
    last: int
    epoch: int
    data: bytes


class MemoryLogStore:
    def __init__(self):
        self.batches: list[StoredBatch] = []
        self.start = 0
        self.snapshots: dict[OffsetAndEpoch, bytes] = {}
        self.partial: dict[OffsetAndEpoch, bytearray] = {}
        self.election = None
        self._durable = ([], 0)
        self._flushes: list[tuple[int, tuple[list, int]]] = []   # (flush id, written state it makes durable)

    # --- LogStore ---------------------------------------------------------------------------
    def start_offset(self) -> int:
        return self.start

    def end_offset(self) -> int:
        return self.batches[-1].last + 1 if self.batches else self.start

    def epoch_entries(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for b in self.batches:
            if not out or out[-1][0] != b.epoch:
                out.append((b.epoch, max(b.base, self.start)))
        return out

    def _index(self, offset: int) -> int:
        """Index of the first batch whose last offset is >= offset."""
        lasts = [b.last for b in self.batches]
        return bisect.bisect_left(lasts, offset)

    def read(self, offset: int, max_bytes: int) -> bytes:
        i = self._index(offset)
        out: list[bytes] = []
        size = 0
        while i < len(self.batches):
            data = self.batches[i].data
            if out and size + len(data) > max_bytes:
                break
            out.append(data)
            size += len(data)
            i += 1
        return b"".join(out)

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        return sorted(self.snapshots, key=lambda s: (s.offset, s.epoch))

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int:
        return len(self.snapshots[snapshot_id])

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        return self.snapshots[snapshot_id][position:position + max_bytes]

    # --- applying a Ready's log operations ------------------------------------------------------
    def apply(self, op) -> None:
        if isinstance(op, Append):
            if op.base_offset != self.end_offset():
                raise AssertionError(f"append at {op.base_offset} but the log ends at {self.end_offset()}")
            self.batches.append(StoredBatch(op.base_offset, op.last_offset, op.epoch, op.batch))
        elif isinstance(op, TruncateTo):
            self.batches = [b for b in self.batches if b.last < op.offset]
            if self.batches and self.batches[-1].last + 1 != op.offset and op.offset > self.start:
                raise AssertionError(f"truncation to {op.offset} is not on a batch boundary")
        elif isinstance(op, WriteSnapshotChunk):
            if op.position == 0:
                self.partial[op.snapshot_id] = bytearray()   # the core starts the snapshot over
            part = self.partial.setdefault(op.snapshot_id, bytearray())
            if op.position != len(part):
                raise AssertionError(f"snapshot chunk at {op.position} but {len(part)} bytes written")
            part += op.data
        elif isinstance(op, InstallSnapshot):
            self.snapshots[op.snapshot_id] = bytes(self.partial.pop(op.snapshot_id))
            for sid in [s for s in self.snapshots if s.offset < op.snapshot_id.offset]:
                del self.snapshots[sid]
            self.batches = []
            self.start = op.snapshot_id.offset
            self._set_durable_now(([], self.start))   # fsync + rename: durable now
        elif isinstance(op, TruncateFully):
            self.batches = []
            self.start = op.offset
            for sid in [s for s in self.snapshots if s.offset < op.offset]:
                del self.snapshots[sid]
            self._set_durable_now(([], op.offset))
        elif isinstance(op, DeleteBefore):
            self.batches = [b for b in self.batches if b.last >= op.offset]
            self.start = op.offset
            for sid in list(self.snapshots):
                if sid.offset < op.keep_snapshot.offset:
                    del self.snapshots[sid]
            self._durable = _deleted_before(self._durable, op.offset)
            self._flushes = [(i, _deleted_before(state, op.offset)) for i, state in self._flushes]
        else:
            raise TypeError(f"unknown log operation {op!r}")

    def add_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """A snapshot the local state machine wrote (frozen, so durable)."""
        self.snapshots[snapshot_id] = data

    def _set_durable_now(self, state: tuple[list, int]) -> None:
        """An operation durable at once (fsync and rename): a flush asked for before it can no
        longer bring back what it replaced."""
        self._durable = state
        self._flushes = [(i, state) for i, _ in self._flushes]

    def flush(self) -> None:
        self._durable = (list(self.batches), self.start)

    def request_flush(self, flush_id: int) -> None:
        self._flushes.append((flush_id, (list(self.batches), self.start)))

    def complete_flushes(self, through_id: int) -> None:
        """The flushes up to ``through_id`` are done, in order: the state noted by the last
        of them is durable."""
        while self._flushes and self._flushes[0][0] <= through_id:
            self._durable = self._flushes.pop(0)[1]

    def durable_end_offset(self) -> int:
        batches, start = self._durable
        return batches[-1].last + 1 if batches else start

    def unflushed_count(self) -> int:
        return len(self.batches) - len(self._durable[0])

    def crash(self) -> None:
        self.batches, self.start = list(self._durable[0]), self._durable[1]
        self.partial.clear()
        self._flushes.clear()


def _deleted_before(state: tuple[list, int], offset: int) -> tuple[list, int]:
    batches, _ = state
    return [b for b in batches if b.last >= offset], offset
