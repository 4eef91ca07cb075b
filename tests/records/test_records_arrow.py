"""records_to_arrow (issue 26): batches straight into Arrow columns, native against its oracle.

The oracle builds the same table from Record objects (native=False); every test requires the
C path to give an equal table (schema, values, nulls) or the same error (class, reason, byte
position), on valid batches of every codec and on the hostile corpus of the native tests.
"""
from __future__ import annotations

import random
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkawire.records import CorruptRecordError, RecordBatchBuilder, build_batch, build_control_batch
from kafkawire.records import record_decoding
from native_diff import mutate
from records_testlib import batch_fields, build, record_specs

pa = pytest.importorskip("pyarrow")
from kafkawire.spark.record_columns import records_to_arrow  # noqa: E402

pytestmark = pytest.mark.skipif(record_decoding.decode_records_native is None,
                                reason="the C extension is not built (pip install -e . builds it)")
TS = 1_700_000_000_000
SETTINGS = settings(max_examples=200, deadline=timedelta(seconds=5),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def table_or_error(buf, native, **kwargs):
    try:
        table = records_to_arrow(buf, native=native, file="f.log", **kwargs)
    except CorruptRecordError as e:
        return ("CorruptRecordError", e.reason, e.position, e.file)
    except (OverflowError, ValueError) as e:
        return (type(e).__name__, str(e))
    table.validate(full=True)
    return table.schema, table.to_pylist()


def assert_same(buf, **kwargs):
    oracle = table_or_error(buf, False, **kwargs)
    assert table_or_error(buf, True, **kwargs) == oracle
    return oracle


@SETTINGS
@given(st.lists(st.tuples(batch_fields(), record_specs(max_records=8)), min_size=0, max_size=4))
def test_batches_of_every_codec_give_the_oracles_table(batches):
    buf = b"".join(build(fields, specs) for fields, specs in batches)
    schema, rows = assert_same(buf, topic="t", partition=7)
    assert len(rows) == sum(len(specs) for _, specs in batches)
    assert schema.names == ["topic", "partition", "key", "value", "offset", "timestamp", "headers"]


def test_nulls_headers_control_batches_and_non_utf8_header_keys():
    buf = b"".join([
        build_batch([(None, None, [("h", None), ("", b"")], TS), (b"", b"", [], TS)]),
        build_control_batch(2, b"\x00\x00", base_offset=2, timestamp=TS),          # skipped
        RecordBatchBuilder(base_offset=3).build(),                                   # no records
        build_batch([(b"k", b"v", [("\udced\udca0\udc80x", b"1"), ("\udcff", None)], TS)], base_offset=3,
                    timestamp_type=1, max_timestamp=TS + 9),
    ])
    _, rows = assert_same(buf)
    assert [r["offset"] for r in rows] == [0, 1, 3]
    assert rows[1]["headers"] is None and rows[2]["timestamp"] == TS + 9
    # Java's rule: ED A0 80 (an encoded surrogate) is one U+FFFD
    assert rows[2]["headers"][0]["key"] == "\ufffdx" and rows[2]["headers"][1]["key"] == "\ufffd"


def test_an_empty_buffer_is_an_empty_table():
    schema, rows = assert_same(b"")
    assert rows == [] and schema.names == ["key", "value", "offset", "timestamp", "headers"]


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), fields=batch_fields(), specs=record_specs(max_records=5))
def test_hostile_batches_give_the_oracles_error(seed, fields, specs):
    rng = random.Random(seed)
    buf = build(fields, specs) + build_batch([(b"next", b"batch", [("a", b"b")], TS)], base_offset=1 << 40)
    assert_same(mutate(rng, buf), verify_crc=rng.random() < 0.5)


def test_legacy_message_sets_are_refused():
    import kafka.record.legacy_records as kp_legacy
    legacy = kp_legacy.LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    legacy.append(0, timestamp=TS, key=b"old", value=b"msg")
    with pytest.raises(ValueError, match="magic 1 message set"):
        records_to_arrow(bytes(legacy.build()))


@SETTINGS
@given(st.binary(max_size=5000), st.integers(0, 16))
def test_the_c_crc32c_is_the_crc32c_packages(data, cut):
    """The one-pass loop checks batch CRCs with its own CRC-32C (SSE4.2 or a table)."""
    from crc32c import crc32c

    from kafkawire import _native
    assert _native.records.crc32c(data[cut:]) == crc32c(data[cut:])


def test_bounded_arrow_fuzz_run():
    """A thousand seeded mutations of the fuzz corpus through records_to_arrow, both paths."""
    from fuzz_native import corpus, run
    assert run(corpus(), inputs=1000, seed=26, arrow=True) == []
