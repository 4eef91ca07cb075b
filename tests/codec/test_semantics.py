"""The semantics the anchors get wrong (see ../shared/notes/anchors-codegen.md), pinned down."""
from __future__ import annotations

import struct
import uuid

import pytest

from kafkawire import messages
from kafkawire.protocol import framing
from kafkawire.protocol.errors import DecodeError, UnsupportedVersionError


def test_golden_api_versions_request_v3():
    # Bytes kio 0.6.5 writes for the same message (recorded in ../shared/notes/env-probe.md).
    req = messages.by_name("ApiVersionsRequest")(client_software_name="probe", client_software_version="0.1")
    assert req.encode(3).hex() == "0670726f626504302e3100"


def test_golden_api_versions_response_v3():
    mod = __import__("kafkawire.messages.api_versions_response", fromlist=["x"])
    resp = mod.ApiVersionsResponse(error_code=0, api_keys=[mod.ApiVersion(api_key=18, min_version=0, max_version=3)])
    assert resp.encode(3).hex() == "000002001200000003000000000000"


def test_null_is_not_empty():
    Vote = messages.by_name("VoteRequest")
    null, empty = Vote(cluster_id=None), Vote(cluster_id="")
    assert null.encode(0) != empty.encode(0)
    assert Vote.decode(null.encode(0), 0).cluster_id is None
    assert Vote.decode(empty.encode(0), 0).cluster_id == ""
    Metadata = messages.by_name("MetadataRequest")
    all_topics, no_topics = Metadata(topics=None), Metadata(topics=[])
    for version in (1, 9, 12):
        assert Metadata.decode(all_topics.encode(version), version).topics is None
        assert Metadata.decode(no_topics.encode(version), version).topics == []
        assert all_topics.encode(version) != no_topics.encode(version)


def test_unknown_tagged_fields_survive_a_round_trip_in_tag_order():
    Vote = messages.by_name("VoteRequest")
    original = Vote(cluster_id="c").encode(2)
    # The top-level tagged-field section is the last byte (0 = none); put two unknown tags there.
    with_tags = original[:-1] + bytes([2, 7, 2, 0xAB, 0xCD, 9, 1, 0xEF])
    decoded = Vote.decode(with_tags, 2)
    assert decoded.unknown_tagged_fields == [(7, b"\xab\xcd"), (9, b"\xef")]
    assert decoded.encode(2) == with_tags
    decoded.unknown_tagged_fields = [(9, b"\xef"), (7, b"\xab\xcd")]
    assert decoded.encode(2) == with_tags, "unknown tags are written in ascending tag order"


def test_tagged_field_at_default_is_not_written_and_otherwise_is():
    Fetch = messages.by_name("FetchRequest")
    plain = Fetch(max_wait_ms=100)
    assert plain.encode(12) == Fetch(max_wait_ms=100, cluster_id=None).encode(12)
    with_cluster = Fetch(max_wait_ms=100, cluster_id="abc")
    encoded = with_cluster.encode(12)
    assert len(encoded) > len(plain.encode(12))
    assert Fetch.decode(encoded, 12).cluster_id == "abc"


def test_non_default_field_in_a_version_without_it_is_refused_naming_it():
    Vote = messages.by_name("VoteRequest")
    mod = __import__("kafkawire.messages.vote_request", fromlist=["x"])
    req = Vote(topics=[mod.TopicData(partitions=[mod.PartitionData(pre_vote=True)])])
    with pytest.raises(UnsupportedVersionError, match="PreVote"):
        req.encode(1)
    # VoterId is ignorable (absent before v1): it is dropped silently, as Kafka does.
    assert Vote(voter_id=5).encode(0) == Vote().encode(0)


def test_unknown_tags_in_a_non_flexible_version_are_refused():
    Metadata = messages.by_name("MetadataRequest")
    req = Metadata(topics=None)
    req.unknown_tagged_fields = [(3, b"x")]
    with pytest.raises(UnsupportedVersionError, match="not flexible"):
        req.encode(1)


def test_request_header_client_id_is_never_compact():
    ApiVersions = messages.by_name("ApiVersionsRequest")
    frame = framing.encode_request(ApiVersions(client_software_name="a", client_software_version="b"), 3, 7, "rdkafka")
    payload = frame[4:]
    # api key 18, version 3, correlation 7, then an int16 length 7 and "rdkafka", then the header's tag byte.
    assert payload[:8] == bytes.fromhex("0012000300000007")
    assert payload[8:10] == b"\x00\x07" and payload[10:17] == b"rdkafka" and payload[17] == 0
    request = framing.decode_request(payload)
    assert request.header.client_id == "rdkafka" and request.body.client_software_name == "a"
    assert framing.request_header_version(18, 3) == 2 and framing.request_header_version(18, 2) == 1


def test_api_versions_response_always_uses_header_v0():
    ApiVersionsResponse = messages.by_name("ApiVersionsResponse")
    frame = framing.encode_response(ApiVersionsResponse(), 3, 42)
    assert frame[4:8] == (42).to_bytes(4, "big") and frame[8:10] == b"\x00\x00", "no tag byte after the correlation id"
    assert framing.response_header_version(18, 4) == 0
    assert framing.response_header_version(3, 12) == 1 and framing.response_header_version(3, 8) == 0
    correlation, body = framing.decode_response(frame[4:], 18, 3)
    assert correlation == 42 and body == ApiVersionsResponse()


def test_json_names_follow_kafkas_converter():
    mod = __import__("kafkawire.messages.k_raft_version_record", fromlist=["x"])
    assert mod.KRaftVersionRecord(k_raft_version=1).to_json(0) == {"version": 0, "kRaftVersion": 1}
    Vote = messages.by_name("VoteRequest")
    assert "clusterId" in Vote(cluster_id="x").to_json(2)
    topic = messages.by_name("TopicRecord")(name="t", topic_id=uuid.UUID(int=1))
    as_json = topic.to_json(0)
    assert as_json == {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAQ"}
    assert messages.by_name("TopicRecord").from_json(as_json, 0) == topic


def test_json_mandatory_and_unsupported_fields():
    from kafkawire.protocol.errors import JsonError
    Vote = messages.by_name("VoteRequest")
    with pytest.raises(JsonError, match="mandatory in version 2"):
        Vote.from_json({"voterId": 1, "topics": []}, 2)
    with pytest.raises(JsonError, match="not supported in version 0"):
        Vote.from_json({"clusterId": None, "voterId": 1, "topics": []}, 0)


def test_lookups():
    assert messages.by_api_key(52, "request").NAME == "VoteRequest"
    assert messages.metadata_record(2).NAME == "TopicRecord"
    assert messages.metadata_record(21).NAME == "ZkMigrationStateRecord"
    with pytest.raises(KeyError):
        messages.by_api_key(9999, "request")


def test_decode_errors_name_message_version_field_and_offset():
    Vote = messages.by_name("VoteRequest")
    mod = __import__("kafkawire.messages.vote_request", fromlist=["x"])
    data = Vote(cluster_id="abc", topics=[mod.TopicData(topic_name="t", partitions=[mod.PartitionData()])]).encode(2)
    with pytest.raises(DecodeError) as info:
        Vote.decode(data[:30], 2)
    e = info.value
    assert e.message == "VoteRequest" and e.version == 2 and e.field.startswith("Topics.Partitions.")
    assert e.offset is not None and e.offset <= 30
    with pytest.raises(DecodeError, match="1 bytes left over"):
        Vote.decode(data + b"\0", 2)
    with pytest.raises(DecodeError, match="no such version"):
        Vote.decode(data, 77)


def test_hostile_lengths_are_refused_before_allocation():
    Metadata = messages.by_name("MetadataRequest")
    # An array claiming 2**31-1 topics in 4 bytes of data.
    with pytest.raises(DecodeError, match="cannot fit"):
        Metadata.decode(b"\x7f\xff\xff\xff", 1)
    # A compact string claiming 2**28 bytes.
    with pytest.raises(DecodeError, match="runs past the end"):
        messages.by_name("VoteRequest").decode(b"\x80\x80\x80\x80\x01abc", 2)


def test_frame_reader_splits_and_bounds_frames():
    reader = framing.FrameReader(max_frame=16)
    assert reader.feed(b"\x00\x00\x00\x02ab\x00\x00") == [b"ab"]
    assert reader.feed(b"\x00\x01c") == [b"c"]
    with pytest.raises(DecodeError, match="outside 0..16"):
        reader.feed(b"\x00\x00\x10\x00")


def test_frame_reader_keeps_a_long_frame_in_the_chunks_that_bring_it():
    reader = framing.FrameReader(max_frame=1 << 20)
    body = bytes(range(256)) * 1000
    stream = struct.pack(">i", len(body)) + body + b"\x00\x00\x00\x01z"
    taken, pending = [], []
    held_back = 10      # the end of the long frame, with the short one after it
    for start in range(0, len(stream) - held_back, 4096):
        chunk = bytearray(stream[start:min(start + 4096, len(stream) - held_back)])
        taken += reader.feed(chunk)
        chunk[:] = b"\xff" * len(chunk)                   # a caller's reused buffer changes nothing
        pending.append(reader.pending)
        assert reader.partial_frame_bytes() == (len(body) + 4 if reader.pending else 0)
    assert taken == [] and pending[-1] == len(stream) - held_back
    assert reader.feed(stream[-held_back:]) == [body, b"z"]
    assert reader.pending == 0 and reader.partial_frame_bytes() == 0


def test_frame_reader_gives_the_frames_before_a_bad_size_with_its_offset_in_the_stream_read():
    reader = framing.FrameReader(max_frame=100)
    assert reader.feed(b"\x00\x00\x00\x0aabc") == []
    frames, error = reader.take_frames(b"defghij\x00\x00\x00\x01k\x00\x00\x01\x00")
    assert frames == [b"abcdefghij", b"k"]
    assert error.offset == 19 and "frame size 256 is outside 0..100 (socket.request.max.bytes)" in str(error)
    with pytest.raises(DecodeError, match="at byte 0: frame size 256"):     # still buffered, still refused
        reader.feed(b"")


def test_frame_reader_checks_a_frame_being_read_again_under_a_lower_max_frame():
    # As a SASL re-authentication lowers it (sasl.server.max.receive.size): the frame read on is refused.
    reader = framing.FrameReader(max_frame=1000)
    assert reader.feed(b"\x00\x00\x01\xf4" + b"a" * 100) == [] and reader.pending == 104
    reader.max_frame, reader.limit_name = 400, "sasl.server.max.receive.size"
    with pytest.raises(DecodeError, match="at byte 0: frame size 500 is outside 0..400 \\(sasl.server.max.receive.size"):
        reader.feed(b"b" * 400)
    reader.discard()
    assert reader.pending == 0 and reader.feed(b"\x00\x00\x00\x01c") == [b"c"]


def test_trailing_request_bytes_are_ignored_as_kafka_does():
    # librdkafka's ApiVersions v0: the header, then an int32 0 where the v0 schema has no fields.
    ApiVersions = messages.by_name("ApiVersionsRequest")
    frame = framing.encode_request(ApiVersions(), 0, 4, "rdkafka")
    request = framing.decode_request(frame[4:] + b"\x00\x00\x00\x00")
    assert request.api_key == 18 and request.api_version == 0 and request.trailing == b"\x00\x00\x00\x00"
    with pytest.raises(DecodeError, match="4 bytes left over"):
        ApiVersions.decode(b"\x00\x00\x00\x00", 0)
