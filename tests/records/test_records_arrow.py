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


@pytest.mark.parametrize("length", [1535, 1536, 1543, 3072, 4615, 14_000])
def test_the_c_crc32c_of_long_inputs_is_the_crc32c_packages(length):
    """Inputs of three 512-byte blocks and more run as three interleaved streams joined by
    shift tables (crc32c.c): around each block boundary and from every alignment, the CRC is
    the crc32c package's."""
    from crc32c import crc32c

    from kafkawire import _native
    data = random.Random(length).randbytes(length + 8)
    for cut in range(8):
        assert _native.records.crc32c(data[cut:cut + length]) == crc32c(data[cut:cut + length])


@settings(SETTINGS, max_examples=60)
@given(st.one_of(st.none(), st.text(max_size=12)), st.one_of(st.none(), st.integers(-(1 << 33), 1 << 33)),
       st.integers(0, 40))
def test_topic_and_partition_columns_are_the_oracles(topic, partition, n_records):
    """The native path writes the topic and partition columns from bytes (repeat_binary in C,
    ``bytes * n``); the oracle uses pa.repeat: the same columns, or the same error."""
    buf = build_batch([(b"k", b"v", [], TS)] * n_records) if n_records else b""
    assert_same(buf, topic=topic, partition=partition)


@SETTINGS
@given(st.binary(max_size=40), st.integers(0, 300))
def test_repeat_binary_is_pa_repeat(value, n):
    from kafkawire import _native
    offsets, data = _native.records.repeat_binary(value, n)
    column = pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    column.validate(full=True)
    assert column.equals(pa.repeat(pa.scalar(value, pa.binary()), n))


def test_bounded_arrow_fuzz_run():
    """A thousand seeded mutations of the fuzz corpus through records_to_arrow, both paths."""
    from fuzz_native import corpus, run
    assert run(corpus(), inputs=1000, seed=26, arrow=True) == []


def _varint(value: int, width: int, bits: int = 32) -> bytes:
    """value zigzag-encoded as a varint of at least ``width`` bytes (padded with continuation
    bytes, which Java's reader accepts), as a hostile or odd producer may write it."""
    v = ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)
    out = bytearray()
    while v >= 0x80 or len(out) < width - 1:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


_NULLABLE = st.one_of(st.none(), st.binary(max_size=12))
_HEADER_KEYS = st.sampled_from([b"h", b"", b"caf\xc3\xa9", b"\xed\xa0\x80x", b"\xff", b"trace-id"])
_WIDTH = st.sampled_from([1, 1, 1, 1, 1, 1, 2, 4, 5])  # 5: the longest an int takes


@st.composite
def _odd_record(draw):
    """One record's body with each varint at a drawn width (a long one makes the one-pass loop
    step aside), nulls, header keys ASCII, UTF-8 and not UTF-8; the timestamp delta may push
    the timestamp past int64."""
    def blob(value, width):
        return _varint(-1, width) if value is None else _varint(len(value), width) + value
    key, value = draw(_NULLABLE), draw(_NULLABLE)
    headers = draw(st.lists(st.tuples(_HEADER_KEYS, _NULLABLE), max_size=3))
    body = (b"\x00" + _varint(draw(st.sampled_from([0, 5, -3, 1 << 40, 1 << 62])), draw(st.sampled_from([1, 1, 1, 2, 9, 10])), 64)
            + _varint(draw(st.integers(0, 3)), draw(_WIDTH)) + blob(key, draw(_WIDTH)) + blob(value, draw(_WIDTH))
            + _varint(len(headers), draw(_WIDTH))
            + b"".join(_varint(len(k), draw(_WIDTH)) + k + blob(v, draw(_WIDTH)) for k, v in headers))
    return _varint(len(body), draw(_WIDTH)) + body


def _raw_batch(records: list, base_offset: int, base_timestamp: int, attributes: int) -> bytes:
    from crc32c import crc32c

    from kafkawire.records.layout import POST_CRC, PRE_CRC
    post = POST_CRC.pack(attributes, len(records) - 1, base_timestamp, base_timestamp, -1, -1, -1, len(records))
    body = post + b"".join(records)
    return PRE_CRC.pack(base_offset, 9 + len(body), 0, 2, crc32c(body)) + body


@settings(SETTINGS, max_examples=50)
@given(st.lists(st.tuples(st.lists(_odd_record(), min_size=1, max_size=6), st.sampled_from([0, 1 << 62]),
                          st.sampled_from([TS, TS, TS, (1 << 63) - 10]), st.sampled_from([0, 0x08])), max_size=3))
def test_odd_varints_nulls_and_header_keys_give_the_oracles_table(batches):
    """The one-pass C loop (columns_fast.c) takes a batch whole or steps aside for the general
    parser: long varints, nulls after present values (validity bits written late), non-UTF-8
    header keys and timestamps past int64 all give the oracle's table or error."""
    buf = b"".join(_raw_batch(*batch) for batch in batches)
    assert_same(buf, verify_crc=True)
