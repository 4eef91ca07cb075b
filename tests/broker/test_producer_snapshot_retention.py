"""Producer snapshots (``<offset>.snapshot``) go with the segments retention deletes, as Kafka's
UnifiedLog.deleteSegments removes them (ProducerStateManager.removeAndMarkSnapshotForDeletion of
each deleted segment's base offset): renamed ``.deleted`` with the segment's files and removed
``file.delete.delay.ms`` later; the snapshot at the first segment left stays, and so does one at
an offset that is no segment's base. Moving the log start alone (DeleteRecords) deletes none, as
onLogStartOffsetIncremented. At load, stray snapshots (at no segment's base) are deleted but for
the newest when it is in the last segment (ProducerStateManager.removeStraySnapshots). In
process with a fake clock (no node)."""
from __future__ import annotations

import os

from kafkawire.broker.producer_snapshots import snapshot_offsets, stray_snapshots
from kafkawire.broker.validation import validate_produce
from kafkawire.records.builder import build_batch

from .test_log_retention import HOUR, NOW, FakeBroker

SEGMENT_BYTES = 100          # one small batch a segment: each append rolls, and each roll snapshots


def produce(partition, seq: int, timestamp: int) -> int:
    data = build_batch([(b"k", b"v", [], timestamp)], producer_id=42, producer_epoch=0, base_sequence=seq)
    validated = validate_produce(data, topic_partition=partition.name, max_message_bytes=1 << 20,
                                 log_append_time=False, now_ms=NOW)
    return partition.append(validated, now_ms=NOW)[0]


def rolled_log(tmp_path, timestamps, **keys):
    broker = FakeBroker(tmp_path, log_segment_bytes=SEGMENT_BYTES, log_segment_delete_delay_ms=60_000, **keys)
    partition = broker.open("t")
    for seq, timestamp in enumerate(timestamps):
        produce(partition, seq, timestamp)
    return broker, partition


def deleted_names(partition) -> list[str]:
    return sorted(n for n in os.listdir(partition.log.directory) if n.endswith(".snapshot.deleted"))


def test_retention_deletes_the_snapshots_at_the_deleted_segments_base_offsets(tmp_path):
    broker, p = rolled_log(tmp_path, [NOW - 3 * HOUR, NOW - 2 * HOUR, NOW - HOUR // 2, NOW], log_retention_hours=1)
    assert [s.base_offset for s in p.log.segments] == [0, 1, 2, 3]
    assert snapshot_offsets(p.log.directory) == [1, 2, 3]
    assert broker.log_manager.cleanup_logs() == 2             # segments 0 and 1 expired
    assert p.log.log_start_offset == 2
    assert snapshot_offsets(p.log.directory) == [2, 3]         # the first segment left keeps its snapshot
    assert deleted_names(p) == ["00000000000000000001.snapshot.deleted"]
    broker.now[0] += 59_999
    broker.log_manager.delete_due_files()
    assert deleted_names(p) == ["00000000000000000001.snapshot.deleted"]
    broker.now[0] += 1
    broker.log_manager.delete_due_files()
    assert deleted_names(p) == []
    assert produce(p, 4, NOW) == 4                             # the producer is still known: in sequence
    broker.close()


def test_a_snapshot_at_no_segments_base_stays_until_the_next_load_drops_it(tmp_path):
    """The snapshot of a clean stop (at the log end, inside the active segment after more appends)
    is not a deleted segment's: it stays; the next load drops it once it is at or below the log
    start (ProducerStateManager.truncateAndReload)."""
    broker = FakeBroker(tmp_path, log_segment_delete_delay_ms=0, log_retention_hours=1)
    p = broker.open("t")
    produce(p, 0, NOW - 3 * HOUR)
    broker.close()                                              # snapshot at 1
    broker = FakeBroker(tmp_path, log_segment_bytes=2 * 70 + 1, log_segment_delete_delay_ms=0, log_retention_hours=1)
    p = broker.open("t")
    produce(p, 1, NOW - 3 * HOUR)                               # offset 1, still in segment 0
    produce(p, 2, NOW)                                          # rolls at 2: snapshot 2
    assert [s.base_offset for s in p.log.segments] == [0, 2]
    assert snapshot_offsets(p.log.directory) == [1, 2]
    assert broker.log_manager.cleanup_logs() == 1              # segment 0 (offsets 0-1) expired
    assert snapshot_offsets(p.log.directory) == [1, 2]
    broker.log_manager.delete_due_files()
    broker.close()
    again = FakeBroker(tmp_path, log_segment_bytes=SEGMENT_BYTES)
    p = again.open("t")
    assert p.log.log_start_offset == 2
    assert snapshot_offsets(p.log.directory) == [3]             # 1 and 2 at or below the start; 3 from the stop
    again.close()


def test_when_every_segment_expires_the_roll_snapshots_the_new_segment_and_the_old_ones_go(tmp_path):
    """UnifiedLog.roll takes a snapshot at the new active segment's base before the old ones are deleted."""
    broker, p = rolled_log(tmp_path, [NOW - 3 * HOUR, NOW - 2 * HOUR], log_retention_hours=1)
    assert snapshot_offsets(p.log.directory) == [1]
    assert broker.log_manager.cleanup_logs() == 2
    assert [s.base_offset for s in p.log.segments] == [2] and p.log.log_start_offset == 2
    assert snapshot_offsets(p.log.directory) == [2]
    assert deleted_names(p) == ["00000000000000000001.snapshot.deleted"]
    broker.close()


def test_moving_the_log_start_alone_deletes_no_snapshot(tmp_path):
    broker, p = rolled_log(tmp_path, [NOW, NOW, NOW])
    p.log.log_start_offset = 2                                  # as DeleteRecords leaves it
    assert snapshot_offsets(p.log.directory) == [1, 2]
    assert broker.log_manager.cleanup_logs() == 2             # the start offset pass: segments 0 and 1
    assert snapshot_offsets(p.log.directory) == [2]
    assert deleted_names(p) == ["00000000000000000001.snapshot.deleted"]
    broker.close()


def test_the_stray_snapshots_a_load_deletes_are_those_at_no_segments_base_but_the_newest_in_the_last_segment():
    """ProducerStateManager.removeStraySnapshots's rule."""
    assert stray_snapshots([1, 2, 3], [0, 2]) == [1]                # 3: the clean stop's, in the last segment
    assert stray_snapshots([1, 2, 5, 7], [0, 2, 5]) == [1]
    assert stray_snapshots([1, 3], [0, 2, 5]) == [1, 3]             # the newest stray below the last segment goes too
    assert stray_snapshots([0, 2, 5], [0, 2, 5]) == []
    assert stray_snapshots([4, 9], []) == [4]


def test_a_load_deletes_an_older_clean_stops_snapshot_inside_a_segment(tmp_path):
    broker = FakeBroker(tmp_path)
    produce(broker.open("t"), 0, NOW)
    broker.close()                                              # snapshot at 1, inside segment 0
    broker = FakeBroker(tmp_path, log_segment_bytes=2 * 70 + 1)
    p = broker.open("t")
    produce(p, 1, NOW)
    produce(p, 2, NOW)                                          # rolls at 2: snapshot 2
    broker.close()                                              # snapshot at 3
    assert snapshot_offsets(p.log.directory) == [1, 2, 3]
    again = FakeBroker(tmp_path, log_segment_bytes=2 * 70 + 1)
    p = again.open("t")
    assert snapshot_offsets(p.log.directory) == [2, 3]          # 1: a stray below the last segment
    again.close()
