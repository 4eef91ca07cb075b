"""KafkaServer on 127.0.0.1: ordering, framing limits, Kafka's answers to what it does not support."""
import asyncio
import logging
import struct

import pytest

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.describe_cluster_response import DescribeClusterResponse
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.metadata_response import MetadataResponse, MetadataResponseTopic
from kafkawire.messages.produce_request import ProduceRequest
from kafkawire.messages.produce_response import ProduceResponse
from kafkawire.net.server import NO_RESPONSE, ApiHandler, CloseConnection, KafkaServer
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import encode_request

from .netlib import RawConnection, run

METADATA, PRODUCE, DESCRIBE_CLUSTER, API_VERSIONS = 3, 0, 60, 18


def metadata_request(*names):
    return MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names])


async def echo_metadata(ctx, request):
    """Answers with the requested topic names; records what it saw."""
    return MetadataResponse(topics=[MetadataResponseTopic(name=t.name) for t in request.topics])


def names(response):
    return [t.name for t in response.topics]


def test_with_more_in_flight_allowed_pipelined_requests_run_concurrently_and_are_answered_in_order():
    # Request i waits until request i+1 has started: a server that handled them one at a time
    # would never finish (the test's timeout fails it); the answers must still come in order.
    count = 6
    started = [asyncio.Event() for _ in range(count)]

    async def handler(ctx, request):
        i = int(request.topics[0].name)
        started[i].set()
        if i + 1 < count:
            await started[i + 1].wait()
        return await echo_metadata(ctx, request)

    async def main():
        async with KafkaServer({METADATA: handler}, max_in_flight_per_connection=count) as server:
            conn = await RawConnection.open(server.port)
            frames = b"".join(encode_request(metadata_request(str(i)), 9, 100 + i) for i in range(count))
            await conn.write(frames)
            got = [await conn.read_response(METADATA, 9) for _ in range(count)]
            conn.close()
        return got

    got = run(main())
    assert [cid for cid, _ in got] == [100 + i for i in range(count)]
    assert [names(body) for _, body in got] == [[str(i)] for i in range(count)]


def test_by_default_a_connection_has_one_request_at_a_time_as_kafka_mutes_the_channel():
    running, peak, order = 0, 0, []

    async def handler(ctx, request):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        order.append(("start", request.topics[0].name))
        await asyncio.sleep(0.05)
        order.append(("end", request.topics[0].name))
        running -= 1
        return await echo_metadata(ctx, request)

    async def main():
        async with KafkaServer({METADATA: handler}) as server:
            conn = await RawConnection.open(server.port)
            await conn.write(b"".join(encode_request(metadata_request(str(i)), 9, i) for i in range(4)))
            got = [await conn.read_response(METADATA, 9) for _ in range(4)]
            conn.close()
        return got

    got = run(main())
    assert [cid for cid, _ in got] == [0, 1, 2, 3]
    assert peak == 1
    assert order == [(edge, str(i)) for i in range(4) for edge in ("start", "end")]


def test_bytes_delivered_one_at_a_time_make_whole_requests():
    async def main():
        async with KafkaServer({METADATA: echo_metadata}) as server:
            conn = await RawConnection.open(server.port)
            data = encode_request(metadata_request("a", "b"), 12, 7) + encode_request(metadata_request("c"), 1, 8)
            for i in range(len(data)):
                await conn.write(data[i:i + 1])
            first = await conn.read_response(METADATA, 12)
            second = await conn.read_response(METADATA, 1)
            conn.close()
        return first, second

    (cid1, r1), (cid2, r2) = run(main())
    assert (cid1, names(r1)) == (7, ["a", "b"])
    assert (cid2, names(r2)) == (8, ["c"])


def test_oversize_frame_closes_the_connection_after_earlier_answers(caplog):
    async def main():
        async with KafkaServer({METADATA: echo_metadata}, max_request_bytes=1000) as server:
            conn = await RawConnection.open(server.port)
            await conn.write(encode_request(metadata_request("x"), 9, 1) + struct.pack(">i", 5000) + b"\0" * 16)
            answered = await conn.read_response(METADATA, 9)
            closed = await conn.at_eof()
            conn.close()
        return answered, closed

    with caplog.at_level(logging.WARNING, logger="kafkawire.net"):
        (cid, body), closed = run(main())
    assert cid == 1 and names(body) == ["x"]
    assert closed
    assert "frame size 5000 is outside 0..1000" in caplog.text and "127.0.0.1" in caplog.text


def test_negative_frame_size_closes_the_connection(caplog):
    async def main():
        async with KafkaServer({METADATA: echo_metadata}) as server:
            conn = await RawConnection.open(server.port)
            await conn.write(struct.pack(">i", -1))
            return await conn.at_eof()

    with caplog.at_level(logging.WARNING, logger="kafkawire.net"):
        assert run(main())
    assert "frame size -1" in caplog.text


def test_idle_connection_is_closed(caplog):
    async def main():
        async with KafkaServer({METADATA: echo_metadata}, connections_max_idle_ms=150) as server:
            busy = await RawConnection.open(server.port)
            await busy.send(metadata_request("a"), 9, 1)
            _, body = await busy.read_response(METADATA, 9)
            return names(body), await busy.at_eof(timeout=10)

    with caplog.at_level(logging.INFO, logger="kafkawire.net"):
        answered, closed = run(main())
    assert answered == ["a"] and closed
    assert "closing idle connection" in caplog.text and "connections.max.idle.ms=150" in caplog.text


def test_a_slow_request_is_not_idle():
    release = asyncio.Event()

    async def slow(ctx, request):
        await release.wait()
        return await echo_metadata(ctx, request)

    async def main():
        async with KafkaServer({METADATA: slow}, connections_max_idle_ms=50) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(metadata_request("slow"), 9, 1)
            await asyncio.sleep(0.3)       # six idle periods pass while the handler works
            release.set()
            return await conn.read_response(METADATA, 9)

    cid, body = run(main())
    assert cid == 1 and names(body) == ["slow"]


def test_api_versions_lists_the_registry_and_negotiates_down_from_an_unknown_version():
    async def main():
        handlers = {METADATA: ApiHandler(echo_metadata, max_version=9), DESCRIBE_CLUSTER: echo_metadata}
        async with KafkaServer(handlers) as server:
            conn = await RawConnection.open(server.port)
            # A version we do not know: header v2 (ApiVersions is flexible from v3), body not parsed.
            raw = bytearray(encode_request(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 4, 1))
            struct.pack_into(">h", raw, 6, 99)           # request_api_version := 99
            await conn.write(bytes(raw))
            unsupported = await conn.read_response(API_VERSIONS, 0)
            await conn.send(ApiVersionsRequest(client_software_name="kafka-python", client_software_version="3.0.1"), 3, 2)
            supported = await conn.read_response(API_VERSIONS, 3)
            conn.close()
        return unsupported, supported

    (cid0, v0), (cid1, v3) = run(main())
    assert cid0 == 1 and v0.error_code == Errors.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in v0.api_keys] == [(18, 0, 4)]
    assert cid1 == 2 and v3.error_code == 0
    assert [(k.api_key, k.min_version, k.max_version) for k in v3.api_keys] == [(3, 0, 9), (18, 0, 4), (60, 0, 2)]


def test_an_advertised_min_version_below_the_served_one_is_listed_but_still_refused(caplog):
    """ApiHandler.advertised_min_version (Kafka's broker lists Produce from v0 but serves v3 up,
    KAFKA-18659): ApiVersions lists the lower bound, a request below the served one closes the connection."""
    async def main():
        handlers = {METADATA: ApiHandler(echo_metadata, min_version=4, max_version=9, advertised_min_version=0)}
        async with KafkaServer(handlers) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3, 1)
            listed = await conn.read_response(API_VERSIONS, 3)
            await conn.send(metadata_request("served"), 4, 2)
            served = await conn.read_response(METADATA, 4)
            await conn.send(metadata_request("refused"), 3, 3)
            return listed, served, await conn.at_eof()

    with caplog.at_level(logging.WARNING, logger="kafkawire.net"):
        (_, listed), (_, served), closed = run(main())
    assert [(k.api_key, k.min_version, k.max_version) for k in listed.api_keys] == [(3, 0, 9), (18, 0, 4)]
    assert names(served) == ["served"] and closed
    assert "received request api key 3 with version 3 which is not enabled (versions 4 to 9 are)" in caplog.text


def test_api_versions_with_a_bad_software_name_is_invalid_request():
    async def main():
        async with KafkaServer({METADATA: echo_metadata}) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(ApiVersionsRequest(client_software_name="bad name!", client_software_version="1"), 3, 5)
            return await conn.read_response(API_VERSIONS, 3)

    cid, body = run(main())
    assert cid == 5 and body.error_code == Errors.INVALID_REQUEST and list(body.api_keys) == []


@pytest.mark.parametrize("api_key, version, reason", [
    (METADATA, 13, "received request api key 3 with version 13 which is not enabled (versions 0 to 9 are)"),
    (PRODUCE, 9, "received request api key 0 with version 9 is not enabled"),
])
def test_unsupported_api_or_version_closes_the_connection(caplog, api_key, version, reason):
    async def main():
        handlers = {METADATA: ApiHandler(echo_metadata, max_version=9)}
        async with KafkaServer(handlers) as server:
            conn = await RawConnection.open(server.port)
            body = metadata_request("a") if api_key == METADATA else ProduceRequest(acks=1, timeout_ms=10)
            await conn.send(metadata_request("first"), 9, 1)
            await conn.send(body, version, 2)
            first = await conn.read_response(METADATA, 9)
            return first, await conn.at_eof()

    with caplog.at_level(logging.WARNING, logger="kafkawire.net"):
        (cid, body), closed = run(main())
    assert cid == 1 and names(body) == ["first"] and closed
    assert reason in caplog.text


def test_unknown_api_key_closes_the_connection(caplog):
    async def main():
        async with KafkaServer({METADATA: echo_metadata}) as server:
            conn = await RawConnection.open(server.port)
            payload = struct.pack(">hhih", 999, 0, 3, -1)
            await conn.write(struct.pack(">i", len(payload)) + payload)
            return await conn.at_eof()

    with caplog.at_level(logging.WARNING, logger="kafkawire.net"):
        assert run(main())
    assert "api key 999" in caplog.text


@pytest.mark.parametrize("payload, fragment", [
    (b"\x00\x03\x00", "malformed request header"),                                  # shorter than a header
    (encode_request(metadata_request("abc"), 9, 4)[4:-3], "error getting request for api key 3 version 9"),
])
def test_malformed_request_closes_the_connection_after_earlier_answers(caplog, payload, fragment):
    async def main():
        async with KafkaServer({METADATA: echo_metadata}) as server:
            conn = await RawConnection.open(server.port)
            await conn.write(encode_request(metadata_request("ok"), 9, 3) + struct.pack(">i", len(payload)) + payload)
            first = await conn.read_response(METADATA, 9)
            return first, await conn.at_eof()

    with caplog.at_level(logging.WARNING, logger="kafkawire.net"):
        (cid, body), closed = run(main())
    assert cid == 3 and names(body) == ["ok"] and closed
    assert fragment in caplog.text and "127.0.0.1" in caplog.text


def test_a_raising_handler_answers_kafkas_get_error_response_and_closes_where_kafka_answers_nothing(caplog):
    """The answer is the request's getErrorResponse (kafkawire.net.error_responses): the code at
    the top where the version has one, on each topic named too; a Produce with acks 0, which
    Kafka's getErrorResponse answers with nothing, closes the connection."""
    async def broken(ctx, request):
        raise RuntimeError("boom")

    async def main():
        async with KafkaServer({DESCRIBE_CLUSTER: broken, METADATA: broken, PRODUCE: broken}) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(DescribeClusterRequest(), 1, 1)
            described = await conn.read_response(DESCRIBE_CLUSTER, 1)
            await conn.send(metadata_request("a"), 13, 2)           # v13 has a top-level ErrorCode
            metadata13 = await conn.read_response(METADATA, 13)
            await conn.send(metadata_request("a"), 12, 3)           # v12 has none: the topic carries it
            metadata12 = await conn.read_response(METADATA, 12)
            await conn.send(ProduceRequest(acks=0, timeout_ms=1), 9, 4)
            return described, metadata13, metadata12, await conn.at_eof()

    with caplog.at_level(logging.ERROR, logger="kafkawire.net"):
        (cid, described), (cid13, metadata13), (cid12, metadata12), closed = run(main())
    assert cid == 1 and isinstance(described, DescribeClusterResponse)
    assert described.error_code == Errors.UNKNOWN_SERVER_ERROR
    assert cid13 == 2 and metadata13.error_code == Errors.UNKNOWN_SERVER_ERROR
    assert [(t.name, t.error_code) for t in metadata13.topics] == [("a", Errors.UNKNOWN_SERVER_ERROR)]
    assert cid12 == 3 and [(t.name, t.error_code) for t in metadata12.topics] == [("a", Errors.UNKNOWN_SERVER_ERROR)]
    assert closed
    assert "RuntimeError: boom" in caplog.text


def test_error_response_hook_shapes_the_answer():
    async def broken(ctx, request):
        raise ValueError("nope")

    def per_topic(ctx, request, code):
        return MetadataResponse(topics=[MetadataResponseTopic(name=t.name, error_code=code) for t in request.topics])

    async def main():
        async with KafkaServer({METADATA: ApiHandler(broken, error_response=per_topic)}) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(metadata_request("t1", "t2"), 9, 1)
            return await conn.read_response(METADATA, 9)

    _, body = run(main())
    assert [(t.name, t.error_code) for t in body.topics] == [("t1", -1), ("t2", -1)]


def test_no_response_and_close_connection_from_handlers():
    async def produce(ctx, request):
        if request.acks == 0:
            if request.transactional_id == "fail":
                raise CloseConnection("acks=0 produce failed")
            return NO_RESPONSE
        return ProduceResponse()

    async def main():
        async with KafkaServer({PRODUCE: produce}) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(ProduceRequest(acks=0, timeout_ms=1), 9, 1)
            await conn.send(ProduceRequest(acks=1, timeout_ms=1), 9, 2)
            second = await conn.read_response(PRODUCE, 9)          # the acks=0 request has no answer
            await conn.send(ProduceRequest(acks=0, timeout_ms=1, transactional_id="fail"), 9, 3)
            return second, await conn.at_eof()

    (cid, _), closed = run(main())
    assert cid == 2 and closed


def test_clean_shutdown_finishes_in_flight_requests_then_refuses_connections():
    entered = asyncio.Event()

    async def slow(ctx, request):
        entered.set()
        await asyncio.sleep(0.2)
        return await echo_metadata(ctx, request)

    async def main():
        server = KafkaServer({METADATA: slow})
        await server.start()
        port = server.port
        conn = await RawConnection.open(port)
        await conn.send(metadata_request("in-flight"), 9, 1)
        await entered.wait()
        await server.close()
        answered = await conn.read_response(METADATA, 9)
        closed = await conn.at_eof()
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", port)
        return answered, closed

    (cid, body), closed = run(main())
    assert cid == 1 and names(body) == ["in-flight"] and closed


def test_registering_api_versions_or_an_unknown_key_is_refused():
    with pytest.raises(ValueError, match="ApiVersions"):
        KafkaServer({API_VERSIONS: echo_metadata})
    with pytest.raises(ValueError, match="no request and response schema for API key 4242"):
        KafkaServer({4242: echo_metadata})


def test_runs_under_uvloop():
    uvloop = pytest.importorskip("uvloop")

    async def main():
        async with KafkaServer({METADATA: echo_metadata}) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(metadata_request("uv"), 9, 1)
            return await conn.read_response(METADATA, 9)

    cid, body = run(main(), runner=uvloop.run)
    assert cid == 1 and names(body) == ["uv"]
