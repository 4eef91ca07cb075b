"""Helpers for network tests: bounded asyncio runs and a raw Kafka-protocol socket on 127.0.0.1."""
from __future__ import annotations

import asyncio
import struct

from kafkawire.protocol.framing import decode_response, encode_request

TEST_TIMEOUT = 20.0       # no test waits longer than this for anything


_OPEN: list = []


def run(coro, timeout: float = TEST_TIMEOUT, runner=asyncio.run):
    """Run a coroutine to completion, failing (not hanging) after ``timeout`` seconds; then close
    the RawConnections it opened."""
    async def bounded():
        try:
            return await asyncio.wait_for(coro, timeout)
        finally:
            while _OPEN:
                await _OPEN.pop().aclose()
    return runner(bounded())


class RawConnection:
    """A client socket that writes frames and reads them back, nothing more."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        conn = cls(reader, writer)
        _OPEN.append(conn)
        return conn

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, body, version: int, correlation_id: int, client_id="test") -> None:
        await self.write(encode_request(body, version, correlation_id, client_id=client_id))

    async def read_frame(self, timeout: float = 10.0) -> bytes | None:
        """The next frame's payload, or None at EOF."""
        try:
            head = await asyncio.wait_for(self.reader.readexactly(4), timeout)
        except asyncio.IncompleteReadError:
            return None
        (size,) = struct.unpack(">i", head)
        return await asyncio.wait_for(self.reader.readexactly(size), timeout)

    async def read_response(self, api_key: int, version: int, timeout: float = 10.0):
        payload = await self.read_frame(timeout)
        assert payload is not None, "the server closed the connection instead of answering"
        return decode_response(payload, api_key, version)

    async def at_eof(self, timeout: float = 10.0) -> bool:
        """True when the server has closed the connection (within ``timeout``)."""
        try:
            data = await asyncio.wait_for(self.reader.read(1), timeout)
        except asyncio.TimeoutError:        # an OSError since Python 3.11: not a close
            return False
        except (ConnectionError, OSError):
            return True
        return data == b""

    def close(self) -> None:
        self.writer.close()

    async def aclose(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
