"""A TCP link between two nodes that the nemesis can cut: every byte from node A to node B's
listener goes through one LinkProxy on 127.0.0.1, so cutting it isolates that direction only.

A cut link is a black hole, as a dropped network is: the connections it carried are closed, new
ones are accepted and then held without a byte forwarded, so the sender waits for its own
timeouts instead of seeing a refusal. Healing forwards new connections again.
"""
from __future__ import annotations

import asyncio
import contextlib


class LinkProxy:
    def __init__(self, target_port: int, *, host: str = "127.0.0.1"):
        self.host = host
        self.target_port = target_port
        self.cut = False
        self.port = 0
        self._server: asyncio.base_events.Server | None = None
        self._pipes: set[asyncio.Task] = set()
        self._held: set[asyncio.StreamWriter] = set()
        self.bytes_forwarded = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self._drop_everything()

    def set_cut(self, cut: bool) -> None:
        self.cut = cut
        if cut:
            self._drop_everything()

    def _drop_everything(self) -> None:
        for task in list(self._pipes):
            task.cancel()
        for writer in list(self._held):
            writer.transport.abort()
        self._held.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:
            self._held.add(writer)          # a black hole: accepted, never answered
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.transport.abort()        # the node is down: refused, as it would be directly
            return
        task = asyncio.current_task()
        self._pipes.add(task)
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        except (asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            self._pipes.discard(task)
            for w in (writer, up_writer):
                w.transport.abort()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            data = await reader.read(65536)
            if not data:
                with contextlib.suppress(OSError):
                    writer.write_eof()
                return
            writer.write(data)
            self.bytes_forwarded += len(data)
            await writer.drain()
