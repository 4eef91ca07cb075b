"""One partition this broker leads: its log under ``log.dirs/<topic>-<partition>`` (Kafka's
layout, with ``partition.metadata`` naming the topic id) and what a leader decides about it.

    partition = LeaderPartition.open(log_dir, "orders", 0, topic_id, leader_epoch=3, segment_bytes=...)
    base, append_time = partition.append(validate_produce(...), now_ms=...)
    data = partition.read(fetch_offset, max_bytes, min_one_batch=True)

The high watermark: with followers (kafkawire.broker.replica_state, ``replicas``, set by
kafkawire.broker.replication when this broker leads the partition) it is the least log end
offset of the in-sync replicas (Kafka's Partition.maybeIncrementLeaderHW), kept here, never moving
backwards, starting from the ``replication-offset-checkpoint`` value when the log opens (Kafka's
makeLeader keeps the high watermark it had). A partition without followers (one replica, or
opened alone, without a checkpointed value nor ``replicas``, where it is the log end) moves it to
the log end at each append, as Kafka finds with an ISR of one. Consumers and the last stable
offset read below it; followers read to the log end (``read(..., upper=...)``). Appends reach the page cache, not the disk (Kafka's defaults,
flush.messages and flush.ms unset, do the same: durability comes from replicas); a clean stop
flushes.

Opening recovers the log as kafkawire.storage.Log does (a torn or corrupt tail is cut) and loads
its leader epochs (kafkawire.storage.leader_epoch_cache, ``leader-epoch-checkpoint``); each new
leader epoch is recorded there starting at the log end, as Kafka's Partition.makeLeader records
it, before anything is appended in it. A
directory whose partition.metadata names another topic id is never opened as this topic's: it is
renamed ``<topic>-<partition>.<uuid>-stray`` and kept, and a fresh log starts (the start's stray
scan, kafkawire.broker.stray_logs, sets such directories aside first, as Kafka's LogManager does).

Idempotent producers: each partition keeps its producers' state (kafkawire.broker.producer_state),
rebuilt on open from the latest producer snapshot and the batches after it
(kafkawire.broker.producer_snapshots), written as ``<offset>.snapshot`` when a segment rolls and
at close, as Kafka's UnifiedLog does. A batch with a producer id is checked against it before
the append; a duplicate of one of the producer's last five batches is answered with the
original offsets and not appended again.

Transactions: a transactional batch opens its producer's transaction (the producer state
decides, kafkawire.broker.producer_state); ``append_marker`` writes the COMMIT/ABORT marker the
transaction coordinator asks for (WriteTxnMarkers, kafkawire.broker.txn_markers) and, for an
abort, the ``.txnindex`` entry (kafkawire.broker.txn_log). The last stable offset is the first
offset of the oldest transaction not yet decided and replicated, capped by the high watermark
(UnifiedLog.lastStableOffset); ``read_committed`` reads below it and returns the aborted
transactions the fetched range overlaps.
"""
from __future__ import annotations

import functools
import logging
import os
import time
import uuid

from kafkawire.storage.leader_epoch_cache import LeaderEpochFileCache
from kafkawire.storage.log import Log, OffsetOutOfRangeError
from kafkawire.storage.state_files import (StateFileError, atomic_write, read_partition_metadata,
                                           write_partition_metadata)

from .producer_snapshots import load_producer_state, snapshot_file, take_snapshot
from .producer_state import DEFAULT_PRODUCER_ID_EXPIRATION_MS, VERIFICATION_OFF, BatchInfo, ProducerState
from .state_writes import StateWrites
from .stray_logs import STRAY_SUFFIX, retired_dir_name
from .txn_log import collect_aborted, end_txn_marker_batch, fetch_upper_bound, segment_holding, write_aborted
from .validation import ValidatedAppend

__all__ = ["LeaderPartition", "partition_dir_name"]

log = logging.getLogger(__name__)
PARTITION_METADATA = "partition.metadata"


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class LeaderPartition:
    """A partition led here: the log, the leader epoch from the metadata, the epochs in the log."""

    def __init__(self, log_: Log, topic: str, partition: int, topic_id: uuid.UUID, leader_epoch: int, *,
                 producers: ProducerState | None = None, snapshot_offset: int = 0,
                 expiration_check_interval_ms: int = 600_000, state_writes: StateWrites | None = None):
        self.log = log_
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.state_writes = state_writes       # None: the state files are written at once, here
        self.epochs = LeaderEpochFileCache.load(log_)
        if state_writes is not None:           # a new epoch's checkpoint off the loop, before appends in it
            self.epochs.writer = functools.partial(state_writes.submit, log_.directory, blocks_appends=True)
        self._leader_epoch = -1
        self.leader_epoch = leader_epoch
        self.producers = producers if producers is not None else ProducerState(self.name)
        self.snapshot_offset = snapshot_offset           # the offset of the latest producer snapshot
        self.expiration_check_interval_ms = expiration_check_interval_ms
        self._next_expiration_check_ms = 0
        self.replicas = None               # LeaderReplicas once replication leads it (kafkawire.broker.replication)
        self._high_watermark: int | None = None    # None: a partition alone, whose high watermark is its log end
        self.last_append_end_offset = log_.log_end_offset    # the end of the last batch appended (acks=all waits for it)

    @property
    def leader_epoch(self) -> int:
        return self._leader_epoch

    @leader_epoch.setter
    def leader_epoch(self, epoch: int) -> None:
        """A new leader epoch starts at the log end (Kafka's makeLeader, on a new epoch only)."""
        if epoch > self._leader_epoch:
            try:
                self.epochs.assign(epoch, self.log.log_end_offset)
            except OSError as exc:      # the entry is kept in memory; the metadata update goes on
                log.error("%s: cannot write the leader epoch checkpoint: %s", self.log.directory, exc)
        self._leader_epoch = epoch

    @classmethod
    def open(cls, log_dir: str, topic: str, partition: int, topic_id: uuid.UUID, *, leader_epoch: int,
             now_ms: int | None = None, producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
             expiration_check_interval_ms: int = 600_000, state_writes: StateWrites | None = None,
             high_watermark: int | None = None, **log_options) -> LeaderPartition:
        """``log_options``: keywords of kafkawire.storage.log.Log (``segment_bytes``, ``segment_ms``, ...);
        ``high_watermark``: the checkpointed one (None: a partition alone, whose high watermark is its log end)."""
        directory = os.path.join(log_dir, partition_dir_name(topic, partition))
        _set_aside_if_another_topic(directory, topic_id)
        log_ = Log(directory, **log_options)
        for report in log_.recovery_reports:
            if report.truncated:
                log.warning("%s: recovery cut the log: %s", directory, report)
        path = os.path.join(directory, PARTITION_METADATA)
        if not os.path.exists(path):
            write_partition_metadata(path, topic_id)
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        name = partition_dir_name(topic, partition)
        producers, loaded_from = load_producer_state(log_, name, now_ms=now_ms, expiration_ms=producer_id_expiration_ms)
        self = cls(log_, topic, partition, topic_id, leader_epoch, producers=producers, snapshot_offset=loaded_from,
                   expiration_check_interval_ms=expiration_check_interval_ms, state_writes=state_writes)
        self._high_watermark = high_watermark
        producers.on_high_watermark(self.high_watermark())
        self.maybe_snapshot()               # as Kafka's loadProducerState ends, when it replayed batches
        return self

    @property
    def name(self) -> str:
        return partition_dir_name(self.topic, self.partition)

    # -- what consumers see --

    def high_watermark(self) -> int:
        """Within [log start, log end], as UnifiedLog.updateHighWatermark keeps it."""
        if self._high_watermark is None:
            return self.log.log_end_offset
        return min(max(self._high_watermark, self.log.log_start_offset), self.log.log_end_offset)

    def store_high_watermark(self, offset: int) -> None:
        """A follower's high watermark (kafkawire.broker.follower), kept here so that the partition
        has it when it is made leader (Partition.makeLeader leaves UnifiedLog's as it was)."""
        self._high_watermark = offset

    def maybe_increment_high_watermark(self, now_ms: int) -> bool:
        """Partition.maybeIncrementLeaderHW: the log end without followers, else what the replicas
        allow; whether the high watermark moved (it never moves back)."""
        end = self.log.log_end_offset
        if self._high_watermark is None and self.replicas is None:
            self.producers.on_high_watermark(end)
            return True
        candidate = end if self.replicas is None else self.replicas.high_watermark_candidate(end, now_ms)
        if candidate is None or candidate <= self.high_watermark():
            return False
        self._high_watermark = candidate
        self.producers.on_high_watermark(candidate)
        return True

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """UnifiedLog.maybeIncrementLogStartOffset, for DeleteRecords, retention and a follower
        following its leader's log start: the log start moves up to ``offset`` (never down, never
        above the high watermark: OffsetOutOfRangeError), the leader epoch entries below it go,
        and the producer state learns it (ProducerState.on_log_start_offset_incremented); whether
        it moved. No segment and no producer snapshot is deleted here: the next retention pass
        deletes the segments wholly below it and the snapshots at their base offsets."""
        hw = self.high_watermark()
        if offset > hw:
            raise OffsetOutOfRangeError(f"Cannot increment the log start offset to {offset} of partition "
                                        f"{self.name} since it is larger than the high watermark {hw}")
        if offset <= self.log.log_start_offset:
            return False
        self.log.log_start_offset = offset
        self.epochs.truncate_from_start(offset)
        self.producers.on_log_start_offset_incremented(offset)
        return True

    def last_stable_offset(self) -> int:
        """UnifiedLog.lastStableOffset: the first unstable offset (never below the log start)
        when it is below the high watermark, else the high watermark."""
        hw = self.high_watermark()
        first_unstable = self.producers.first_unstable_offset()
        if first_unstable is not None:
            first_unstable = max(first_unstable, self.log.log_start_offset)
            if first_unstable < hw:
                return first_unstable
        return hw

    def append(self, validated: ValidatedAppend, *, now_ms: int, guard=VERIFICATION_OFF) -> tuple[int, int]:
        """Append the batch at the log end, stamped with the leader epoch, after the producer
        checks (ProduceRefused); its base offset and log append time. A duplicate of a recent
        batch of its producer is not appended: the answer is that batch's base offset and its
        timestamp, as Kafka answers a duplicate. ``guard``: the transaction verification's
        (ProducerState.start_verification), VERIFICATION_OFF without verification."""
        self._maybe_expire_producers(now_ms)
        info = None
        if validated.batch is not None:
            info = BatchInfo.of(validated.batch)
            if validated.log_append_time >= 0:
                info = info._replace(max_timestamp=validated.log_append_time)
            duplicate = self.producers.check(info, first_offset=self.log.log_end_offset, guard=guard)
            if duplicate is not None:
                self.last_append_end_offset = duplicate.last_offset + 1
                return duplicate.first_offset, duplicate.timestamp
        first = self._append_to_log(validated.data)
        if info is not None:
            self.producers.apply(info, first_offset=first)
        self.last_append_end_offset = self.log.log_end_offset
        self.maybe_increment_high_watermark(now_ms)
        return first, validated.log_append_time

    def append_as_coordinator(self, data: bytes, *, now_ms: int, producer: BatchInfo | None = None) -> int:
        """A coordinator's own batch (UnifiedLog.appendAsLeader with origin COORDINATOR: built here,
        not validated, no duplicate check); its base offset. ``producer``: the batch's producer
        state to record (a TxnOffsetCommit's ongoing transaction). The high watermark moves at
        once when no follower must fetch first, as after a produce."""
        first = self._append_to_log(data)
        if producer is not None:
            self.producers.apply(producer, first_offset=first)
        self.last_append_end_offset = self.log.log_end_offset
        self.maybe_increment_high_watermark(now_ms)
        return first

    def _append_to_log(self, data: bytes) -> int:
        """The batch at the log end in the current leader epoch; its offset."""
        active_base = self.log.active_segment.base_offset
        first, _ = self.log.append(data, assign_offsets=True, leader_epoch=self.leader_epoch,
                                   crc_verified=True)       # validate_produce checked it, or we built it
        if self.log.active_segment.base_offset != active_base:
            self.maybe_snapshot(first, background=True)   # UnifiedLog.roll: the state at the new segment's base
        if self.leader_epoch >= 0:      # as Kafka's append does; the epoch normally started at makeLeader
            self.epochs.assign(self.leader_epoch, first)
        return first

    def append_marker(self, *, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool,
                      now_ms: int, transaction_version: int = 0, log_append_time: bool = False) -> int:
        """Write a COMMIT/ABORT marker for the producer (UnifiedLog.appendAsLeader with origin
        COORDINATOR) after ProducerState.check_marker (ProduceRefused); its offset. An abort
        of a transaction with data goes into the ``.txnindex``; the first unstable offset moves."""
        offset = self.log.log_end_offset
        self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch, offset,
                                    transaction_version=transaction_version)
        batch = end_txn_marker_batch(commit=commit, producer_id=producer_id, producer_epoch=producer_epoch,
                                     coordinator_epoch=coordinator_epoch, timestamp=now_ms,
                                     log_append_time=log_append_time)
        offset = self._append_to_log(batch)
        completed = self.producers.apply_marker(producer_id, producer_epoch, coordinator_epoch, offset, now_ms,
                                                aborted=not commit)
        if completed is not None:          # the index first: if it fails, the LSO stays (UnifiedLog.append)
            write_aborted(self.log, completed, self.producers.last_stable_offset_after(completed))
            self.producers.complete(completed)
        self.last_append_end_offset = self.log.log_end_offset
        self.maybe_increment_high_watermark(now_ms)
        return offset

    def maybe_snapshot(self, offset: int | None = None, *, background: bool = False) -> None:
        """Write the producer snapshot at ``offset`` (the log end) unless one is there already;
        ``background``: encoded now, written on the state-file thread (when there is one)."""
        offset = self.log.log_end_offset if offset is None else offset
        if offset > self.snapshot_offset:
            if background and self.state_writes is not None:
                path, data = snapshot_file(self.log.directory, self.producers, offset)
                self.state_writes.submit(self.log.directory, functools.partial(atomic_write, path, data))
            else:
                take_snapshot(self.log.directory, self.producers, offset)
            self.snapshot_offset = offset

    def _maybe_expire_producers(self, now_ms: int) -> None:
        """Kafka's periodic producer expiration, checked at most every
        ``producer.id.expiration.check.interval.ms``, when a batch comes."""
        if now_ms >= self._next_expiration_check_ms:
            self.producers.remove_expired(now_ms)
            self._next_expiration_check_ms = now_ms + self.expiration_check_interval_ms

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch (Kafka's UnifiedLog.endOffsetForEpoch)."""
        self.epochs.truncate_from_start(self.log.log_start_offset)    # if retention moved the log start
        return self.epochs.end_offset_for(epoch, self.log.log_end_offset)

    def diverging_epoch(self, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
        """Partition.readRecords' check of a fetch's last fetched epoch (Fetch v12+; -1: none), for
        followers and consumers alike, on the leader or a follower serving consumers: the (epoch,
        end offset) where the fetcher's log left this one, or None to read on. Raises
        OffsetOutOfRangeError when this log cannot place the epoch or the offset is below its start."""
        if last_fetched_epoch < 0:
            return None
        epoch, end_offset = self.end_offset_for_epoch(last_fetched_epoch)
        if epoch < 0 or end_offset < 0:
            raise OffsetOutOfRangeError(f"{self.name}: could not determine the end offset of the last fetched "
                                        f"epoch {last_fetched_epoch} from the request")
        if fetch_offset < self.log.log_start_offset:    # whether the epochs diverge or not
            raise OffsetOutOfRangeError(f"{self.name}: offset {fetch_offset} is below the log start "
                                        f"{self.log.log_start_offset}")
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            return epoch, end_offset
        return None

    def read(self, offset: int, max_bytes: int, *, min_one_batch: bool, upper: int | None = None,
             in_file: bool = False) -> bytes:
        """Whole stored batches from the one holding ``offset`` (the bytes as on disk, not
        re-encoded), up to ``max_bytes`` but one batch at least when ``min_one_batch``, below the
        high watermark (``upper``: below it instead, a follower's fetch reads to the log end).
        ``in_file``: a large read may stay in the segment file, to be sent from it (a FileRange:
        kafkawire.storage.batch_scan.Extent.records). Raises
        kafkawire.storage.log.OffsetOutOfRangeError outside the log."""
        extent = self.log.read_extent(offset, max_bytes, min_one_batch=min_one_batch,
                                      upper=self.high_watermark() if upper is None else upper)
        return extent.records(in_file)

    def read_committed(self, offset: int, max_bytes: int, *, min_one_batch: bool,
                       in_file: bool = False) -> tuple[bytes, list]:
        """``read`` for isolation level READ_COMMITTED: whole batches below the last stable
        offset, and the aborted transactions (kafkawire.storage.txn_index.AbortedTxn) that
        overlap the range read (LocalLog.read with maxOffset = LSO, then addAbortedTransactions)."""
        lso = self.last_stable_offset()
        if offset >= lso:
            return b"", []
        extent = self.log.read_extent(offset, max_bytes, min_one_batch=min_one_batch, upper=lso)
        data = extent.records(in_file)
        if extent.first_offset is None:
            return data, []
        segment = segment_holding(self.log, extent.first_offset)
        upper = fetch_upper_bound(self.log, segment, extent.position, extent.size)
        return data, collect_aborted(self.log, offset, upper)

    def close(self) -> None:
        if self.state_writes is not None:
            self.state_writes.wait(self.log.directory)
        self.log.flush()
        try:
            self.maybe_snapshot()
        finally:
            self.log.close()


def _set_aside_if_another_topic(directory: str, topic_id: uuid.UUID) -> None:
    """A directory of another topic id (or an unreadable partition.metadata) is never opened as this
    topic's: it is renamed ``-stray`` and kept. The start's stray scan (kafkawire.broker.stray_logs)
    leaves none; Kafka refuses such a log (InconsistentTopicIdException)."""
    path = os.path.join(directory, PARTITION_METADATA)
    if not os.path.exists(path):
        return
    try:
        found = read_partition_metadata(path)
    except (StateFileError, OSError) as exc:
        log.warning("%s: %s; the directory is set aside", path, exc)
        found = None
    if found == topic_id:
        return
    topic, _, index = os.path.basename(directory).rpartition("-")
    aside = os.path.join(os.path.dirname(directory), retired_dir_name(topic, int(index), STRAY_SUFFIX))
    log.warning("%s holds topic id %s, not %s: renamed to %s and kept (a stray log)", directory, found,
                topic_id, aside)
    os.rename(directory, aside)
