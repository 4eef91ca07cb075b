import os

import pytest

from kafkawire.records import build_batch, iter_batches
from kafkawire.storage import Log, OffsetOutOfRangeError


def batch(base=0, n=2, size=200, ts=1000):
    return build_batch([(None, b"x" * size, (), ts + i) for i in range(n)], base_offset=base)


def names(d):
    return sorted(n for n in os.listdir(d) if n.endswith(".log"))


def test_append_assigns_offsets_rolls_and_reads(tmp_path):
    log = Log(tmp_path, segment_bytes=2000)
    one = len(batch())
    firsts = [log.append(batch(), assign_offsets=True, leader_epoch=3) for _ in range(20)]
    assert firsts[0] == (0, 1) and firsts[-1] == (38, 39)
    assert log.log_end_offset == 40
    per_segment = 2000 // one
    assert len(log.segments) == -(-20 // per_segment)
    assert names(tmp_path)[1] == f"{2 * per_segment:020d}.log"
    assert all(s.size <= 2000 for s in log.segments)
    got = []
    offset = 0
    while offset < log.log_end_offset:
        r = log.read(offset, 700)
        bs = list(iter_batches(r.data))
        assert bs and bs[0].base_offset <= offset
        got += bs
        offset = bs[-1].next_offset
    assert [b.base_offset for b in got] == list(range(0, 40, 2))
    assert {b.partition_leader_epoch for b in got} == {3}
    assert log.read(40, 100).data == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read(41, 100)
    log.close()
    reopened = Log(tmp_path, segment_bytes=2000)
    assert reopened.log_end_offset == 40 and len(reopened.segments) == len(log.segments)
    assert not any(r.truncated for r in reopened.recovery_reports)


def test_append_with_offsets_set_as_raft_does(tmp_path):
    log = Log(tmp_path)
    log.append(batch(0, 3))
    with pytest.raises(ValueError, match="below the expected offset"):
        log.append(batch(2, 1))
    log.append(batch(3, 1) + batch(4, 2))
    assert log.log_end_offset == 6
    with pytest.raises(ValueError, match="ends inside a batch"):
        log.append(batch(6)[:-3])


@pytest.mark.parametrize("deferred", [False, True])
def test_stamped_appends_write_the_same_bytes_one_batch_or_several_and_leave_the_callers_alone(tmp_path, deferred):
    # One long batch is written from the caller's buffer with its header stamped apart; a short
    # one or several are copied and stamped: the files hold the same bytes, the input unchanged.
    batches = [batch(ts=1000 * i, size=40_000 if i != 1 else 200) for i in range(3)]
    one_by_one, together = Log(tmp_path / "one", deferred_writes=deferred), Log(tmp_path / "all", deferred_writes=deferred)
    for b in batches:
        view = memoryview(bytes(b))         # as a produce request's records: a read-only view
        assert one_by_one.append(view, assign_offsets=True, leader_epoch=5, crc_verified=True) == \
            (one_by_one.log_end_offset - 2, one_by_one.log_end_offset - 1)
        assert view == b
    whole = b"".join(batches)
    assert together.append(whole, assign_offsets=True, leader_epoch=5) == (0, 5)
    assert whole == b"".join(batches)
    for log in (one_by_one, together):
        log.flush()
    stored = [bytes(log.read(0, 1 << 20).data) for log in (one_by_one, together)]
    assert stored[0] == stored[1] and len(stored[0]) == len(whole)
    got = list(iter_batches(stored[0]))
    assert [(b.base_offset, b.partition_leader_epoch, b.is_valid) for b in got] == [(0, 5, True), (2, 5, True),
                                                                                    (4, 5, True)]


def test_truncate_across_segments_and_delete_before(tmp_path):
    log = Log(tmp_path, segment_bytes=1000)
    for _ in range(15):
        log.append(batch(), assign_offsets=True)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 4
    target = bases[2] + 1
    assert log.truncate_to(target)
    assert log.log_end_offset == bases[2]
    assert [s.base_offset for s in log.segments] == bases[:3]
    assert not log.truncate_to(10**6)
    log.append(batch(), assign_offsets=True)
    assert log.log_end_offset == bases[2] + 2
    deleted = log.delete_segments_before(bases[1] + 1)
    assert deleted == 1 and log.log_start_offset == bases[1] + 1
    assert [s.base_offset for s in log.segments] == bases[1:3]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    log.truncate_to(0)   # below the log start: start over at 0
    assert log.log_end_offset == 0 and names(tmp_path) == ["00000000000000000000.log"]


def test_open_recovers_torn_last_segment(tmp_path):
    log = Log(tmp_path, segment_bytes=1000)
    for _ in range(8):
        log.append(batch(), assign_offsets=True)
    leo = log.log_end_offset
    active = log.active_segment.log_path
    log.close()
    with open(active, "ab") as f:
        f.write(batch(leo)[:-1])
    log = Log(tmp_path, segment_bytes=1000)
    assert log.log_end_offset == leo
    [report] = [r for r in log.recovery_reports if r.truncated]
    assert report.file == active and "torn" in report.reason


def test_rebuilds_missing_index_of_older_segment(tmp_path):
    log = Log(tmp_path, segment_bytes=1000, index_interval_bytes=200)
    for _ in range(10):
        log.append(batch(), assign_offsets=True)
    first = log.segments[0]
    entries = list(first.offset_index)
    assert entries
    log.close()
    os.remove(first.index_path)
    log = Log(tmp_path, segment_bytes=1000, index_interval_bytes=200)
    assert list(log.segments[0].offset_index) == entries


def test_flush_fsyncs_dirty_segments_and_directory(tmp_path, monkeypatch):
    log = Log(tmp_path, segment_bytes=100_000)
    log.flush()
    for _ in range(3):
        log.append(batch(), assign_offsets=True)
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))
    log.flush()
    assert log.active_segment.log_path in synced
    assert str(tmp_path) not in synced     # no segment created or deleted since the last flush
    synced.clear()
    log.roll()
    assert any(p.endswith("00000000000000000000.log") for p in synced)  # a roll fsyncs the old one
    log.flush()
    assert str(tmp_path) in synced


def test_too_large_append_is_refused(tmp_path):
    log = Log(tmp_path, segment_bytes=300)
    with pytest.raises(ValueError, match="larger than the segment size"):
        log.append(batch(size=400))


def test_segment_ms_rolls_when_new_data_is_that_much_newer_than_the_first_batch(tmp_path):
    """Kafka's segment.ms (metadata.log.segment.ms): the gap between the active segment's first
    batch's max timestamp and the new batch's, not its size, rolls the segment."""
    log = Log(tmp_path, segment_ms=1000)
    log.append(batch(ts=10_000), assign_offsets=True)          # max timestamp 10_001
    log.append(batch(ts=10_900), assign_offsets=True)          # 10_901 - 10_001 = 900: stays
    log.append(batch(ts=11_000), assign_offsets=True)          # 1000: not more than segment.ms
    assert len(log.segments) == 1
    log.append(batch(ts=11_001), assign_offsets=True)          # 11_002 - 10_001 = 1001: rolls
    assert [s.base_offset for s in log.segments] == [0, 6]
    log.append(batch(ts=11_500), assign_offsets=True)          # measured from the new segment's first
    assert len(log.segments) == 2
    log.close()
    assert len(Log(tmp_path).segments) == 2                     # without segment_ms: size only
