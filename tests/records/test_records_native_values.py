"""The raft path's bulk record calls in C against their pure definitions (issue 28): RecordBatch.values
(every value as bytes, what a raft node hands its listeners) and RecordBatchBuilder.append_values,
the bulk append a raft leader builds its batches with: the C version (RecordWriter.append_values) against its definition, the pure
``_append_values_pure`` (one pure append per value). The same calls, mixed with single appends,
on two builders: the same return values, errors (class and message), builder state after every
call and batch bytes. The values include what the C code hands to the pure method (memoryview
and bytearray values, generators, odd timestamps, offset deltas past int32)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkawire.records import RecordBatchBuilder, iter_batches
from kafkawire.records import builder as builder_module
from kafkawire.records.batch import RecordBatch
from kafkawire.records.errors import CorruptRecordError
from kafkawire.records.layout import RECORD_BATCH_OVERHEAD
from records_testlib import CODECS, builder_state, built_or_error

pytestmark = pytest.mark.skipif(builder_module._WriterBase is object,
                                reason="the C extension is not built (pip install -e . builds it)")

SETTINGS = settings(max_examples=300, deadline=timedelta(seconds=5),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

class OneShot(list):
    """Values given as an iterator: each run gets a fresh one (``_fresh``)."""


values = st.one_of(st.none(), st.binary(max_size=300), st.binary(max_size=3).map(memoryview),
                   st.binary(max_size=3).map(bytearray))
value_lists = st.one_of(st.lists(st.one_of(st.none(), st.binary(max_size=300)), max_size=20),
                        st.lists(st.binary(max_size=300), max_size=20).map(tuple),
                        st.lists(values, max_size=6), st.lists(values, max_size=6).map(tuple),
                        st.lists(st.binary(max_size=4), max_size=4).map(OneShot))
timestamps = st.one_of(st.integers(-3, 3), st.integers(1_600_000_000_000, 1_800_000_000_000),
                       st.sampled_from([-(1 << 63), (1 << 63) - 1, 1 << 63, 1.5, "5"]))


@st.composite
def steps(draw):
    """A bulk call, or a single append (which may set an offset delta near int32's end)."""
    if draw(st.integers(0, 3)):
        return "bulk", draw(value_lists), draw(timestamps)
    offset_delta = draw(st.one_of(st.none(), st.sampled_from([0x7FFFFFFF - 3, 0x7FFFFFFF, 5])))
    return "one", draw(values), draw(timestamps), offset_delta


def run(bulk, fields, sequence):
    b = RecordBatchBuilder(**fields)
    seen = []
    for step in sequence:
        try:
            if step[0] == "bulk":
                vals = step[1]
                result = bulk(b, _fresh(vals), step[2])
            else:
                result = RecordBatchBuilder._append_pure(b, None, step[1], (), step[2], offset_delta=step[3])
        except (ValueError, TypeError, OverflowError) as e:
            result = (type(e).__name__, str(e))
        seen.append((result, *builder_state(b)))
    seen.append(built_or_error(b))
    return seen


def _fresh(vals):
    return iter(vals) if isinstance(vals, OneShot) else vals


@SETTINGS
@given(st.lists(steps(), max_size=6),
       st.one_of(st.none(), st.integers(0, 1 << 45), st.sampled_from([-1, (1 << 63) - 1])))
def test_bulk_appends_give_the_pure_results_errors_state_and_bytes(sequence, base_timestamp):
    fields = dict(base_timestamp=base_timestamp)
    assert run(RecordBatchBuilder.append_values, fields, sequence) == \
        run(RecordBatchBuilder._append_values_pure, fields, sequence)


def test_a_raft_batch_is_the_one_per_record_appends_would_write():
    """What the raft leader writes (1000 records of 256 bytes, one timestamp) equals the batch of
    1000 single appends, and reads back as those records."""
    payload = bytes(range(256))
    bulk, single = RecordBatchBuilder(base_offset=7), RecordBatchBuilder(base_offset=7)
    assert bulk.append_values((payload,) * 600, 1_764_000_000_000) == 599
    assert bulk.append_values([payload] * 400, 1_764_000_000_005) == 999
    for i in range(1000):
        single.append(None, payload, (), 1_764_000_000_000 if i < 600 else 1_764_000_000_005)
    assert bulk.build() == single.build()
    (batch,) = iter_batches(bulk.build())
    records = list(batch)
    assert [r.offset_delta for r in records] == list(range(1000))
    assert all(r.key is None and r.value == payload and not r.headers for r in records)
    assert records[-1].timestamp_delta == 5


def test_nothing_is_written_when_a_value_is_not_bytes():
    """A value of another type sends the whole call to the pure method before anything changed:
    it appends the values before the bad one and raises at it, as single appends do."""
    native, pure = RecordBatchBuilder(), RecordBatchBuilder()
    for b, bulk in ((native, RecordBatchBuilder.append_values), (pure, RecordBatchBuilder._append_values_pure)):
        with pytest.raises(TypeError):
            bulk(b, [b"a", b"b", 3, b"c"], 10)
    assert native._count == pure._count == 2 and bytes(native._records) == bytes(pure._records)


def test_a_list_of_bytes_is_written_in_c():
    """The C version takes the raft leader's call itself (the pure method is not called)."""
    class Watched(RecordBatchBuilder):
        def _append_values_pure(self, values, timestamp):
            raise AssertionError("handed to the pure method")

    b = Watched()
    assert b.append_values([b"x"] * 3, 5) == 2 and b.append_values((b"y", None), 6) == 4
    with pytest.raises(AssertionError):
        b.append_values([memoryview(b"z")], 7)


def _values_or_error(batch, read):
    try:
        return read(batch)
    except (CorruptRecordError, TypeError) as e:
        return type(e).__name__, str(e)


@SETTINGS
@given(st.lists(st.one_of(st.binary(max_size=300), st.none()), max_size=30), st.sampled_from(CODECS),
       st.integers(0, 40), st.binary(min_size=1, max_size=3))
def test_batch_values_are_the_bytes_of_each_record_s_value(values, codec, cut, garbage):
    """RecordBatch.values (in C: decode_values) against its definition, for whole batches of any
    codec, and for uncompressed ones whose records were overwritten near the end (the same
    CorruptRecordError) or hold a null value (the same TypeError)."""
    builder = RecordBatchBuilder(compression_type=codec)
    builder.append_values(values, 1_764_000_000_000)
    data = bytearray(builder.build())
    if not codec and values and cut:
        at = max(RECORD_BATCH_OVERHEAD, len(data) - cut - len(garbage))
        data[at:at + len(garbage)] = garbage          # in place: the batch's length stays
    (batch,) = iter_batches(bytes(data), verify_crc=False)
    assert _values_or_error(batch, RecordBatch.values) == _values_or_error(
        batch, lambda b: [bytes(r.value) for r in b])


def test_batch_values_are_made_in_c(monkeypatch):
    """A raft batch's values come from the C walk, not from Record objects."""
    builder = RecordBatchBuilder()
    builder.append_values([b"a", b"bc"] * 3, 1_764_000_000_000)
    (batch,) = iter_batches(builder.build())
    monkeypatch.setattr(RecordBatch, "__iter__", lambda self: (_ for _ in ()).throw(AssertionError("records made")))
    assert batch.values() == [b"a", b"bc"] * 3
