"""The producer state of a partition on disk: Kafka's producer snapshots (``<offset>.snapshot``
beside the segments, kafkawire.storage.producer_snapshot's format) and the rebuild from the log,
as UnifiedLog.loadProducerState and ProducerStateManager do it.

    state, snapshot_offset = load_producer_state(log, "orders-0", now_ms=...)
    ... appends ...
    take_snapshot(log.directory, state, log.log_end_offset)      # at a roll and at close

Loading: snapshots at no segment's base offset are deleted, but for the newest when it is in
the last segment (ProducerStateManager.removeStraySnapshots: a clean stop's, at the log end);
then those above the log end (a tail cut by recovery) or at or below the log start
(ProducerStateManager.truncateAndReload); the latest remaining one is read (a corrupt
one is deleted and the next older tried, as Kafka does), and the batches after its offset are
replayed from the log without checks (from the batch holding that offset: without a snapshot,
the log start, which DeleteRecords may have put inside a batch), transaction markers included: the ``.txnindex`` entries
of transactions ended at or after the snapshot's offset are dropped and written again as the
replay meets their markers (kafkawire.broker.txn_log.rebuild_from, Kafka's LogSegment.recover
with the producer state), and the transactions still open come back from the snapshot's
``currentTxnFirstOffset`` and the replayed batches. Without a snapshot the whole log is replayed. A snapshot
keeps each producer's last batch only (Kafka's format), so after a restart a retry of that
batch is still found as a duplicate; older ones are found only when they were replayed.

Retention: when segments are deleted, the snapshot at each deleted segment's base offset goes
with it (``retire_snapshots``: renamed ``.deleted``, removed with the segment's files), as
UnifiedLog.deleteSegments does through ProducerStateManager.removeAndMarkSnapshotForDeletion;
the others stay (the one at the new first segment's base, and any at an offset that is no
segment's base, such as one written at a clean stop, until the next load drops it as a
stray). Moving the log start (DeleteRecords) deletes no snapshot, as Kafka's
onLogStartOffsetIncremented deletes none, and forgets no producer
(ProducerState.on_log_start_offset_incremented): the producers whose batches are all below the log
start are lost only at a load without a snapshot above the log start (those at or below it are
deleted), as Kafka's truncateAndReload and rebuild.
"""
from __future__ import annotations

import logging
import os
import re

from kafkawire.storage.producer_snapshot import (ProducerSnapshotEntry, ProducerSnapshotError,
                                                 encode_producer_snapshot, read_producer_snapshot,
                                                 snapshot_file_name)
from kafkawire.storage.segment import DELETED_SUFFIX
from kafkawire.storage.state_files import atomic_write

from .producer_state import ProducerState
from .txn_log import rebuild_from

__all__ = ["load_producer_state", "take_snapshot", "snapshot_file", "snapshot_offsets", "retire_snapshots", "stray_snapshots"]

log = logging.getLogger(__name__)
_SNAPSHOT_RE = re.compile(r"^(\d{20})\.snapshot$")


def snapshot_offsets(directory: str) -> list[int]:
    """The offsets of the snapshot files in a partition directory, in order."""
    return sorted(int(m.group(1)) for m in map(_SNAPSHOT_RE.match, os.listdir(directory)) if m)


def load_producer_state(log_, topic_partition: str, *, now_ms: int, expiration_ms: int | None = None):
    """The producer state of an opened kafkawire.storage.Log, and the offset of the snapshot it
    started from (the log start when none)."""
    kwargs = {} if expiration_ms is None else {"expiration_ms": expiration_ms}
    state = ProducerState(topic_partition, **kwargs)
    directory = log_.directory
    start, end = log_.log_start_offset, log_.log_end_offset
    found = snapshot_offsets(directory)
    stray = set(stray_snapshots(found, [segment.base_offset for segment in log_.segments]))
    offsets = []
    for offset in found:
        if offset in stray or offset > end or offset <= start:
            _delete(directory, offset)
        else:
            offsets.append(offset)
    loaded_from = start
    for offset in reversed(offsets):
        path = os.path.join(directory, snapshot_file_name(offset))
        try:
            with open(path, "rb") as f:
                state.load_snapshot(read_producer_snapshot(f.read()), now_ms)
            loaded_from = offset
            break
        except (ProducerSnapshotError, OSError) as exc:
            log.warning("Failed to load producer snapshot from '%s': %s", path, exc)
            _delete(directory, offset)
    on_completed = rebuild_from(log_, loaded_from)
    if loaded_from < end:
        # from the batch holding ``loaded_from``: a snapshot's offset is a batch's base, but the log
        # start (DeleteRecords) may be inside a batch, whose producer Kafka's rebuild reads too
        # (LogSegment.read from the first batch ending at or after the offset)
        state.replay((b for b in log_.batches(loaded_from) if b.last_offset >= loaded_from), on_completed)
    state.remove_expired(now_ms)
    return state, loaded_from


def stray_snapshots(offsets: list[int], segment_bases: list[int]) -> list[int]:
    """The snapshots the load deletes as strays (ProducerStateManager.removeStraySnapshots): those
    at no segment's base offset, except the newest of them when it is at or above the last
    segment's base (the one a clean stop wrote at the log end). ``offsets`` in order."""
    bases = set(segment_bases)
    strays = [offset for offset in offsets if offset not in bases]
    if strays and (not segment_bases or strays[-1] >= max(segment_bases)):
        strays.pop()
    return strays


def take_snapshot(directory: str, state: ProducerState, offset: int) -> str:
    """Write the state as ``<offset>.snapshot`` (ProducerStateManager.takeSnapshot: each
    producer's epoch and last batch), through a temporary file renamed over it; its path."""
    path, data = snapshot_file(directory, state, offset)
    atomic_write(path, data)
    return path


def snapshot_file(directory: str, state: ProducerState, offset: int) -> tuple[str, bytes]:
    """The path and bytes of the snapshot of ``state`` at ``offset`` (to write later, elsewhere)."""
    entries = [ProducerSnapshotEntry(
        producer_id=pid, producer_epoch=e.producer_epoch, coordinator_epoch=e.coordinator_epoch,
        current_txn_first_offset=e.current_txn_first_offset, timestamp=e.last_timestamp, last_sequence=e.last_seq,
        first_sequence=0, last_offset=e.last_data_offset, offset_delta=e.last_offset_delta)
        for pid, e in state.producers.items()]
    return os.path.join(directory, snapshot_file_name(offset)), encode_producer_snapshot(entries)


def retire_snapshots(directory: str, segment_bases) -> list[str]:
    """Rename the snapshots at the base offsets of deleted segments ``<offset>.snapshot.deleted``
    (their removal is the caller's, later); the renamed paths. A segment without a snapshot
    (the log's first, or one rolled before snapshots were written) has nothing to rename."""
    renamed = []
    for base in segment_bases:
        path = os.path.join(directory, snapshot_file_name(base))
        try:
            os.replace(path, path + DELETED_SUFFIX)
        except FileNotFoundError:
            continue
        except OSError as exc:       # the segments are gone already: a snapshot left is dropped at the next load
            log.warning("cannot rename %s for deletion: %s", path, exc)
            continue
        renamed.append(path + DELETED_SUFFIX)
    return renamed


def _delete(directory: str, offset: int) -> None:
    try:
        os.remove(os.path.join(directory, snapshot_file_name(offset)))
    except FileNotFoundError:
        pass
