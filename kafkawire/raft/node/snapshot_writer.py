"""The state machine's snapshots, written off the event loop.

The driver freezes an image on the loop (the snapshot id at the applied offset, the control
records KIP-853 puts after the header, and the state machine's records, a list of bytes
taken at that instant), then a worker thread writes it as Kafka's SnapshotWriter does:
into ``<id>.checkpoint.part``, fsync, rename, fsync the directory. Only then, back on the
loop, does the store learn of it and the core get SnapshotFrozen, after which the log below
it may be cleaned. A crash while the thread writes leaves a ``.part`` file, which
DiskLogStore removes when it opens; the log still holds every record the snapshot was to
cover, so nothing acknowledged is lost.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
from kafkawire.records import ControlRecordType
from kafkawire.records.kraft_control import encode_value
from kafkawire.storage.snapshot import SnapshotId, SnapshotWriter
from kafkawire.raft.types import OffsetAndEpoch

SNAPSHOT_BATCH_RECORDS = 500


@dataclass(frozen=True, slots=True)
class FrozenImage:
    snapshot_id: OffsetAndEpoch
    control_records: tuple[tuple[int, bytes], ...]
    values: tuple[bytes, ...]
    now_ms: int


def freeze_image(snapshot_id: OffsetAndEpoch, kraft_version: int, voters_record, values: list[bytes],
                 now_ms: int) -> FrozenImage:
    """On the loop: what the worker thread will write (nothing in it changes afterwards)."""
    control = []
    if kraft_version > 0:
        control.append((ControlRecordType.KRAFT_VERSION,
                        encode_value(KRaftVersionRecord(version=0, k_raft_version=kraft_version))))
        control.append((ControlRecordType.KRAFT_VOTERS, encode_value(voters_record)))
    return FrozenImage(snapshot_id, tuple(control), tuple(values), now_ms)


def write_image(directory: str, image: FrozenImage) -> str:
    """On a worker thread: the snapshot file, durable and renamed into place; returns its path."""
    now = image.now_ms
    snapshot_id = SnapshotId(image.snapshot_id.offset, image.snapshot_id.epoch)
    with SnapshotWriter(directory, snapshot_id, last_contained_log_timestamp=now,
                        control_records=list(image.control_records), time_ms=lambda: now) as writer:
        values = list(image.values)
        for i in range(0, len(values), SNAPSHOT_BATCH_RECORDS):
            writer.append(values[i:i + SNAPSHOT_BATCH_RECORDS], timestamp=now)
    return writer.path


def discard(path: str) -> None:
    """A snapshot written while a newer one was installed: not needed, not kept."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
