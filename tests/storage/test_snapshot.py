import os

import pytest

from kafkawire import messages
from kafkawire.records import ControlRecordType, build_batch, build_control_batch, iter_batches
from kafkawire.storage.snapshot import (BOOTSTRAP_SNAPSHOT_ID, SnapshotFormatError, SnapshotId,
                                        SnapshotReader, SnapshotWriter, is_bootstrap_file,
                                        list_snapshots, parse_snapshot_file_name,
                                        snapshot_file_name)
from tests.conftest import REFERENCE as SHARED_REFERENCE


def test_names():
    sid = SnapshotId(7255, 1)
    assert snapshot_file_name(sid) == "00000000000000007255-0000000001.checkpoint"
    assert parse_snapshot_file_name("/x/00000000000000007255-0000000001.checkpoint") == (sid, "checkpoint")
    assert parse_snapshot_file_name("00000000000000007255-0000000001.checkpoint.part") == (sid, "part")
    assert parse_snapshot_file_name("00000000000000007255-0000000001.checkpoint.deleted")[1] == "deleted"
    assert parse_snapshot_file_name("00000000000000000000.log") is None
    assert snapshot_file_name(BOOTSTRAP_SNAPSHOT_ID) == "00000000000000000000-0000000000.checkpoint"
    assert is_bootstrap_file("bootstrap.checkpoint")
    assert is_bootstrap_file("00000000000000000000-0000000000.checkpoint")
    assert not is_bootstrap_file("00000000000000000005-0000000001.checkpoint")


def test_write_freeze_read(tmp_path, monkeypatch):
    sid = SnapshotId(100, 3)
    synced, renames = [], []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (renames.append((a, b)), real_replace(a, b)))
    w = SnapshotWriter(tmp_path, sid, last_contained_log_timestamp=123456, time_ms=lambda: 999)
    assert os.path.basename(w.part_path) == "00000000000000000100-0000000003.checkpoint.part"
    w.append([b"\x01\x0c\x00a", b"\x01\x0c\x00b"])
    w.append([b"\x01\x0c\x00c"])
    assert list_snapshots(tmp_path) == []          # not visible before freeze
    path = w.freeze()
    assert renames == [(w.part_path, path)]
    assert synced == [w.part_path, str(tmp_path)]
    assert list_snapshots(tmp_path) == [sid]
    r = SnapshotReader(path)
    assert r.header.last_contained_log_timestamp == 123456 and r.footer.version == 0
    assert [bytes(x.value) for x in r.records()] == [b"\x01\x0c\x00a", b"\x01\x0c\x00b", b"\x01\x0c\x00c"]
    assert [x.offset for x in r.records()] == [1, 2, 3]
    assert {b.partition_leader_epoch for b in r.batches} == {3}
    assert [t for t, _ in r.control_records] == [ControlRecordType.SNAPSHOT_HEADER,
                                                 ControlRecordType.SNAPSHOT_FOOTER]


def test_same_bytes_as_a_real_kafka_snapshot(tmp_path):
    """Re-write a Kafka snapshot with our writer (same timestamps): identical bytes."""
    from pathlib import Path
    ref = SHARED_REFERENCE / "kraft-data"
    paths = sorted(ref.rglob("*-0000000001.checkpoint")) if ref.exists() else []
    if not paths:
        pytest.skip(f"reference snapshots not available under {ref}")
    assert rewritten_byte_for_byte(paths[:10], tmp_path)


def rewritten_byte_for_byte(paths, tmp_path) -> int:
    """Each Kafka snapshot of paths (header, records, footer) rewritten by SnapshotWriter with the
    file's timestamps is its bytes; returns how many were compared (tests/interop/
    test_held_out_claims_on_kafka_data.py runs it on snapshots Kafka wrote in the run). The
    header's batch carries the KRaftVersion and Voters records too when kraft.version is 1
    (Kafka 4.x formatted --standalone), as RecordsSnapshotWriter writes them."""
    checked = 0
    for src in paths:
        r = SnapshotReader(src)
        if any(len(b) == 0 for b in r.batches) or any(b.is_control for b in r.batches[1:-1]):
            continue
        stamps = iter([r.batches[0].max_timestamp, r.batches[-1].max_timestamp])
        sid, _ = parse_snapshot_file_name(src.name)
        with_header = [(rec.control_type, bytes(rec.value)) for rec in r.batches[0].records()[1:]]
        w = SnapshotWriter(tmp_path, sid, last_contained_log_timestamp=r.last_contained_log_timestamp,
                           control_records=with_header, time_ms=lambda: next(stamps))
        for b in r.batches[1:-1]:
            w.append_batch(bytes(b.raw))
        out = w.freeze()
        assert open(out, "rb").read() == src.read_bytes(), src
        os.remove(out)
        checked += 1
    return checked


def test_abort_removes_part(tmp_path):
    with pytest.raises(RuntimeError):
        with SnapshotWriter(tmp_path, SnapshotId(5, 1), last_contained_log_timestamp=0):
            raise RuntimeError("boom")
    assert os.listdir(tmp_path) == []


def _header(epoch=1):
    h = messages.by_name("SnapshotHeaderRecord")()
    h.last_contained_log_timestamp = 5
    return build_control_batch(ControlRecordType.SNAPSHOT_HEADER, h.encode(0),
                               partition_leader_epoch=epoch, timestamp=1)


def _footer(base, epoch=1):
    f = messages.by_name("SnapshotFooterRecord")()
    return build_control_batch(ControlRecordType.SNAPSHOT_FOOTER, f.encode(0), base_offset=base,
                               partition_leader_epoch=epoch, timestamp=1)


def test_framing_errors_name_file_and_position(tmp_path):
    data = build_batch([(None, b"x", (), 1)], base_offset=1, partition_leader_epoch=1)
    p = tmp_path / "00000000000000000002-0000000001.checkpoint"
    p.write_bytes(data + _footer(2))
    with pytest.raises(SnapshotFormatError, match=r"SnapshotHeader is missing \(at byte 0 in .*0001\.checkpoint\)"):
        SnapshotReader(p)
    p.write_bytes(_header() + data)
    with pytest.raises(SnapshotFormatError, match=f"SnapshotFooter is missing \\(at byte {len(_header())} "):
        SnapshotReader(p)
    p.write_bytes(_header())
    with pytest.raises(SnapshotFormatError, match="no SnapshotFooter"):
        SnapshotReader(p)
    p.write_bytes(_header() + data + _footer(2)[:-5])
    with pytest.raises(SnapshotFormatError, match="ends inside a batch"):
        SnapshotReader(p)
    p.write_bytes(b"")
    with pytest.raises(SnapshotFormatError, match="empty snapshot"):
        SnapshotReader(p)
    p.write_bytes(_header() + data + _footer(2))
    assert len(SnapshotReader(p)) == 1
