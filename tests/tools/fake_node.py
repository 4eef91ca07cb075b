"""A fake Kafka node for the admin tools' tests: a KafkaServer on 127.0.0.1:0, in a thread with
its own event loop, answering with the responses the test's handlers construct and recording
every request (API key, version, decoded body). The tools under test run in the test's thread,
as a user's command would, against ``node.address``."""
from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import dataclass

from kafkawire.net.server import ApiHandler, KafkaServer
from kafkawire.raft.node.local_quorum import free_ports

WAIT_S = 10.0        # no start or stop waits longer than this


@dataclass
class Received:
    api_key: int
    api_version: int
    request: object


class FakeNode:
    """``handlers``: {api_key: fn(request, version) -> response}; ``max_versions``: {api_key: v}
    caps what the node advertises; ``features(response)`` fills ApiVersions' feature fields."""

    def __init__(self, handlers: dict, *, max_versions: dict | None = None, features=None):
        self.handlers = handlers
        self.max_versions = max_versions or {}
        self.features = features
        self.received: list[Received] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-kafka-node", daemon=True)
        self.server: KafkaServer | None = None

    def __enter__(self) -> FakeNode:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(WAIT_S)
        return self

    def __exit__(self, *exc) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.server.close(timeout_ms=1000), self._loop).result(WAIT_S)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(WAIT_S)
            self._loop.close()

    async def _start(self) -> None:
        handlers = {}
        for key, fn in self.handlers.items():
            async def handle(ctx, request, fn=fn, key=key):
                self.received.append(Received(key, ctx.api_version, request))
                return fn(request, ctx.api_version)
            handlers[key] = ApiHandler(handle, max_version=self.max_versions.get(key))
        self.server = KafkaServer(handlers, host="127.0.0.1", port=0)
        self.server.api_versions_features = self.features
        await self.server.start()

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def requests(self, api_key: int) -> list[Received]:
        return [r for r in self.received if r.api_key == api_key]


METADATA = 3


def answers_metadata(node: FakeNode, node_id: int = 1) -> FakeNode:
    """Let ``node`` answer Metadata as a broker does (it names itself as the only broker): an
    admin client bootstrapping from servers asks that first."""
    from kafkawire.messages.metadata_response import MetadataResponse, MetadataResponseBroker
    node.handlers[METADATA] = lambda request, version: MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=node_id, host="127.0.0.1", port=node.port)],
        cluster_id="MkU3OEVBNTcwNTJENDM2Qk", controller_id=node_id, topics=[])
    return node


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (connections are refused). Reserved as
    free_ports reserves them: a port probed free and closed is handed out again by another
    process's bind(0) (a test file beside this one under pytest-xdist), which then answers."""
    port, = free_ports(1)
    return port


class SilentPeer:
    """A listening socket that never accepts or answers: connections open, requests go unanswered."""

    def __enter__(self) -> SilentPeer:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.address = f"127.0.0.1:{self.sock.getsockname()[1]}"
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()
