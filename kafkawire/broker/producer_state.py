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
* a transactional batch: an epoch older than the producer's is INVALID_PRODUCER_EPOCH, any other
  INVALID_TXN_STATE ("Record was not part of an ongoing transaction"): no transaction is ever
  open here (transactions are a later slice of issue 29);
* an epoch older than the producer's: INVALID_PRODUCER_EPOCH;
* a new epoch must start at sequence 0, unless the producer is unknown (no epoch yet):
  OUT_OF_ORDER_SEQUENCE_NUMBER;
* in the same epoch the first sequence must follow the last one (wrapping after 2^31-1 to 0),
  unless the producer is unknown: OUT_OF_ORDER_SEQUENCE_NUMBER. An unknown producer's first batch
  may start at any sequence, as in Kafka since KIP-360 (its records may have been deleted by
  retention); Kafka 4.3.1's leader no longer answers UNKNOWN_PRODUCER_ID, and neither does this.

Batches read back from the log (``apply(..., replay=True)``, Kafka's AppendOrigin.REPLICATION)
are not checked, only recorded. A producer whose last batch's timestamp is older than
``producer.id.expiration.ms`` is forgotten (ProducerStateManager.removeExpiredProducers).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from kafkawire.protocol.error_codes import Errors

from .validation import ProduceRefused

__all__ = ["BatchInfo", "BatchMetadata", "ProducerEntry", "ProducerState", "NUM_BATCHES_TO_RETAIN",
           "DEFAULT_PRODUCER_ID_EXPIRATION_MS"]

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = 0x7FFFFFFF
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000          # producer.id.expiration.ms


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
    current_txn_first_offset: int = -1                   # -1: no transaction open (always, here)
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

    def check(self, info: BatchInfo, *, first_offset: int) -> BatchMetadata | None:
        """A client's batch about to be appended at ``first_offset``: the duplicate it repeats
        (answer with its offsets, do not append), None (append it, then ``apply``), or
        ProduceRefused with Kafka's error and message."""
        if not has_producer_id(info):
            return None
        entry = self.producers.get(info.producer_id)
        if entry is not None:
            duplicate = entry.find_duplicate(info)
            if duplicate is not None:
                return duplicate
        if info.is_transactional:
            self._refuse_transactional(info, entry)
        current = entry if entry is not None else ProducerEntry(info.producer_id)
        self._check_epoch(info, current, first_offset)
        self._check_sequence(info, current, first_offset)
        return None

    def _refuse_transactional(self, info: BatchInfo, entry: ProducerEntry | None) -> None:
        """analyzeAndValidateProducerState for a transactional batch without an ongoing transaction."""
        if entry is not None and info.producer_epoch < entry.producer_epoch:
            raise ProduceRefused(Errors.INVALID_PRODUCER_EPOCH,
                                 f"Epoch of producer {info.producer_id} is {info.producer_epoch}, which is smaller "
                                 f"than the last seen epoch {entry.producer_epoch}")
        raise ProduceRefused(Errors.INVALID_TXN_STATE, "Record was not part of an ongoing transaction")

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

    def apply(self, info: BatchInfo, *, first_offset: int) -> None:
        """Record a batch appended at ``first_offset`` (checked by ``check``, or read back from the
        log: ProducerAppendInfo.appendDataBatch and ProducerStateManager.update)."""
        if not has_producer_id(info):
            return
        entry = self.producers.get(info.producer_id)
        if entry is None:
            entry = self.producers[info.producer_id] = ProducerEntry(info.producer_id)
        entry.add_batch(info.producer_epoch, info.last_sequence, first_offset + info.last_offset_delta,
                        info.last_offset_delta, info.max_timestamp)

    def replay(self, batches: Iterable) -> None:
        """Batches read back from the log (RecordBatch objects with their stored offsets): recorded
        without checks, control batches skipped (no transaction markers are written here)."""
        for batch in batches:
            if getattr(batch, "magic", 2) == 2 and not batch.is_control:
                self.apply(BatchInfo.of(batch), first_offset=batch.base_offset)

    def remove_expired(self, now_ms: int) -> int:
        """Forget the producers whose last timestamp is ``expiration_ms`` old; how many."""
        expired = [pid for pid, entry in self.producers.items() if self._expired(entry, now_ms)]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    def _expired(self, entry: ProducerEntry, now_ms: int) -> bool:
        return entry.current_txn_first_offset < 0 and now_ms - entry.last_timestamp >= self.expiration_ms

    # -- snapshots (kafkawire.storage.producer_snapshot: one entry per producer, its last batch) --

    def load_snapshot(self, entries: Iterable, now_ms: int) -> None:
        """Replace the state by a snapshot's entries (ProducerStateManager.readSnapshot), the expired ones dropped."""
        self.producers.clear()
        for e in entries:
            entry = ProducerEntry(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp,
                                  e.current_txn_first_offset)
            if e.last_offset >= 0:
                entry.add_batch(e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp)
            if not self._expired(entry, now_ms):
                self.producers[e.producer_id] = entry


def has_producer_id(info: BatchInfo) -> bool:
    """RecordBatch.hasProducerId: any id above NO_PRODUCER_ID (-1)."""
    return info.producer_id > -1


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)
