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
    """What the worker thread writes; ``values`` (the records) are produced at their first use,
    on that thread, from what was frozen on the loop."""
    __slots__ = ("snapshot_id", "control_records", "now_ms", "_produce", "_values")

    def __init__(self, snapshot_id: OffsetAndEpoch, control_records: tuple[tuple[int, bytes], ...],
                 produce: Callable[[], Iterable[bytes]], now_ms: int):
        self.snapshot_id = snapshot_id
        self.control_records = control_records
        self.now_ms = now_ms
        self._produce: Callable[[], Iterable[bytes]] | None = produce
        self._values: tuple[bytes, ...] | None = None

    @property
    def values(self) -> tuple[bytes, ...]:
        if self._values is None:
            assert self._produce is not None
            self._values = tuple(_yielding(self._produce()))
            self._produce = None        # the view it read can go
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
        values = list(image.values)
        for i in range(0, len(values), SNAPSHOT_BATCH_RECORDS):
            writer.append(values[i:i + SNAPSHOT_BATCH_RECORDS], timestamp=now)
            time.sleep(0)       # as _yielding: the loop's thread may be waiting for the GIL
    return writer.path


def discard(path: str) -> None:
    """A snapshot written while a newer one was installed: not needed, not kept."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
