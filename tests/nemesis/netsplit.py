"""Network partitions between the replication nemesis's nodes: a proxy in front of each node's
inter-broker listener and of its controller listener, which the other nodes reach it through
(the inter-broker listener is advertised at its proxy's port, every node's
controller.quorum.voters names the other voters at theirs), while clients reach every node
directly. A cut from node A to node B drops the connections A had made to B's listeners and
holds any new one without a byte forwarded (a black hole, as a dropped network is: A waits for
its own timeouts); a heal drops the held connections, so that A dials again at once.

A proxy tells which node a connection comes from by the client id of its first request
(``broker-<id>-...`` for the replica fetchers and the other inter-broker clients,
``raft-client-<id>`` and ``controller-<id>-...`` for the raft and controller channels; a Kafka
broker's channel to the controller, heartbeats included, is named by the bare ``<id>``):
every node dials the same address of B, so one proxy per listener serves them all.

The proxies run on an event loop of their own thread, as the nemesis's driver is synchronous.
"""
from __future__ import annotations

import asyncio
import contextlib
import re
import threading

NODE_CLIENT_ID = re.compile(rb"(?:(?:broker|controller|raft-client)-)?(\d+)(?:-|$)")
MAX_FIRST_FRAME = 1 << 20


def source_node(frame: bytes) -> int | None:
    """The node that sent a request frame (its size prefix stripped), from the request header's
    client id (api key, api version, correlation id, then an int16-length string in every header
    version); None for a client that is no node."""
    if len(frame) < 10:
        return None
    length = int.from_bytes(frame[8:10], "big", signed=True)
    match = NODE_CLIENT_ID.match(frame[10:10 + max(length, 0)])
    return int(match.group(1)) if match else None


class PeerProxy:
    """One listener's proxy: forwards to ``target_port`` every connection but those from a node
    in ``cut_from``."""

    def __init__(self, target_port: int, host: str = "127.0.0.1"):
        self.host, self.target_port, self.port = host, target_port, 0
        self.cut_from: set[int] = set()
        self._server = None
        self._pipes: dict[asyncio.Task, int | None] = {}
        self._held: dict[asyncio.StreamWriter, int | None] = {}

    @property
    def held(self) -> int:
        """Connections held unanswered now (from a node cut)."""
        return len(self._held)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self._drop(lambda source: True)

    def cut(self, source: int) -> None:
        self.cut_from.add(source)
        self._drop(lambda s: s == source)

    def heal(self, source: int) -> None:
        self.cut_from.discard(source)
        self._drop(lambda s: s == source, pipes=False)

    def _drop(self, which, pipes: bool = True) -> None:
        for task, source in list(self._pipes.items()):
            if pipes and which(source):
                task.cancel()
        for writer, source in list(self._held.items()):
            if which(source):
                writer.transport.abort()
                del self._held[writer]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readexactly(4)
            size = int.from_bytes(head, "big")
            frame = await reader.readexactly(size) if 0 < size <= MAX_FIRST_FRAME else b""
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            writer.transport.abort()
            return
        source = source_node(frame)
        if source in self.cut_from:
            self._held[writer] = source         # a black hole: the request never answered
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target_port)
        except OSError:
            writer.transport.abort()            # the node is down: refused, as it would be directly
            return
        task = asyncio.current_task()
        self._pipes[task] = source
        try:
            up_writer.write(head + frame)
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        except (asyncio.CancelledError, ConnectionError, OSError):
            pass
        finally:
            self._pipes.pop(task, None)
            for w in (writer, up_writer):
                w.transport.abort()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        data = await reader.read(65536)
        if not data:
            with contextlib.suppress(OSError):
                writer.write_eof()
            return
        writer.write(data)
        await writer.drain()


class Netsplit:
    """The proxies of ``targets`` (listener name -> node -> the port it listens on), on a loop
    of their own thread; ``port(listener, node)`` is where the other nodes reach it."""

    def __init__(self, targets: dict[str, dict[int, int]]):
        self.proxies = {name: {node: PeerProxy(port) for node, port in ports.items()}
                        for name, ports in targets.items()}
        self.cuts: set[tuple[int, int, str]] = set()     # (from, to, listener) cut now
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="netsplit", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._call(self._start_all())

    def stop(self) -> None:
        if self._thread.is_alive():
            self._call(self._close_all())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def port(self, listener: str, node: int) -> int:
        return self.proxies[listener][node].port

    def cut(self, a: int, b: int, listeners=None) -> None:
        """No connection between nodes a and b, either way, on ``listeners`` (None: every one
        proxied)."""
        names = tuple(listeners or self.proxies)
        self.cuts |= {(a, b, name) for name in names} | {(b, a, name) for name in names}
        self._call(self._apply(heal=False, cuts=[(a, b, n) for n in names] + [(b, a, n) for n in names]))

    def heal(self) -> None:
        cuts, self.cuts = sorted(self.cuts), set()
        self._call(self._apply(heal=True, cuts=cuts))

    def _call(self, coroutine, bound_s: float = 10):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(bound_s)

    async def _start_all(self) -> None:
        for by_node in self.proxies.values():
            for proxy in by_node.values():
                await proxy.start()

    async def _close_all(self) -> None:
        for by_node in self.proxies.values():
            for proxy in by_node.values():
                await proxy.close()

    async def _apply(self, *, heal: bool, cuts) -> None:
        for source, destination, listener in cuts:
            proxy = self.proxies[listener][destination]
            if heal:
                proxy.heal(source)
            else:
                proxy.cut(source)
