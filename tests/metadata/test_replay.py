"""Replaying snapshots and logs: metadata transactions (KIP-868, MetadataBatchLoader), provenance,
raft state from control records, and problems reported with file, batch position and offset."""
from __future__ import annotations

from kafkawire.metadata.replay import Replay, replay_directory, replay_files, replay_snapshot
from kafkawire.storage import SnapshotId, SnapshotWriter

from .image_testlib import TOPIC_A, TOPIC_B, TS, LogWriter, record, value


def topic(name, tid):
    return record("TopicRecord", name=name, topic_id=tid)


def test_committed_transaction_applies_at_end(tmp_path):
    log = (LogWriter().leader(1, 1)
           .add(record("BeginTransactionRecord", name="Bootstrap records"),
                record("FeatureLevelRecord", name="metadata.version", feature_level=19))
           .add(topic("a", TOPIC_A), record("EndTransactionRecord"))
           .add(topic("b", TOPIC_B)))
    replay = replay_files(logs=[log.write(tmp_path)])
    assert replay.problems == []
    assert sorted(replay.image.topics_by_name) == ["a", "b"]
    assert replay.image.metadata_version == 19
    assert replay.image.provenance.offset == 5
    assert replay.pending_transaction is None


def test_aborted_transaction_is_dropped(tmp_path):
    log = (LogWriter()
           .add(topic("before", TOPIC_B), record("BeginTransactionRecord", name="t"))
           .add(topic("a", TOPIC_A), record("FeatureLevelRecord", name="metadata.version", feature_level=21))
           .add(record("AbortTransactionRecord"))
           .add(record("NoOpRecord")))
    replay = replay_files(logs=[log.write(tmp_path)])
    assert replay.problems == []
    assert sorted(replay.image.topics_by_name) == ["before"]
    assert replay.image.metadata_version is None
    assert replay.aborted_transactions == 1
    assert replay.image.provenance.offset == 5


def test_open_transaction_is_not_applied_and_is_reported(tmp_path):
    log = (LogWriter()
           .add(topic("before", TOPIC_B))
           .add(record("NoOpRecord"), record("BeginTransactionRecord", name="big"), topic("a", TOPIC_A)))
    path = log.write(tmp_path)
    replay = replay_files(logs=[path])
    assert sorted(replay.image.topics_by_name) == ["before"]
    assert replay.pending_transaction.name == "big" and replay.pending_transaction.offset == 2
    # Kafka publishes what precedes the Begin, then nothing until the transaction ends.
    assert replay.image.provenance.offset == 1
    assert [(p.file, p.offset) for p in replay.problems] == [(str(path), 2)]
    assert "never ended" in replay.problems[0].message


def test_transaction_markers_out_of_place(tmp_path):
    log = (LogWriter()
           .add(record("EndTransactionRecord"))
           .add(record("BeginTransactionRecord", name="x"), record("BeginTransactionRecord", name="y"))
           .add(record("EndTransactionRecord"), record("AbortTransactionRecord")))
    replay = replay_files(logs=[log.write(tmp_path)])
    messages = [p.message for p in replay.problems]
    assert "Encountered EndTransactionRecord without having seen a BeginTransactionRecord" in messages[0]
    assert "Encountered BeginTransactionRecord while already in a transaction" in messages[1]
    assert "Encountered AbortTransactionRecord without having seen a BeginTransactionRecord" in messages[2]
    assert [p.offset for p in replay.problems] == [0, 2, 4]


def test_refused_records_and_unknown_types_are_reported_not_skipped(tmp_path):
    unknown = bytes([1, 99, 0, 0])     # frame version 1, apiKey 99
    bad_version = bytearray(value(topic("x", TOPIC_A)))
    bad_version[2] = 7
    log = (LogWriter()
           .add(record("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_A, leader=1))
           .add(unknown, bytes(bad_version))
           .add(topic("ok", TOPIC_B)))
    path = log.write(tmp_path)
    replay = replay_files(logs=[path])
    assert sorted(replay.image.topics_by_name) == ["ok"]
    second_batch = len(log.parts[0])
    found = [(p.position, p.offset) for p in replay.problems]
    assert found == [(0, 0), (second_batch, 1), (second_batch, 2)]
    assert "does not exist" in replay.problems[0].message
    assert "unknown metadata record type 99" in replay.problems[1].message
    assert "TopicRecord version 7" in replay.problems[2].message
    assert str(path) in str(replay.problems[1]) and f"batch at byte {second_batch}" in str(replay.problems[1])


def test_corrupt_and_torn_batches(tmp_path):
    log = LogWriter().add(topic("a", TOPIC_A)).add(topic("b", TOPIC_B)).add(record("NoOpRecord"))
    data = bytearray(log.bytes())
    second = len(log.parts[0])
    data[second + 17] ^= 0xFF          # CRC of batch 2
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    replay = replay_files(logs=[path])
    assert sorted(replay.image.topics_by_name) == ["a"]
    # The batch's own position (as dump-log reports it), not its CRC field's (second + 17).
    assert replay.problems[0].position == second and "CRC" in replay.problems[0].message
    assert f"batch at byte {second}:" in str(replay.problems[0])
    third = second + len(log.parts[1])
    data[second + 17] ^= 0xFF          # batch 2 whole again, batch 3's CRC flipped, read from
    data[third + 17] ^= 0xFF           # offset 2 on: batches 1 and 2 are skipped, 3 is reported
    path.write_bytes(bytes(data))
    skipping = Replay()
    skipping.load_log(path, start_offset=2)
    assert [p.position for p in skipping.problems] == [third] and "CRC" in skipping.problems[0].message
    path.write_bytes(log.bytes()[:-5])
    replay = replay_files(logs=[path])
    assert sorted(replay.image.topics_by_name) == ["a", "b"]
    assert replay.problems[0].position == second + len(log.parts[1]) and "ends inside a batch" in replay.problems[0].message


def test_raft_state_from_control_records(tmp_path):
    log = LogWriter().leader(1, 1).add(record("NoOpRecord")).leader(2, 3).add(record("NoOpRecord"))
    replay = replay_files(logs=[log.write(tmp_path)])
    assert (replay.raft.leader_id, replay.raft.leader_epoch, replay.raft.leader_changes) == (2, 3, 2)
    assert replay.image.provenance.epoch == 3 and replay.image.provenance.offset == 3
    assert replay.raft.kraft_version is None


def write_snapshot(directory, snapshot_id, messages_, *, ts=TS):
    with SnapshotWriter(directory, snapshot_id, last_contained_log_timestamp=ts, time_ms=lambda: ts) as w:
        w.append([value(m) for m in messages_], timestamp=ts)
    return directory / f"{snapshot_id}.checkpoint"


def test_snapshot_then_log(tmp_path):
    snapshot = write_snapshot(tmp_path, SnapshotId(3, 2), [topic("from-snapshot", TOPIC_A),
                                                           record("FeatureLevelRecord", name="metadata.version",
                                                                  feature_level=14)])
    only_snapshot = replay_snapshot(snapshot)
    assert sorted(only_snapshot.image.topics_by_name) == ["from-snapshot"]
    assert only_snapshot.image.provenance.offset == 2 and only_snapshot.image.provenance.epoch == 2
    assert only_snapshot.image.provenance.time_ms == TS
    # a log whose first three records the snapshot already holds
    log = (LogWriter(epoch=2)
           .add(topic("old-1", TOPIC_B), topic("old-2", TOPIC_B))
           .add(record("RemoveTopicRecord", topic_id=TOPIC_B), topic("new", TOPIC_B)))
    log.write(tmp_path)
    replay = replay_directory(tmp_path)
    assert replay.problems == []
    assert sorted(replay.image.topics_by_name) == ["from-snapshot", "new"]
    assert replay.image.metadata_version == 14
    assert replay.image.provenance.offset == 3


def test_directory_gap_is_reported(tmp_path):
    write_snapshot(tmp_path, SnapshotId(2, 1), [topic("a", TOPIC_A)])
    LogWriter(start=5).add(topic("b", TOPIC_B)).write(tmp_path, "00000000000000000005.log")
    replay = replay_directory(tmp_path)
    assert any("records 2-4 are missing" in p.message for p in replay.problems)


def test_replay_is_deterministic(tmp_path):
    log = LogWriter().add(topic("a", TOPIC_A), topic("b", TOPIC_B)).add(record("NoOpRecord"))
    path = log.write(tmp_path)
    from kafkawire.metadata.image_tree import root_node
    from kafkawire.metadata.shell import Shell
    outputs = {Shell(root_node(replay_files(logs=[path])), interactive=False).run(["tree", "/image"]).output
               for _ in range(3)}
    assert len(outputs) == 1
