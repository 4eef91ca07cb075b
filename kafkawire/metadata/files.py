"""A ``__cluster_metadata`` log directory, snapshot or segment, read without writing: its records
(``read_metadata_records``) and the metadata image they build (``read_metadata_image``).

Both only read (kafkawire.storage.reader's rules: no recovery, no lock, a torn or in-progress
last batch is the end), so they are safe on a running controller's or broker's metadata log.
"""
from __future__ import annotations

import os
from collections.abc import Iterator

from kafkawire.storage.reader import PartitionReader, read_segment
from kafkawire.storage.snapshot import SnapshotReader

from .frame import MetadataRecord, decode_metadata_record
from .replay import Replay, replay_directory, replay_snapshot

__all__ = ["read_metadata_records", "read_metadata_image"]


def read_metadata_records(path) -> Iterator[tuple[int | None, MetadataRecord]]:
    """``(offset, record)`` for every metadata record of a ``__cluster_metadata`` directory (its
    latest snapshot, then the log after it), a snapshot (``.checkpoint``) or a segment (``.log``),
    in order. ``offset`` is the record's log offset; a snapshot's records have none (None): the
    snapshot as a whole stands for the log up to its end offset. Control records (leader changes,
    voters, a snapshot's header and footer) are left out.

    Raises MetadataRecordError (a BadBytesError) for a record value that is not a metadata record,
    SnapshotFormatError or CorruptRecordError for a damaged snapshot or batch, FileNotFoundError.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        yield from _directory_records(PartitionReader(path))
    elif path.endswith(".checkpoint"):
        yield from _snapshot_records(SnapshotReader(path))
    else:
        yield from _decoded(read_segment(path).records())


def _directory_records(partition: PartitionReader) -> Iterator[tuple[int | None, MetadataRecord]]:
    start = 0
    snapshots = partition.snapshots()
    if snapshots:
        yield from _snapshot_records(partition.read_snapshot(snapshots[-1]))
        start = snapshots[-1].end_offset
    yield from ((offset, record) for offset, record in _decoded(partition.records()) if offset >= start)


def _snapshot_records(snapshot: SnapshotReader) -> Iterator[tuple[None, MetadataRecord]]:
    for record in snapshot.records():
        yield None, decode_metadata_record(record.value)


def _decoded(records) -> Iterator[tuple[int, MetadataRecord]]:
    for record in records:
        yield record.offset, decode_metadata_record(record.value)


def read_metadata_image(path) -> Replay:
    """Replay a ``__cluster_metadata`` directory (latest snapshot, then the log), a snapshot or a
    segment into a MetadataImage, as Kafka's MetadataLoader does: ``replay.image`` is the image,
    ``replay.raft`` the leader and voters, ``replay.problems`` everything that could not be read
    or applied (nothing is skipped silently, nothing raises for bad bytes)."""
    path = os.fspath(path)
    return replay_directory(path) if os.path.isdir(path) else replay_snapshot(path)
