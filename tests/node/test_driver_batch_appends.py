"""The driver's batch append API (schedule_appends): many one-record appends in one call, taken
as far as the leader's bounds leave room, the rest refused as a count; order kept across
chunks and batches; each record's commit latency measured from when it was due (weighted
samples of the latency window)."""
import asyncio
import dataclasses
import random

import pytest

from kafkawire.raft.node.disk_store import DiskLogStore
from kafkawire.raft.node.driver import RaftDriver
from kafkawire.raft.node.driver_appends import RATE_PEAK_HORIZON_MS, RATE_WINDOW_MS, CommitRate
from kafkawire.raft.node.load_generator import LoadGenerator
from kafkawire.raft.node.metrics import LatencyWindow

from .test_driver import Recorder, _until, config


async def single_voter(directory, work, *, max_batch_records=1000, append_queue_max_ms=40):
    driver = RaftDriver(dataclasses.replace(config(), max_batch_records=max_batch_records,
                                            append_queue_max_ms=append_queue_max_ms),
                        DiskLogStore(directory), client=None, seed=11)
    recorder = Recorder()
    driver.register(recorder)
    driver.start()
    try:
        async with asyncio.timeout(10):
            await _until(driver.is_leader)
        return await work(driver, recorder)
    finally:
        await driver.close()


def _queue_state(driver):
    return (len(driver._append_queue), driver._queued_records, driver.next_offset())


def test_a_full_queue_takes_what_fits_counts_the_rest_and_a_refused_batch_changes_nothing(tmp_path):
    async def work(driver, recorder):
        driver.append_queue_limit = 5
        base = driver.next_offset()
        taken = driver.schedule_appends([b"r%d" % i for i in range(8)])     # one loop turn: nothing drained yet
        before = _queue_state(driver)
        refused_batch = driver.schedule_appends([b"late1", b"late2"])
        after = _queue_state(driver)
        async with asyncio.timeout(10):
            await _until(lambda: len(recorder.committed) == 5)
        return base, taken, refused_batch, before, after, recorder.committed, driver.metrics.snapshot()

    base, taken, refused_batch, before, after, committed, metrics = asyncio.run(single_voter(tmp_path / "p", work))
    assert (taken, refused_batch) == (5, 0)
    assert before == after == (1, 5, base + 5)          # the refused batch left the queue as it was
    assert metrics["appends-refused"] == 3 + 2          # one per record refused, no exception
    assert committed == [(base + i, b"r%d" % i) for i in range(5)]     # the first ones, in order


def test_scheduled_chunks_and_appends_keep_their_order_and_fill_batches(tmp_path):
    """With max_batch_records 4: chunks of scheduled records are split to fill a batch, an
    ``append`` in between stays whole in one batch, and its future resolves with its own last
    offset; every record commits in the order it was queued."""
    async def work(driver, recorder):
        base = driver.next_offset()
        driver.schedule_appends([b"s%d" % i for i in range(3)])
        together = driver.prepare_append([b"x", b"y"])
        driver.schedule_appends([b"t%d" % i for i in range(6)])
        async with asyncio.timeout(10):
            last = await together
            await _until(lambda: len(recorder.committed) == 11)
        batches = [(b.base_offset - base, b.last_offset - base) for b in driver.read_committed(base)]
        return base, last, recorder.committed, batches

    # No time bound: a fresh leader (no commit rate yet) takes one batch, 4 records, in all.
    base, last, committed, batches = asyncio.run(single_voter(tmp_path / "p", work, max_batch_records=4,
                                                              append_queue_max_ms=0))
    values = [b"s0", b"s1", b"s2", b"x", b"y", b"t0", b"t1", b"t2", b"t3", b"t4", b"t5"]
    assert committed == [(base + i, v) for i, v in enumerate(values)]
    assert last == base + 4                                  # x, y: offsets base+3, base+4
    # s0-s2 then x,y would not fit in 4: [s0 s1 s2], [x y t0 t1] (t split), [t2 t3 t4 t5]
    assert batches == [(0, 2), (3, 6), (7, 10)]


def test_each_record_s_commit_latency_counts_from_when_it_was_due(tmp_path):
    """Five records due 1000, 900, ... 600 ms ago: the window holds five appends whose mean is
    800 ms plus the time to commit, and its percentiles fall within the spread."""
    async def work(driver, recorder):
        now = driver.clock()
        driver.schedule_appends([b"r"] * 5, due_ms=now - 1000, spacing_ms=100)
        async with asyncio.timeout(10):
            await _until(lambda: len(recorder.committed) == 5)
        window = driver.metrics.commit_latency
        return driver.clock() - now, window.count(), window.avg(), window.percentiles((0, 50, 99)), window.max()

    took, count, avg, (p0, p50, p99), biggest = asyncio.run(single_voter(tmp_path / "p", work))
    assert count == 5
    assert 800 <= avg <= 800 + took
    assert 600 <= p0 <= p50 <= p99 == biggest <= 1000 + took
    assert 750 <= p50 - (avg - 800) <= 850                   # the middle record, due 800 ms ago


def test_the_latency_window_weighs_samples_and_spreads_chunks():
    now = [0.0]
    window = LatencyWindow(samples=2, window_ms=30_000, clock=lambda: now[0])
    window.record(10, 99)
    window.record(1000)
    assert window.count() == 100
    assert window.percentiles((50, 98, 99)) == [10, 10, 1000]     # the heavy sample holds 99 of 100
    assert window.avg() == pytest.approx((10 * 99 + 1000) / 100)
    spread = LatencyWindow(clock=lambda: now[0])
    spread.record_spread(100, 0, 101)                 # 101 appends, 100 ms down to 0 ms
    assert spread.count() == 101 and len(spread.samples) == LatencyWindow.SPREAD_POINTS
    assert spread.avg() == pytest.approx(50)          # the shares' middles keep the mean
    assert abs(spread.percentile(50) - 50) <= 100 / 8 and abs(spread.percentile(99) - 100) <= 100 / 8


def test_the_workload_hands_the_driver_its_due_records_in_one_call():
    class Driver:
        node_id, calls = 1, []

        def clock(self):
            return 50_000

        def schedule_appends(self, records, *, due_ms, spacing_ms):
            self.calls.append((len(records), records[0:3], due_ms, spacing_ms))
            return min(len(records), 4)

    generator = LoadGenerator(Driver(), throughput=1000, record_size=8)
    taken = generator._schedule(10_000_000, late_s=0.25, interval_s=0.001)      # a stalled loop's backlog
    count, head, due_ms, spacing_ms = Driver.calls[0]
    assert (taken, count, head, due_ms, spacing_ms) == (4, 10_000_000, (generator.payload,) * 3, 49_750, 1.0)


def test_the_latency_window_keeps_the_newest_samples_that_stand_for_its_size():
    now = [0.0]
    window = LatencyWindow(size=100, clock=lambda: now[0])
    window.record(1, 60)
    window.record(2, 30)
    window.record(3, 30)              # 120 appends kept: without the first, only 60
    assert window.count() == 120 and window.percentile(0) == 1
    window.record(4, 50)              # the first two now stand for what the newest 80 do not need
    assert window.count() == 110 and [ms for ms, _ in window.samples] == [2, 3, 4]
    assert window.avg() == pytest.approx((2 * 30 + 3 * 30 + 4 * 50) / 110)


def test_test_raft_server_sizes_the_latency_window_and_refuses_a_window_of_nothing(capsys):
    """--latency-window: the percentiles of a benchmark's whole window, not of its last 16384
    appends (benchmarks/quorum.py); 0 is a clear error, not a traceback."""
    import argparse
    from types import SimpleNamespace

    from kafkawire.tools import test_raft_server

    parser = argparse.ArgumentParser()
    test_raft_server.add_arguments(parser)
    args = parser.parse_args(["--config", "unused.properties", "--throughput", "1000", "--latency-window", "600000"])
    driver = SimpleNamespace(metrics=SimpleNamespace(commit_latency=LatencyWindow()))
    made = test_raft_server.workload_factory(args, lambda d, **kw: (d, kw))(driver, None, None)
    assert made == (driver, {"throughput": 1000, "record_size": 256})
    assert driver.metrics.commit_latency.size == 600_000
    args.latency_window = 0
    assert test_raft_server.run(args) == 1
    assert "--latency-window must be positive, not 0" in capsys.readouterr().err


def _idle_driver(directory, clock, **settings):
    """A driver that is not started, with a clock the test moves: schedule_appends' bounds and
    queue are looked at directly (its drain is held: nothing reaches a core)."""
    driver = RaftDriver(dataclasses.replace(config(), **settings), DiskLogStore(directory), client=None,
                        seed=11, clock=lambda: clock[0])
    driver._drain_scheduled = True
    return driver


def test_commit_rate_counts_the_records_committed_in_its_window_and_keeps_its_peak():
    rate = CommitRate(window_ms=100, horizon_ms=1000)
    rate.add(1000, 500)
    rate.add(1050, 300)
    assert rate.per_ms(1060) == 8.0                  # 800 records over the 100 ms window
    assert rate.per_ms(1100) == 3.0                  # the first commit left the window
    assert rate.per_ms(1150) == 0.0                  # a quorum that commits nothing measures 0
    assert rate.peak_per_ms(1150) == 8.0             # the highest rate of the horizon stays
    rate.add(1500, 100)                               # a slower moment: 1/ms
    assert rate.peak_per_ms(1600) == 8.0
    assert rate.peak_per_ms(2050) == 1.0              # the 8/ms left the horizon, the 1/ms did not
    assert rate.peak_per_ms(2500) == 0.0


def test_scheduled_appends_take_what_the_measured_rate_commits_within_the_bound(tmp_path):
    """append_queue_max_ms 10, linger 0, at 40 records/ms measured: 400 records may wait in all
    (queued plus uncommitted); with 150 uncommitted a call of 1000 takes 250 and the rest is
    refused and counted. A window without commits keeps that peak; once the horizon passed with
    none, only one batch in all is taken. The controller's prepare_append is not refused by the
    time bound."""
    async def go():
        clock = [1_000_000]
        driver = _idle_driver(tmp_path / "p", clock, append_linger_ms=0, max_batch_records=100,
                              append_queue_max_ms=10)
        driver._commit_rate.add(clock[0], 40 * RATE_WINDOW_MS)
        driver._uncommitted_records = 150
        first = driver.schedule_appends([b"r"] * 1000)
        again = driver.schedule_appends([b"r"] * 10)                 # the bound is full
        clock[0] += RATE_WINDOW_MS                                    # no commit for a window: rate 0
        driver._uncommitted_records = 0
        driver._queued_records = 0
        dip = driver.schedule_appends([b"r"] * 1000)                  # the peak (40/ms) still holds
        clock[0] += RATE_PEAK_HORIZON_MS                               # nothing committed for the horizon
        driver._queued_records = 0
        slow = driver.schedule_appends([b"r"] * 1000)                 # one batch (100) in all
        controller_write = driver.prepare_append([b"c"] * 50)         # count bounds only
        return first, again, dip, slow, controller_write.done(), driver._queued_records, \
            driver.metrics.appends_refused

    first, again, dip, slow, failed_at_once, queued, refused = asyncio.run(go())
    assert (first, again, dip, slow) == (250, 0, 400, 100)
    assert not failed_at_once and queued == 150
    assert refused == 750 + 10 + 600 + 900


def test_the_time_bound_counts_the_linger_and_can_be_turned_off(tmp_path):
    async def go():
        clock = [5_000]
        taken = []
        for bound_ms, linger_ms in ((10, 0), (10, 25), (0, 25)):
            driver = _idle_driver(tmp_path / f"p{bound_ms}-{linger_ms}", clock, append_linger_ms=linger_ms,
                                  max_batch_records=100, append_queue_max_ms=bound_ms)
            driver._commit_rate.add(clock[0], 20 * RATE_WINDOW_MS)     # 20 records/ms
            taken.append(driver.schedule_appends([b"r"] * 5000))
        return taken

    # 20/ms x 10 ms; 20/ms x (10 + 25) ms; no time bound: the queue's count bound (10 batches)
    assert asyncio.run(go()) == [200, 700, 1000]


def test_a_call_that_continues_the_last_chunk_s_schedule_joins_it(tmp_path):
    """A workload calling once a millisecond queues chunks of up to max_batch_records, not one
    per call; a call off the chunk's schedule, or with another spacing, starts its own chunk."""
    async def go():
        clock = [10_000]
        driver = _idle_driver(tmp_path / "p", clock, max_batch_records=8, append_queue_max_ms=0)
        driver.schedule_appends([b"a", b"b", b"c"], due_ms=100.0, spacing_ms=0.5)     # due 100, 100.5, 101
        driver.schedule_appends([b"d", b"e"], due_ms=101.6, spacing_ms=0.5)           # next due 101.5: joins
        driver.schedule_appends([b"f", b"g", b"h", b"i"], due_ms=102.5, spacing_ms=0.5)  # 3 join, 1 starts a chunk
        driver.schedule_appends([b"j"], due_ms=500.0, spacing_ms=0.5)                 # off schedule
        return [(entry.records, entry.proposed_ms, entry.appends) for entry in driver._append_queue]

    assert asyncio.run(go()) == [([b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h"], 100.0, 8),
                                 ([b"i"], 102.5 + 3 * 0.5, 1), ([b"j"], 500.0, 1)]


def test_the_latency_window_answers_as_a_sort_of_its_samples_would_without_one():
    """avg, max and percentiles are kept as samples come and go (by count and by age), not
    computed by a walk or a sort at each read (which held a benchmark leader's loop 5-50 ms a
    second); checked against the samples themselves, percentiles to the histogram's 0.01 ms (1 ms
    from 100 ms, exact from 10 s)."""
    rng = random.Random(28)
    now = [0.0]
    window = LatencyWindow(size=5_000, samples=2, window_ms=1_000, clock=lambda: now[0])
    for step in range(30_000):
        now[0] += rng.choice((0.01, 0.1, 5.0))
        ms = rng.choice((rng.uniform(0, 99), rng.uniform(100, 9_999), rng.uniform(10_000, 20_000)))
        window.record(ms, rng.randint(1, 4))
        if step % 997 == 0:
            assert window.max() == max(ms for _, ms, _ in window._timed)
            weights = sum(w for _, _, w in window._timed)
            assert window.avg() == pytest.approx(sum(ms * w for _, ms, w in window._timed) / weights)
            expanded = sorted(ms for ms, w in window.samples for _ in range(w))
            for p, got in zip((0, 50, 99, 100), window.percentiles((0, 50, 99, 100))):
                want = expanded[min(len(expanded) - 1, int(p / 100 * len(expanded)))]
                resolution = 0.01 if want < 100 else 1 if want < 10_000 else 0
                assert want - resolution - 1e-9 <= got <= want + 1e-9, (p, got, want)
