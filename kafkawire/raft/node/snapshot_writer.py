"""The state machine's snapshots, written off the event loop.

The driver freezes an image on the loop (the snapshot id at the applied offset, the control
records KIP-853 puts after the header, and the state machine's records at that instant:
either a list of bytes, or, from a state machine that has ``frozen_snapshot``, a function of
a frozen view that the worker thread calls, so the records are encoded off the loop), then
a worker thread writes it as Kafka's SnapshotWriter does:
into ``<id>.checkpoint.part``, fsync, rename, fsync the directory. Only then, back on the
loop, does the store learn of it and the core get SnapshotFrozen, after which the log below
it may be cleaned. A crash while the thread writes leaves a ``.part`` file, which
DiskLogStore removes when it opens; the log still holds every record the snapshot was to
cover, so nothing acknowledged is lost.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator

from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
from kafkawire.records import ControlRecordType
from kafkawire.records.kraft_control import encode_value
from kafkawire.storage.snapshot import SnapshotId, SnapshotWriter
from kafkawire.raft.types import OffsetAndEpoch

SNAPSHOT_BATCH_RECORDS = 500
# The worker thread lets go of the GIL this often: the interpreter would make the event loop's
# thread wait a whole switch interval (5 ms) for it each time, several times per loop step.
RECORDS_BETWEEN_YIELDS = 32


def _yielding(records: Iterable[bytes]) -> Iterator[bytes]:
    """``records``, with the GIL offered to the other threads (time.sleep(0)) every few."""
    for i, record in enumerate(records, 1):
        yield record
        if i % RECORDS_BETWEEN_YIELDS == 0:
            time.sleep(0)


class FrozenImage:
    """What the worker thread writes; the records are produced as it writes them, on that
    thread, from what was frozen on the loop, and none is kept: 1M records' values held to the
    end were freed wherever the last reference went, the loop's thread included (~35 ms of
    deallocation at 1M partitions), and a copy of them all held the GIL in one call."""
    __slots__ = ("snapshot_id", "control_records", "now_ms", "count", "_produce", "_values")

    def __init__(self, snapshot_id: OffsetAndEpoch, control_records: tuple[tuple[int, bytes], ...],
                 produce: Callable[[], Iterable[bytes]], now_ms: int):
        self.snapshot_id = snapshot_id
        self.control_records = control_records
        self.now_ms = now_ms
        self.count: int | None = None             # the records written, once written
        self._produce: Callable[[], Iterable[bytes]] | None = produce
        self._values: tuple[bytes, ...] | None = None

    def records(self) -> Iterator[bytes]:
        """The records, once, as they are produced (the GIL offered to other threads every few)."""
        if self._values is not None:
            return iter(self._values)
        assert self._produce is not None, "the records were already taken"
        produce, self._produce = self._produce, None        # the view it reads goes with the iterator
        return _yielding(produce())

    @property
    def values(self) -> tuple[bytes, ...]:
        """All the records, kept (for checks; the writer streams ``records``)."""
        if self._values is None:
            self._values = tuple(self.records())
        return self._values


def freeze_image(snapshot_id: OffsetAndEpoch, kraft_version: int, voters_record,
                 values: list[bytes] | Callable[[], Iterable[bytes]], now_ms: int) -> FrozenImage:
    """On the loop: what the worker thread will write (nothing in it changes afterwards).
    ``values``: the records, or a function of a frozen view that produces them."""
    control = []
    if kraft_version > 0:
        control.append((ControlRecordType.KRAFT_VERSION,
                        encode_value(KRaftVersionRecord(version=0, k_raft_version=kraft_version))))
        control.append((ControlRecordType.KRAFT_VOTERS, encode_value(voters_record)))
    if callable(values):
        return FrozenImage(snapshot_id, tuple(control), values, now_ms)
    taken = list(values)
    return FrozenImage(snapshot_id, tuple(control), lambda: taken, now_ms)


def write_image(directory: str, image: FrozenImage) -> str:
    """On a worker thread: the snapshot file, durable and renamed into place; returns its path."""
    now = image.now_ms
    snapshot_id = SnapshotId(image.snapshot_id.offset, image.snapshot_id.epoch)
    with SnapshotWriter(directory, snapshot_id, last_contained_log_timestamp=now,
                        control_records=list(image.control_records), time_ms=lambda: now) as writer:
        count, batch = 0, []
        for value in image.records():
            batch.append(value)
            if len(batch) == SNAPSHOT_BATCH_RECORDS:
                writer.append(batch, timestamp=now)
                count, batch = count + len(batch), []
                time.sleep(0)       # as _yielding: the loop's thread may be waiting for the GIL
        if batch:
            writer.append(batch, timestamp=now)
            count += len(batch)
    image.count = count
    return writer.path


def discard(path: str) -> None:
    """A snapshot written while a newer one was installed: not needed, not kept."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
