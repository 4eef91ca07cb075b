"""DiskLogStore: the raft core's log on disk in Kafka's layout, and the quorum-state file."""
import json
import os
import uuid

import pytest

from kafkawire.records import RecordBatchBuilder, iter_batches
from kafkawire.storage.snapshot import SnapshotBuilder, SnapshotId
from kafkawire.storage.state_files import format_quorum_state, parse_quorum_state
from kafkawire.raft.io import Append, DeleteBefore, InstallSnapshot, TruncateFully, TruncateTo, WriteSnapshotChunk
from kafkawire.raft.node.disk_store import DiskLogStore, StoreError
from kafkawire.raft.node.quorum_state_file import election_from_quorum_state, election_to_quorum_state
from kafkawire.raft.types import ElectionState, OffsetAndEpoch, ReplicaKey


def batch(base: int, count: int, epoch: int) -> Append:
    b = RecordBatchBuilder(base_offset=base, partition_leader_epoch=epoch)
    for i in range(count):
        b.append(None, f"v{base + i}".encode(), (), 1000 + base + i)
    return Append(b.build(), base, base + count - 1, epoch)


def offsets(store: DiskLogStore) -> list[int]:
    return [r.offset for b in iter_batches(store.read(store.start_offset(), 1 << 20)) for r in b]


def test_appends_survive_reopen_with_epochs_rebuilt_from_batches(tmp_path):
    store = DiskLogStore(tmp_path / "__cluster_metadata-0")
    for op in (batch(0, 3, 1), batch(3, 2, 1), batch(5, 4, 3)):
        store.apply(op)
    store.flush()
    store.close()
    again = DiskLogStore(tmp_path / "__cluster_metadata-0")
    assert again.end_offset() == 9
    assert again.epoch_entries() == [(1, 0), (3, 5)]
    assert offsets(again) == list(range(9))
    # Kafka's leader-epoch-checkpoint: version 0, the count, then "epoch start" lines.
    text = (tmp_path / "__cluster_metadata-0" / "leader-epoch-checkpoint").read_text()
    assert text == "0\n2\n1 0\n3 5\n"


def test_truncate_to_drops_records_and_epochs(tmp_path):
    store = DiskLogStore(tmp_path / "p")
    for op in (batch(0, 3, 1), batch(3, 2, 2), batch(5, 1, 4)):
        store.apply(op)
    store.apply(TruncateTo(3))
    assert store.end_offset() == 3
    assert store.epoch_entries() == [(1, 0)]
    store.apply(batch(3, 1, 5))
    assert store.epoch_entries() == [(1, 0), (5, 3)]


def test_append_at_wrong_offset_is_refused(tmp_path):
    store = DiskLogStore(tmp_path / "p")
    store.apply(batch(0, 2, 1))
    with pytest.raises(StoreError, match="append at offset 5 but the log ends at 2"):
        store.apply(batch(5, 1, 1))


def test_snapshot_install_through_part_file_restarts_the_log(tmp_path):
    store = DiskLogStore(tmp_path / "p")
    store.apply(batch(0, 4, 1))
    sid = OffsetAndEpoch(2, 10)
    data = SnapshotBuilder(SnapshotId(10, 2), last_contained_log_timestamp=5).finish()
    store.apply(WriteSnapshotChunk(sid, 0, data[:50]))
    assert (tmp_path / "p" / "00000000000000000010-0000000002.checkpoint.part").exists()
    store.apply(WriteSnapshotChunk(sid, 50, data[50:]))
    store.apply(InstallSnapshot(sid))
    assert not (tmp_path / "p" / "00000000000000000010-0000000002.checkpoint.part").exists()
    assert store.snapshot_ids() == [sid]
    assert store.read_snapshot(sid, 0, 1 << 20) == data
    assert (store.start_offset(), store.end_offset()) == (10, 10)
    store.apply(batch(10, 2, 3))
    store.flush()
    store.close()
    again = DiskLogStore(tmp_path / "p")
    assert again.snapshot_ids() == [sid]
    assert (again.start_offset(), again.end_offset()) == (10, 12)


def test_a_split_install_says_installed_at_once_and_cuts_the_log_only_in_its_disk_half(tmp_path):
    """prepare_install (the loop's half) makes the store read as installed without touching the
    disk; until its returned function (the disk thread's half) runs, the log is whole on disk
    and the snapshot only a .part file, so a crash then restarts from the old log; a log
    operation before finish_install is refused rather than raced with the disk thread."""
    store = DiskLogStore(tmp_path / "p")
    store.apply(batch(0, 4, 1))
    store.flush()
    sid = OffsetAndEpoch(2, 10)
    data = SnapshotBuilder(SnapshotId(10, 2), last_contained_log_timestamp=5).finish()
    store.prepare_chunk(WriteSnapshotChunk(sid, 0, data[:50]))()
    store.prepare_chunk(WriteSnapshotChunk(sid, 50, data[50:]))()
    with pytest.raises(StoreError, match="chunk at byte 7, but"):
        store.prepare_chunk(WriteSnapshotChunk(sid, 7, b"x"))
    install = store.prepare_install(sid)
    assert (store.start_offset(), store.end_offset(), store.epoch_entries(), store.snapshot_ids()) == (10, 10, [], [sid])
    assert store.snapshot_size(sid) == len(data) and store.read_snapshot(sid, 0, 1 << 20) == data
    assert store.read(0, 1 << 20) == b""
    with pytest.raises(StoreError, match="while the install of snapshot"):
        store.apply(batch(10, 1, 3))
    crashed = DiskLogStore(tmp_path / "p")          # what a crash now would find: the old log
    assert (crashed.start_offset(), crashed.end_offset(), crashed.snapshot_ids()) == (0, 4, [])
    crashed.close()
    (tmp_path / "p" / "00000000000000000010-0000000002.checkpoint.part").write_bytes(data)   # reopening removed it
    install()
    store.finish_install()
    store.apply(batch(10, 2, 3))
    store.flush()
    store.close()
    again = DiskLogStore(tmp_path / "p")
    assert again.snapshot_ids() == [sid] and again.read_snapshot(sid, 0, 1 << 20) == data
    assert (again.start_offset(), again.end_offset()) == (10, 12)


def test_partial_snapshot_left_by_a_crash_is_removed_on_open(tmp_path):
    store = DiskLogStore(tmp_path / "p")
    store.apply(WriteSnapshotChunk(OffsetAndEpoch(1, 5), 0, b"half"))
    store.close()
    DiskLogStore(tmp_path / "p")
    assert not any(n.endswith(".part") for n in os.listdir(tmp_path / "p"))


def test_truncate_fully_and_delete_before(tmp_path):
    store = DiskLogStore(tmp_path / "p", segment_bytes=200)
    for i in range(6):
        store.apply(batch(i * 2, 2, 1))
    assert len(store.log.segments) > 1
    store.apply(DeleteBefore(6, OffsetAndEpoch(1, 6)))
    assert store.start_offset() == 6
    assert store.epoch_entries() == [(1, 6)]
    store.apply(TruncateFully(40))
    assert (store.start_offset(), store.end_offset(), store.epoch_entries()) == (40, 40, [])


def test_out_of_order_epochs_on_disk_are_cut_and_reported(tmp_path, caplog):
    store = DiskLogStore(tmp_path / "p")
    store.apply(batch(0, 1, 5))
    store.log.append(batch(1, 1, 2).batch)      # bypass the store's check: what a bad disk holds
    store.flush()
    store.close()
    again = DiskLogStore(tmp_path / "p")
    assert again.end_offset() == 1 and again.epoch_entries() == [(5, 0)]
    assert "offset 1 has leader epoch 2, below the epoch 5" in caplog.text and "cut" in caplog.text


@pytest.mark.parametrize("active", [True, False])
def test_a_flipped_base_offset_is_cut_and_reported(tmp_path, caplog, active):
    """One bit of a batch's base offset (outside the CRC) flipped on a stopped voter's disk,
    19 -> 65555, in the active segment (recovered on open) or an older one (not recovered:
    the epoch scan finds it). The log keeps what is before it, and says so."""
    directory = tmp_path / "__cluster_metadata-0"
    store = DiskLogStore(directory, segment_bytes=1 << 20 if active else 300)
    for base in range(0, 40, 3):
        store.apply(batch(base, 3, 1 + base // 20))
    store.flush()
    segments = sorted(n for n in os.listdir(directory) if n.endswith(".log"))
    store.close()
    assert active or len(segments) > 2
    target = None
    for name in segments:
        data = bytearray((directory / name).read_bytes())
        for b in iter_batches(bytes(data)):
            if b.base_offset == 18:
                target, position = name, b.position
    assert active == (target == segments[-1])
    data = bytearray((directory / target).read_bytes())
    data[position + 5] ^= 0x01            # base offset 18 -> 18 + 65536
    (directory / target).write_bytes(data)
    again = DiskLogStore(directory, segment_bytes=1 << 20 if active else 300)
    assert again.end_offset() == 18
    assert [r.offset for b in again.data_batches(0, 18) for r in b] == list(range(18))
    assert again.epoch_entries() == [(1, 0)]
    assert "log recovery cut" in caplog.text and ("65554" in caplog.text or "do not follow" in caplog.text)


# --- quorum-state -----------------------------------------------------------------------------------------

def test_quorum_state_v1_has_the_voted_directory_id_and_no_voters(tmp_path):
    directory = uuid.UUID("b9f00a5e-2b5f-4b1b-9c3c-2d8b8c1f6a10")
    store = DiskLogStore(tmp_path / "p")
    store.write_election(ElectionState(7, None, ReplicaKey(2, directory)), kraft_version=1)
    text = (tmp_path / "p" / "quorum-state").read_text()
    # Kafka's FileQuorumStateStore: the JSON of QuorumStateData v1 plus data_version.
    assert json.loads(text) == {"leaderId": -1, "leaderEpoch": 7, "votedId": 2,
                                "votedDirectoryId": "ufAKXitfSxucPC2LjB9qEA", "data_version": 1}
    assert store.read_election() == ElectionState(7, None, ReplicaKey(2, directory))


def test_quorum_state_v0_lists_the_static_voters():
    election = ElectionState(3, 1, None, frozenset({3, 1, 2}))
    data, version = election_to_quorum_state(election, kraft_version=0)
    text = format_quorum_state(data, version)
    assert text == ('{"clusterId":"","leaderId":1,"leaderEpoch":3,"votedId":-1,"appliedOffset":0,'
                    '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}')
    parsed, v = parse_quorum_state(text)
    assert v == 0 and election_from_quorum_state(parsed) == election


def test_a_kafka_written_quorum_state_reads(tmp_path):
    # As Kafka 3.9 writes it for a follower that voted for node 1 (kraft.version 0).
    text = ('{"clusterId":"","leaderId":1,"leaderEpoch":12,"votedId":1,"appliedOffset":0,'
            '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}')
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "quorum-state").write_text(text)
    store = DiskLogStore(tmp_path / "p")
    assert store.read_election() == ElectionState(12, 1, ReplicaKey(1), frozenset({1, 2, 3}))


def test_a_corrupt_quorum_state_names_the_file(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "quorum-state").write_text('{"leaderId": 1')
    store = DiskLogStore(tmp_path / "p")
    with pytest.raises(StoreError, match="quorum-state"):
        store.read_election()


def test_every_real_kafka_quorum_state_round_trips_byte_for_byte():
    from tests.conftest import SHARED, require
    root = require(SHARED / "reference")
    files = sorted(root.rglob("quorum-state"))
    if not files:
        pytest.skip(f"no quorum-state files under {root}")
    quorum_states_round_trip(files)


def quorum_states_round_trip(files) -> None:
    """Each quorum-state Kafka wrote, read into an ElectionState and written back, is its text
    (tests/interop/test_held_out_claims_on_kafka_data.py runs it on one Kafka wrote in the run)."""
    for path in files:
        text = path.read_text()
        data, version = parse_quorum_state(text, file=path)
        election = election_from_quorum_state(data)
        voters_written = version == 0
        again, again_version = election_to_quorum_state(election, kraft_version=0 if voters_written else 1)
        assert again_version == version, path
        if version == 0 and data.cluster_id:
            continue    # Kafka 3.x before 3.4 wrote the cluster id; ElectionState drops it
        assert format_quorum_state(again, again_version) == text, path


# --- the driver never stops applying silently ----------------------------------------------------------

class _Applier:
    """The parts of RaftDriver that _apply_committed uses, over a real store."""

    def __init__(self, store):
        self.store, self.applied_offset, self._bytes_since_snapshot, self.seen = store, 0, 0, []
        self.state_machine, self.listeners = None, [self]

    def _all_listeners(self):
        return self.listeners

    def on_committed(self, base_offset, epoch, max_timestamp, values):
        self.seen.append(base_offset)


def test_a_gap_in_the_committed_log_stops_the_driver_with_the_offsets_named(tmp_path):
    from kafkawire.raft.node.driver import RaftDriver
    from kafkawire.raft.contract import NodeFailed
    store = DiskLogStore(tmp_path / "p")
    store.apply(batch(0, 3, 1))
    store.log.append(batch(10, 2, 1).batch)     # bypass the store's check: what a bad disk holds
    applier = _Applier(store)
    RaftDriver._apply_committed(applier, 3)
    assert applier.seen == [0] and applier.applied_offset == 3
    with pytest.raises(NodeFailed, match="the batch after offset 2 starts at 10"):
        RaftDriver._apply_committed(applier, 12)
    assert applier.applied_offset == 3


def segment_bytes_on_disk(store: DiskLogStore) -> bytes:
    with open(store.log.active_segment.log_path, "rb") as f:
        return f.read()


def test_appends_are_written_by_the_flush_and_a_read_before_it_still_sees_them(tmp_path):
    # No tail cache: every read goes to the segment file, which the appends have not reached.
    store = DiskLogStore(tmp_path / "p", tail_cache_bytes=0)
    ops = [batch(0, 3, 1), batch(3, 2, 1), batch(5, 4, 2)]
    store.apply(ops[0])
    store.apply(ops[1])
    assert segment_bytes_on_disk(store) == b""       # deferred to the disk thread's flush
    sync = store.prepare_flush()                     # handed to the disk thread, not run yet
    store.apply(ops[2])
    assert offsets(store) == list(range(9))
    assert [r.offset for b in store.data_batches(4, 9) for r in b] == list(range(3, 9))
    sync()
    assert segment_bytes_on_disk(store) == b"".join(op.batch for op in ops)
    store.close()
    assert offsets(DiskLogStore(tmp_path / "p")) == list(range(9))


def test_a_truncation_before_the_disk_thread_writes_is_not_undone_by_its_write(tmp_path):
    store = DiskLogStore(tmp_path / "p", tail_cache_bytes=0)
    for op in (batch(0, 3, 1), batch(3, 2, 1), batch(5, 4, 2)):
        store.apply(op)
    sync = store.prepare_flush()
    store.apply(TruncateTo(3))
    sync()
    assert segment_bytes_on_disk(store) == batch(0, 3, 1).batch
    store.close()
    assert DiskLogStore(tmp_path / "p").end_offset() == 3


def test_a_failed_write_is_raised_by_the_flush_and_stays_unwritten(tmp_path, monkeypatch):
    store = DiskLogStore(tmp_path / "p", tail_cache_bytes=0)
    store.apply(batch(0, 3, 1))
    sync = store.prepare_flush()

    def refuse(fd, data, position):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr("kafkawire.storage.segment.os.pwrite", refuse)
    with pytest.raises(OSError, match="Input/output error"):
        sync()          # on the driver's disk thread this stops the node (_disk_work_succeeded)
    monkeypatch.undo()
    assert offsets(store) == [0, 1, 2]       # a read writes it first, on its own thread
    store.close()
