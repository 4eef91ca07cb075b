"""Envelope (API key 58): what a Kafka broker forwards to the controller, unwrapped, run with
the forwarded principal and client address, and wrapped again; Kafka's error codes for the
envelopes EnvelopeUtils refuses. (Real brokers forwarding through it: tests/interop/
test_kafka_brokers_on_kafkawire.py.)"""
from __future__ import annotations

import asyncio
import struct

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse
from kafkawire.messages.envelope_request import EnvelopeRequest
from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.net.envelope import deserialize_principal, envelope_handler, serialize_principal
from kafkawire.net.server import ApiHandler, RequestContext, _register
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import decode_response, encode_request

CREATE_TOPICS = 19
BROKER_CTX = RequestContext(58, 0, 7, "broker-4", ("127.0.0.1", 50000), "CONTROLLER", "conn-1",
                            principal="User:ANONYMOUS")
LOOPBACK = bytes([127, 0, 0, 1])


def run(coro):
    return asyncio.run(coro)


def registry(handle, **kwargs):
    return _register({CREATE_TOPICS: ApiHandler(handle, min_version=2, **kwargs)})


def forwarded(body, version=7, correlation_id=99, client_id="adminclient-1"):
    """The inner request as a broker puts it in RequestData: header and body, no size prefix."""
    return encode_request(body, version, correlation_id, client_id=client_id)[4:]


def create_topics(*names):
    return CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                                       for n in names], timeout_ms=1000)


def envelope(data, principal=serialize_principal("User:alice"), address=bytes([10, 1, 2, 3])):
    return EnvelopeRequest(request_data=data, request_principal=principal, client_host_address=address)


def test_the_inner_request_runs_with_the_forwarded_principal_and_address_and_its_response_is_wrapped():
    seen = []

    async def handle(ctx, request):
        seen.append((ctx, request))
        return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name) for t in request.topics])

    table = registry(handle)
    response = run(envelope_handler(table.get)(BROKER_CTX, envelope(forwarded(create_topics("a", "b")))))
    assert response.error_code == 0
    (ctx, request), = seen
    assert (ctx.api_key, ctx.api_version, ctx.correlation_id, ctx.client_id) == (19, 7, 99, "adminclient-1")
    assert ctx.principal == "User:alice" and ctx.peer == ("10.1.2.3", 0)
    assert ctx.listener_name == "CONTROLLER" and ctx.connection_id == "conn-1"
    assert [t.name for t in request.topics] == ["a", "b"]
    correlation_id, body = decode_response(response.response_data, CREATE_TOPICS, 7)
    assert correlation_id == 99 and [t.name for t in body.topics] == ["a", "b"]


def test_an_ipv6_client_address_is_forwarded_too():
    seen = []

    async def handle(ctx, request):
        seen.append(ctx.peer)
        return CreateTopicsResponse()

    run(envelope_handler(registry(handle).get)(BROKER_CTX, envelope(forwarded(create_topics("a")),
                                                                    address=bytes(15) + b"\x01")))
    assert seen == [("::1", 0)]


def test_the_principal_is_kafkas_version_prefixed_default_principal_data():
    # int16 version 0, compact strings "User" and "alice", false, no tagged fields
    assert serialize_principal("User:alice") == b"\x00\x00\x05User\x06alice\x00\x00"
    assert deserialize_principal(b"\x00\x00\x05User\x06alice\x00\x00") == "User:alice"


async def _never(ctx, request):
    raise AssertionError("the inner handler must not run")


def refused(env, table=None):
    response = run(envelope_handler((table or registry(_never)).get)(BROKER_CTX, env))
    assert response.response_data in (None, b"")
    return response.error_code


def test_a_principal_that_does_not_deserialize_is_principal_deserialization_failure():
    data = forwarded(create_topics("a"))
    assert refused(envelope(data, principal=b"\x00")) == Errors.PRINCIPAL_DESERIALIZATION_FAILURE
    assert refused(envelope(data, principal=b"\x00\x01\x05User\x06alice\x00\x00")) == \
        Errors.PRINCIPAL_DESERIALIZATION_FAILURE
    assert refused(envelope(data, principal=b"\x00\x00\x09Us")) == Errors.PRINCIPAL_DESERIALIZATION_FAILURE


def test_a_client_address_of_neither_4_nor_16_bytes_is_invalid_request():
    assert refused(envelope(forwarded(create_topics("a")), address=b"\x7f\x00\x01")) == Errors.INVALID_REQUEST
    assert refused(envelope(forwarded(create_topics("a")), address=b"")) == Errors.INVALID_REQUEST


def test_an_api_kafka_does_not_forward_is_invalid_request():
    assert refused(envelope(forwarded(MetadataRequest(topics=None), version=12))) == Errors.INVALID_REQUEST


def test_an_unparseable_or_unserved_inner_request_is_unsupported_version():
    assert refused(envelope(b"\x00\x13")) == Errors.UNSUPPORTED_VERSION                       # short header
    assert refused(envelope(forwarded(create_topics("a"), version=1))) == Errors.UNSUPPORTED_VERSION  # not served
    truncated = forwarded(create_topics("a"))[:-3]
    assert refused(envelope(truncated)) == Errors.UNSUPPORTED_VERSION


def test_an_inner_header_kafka_cannot_parse_is_unsupported_version_even_for_an_api_it_does_not_forward():
    """RequestHeader.parse runs before the forwardable check (EnvelopeUtils): an unknown API key,
    one with no valid version left (LeaderAndIsr, 4) or a header cut inside its client id is
    UNSUPPORTED_VERSION with no inner response, not INVALID_REQUEST."""
    unknown = struct.pack(">hhih", 999, 0, 99, 0)
    assert refused(envelope(unknown)) == Errors.UNSUPPORTED_VERSION
    assert refused(envelope(unknown + b"\x00" * 16)) == Errors.UNSUPPORTED_VERSION
    assert refused(envelope(struct.pack(">hhih", 4, 7, 99, -1) + b"\x00" * 8)) == Errors.UNSUPPORTED_VERSION
    metadata = forwarded(MetadataRequest(topics=None), version=12)
    assert refused(envelope(metadata[:10])) == Errors.UNSUPPORTED_VERSION          # client id cut short
    assert refused(envelope(metadata[:8] + b"\x00\x00\x00")) == Errors.INVALID_REQUEST  # whole header, not forwardable


def test_an_inner_not_controller_becomes_the_envelopes_not_controller():
    async def handle(ctx, request):
        return CreateTopicsResponse(topics=[CreatableTopicResult(name="a", error_code=int(Errors.NOT_CONTROLLER))])

    response = run(envelope_handler(registry(handle).get)(BROKER_CTX, envelope(forwarded(create_topics("a")))))
    assert response.error_code == Errors.NOT_CONTROLLER and not response.response_data


def test_an_inner_handler_that_raises_answers_unknown_server_error_inside_the_envelope():
    async def handle(ctx, request):
        raise RuntimeError("boom")

    def error_response(ctx, request, code):
        return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name, error_code=code) for t in request.topics])

    table = registry(handle, error_response=error_response)
    response = run(envelope_handler(table.get)(BROKER_CTX, envelope(forwarded(create_topics("a")))))
    assert response.error_code == 0
    _, body = decode_response(response.response_data, CREATE_TOPICS, 7)
    assert [(t.name, t.error_code) for t in body.topics] == [("a", Errors.UNKNOWN_SERVER_ERROR)]


def test_a_forwarded_describe_quorum_to_a_non_leader_is_not_controller():
    from kafkawire.messages.describe_quorum_request import DescribeQuorumRequest
    from kafkawire.messages.describe_quorum_response import DescribeQuorumResponse, PartitionData, TopicData

    async def handle(ctx, request):
        return DescribeQuorumResponse(topics=[TopicData(topic_name="__cluster_metadata", partitions=[
            PartitionData(partition_index=0, error_code=int(Errors.NOT_LEADER_OR_FOLLOWER))])])

    table = _register({55: ApiHandler(handle)})
    response = run(envelope_handler(table.get)(BROKER_CTX, envelope(forwarded(DescribeQuorumRequest(), version=2))))
    assert response.error_code == Errors.NOT_CONTROLLER and not response.response_data
