"""The Spark reader's native path (the C extension's record columns) against its pure path.

The oracle rule: for the same log directory, options, column selection and pushed filters,
the Arrow batches of a read through the C extension hold exactly the rows the pure path's
hold (same schema, values, nulls), or the read fails with the same error (class, text,
file, byte). No Spark and no Java: these read the way Spark's tasks do (plan_batch,
read_task), in this process.
"""
from __future__ import annotations

import dataclasses
import random
import re
import struct
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("pyarrow", reason="kafkawire.spark builds Arrow batches: pip install -e '.[dev]'")

from kafkawire import _native  # noqa: E402
from kafkawire.records import CorruptRecordError, build_batch, build_end_txn_marker_batch  # noqa: E402
from kafkawire.spark.columns import arrow_schema  # noqa: E402
from kafkawire.spark.filters import PushedFilters  # noqa: E402
from kafkawire.spark.options import parse_options  # noqa: E402
from kafkawire.spark.plan import plan_batch  # noqa: E402
from kafkawire.spark.reader import default_names, read_task, settings_for  # noqa: E402
from tests.conftest import REFERENCE, require  # noqa: E402
from tests.records.native_diff import fix_crc  # noqa: E402
from tests.records.records_testlib import batch_fields, build, record_specs  # noqa: E402
from tests.spark.logdata import T0, numbered_batches, segment_files, write_partition  # noqa: E402

pytestmark = pytest.mark.skipif(_native.records is None, reason="the C extension is not built "
                                "(.venv/bin/python setup.py build_ext --inplace) or KAFKAWIRE_PURE=1")
SETTINGS = settings(max_examples=60, deadline=timedelta(seconds=10),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def read(path, native: bool, *, names=None, pushed=None, **options):
    """Every row of a batch read (or its error), through one path."""
    opts = parse_options({"path": str(path), **{k: str(v) for k, v in options.items()}}, streaming=False)
    pushed = pushed or PushedFilters()
    names = names or default_names(opts)
    read_settings = dataclasses.replace(settings_for(names, opts, pushed), native=native)
    rows = []
    try:
        for task in plan_batch(opts, pushed):
            for batch in read_task(task, read_settings):
                assert batch.schema == arrow_schema(names)
                batch.validate(full=True)
                rows += batch.to_pylist()
    except CorruptRecordError as e:
        return ("CorruptRecordError", str(e), e.reason, e.position, e.file)
    except OverflowError as e:
        return ("OverflowError", str(e))
    return rows


def assert_same(path, **kwargs):
    oracle = read(path, False, **kwargs)
    assert read(path, True, **kwargs) == oracle
    return oracle


def _txn(pid, values, **fields):
    return build_batch([(None, v, [("h", v)], T0) for v in values], is_transactional=True,
                       producer_id=pid, producer_epoch=0, **fields)


def _marker(pid, commit):
    return build_end_txn_marker_batch(commit, producer_id=pid, producer_epoch=0, coordinator_epoch=1,
                                      timestamp=T0)


COLUMN_SETS = [None, ["value", "timestamp"], ["offset"], ["headers", "key", "topic", "partition"],
               ["isControl", "controlType", "value", "baseOffset", "producerEpoch"]]


@SETTINGS
@given(batches=st.lists(st.tuples(batch_fields(), record_specs(max_records=6)), min_size=1, max_size=6),
       markers=st.lists(st.booleans(), max_size=3), names=st.sampled_from(COLUMN_SETS),
       committed=st.booleans(), control=st.booleans())
def test_random_batches_read_the_same_rows_through_both_paths(batches, markers, names, committed, control):
    """Every codec, timestamp type, header shape and null, transactional batches with and
    without their markers, control batches shown or not, read committed or not, and any
    column selection: the same rows."""
    data = [build(fields, specs) for fields, specs in batches]
    pids = sorted({fields["producer_id"] for fields, _ in batches if fields["is_transactional"]})
    data += [_marker(pid, commit) for pid, commit in zip(pids, markers)]
    with tempfile.TemporaryDirectory() as tmp:
        path = write_partition(Path(tmp) / "r-0", data, segment_bytes=4000, index_interval_bytes=100)
        rows = assert_same(path, names=names, includeControl=control, includeAborted=not committed)
    assert isinstance(rows, list)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), specs=st.lists(record_specs(max_records=5), min_size=2, max_size=5),
       compression=st.sampled_from([0, 3]), fix=st.booleans(), skip=st.booleans())
def test_corrupted_segments_fail_or_skip_the_same_way(seed, specs, compression, fix, skip):
    """Bytes changed in a segment (with the batch's CRC made right again, so that the
    record decoder meets them, or not): the same error, naming the same file and byte, or
    with failOnCorruption=false the same rows and the same corruption rows."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        data = [build({"compression_type": compression}, s) for s in specs]
        path = write_partition(Path(tmp) / "c-0", data, index_interval_bytes=1)
        (log,) = segment_files(path)
        raw = bytearray(open(log, "rb").read())
        starts, at = [], 0
        for batch in data:
            starts.append(at)
            at += len(batch)
        victim = rng.randrange(len(starts))
        lo = starts[victim] + (61 if rng.random() < 0.9 else 0)
        hi = starts[victim] + len(data[victim])
        for _ in range(rng.randint(1, 3)):
            raw[rng.randrange(lo, hi)] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        if fix:
            fix_crc(raw, starts[victim])
        open(log, "wb").write(bytes(raw))
        assert_same(path, failOnCorruption=not skip)


def test_read_committed_control_batches_and_headers(tmp_path):
    """Aborted and committed transactions, markers shown and hidden, the LSO."""
    batches = [_txn(1, [b"a", b"b"]), [(b"k", b"plain", [("x", None)], T0)], _txn(2, [b"c"]), _marker(1, True),
               _marker(2, False), _txn(3, [b"open"]), [(None, None, [], T0 + 1)]]
    path = write_partition(tmp_path / "t-0", batches, index_interval_bytes=1)
    for committed in (False, True):
        for control in (False, True):
            rows = assert_same(path, includeAborted=not committed, includeControl=control)
            assert rows and all(isinstance(r, dict) for r in rows)
    shown = assert_same(path, includeControl=True)
    assert [r["controlType"] for r in shown if r["isControl"]] == ["COMMIT", "ABORT"]


def test_pushed_filters_and_arrow_batch_boundaries(tmp_path):
    """Offset and timestamp filters applied to the native columns, over many Arrow batches."""
    path = write_partition(tmp_path / "f-0", numbered_batches(900, 50), segment_bytes=1 << 20)
    pushed = PushedFilters(offset_min=1000, offset_end=40_000,
                           timestamp_bounds=[("greater_equal", (T0 + 20_000) * 1000)])
    rows = assert_same(path, pushed=pushed)
    assert rows[0]["offset"] == 2000 and rows[-1]["offset"] == 39_999
    assert len(assert_same(path, names=["value", "timestamp"])) == 45_000


def test_a_timestamp_spark_cannot_hold_is_the_same_error(tmp_path):
    path = write_partition(tmp_path / "x-0", [[(b"k", b"v", [], T0)], [(b"k", b"far", [], 2**62)]])
    error = assert_same(path)
    assert error[0] == "CorruptRecordError" and "timestamp out of range at offset 1" in error[1]


def test_a_bad_control_record_key_leaves_no_row_behind(tmp_path):
    """A control batch whose key does not parse: the same error, or with skipping the same
    rows (none of that batch's)."""
    bad = bytearray(_marker(5, True))
    bad[61 + 5] = 0xFF   # the key's version field (after 5 bytes of record framing): negative
    fix_crc(bad)
    path = write_partition(tmp_path / "k-0", [[(b"k", b"v", [], T0)], bytes(bad), [(b"k", b"w", [], T0)]])
    error = assert_same(path, includeControl=True)
    assert error[0] == "CorruptRecordError" and "invalid control record key version" in error[1]
    rows = assert_same(path, includeControl=True, failOnCorruption=False)
    assert [r["value"] for r in rows if r["corruption"] is None] == [b"v", b"w"]


def _hostile(tmp_path, name, patch) -> Path:
    """A partition whose one batch has header bytes changed by ``patch`` (CRC made right)."""
    raw = bytearray(build_batch([(b"k", b"a", [], T0), (b"k", b"b", [], T0 + 10)]))
    patch(raw)
    fix_crc(raw)
    path = tmp_path / name
    path.mkdir()
    (path / "00000000000000000000.log").write_bytes(bytes(raw))
    return path


def test_an_offset_past_int64_is_a_corrupt_batch_naming_file_and_byte(tmp_path):
    """A base offset (not covered by the CRC) that puts a record's offset past int64: both
    paths fail with the same CorruptRecordError at the batch, or skip the batch alike."""
    path = _hostile(tmp_path, "o-0", lambda raw: struct.pack_into(">q", raw, 0, 2**63 - 1))
    error = assert_same(path)
    assert error[0] == "CorruptRecordError" and error[3] == 0 and error[4].endswith(".log")
    assert "offset passes int64" in error[2]
    rows = assert_same(path, failOnCorruption=False)
    assert [r["offset"] for r in rows] == [None] and "offset passes int64" in rows[0]["corruption"]


def test_a_timestamp_past_int64_is_out_of_range_on_both_paths(tmp_path):
    """A base timestamp whose delta takes the next record's timestamp past int64."""
    path = _hostile(tmp_path, "t-0", lambda raw: struct.pack_into(">q", raw, 27, 2**63 - 5))
    error = assert_same(path)
    assert error[0] == "CorruptRecordError" and "timestamp out of range at offset 0 of t-0" in error[1]


def test_legacy_messages_between_v2_batches_read_the_same(tmp_path):
    """Magic 0 and 1 messages (plain and gzip-wrapped, as an old Kafka wrote them) before and
    after v2 batches in one segment: the native path reads them through Record objects."""
    legacy = pytest.importorskip("kafka.record.legacy_records", reason="kafka-python builds legacy message sets")

    def message_set(magic, codec, base, count):
        builder = legacy.LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
        for i in range(count):
            builder.append(base + i, timestamp=T0 + i, key=b"k%d" % i, value=b"v%d" % i)
        return bytes(builder.build())

    v2 = build_batch([(b"k", b"new", [("h", b"1")], T0)], base_offset=3)
    raw = message_set(0, 0, 0, 2) + message_set(1, 1, 2, 1) + v2 + message_set(1, 0, 4, 2)
    path = tmp_path / "l-0"
    path.mkdir()
    (path / "00000000000000000000.log").write_bytes(raw)
    rows = assert_same(path)
    assert [r["offset"] for r in rows] == [0, 1, 2, 3, 4, 5]
    assert [r["timestampType"] for r in rows] == [-1, -1, 0, 0, 0, 0]
    assert assert_same(path, names=["value", "timestamp"])[3]["value"] == b"new"


def _reference_paths():
    root = REFERENCE / "kraft-data"
    if not root.exists():
        return []
    partitions = sorted({p.parent for p in root.rglob("*.log") if re.match(r"^\d{20}\.log$", p.name)})
    snapshots = sorted(p for p in root.rglob("*.checkpoint")
                       if re.match(r"^(\d{20}-\d{10}|bootstrap)\.checkpoint$", p.name))
    return partitions + snapshots


def test_every_real_kafka_sample_reads_the_same(tmp_path):
    """Every partition and snapshot Kafka wrote in ../shared/reference/kraft-data (the
    metadata log decoded as well): the same rows, or the same error, on both paths."""
    read_the_same_both_ways(_reference_paths() or [require(REFERENCE / "kraft-data")])


def read_the_same_both_ways(paths) -> None:
    """The check above on partition directories and snapshots (tests/interop/
    test_held_out_claims_on_kafka_data.py gives it those a Kafka node wrote in the run)."""
    for path in paths:
        metadata = path.name.startswith("__cluster_metadata-") or path.suffix == ".checkpoint"
        for options in ({}, {"decode": "metadata"} if metadata else {"includeHeaders": "false"}):
            assert_same(path, includeControl=True, **options)


def test_without_the_extension_a_read_asking_for_it_runs_the_pure_path(tmp_path, monkeypatch):
    """A worker where the C extension is not built (or KAFKAWIRE_PURE=1) reads the same
    rows through Record objects, whatever the settings ask for."""
    path = write_partition(tmp_path / "p-0", numbered_batches(5, 3))
    want = read(path, True)
    monkeypatch.setattr(_native, "records", None)
    assert read(path, True) == want and len(want) == 15
