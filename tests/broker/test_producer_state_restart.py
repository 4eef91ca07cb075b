"""A partition's producer state survives a restart (kafkawire.broker.partition with
kafkawire.broker.producer_snapshots), as Kafka's UnifiedLog rebuilds it: from the producer
snapshot written at close (Kafka's ``<offset>.snapshot`` format) or, after a crash, by replaying
the log; a retry of the last batch is still a duplicate answered with its original offset.
In process, on a temporary directory: no node."""
from __future__ import annotations

import os
import uuid

import pytest

from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.producer_snapshots import snapshot_offsets
from kafkawire.broker.validation import ProduceRefused, validate_produce
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch
from kafkawire.storage.producer_snapshot import read_producer_snapshot

TOPIC_ID = uuid.UUID(int=7)
NOW = 1_800_000_000_000


def open_partition(tmp_path, **kw) -> LeaderPartition:
    return LeaderPartition.open(str(tmp_path), "t", 0, TOPIC_ID, leader_epoch=0, segment_bytes=kw.pop("segment_bytes", 1 << 20),
                                now_ms=NOW, **kw)


def produce(partition: LeaderPartition, seq: int, count: int = 1, *, pid: int = 42, epoch: int = 0):
    data = build_batch([(b"k", b"v%d" % (seq + i), [], NOW) for i in range(count)], producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq)
    validated = validate_produce(data, topic_partition=partition.name, max_message_bytes=1 << 20,
                                 log_append_time=False, now_ms=NOW)
    return partition.append(validated, now_ms=NOW)


def test_a_retry_after_a_clean_restart_is_found_in_the_snapshot_written_at_close(tmp_path):
    partition = open_partition(tmp_path)
    assert produce(partition, 0, 3) == (0, -1)
    assert produce(partition, 3, 2) == (3, -1)
    partition.close()
    directory = os.path.join(tmp_path, "t-0")
    assert snapshot_offsets(directory) == [5]
    with open(os.path.join(directory, "00000000000000000005.snapshot"), "rb") as f:
        (entry,) = read_producer_snapshot(f.read())
    assert (entry.producer_id, entry.producer_epoch, entry.first_sequence, entry.last_sequence, entry.last_offset) \
        == (42, 0, 3, 4, 4)
    reopened = open_partition(tmp_path)
    assert produce(reopened, 3, 2) == (3, NOW)          # the duplicate: original offset, its timestamp
    assert reopened.log.log_end_offset == 5
    with pytest.raises(ProduceRefused) as gap:
        produce(reopened, 9)
    assert gap.value.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(reopened, 5) == (5, -1)
    reopened.close()


def test_after_a_crash_the_state_is_replayed_from_the_log_with_the_last_five_batches(tmp_path):
    partition = open_partition(tmp_path)
    for seq in range(6):
        produce(partition, seq)
    partition.log.flush()
    partition.log.close()                # no producer snapshot: as after kill -9
    assert snapshot_offsets(os.path.join(tmp_path, "t-0")) == []
    reopened = open_partition(tmp_path)
    assert produce(reopened, 1) == (1, NOW)           # one of the last five batches, replayed
    with pytest.raises(ProduceRefused):
        produce(reopened, 0)                          # the sixth back is forgotten
    assert snapshot_offsets(os.path.join(tmp_path, "t-0")) == [6]     # written after the replay, as Kafka does
    reopened.close()


def test_a_snapshot_beyond_the_log_end_is_deleted_and_a_corrupt_one_skipped(tmp_path):
    partition = open_partition(tmp_path)
    produce(partition, 0)
    partition.close()
    directory = os.path.join(tmp_path, "t-0")
    with open(os.path.join(directory, "00000000000000000009.snapshot"), "wb") as f:
        f.write(b"\x00\x01garbage")                  # above the log end: a tail recovery cut
    with open(os.path.join(directory, "00000000000000000001.snapshot"), "r+b") as f:
        f.seek(12)
        f.write(b"\xff")                             # corrupt: CRC mismatch, the log is replayed instead
    reopened = open_partition(tmp_path)
    assert produce(reopened, 0) == (0, NOW)
    assert snapshot_offsets(directory) == [1]
    reopened.close()


def test_a_segment_roll_writes_a_snapshot_at_the_new_segments_base(tmp_path):
    partition = open_partition(tmp_path, segment_bytes=200)
    offsets = [produce(partition, seq, 2)[0] for seq in range(0, 8, 2)]
    directory = os.path.join(tmp_path, "t-0")
    bases = [s.base_offset for s in partition.log.segments][1:]
    assert bases and set(bases) <= set(snapshot_offsets(directory)) and offsets == [0, 2, 4, 6]
    partition.close()
