"""Legacy message sets (magic 0 and 1), written by kafka-python's and aiokafka's builders."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aiokafka.record.legacy_records as ak_legacy
import kafka.record.legacy_records as kp_legacy
from kafkawire.records import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    CorruptRecordError,
    LegacyRecordBatch,
    iter_batches,
)
from records_testlib import as_bytes

BUILDERS = {
    "kafka-python": kp_legacy.LegacyRecordBatchBuilder,
    "aiokafka-c": ak_legacy.LegacyRecordBatchBuilder,
    "aiokafka-py": ak_legacy._LegacyRecordBatchBuilderPy,
}
TS = 1_600_000_000_000


def legacy(impl, magic, codec, records, base=0):
    builder = BUILDERS[impl](magic=magic, compression_type=codec, batch_size=1 << 24)
    for i, (key, value) in enumerate(records):
        builder.append(base + i, timestamp=TS + i, key=key, value=value)
    return bytes(builder.build())


RECORDS = [(b"k0", b"v0"), (None, b"v1"), (b"k2", None), (b"", b"")]


@pytest.mark.parametrize("impl", BUILDERS)
@pytest.mark.parametrize("magic", [0, 1])
def test_plain_message_set(impl, magic):
    raw = legacy(impl, magic, NONE, RECORDS, base=100)
    batches = list(iter_batches(raw))
    assert [type(b) for b in batches] == [LegacyRecordBatch] * 4
    for i, batch in enumerate(batches):
        assert batch.magic == magic and batch.is_valid
        assert batch.base_offset == batch.last_offset == 100 + i
        (rec,) = batch.records()
        assert rec.offset == 100 + i
        assert (as_bytes(rec.key), as_bytes(rec.value)) == RECORDS[i]
        assert rec.timestamp == (TS + i if magic == 1 else -1)
        assert rec.timestamp_type == (0 if magic == 1 else -1)
        assert rec.headers == () and rec.sequence == -1
    assert batches[-1].end_position == len(raw)


@pytest.mark.parametrize("impl", BUILDERS)
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4])
def test_compressed_wrapper(impl, magic, codec):
    if impl.startswith("aiokafka") and magic == 0 and codec == LZ4:
        pytest.skip("aiokafka refuses to write magic-0 lz4 (0.8/0.9 brokers)")
    records = [(b"key-%d" % i, b"value " * 20) for i in range(30)]
    raw = legacy(impl, magic, codec, records)
    (wrapper,) = list(iter_batches(raw))
    assert wrapper.compression_type == codec and wrapper.is_valid
    got = wrapper.records()
    assert [(as_bytes(r.key), as_bytes(r.value)) for r in got] == records
    assert [r.offset for r in got] == list(range(30))
    if magic == 1:
        assert [r.timestamp for r in got] == [TS + i for i in range(30)]


def with_wrapper(raw: bytes, offset: int | None = None, attributes: int | None = None,
                 timestamp: int | None = None) -> bytes:
    """Patch a wrapper's offset (outside the CRC) or attributes/timestamp (CRC fixed)."""
    out = bytearray(raw)
    if offset is not None:
        struct.pack_into(">q", out, 0, offset)
    if attributes is not None:
        out[17] = attributes
    if timestamp is not None:
        struct.pack_into(">q", out, 18, timestamp)
    struct.pack_into(">I", out, 12, zlib.crc32(bytes(out[16:])))
    return bytes(out)


def test_v1_wrapper_offsets_are_relative_to_the_wrapper_offset():
    # A broker stores the wrapper with the absolute offset of the last inner message.
    raw = with_wrapper(legacy("kafka-python", 1, GZIP, RECORDS), offset=1003)
    (wrapper,) = list(iter_batches(raw))
    assert [r.offset for r in wrapper] == [1000, 1001, 1002, 1003]
    assert wrapper.base_offset == 1000 and wrapper.last_offset == 1003


def test_v1_wrapper_offset_below_last_inner_offset_is_corrupt():
    raw = with_wrapper(legacy("kafka-python", 1, GZIP, RECORDS), offset=2)
    with pytest.raises(CorruptRecordError, match="wrapper offset 2 is less than"):
        list(iter_batches(raw))[0].records()


def test_v0_wrapper_offsets_are_absolute():
    raw = with_wrapper(legacy("kafka-python", 0, GZIP, RECORDS, base=50), offset=53)
    assert [r.offset for r in list(iter_batches(raw))[0]] == [50, 51, 52, 53]


def test_v1_log_append_time_wrapper_gives_its_timestamp_to_inner_messages():
    raw = with_wrapper(legacy("kafka-python", 1, GZIP, RECORDS), attributes=GZIP | 0x08,
                       timestamp=TS + 999)
    (wrapper,) = list(iter_batches(raw))
    assert wrapper.timestamp_type == 1
    assert {(r.timestamp, r.timestamp_type) for r in wrapper} == {(TS + 999, 1)}


def test_v0_lz4_wrapper_with_old_kafka_header_checksum():
    # kafka-python writes magic-0 lz4 with Kafka 0.8/0.9's wrong frame header checksum.
    raw = legacy("kafka-python", 0, LZ4, RECORDS)
    (wrapper,) = list(iter_batches(raw))
    assert [(as_bytes(r.key), as_bytes(r.value)) for r in wrapper] == RECORDS


def test_legacy_errors():
    raw = legacy("kafka-python", 1, NONE, RECORDS)
    bad = bytearray(raw)
    bad[30] ^= 1  # first byte of the first key
    with pytest.raises(CorruptRecordError, match="CRC-32 mismatch") as e:
        list(iter_batches(bytes(bad)))
    assert e.value.position == 12
    bad = bytearray(raw[:36])
    struct.pack_into(">i", bad, 8, 30)      # size
    struct.pack_into(">i", bad, 34 - 8, 50)  # key length past the message end
    with pytest.raises(CorruptRecordError):
        LegacyRecordBatch.from_buffer(bytes(bad) + bytes(10))
    wrapper = with_wrapper(legacy("kafka-python", 1, GZIP, RECORDS), attributes=4)  # zstd
    with pytest.raises(CorruptRecordError, match="invalid compression type 4 for magic 1"):
        list(iter_batches(wrapper))[0].records()


@settings(max_examples=150, deadline=None)
@given(magic=st.sampled_from([0, 1]), codec=st.sampled_from([NONE, GZIP, SNAPPY, LZ4]),
       records=st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=50)),
                                  st.one_of(st.none(), st.binary(max_size=50))),
                        min_size=1, max_size=10),
       cut=st.integers(min_value=0, max_value=2000), flip=st.integers(min_value=0, max_value=2000))
def test_mutated_legacy_sets_raise_only_corrupt_record_error(magic, codec, records, cut, flip):
    raw = bytearray(legacy("kafka-python", magic, codec, records))
    raw[flip % len(raw)] ^= 0x41
    raw = bytes(raw[:cut])
    try:
        for batch in iter_batches(raw, verify_crc=flip % 2 == 0):
            batch.records()
    except CorruptRecordError:
        pass
