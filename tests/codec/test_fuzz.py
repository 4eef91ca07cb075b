"""Random and mutated bytes make a decoder raise DecodeError and nothing else: no crash, no hang."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from kafkawire import messages
from kafkawire.protocol.errors import DecodeError
from kafkawire.protocol.primitives import Malformed, read_uvarint, write_uvarint
from tests.codec.strategies import instances

TARGETS = ["MetadataResponse", "FetchRequest", "FetchResponse", "ProduceRequest", "VoteRequest",
           "DescribeQuorumResponse", "ApiVersionsResponse", "VotersRecord", "PartitionRecord",
           "RegisterBrokerRecord", "FetchSnapshotResponse", "RequestHeader"]


@pytest.mark.parametrize("name", TARGETS)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), junk=st.binary(max_size=64))
def test_random_bytes(name, data, junk):
    cls = messages.by_name(name)
    version = data.draw(st.sampled_from(list(cls.versions())))
    try:
        cls.decode(junk, version)
    except DecodeError:
        pass


@pytest.mark.parametrize("name", TARGETS)
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mutated_valid_bytes(name, data):
    cls = messages.by_name(name)
    version = data.draw(st.sampled_from(list(cls.versions())))
    encoded = bytearray(data.draw(instances(cls, version)).encode(version))
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "truncate", "insert"]))
        if action == "flip" and encoded:
            i = data.draw(st.integers(0, len(encoded) - 1))
            encoded[i] = data.draw(st.integers(0, 255))
        elif action == "truncate":
            del encoded[data.draw(st.integers(0, len(encoded))):]
        else:
            i = data.draw(st.integers(0, len(encoded)))
            encoded[i:i] = data.draw(st.binary(min_size=1, max_size=5))
    try:
        decoded = cls.decode(bytes(encoded), version)
    except DecodeError as exc:
        assert exc.message == cls.NAME and exc.version == version
    else:
        # Whatever decodes must encode again (the mutation happened to be valid).
        decoded.encode(version)


@given(st.binary(min_size=1, max_size=6))
@example(b"\x80\x80\x80\x80\x10")   # 2**32: a fifth byte with more than 4 bits
@example(b"\xff\xff\xff\xff\x0f")   # 2**32 - 1, the largest there is
def test_an_unsigned_varint_read_is_one_that_can_be_written(raw):
    try:
        value, end = read_uvarint(raw, 0)
    except (Malformed, IndexError):
        return
    buf = bytearray()
    write_uvarint(buf, value)
    assert value <= 0xFFFFFFFF and read_uvarint(bytes(buf), 0) == (value, len(buf))


def test_a_tag_beyond_32_bits_is_a_decode_error():
    # The case test_mutated_valid_bytes found: RegisterBrokerRecord v4 whose last unknown tag
    # reads as 2**32. It decoded, and then could not be encoded again.
    cls = messages.by_name("RegisterBrokerRecord")
    good = bytes.fromhex("0000000000e3e70682c2094cac629f6fbed82c07cd0000000000000000010101010002020200801000")
    assert cls.decode(good, 4).unknown_tagged_fields[-1] == (16, b"")
    with pytest.raises(DecodeError, match="does not fit in 32 bits") as info:
        cls.decode(good[:-2] + b"\x80\x80\x80\x80\x10\x00", 4)
    assert info.value.message == "RegisterBrokerRecord" and info.value.version == 4
