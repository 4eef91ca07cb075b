"""Kafka's admission rules on a listener: max.connections.per.ip (and overrides),
max.connections, queued.max.request.bytes."""
import asyncio
import logging
import struct

import pytest

from kafkawire.net.admission import AdmissionLimits, parse_per_ip_overrides
from kafkawire.net.server import KafkaServer

from .netlib import RawConnection, run
from .test_server import METADATA, echo_metadata, metadata_request, names


async def open_from(port: int, source: str) -> RawConnection:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    return RawConnection(reader, writer)


async def until(condition, what: str, timeout_s: float = 10) -> None:
    """Until ``condition()`` holds (bounded): what the server does after a client's close
    takes loop turns and, on a loaded machine, time that a fixed pause did not always give it."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"not within {timeout_s} s: {what}"
        await asyncio.sleep(0.01)


async def answered(conn: RawConnection, name: str, cid: int, timeout: float = 5.0) -> bool:
    await conn.send(metadata_request(name), 9, cid)
    try:
        got_cid, body = await conn.read_response(METADATA, 9, timeout=timeout)
    except (AssertionError, ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError):
        return False
    return got_cid == cid and names(body) == [name]


def test_a_connection_over_the_per_ip_limit_is_closed_and_overrides_raise_it(caplog):
    caplog.set_level(logging.INFO, logger="kafkawire.net")
    limits = AdmissionLimits(max_connections_per_ip=2, max_connections_per_ip_overrides={"127.0.0.2": 3})

    async def main():
        async with KafkaServer({METADATA: echo_metadata}, admission=limits) as server:
            first = [await open_from(server.port, "127.0.0.1") for _ in range(2)]
            ok_first = [await answered(c, "a", i) for i, c in enumerate(first)]
            third = await open_from(server.port, "127.0.0.1")
            third_closed = await third.at_eof(timeout=5)
            other = [await open_from(server.port, "127.0.0.2") for _ in range(3)]
            ok_other = [await answered(c, "b", i) for i, c in enumerate(other)]
            fourth = await open_from(server.port, "127.0.0.2")
            fourth_closed = await fourth.at_eof(timeout=5)
            first[0].close()
            await until(lambda: server._quotas.per_ip["127.0.0.1"] < 2, "the closed connection's slot freed")
            again = await open_from(server.port, "127.0.0.1")       # a slot is free again
            ok_again = await answered(again, "c", 9)
            for c in first[1:] + other + [again]:
                c.close()
        return ok_first, third_closed, ok_other, fourth_closed, ok_again

    ok_first, third_closed, ok_other, fourth_closed, ok_again = run(main())
    assert ok_first == [True, True] and third_closed
    assert ok_other == [True, True, True] and fourth_closed
    assert ok_again
    assert "Rejected connection from 127.0.0.1, address already has the configured maximum of 2 connections." \
        in caplog.text


def test_a_connection_over_max_connections_waits_until_another_closes():
    async def main():
        async with KafkaServer({METADATA: echo_metadata}, admission=AdmissionLimits(max_connections=1)) as server:
            first = await RawConnection.open(server.port)
            assert await answered(first, "first", 1)
            second = await RawConnection.open(server.port)          # accepted by the kernel, held unread
            await second.send(metadata_request("second"), 9, 2)
            try:
                await asyncio.wait_for(second.reader.readexactly(4), 0.5)
                waited = False
            except asyncio.TimeoutError:
                waited = True
            first.close()
            cid, body = await second.read_response(METADATA, 9, timeout=5)
            second.close()
            return waited, cid, names(body)

    waited, cid, got = run(main())
    assert waited and cid == 2 and got == ["second"]


def test_queued_max_request_bytes_stops_every_reader_until_memory_is_given_back():
    limit = 100_000

    async def main():
        async with KafkaServer({METADATA: echo_metadata},
                               admission=AdmissionLimits(queued_max_request_bytes=limit)) as server:
            pool = server.memory_pool
            hog = await RawConnection.open(server.port)
            # The start of a 1 MB frame: 200 KB of it, never finished.
            await hog.write(struct.pack(">i", 1_000_000) + b"\0" * 200_000)
            for _ in range(100):
                if pool.used >= limit:
                    break
                await asyncio.sleep(0.02)
            used_while_hogged = pool.used
            small = await RawConnection.open(server.port)
            blocked = not await answered(small, "small", 1, timeout=0.5)
            hog.close()
            cid, body = await small.read_response(METADATA, 9, timeout=5)   # its request is read now
            small.close()
            await until(lambda: pool.used == 0, "every request's memory given back")
            return used_while_hogged, blocked, cid, names(body), pool.used

    used, blocked, cid, got, used_after = run(main())
    # As Kafka's non-strict pool: the frame being read is held whole (1 MB) once its size is read.
    assert used == 1_000_004
    assert blocked and cid == 1 and got == ["small"]
    assert used_after == 0


def test_per_ip_overrides_parse_and_refuse_bad_entries():
    assert parse_per_ip_overrides("") == {}
    assert parse_per_ip_overrides("127.0.0.1:5, ::1:0,host.example:200") == {
        "127.0.0.1": 5, "::1": 0, "host.example": 200}
    for bad, why in [("127.0.0.1", "not host:count"), ("h:x", "'x' is not a number"), ("h:-1", "at least 0")]:
        with pytest.raises(ValueError, match=why):
            parse_per_ip_overrides(bad)


def test_a_client_that_goes_away_cancels_the_handler_it_was_waiting_for():
    cancelled = asyncio.Event()
    entered = asyncio.Event()

    async def long_poll(ctx, request):
        entered.set()
        try:
            await asyncio.sleep(60)           # a fetch waiting for data that never comes
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return await echo_metadata(ctx, request)

    async def main():
        async with KafkaServer({METADATA: long_poll}) as server:
            conn = await RawConnection.open(server.port)
            await conn.send(metadata_request("wait"), 9, 1)
            await asyncio.wait_for(entered.wait(), 5)
            await conn.aclose()
            await asyncio.wait_for(cancelled.wait(), 5)
            await until(lambda: server.memory_pool.used == 0, "the cancelled request's memory given back")
            return server.memory_pool.used

    assert run(main()) == 0
