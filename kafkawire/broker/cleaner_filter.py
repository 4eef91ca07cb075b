"""The log cleaner's rules for batches and records, without I/O (Kafka's Cleaner.buildOffsetMapForSegment,
its RecordFilter in cleanInto, MemoryRecords.filterTo, CleanedTransactionMetadata and SkimpyOffsetMap):
batches in, the bytes to write out.

    offset_map = OffsetMap(memory=128 << 20, load_factor=0.9)
    full = offset_map.add_batch(batch, start_offset, txns)          # over the dirty section, in order
    keep = BatchFilter(offset_map, txns, last_records, upper_bound, now_ms, delete_retention_ms)
    data = keep.filter(batch)                                       # bytes to write, or None

A record is kept when it is past the map's latest offset, or when it has a key, is the latest record
of that key (its offset >= the map's) and is not a tombstone whose delete horizon has passed. The
horizon of a v2 batch (KIP-534) is written in its base timestamp, with the delete-horizon attribute,
the first time the cleaner keeps a tombstone (or a marker of a transaction with no data left) in it:
``now + delete.retention.ms``; a later cleaning after that time drops them. A record without a key
is dropped (Kafka counts it invalid).

A batch with every record kept and no horizon to set is written as it was (same bytes); a batch that
loses records is written again with the kept records, its base offset, last offset delta (the
producer's last sequence stays right), producer fields, leader epoch and codec. A batch left empty is
dropped, except an empty header is written for the last batch of an active producer (its sequence
and epoch) and for the batch that ends the cleaning round (the log's last offset). Transactions:
batches of aborted transactions (from the ``.txnindex`` entries) are dropped and left out of the map;
an ABORT marker is kept while batches of its transaction were seen in this cleaning (its entry then
goes into the cleaned segment's ``.txnindex``), a COMMIT marker while data of its transaction was
seen; a marker that may go is dropped once its delete horizon has passed (set as for tombstones).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from kafkawire.records import RecordBatchBuilder
from kafkawire.records.control import ControlRecordType
from kafkawire.storage.txn_index import AbortedTxn

__all__ = ["OffsetMap", "TransactionMetadata", "BatchFilter", "LastRecord", "CleanerStats", "BYTES_PER_ENTRY"]

BYTES_PER_ENTRY = 16 + 8          # SkimpyOffsetMap: an MD5 hash and an offset per slot
NO_TIMESTAMP = -1
CREATE_TIME = 0
_RETAIN_EMPTY, _DELETE, _DELETE_EMPTY = "retain-empty", "delete", "delete-empty"


_EXACT_KEY_BYTES = 64


def _digest(key) -> bytes:
    """The map's key for a record key: a short key itself (exact, and several times cheaper than a hash),
    a longer one its MD5 as in Kafka's map; the first byte keeps the two kinds apart."""
    if len(key) <= _EXACT_KEY_BYTES:
        return b"\x00" + key
    return b"\x01" + hashlib.md5(key).digest()


class OffsetMap:
    """Key -> latest offset over the dirty section (SkimpyOffsetMap's sizing: ``memory`` / 24 slots,
    filled at most ``load_factor`` of them). Keys longer than 64 bytes are kept as their MD5 hash, as in
    Kafka's map; shorter ones as they are."""

    def __init__(self, memory: int, load_factor: float = 0.9):
        self.slots = memory // BYTES_PER_ENTRY
        self.max_entries = int(self.slots * load_factor)
        if self.max_entries < 1:
            raise ValueError("offset map is too small to fit in even a single message, so log cleaning will "
                             "never make progress. You can increase log.cleaner.dedupe.buffer.size or decrease "
                             "log.cleaner.threads")
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def clear(self) -> None:
        self._offsets.clear()
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._offsets)

    def put(self, key, offset: int) -> None:
        self._offsets[_digest(key)] = offset
        self.latest_offset = offset

    def get(self, key) -> int:
        return self._offsets.get(_digest(key), -1)

    @property
    def utilization(self) -> float:
        return len(self._offsets) / self.slots

    def add_batch(self, batch, start_offset: int, txns: TransactionMetadata, stats: CleanerStats) -> bool:
        """Map the keys of one batch of the dirty section (buildOffsetMapForSegment); True when the map
        filled up inside it (the cleaning then stops at the latest offset mapped)."""
        if getattr(batch, "is_control", False):
            txns.on_control_batch(batch)
            stats.index_messages_read += 1
        elif txns.on_batch(batch):
            stats.index_messages_read += len(batch)       # aborted: not mapped
        else:
            for record in batch:
                if record.key is not None and record.offset >= start_offset:
                    if len(self._offsets) >= self.max_entries:
                        return True
                    self.put(record.key, record.offset)
                stats.index_messages_read += 1
        if batch.last_offset >= start_offset:
            self.latest_offset = batch.last_offset
        return False


@dataclass
class CleanerStats:
    """CleanerStats' counts."""
    index_messages_read: int = 0
    index_bytes_read: int = 0
    messages_read: int = 0
    bytes_read: int = 0
    messages_written: int = 0
    bytes_written: int = 0
    invalid_messages: int = 0


@dataclass(frozen=True)
class LastRecord:
    """ProducerStateManager.lastRecordsOfActiveProducers: a producer's last data offset (None after a
    marker) and epoch."""
    last_data_offset: int | None
    producer_epoch: int


@dataclass
class _OngoingAbort:
    txn: AbortedTxn
    last_batch_offset: int | None = None


@dataclass
class TransactionMetadata:
    """CleanedTransactionMetadata: the aborted transactions (``.txnindex`` entries) met while reading in
    offset order; ``cleaned_index`` collects the entries the segment being written keeps."""
    aborted: list[AbortedTxn] = field(default_factory=list)          # by first offset, not yet reached
    cleaned_index: list[AbortedTxn] = field(default_factory=list)
    _committed: set = field(default_factory=set)
    _aborting: dict = field(default_factory=dict)

    def add_aborted(self, entries) -> None:
        self.aborted = sorted(self.aborted + list(entries), key=lambda t: t.first_offset, reverse=True)

    def _reach(self, offset: int) -> None:
        while self.aborted and self.aborted[-1].first_offset <= offset:
            txn = self.aborted.pop()
            self._aborting.setdefault(txn.producer_id, _OngoingAbort(txn))

    def on_control_batch(self, batch) -> bool:
        """True when the marker may be dropped (onControlBatchRead)."""
        self._reach(batch.last_offset)
        records = list(batch)
        if not records:
            return True                    # an empty control batch: cleaned before
        kind = records[0].control_type
        if kind == ControlRecordType.ABORT:
            ongoing = self._aborting.pop(batch.producer_id, None)
            if ongoing is not None and ongoing.last_batch_offset is not None:
                self.cleaned_index.append(ongoing.txn)
                return False
            return True
        if kind == ControlRecordType.COMMIT:
            if batch.producer_id in self._committed:
                self._committed.discard(batch.producer_id)
                return False
            return True
        return False

    def on_batch(self, batch) -> bool:
        """True when the data batch belongs to an aborted transaction (onBatchRead)."""
        self._reach(batch.last_offset)
        if not getattr(batch, "is_transactional", False):
            return False
        ongoing = self._aborting.get(batch.producer_id)
        if ongoing is not None:
            ongoing.last_batch_offset = batch.last_offset
            return True
        self._committed.add(batch.producer_id)
        return False


class BatchFilter:
    """The cleaner's RecordFilter and MemoryRecords.filterTo for one cleaning round (see the module docstring)."""

    def __init__(self, offset_map: OffsetMap, txns: TransactionMetadata, last_records: dict, *,
                 upper_bound_offset: int, now_ms: int, delete_retention_ms: int, stats: CleanerStats):
        self.map, self.txns, self.last_records = offset_map, txns, last_records
        self.upper_bound_offset = upper_bound_offset
        self.now_ms, self.delete_retention_ms = now_ms, delete_retention_ms
        self.stats = stats
        self.retain_legacy_deletes = True          # per source segment (the legacy delete horizon)
        self._discard_records = False

    def _retention(self, batch) -> tuple[str, bool]:
        control = getattr(batch, "is_control", False)
        can_discard = self.txns.on_control_batch(batch) if control else self.txns.on_batch(batch)
        horizon = getattr(batch, "delete_horizon_ms", None)
        self._discard_records = (can_discard and horizon is not None and horizon <= self.now_ms) if control \
            else can_discard
        producer_id = getattr(batch, "producer_id", -1)
        last = self.last_records.get(producer_id)
        is_last_of_producer = last is not None and (
            batch.last_offset == last.last_data_offset if last.last_data_offset is not None
            else control and batch.producer_epoch == last.producer_epoch)
        if producer_id >= 0 and is_last_of_producer:
            retention = _RETAIN_EMPTY
        elif batch.next_offset == self.upper_bound_offset:
            retention = _RETAIN_EMPTY          # the round's last batch keeps the log's last offset
        else:
            retention = _DELETE if self._discard_records else _DELETE_EMPTY
        return retention, can_discard and control

    def _keeps_deletes(self, batch) -> bool:
        """Tombstones stay until the batch's delete horizon (v2), or by the legacy horizon (magic 0/1)."""
        if batch.magic < 2:
            return self.retain_legacy_deletes
        horizon = batch.delete_horizon_ms
        return horizon is None or self.now_ms < horizon

    def _kept_records(self, batch) -> tuple[list, bool]:
        """Cleaner.shouldRetainRecord over the batch: the records kept, and whether all were."""
        if self._discard_records:
            records = list(batch)
            self.stats.messages_read += len(records)
            return [], not records
        control, keep_deletes = getattr(batch, "is_control", False), self._keeps_deletes(batch)
        latest_offset, latest_of = self.map.latest_offset, self.map.get
        kept, every = [], True
        for record in batch:
            self.stats.messages_read += 1
            if control or record.offset > latest_offset:
                kept.append(record)
            elif record.key is None:
                self.stats.invalid_messages += 1
                every = False
            elif record.offset >= latest_of(record.key) and (record.value is not None or keep_deletes):
                kept.append(record)
            else:
                every = False
        return kept, every

    def filter(self, batch) -> bytes | None:
        """The bytes this batch becomes in the cleaned segment, or None when it goes."""
        retention, marker_for_empty_txn = self._retention(batch)
        self.stats.bytes_read += batch.size_in_bytes
        if retention == _DELETE:
            return None
        kept, every = self._kept_records(batch)
        original = every and batch.magic >= 2
        if kept:
            tombstones = any(record.value is None for record in kept)
            horizon = getattr(batch, "delete_horizon_ms", None)
            set_horizon = (tombstones or marker_for_empty_txn) and horizon is None
            self.stats.messages_written += len(kept)
            if original and not set_horizon:
                return bytes(batch.raw)
            return _rebuilt(batch, kept, self.now_ms + self.delete_retention_ms if set_horizon else horizon)
        if retention == _RETAIN_EMPTY:
            return _empty_header(batch)
        return None


def _rebuilt(batch, records, horizon: int | None) -> bytes:
    """MemoryRecords.buildRetainedRecordsInto: the kept records in a v2 batch with the original's header
    fields, codec and last offset; the horizon (when set) as base timestamp."""
    legacy = batch.magic < 2
    timestamp_type = CREATE_TIME if legacy and batch.magic == 0 else batch.timestamp_type
    base_offset = records[0].offset if legacy else batch.base_offset
    builder = RecordBatchBuilder(
        base_offset=base_offset, partition_leader_epoch=getattr(batch, "partition_leader_epoch", -1),
        compression_type=batch.compression_type, timestamp_type=timestamp_type,
        is_transactional=getattr(batch, "is_transactional", False), is_control=getattr(batch, "is_control", False),
        has_delete_horizon=horizon is not None and horizon != NO_TIMESTAMP,
        producer_id=getattr(batch, "producer_id", -1), producer_epoch=getattr(batch, "producer_epoch", -1),
        base_sequence=getattr(batch, "base_sequence", -1),
        base_timestamp=horizon if horizon is not None and horizon != NO_TIMESTAMP else None,
        max_timestamp=getattr(batch, "max_timestamp", getattr(batch, "timestamp", None)) if timestamp_type == 1 else None,
        last_offset_delta=None if legacy else batch.last_offset_delta)
    for record in records:
        timestamp = record.timestamp if record.timestamp is not None else NO_TIMESTAMP
        builder.append(record.key, record.value, getattr(record, "headers", ()), timestamp,
                       offset_delta=record.offset - base_offset)
    return builder.build()


def _empty_header(batch) -> bytes:
    """DefaultRecordBatch.writeEmptyHeader: no records, the offsets, producer fields and max timestamp kept."""
    return RecordBatchBuilder(
        base_offset=batch.base_offset, partition_leader_epoch=batch.partition_leader_epoch,
        timestamp_type=batch.timestamp_type, is_transactional=batch.is_transactional, is_control=batch.is_control,
        producer_id=batch.producer_id, producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
        base_timestamp=NO_TIMESTAMP, max_timestamp=batch.max_timestamp,
        last_offset_delta=batch.last_offset_delta).build()
