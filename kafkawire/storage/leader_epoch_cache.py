"""The leader epochs of a partition log and where each starts, kept in the partition directory's
``leader-epoch-checkpoint`` as Kafka's LeaderEpochFileCache keeps them (LeaderEpochCheckpointFile's
format: ``0``, the entry count, then one ``epoch start_offset`` line per entry).

    cache = LeaderEpochFileCache.load(log)          # the file, made to agree with the log
    cache.assign(leader_epoch, log.log_end_offset)  # a new leader epoch starts here
    cache.end_offset_for(epoch, log.log_end_offset) # (epoch, end offset) for OffsetForLeaderEpoch

The rules are Kafka's: an entry is added only for an epoch other than the latest (or an earlier
start of the latest), and adding one first removes the entries it contradicts (an epoch at or
above it, or a start at or after its start), so epochs and start offsets both increase. Every
change is written to the file (atomically, fsynced) before the caller appends in the new epoch,
so the file never misses an epoch that is in the log: at once, or through ``writer`` (a leader's
disk thread, kafkawire.broker.state_writes, which Produce waits for).

Loading: the file's entries, then those that start at or past the log end are dropped (Kafka's
truncateFromEnd after recovery: a cut tail takes its epochs with it) and the first kept one is
moved up to the log start (truncateFromStart). Kafka reads the epochs of the batches its recovery
goes through as well; kafkawire writes the file before the first batch of an epoch, so it trusts
the file, and rebuilds the entries from the batches' partition leader epochs only when the file is
missing (a log kafkawire wrote before it kept one) or unreadable (where Kafka would take the whole
log directory offline).
"""
from __future__ import annotations

import bisect
import functools
import logging
import os
from typing import Callable

from .log import Log
from .state_files import EpochEntry, StateFileError, read_leader_epoch_checkpoint, write_leader_epoch_checkpoint

__all__ = ["LeaderEpochFileCache", "LEADER_EPOCH_CHECKPOINT", "UNDEFINED_EPOCH", "UNDEFINED_EPOCH_OFFSET"]

log = logging.getLogger(__name__)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1                 # OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH
UNDEFINED_EPOCH_OFFSET = -1          # OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET


class LeaderEpochFileCache:
    """(epoch, start offset) entries, both increasing, mirrored in the checkpoint file at ``path``
    (None: kept in memory only)."""

    def __init__(self, path: str | None, entries=(), *, fsync: bool = True):
        self.path = path
        self.fsync = fsync
        # Runs the file's writes elsewhere (a disk thread) when set: writer(job); None writes at once.
        self.writer: Callable[[Callable[[], None]], None] | None = None
        self._epochs: list[int] = []
        self._starts: list[int] = []
        for entry in entries:              # as Kafka reads its file: each entry as an assign
            self._put(entry.epoch, entry.start_offset)

    @classmethod
    def load(cls, log_: Log, *, fsync: bool = True) -> LeaderEpochFileCache:
        """The cache of ``log_``'s directory, made to agree with the log (see the module docstring);
        the file is written when that changed it or when it was rebuilt with entries."""
        path = os.path.join(log_.directory, LEADER_EPOCH_CHECKPOINT)
        entries, rebuild = _read_entries(path)
        cache = cls(path, entries, fsync=fsync)
        if rebuild:
            cache._rebuild_from(log_)
        changed = cache._truncate_from_end(log_.log_end_offset)
        changed = cache._truncate_from_start(log_.log_start_offset) or changed
        if changed or (rebuild and cache._epochs):     # an empty log's file waits for its first epoch
            cache.flush()
        return cache

    # -- reading --

    @property
    def entries(self) -> list[EpochEntry]:
        return [EpochEntry(e, s) for e, s in zip(self._epochs, self._starts)]

    def latest(self) -> int:
        """The latest epoch, or -1 (Kafka's latestEpoch, empty)."""
        return self._epochs[-1] if self._epochs else UNDEFINED_EPOCH

    def epoch_of(self, offset: int) -> int:
        """The epoch the record at ``offset`` was written in: the last entry starting at or
        before it, or -1 (Kafka's epochForOffset)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._epochs[i] if i >= 0 else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as Kafka's endOffsetFor answers: the latest epoch ends at the log
        end; an older one at the start of the next known epoch, with the largest known epoch not
        above it (or the requested one, when none is); an unknown epoch above every known one,
        -1 or an empty cache give (-1, -1)."""
        if requested_epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self._epochs[-1]:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, requested_epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = higher - 1
        found = requested_epoch if floor < 0 else self._epochs[floor]
        return found, self._starts[higher]

    # -- changes --

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` (Kafka's assign); True if that changed
        the cache, which is then written to the file."""
        changed = self._put(epoch, start_offset)
        if changed:
            self.flush()
        return changed

    def _put(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"Received invalid partition leader epoch entry EpochEntry(epoch={epoch}, "
                             f"startOffset={start_offset})")
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._starts[-1]:
            return False
        removed: list[tuple[int, int]] = []
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            removed.append((self._epochs.pop(), self._starts.pop()))
        if len(removed) > 1 or (removed and removed[0][1] != start_offset):
            # Data written in the removed epochs is contradicted (an empty epoch replaced is not)
            log.warning("%s: new epoch entry (%d, %d) removed the conflicting entries %s", self.path, epoch,
                        start_offset, removed)
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Remove the entries starting at or after ``end_offset`` (the log was cut there)."""
        changed = self._truncate_from_end(end_offset)
        if changed:
            self.flush()
        return changed

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset``: the entries starting at or before it give way
        to one entry of the epoch in force there, starting at ``start_offset``."""
        changed = self._truncate_from_start(start_offset)
        if changed:
            self.flush()
        return changed

    def flush(self) -> None:
        """Write the entries as they are now (through ``writer`` when set)."""
        if self.path is None:
            return
        job = functools.partial(write_leader_epoch_checkpoint, self.path, self.entries, fsync=self.fsync)
        if self.writer is None:
            job()
        else:
            self.writer(job)

    def _truncate_from_end(self, end_offset: int) -> bool:
        keep = bisect.bisect_left(self._starts, end_offset)
        if end_offset < 0 or keep == len(self._starts):
            return False
        del self._epochs[keep:], self._starts[keep:]
        return True

    def _truncate_from_start(self, start_offset: int) -> bool:
        last_at_or_before = bisect.bisect_right(self._starts, start_offset) - 1
        if last_at_or_before < 0 or (last_at_or_before == 0 and self._starts[0] == start_offset):
            return False
        del self._epochs[:last_at_or_before], self._starts[:last_at_or_before]
        self._starts[0] = start_offset
        return True

    def _rebuild_from(self, log_: Log) -> None:
        """The epochs of the log's batches, where each first appears (as Kafka's recovery adds them)."""
        for batch in log_.batches():
            epoch = getattr(batch, "partition_leader_epoch", -1)
            if epoch >= 0 and (not self._epochs or epoch > self._epochs[-1]):
                self._epochs.append(epoch)
                self._starts.append(batch.base_offset)


def _read_entries(path: str) -> tuple[list[EpochEntry], bool]:
    """The file's entries and whether they must be rebuilt from the log instead (the file missing
    or unreadable)."""
    if not os.path.exists(path):
        return [], True
    try:
        entries = read_leader_epoch_checkpoint(path)
    except (StateFileError, OSError, UnicodeDecodeError) as exc:
        log.warning("%s: %s; rebuilding the leader epochs from the log", path, exc)
        return [], True
    if any(e.epoch < 0 or e.start_offset < 0 for e in entries):
        log.warning("%s: a negative epoch or offset; rebuilding the leader epochs from the log", path)
        return [], True
    return entries, False
