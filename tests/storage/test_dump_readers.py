"""The unchecked readers of Kafka's index, transaction-index and producer-snapshot files."""
from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from kafkawire.storage.index import read_offset_index_entries, read_time_index_entries
from kafkawire.storage.producer_snapshot import (ProducerSnapshotError, encode_producer_snapshot, read_producer_snapshot,
                                                 snapshot_file_name)
from kafkawire.storage.txn_index import AbortedTxn, read_txn_index


def test_index_entries_are_absolute_and_keep_preallocated_zeros():
    data = struct.pack(">ii", 3, 100) + struct.pack(">ii", 7, 250) + b"\0" * 8 + b"\1\2\3"
    assert read_offset_index_entries(data, 1000) == [(1003, 100), (1007, 250), (1000, 0)]
    data = struct.pack(">qi", 55, 2) + struct.pack(">qi", 60, 9) + b"\7" * 5
    assert read_time_index_entries(data, 10) == [(55, 12), (60, 19)]


def test_txn_index_entries_and_where_a_partial_entry_starts():
    entry = struct.pack(">hqqqq", 0, 42, 10, 20, 21)
    assert read_txn_index(entry * 2) == ([AbortedTxn(0, 42, 10, 20, 21)] * 2, None)
    entries, partial = read_txn_index(entry + b"\0" * 5)
    assert entries == [AbortedTxn(0, 42, 10, 20, 21)] and partial == 34


def _snapshot(entries, version=1) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", version, crc32c(body)) + body


def test_producer_snapshot_entries_with_the_first_sequence_wrapped():
    data = _snapshot([(7, 1, 4, 99, 2, 1234, 5, -1), (8, 0, 1, 50, 3, 1, 0, 40)])
    first, second = read_producer_snapshot(data)
    assert (first.producer_id, first.first_sequence, first.last_offset, first.current_txn_first_offset) == \
        (7, 2, 99, -1)
    assert second.first_sequence == 1 - 3 + 0x80000000     # DefaultRecordBatch.decrementSequence
    assert second.coordinator_epoch == 0 and second.current_txn_first_offset == 40


def test_an_encoded_producer_snapshot_has_kafkas_layout_and_reads_back():
    """ProducerStateManager.writeSnapshot's layout: version, CRC-32C of the rest, count, entries."""
    raw = [(7, 1, 4, 99, 2, 1234, 5, -1), (8, 0, 1, 50, 3, 1, 0, 40)]
    entries = read_producer_snapshot(_snapshot(raw))
    assert encode_producer_snapshot(entries) == _snapshot(raw)
    assert read_producer_snapshot(encode_producer_snapshot([])) == []
    assert snapshot_file_name(5) == "00000000000000000005.snapshot"


@pytest.mark.parametrize("data, message, position", [
    (b"\0\1\2", "too short", 0),
    (_snapshot([], version=2), "unknown file version 2", 0),
    (_snapshot([(1, 0, 0, 0, 0, 0, 0, 0)])[:-1] + b"\x09", "CRC is no longer valid", 2),
])
def test_a_snapshot_kafka_refuses_names_why_and_where(data, message, position):
    with pytest.raises(ProducerSnapshotError, match=message) as info:
        read_producer_snapshot(data)
    assert info.value.position == position


def test_a_count_that_does_not_match_the_bytes_is_refused():
    body = struct.pack(">i", 2) + struct.pack(">qhiqiqiq", 1, 0, 0, 0, 0, 0, 0, 0)
    data = struct.pack(">hI", 1, crc32c(body)) + body
    with pytest.raises(ProducerSnapshotError, match="declares 2 entries") as info:
        read_producer_snapshot(data)
    assert info.value.position == 6
