import struct

import pytest

from kafkawire.storage.index import (CorruptIndexError, InvalidOffsetError, OffsetIndex,
                                     TimeIndex)


def test_offset_index_append_lookup_truncate_and_file_bytes(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(path, 100)
    assert idx.lookup(150) == (100, 0)
    for off, pos in [(110, 4100), (120, 8300), (135, 12500)]:
        idx.append(off, pos)
    assert path.read_bytes() == b"".join(struct.pack(">ii", o - 100, p)
                                         for o, p in [(110, 4100), (120, 8300), (135, 12500)])
    assert idx.lookup(99) == (100, 0)
    assert idx.lookup(110) == (110, 4100)
    assert idx.lookup(134) == (120, 8300)
    assert idx.lookup(10**9) == (135, 12500)
    with pytest.raises(InvalidOffsetError):
        idx.append(135, 20000)      # not larger than the last offset
    with pytest.raises(InvalidOffsetError):
        idx.append(100 + 2**31, 20000)  # relative offset overflows int32
    idx.truncate_to(120)            # drops entries with offset >= 120
    assert list(idx) == [(110, 4100)]
    assert path.stat().st_size == 8
    idx.flush()
    idx.close()
    assert list(OffsetIndex(path, 100)) == [(110, 4100)]


def test_time_index_rules(tmp_path):
    idx = TimeIndex(tmp_path / "x.timeindex", 0)
    assert idx.lookup(5) == (-1, 0)
    assert idx.maybe_append(1000, 10)
    assert not idx.maybe_append(1000, 12)   # same timestamp: no entry
    assert idx.maybe_append(2000, 20)
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(3000, 15)          # offset going back
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(1500, 30)          # timestamp going back
    assert idx.lookup(1999) == (1000, 10)
    assert idx.lookup(2000) == (2000, 20)
    assert (tmp_path / "x.timeindex").read_bytes() == struct.pack(">qi", 1000, 10) + struct.pack(">qi", 2000, 20)
    idx.truncate_to(20)
    assert list(idx) == [(1000, 10)]


def test_preallocated_zero_tail_is_ignored_and_trimmed(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">ii", 5, 4200) + struct.pack(">ii", 9, 8400) + bytes(8 * 1000))
    idx = OffsetIndex(path, 0)
    assert list(idx) == [(5, 4200), (9, 8400)]
    assert path.stat().st_size == 16      # trimmed, as Kafka's trimToValidSize
    tpath = tmp_path / "00000000000000000000.timeindex"
    tpath.write_bytes(struct.pack(">qi", 77, 5) + bytes(12 * 50))
    assert list(TimeIndex(tpath, 0)) == [(77, 5)]
    zpath = tmp_path / "z.index"
    zpath.write_bytes(bytes(8 * 10))
    assert len(OffsetIndex(zpath, 0)) == 0


def test_corrupt_index_files(tmp_path):
    p = tmp_path / "a.index"
    p.write_bytes(bytes(13))
    with pytest.raises(CorruptIndexError, match=r"not a multiple.*at byte 8.*a\.index"):
        OffsetIndex(p, 0)
    p.write_bytes(struct.pack(">ii", 5, 100) + struct.pack(">ii", 3, 200))
    with pytest.raises(CorruptIndexError, match="at byte 8") as e:
        OffsetIndex(p, 0)
    assert e.value.file == str(p)
    t = tmp_path / "a.timeindex"
    t.write_bytes(struct.pack(">qi", 50, 1) + struct.pack(">qi", 40, 2) + bytes(12))
    with pytest.raises(CorruptIndexError, match="at byte 12"):
        TimeIndex(t, 0)


def test_from_bytes_round_trip():
    raw = struct.pack(">ii", 1, 10) + struct.pack(">ii", 3, 99)
    idx = OffsetIndex.from_bytes(raw, 1000)
    assert list(idx) == [(1001, 10), (1003, 99)]
    assert idx.to_bytes() == raw
