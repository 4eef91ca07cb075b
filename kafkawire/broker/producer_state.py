"""The producer state of one partition, as a Kafka leader keeps it for idempotent producers:
Kafka's ProducerStateManager, ProducerStateEntry and ProducerAppendInfo, and the producer part
of UnifiedLog.analyzeAndValidateProducerState. Sans-I/O: batches' headers in, decisions out.

    state = ProducerState("orders-0")
    duplicate = state.check(batch_info, first_offset=log_end)   # ProduceRefused, or None/BatchMetadata
    if duplicate is None:
        ... append at first_offset ...
        state.apply(batch_info, first_offset=log_end)
    else:
        answer with duplicate.first_offset and duplicate.timestamp (no append)

What a client's batch with a producer id is checked for, in Kafka's order:

* a duplicate: same epoch as the producer's and the same first and last sequence as one of its
  last 5 batches (ProducerStateEntry.NUM_BATCHES_TO_RETAIN) is answered with that batch's
  offsets and timestamp, and nothing is appended;
* a transactional batch of a producer without an ongoing transaction in its epoch
  (UnifiedLog.analyzeAndValidateProducerState): an epoch older than the producer's is
  INVALID_PRODUCER_EPOCH; with verification on (a ``guard`` other than VERIFICATION_OFF, KIP-890)
  one without the guard its verification started is INVALID_TXN_STATE ("Record was not part of
  an ongoing transaction");
* an epoch older than the producer's: INVALID_PRODUCER_EPOCH;
* a new epoch must start at sequence 0, unless the producer is unknown (no epoch yet):
  OUT_OF_ORDER_SEQUENCE_NUMBER;
* in the same epoch the first sequence must follow the last one (wrapping after 2^31-1 to 0),
  unless the producer is unknown: OUT_OF_ORDER_SEQUENCE_NUMBER. An unknown producer's first batch
  may start at any sequence, as in Kafka since KIP-360 (its records may have been deleted by
  retention); Kafka 4.3.1's leader no longer answers UNKNOWN_PRODUCER_ID, and neither does this;
* a non-transactional batch of a producer whose transaction is open: INVALID_TXN_STATE.

Transactions (ProducerAppendInfo.appendDataBatch / appendEndTxnMarker, ProducerStateManager):
a producer's first transactional batch opens its transaction at that batch's offset
(``current_txn_first_offset``, kept in the snapshots); a COMMIT/ABORT marker closes it
(``check_marker``, ``apply_marker``, which returns the CompletedTxn, None for a marker
without data, then ``complete`` once its ``.txnindex`` entry is written). A marker with an older producer epoch is INVALID_PRODUCER_EPOCH (with
transaction version 2 also the same epoch, unless that transaction has ended: a retried
marker), one with an older coordinator epoch TRANSACTION_COORDINATOR_FENCED. A completed
transaction stays unstable until the high watermark passes its marker
(``on_high_watermark``); ``first_unstable_offset`` is the first offset of the oldest open or
unreplicated transaction, and an aborted one's entry in the ``.txnindex`` carries
``last_stable_offset_after`` (the next other producer's open transaction, else the marker's
offset + 1).

Batches read back from the log (``apply(..., replay=True)``, Kafka's AppendOrigin.REPLICATION)
are not checked, only recorded. A producer whose last batch's timestamp is older than
``producer.id.expiration.ms`` is forgotten (ProducerStateManager.removeExpiredProducers).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from kafkawire.protocol.error_codes import Errors
from kafkawire.records.control import ControlRecordType, decode_end_txn_marker, parse_control_key

from .validation import ProduceRefused

__all__ = ["BatchInfo", "BatchMetadata", "CompletedTxn", "ProducerEntry", "ProducerState", "NUM_BATCHES_TO_RETAIN",
           "DEFAULT_PRODUCER_ID_EXPIRATION_MS", "VERIFICATION_OFF"]

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 0x7FFFFFFF
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000          # producer.id.expiration.ms
INT16_MAX = 0x7FFF
# ``guard`` of a batch when transaction verification is off (no verifier: Kafka with
# transaction.partition.verification.enable=false): a transactional batch may open a transaction.
VERIFICATION_OFF = object()


class CompletedTxn(NamedTuple):
    """A transaction a marker ended (Kafka's CompletedTxn): its first offset and the marker's."""
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass
class _Verification:
    """Kafka's VerificationStateEntry: the guard a verified batch must bring, the lowest
    sequence seen while verifying, the epoch."""
    guard: object
    timestamp: int
    lowest_sequence: int
    epoch: int
    supports_epoch_bump: bool


class BatchInfo(NamedTuple):
    """What the producer state reads of a batch header."""
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_offset_delta: int
    max_timestamp: int
    is_transactional: bool = False

    @property
    def last_sequence(self) -> int:
        """DefaultRecordBatch.incrementSequence: wraps after Integer.MAX_VALUE to 0."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        seq = self.base_sequence + self.last_offset_delta
        return seq - INT32_MAX - 1 if seq > INT32_MAX else seq

    @classmethod
    def of(cls, batch) -> BatchInfo:
        """From a kafkawire.records.RecordBatch (its header fields)."""
        return cls(batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_offset_delta,
                   batch.max_timestamp, batch.is_transactional)


class BatchMetadata(NamedTuple):
    """One appended batch of a producer: Kafka's BatchMetadata (a tuple: one is made per append)."""
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        """DefaultRecordBatch.decrementSequence: wraps below 0 to Integer.MAX_VALUE."""
        seq = self.last_seq - self.offset_delta
        return seq + INT32_MAX + 1 if seq < 0 else seq

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass
class ProducerEntry:
    """A producer's state in one partition: its epoch and its last batches (Kafka's ProducerStateEntry)."""
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int = -1                   # -1: no transaction open
    batches: deque = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int, timestamp: int) -> None:
        if epoch != self.producer_epoch:             # a new epoch forgets the old one's batches
            self.batches.clear()
            self.producer_epoch = epoch
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def find_duplicate(self, info: BatchInfo) -> BatchMetadata | None:
        if info.producer_epoch != self.producer_epoch:
            return None
        first, last = info.base_sequence, info.last_sequence
        for metadata in self.batches:
            if metadata.last_seq == last and metadata.first_seq == first:
                return metadata
        return None


class ProducerState:
    """The producers of one partition (``topic_partition`` names it in error messages)."""

    def __init__(self, topic_partition: str, *, expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS):
        self.topic_partition = topic_partition
        self.expiration_ms = expiration_ms
        self.producers: dict[int, ProducerEntry] = {}
        # Open transactions by first offset, in offset order (appends come in offset order; a
        # snapshot's are sorted when loaded): {first offset: producer id}. Then the completed
        # ones whose marker is not below the high watermark yet: {first offset: marker offset}.
        self.ongoing: dict[int, int] = {}
        self.unreplicated: dict[int, int] = {}
        self.verifications: dict[int, _Verification] = {}

    # -- client batches --

    def check(self, info: BatchInfo, *, first_offset: int, guard=VERIFICATION_OFF) -> BatchMetadata | None:
        """A client's batch about to be appended at ``first_offset``: the duplicate it repeats
        (answer with its offsets, do not append), None (append it, then ``apply``), or
        ProduceRefused with Kafka's error and message. ``guard``: what ``start_verification``
        gave this batch's partition (None: its transaction was open), or VERIFICATION_OFF."""
        if not has_producer_id(info):
            return None
        entry = self.producers.get(info.producer_id)
        if entry is not None:
            duplicate = entry.find_duplicate(info)
            if duplicate is not None:
                return duplicate
        if info.is_transactional and not self.has_ongoing_transaction(info.producer_id, info.producer_epoch):
            self._check_unverified(info, entry, guard)
        current = entry if entry is not None else ProducerEntry(info.producer_id)
        self._check_epoch(info, current, first_offset)
        self._check_sequence(info, current, first_offset)
        if current.current_txn_first_offset >= 0 and not info.is_transactional:
            raise ProduceRefused(Errors.INVALID_TXN_STATE,
                                 f"Expected transactional write from producer {info.producer_id} at offset "
                                 f"(offset={first_offset}, segment=[-1:-1]) in partition {self.topic_partition}")
        return None

    def has_ongoing_transaction(self, producer_id: int, epoch: int) -> bool:
        """UnifiedLog.hasOngoingTransaction: an open transaction in that very epoch."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0 and entry.producer_epoch == epoch

    def _check_unverified(self, info: BatchInfo, entry: ProducerEntry | None, guard) -> None:
        """analyzeAndValidateProducerState for a transactional batch opening a transaction."""
        if entry is not None and info.producer_epoch < entry.producer_epoch:
            raise ProduceRefused(Errors.INVALID_PRODUCER_EPOCH,
                                 f"Epoch of producer {info.producer_id} is {info.producer_epoch}, which is smaller "
                                 f"than the last seen epoch {entry.producer_epoch}")
        if guard is VERIFICATION_OFF:
            return
        verification = self.verifications.get(info.producer_id)
        if guard is None or verification is None or verification.guard is not guard:
            raise ProduceRefused(Errors.INVALID_TXN_STATE, "Record was not part of an ongoing transaction")

    def start_verification(self, producer_id: int, epoch: int, sequence: int, *, now_ms: int,
                           supports_epoch_bump: bool = False):
        """UnifiedLog.maybeStartTransactionVerification, before the coordinator is asked: None
        when the producer's transaction is open in this epoch (nothing to verify), else the guard
        (one per producer until its next transactional append) the batch then brings to ``check``.
        An epoch older than the producer's is INVALID_PRODUCER_EPOCH."""
        entry = self.producers.get(producer_id)
        if entry is not None and epoch < entry.producer_epoch:
            raise ProduceRefused(Errors.INVALID_PRODUCER_EPOCH,
                                 f"Epoch of producer {producer_id} is {epoch}, which is smaller than the last seen "
                                 f"epoch {entry.producer_epoch}")
        if self.has_ongoing_transaction(producer_id, epoch):
            return None
        verification = self.verifications.get(producer_id)
        if verification is None:
            verification = self.verifications[producer_id] = _Verification(object(), now_ms, sequence, epoch,
                                                                            supports_epoch_bump)
        elif epoch == verification.epoch and sequence < verification.lowest_sequence:
            verification.lowest_sequence = sequence   # VerificationStateEntry.maybeUpdateLowestSequenceAndEpoch
        elif epoch > verification.epoch:
            verification.epoch, verification.lowest_sequence = epoch, sequence
        return verification.guard

    def _check_epoch(self, info: BatchInfo, entry: ProducerEntry, offset: int) -> None:
        """ProducerAppendInfo.checkProducerEpoch for a data batch."""
        if info.producer_epoch < entry.producer_epoch:
            raise ProduceRefused(Errors.INVALID_PRODUCER_EPOCH,
                                 f"Epoch of producer {info.producer_id} at offset {offset} in {self.topic_partition} "
                                 f"is {info.producer_epoch}, which is < the last seen epoch {entry.producer_epoch} "
                                 "(TV-1)")

    def _check_sequence(self, info: BatchInfo, entry: ProducerEntry, offset: int) -> None:
        """ProducerAppendInfo.checkSequence for a client's batch."""
        first = info.base_sequence
        self._check_verified_sequence(info, entry, offset)
        if info.producer_epoch != entry.producer_epoch:
            if first != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise ProduceRefused(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                     f"Invalid sequence number for new epoch of producer {info.producer_id}at offset "
                                     f"{offset} in partition {self.topic_partition}: {info.producer_epoch} (request "
                                     f"epoch), {first} (seq. number), {entry.producer_epoch} (current producer epoch)")
            return
        last = entry.last_seq
        if entry.producer_epoch != NO_PRODUCER_EPOCH and not _in_sequence(last, first):
            raise ProduceRefused(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"Out of order sequence number for producer {info.producer_id} at offset {offset} "
                                 f"in partition {self.topic_partition}: {first} (incoming seq. number), {last} "
                                 "(current end sequence number)")

    def _check_verified_sequence(self, info: BatchInfo, entry: ProducerEntry, offset: int) -> None:
        """The sequence rules of a producer whose verification is under way (checkSequence's first two)."""
        verification = self.verifications.get(info.producer_id)
        if verification is None:
            return
        first = info.base_sequence
        if verification.supports_epoch_bump and first != 0 and not entry.batches:
            raise ProduceRefused(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"Invalid sequence number for producer {info.producer_id} at offset {offset} in "
                                 f"partition {self.topic_partition}: {first} (incoming seq. number). Expected sequence "
                                 "0 for transactions v2 idempotent producer with no existing state.")
        if first > verification.lowest_sequence:
            raise ProduceRefused(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"Out of order sequence number for producer {info.producer_id} at offset {offset} "
                                 f"in partition {self.topic_partition}: {first} (incoming seq. number), "
                                 f"{verification.lowest_sequence} (earliest seen sequence)")

    def apply(self, info: BatchInfo, *, first_offset: int) -> None:
        """Record a batch appended at ``first_offset`` (checked by ``check``, or read back from the
        log: ProducerAppendInfo.appendDataBatch and ProducerStateManager.update); a transactional
        batch of a producer without an open transaction opens one at ``first_offset``."""
        if not has_producer_id(info):
            return
        entry = self.producers.get(info.producer_id)
        if entry is None:
            entry = self.producers[info.producer_id] = ProducerEntry(info.producer_id)
        entry.add_batch(info.producer_epoch, info.last_sequence, first_offset + info.last_offset_delta,
                        info.last_offset_delta, info.max_timestamp)
        if info.is_transactional:
            if entry.current_txn_first_offset < 0:
                entry.current_txn_first_offset = first_offset
                self.ongoing[first_offset] = info.producer_id
            self.verifications.pop(info.producer_id, None)    # the transaction is known to be open now

    # -- transaction markers --

    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, offset: int, *,
                     transaction_version: int = 0) -> None:
        """ProducerAppendInfo.appendEndTxnMarker's checks for a marker the coordinator asks to be
        written at ``offset`` (ProduceRefused: INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED)."""
        entry = self.producers.get(producer_id) or ProducerEntry(producer_id)
        current = entry.producer_epoch
        stale = epoch <= current if transaction_version >= 2 else epoch < current
        retried = transaction_version >= 2 and epoch == current and (
            entry.current_txn_first_offset < 0 or epoch == INT16_MAX)
        if stale and not retried:
            comparison = "<=" if transaction_version >= 2 else "<"
            raise ProduceRefused(Errors.INVALID_PRODUCER_EPOCH,
                                 f"Epoch of producer {producer_id} at offset {offset} in {self.topic_partition} is "
                                 f"{epoch}, which is {comparison} the last seen epoch {current} "
                                 f"(TV{transaction_version})")
        if entry.coordinator_epoch > coordinator_epoch:
            raise ProduceRefused(Errors.TRANSACTION_COORDINATOR_FENCED,
                                 f"Invalid coordinator epoch for producerId {producer_id} at offset {offset} in "
                                 f"partition {self.topic_partition}: {coordinator_epoch} (zombie), "
                                 f"{entry.coordinator_epoch} (current)")

    def apply_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, offset: int, timestamp: int,
                     aborted: bool) -> CompletedTxn | None:
        """Record a marker written at ``offset`` (ProducerAppendInfo.appendEndTxnMarker and
        ProducerStateManager.update): the producer's transaction is over; the CompletedTxn, None
        when no transaction was open (a marker without data changes neither the LSO nor the
        index). The transaction still counts as open for the LSO until ``complete``: the caller
        writes its ``.txnindex`` entry first, so a failed write leaves the LSO where it was."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerEntry(producer_id)
        completed = None
        if entry.current_txn_first_offset >= 0:
            completed = CompletedTxn(producer_id, entry.current_txn_first_offset, offset, aborted)
        if epoch != entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = epoch
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        entry.current_txn_first_offset = -1
        verification = self.verifications.get(producer_id)
        if verification is None or not (verification.supports_epoch_bump and epoch == verification.epoch):
            self.verifications.pop(producer_id, None)   # UnifiedLog.updateProducers keeps a TV2 next transaction's
        return completed

    def complete(self, completed: CompletedTxn) -> None:
        """ProducerStateManager.completeTxn: the transaction is decided; it stays unstable until
        ``on_high_watermark`` passes its marker."""
        self.ongoing.pop(completed.first_offset, None)
        self.unreplicated[completed.first_offset] = completed.last_offset

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """ProducerStateManager.lastStableOffset: the first offset of the oldest open transaction
        of another producer, else the marker's offset + 1 (the ``.txnindex`` entry's LSO); the
        completed transaction's own producer is skipped, so it may be asked before ``complete``."""
        for first_offset, producer_id in self.ongoing.items():
            if producer_id != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def on_high_watermark(self, high_watermark: int) -> None:
        """ProducerStateManager.onHighWatermarkUpdated: the transactions whose marker is below
        the high watermark are stable."""
        done = [first for first, last in self.unreplicated.items() if last < high_watermark]
        for first in done:
            del self.unreplicated[first]

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """ProducerStateManager.onLogStartOffsetIncremented: the completed transactions whose
        marker is below the new log start are stable. Nothing else changes, as in Kafka 4.3.1:
        the producers stay (their last batches may be below the log start; they are still
        answered as duplicates and listed by DescribeProducers until producer expiration, and
        kept in the snapshots taken above the log start), and an open transaction stays open,
        its first offset below the log start counting as the log start for the LSO (the
        partition's ``last_stable_offset``). Before KIP-360 Kafka dropped such producers here
        (truncateHead); 4.3.1 no longer does."""
        done = [first for first, last in self.unreplicated.items() if last < log_start_offset]
        for first in done:
            del self.unreplicated[first]

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open or not yet replicated transaction, None without."""
        firsts = [next(iter(d)) for d in (self.ongoing, self.unreplicated) if d]
        return min(firsts) if firsts else None

    # -- the log read back --

    def replay(self, batches: Iterable, on_completed=None) -> None:
        """Batches read back from the log (RecordBatch objects with their stored offsets):
        recorded without checks (Kafka's AppendOrigin.REPLICATION), markers included;
        ``on_completed(CompletedTxn, last stable offset)`` for each transaction a marker ends
        (the ``.txnindex`` is rebuilt from them)."""
        for batch in batches:
            if getattr(batch, "magic", 2) != 2 or batch.producer_id < 0:
                continue
            if not batch.is_control:
                self.apply(BatchInfo.of(batch), first_offset=batch.base_offset)
                continue
            marker = _end_txn_marker(batch)
            if marker is None:
                continue
            aborted, coordinator_epoch, timestamp = marker
            completed = self.apply_marker(batch.producer_id, batch.producer_epoch, coordinator_epoch,
                                          batch.base_offset, timestamp, aborted)
            if completed is not None:
                if on_completed is not None:
                    on_completed(completed, self.last_stable_offset_after(completed))
                self.complete(completed)

    def remove_expired(self, now_ms: int) -> int:
        """Forget the producers whose last timestamp is ``expiration_ms`` old, and the
        verifications started that long ago; how many producers."""
        expired = [pid for pid, entry in self.producers.items() if self._expired(entry, now_ms)]
        for pid in expired:
            del self.producers[pid]
        stale = [pid for pid, v in self.verifications.items() if now_ms - v.timestamp >= self.expiration_ms]
        for pid in stale:
            del self.verifications[pid]
        return len(expired)

    def _expired(self, entry: ProducerEntry, now_ms: int) -> bool:
        return entry.current_txn_first_offset < 0 and now_ms - entry.last_timestamp >= self.expiration_ms

    # -- snapshots (kafkawire.storage.producer_snapshot: one entry per producer, its last batch) --

    def load_snapshot(self, entries: Iterable, now_ms: int) -> None:
        """Replace the state by a snapshot's entries (ProducerStateManager.readSnapshot), the
        expired ones dropped; the open transactions come back from their first offsets."""
        self.producers.clear()
        self.ongoing.clear()
        self.unreplicated.clear()
        self.verifications.clear()
        for e in entries:
            entry = ProducerEntry(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp,
                                  e.current_txn_first_offset)
            if e.last_offset >= 0:
                entry.add_batch(e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp)
            if not self._expired(entry, now_ms):
                self.producers[e.producer_id] = entry
                if entry.current_txn_first_offset >= 0:
                    self.ongoing[entry.current_txn_first_offset] = e.producer_id
        self.ongoing = dict(sorted(self.ongoing.items()))


def _end_txn_marker(batch):
    """(aborted, coordinator epoch, timestamp) of a COMMIT/ABORT control batch, None for an
    empty one (cleaned) or another control type; a corrupt one is skipped as no marker."""
    for record in batch:
        try:
            key = parse_control_key(record.key)
            if key.type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                return None
            value = decode_end_txn_marker(record.value)
        except ValueError:
            return None
        return key.type == ControlRecordType.ABORT, value.coordinator_epoch, record.timestamp
    return None


def has_producer_id(info: BatchInfo) -> bool:
    """RecordBatch.hasProducerId: any id above NO_PRODUCER_ID (-1)."""
    return info.producer_id > -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)
