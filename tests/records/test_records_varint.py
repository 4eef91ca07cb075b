"""Zigzag varints, as Kafka's ByteUtils reads and writes them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkawire.records import CorruptRecordError
from kafkawire.records.varint import (
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    size_of_unsigned_varint,
    size_of_varint,
    size_of_varlong,
)

# Vectors from Kafka's ByteUtilsTest (testVarintSerde / testVarlongSerde).
VARINT_VECTORS = [
    (0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (-65, "8101"),
    (8191, "fe7f"), (-8192, "ff7f"), (8192, "808001"), (-8193, "818001"),
    (1048575, "feff7f"), (-1048576, "ffff7f"), (1048576, "80808001"), (-1048577, "81808001"),
    (134217727, "feffff7f"), (-134217728, "ffffff7f"), (134217728, "8080808001"),
    (-134217729, "8180808001"), (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f"),
]
VARLONG_VECTORS = [
    (2**63 - 1, "feffffffffffffffff01"), (-(2**63), "ffffffffffffffffff01"),
    (2**35, "808080808002"),
]


@pytest.mark.parametrize("value,hexed", VARINT_VECTORS)
def test_varint_vectors(value, hexed):
    assert encode_varint(value).hex() == hexed
    assert decode_varint(bytes.fromhex(hexed)) == (value, len(hexed) // 2)
    assert size_of_varint(value) == len(hexed) // 2
    # Every varint is a valid varlong with the same bytes.
    assert encode_varlong(value).hex() == hexed


@pytest.mark.parametrize("value,hexed", VARLONG_VECTORS)
def test_varlong_vectors(value, hexed):
    assert encode_varlong(value).hex() == hexed
    assert decode_varlong(bytes.fromhex(hexed)) == (value, len(hexed) // 2)
    assert size_of_varlong(value) == len(hexed) // 2


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1), st.binary(max_size=5))
def test_varint_round_trip_at_offset(value, prefix):
    buf = prefix + encode_varint(value) + b"\xff"
    assert decode_varint(buf, len(prefix)) == (value, len(buf) - 1)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varlong_round_trip(value):
    enc = encode_varlong(value)
    assert decode_varlong(enc) == (value, len(enc))
    assert len(enc) == size_of_varlong(value) <= 10


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_unsigned_varint_round_trip(value):
    enc = encode_unsigned_varint(value)
    assert decode_unsigned_varint(enc) == (value, len(enc))
    assert len(enc) == size_of_unsigned_varint(value)


def test_out_of_range_values_are_refused():
    with pytest.raises(ValueError):
        encode_varint(2**31)
    with pytest.raises(ValueError):
        encode_varlong(-(2**63) - 1)
    with pytest.raises(ValueError):
        encode_unsigned_varint(-1)


def test_varint_longer_than_five_bytes_is_corrupt():
    with pytest.raises(CorruptRecordError, match="longer than 5 bytes") as e:
        decode_varint(b"\x80\x80\x80\x80\x80\x01", 0)
    assert e.value.position == 4
    # Five bytes are allowed; as in Java, bits past 32 are dropped.
    assert decode_varint(b"\xff\xff\xff\xff\x7f") == (-(2**31), 5)


def test_varlong_longer_than_ten_bytes_is_corrupt():
    with pytest.raises(CorruptRecordError, match="longer than 10 bytes"):
        decode_varlong(b"\x80" * 10 + b"\x01")


def test_truncated_varint_is_corrupt_with_position():
    with pytest.raises(CorruptRecordError, match="past the end") as e:
        decode_varint(b"\x00\x80\x80", 1)
    assert e.value.position == 3
