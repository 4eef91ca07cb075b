"""What the log cleaner keeps of each batch, as Kafka's Cleaner and MemoryRecords.filterTo keep it,
on hand-built batches without I/O (kafkawire.broker.cleaner_filter): the latest record per key,
tombstones and transaction markers until their delete horizon (KIP-534, written in the batch),
records of aborted transactions (from .txnindex entries), the partial offset map, and batch
boundaries (a batch kept whole keeps its bytes; one that lost records keeps its offsets; an empty
header for an active producer's last batch and for the round's last batch).
"""
from __future__ import annotations

import pytest

from kafkawire.broker.cleaner_filter import BatchFilter, CleanerStats, LastRecord, OffsetMap, TransactionMetadata
from kafkawire.records import GZIP, iter_batches
from kafkawire.records.builder import build_batch, build_end_txn_marker_batch
from kafkawire.storage.txn_index import AbortedTxn

HOUR = 3_600_000
NOW = 1_000 * HOUR
DAY = 24 * HOUR


def log_of(*batches) -> bytes:
    """Batches ``[(key, value), ...]`` (or raw bytes) at consecutive offsets."""
    out, offset = [], 0
    for b in batches:
        data = b if isinstance(b, bytes) else build_batch([(k, v, [], NOW) for k, v in b], base_offset=offset)
        out.append(data)
        offset = list(iter_batches(data))[-1].next_offset
    return b"".join(out)


def clean(data: bytes, now=NOW, *, retention=DAY, aborted=(), last_records=None, memory=1 << 20):
    """One cleaning round over ``data`` (all dirty): the offset map, then each batch filtered. The bytes
    written, the .txnindex entries kept, and the map."""
    offset_map, stats = OffsetMap(memory), CleanerStats()
    txns = TransactionMetadata()
    txns.add_aborted(aborted)
    batches = list(iter_batches(data))
    for batch in batches:
        if offset_map.add_batch(batch, 0, txns, stats):
            break
    cleaning = TransactionMetadata()
    cleaning.add_aborted(aborted)
    keep = BatchFilter(offset_map, cleaning, last_records or {}, upper_bound_offset=offset_map.latest_offset + 1,
                       now_ms=now, delete_retention_ms=retention, stats=stats)
    out = b"".join(x for x in (keep.filter(b) for b in batches if b.last_offset <= offset_map.latest_offset) if x)
    return out, cleaning.cleaned_index, offset_map


def records(data: bytes) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key and bytes(r.key), r.value and bytes(r.value)) for b in iter_batches(data) for r in b]


def shape(data: bytes) -> list[tuple[int, int, int]]:
    """(base offset, last offset, record count) of each batch, every CRC checked."""
    return [(b.base_offset, b.last_offset, b.records_count) for b in iter_batches(data, verify_crc=True)]


def test_the_latest_record_of_each_key_is_kept_and_whole_batches_keep_their_bytes():
    first, second, third = [(b"a", b"1"), (b"b", b"1")], [(b"a", b"2")], [(b"c", b"1"), (b"b", b"2")]
    data = log_of(first, second, third)
    out, _, _ = clean(data)
    assert records(out) == [(2, b"a", b"2"), (3, b"c", b"1"), (4, b"b", b"2")]
    assert out == data[len(log_of(first)):]          # the emptied batch goes, the others are unchanged


def test_a_batch_that_loses_records_is_written_again_with_its_offsets_and_producer_fields():
    data = log_of(build_batch([(b"a", b"1", [], NOW), (b"b", b"1", [("h", b"x")], NOW + 5), (b"a", b"2", [], NOW + 9)],
                              producer_id=7, producer_epoch=3, base_sequence=10, partition_leader_epoch=4))
    out, _, _ = clean(data)
    batch, = iter_batches(out, verify_crc=True)
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (0, 2, 2)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.partition_leader_epoch) == (7, 3, 10, 4)
    assert [(r.offset, r.timestamp, r.headers) for r in batch] == [(1, NOW + 5, (("h", b"x"),)), (2, NOW + 9, ())]
    assert batch.max_timestamp == NOW + 9 and batch.last_sequence == 12


def test_a_compressed_batch_is_written_again_in_its_codec():
    data = log_of(build_batch([(b"a", b"1", [], NOW), (b"a", b"2", [], NOW)], compression_type=GZIP))
    out, _, _ = clean(data)
    batch, = iter_batches(out, verify_crc=True)
    assert batch.compression_type == GZIP and records(out) == [(1, b"a", b"2")]


def test_a_tombstone_gets_a_delete_horizon_then_goes_after_delete_retention_ms():
    """The first cleaning keeps it and writes now + delete.retention.ms in its batch; it goes once that passed."""
    data = log_of([(b"a", b"1")], [(b"a", None)], [(b"b", b"1")])
    once, _, _ = clean(data, NOW, retention=HOUR)
    tombstone = list(iter_batches(once))[0]
    assert records(once) == [(1, b"a", None), (2, b"b", b"1")]
    assert (tombstone.delete_horizon_ms, [r.timestamp for r in tombstone]) == (NOW + HOUR, [NOW])
    again, _, _ = clean(once, NOW + HOUR - 1, retention=HOUR)
    assert again == once                              # the horizon is set already: unchanged bytes
    after, _, _ = clean(once, NOW + HOUR, retention=HOUR)
    assert records(after) == [(2, b"b", b"1")]


def test_a_full_offset_map_stops_the_round_and_keeps_everything_past_its_latest_offset():
    """log.cleaner.dedupe.buffer.size of 3 entries at load factor 0.9: the map takes 2 keys."""
    data = log_of([(b"a", b"1")], [(b"a", b"2")], [(b"b", b"1")], [(b"c", b"1")], [(b"a", b"3")])
    offset_map = OffsetMap(3 * 24)
    assert (offset_map.slots, offset_map.max_entries) == (3, 2)
    out, _, offset_map = clean(data, memory=3 * 24)
    assert offset_map.latest_offset == 2              # the next cleaning starts at 3
    assert records(out) == [(1, b"a", b"2"), (2, b"b", b"1")]


def test_an_offset_map_too_small_for_one_key_is_refused_with_kafkas_message():
    with pytest.raises(ValueError, match="increase log.cleaner.dedupe.buffer.size"):
        OffsetMap(24)


def test_an_active_producers_last_batch_stays_as_an_empty_header():
    producer = build_batch([(b"a", b"1", [], NOW)], base_offset=0, producer_id=7, producer_epoch=2, base_sequence=4)
    data = log_of(producer, [(b"a", b"2")], [(b"z", b"1")])
    gone, _, _ = clean(data)
    assert shape(gone) == [(1, 1, 1), (2, 2, 1)]
    kept, _, _ = clean(data, last_records={7: LastRecord(0, 2)})
    empty = list(iter_batches(kept, verify_crc=True))[0]
    assert shape(kept)[0] == (0, 0, 0) and empty.size_in_bytes == 61
    assert (empty.producer_id, empty.producer_epoch, empty.base_sequence, empty.max_timestamp) == (7, 2, 4, NOW)


def test_the_last_batch_of_the_round_stays_as_an_empty_header_when_emptied():
    data = log_of([(b"a", b"1")], [(None, b"no key")])
    out, _, _ = clean(data)
    assert shape(out) == [(0, 0, 1), (1, 1, 0)]       # the log keeps its last offset


def aborted_transaction():
    """Producer 5 writes x and y in a transaction it aborts; then a plain record."""
    return log_of(build_batch([(b"x", b"1", [], NOW)], producer_id=5, producer_epoch=0, base_sequence=0,
                              is_transactional=True),
                  build_batch([(b"y", b"1", [], NOW)], base_offset=1, producer_id=5, producer_epoch=0, base_sequence=1,
                              is_transactional=True),
                  build_end_txn_marker_batch(False, producer_id=5, producer_epoch=0, coordinator_epoch=0,
                                             timestamp=NOW, base_offset=2),
                  [(b"z", b"1")])


def test_aborted_records_go_and_the_abort_marker_stays_until_its_horizon_after_them():
    entry = AbortedTxn(0, 5, 0, 2, 3)
    first, index, offset_map = clean(aborted_transaction(), aborted=[entry], retention=HOUR)
    assert len(offset_map) == 1                        # aborted batches are not mapped
    assert [(b.base_offset, b.is_control) for b in iter_batches(first)] == [(2, True), (3, False)]
    assert index == [entry]                            # the cleaned segment's .txnindex keeps it
    second, index, _ = clean(first, NOW, aborted=[entry], retention=HOUR)
    marker = list(iter_batches(second))[0]
    assert (index, marker.is_control, marker.delete_horizon_ms) == ([], True, NOW + HOUR)
    third, _, _ = clean(second, NOW + HOUR, aborted=[entry], retention=HOUR)
    assert shape(third) == [(3, 3, 1)]


def test_a_commit_marker_stays_while_data_of_its_transaction_was_read():
    data = log_of(build_batch([(b"x", b"1", [], NOW)], producer_id=6, producer_epoch=0, base_sequence=0,
                              is_transactional=True),
                  build_end_txn_marker_batch(True, producer_id=6, producer_epoch=0, coordinator_epoch=0,
                                             timestamp=NOW, base_offset=1),
                  [(b"x", b"2")], [(b"z", b"1")])
    first, _, _ = clean(data, retention=HOUR)
    assert [(b.base_offset, b.is_control, b.delete_horizon_ms) for b in iter_batches(first)] == [
        (1, True, None), (2, False, None), (3, False, None)]
    second, _, _ = clean(first, NOW, retention=HOUR)
    assert [(b.base_offset, b.delete_horizon_ms) for b in iter_batches(second)][0] == (1, NOW + HOUR)
    third, _, _ = clean(second, NOW + HOUR, retention=HOUR)
    assert shape(third) == [(2, 2, 1), (3, 3, 1)]


def test_legacy_messages_that_stay_are_written_again_as_v2_batches():
    """As MemoryRecords.filterTo converts magic 0/1 message sets (kafka-python's builder writes them)."""
    legacy = pytest.importorskip("kafka.record.legacy_records")
    builder = legacy.LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    for i, (key, value) in enumerate([(b"a", b"1"), (b"a", b"2"), (b"b", b"1")]):
        builder.append(i, timestamp=NOW + i, key=key, value=value)
    out, _, _ = clean(bytes(builder.build()))
    assert [(b.magic, b.base_offset, b.last_offset) for b in iter_batches(out, verify_crc=True)] == [(2, 1, 1), (2, 2, 2)]
    assert records(out) == [(1, b"a", b"2"), (2, b"b", b"1")]
    assert [r.timestamp for b in iter_batches(out) for r in b] == [NOW + 1, NOW + 2]
