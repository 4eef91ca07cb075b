"""An in-memory LogStore with a durable copy, for the simulator.

What the driver writes lands in the "written" state; a flush copies it to the "durable"
state; ``crash()`` throws away everything not flushed, as a power cut would. quorum-state
writes and snapshot installs are atomic and durable at once (tmp file, fsync, rename).
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
            self._durable = (list(self.batches), self.start)   # fsync + rename: durable now
        elif isinstance(op, TruncateFully):
            self.batches = []
            self.start = op.offset
            for sid in [s for s in self.snapshots if s.offset < op.offset]:
                del self.snapshots[sid]
            self._durable = ([], op.offset)
        elif isinstance(op, DeleteBefore):
            self.batches = [b for b in self.batches if b.last >= op.offset]
            self.start = op.offset
            for sid in list(self.snapshots):
                if sid.offset < op.keep_snapshot.offset:
                    del self.snapshots[sid]
            self._durable = ([b for b in self._durable[0] if b.last >= op.offset], op.offset)
        else:
            raise TypeError(f"unknown log operation {op!r}")

    def add_snapshot(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """A snapshot the local state machine wrote (frozen, so durable)."""
        self.snapshots[snapshot_id] = data

    def flush(self) -> None:
        self._durable = (list(self.batches), self.start)

    def unflushed_count(self) -> int:
        return len(self.batches) - len(self._durable[0])

    def crash(self) -> None:
        self.batches, self.start = list(self._durable[0]), self._durable[1]
        self.partial.clear()
