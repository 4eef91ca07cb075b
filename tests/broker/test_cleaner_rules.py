"""What the log cleaner cleans, as Kafka's LogCleanerManager and Cleaner decide it, without I/O
(kafkawire.broker.cleaner_rules): the dirty section between the checkpoint and the first
uncleanable offset, the dirty ratio and the choice of the dirtiest log, min/max.compaction.lag.ms,
and the grouping of segments by size, index size and offset range.
"""
from __future__ import annotations

import pytest

from kafkawire.broker.cleaner_rules import (CleanerSegment, LogToClean, choose_filthiest, cleanable_offsets,
                                            group_segments, log_to_clean)

HOUR = 3_600_000
NOW = 1_000 * HOUR


def segments(*bases, size=100, largest=NOW - 10 * HOUR, first=NOW - 10 * HOUR):
    """Segments at ``bases`` (the last is the active one) of ``size`` bytes each."""
    return [CleanerSegment(b, size, largest, first) for b in bases]


def offsets(segs, *, start=0, end=None, lso=None, checkpoint=None, lag=0, now=NOW):
    end = segs[-1].base_offset + 10 if end is None else end
    return cleanable_offsets(segs, log_start_offset=start, log_end_offset=end,
                             last_stable_offset=end if lso is None else lso, checkpoint=checkpoint,
                             min_compaction_lag_ms=lag, now_ms=now)


@pytest.mark.parametrize("checkpoint, start, first_dirty, reset", [
    (None, 0, 0, False),          # never cleaned: from the log start
    (20, 0, 20, False),           # the checkpoint
    (5, 10, 10, True),            # below the log start (retention, DeleteRecords): reset and rewritten
    (99, 0, 0, True),             # past the log end: everything is dirty again
])
def test_the_dirty_section_starts_at_the_checkpoint_unless_it_is_outside_the_log(checkpoint, start, first_dirty, reset):
    got = offsets(segments(0, 10, 20, 30), start=start, checkpoint=checkpoint)
    assert (got.first_dirty_offset, got.force_update_checkpoint) == (first_dirty, reset)


@pytest.mark.parametrize("lso, lag, largest, uncleanable", [
    (None, 0, NOW - 10 * HOUR, 30),     # the active segment is never cleaned
    (25, 0, NOW - 10 * HOUR, 25),       # nor past the last stable offset (moved to its segment's base later)
    (None, HOUR, NOW - 10 * HOUR, 30),  # every segment older than min.compaction.lag.ms
    (None, 11 * HOUR, NOW - 10 * HOUR, 0),   # the first segment is too young: nothing
])
def test_the_first_uncleanable_offset_is_the_lowest_of_active_segment_lso_and_compaction_lag(lso, lag, largest, uncleanable):
    got = offsets(segments(0, 10, 20, 30, largest=largest), lso=lso, lag=lag)
    assert got.first_uncleanable_offset == uncleanable


def test_min_compaction_lag_stops_at_the_first_young_segment():
    segs = [CleanerSegment(0, 100, NOW - 5 * HOUR), CleanerSegment(10, 100, NOW - HOUR // 2),
            CleanerSegment(20, 100, NOW - 5 * HOUR), CleanerSegment(30, 0)]
    assert offsets(segs, lag=HOUR).first_uncleanable_offset == 10


def test_the_dirty_ratio_is_dirty_bytes_over_the_bytes_up_to_the_first_uncleanable_segment():
    segs = segments(0, 10, 20, 30)
    candidate = log_to_clean("t", segs, offsets(segs, checkpoint=10), max_compaction_lag_ms=1 << 62, now_ms=NOW)
    assert (candidate.clean_bytes, candidate.cleanable_bytes) == (100, 200)
    assert candidate.cleanable_ratio == pytest.approx(2 / 3)
    partly = log_to_clean("t", segs, offsets(segs, lso=25), max_compaction_lag_ms=1 << 62, now_ms=NOW)
    assert (partly.first_uncleanable_offset, partly.cleanable_bytes) == (20, 200)    # LSO 25: its segment's base


def test_max_compaction_lag_forces_a_clean_of_a_log_below_the_ratio():
    segs = segments(0, 10, 20, 30, first=NOW - 2 * HOUR)
    young = log_to_clean("t", segs, offsets(segs, checkpoint=20), max_compaction_lag_ms=3 * HOUR, now_ms=NOW)
    old = log_to_clean("t", segs, offsets(segs, checkpoint=20), max_compaction_lag_ms=HOUR, now_ms=NOW)
    assert (young.need_compaction_now, old.need_compaction_now) == (False, True)
    assert young.cleanable_ratio == pytest.approx(1 / 3)
    assert choose_filthiest([(young, 0.5)]) is None
    assert choose_filthiest([(old, 0.5)]) is old


def ltc(key, clean, dirty, now=False):
    return LogToClean(key, 0, 0, clean, dirty, now)


@pytest.mark.parametrize("candidates, chosen", [
    ([(ltc("a", 50, 50), 0.5)], None),                 # the ratio must be above min.cleanable.dirty.ratio
    ([(ltc("a", 49, 51), 0.5)], "a"),
    ([(ltc("a", 10, 30), 0.5), (ltc("b", 10, 90), 0.5)], "b"),    # the dirtiest
    ([(ltc("a", 10, 30), 0.7), (ltc("b", 10, 90), 0.95)], "a"),   # each log's own ratio
    ([(ltc("a", 0, 0, now=True), 0.0)], None),        # empty logs are skipped
    ([(ltc("a", 100, 0, now=True), 0.5)], None),      # forced, but no cleanable bytes
])
def test_the_cleaner_takes_the_dirtiest_log_above_its_ratio(candidates, chosen):
    got = choose_filthiest(candidates)
    assert (got.key if got else None) == chosen


def test_segments_are_grouped_up_to_segment_bytes_and_index_bytes():
    segs = [CleanerSegment(b, 40, offset_index_bytes=8, time_index_bytes=12) for b in (0, 10, 20, 30, 40)]
    by_size = group_segments(segs, max_size=100, max_index_size=1000, first_uncleanable=50)
    assert [[s.base_offset for s in g] for g in by_size] == [[0, 10], [20, 30], [40]]
    by_time_index = group_segments(segs, max_size=1000, max_index_size=36, first_uncleanable=50)
    assert [[s.base_offset for s in g] for g in by_time_index] == [[0, 10, 20], [30, 40]]


def test_a_group_never_spans_more_than_an_int32_of_offsets_past_its_base():
    big = 1 << 31
    segs = [CleanerSegment(0, 10), CleanerSegment(big - 10, 10), CleanerSegment(big + 5, 10), CleanerSegment(big + 9, 0)]
    groups = group_segments(segs, max_size=1000, max_index_size=1000, first_uncleanable=big + 20)
    assert [[s.base_offset for s in g] for g in groups] == [[0], [big - 10, big + 5, big + 9]]
