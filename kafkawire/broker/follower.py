"""A partition this broker follows: the local replica's log written as Kafka's follower writes it
(Partition.makeFollower, UnifiedLog.appendAsFollower, truncateTo, truncateFullyAndStartAt) and the
truncation rule of Kafka's AbstractFetcherThread.getOffsetTruncationState.

    follower = FollowerReplica(partition, leader_id=2, leader_epoch=7)   # partition: its open log
    info = follower.append(records)              # the leader's batches, as the leader wrote them
    follower.update_from_leader(high_watermark=..., log_start_offset=...)
    follower.truncate_to(offset)                 # a diverging epoch, or the leader's end offset

The log is a LeaderPartition (kafkawire.broker.partition) that is not in ``Broker.partitions``:
the same files, producer state and leader epoch cache, so a follower made leader keeps all of
them. Appends keep the leader's offsets and partition leader epochs (nothing is assigned);
every batch's CRC is checked; a partial batch at the end of the fetched bytes is dropped (Kafka's
trimInvalidBytes). Before the append the leader epoch cache takes each batch's partition leader
epoch starting at its base offset; after it the producer state replays the batches without checks
(AppendOrigin.REPLICATION: sequences and epochs as the leader accepted them, transaction markers
completing transactions and writing the ``.txnindex`` entry of an abort), and a roll snapshots the
producer state at the new segment's base, as the leader's append does.

The high watermark is the leader's, capped at the local log end (UnifiedLog.updateHighWatermark);
the log start offset follows the leader's when that is higher, up to the high watermark
(maybeIncrementLogStartOffset with LeaderOffsetIncremented). The segments wholly below it are
deleted by the log manager's next retention pass, which runs on followed logs as on led ones
(kafkawire.broker.log_manager: retention bounded by this replica's high watermark, the log cleaner
for compacted logs); a truncation below the active segment stops a cleaning of the log first
(``truncation``, the log manager's guard).

Truncation (UnifiedLog.truncateTo): below the log end, the leader epoch entries from the offset
on go, the segments are cut (their offset, time and transaction indexes with them), the producer
snapshots above the new end are deleted and the producer state is rebuilt from the latest
remaining snapshot and the batches after it, as on open; the high watermark comes down with the
log end. Below the log start the log restarts empty at the offset (truncateFullyAndStartAt: no
epochs, no snapshots, no producers).
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import NamedTuple

from kafkawire.records import CorruptRecordError, iter_batches
from kafkawire.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from kafkawire.storage.producer_snapshot import snapshot_file_name

from .log_dir_failure import LogTruncationError
from .partition import LeaderPartition
from .producer_snapshots import load_producer_state, snapshot_offsets
from .producer_state import ProducerState
from .txn_log import write_aborted

__all__ = ["FollowerReplica", "FollowerAppendError", "AppendInfo", "TruncationState", "offset_truncation_state"]

log = logging.getLogger(__name__)


class FollowerAppendError(ValueError):
    """The leader's bytes cannot be appended here: a corrupt batch (Kafka's CorruptRecordException)
    or offsets below the log end (UnexpectedAppendOffsetException)."""


class AppendInfo(NamedTuple):
    """What an append as follower wrote: its first and last offsets, the partition leader epoch of
    its last batch (the fetcher's next last_fetched_epoch) and the bytes written."""
    first_offset: int
    last_offset: int
    last_leader_epoch: int
    size: int


class TruncationState(NamedTuple):
    """Kafka's OffsetTruncationState: where to truncate, and whether that ends the truncation
    (False: ask the leader again with OffsetForLeaderEpoch)."""
    offset: int
    completed: bool


def offset_truncation_state(epochs, log_end_offset: int, fetch_offset: int, leader_epoch: int,
                            leader_end_offset: int) -> TruncationState:
    """AbstractFetcherThread.getOffsetTruncationState for the leader's (epoch, end offset) answer
    (a Fetch answer's DivergingEpoch, or OffsetForLeaderEpoch's): an unknown end offset keeps the
    fetch offset; an unknown epoch truncates to the leader's end offset; otherwise the end of the
    largest local epoch not above the leader's: when that is the leader's epoch, truncate to the
    smaller of both ends, else to the local end of that older epoch and ask again; with no local
    epoch that old, to the leader's end offset. Never above the local log end."""
    if leader_end_offset == UNDEFINED_EPOCH_OFFSET:
        return TruncationState(fetch_offset, True)
    if leader_epoch == UNDEFINED_EPOCH:
        return TruncationState(min(leader_end_offset, log_end_offset), True)
    follower_epoch, follower_end = epochs.end_offset_for(leader_epoch, log_end_offset)
    if follower_end == UNDEFINED_EPOCH_OFFSET:
        return TruncationState(min(leader_end_offset, log_end_offset), True)
    if follower_epoch != leader_epoch:
        return TruncationState(min(follower_end, log_end_offset), False)
    return TruncationState(min(follower_end, leader_end_offset, log_end_offset), True)


class FollowerReplica:
    """A partition followed here: its log (``partition``, a LeaderPartition not led), the leader
    and leader epoch the metadata names, and the high watermark the leader sent."""

    def __init__(self, partition: LeaderPartition, *, leader_id: int, leader_epoch: int,
                 high_watermark: int | None = None, truncation=None, on_high_watermark=None):
        self.partition = partition
        # Called when the leader's answer moved the high watermark: consumers' long polls on this
        # follower wake (ReplicaFetcherThread's completeDelayedFetchRequests)
        self._on_high_watermark = on_high_watermark or (lambda: None)
        # LogManager.truncation: the guard around a truncation (the log cleaner of this log stopped)
        self._truncation = truncation or _unguarded
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        # A follower opened without one (no checkpointed value) starts at the log start, so that a
        # log without epochs is truncated rather than trusted.
        self.high_watermark = partition.log.log_start_offset if high_watermark is None else \
            min(high_watermark, partition.log.log_end_offset)

    @property
    def high_watermark(self) -> int:
        """Kept on the partition (LeaderPartition.high_watermark), which a makeLeader keeps."""
        return self.partition.high_watermark()

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self.partition.store_high_watermark(offset)

    @property
    def key(self) -> tuple[str, int]:
        return self.partition.topic, self.partition.partition

    @property
    def name(self) -> str:
        return self.partition.name

    @property
    def log(self):
        return self.partition.log

    @property
    def epochs(self):
        return self.partition.epochs

    def latest_epoch(self) -> int:
        """The latest epoch of the local log, -1 when none (UnifiedLog.latestEpoch)."""
        return self.epochs.latest()

    # -- appends --

    def append(self, records, *, now_ms: int | None = None) -> AppendInfo | None:
        """Append the leader's batches as they are (UnifiedLog.appendAsFollower); None when the
        bytes hold no whole batch. Producers idle for ``producer.id.expiration.ms`` are forgotten at
        most every ``producer.id.expiration.check.interval.ms``, as on the leader (Kafka's periodic
        removeExpiredProducers covers every replica)."""
        self.partition._maybe_expire_producers(int(time.time() * 1000) if now_ms is None else now_ms)
        data = memoryview(records)
        batches, end = _whole_batches(data, self.name)
        if not batches:
            return None
        log_ = self.log
        if batches[0].base_offset < log_.log_end_offset:
            raise FollowerAppendError(f"{self.name}: the leader's batch at offset {batches[0].base_offset} is below "
                                      f"the log end offset {log_.log_end_offset} (UnexpectedAppendOffset)")
        for batch in batches:     # the cache first: it never misses an epoch that is in the log
            epoch = getattr(batch, "partition_leader_epoch", -1)
            if epoch >= 0:
                self.epochs.assign(epoch, batch.base_offset)
        active_base = log_.active_segment.base_offset
        try:
            first, last = log_.append(data[:end], crc_verified=True)
        except ValueError as exc:            # offsets not increasing inside the fetched batches
            raise FollowerAppendError(f"{self.name}: {exc}") from None
        if log_.active_segment.base_offset != active_base:
            self.partition.maybe_snapshot(first, background=True)
        producers = self.partition.producers
        producers.replay(batches, lambda completed, lso: write_aborted(log_, completed, lso))
        last_epoch = getattr(batches[-1], "partition_leader_epoch", UNDEFINED_EPOCH)
        return AppendInfo(first, last, last_epoch, end)

    def update_from_leader(self, *, high_watermark: int, log_start_offset: int) -> None:
        """The leader's high watermark (capped at the local log end) and log start offset (followed
        when higher, up to the high watermark, no segment deleted), as ReplicaFetcherThread.processPartitionData."""
        log_ = self.log
        hw = max(min(high_watermark, log_.log_end_offset), log_.log_start_offset)
        moved = hw != self.high_watermark
        self.high_watermark = hw
        if log_.log_start_offset < log_start_offset <= hw:
            # maybeIncrementLogStartOffset only moves the start: the segments below it go at the log
            # manager's next retention pass (renamed .deleted with their producer snapshots), as Kafka's
            self.partition.maybe_increment_log_start_offset(log_start_offset)
        self.partition.producers.on_high_watermark(hw)
        if moved:
            self._on_high_watermark()

    # -- truncation --

    def truncate_to(self, offset: int) -> bool:
        """UnifiedLog.truncateTo: whether anything was removed."""
        log_ = self.log
        if offset >= log_.log_end_offset:
            # Nothing to cut, but an epoch starting at the log end goes, as Kafka's truncateTo
            # truncates the epoch cache from the log end: one this replica took as leader and lost
            # before appending in it. Kept, it stays the latest epoch, the last fetched epoch of
            # every Fetch, which the new leader (never in that epoch) answers with the same
            # diverging epoch each time: the follower would never fetch again.
            self.epochs.truncate_from_end(log_.log_end_offset)
            return False
        if offset < log_.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        self._settle_state_writes()
        with self._truncation(self.partition, below_active=offset < log_.active_segment.base_offset):
            self.epochs.truncate_from_end(offset)
            try:
                log_.truncate_to(offset)
            except OSError as exc:      # UnifiedLog.truncateTo's KafkaStorageException: the directory offline
                raise LogTruncationError(exc, offset, fully=False) from exc
        expiration_ms = self.partition.producers.expiration_ms       # as last configured (it may be dynamic)
        self.partition.producers, self.partition.snapshot_offset = load_producer_state(
            log_, self.name, now_ms=int(time.time() * 1000), expiration_ms=expiration_ms)
        self.high_watermark = min(self.high_watermark, log_.log_end_offset)
        self.partition.producers.on_high_watermark(self.high_watermark)
        log.info("%s: truncated to offset %d (log end %d)", self.name, offset, log_.log_end_offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """UnifiedLog.truncateFullyAndStartAt: an empty log at ``offset``, no epochs, no producers."""
        self._settle_state_writes()
        log_ = self.log
        with self._truncation(self.partition, below_active=True):
            try:
                log_.truncate_fully_and_start_at(offset)
            except OSError as exc:
                raise LogTruncationError(exc, offset, fully=True) from exc
        self.epochs.truncate_from_end(0)
        for snapshot in snapshot_offsets(log_.directory):
            try:
                os.remove(os.path.join(log_.directory, snapshot_file_name(snapshot)))
            except FileNotFoundError:
                pass
        self.partition.producers = ProducerState(self.name, expiration_ms=self.partition.producers.expiration_ms)
        self.partition.snapshot_offset = offset
        self.high_watermark = offset
        log.info("%s: truncated fully, the log starts at offset %d", self.name, offset)

    def _settle_state_writes(self) -> None:
        """A producer snapshot or epoch checkpoint still queued must not land after the truncation."""
        if self.partition.state_writes is not None:
            self.partition.state_writes.wait(self.log.directory)


def _unguarded(partition, *, below_active: bool):
    return contextlib.nullcontext()


def _whole_batches(data: memoryview, name: str) -> tuple[list, int]:
    """The whole batches of ``data`` (CRC checked) and the byte length they fill."""
    try:
        it = iter_batches(data, verify_crc=True)
        batches = list(it)
    except CorruptRecordError as exc:
        raise FollowerAppendError(f"{name}: {exc}") from None
    if not batches:
        return [], 0
    last = batches[-1]
    return batches, last.position + last.size_in_bytes
