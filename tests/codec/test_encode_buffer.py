"""encode() keeps large byte values (record batches) aside and joins once (EncodeBuffer); decode()
hands records back as slices of the input. Neither may change a byte: the output must be what
encode_into() writes into a plain bytearray, for every size around the set-aside threshold."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kafkawire import messages
from kafkawire.messages import fetch_response as fetch, produce_request as produce
from kafkawire.protocol import framing
from kafkawire.protocol.errors import EncodeError
from kafkawire.protocol.primitives import SET_ASIDE, EncodeBuffer, write_compact_bytes

SIZES = st.one_of(st.integers(0, 300), st.integers(SET_ASIDE - 3, SET_ASIDE + 3), st.integers(SET_ASIDE, 20_000))
BYTES_LIKE = [bytes, bytearray, memoryview]


def _plain(message, version):
    buf = bytearray()
    message.encode_into(buf, version)
    return bytes(buf)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.one_of(st.none(), SIZES), min_size=1, max_size=6),
       kind=st.sampled_from(BYTES_LIKE), version=st.sampled_from([4, 11, 12, 16]))
def test_fetch_response_bytes_match_a_plain_buffer(sizes, kind, version):
    partitions = [fetch.PartitionData(partition_index=i, records=None if n is None else kind(bytes([i % 251]) * n))
                  for i, n in enumerate(sizes)]
    resp = fetch.FetchResponse(responses=[fetch.FetchableTopicResponse(topic="t", partitions=partitions)])
    data = resp.encode(version)
    assert data == _plain(resp, version)
    assert type(data) is bytes
    decoded = fetch.FetchResponse.decode(data, version)
    for got, n in zip(decoded.responses[0].partitions, sizes):
        assert (got.records is None) if n is None else (type(got.records) is memoryview and got.records.obj is data
                                                        and len(got.records) == n)
    assert decoded == fetch.FetchResponse.decode(_plain(resp, version), version)


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(SIZES, min_size=1, max_size=4), version=st.sampled_from([3, 8, 9, 11]))
def test_produce_request_frames_match_a_plain_buffer(sizes, version):
    req = produce.ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[produce.TopicProduceData(
        name="t", partition_data=[produce.PartitionProduceData(index=i, records=b"\x07" * n)
                                  for i, n in enumerate(sizes)])])
    frame = framing.encode_request(req, version, correlation_id=42, client_id="c")
    header = messages.by_name("RequestHeader")(
        request_api_key=0, request_api_version=version, correlation_id=42, client_id="c")
    body = bytearray()
    header.encode_into(body, framing.request_header_version(0, version))
    req.encode_into(body, version)
    assert frame == len(body).to_bytes(4, "big") + body


def test_a_value_that_is_not_bytes_is_refused_naming_its_field():
    for size in (10, SET_ASIDE * 2):
        resp = fetch.FetchResponse(responses=[fetch.FetchableTopicResponse(
            partitions=[fetch.PartitionData(records="x" * size)])])
        with pytest.raises(EncodeError, match="Records"):
            resp.encode(12)


def test_the_buffer_sets_aside_only_large_values():
    buf = EncodeBuffer()
    buf += b"head"
    big = bytes(SET_ASIDE)
    write_compact_bytes(buf, b"small")
    assert buf.parts == ()
    write_compact_bytes(buf, big)
    assert len(buf.parts) == 2 and buf.parts[1].obj is big, "the batch itself, not a copy"
    buf += b"tail"
    assert buf.size() == len(buf.getvalue())
    assert buf.getvalue(size_prefix=True)[:4] == buf.size().to_bytes(4, "big")
