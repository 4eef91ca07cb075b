"""Helpers and hypothesis strategies shared by the tests in tests/records/."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import strategies as st

from kafkawire.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, RecordBatchBuilder
from tests.conftest import SHARED as CONFTEST_SHARED

# ../shared beside the repository, or $KAFKAWIRE_SHARED (tests/conftest.py).
SHARED = CONFTEST_SHARED
REFERENCE = SHARED / "reference"

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]


def reference_dir(name: str) -> Path:
    path = REFERENCE / name
    if not path.is_dir():
        pytest.skip(f"reference data {path} is absent (it lives in ../shared beside the repo)")
    return path


def as_bytes(x):
    return None if x is None else bytes(x)


def builder_state(builder) -> tuple:
    """What a RecordBatchBuilder holds after an append, as the native and pure appends must leave
    it alike: the records' bytes, their count, the last offset delta, the largest timestamp, the
    base timestamp."""
    return (bytes(builder._records), builder._count, builder._last_offset_delta, builder._max_record_timestamp,
            builder.base_timestamp)


def built_or_error(builder):
    """The batch ``builder`` builds, or the error (class name, message) building it raises."""
    try:
        return builder.build()
    except (ValueError, OverflowError, struct.error) as e:  # struct.error: a timestamp past int64
        return type(e).__name__, str(e)


def plain_headers(headers):
    return [(k, as_bytes(v)) for k, v in headers]


# --- hypothesis strategies -------------------------------------------------------------

nullable_bytes = st.one_of(st.none(), st.binary(max_size=300))
header_key = st.text(max_size=20)
headers = st.lists(st.tuples(header_key, nullable_bytes), max_size=4)
timestamps = st.integers(min_value=0, max_value=(1 << 45))


@st.composite
def record_specs(draw, max_records=20):
    """A list of (key, value, headers, timestamp, offset_delta) with increasing deltas."""
    n = draw(st.integers(min_value=1, max_value=max_records))
    gaps = draw(st.lists(st.integers(min_value=1, max_value=1000), min_size=n, max_size=n))
    first = draw(st.integers(min_value=0, max_value=1000))
    deltas, d = [], first
    for g in gaps:
        deltas.append(d)
        d += g
    recs = []
    for i in range(n):
        recs.append((draw(nullable_bytes), draw(nullable_bytes), draw(headers),
                     draw(timestamps), deltas[i]))
    return recs


@st.composite
def batch_fields(draw):
    return dict(
        base_offset=draw(st.integers(min_value=0, max_value=(1 << 62))),
        partition_leader_epoch=draw(st.integers(min_value=-1, max_value=(1 << 31) - 1)),
        compression_type=draw(st.sampled_from(CODECS)),
        timestamp_type=draw(st.sampled_from([0, 1])),
        is_transactional=draw(st.booleans()),
        producer_id=draw(st.integers(min_value=-1, max_value=(1 << 63) - 1)),
        producer_epoch=draw(st.integers(min_value=-1, max_value=(1 << 15) - 1)),
        base_sequence=draw(st.integers(min_value=-1, max_value=(1 << 31) - 1)),
    )


def build(fields, specs):
    builder = RecordBatchBuilder(**fields)
    for key, value, hdrs, ts, od in specs:
        builder.append(key, value, hdrs, ts, offset_delta=od)
    return builder.build()
