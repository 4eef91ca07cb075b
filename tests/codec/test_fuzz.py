"""Random and mutated bytes make a decoder raise DecodeError and nothing else: no crash, no hang."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from kafkawire import messages
from kafkawire.protocol import framing
from kafkawire.protocol.errors import DecodeError, UnsupportedVersionError
from kafkawire.protocol.primitives import Malformed, read_uvarint, write_uvarint
from tests.codec.pcap_reader import kafka_capture
from tests.codec.strategies import instances, mutated_encodings
from tests.conftest import REFERENCE

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
    encoded = data.draw(mutated_encodings(cls, version))
    try:
        decoded = cls.decode(encoded, version)
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


# -- whole frames, through framing, as a peer would send them ---------------------------------

OWN_CAPTURES = Path(__file__).resolve().parents[1] / "data" / "pcaps"


def _real_frames():
    """(role, payload, api_key, api_version) of every frame in the captures: the repository's own
    (tests/data/pcaps: kafka-python, confluent-kafka, kcat and aiokafka against a kafkawire node)
    and, when ../shared is present, the reference ones (../shared/reference/pcaps: librdkafka,
    Java and kafka-python clients and real brokers); a response takes its API from the request
    with its correlation id on its connection."""
    frames = []
    for path in sorted(OWN_CAPTURES.glob("*.pcap*")) + sorted((REFERENCE / "pcaps").rglob("*.pcap*")):
        capture = kafka_capture(path)
        requests = {}
        for f in capture.requests:
            key, version, corr = struct.unpack_from(">hhi", f.payload)
            requests.setdefault((f.connection, corr), (key, version))
            frames.append(("request", bytes(f.payload), key, version))
        for f in capture.responses:
            api = requests.get((f.connection, struct.unpack_from(">i", f.payload)[0]))
            if api is not None:
                frames.append(("response", bytes(f.payload), *api))
    return frames


REAL_FRAMES = _real_frames()


def _decode_frame(role, payload, api_key, api_version) -> None:
    """Decode as a peer's frame is decoded: only the documented errors may come out, and
    whatever decodes must encode again."""
    try:
        if role == "request":
            request = framing.decode_request(payload)
            request.body.encode(request.api_version)
        else:
            _, body = framing.decode_response(payload, api_key, api_version)
            body.encode(api_version)
    except (DecodeError, UnsupportedVersionError):
        pass


def test_the_corpus_of_real_frames_is_there():
    assert len(REAL_FRAMES) >= 60 and {r for r, *_ in REAL_FRAMES} == {"request", "response"}


@pytest.mark.parametrize("api_key", [95, 99, 1000, -1, 32767])
def test_a_response_to_an_api_without_a_schema_is_a_decode_error(api_key):
    with pytest.raises(KeyError):
        messages.by_api_key(api_key, "response")      # the premise: no schema for this key
    payload = b"\x00\x00\x00\x07" + b"\x00" * 8
    with pytest.raises(DecodeError, match=f"unknown API key {api_key}") as info:
        framing.decode_response(payload, api_key, 0)
    assert info.value.field == "api_key"
    with pytest.raises(DecodeError, match=f"unknown API key {api_key}"):
        framing.decode_request(struct.pack(">hhi", api_key, 0, 7) + b"\x00\x00")


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mutated_real_frames(data):
    role, payload, api_key, api_version = data.draw(st.sampled_from(REAL_FRAMES))
    frame = bytearray(payload)
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "truncate", "insert"]))
        if action == "flip" and frame:
            i = data.draw(st.integers(0, len(frame) - 1))
            frame[i] = data.draw(st.integers(0, 255))
        elif action == "truncate":
            del frame[data.draw(st.integers(0, len(frame))):]
        else:
            i = data.draw(st.integers(0, len(frame)))
            frame[i:i] = data.draw(st.binary(min_size=1, max_size=5))
    if role == "response" and data.draw(st.booleans()):
        # The caller's idea of the API may be wrong too (or name one there is no schema for).
        api_key = data.draw(st.integers(-1, 80))
        api_version = data.draw(st.integers(-1, 20))
    _decode_frame(role, bytes(frame), api_key, api_version)
