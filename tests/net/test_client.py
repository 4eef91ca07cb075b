"""NetworkClient against KafkaServer and hand-made peers on 127.0.0.1."""
import asyncio
import random
import struct
import time
import types

import pytest

from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.describe_cluster_response import DescribeClusterResponse
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.metadata_response import MetadataResponse, MetadataResponseTopic
from kafkawire.net.client import (ConnectFailed, Disconnected, NetworkClient, NodeBackingOff, ProtocolError,
                                  RequestTimedOut, TooManyInFlight, UnsupportedVersion)
from kafkawire.net.server import ApiHandler, KafkaServer
from kafkawire.protocol.framing import encode_response
from kafkawire.raft.node.local_quorum import free_ports

from .netlib import run

METADATA, DESCRIBE_CLUSTER = 3, 60


def metadata_request(*names):
    return MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names])


class Recorder:
    """A Metadata handler that records the versions it was asked in and can be held."""

    def __init__(self):
        self.versions = []
        self.hold = {}         # topic name -> Event to wait for

    async def __call__(self, ctx, request):
        self.versions.append(ctx.api_version)
        for t in request.topics:
            if t.name in self.hold:
                await self.hold[t.name].wait()
        return MetadataResponse(topics=[MetadataResponseTopic(name=t.name) for t in request.topics])


def free_port() -> int:
    """One port reserved as free_ports reserves them (no other process's bind(0) takes it)."""
    port, = free_ports(1)
    return port


def test_versions_are_negotiated_from_the_peers_api_versions():
    recorder = Recorder()

    async def main():
        handlers = {METADATA: ApiHandler(recorder, max_version=7)}
        async with KafkaServer(handlers) as server, NetworkClient() as client:
            peer = ("127.0.0.1", server.port)
            first = await client.send(peer, metadata_request("a"))
            second = await client.send(peer, metadata_request("b"), api_version=4)
            versions = client.peer_versions(peer)
            with pytest.raises(UnsupportedVersion, match="v9 is outside the versions both sides support"):
                await client.send(peer, metadata_request("c"), api_version=9)
            with pytest.raises(UnsupportedVersion, match="does not support api key 60"):
                await client.send(peer, DescribeClusterRequest())
            return first, second, versions

    first, second, versions = run(main())
    assert [t.name for t in first.topics] == ["a"] and [t.name for t in second.topics] == ["b"]
    assert recorder.versions == [7, 4]                      # highest common version, then the one asked for
    # The client opened with ApiVersions v5, got UNSUPPORTED_VERSION naming 0..4, and retried.
    assert versions[18] == (0, 4) and versions[METADATA] == (0, 7)


def test_a_timed_out_request_fails_and_resets_the_connection_with_everything_in_flight():
    recorder = Recorder()
    recorder.hold["never"] = asyncio.Event()
    recorder.hold["later"] = asyncio.Event()

    async def main():
        async with KafkaServer({METADATA: recorder}) as server, \
                NetworkClient(reconnect_backoff_ms=50, reconnect_backoff_max_ms=50, rng=random.Random(1)) as client:
            peer = ("127.0.0.1", server.port)
            other = asyncio.create_task(client.send(peer, metadata_request("later"), timeout_ms=10_000))
            await asyncio.sleep(0.05)
            with pytest.raises(RequestTimedOut, match="got no response within"):
                await client.send(peer, metadata_request("never"), timeout_ms=200)
            with pytest.raises(Disconnected, match="timed out"):
                await other
            # The node now waits out its reconnect backoff, then reconnects and works again.
            with pytest.raises(NodeBackingOff) as backing_off:
                await client.send(peer, metadata_request("x"))
            await asyncio.sleep(backing_off.value.retry_after_ms / 1000 + 0.05)
            again = await client.send(peer, metadata_request("after"))
            recorder.hold["never"].set()
            recorder.hold["later"].set()
            return again

    again = run(main())
    assert [t.name for t in again.topics] == ["after"]


def test_connect_failures_back_off_exponentially():
    port = free_port()          # nothing listens here

    async def main():
        client = NetworkClient(reconnect_backoff_ms=100, reconnect_backoff_max_ms=1000, rng=random.Random(7))
        waits = []
        for _ in range(4):
            with pytest.raises(ConnectFailed, match="connection failed"):
                await client.send(("127.0.0.1", port), metadata_request("a"))
            with pytest.raises(NodeBackingOff) as info:
                await client.send(("127.0.0.1", port), metadata_request("a"))
            waits.append(info.value.retry_after_ms)
            await asyncio.sleep(info.value.retry_after_ms / 1000 + 0.02)
        await client.close()
        return waits

    waits = run(main())
    # 100, 200, 400, 800 ms, each within the 20% jitter (plus the 1 ms the client rounds up).
    for wait, base in zip(waits, (100, 200, 400, 800)):
        assert 0.8 * base - 30 <= wait <= 1.2 * base + 1, (wait, base)


def test_in_flight_requests_are_bounded_not_queued():
    recorder = Recorder()
    recorder.hold["block"] = asyncio.Event()

    async def main():
        async with KafkaServer({METADATA: recorder}) as server, NetworkClient(max_in_flight_per_connection=1) as client:
            peer = ("127.0.0.1", server.port)
            await client.send(peer, metadata_request("warm-up"))
            blocked = asyncio.create_task(client.send(peer, metadata_request("block")))
            await asyncio.sleep(0.05)
            with pytest.raises(TooManyInFlight, match="1 requests already in flight"):
                await client.send(peer, metadata_request("more"))
            recorder.hold["block"].set()
            return await blocked

    assert [t.name for t in run(main()).topics] == ["block"]


async def fake_peer(answer):
    """A server that answers ApiVersions properly and then calls ``answer(correlation_id, writer)``."""
    from kafkawire.messages.api_versions_response import ApiVersion, ApiVersionsResponse

    async def handle(reader, writer):
        try:
            await serve(reader, writer)
        finally:
            writer.close()

    async def serve(reader, writer):
        while True:
            try:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                payload = await reader.readexactly(size)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            api_key, version, correlation_id = struct.unpack_from(">hhi", payload)
            if api_key == 18:
                response = ApiVersionsResponse(api_keys=[ApiVersion(api_key=18, min_version=0, max_version=3),
                                                         ApiVersion(api_key=60, min_version=0, max_version=1)])
                writer.write(encode_response(response, version, correlation_id))
            else:
                await answer(correlation_id, version, writer)
            try:
                await writer.drain()
            except ConnectionError:         # the answer hung up (hang_up): not an exception for asyncio to log
                return

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def test_a_response_out_of_order_is_a_protocol_error():
    async def wrong_correlation(correlation_id, version, writer):
        writer.write(encode_response(DescribeClusterResponse(), version, correlation_id + 1000))

    async def main():
        server = await fake_peer(wrong_correlation)
        async with server, NetworkClient() as client:
            peer = ("127.0.0.1", server.sockets[0].getsockname()[1])
            with pytest.raises(ProtocolError, match=r"correlation id for response \(\d+\) does not match request"):
                await client.send(peer, DescribeClusterRequest())
            return client.peer_versions(peer)

    assert run(main()) is None         # the connection was closed


def test_a_response_that_does_not_decode_is_a_protocol_error():
    async def garbage(correlation_id, version, writer):
        writer.write(struct.pack(">ii", 6, correlation_id) + b"\x00\x01")

    async def main():
        server = await fake_peer(garbage)
        async with server, NetworkClient() as client:
            peer = ("127.0.0.1", server.sockets[0].getsockname()[1])
            with pytest.raises(ProtocolError, match="does not decode"):
                await client.send(peer, DescribeClusterRequest())

    run(main())


def test_peer_closing_the_connection_fails_pending_requests():
    async def hang_up(correlation_id, version, writer):
        writer.close()

    async def main():
        server = await fake_peer(hang_up)
        async with server, NetworkClient() as client:
            peer = ("127.0.0.1", server.sockets[0].getsockname()[1])
            with pytest.raises(Disconnected, match="closed the connection"):
                await client.send(peer, DescribeClusterRequest())

    run(main())


def test_a_peer_that_never_answers_api_versions_times_out_and_backs_off():
    async def main():
        silent = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)     # accepts, never answers
        async with silent, NetworkClient(connect_timeout_ms=200, rng=random.Random(3)) as client:
            peer = ("127.0.0.1", silent.sockets[0].getsockname()[1])
            with pytest.raises(RequestTimedOut, match="ApiVersionsRequest"):
                await client.send(peer, DescribeClusterRequest(), timeout_ms=5000)
            with pytest.raises(NodeBackingOff):
                await client.send(peer, DescribeClusterRequest())

    run(main())


def test_a_cancelled_send_leaves_no_unretrieved_exception_when_the_client_closes(caplog):
    """A node shutting down cancels the tasks waiting on its sends, then closes the client: the
    Disconnected set on the abandoned futures must not be logged by asyncio as "Future exception
    was never retrieved" (an ERROR line at every graceful stop, issue 18)."""
    import gc
    recorder = Recorder()
    recorder.hold["never"] = asyncio.Event()

    async def main():
        async with KafkaServer({METADATA: recorder}) as server:
            client = NetworkClient()
            peer = ("127.0.0.1", server.port)
            waiting = asyncio.create_task(client.send(peer, metadata_request("never"), timeout_ms=10_000))
            await asyncio.sleep(0.1)
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
            await client.close()
            recorder.hold["never"].set()
        gc.collect()
        await asyncio.sleep(0)

    with caplog.at_level("ERROR", logger="asyncio"):
        run(main())
        gc.collect()
    assert "never retrieved" not in caplog.text, caplog.text


def test_a_connection_whose_set_up_is_cancelled_is_closed_not_leaked(caplog):
    """Closing the client while ApiVersions is still in flight closed nothing: the connection's
    reader task was left pending on a transport nobody held, and asyncio logged "Task was
    destroyed but it is pending!" once it was collected. Now the peer sees the connection close."""
    import gc
    readers = []

    async def main():
        silent = await asyncio.start_server(lambda r, w: readers.append(r), "127.0.0.1", 0)   # never answers
        async with silent:
            client = NetworkClient(connect_timeout_ms=10_000)
            peer = ("127.0.0.1", silent.sockets[0].getsockname()[1])
            sending = asyncio.create_task(client.send(peer, DescribeClusterRequest(), timeout_ms=10_000))
            await asyncio.sleep(0.2)                  # connected; ApiVersions unanswered
            await client.close()
            await asyncio.gather(sending, return_exceptions=True)
            await asyncio.wait_for(readers[0].read(1 << 16), 5)          # the ApiVersions request
            return await asyncio.wait_for(readers[0].read(1 << 16), 5)   # then EOF: the client closed it

    with caplog.at_level("ERROR", logger="asyncio"):
        assert run(main()) == b""
        gc.collect()
    assert "Task was destroyed but it is pending" not in caplog.text, caplog.text


def test_a_cancel_that_arrives_with_the_answer_is_not_lost():
    """A stop cancels a task waiting for an answer in the loop iteration where the answer lands:
    the task must end cancelled. Python 3.11's asyncio.wait_for returned the answer instead, so a
    stopping broker's replica fetcher went on fetching and the stop waited for it forever (the
    project's ruff rules now ban wait_for in kafkawire)."""
    async def main():
        answer = asyncio.get_running_loop().create_future()

        class OneRequestConnection:
            closed, close_reason, peer = False, None, ("127.0.0.1", 9)

            def send(self, request, version):
                return types.SimpleNamespace(future=answer, correlation_id=1)

        client = NetworkClient()
        task = asyncio.ensure_future(client._round_trip(OneRequestConnection(), metadata_request(), 12,
                                                        time.monotonic() + 30))
        await asyncio.sleep(0)               # the task now waits for the answer
        answer.set_result(MetadataResponse())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    run(main())
