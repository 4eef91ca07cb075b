"""Byte equality and cross-decoding with independent implementations.

kafka-python 3.x, aiokafka (its C extension and its pure-Python classes) and kio each
build and read v2 batches. For uncompressed batches built from the same inputs our bytes
must equal theirs (kafka-python writes partitionLeaderEpoch 0, aiokafka -1 like Java,
so ours is set to match); for every
codec they support, they must read ours and we must read theirs.
confluent-kafka is not used: it only produces through a broker.
"""

from __future__ import annotations

import datetime
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aiokafka.record.default_records as ak
import kafka.record.default_records as kp
from kafkawire.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, RecordBatch, RecordBatchBuilder
from records_testlib import as_bytes, plain_headers

# What each writes as partitionLeaderEpoch (Java's producer writes -1).
EPOCH = {"kafka-python": 0, "aiokafka-c": -1, "aiokafka-py": -1}
IMPLS = {
    "kafka-python": (kp.DefaultRecordBatchBuilder, kp.DefaultRecordBatch),
    "aiokafka-c": (ak.DefaultRecordBatchBuilder, ak.DefaultRecordBatch),
    "aiokafka-py": (ak._DefaultRecordBatchBuilderPy, ak._DefaultRecordBatchPy),
}
CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]

nullable = st.one_of(st.none(), st.binary(max_size=200))
records_st = st.lists(
    st.tuples(nullable, nullable,
              st.lists(st.tuples(st.text(max_size=10), nullable), max_size=3),
              st.integers(min_value=0, max_value=2**41)),
    min_size=1, max_size=15)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_aiokafka_c_extension_is_really_loaded():
    assert ak.DefaultRecordBatch is not ak._DefaultRecordBatchPy


def theirs(impl, records, codec=NONE, transactional=False, producer=(-1, -1, -1)):
    builder_cls, _ = IMPLS[impl]
    builder = builder_cls(magic=2, compression_type=codec, is_transactional=int(transactional),
                          producer_id=producer[0], producer_epoch=producer[1],
                          base_sequence=producer[2], batch_size=1 << 24)
    for i, (key, value, headers, ts) in enumerate(records):
        assert builder.append(i, timestamp=ts, key=key, value=value, headers=headers) is not None
    return bytes(builder.build())


def ours(records, codec=NONE, transactional=False, producer=(-1, -1, -1), epoch=0):
    builder = RecordBatchBuilder(partition_leader_epoch=epoch, compression_type=codec,
                                 is_transactional=transactional, producer_id=producer[0],
                                 producer_epoch=producer[1], base_sequence=producer[2])
    for key, value, headers, ts in records:
        builder.append(key, value, headers, ts)
    return builder.build()


def check_our_decoding(raw, records, codec):
    batch = RecordBatch.from_buffer(raw)
    batch.verify_crc()
    # kafka-python and aiokafka send a batch uncompressed when compression does not help.
    assert batch.compression_type in (codec, NONE)
    got = [(as_bytes(r.key), as_bytes(r.value), plain_headers(r.headers), r.timestamp)
           for r in batch]
    assert got == [(k, v, list(h), ts) for k, v, h, ts in records]
    assert [r.offset for r in batch] == list(range(len(records)))


def check_their_decoding(impl, raw, records):
    _, batch_cls = IMPLS[impl]
    batch = batch_cls(raw)
    assert batch.validate_crc()
    got = [(r.key, r.value, [(k, v) for k, v in r.headers], r.timestamp, r.offset) for r in batch]
    assert got == [(k, v, list(h), ts, i) for i, (k, v, h, ts) in enumerate(records)]


@pytest.mark.parametrize("impl", IMPLS)
@SETTINGS
@given(records=records_st, transactional=st.booleans(),
       producer=st.sampled_from([(-1, -1, -1), (4000, 2, 17)]))
def test_uncompressed_bytes_equal(impl, records, transactional, producer):
    if transactional and producer[0] < 0:
        producer = (1, 0, 0)
    raw = theirs(impl, records, NONE, transactional, producer)
    assert RecordBatch.from_buffer(raw).partition_leader_epoch == EPOCH[impl]
    assert ours(records, NONE, transactional, producer, EPOCH[impl]) == raw


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("impl", IMPLS)
@settings(SETTINGS, max_examples=25)
@given(records=records_st)
def test_they_read_ours_and_we_read_theirs(impl, codec, records):
    check_our_decoding(theirs(impl, records, codec), records, codec)
    check_their_decoding(impl, ours(records, codec), records)


def test_kafka_python_writes_epoch_zero_where_java_writes_minus_one():
    records = [(b"k", b"v", [], 1000)]
    theirs_raw, ours_raw = theirs("kafka-python", records), RecordBatchBuilder()
    ours_raw.append(b"k", b"v", [], 1000)
    ours_raw = ours_raw.build()
    assert RecordBatch.from_buffer(theirs_raw).partition_leader_epoch == 0
    assert RecordBatch.from_buffer(ours_raw).partition_leader_epoch == -1
    # Everything but the epoch (bytes 12..16, outside the CRC) is the same.
    assert ours_raw[:12] == theirs_raw[:12] and ours_raw[16:] == theirs_raw[16:]


# --- kio ------------------------------------------------------------------------------

kio_records_st = st.lists(
    st.tuples(nullable, nullable,
              st.lists(st.tuples(st.text(max_size=10), nullable), max_size=3),
              st.integers(min_value=0, max_value=2**31).map(lambda s: s * 1000)),
    min_size=1, max_size=15)


def kio_build(records, base_offset=0):
    from kio.records.schema import NewRecordBatch, Record, RecordHeader
    from kio.records.writers import write_new_batch
    from kio.static.primitive import i8, i16, i32, i64

    recs = tuple(
        Record(attributes=i8(0),
               timestamp=datetime.datetime.fromtimestamp(ts / 1000, datetime.UTC),
               offset=i64(base_offset + i), key=key, value=value,
               headers=tuple(RecordHeader(key=hk.encode(), value=hv) for hk, hv in headers))
        for i, (key, value, headers, ts) in enumerate(records))
    out = io.BytesIO()
    write_new_batch(out, NewRecordBatch(producer_id=i64(-1), producer_epoch=i16(-1),
                                        base_sequence=i32(-1), records=recs, attributes=i16(0)))
    return out.getvalue()


@SETTINGS
@given(records=kio_records_st, base_offset=st.integers(min_value=0, max_value=2**40))
def test_kio_bytes_equal_and_cross_decode(records, base_offset):
    from kio.records.readers import read_batch

    builder = RecordBatchBuilder(partition_leader_epoch=0, base_offset=base_offset)
    for key, value, headers, ts in records:
        builder.append(key, value, headers, ts)
    raw = builder.build()
    kio_raw = kio_build(records, base_offset)
    assert raw == kio_raw
    batch, size = read_batch(raw, 0)  # kio checks the CRC
    assert size == len(raw) and batch.base_offset == base_offset
    got = [(r.key, r.value, [(h.key.decode(), h.value) for h in r.headers],
            int(r.timestamp.timestamp() * 1000), r.offset) for r in batch.records]
    assert got == [(k, v, list(h), ts, base_offset + i) for i, (k, v, h, ts) in enumerate(records)]
    check_our_decoding_offset = RecordBatch.from_buffer(kio_raw)
    assert [r.offset for r in check_our_decoding_offset] == [base_offset + i for i in range(len(records))]


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
@pytest.mark.parametrize("impl", IMPLS)
def test_compressible_batches_really_compressed_both_ways(impl, codec):
    records = [(b"key-%d" % i, b"value " * 50 + bytes([i]), [("trace", b"id-%d" % i)],
                1_700_000_000_000 + i) for i in range(200)]
    raw = theirs(impl, records, codec)
    assert RecordBatch.from_buffer(raw).compression_type == codec
    check_our_decoding(raw, records, codec)
    raw = ours(records, codec)
    assert RecordBatch.from_buffer(raw).compression_type == codec
    check_their_decoding(impl, raw, records)
