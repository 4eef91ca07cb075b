"""A partition's log with transactions (kafkawire.broker.partition, txn_log), as Kafka 4.3.1's
UnifiedLog/LogSegment keep it: COMMIT/ABORT markers in Kafka's control-batch format, aborted
transactions in the ``.txnindex`` of the marker's segment (34-byte entries), the last stable
offset, read_committed reads with the aborted transactions they overlap (across segments), and
the index and the open transactions rebuilt after a crash. In process, on a temporary directory."""
from __future__ import annotations

import os
import shutil
import struct
import uuid

from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.validation import validate_produce
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch
from kafkawire.storage.txn_index import AbortedTxn
from kafkawire.tools.cli import main

TOPIC_ID = uuid.UUID(int=7)
NOW = 1_800_000_000_000
A, B, C = 11, 22, 33


def open_partition(path, segment_bytes: int = 1 << 20) -> LeaderPartition:
    return LeaderPartition.open(str(path), "t", 0, TOPIC_ID, leader_epoch=3, segment_bytes=segment_bytes, now_ms=NOW)


class Producers:
    """Each producer's next sequence, so that batches follow one another."""

    def __init__(self, partition: LeaderPartition):
        self.partition = partition
        self.next_seq: dict[int, int] = {}

    def send(self, pid: int, *, txn: bool = True, count: int = 1) -> int:
        seq = self.next_seq.get(pid, 0)
        data = build_batch([(b"k", b"v%d" % i, [], NOW) for i in range(count)], producer_id=pid, producer_epoch=0,
                           base_sequence=seq, is_transactional=txn)
        validated = validate_produce(data, topic_partition=self.partition.name, max_message_bytes=1 << 20,
                                     log_append_time=False, now_ms=NOW)
        self.next_seq[pid] = seq + count
        return self.partition.append(validated, now_ms=NOW)[0]

    def end(self, pid: int, *, commit: bool, coordinator_epoch: int = 7) -> int:
        return self.partition.append_marker(producer_id=pid, producer_epoch=0, coordinator_epoch=coordinator_epoch,
                                            commit=commit, now_ms=NOW)


def txnindex_files(partition: LeaderPartition) -> dict[int, bytes]:
    found = {}
    for segment in partition.log.segments:
        if os.path.exists(segment.txn_index.path):
            with open(segment.txn_index.path, "rb") as f:
                found[segment.base_offset] = f.read()
    return found


def test_markers_are_kafkas_control_batches_and_an_abort_is_indexed_in_kafkas_format(tmp_path, capsys):
    partition = open_partition(tmp_path)
    producers = Producers(partition)
    producers.send(A, count=2)                  # 0-1
    assert producers.end(A, commit=True) == 2
    producers.send(A)                           # 3
    assert producers.end(A, commit=False, coordinator_epoch=8) == 4
    batches = list(iter_batches(partition.read(2, 1 << 20, min_one_batch=True)))
    commit, abort = batches[0], batches[2]
    for batch, control_type, coordinator_epoch in ((commit, 1, 7), (abort, 0, 8)):
        assert (batch.is_control, batch.is_transactional, batch.producer_id, batch.producer_epoch,
                batch.base_sequence, batch.partition_leader_epoch, batch.size_in_bytes) == \
            (True, True, A, 0, -1, 3, 78)       # MemoryRecords.withEndTransactionMarker's 78 bytes
        (record,) = list(batch)
        assert bytes(record.key) == struct.pack(">hh", 0, control_type)
        assert bytes(record.value) == struct.pack(">hi", 0, coordinator_epoch)
    # Only the abort is indexed: version 0, producer, first offset, marker offset, LSO (marker + 1).
    assert txnindex_files(partition) == {0: struct.pack(">hqqqq", 0, A, 3, 4, 5)}
    main(["dump-log", "--files", partition.log.segments[0].txn_index.path])
    out = capsys.readouterr().out
    assert "version: 0 producerId: 11 firstOffset: 3 lastOffset: 4 lastStableOffset: 5" in out
    partition.close()


def test_the_last_stable_offset_stops_at_the_oldest_open_transaction(tmp_path):
    """UnifiedLog.lastStableOffset: min(first unstable offset, high watermark)."""
    partition = open_partition(tmp_path)
    producers = Producers(partition)
    producers.send(C, txn=False)                # 0: plain data
    assert partition.last_stable_offset() == partition.high_watermark() == 1
    producers.send(A)                           # 1: A's transaction
    producers.send(B)                           # 2: B's transaction
    producers.send(C, txn=False)                # 3
    assert (partition.last_stable_offset(), partition.high_watermark()) == (1, 4)
    producers.end(B, commit=True)               # 4: B done, A still open
    assert partition.last_stable_offset() == 1
    producers.end(A, commit=False)              # 5: A aborted; its entry's LSO is 6
    assert partition.last_stable_offset() == partition.high_watermark() == 6
    assert txnindex_files(partition) == {0: struct.pack(">hqqqq", 0, A, 1, 5, 6)}
    partition.close()


def test_an_aborted_entry_written_while_another_transaction_is_open_carries_its_first_offset(tmp_path):
    partition = open_partition(tmp_path)
    producers = Producers(partition)
    producers.send(A)                               # 0
    producers.send(B)                               # 1
    producers.end(A, commit=False)                  # 2: B (from 1) still open
    assert partition.log.segments[0].txn_index.entries() == [AbortedTxn(0, A, 0, 2, 1)]
    partition.close()


def test_a_read_committed_read_stops_at_the_lso_and_lists_the_aborted_transactions_across_segments(tmp_path):
    """LocalLog.read with maxOffset = LSO and collectAbortedTransactions from the fetch
    offset's segment on: small segments put the transactions and their markers in different ones."""
    partition = open_partition(tmp_path, segment_bytes=250)
    producers = Producers(partition)
    producers.send(A)                               # 0
    producers.send(B)                               # 1
    producers.end(A, commit=False)                  # 2
    producers.send(C, txn=False)                    # 3
    producers.end(B, commit=False)                  # 4
    producers.send(A)                               # 5: open
    producers.send(C, txn=False)                    # 6, above the LSO
    assert len(partition.log.segments) > 2
    assert partition.last_stable_offset() == 5
    found = []
    offset = 0
    while offset < 5:
        data, aborted = partition.read_committed(offset, 1 << 20, min_one_batch=True)
        batches = list(iter_batches(data))
        assert batches and batches[-1].last_offset < 5
        found += [(a.producer_id, a.first_offset) for a in aborted]
        offset = batches[-1].last_offset + 1
    assert set(found) == {(A, 0), (B, 1)}
    assert partition.read_committed(5, 1 << 20, min_one_batch=True) == (b"", [])
    data, aborted = partition.read_committed(3, 1 << 20, min_one_batch=True)
    assert [(a.producer_id, a.first_offset) for a in aborted] == [(B, 1)]     # A's ended at 2, before the fetch
    partition.close()


def crash(partition: LeaderPartition) -> None:
    """A kill -9: the files as they are, no snapshot at close."""
    partition.log.close()


def test_after_a_crash_the_txnindex_and_the_open_transactions_are_rebuilt_from_the_log(tmp_path):
    partition = open_partition(tmp_path, segment_bytes=250)
    producers = Producers(partition)
    for pid in (A, B):
        producers.send(pid)
    producers.end(A, commit=False)
    producers.send(C, txn=False)
    producers.end(B, commit=False)
    producers.send(A)                                # open at 5
    expected = txnindex_files(partition)
    assert expected and partition.last_stable_offset() == 5
    crash(partition)
    for base in expected:                            # lost with the page cache, or torn
        path = os.path.join(tmp_path, "t-0", f"{base:020d}.txnindex")
        with open(path, "r+b") as f:
            f.truncate(5)
    for name in os.listdir(os.path.join(tmp_path, "t-0")):
        if name.endswith(".snapshot"):               # and no snapshot: the whole log is replayed
            os.remove(os.path.join(tmp_path, "t-0", name))
    reopened = open_partition(tmp_path, segment_bytes=250)
    assert txnindex_files(reopened) == expected
    assert reopened.last_stable_offset() == 5
    assert reopened.producers.producers[A].current_txn_first_offset == 5
    Producers(reopened).end(A, commit=True, coordinator_epoch=7)
    assert reopened.last_stable_offset() == reopened.high_watermark()
    reopened.close()


def test_a_clean_restart_keeps_the_open_transaction_from_the_snapshot_and_the_index_as_written(tmp_path):
    partition = open_partition(tmp_path)
    producers = Producers(partition)
    producers.send(A)
    producers.end(A, commit=False)
    producers.send(B)                                # open at 2
    expected = txnindex_files(partition)
    partition.close()
    reopened = open_partition(tmp_path)
    assert txnindex_files(reopened) == expected
    assert reopened.last_stable_offset() == 2
    assert reopened.producers.producers[B].current_txn_first_offset == 2
    reopened.close()


def test_retention_takes_the_txnindex_with_its_segment(tmp_path):
    partition = open_partition(tmp_path, segment_bytes=200)
    producers = Producers(partition)
    producers.send(A)
    producers.end(A, commit=False)
    producers.send(C, txn=False, count=3)
    path = partition.log.segments[0].txn_index.path
    assert os.path.exists(path)
    renamed = partition.log.retire_oldest_segments(1)
    assert path + ".deleted" in renamed and not os.path.exists(path)
    partition.close()
    shutil.rmtree(tmp_path / "t-0")


def test_a_flush_syncs_the_txnindex_with_its_segment(tmp_path, monkeypatch):
    """No recovery rebuilds the entries below the snapshot it starts from, so a flush (at a roll,
    at close) makes the .txnindex durable as Kafka's LogSegment.flush does."""
    import kafkawire.storage.index as index_module
    partition = open_partition(tmp_path)
    producers = Producers(partition)
    producers.send(A)
    producers.end(A, commit=False)
    synced = []
    real = index_module.fsync_and_close

    def spy(fds):
        synced.extend(os.readlink(f"/proc/self/fd/{fd}") for fd in fds)
        real(fds)
    monkeypatch.setattr("kafkawire.storage.flush_stats.fsync_and_close", spy)   # what Log.flush calls, timed
    partition.log.flush()
    assert partition.log.segments[0].txn_index.path in synced
    partition.close()
