"""The tail cache of DiskLogStore answers every read exactly as the segment files do."""
import random

from kafkawire.records import RecordBatchBuilder
from kafkawire.raft.io import Append, DeleteBefore, TruncateTo
from kafkawire.raft.node.disk_store import DiskLogStore
from kafkawire.raft.node.tail_cache import TailCache
from kafkawire.raft.types import OffsetAndEpoch


def batch(base: int, count: int, epoch: int, value_size: int = 20) -> Append:
    b = RecordBatchBuilder(base_offset=base, partition_leader_epoch=epoch)
    for i in range(count):
        b.append(None, f"{base + i:0{value_size}d}".encode(), (), 1000 + base + i)
    return Append(b.build(), base, base + count - 1, epoch)


def file_read(store: DiskLogStore, offset: int, max_bytes: int) -> bytes:
    """What the segments hold, read past the cache (the store's read before the cache)."""
    if offset >= store.end_offset():
        return b""
    return store.log.read(max(offset, store.start_offset()), max_bytes).data


def assert_reads_match(store: DiskLogStore, rng: random.Random) -> int:
    """Offsets of the log (its ends and a dozen between) read with a few limits; returns how
    many reads the cache answered."""
    from_cache = 0
    every = range(max(store.start_offset() - 2, 0), store.end_offset() + 2)
    for offset in {*every[:3], *every[-3:], *rng.sample(every, min(12, len(every)))}:
        for max_bytes in (1, rng.randrange(50, 400), 1 << 20):
            expected = file_read(store, offset, max_bytes)
            assert store.read(offset, max_bytes) == expected, (offset, max_bytes)
            cached = store._tail.read(max(offset, store.start_offset()), max_bytes)
            from_cache += cached is not None and cached != b""
    for _ in range(3):
        offset = rng.randrange(max(store.start_offset() - 2, 0), store.end_offset() + 2)
        to_offset = rng.randrange(offset, store.end_offset() + 2)
        start = max(offset, store.start_offset())
        from_files = [bytes(b.raw) for b in store.log.batches(start)
                      if b.base_offset < to_offset and start < min(to_offset, store.end_offset())]
        assert [bytes(b.raw) for b in store.data_batches(offset, to_offset)] == from_files, (offset, to_offset)
    return from_cache


def test_reads_from_the_cache_match_the_segments_through_rolls_truncations_and_retention(tmp_path):
    rng = random.Random(7)
    # Small segments (rolls every few batches) and a small cache (it evicts): every boundary.
    store = DiskLogStore(tmp_path / "p", segment_bytes=700, tail_cache_bytes=1500)
    epoch, from_cache, bases, segments = 1, 0, [], set()
    for step in range(60):
        end = store.end_offset()
        # A raft truncation is at a batch boundary (the diverging epoch's end) above the log start.
        cuts = [base for base in bases if store.start_offset() < base < end]
        if step % 13 == 12 and cuts:
            cut = rng.choice(cuts)
            store.apply(TruncateTo(cut))
            bases = [base for base in bases if base < cut]
            epoch += 1
        elif step % 17 == 16:
            start = rng.randrange(store.start_offset(), end)
            store.apply(DeleteBefore(start, OffsetAndEpoch(epoch, start)))
        else:
            store.apply(batch(end, rng.randrange(1, 6), epoch))
            bases.append(end)
        from_cache += assert_reads_match(store, rng)
        segments.add(store.log.active_segment.base_offset)
    assert store._tail.cached_bytes <= 1500
    assert from_cache > 0       # the cache answered, not only the files
    assert len(segments) > 2     # the log rolled: reads met segment boundaries


def test_committed_batches_read_through_the_cache_stop_at_the_bound(tmp_path):
    store = DiskLogStore(tmp_path / "p")
    for base, count in ((0, 3), (3, 2), (5, 4)):
        store.apply(batch(base, count, 1))
    got = [(b.base_offset, b.last_offset) for b in store.data_batches(0, 5)]
    assert got == [(0, 2), (3, 4)]
    # A bound inside a batch yields that batch (the driver sees it straddle and stops).
    assert [(b.base_offset, b.last_offset) for b in store.data_batches(4, 6)] == [(3, 4), (5, 8)]


def test_truncation_drops_the_batches_it_cuts_and_a_gap_empties_the_cache():
    cache = TailCache(1000)
    cache.append(b"x" * 100, 0, 4, 0)
    cache.append(b"y" * 100, 5, 9, 0)
    assert cache.read(6, 1000) == b"y" * 100
    assert cache.read(0, 1000) == b"x" * 100 + b"y" * 100
    cache.truncate_from(7)                  # the batch holding 7 goes whole
    assert cache.end_offset() == 5 and cache.read(3, 1000) == b"x" * 100
    cache.append(b"y" * 100, 5, 9, 0)
    cache.append(b"z" * 100, 20, 21, 0)     # not contiguous: starts over rather than serve a gap
    assert cache.read(6, 1000) is None and cache.read(20, 1000) == b"z" * 100
    cache.clear()
    assert cache.read(20, 1000) is None and len(cache) == 0
