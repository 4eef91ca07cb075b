"""The native (C) RecordBatchBuilder.append against its oracle, the pure append (issue 26).

Each test makes the same calls on two builders, one through each append, and requires the
same return values, the same errors (class and message), the same builder state after every
call and the same batch bytes. The arguments include what the C code hands to the pure
append (memoryview keys, header generators, lists as pairs, null or unencodable header keys,
ints past int64) so that hand-over is checked too.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkawire.records import RecordBatchBuilder
from kafkawire.records import builder as builder_module
from records_testlib import CODECS, builder_state, built_or_error

pytestmark = pytest.mark.skipif(builder_module._WriterBase is object,
                                reason="the C extension is not built (pip install -e . builds it)")

PURE = RecordBatchBuilder._append_pure
NATIVE = RecordBatchBuilder.append
SETTINGS = settings(max_examples=400, deadline=timedelta(seconds=5),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

class Generated(list):
    """Headers given as a generator: each run gets a fresh one (``fresh``)."""


def fresh(arg):
    return (pair for pair in arg) if isinstance(arg, Generated) else arg


ints = st.one_of(st.integers(-2, 3), st.integers(-(1 << 64), 1 << 64), st.integers(0, (1 << 31) + 5),
                 st.sampled_from([-(1 << 63), (1 << 63) - 1, 1 << 63, -1, 0x7FFFFFFF, 0x80000000]))
blobs = st.one_of(st.none(), st.binary(max_size=200), st.binary(max_size=3).map(memoryview),
                  st.binary(max_size=3).map(bytearray))
header_keys = st.one_of(st.text(max_size=8), st.just("\udcff\udc80"), st.just("\ud800"), st.none(),
                        st.binary(max_size=4))
pairs = st.one_of(st.tuples(header_keys, blobs), st.lists(st.binary(max_size=2), min_size=2, max_size=2))
headers = st.one_of(st.lists(pairs, max_size=4), st.lists(pairs, max_size=3).map(tuple),
                    st.lists(pairs, max_size=2).map(Generated), st.none(), st.just(()),
                    st.lists(st.tuples(st.just("k"), st.none()), min_size=60, max_size=70))


@st.composite
def calls(draw):
    """(args, kwargs) of one append; the timestamp is never left to the clock, so runs agree."""
    kwargs = {}
    for name, values in (("offset_delta", ints), ("timestamp_delta", ints), ("attributes", ints)):
        if draw(st.integers(0, 3)) == 0:
            kwargs[name] = draw(st.one_of(st.none(), values))
    args = [draw(blobs), draw(blobs), draw(headers)]
    if kwargs.get("timestamp_delta") is None:
        args.append(draw(st.one_of(ints, st.integers(1_600_000_000_000, 1_800_000_000_000))))
    elif draw(st.booleans()):
        args.append(draw(st.one_of(st.none(), ints)))
    return args, kwargs


def run(append, fields, sequence):
    b = RecordBatchBuilder(**fields)
    seen = []
    for args, kwargs in sequence:
        try:
            result = append(b, *map(fresh, args), **kwargs)
        except (ValueError, TypeError, UnicodeError, OverflowError) as e:
            result = (type(e).__name__, str(e))
        seen.append((result, *builder_state(b)))
    seen.append(built_or_error(b))
    return seen


@SETTINGS
@given(st.lists(calls(), max_size=8), st.sampled_from(CODECS),
       st.one_of(st.none(), st.integers(0, 1 << 45), st.sampled_from([-1, (1 << 63) - 1])))
def test_any_appends_give_the_same_results_errors_state_and_bytes(sequence, codec, base_timestamp):
    fields = dict(compression_type=codec, base_timestamp=base_timestamp, max_timestamp=0 if codec else None)
    assert run(NATIVE, fields, sequence) == run(PURE, fields, sequence)


def test_time_defaults_to_now_and_becomes_the_base_timestamp():
    b = RecordBatchBuilder()
    assert b.append(b"k", b"v") == 0
    assert abs(b.base_timestamp - __import__("time").time() * 1000) < 60_000
    assert b._max_record_timestamp == b.base_timestamp


def test_the_benchmark_records_encode_to_the_same_bytes():
    specs = [(b"key-%06d" % i, b"v" * 100, [("header", b"hdrvalue")], 1_700_000_000_000 + i) for i in range(100)]
    pure, native = RecordBatchBuilder(), RecordBatchBuilder()
    for spec in specs:
        PURE(pure, *spec)
        NATIVE(native, *spec)
    assert native.build() == pure.build()


@pytest.mark.parametrize("args, kwargs", [
    ((), dict(key=b"k", value=b"v", headers=[("h", b"x")], timestamp=5)),
    ((b"k",), dict(value=None, timestamp=5, attributes=3)),
    ((b"k", b"v", (), 5), dict(key=b"again")),          # given twice
    ((b"k",), dict(timestamp=5)),                        # value missing
    ((b"k", b"v", (), 5), dict(offset=3)),               # no such argument
    ((b"k", b"v", (), 5, 6), {}),                        # too many positional
])
def test_every_call_shape_gives_the_pure_result_or_error(args, kwargs):
    """Keywords, missing, repeated and unknown arguments: what the pure append does."""
    assert run(NATIVE, {}, [(list(args), kwargs)]) == run(PURE, {}, [(list(args), kwargs)])
