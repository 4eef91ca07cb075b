import os

import pytest

from kafkawire.records import build_batch
from kafkawire.storage.segment import LogSegment


def batch(base, n=1, ts=1000, size=100):
    return build_batch([(None, b"v" * size, (), ts + i) for i in range(n)], base_offset=base)


def fill(seg, count, per=3, size=500, start=None, ts0=1000):
    off = seg.base_offset if start is None else start
    out = []
    for i in range(count):
        b = batch(off, per, ts=ts0 + 10 * i, size=size)
        out.append((off, seg.append(b), b))
        off += per
    return out


def test_append_read_and_index_interval(tmp_path):
    seg = LogSegment(tmp_path, 0, create=True, index_interval_bytes=4096)
    written = fill(seg, 30)
    assert os.path.basename(seg.log_path) == "00000000000000000000.log"
    sizes = [len(b) for _, _, b in written]
    # Kafka's rule: an entry when more than 4096 bytes went in since the last one.
    expected, since = [], 0
    for (off, pos, b) in written:
        if since > 4096:
            expected.append((off + 2, pos))
            since = 0
        since += len(b)
    assert list(seg.offset_index) == expected and expected
    for off, pos, b in written:
        for o in (off, off + 1, off + 2):
            r = seg.read(o, 1)
            assert r.position == pos and r.data == b and r.first_offset == off
    r = seg.read(0, sum(sizes[:3]))
    assert r.data == b"".join(b for _, _, b in written[:3])
    assert seg.read(10**6, 100) is None
    assert seg.read_next_offset() == 90
    # The rebuild from the same bytes gives the same indexes.
    before = (list(seg.offset_index), list(seg.time_index))
    report = seg.recover()
    assert not report.truncated and report.batches == 30 and report.next_offset == 90
    assert (list(seg.offset_index), list(seg.time_index)) == before


def test_lookup_by_timestamp(tmp_path):
    seg = LogSegment(tmp_path, 0, create=True, index_interval_bytes=1000)
    fill(seg, 20, ts0=5000)   # batch i: offsets 3i..3i+2, timestamps 5000+10i+{0,1,2}
    assert seg.find_offset_by_timestamp(0) == (0, 5000)
    assert seg.find_offset_by_timestamp(5051) == (16, 5051)
    assert seg.find_offset_by_timestamp(5053) == (18, 5060)
    assert seg.find_offset_by_timestamp(10**9) is None


def test_truncate_to(tmp_path):
    seg = LogSegment(tmp_path, 0, create=True, index_interval_bytes=1000)
    written = fill(seg, 20)
    cut = seg.truncate_to(31)   # inside the batch [30, 32]: that batch goes
    assert seg.size == written[10][1] and cut > 0
    assert seg.read_next_offset() == 30
    assert all(e.offset < 31 for e in seg.offset_index)
    assert os.path.getsize(seg.index_path) == 8 * len(seg.offset_index)
    fill(seg, 2, start=30)
    assert seg.read_next_offset() == 36


def test_recover_cuts_torn_tail(tmp_path):
    seg = LogSegment(tmp_path, 0, create=True)
    written = fill(seg, 5)
    good = seg.size
    seg.close()
    with open(tmp_path / "00000000000000000000.log", "ab") as f:
        f.write(batch(15, 2)[:40])
    seg = LogSegment(tmp_path, 0)
    report = seg.recover()
    assert report.truncated and report.truncated_bytes == 40 and report.truncated_at == good
    assert "torn write" in report.reason
    assert os.path.getsize(seg.log_path) == good and report.next_offset == 15


def test_recover_cuts_from_corrupt_crc_in_the_middle(tmp_path):
    seg = LogSegment(tmp_path, 0, create=True)
    written = fill(seg, 6)
    seg.close()
    path = tmp_path / "00000000000000000000.log"
    data = bytearray(path.read_bytes())
    bad_pos = written[3][1]
    data[bad_pos + 100] ^= 0xFF
    path.write_bytes(data)
    seg = LogSegment(tmp_path, 0)
    report = seg.recover()
    assert report.truncated_at == bad_pos
    assert report.truncated_bytes == len(data) - bad_pos
    assert "CRC" in report.reason and str(bad_pos + 17) in report.reason
    assert seg.read_next_offset() == 9


def _flip_base_offset(path, position: int, bit: int) -> None:
    """Flip one bit of the base offset (bytes 0-7 of the batch, outside the CRC)."""
    data = bytearray(path.read_bytes())
    data[position + 7 - bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(data)


@pytest.mark.parametrize("bit, contiguous, cut_batch, reason, next_offset", [
    (16, True, 3, "do not follow", 9),       # 9 -> 65545: where offsets must follow exactly, a gap is cut
    (3, False, 3, "go back", 9),             # 9 -> 1: offsets go back, cut in any log
    # A compacted Kafka log may have gaps: a raised base offset is kept, and the batch after it,
    # whose offsets then go back, is cut.
    (16, False, 4, "go back", 65548),
])
def test_recover_cuts_where_a_flipped_base_offset_breaks_the_order(tmp_path, bit, contiguous, cut_batch, reason,
                                                                   next_offset):
    seg = LogSegment(tmp_path, 0, create=True)
    written = fill(seg, 6)
    seg.close()
    _flip_base_offset(tmp_path / "00000000000000000000.log", written[3][1], bit)
    seg = LogSegment(tmp_path, 0)
    report = seg.recover(contiguous=contiguous)
    cut_at = written[cut_batch][1]
    assert report.truncated_at == cut_at and reason in report.reason and f"byte {cut_at}" in report.reason, report
    assert seg.read_next_offset() == next_offset


def test_flush_fsyncs_log_and_indexes(tmp_path, monkeypatch):
    seg = LogSegment(tmp_path, 0, create=True)
    fill(seg, 3)
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))
    seg.flush()
    names = sorted(os.path.basename(p) for p in synced)
    assert names == ["00000000000000000000.index", "00000000000000000000.log",
                     "00000000000000000000.timeindex"]


def test_close_adds_final_time_index_entry(tmp_path):
    seg = LogSegment(tmp_path, 0, create=True)
    fill(seg, 2, ts0=7000)
    seg.close()
    seg = LogSegment(tmp_path, 0)
    assert list(seg.time_index) == [(7012, 5)]
    assert seg.max_timestamp == 7012
