"""Planning and reading without Spark: the code Spark's planner and tasks run, on logs our
writer made (real .index/.timeindex files, rolled segments), checked against brute force."""
from __future__ import annotations

import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("pyarrow", reason="kafkawire.spark builds Arrow batches: pip install -e '.[dev]'")

from kafkawire.records import CorruptRecordError, LZ4, build_batch, build_end_txn_marker_batch, iter_batches  # noqa: E402
from kafkawire.spark.filters import PushedFilters  # noqa: E402
from kafkawire.spark.indexes import SegmentIndexes  # noqa: E402
from kafkawire.spark.layout import LayoutError, discover, list_segments, parse_partition_dir_name  # noqa: E402
from kafkawire.spark.options import OptionError, parse_options  # noqa: E402
from kafkawire.spark.plan import PlanError, offset_for_timestamp, pack_tasks, plan_batch  # noqa: E402
from kafkawire.spark.scan import Skipped, scan_batches  # noqa: E402
from kafkawire.spark.tail import LogTail  # noqa: E402
from tests.spark.logdata import T0, numbered_batches, read_direct, segment_files, write_partition  # noqa: E402


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    """orders-0: 3000 records in 300 batches over several segments, index entry every 1 KiB."""
    path = tmp_path_factory.mktemp("logs") / "orders-0"
    return write_partition(path, numbered_batches(300, 10), segment_bytes=20_000,
                           index_interval_bytes=1024, leader_epoch=4)


def _all_records(path):
    out = []
    for f in segment_files(path):
        for batch in iter_batches(open(f, "rb").read()):
            out += [(r.offset, r.timestamp) for r in batch]
    return out


# --- layout -----------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("orders-0", ("orders", 0)), ("my-topic-12", ("my-topic", 12)), ("a.b_c-3", ("a.b_c", 3)),
    ("__cluster_metadata-0", ("__cluster_metadata", 0)), ("orders", None), ("orders-x", None),
    ("orders-0.0123456789abcdef0123456789abcdef-delete", None), ("orders-99999999999", None),
    ("orders-0.0123456789abcdef0123456789abcdef-stray", None), ("orders-0.0123456789abcdef0123456789abcdef-future", None),
])
def test_partition_directory_names(name, expected):
    assert parse_partition_dir_name(name) == expected


def test_retired_directory_is_read_when_named(tmp_path):
    d = write_partition(tmp_path / "orders-2.0123456789abcdef0123456789abcdef-delete", [[(b"k", b"v")]])
    with pytest.raises(LayoutError, match="no <topic>-<partition> directories"):
        discover(tmp_path)   # a log dir scan leaves retired directories out
    (p,) = discover(d).partitions
    assert (p.topic, p.partition) == ("orders", 2)


def test_a_log_dir_named_like_a_partition(tmp_path):
    logdir = tmp_path / "kafka-logs-1"
    write_partition(logdir / "orders-0", [[(b"k", b"v")]])
    write_partition(logdir / "payments-3", [[(b"k", b"v")]])
    assert [p.key for p in discover(logdir).partitions] == [("orders", 0), ("payments", 3)]


def test_globs_and_several_paths(tmp_path):
    for topic in ("a", "b", "c"):
        write_partition(tmp_path / f"{topic}-0", [[(b"k", b"v")]])
    assert len(discover(str(tmp_path / "*-0")).partitions) == 3
    assert len(discover([tmp_path / "a-0", tmp_path / "b-0"]).partitions) == 2


def test_paths_that_hold_no_kafka_data(tmp_path):
    with pytest.raises(LayoutError, match="no such file or directory"):
        discover(tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(LayoutError, match="not a log segment"):
        discover(tmp_path / "notes.txt")
    with pytest.raises(LayoutError, match="no <topic>-<partition>"):
        discover(tmp_path)


# --- options ----------------------------------------------------------------------------

@pytest.mark.parametrize("options, message", [
    ({"startingOffset": "earliest"}, "unknown option 'startingoffset'"),
    ({"startingOffsets": "latest"}, "startingOffsets='latest' is not allowed"),
    ({"startingOffsets": "{bad"}, "option startingOffsets: not JSON"),
    ({"startingOffsets": '{"t": {"x": 1}}'}, "partition 'x' of topic 't' is not a number"),
    ({"endingOffsets": '{"t": {"0": -2}}'}, "t-0 = -2 is not an offset here"),
    ({"failOnCorruption": "yes"}, "failOnCorruption='yes': expected true or false"),
    ({"decode": "avro"}, "decode='avro': expected none or metadata"),
    ({"kafka.isolation.level": "read_committed", "includeAborted": "true"}, "contradicts"),
    ({"subscribe": "a", "assign": '{"a": [0]}'}, "give only one way"),
    ({"maxPartitionBytes": "0"}, "must be at least 1"),
    ({"minPartitions": "0"}, "option minPartitions='0': must be at least 1"),
    ({"minPartitions": "-4"}, "option minPartitions='-4': must be at least 1"),
    ({"minPartitions": "1.5"}, "option minPartitions='1.5': expected a whole number"),
    ({"minPartitions": "many"}, "option minPartitions='many': expected a whole number"),
])
def test_bad_options_are_named(options, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace("[", r"\[")):
        parse_options({"path": "/x", **options}, streaming=False)


def test_kafka_client_options_are_accepted_and_ignored():
    opts = parse_options({"path": "/x", "kafka.bootstrap.servers": "h:9092",
                          "kafka.isolation.level": "read_committed"}, streaming=False)
    assert opts.include_aborted is False


# --- indexes and planning ---------------------------------------------------------------

def test_index_positions_are_batch_starts_before_the_offset(orders):
    for segment in list_segments(str(orders)):
        starts = {pos for pos, _ in scan_batches(segment.path)}
        batches = {pos: b for pos, b in scan_batches(segment.path)}
        indexes = SegmentIndexes(segment)
        assert len(indexes.offset_entries()) > 5
        for _, last in [(p, b.last_offset) for p, b in batches.items()]:
            for offset in (last, last - 3):
                pos = indexes.position_for_offset(offset)
                assert pos in starts
                assert batches[pos].base_offset <= max(offset, segment.base_offset)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(-5, 3005), st.integers(0, 3010), st.sampled_from([100, 3000, 1 << 30]))
def test_offset_ranges_read_exactly_those_offsets(orders, start, length, split_bytes):
    end = start + length
    pushed = PushedFilters(offset_min=start, offset_end=end)
    rows = read_direct(orders, pushed, maxPartitionBytes=split_bytes)
    assert [r["offset"] for r in rows] == list(range(max(start, 0), min(end, 3000)))


@pytest.fixture(scope="module")
def one_segment(tmp_path_factory):
    """big-0: 3000 records in 300 batches of about 700 bytes, all in one segment, an index
    entry every 1 KiB."""
    path = tmp_path_factory.mktemp("logs") / "big-0"
    return write_partition(path, numbered_batches(300, 10), index_interval_bytes=1024)


@pytest.mark.parametrize("k", [2, 8, 40, 100, 5000])
def test_min_partitions_cuts_one_segment_into_at_least_k_pieces(one_segment, k):
    """minPartitions=k cuts a read of T bytes at the first index entry at or after each
    multiple of T // k: at least k input partitions when T // k is at least the largest gap
    between index entries; every index entry a cut when T // k is at most the smallest. The
    pieces tile the segment, so the read returns what the unsplit read does."""
    (segment,) = list_segments(str(one_segment))
    entries = [p for _, p in SegmentIndexes(segment).offset_entries() if 0 < p < segment.size]
    bounds = [0, *entries, segment.size]
    gaps = [b - a for a, b in zip(bounds, bounds[1:])]
    opts = parse_options({"path": str(one_segment), "minPartitions": str(k)}, streaming=False)
    tasks = plan_batch(opts, PushedFilters())
    packs = pack_tasks(tasks, opts.split_bytes, opts.min_partitions)
    split = segment.size // k
    assert split >= max(gaps) or split <= min(gaps), "k must fall in one of the two stated cases"
    if split >= max(gaps):
        assert len(packs) >= k
    else:
        assert len(tasks) == len(packs) == len(entries) + 1
    assert [t.start for t in tasks] == [0, *[t.stop for t in tasks[:-1]]]   # contiguous, in order
    assert tasks[-1].stop == segment.size
    assert [r["offset"] for r in read_direct(one_segment, minPartitions=k)] == list(range(3000))


def test_without_min_partitions_a_small_read_is_not_cut(one_segment):
    """The default is unchanged: a read below 32 MiB has a 4 MiB split, one piece here."""
    opts = parse_options({"path": str(one_segment)}, streaming=False)
    assert len(plan_batch(opts, PushedFilters())) == 1


def test_large_segments_split_at_batch_starts_and_cover_everything_once(orders):
    opts = parse_options({"path": str(orders), "maxPartitionBytes": "3000"}, streaming=False)
    tasks = plan_batch(opts, PushedFilters())
    segments = list_segments(str(orders))
    assert len(tasks) > 2 * len(segments)
    for task in tasks:
        assert task.start == 0 or task.start in {p for p, _ in scan_batches(task.path)}
    rows = read_direct(orders, maxPartitionBytes=3000)
    assert [r["offset"] for r in rows] == list(range(3000))
    assert {r["leaderEpoch"] for r in rows} == {4}
    assert len(pack_tasks(tasks, 3000)) == len(tasks)          # big enough: one task each
    assert len(pack_tasks(tasks, 1 << 30)) < len(tasks)        # small: packed together


def test_starting_and_ending_offsets_per_partition(orders):
    rows = read_direct(orders, startingOffsets='{"orders": {"0": 1234}}',
                       endingOffsets='{"orders": {"0": 1240}}')
    assert [r["offset"] for r in rows] == list(range(1234, 1240))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(T0 - 100, T0 + 31_000))
def test_starting_timestamp_is_kafkas_first_offset_at_or_after_it(orders, ts):
    expected = next((o for o, t in _all_records(orders) if t >= ts), None)
    segments = list_segments(str(orders))
    assert offset_for_timestamp(segments, ts) == expected
    if expected is None:
        with pytest.raises(PlanError, match="no record has a timestamp at or after"):
            read_direct(orders, startingTimestamp=ts)
        assert read_direct(orders, startingTimestamp=ts, startingOffsetsByTimestampStrategy="latest") == []
    else:
        rows = read_direct(orders, startingTimestamp=ts, endingOffsets='{"orders": {"0": %d}}' % (expected + 3))
        assert [r["offset"] for r in rows] == list(range(expected, min(expected + 3, 3000)))


def test_timestamps_out_of_order_follow_kafkas_rule(tmp_path):
    # Kafka's rule: the first offset (in offset order) whose timestamp reaches the target.
    stamps = [50, 10, 70, 20, 90, 30, 60]
    path = write_partition(tmp_path / "t-0", [[(b"k", b"v", [], T0 + s)] for s in stamps],
                           index_interval_bytes=1)
    segments = list_segments(str(path))
    for target in range(0, 100, 5):
        expected = next((o for o, s in enumerate(stamps) if s >= target), None)
        assert offset_for_timestamp(segments, T0 + target) == expected


def test_timestamp_filter_is_exact_and_uses_the_time_index(orders):
    low_us = (T0 + 20_000) * 1000 + 1            # one microsecond after a record's millisecond
    pushed = PushedFilters(timestamp_bounds=[("greater_equal", low_us), ("less", (T0 + 20_100) * 1000)])
    rows = read_direct(orders, pushed)
    assert [r["offset"] for r in rows] == list(range(2001, 2010))
    opts = parse_options({"path": str(orders)}, streaming=False)
    tasks = plan_batch(opts, pushed)
    segments = list_segments(str(orders))
    assert len(tasks) < len(segments) and tasks[0].start > 0   # segments and bytes skipped


def test_a_stale_index_is_not_trusted(tmp_path):
    path = write_partition(tmp_path / "s-0", numbered_batches(50, 5), index_interval_bytes=256)
    (log,) = segment_files(path)
    index = log[:-4] + ".index"
    entries = open(index, "rb").read()
    with open(log, "r+b") as f:       # the log was truncated but its index was not rebuilt
        f.truncate(os.path.getsize(log) // 3)
    assert len(entries) > 16
    rows = read_direct(path, startingOffsets='{"s": {"0": 40}}')
    assert [r["offset"] for r in rows] == list(range(40, 40 + len(rows)))
    with open(index, "wb") as f:      # entries pointing at the wrong batches
        f.write(struct.pack(">ii", 200, 61) + struct.pack(">ii", 210, 500))
    rows = read_direct(path, startingOffsets='{"s": {"0": 7}}')
    assert rows[0]["offset"] == 7


# --- corruption ---------------------------------------------------------------------------

def _corrupt(path, batch_number, field_offset, value: bytes):
    (log,) = segment_files(path)
    positions = [p for p, _ in scan_batches(log)]
    position = positions[batch_number]
    with open(log, "r+b") as f:
        f.seek(position + field_offset)
        f.write(value)
    return log, position


def test_a_corrupt_batch_fails_the_read_naming_file_and_byte(tmp_path):
    path = write_partition(tmp_path / "c-0", numbered_batches(20, 5))
    log, position = _corrupt(path, 7, 70, b"\xff")        # a byte inside the records: CRC breaks
    with pytest.raises(CorruptRecordError) as info:
        read_direct(path)
    assert info.value.file == log and info.value.position == position + 17
    assert f"at byte {position + 17} in {log}" in str(info.value)


def test_skipping_corruption_counts_it_and_keeps_the_rest(tmp_path):
    path = write_partition(tmp_path / "c-0", numbered_batches(20, 5), index_interval_bytes=200)
    log, position = _corrupt(path, 7, 70, b"\xff")
    rows = read_direct(path, failOnCorruption="false")
    marks = [r for r in rows if r["corruption"] is not None]
    assert len(marks) == 1 and f"at byte {position} in {log}" in marks[0]["corruption"]
    assert "CRC" in marks[0]["corruption"] and marks[0]["offset"] is None
    assert [r["offset"] for r in rows if r["corruption"] is None] == [o for o in range(100) if o // 5 != 7]


def test_a_broken_length_resumes_at_the_next_index_entry(tmp_path):
    path = write_partition(tmp_path / "c-0", numbered_batches(40, 5), index_interval_bytes=300)
    log, position = _corrupt(path, 10, 8, struct.pack(">i", 3))   # batch size 3: cannot be framed
    rows = read_direct(path, failOnCorruption="false")
    marks = [r["corruption"] for r in rows if r["corruption"] is not None]
    assert len(marks) == 1 and "smaller than minimum" in marks[0]
    offsets = [r["offset"] for r in rows if r["corruption"] is None]
    assert offsets[:50] == list(range(50)) and offsets[-1] == 199 and 50 not in offsets
    # Reading resumed at the first index entry past the bad batch: a batch start.
    (segment,) = list_segments(str(path))
    entries = SegmentIndexes(segment).offset_entries()
    resume_at = next(p for _, p in entries if p > position)
    batch_at = dict(i for i in scan_batches(log, skip_corrupt=True, resync_positions=[p for _, p in entries])
                    if not isinstance(i, Skipped))
    assert offsets[50] == batch_at[resume_at].base_offset


def test_a_torn_tail_is_left_for_later_and_a_torn_snapshot_is_corrupt(tmp_path):
    path = write_partition(tmp_path / "t-0", numbered_batches(4, 3))
    (log,) = segment_files(path)
    extra = build_batch([(b"k", b"late")], base_offset=12)
    with open(log, "ab") as f:
        f.write(extra[:30])           # a write in progress
    assert [r["offset"] for r in read_direct(path)] == list(range(12))
    snapshot = tmp_path / "00000000000000000012-0000000001.checkpoint"
    snapshot.write_bytes(open(log, "rb").read())
    with pytest.raises(CorruptRecordError, match="file ends inside a batch|declares"):
        read_direct(snapshot)


# --- the tail of a live log ---------------------------------------------------------------

def test_log_tail_counts_whole_batches_and_follows_rolls(tmp_path):
    path = write_partition(tmp_path / "live-0", numbered_batches(3, 2))
    tail = LogTail(0)
    assert tail.advance(list_segments(str(path))).next_offset == 6
    (log,) = segment_files(path)
    batch = build_batch([(b"k", b"v"), (b"k", b"w")], base_offset=6)
    with open(log, "ab") as f:
        f.write(batch[:40])
    assert tail.advance(list_segments(str(path))).next_offset == 6        # torn: not yet
    with open(log, "ab") as f:
        f.write(batch[40:])
    assert tail.advance(list_segments(str(path))).next_offset == 8
    write_partition(path, numbered_batches(2, 2), roll=True)              # a new segment
    segments = list_segments(str(path))
    assert len(segments) > 1 and tail.advance(segments).next_offset == 12
    assert LogTail.at_end(segments).advance(segments).next_offset == 12


# --- columns ------------------------------------------------------------------------------

def test_headers_keys_values_and_compression(tmp_path):
    records = [(b"k1", b"v1", [("h", b"x"), ("\udcff-bad", None), ("\udced\udca0\udc80s", None)]), (None, None, []),
               (b"", b"", [("e", b"")])]
    path = write_partition(tmp_path / "h-0", [records], compression_type=LZ4)
    rows = read_direct(path)
    assert [(r["key"], r["value"]) for r in rows] == [(b"k1", b"v1"), (None, None), (b"", b"")]
    # bad UTF-8 as Java's decoder shows it: a UTF-8-encoded surrogate (ED A0 80) is one U+FFFD
    assert rows[0]["headers"] == [{"key": "h", "value": b"x"}, {"key": "\ufffd-bad", "value": None},
                                  {"key": "\ufffds", "value": None}]
    assert rows[1]["headers"] is None                       # no headers: null, as Spark's source
    assert rows[2]["headers"] == [{"key": "e", "value": b""}]


# --- read_committed -----------------------------------------------------------------------

def _kafka_python_txn_batch(producer_id, epoch, sequence, values):
    """A transactional batch as kafka-python's producer builds it."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=1, producer_id=producer_id,
                                  producer_epoch=epoch, base_sequence=sequence, batch_size=1 << 20)
    for i, v in enumerate(values):
        b.append(i, timestamp=T0 + i, key=None, value=v, headers=[])
    return bytes(b.build())


def _txn(pid, values, epoch=0, seq=0):
    return build_batch([(None, v, [], T0) for v in values], is_transactional=True, producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq)


def _marker(pid, commit, epoch=0):
    return build_end_txn_marker_batch(commit, producer_id=pid, producer_epoch=epoch, coordinator_epoch=3,
                                      timestamp=T0)


def _plain(values):
    return [(None, v, [], T0) for v in values]


TXN_LOG = [
    _txn(1, [b"p1-a", b"p1-b", b"p1-c"]),                   # 0-2   committed at 7
    _plain([b"plain-3", b"plain-4"]),                       # 3-4
    _kafka_python_txn_batch(2, 0, 0, [b"p2-a", b"p2-b"]),   # 5-6   aborted at 9
    _marker(1, True),                                       # 7
    _txn(2, [b"p2-c"], seq=2),                              # 8
    _marker(2, False),                                      # 9
    _plain([b"plain-10"]),                                  # 10
    _txn(4, [b"p4-a"]),                                     # 11    fenced: aborted by epoch 1 at 13
    _plain([b"plain-12"]),                                  # 12
    _marker(4, False, epoch=1),                             # 13
    _txn(3, [b"p3-a", b"p3-b"]),                            # 14-15 still open: the LSO is 14
    _plain([b"plain-16"]),                                  # 16
    _txn(1, [b"p1-d"], seq=3),                              # 17
    _marker(1, True),                                       # 18
]


@pytest.fixture(scope="module")
def txn_log(tmp_path_factory):
    return write_partition(tmp_path_factory.mktemp("txn") / "payments-0", TXN_LOG, index_interval_bytes=1)


@pytest.mark.parametrize("split_bytes", [1 << 30, 1])   # 1: a task per batch, markers in other tasks
def test_read_committed_drops_aborted_and_stops_at_the_lso(txn_log, split_bytes):
    committed = read_direct(txn_log, includeAborted="false", maxPartitionBytes=split_bytes)
    assert [(r["offset"], r["value"]) for r in committed] == [
        (0, b"p1-a"), (1, b"p1-b"), (2, b"p1-c"), (3, b"plain-3"), (4, b"plain-4"),
        (10, b"plain-10"), (12, b"plain-12")]
    same = read_direct(txn_log, **{"kafka.isolation.level": "read_committed", "maxPartitionBytes": split_bytes})
    assert same == committed


def test_read_uncommitted_shows_every_data_record_and_control_on_request(txn_log):
    rows = read_direct(txn_log)
    assert [r["offset"] for r in rows] == [0, 1, 2, 3, 4, 5, 6, 8, 10, 11, 12, 14, 15, 16, 17]
    assert {r["producerId"] for r in rows if r["isTransactional"]} == {1, 2, 3, 4}
    control = [r for r in read_direct(txn_log, includeControl="true") if r["isControl"]]
    assert [(r["offset"], r["controlType"], r["producerId"]) for r in control] == [
        (7, "COMMIT", 1), (9, "ABORT", 2), (13, "ABORT", 4), (18, "COMMIT", 1)]
    committed_control = read_direct(txn_log, includeControl="true", includeAborted="false")
    assert [r["offset"] for r in committed_control if r["isControl"]] == [7, 9, 13]


def test_a_transaction_ending_past_the_read_is_resolved_by_looking_ahead(tmp_path):
    batches = [_txn(9, [b"a"]), _plain([b"b"])] + [_plain([b"x%d" % i]) for i in range(20)] + [_marker(9, True)]
    path = write_partition(tmp_path / "t-0", batches, segment_bytes=400)   # the marker is segments away
    assert len(list_segments(str(path))) > 3
    rows = read_direct(path, includeAborted="false", endingOffsets='{"t": {"0": 2}}')
    assert [r["value"] for r in rows] == [b"a", b"b"]


# --- pushed filters -----------------------------------------------------------------------

def test_filters_we_can_apply_are_taken_and_the_rest_handed_back():
    ds = pytest.importorskip("pyspark.sql.datasource", reason="pyspark's Filter classes are needed")
    import datetime as dt
    from kafkawire.spark.filters import push_filters
    at = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    taken = [ds.EqualTo(("topic",), "orders"), ds.In(("partition",), (1, 2)),
             ds.GreaterThan(("offset",), 10), ds.LessThanOrEqual(("offset",), 20),
             ds.GreaterThanOrEqual(("timestamp",), at), ds.EqualTo(("offset",), 15)]
    handed_back = [ds.Not(ds.EqualTo(("offset",), 12)), ds.IsNotNull(("offset",)),
                   ds.EqualTo(("key",), b"k"), ds.StringStartsWith(("topic",), "or"),
                   ds.GreaterThan(("timestamp",), at.replace(tzinfo=None)), ds.EqualTo(("a", "b"), 1)]
    pushed, rejected = push_filters(taken + handed_back)
    assert rejected == handed_back
    assert pushed.topics == {"orders"} and pushed.keeps_partition("orders", 2) and not pushed.keeps_partition("orders", 3)
    assert (pushed.offset_min, pushed.offset_end) == (15, 16)
    assert pushed.timestamp_lower_us == 1_704_067_200_000_000
