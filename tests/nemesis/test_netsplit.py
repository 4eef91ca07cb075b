"""The replication nemesis's network partitions (netsplit.py) without brokers: a proxy tells the
node that dialled it by the client id of the first request, and a cut black-holes that node's
connections only, until the heal."""
import asyncio

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.fetch_request import FetchRequest
from kafkawire.protocol.framing import encode_request
from tests.nemesis.netsplit import PeerProxy, source_node


def frame(client_id, body=None, version=4) -> bytes:
    body = body or ApiVersionsRequest(client_software_name="t", client_software_version="1")
    return encode_request(body, version, 7, client_id=client_id)


def test_the_dialling_node_is_read_from_the_client_id_in_every_header_version():
    assert source_node(frame("broker-2-fetcher")[4:]) == 2                   # request header v2
    assert source_node(frame("raft-client-13", version=0)[4:]) == 13        # request header v1
    assert source_node(frame("controller-3-to-active-controller", FetchRequest(), 17)[4:]) == 3
    assert source_node(frame("3")[4:]) == 3          # a Kafka broker's channel to the controller
    assert source_node(frame("rdkafka")[4:]) is None
    assert source_node(frame("3rd-party-tool")[4:]) is None
    assert source_node(frame(None)[4:]) is None
    assert source_node(b"\x00\x12\x00") is None


async def _echo_server(accepted: list):
    async def echo(reader, writer):
        accepted.append((writer, asyncio.current_task()))
        try:
            while data := await reader.read(65536):
                writer.write(data)
        except ConnectionError:
            pass
    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def _dial(port: int, client_id: str):
    """A connection through the proxy whose first request names ``client_id``."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(frame(client_id))
    return reader, writer


async def _closed(reader) -> bool:
    """The proxy closed the connection (an end of file, or a reset)."""
    try:
        return await reader.read(1) == b""
    except ConnectionError:
        return True


async def _until(predicate) -> None:
    async with asyncio.timeout(5):
        while not predicate():
            await asyncio.sleep(0.01)


async def _partition_and_heal() -> None:
    accepted = []
    server, port = await _echo_server(accepted)
    proxy = PeerProxy(port)
    await proxy.start()
    try:
        async with asyncio.timeout(10):
            cut_reader, _ = await _dial(proxy.port, "broker-2-fetcher")
            kept_reader, kept_writer = await _dial(proxy.port, "raft-client-3")
            assert await cut_reader.readexactly(len(frame("broker-2-fetcher"))) == frame("broker-2-fetcher")
            assert await kept_reader.readexactly(len(frame("raft-client-3"))) == frame("raft-client-3")
            proxy.cut(2)
            assert await _closed(cut_reader)                     # node 2's connection dropped
            held_reader, _ = await _dial(proxy.port, "broker-2-fetcher")
            await _until(lambda: proxy.held == 1)          # accepted, read, never forwarded
            assert len(accepted) == 2
            kept_writer.write(b"still")                          # node 3 is not cut
            assert await kept_reader.readexactly(5) == b"still"
            proxy.heal(2)
            assert await _closed(held_reader)                    # the held one dropped: dial again
            healed_reader, _ = await _dial(proxy.port, "broker-2-fetcher")
            assert await healed_reader.readexactly(4) == frame("broker-2-fetcher")[:4]
            assert len(accepted) == 3
    finally:
        await proxy.close()
        server.close()
        for writer, _ in accepted:
            writer.transport.abort()
        await asyncio.gather(*(task for _, task in accepted), return_exceptions=True)


def test_a_cut_black_holes_one_nodes_connections_until_the_heal():
    asyncio.run(_partition_and_heal())
