"""One raw request to a broker, through kafkawire's NetworkClient, for the wire tests of
tests/broker (the one copy of the helper the test modules share)."""
from __future__ import annotations

import asyncio

from kafkawire.net.client import NetworkClient

__all__ = ["call"]


def call(target, request, api_version=None, *, timeout_ms: int = 20_000):
    """The response to ``request`` from the broker at ``target``: "host:port", (host, port), or
    a node with ``bootstrap_servers`` (the session's embedded broker)."""
    if hasattr(target, "bootstrap_servers"):
        target = target.bootstrap_servers
    if isinstance(target, str):
        host, port = target.rsplit(":", 1)
        target = (host, int(port))

    async def go():
        client = NetworkClient(client_id="kafkawire-tests", request_timeout_ms=timeout_ms)
        try:
            return await client.send(target, request, api_version=api_version, timeout_ms=timeout_ms)
        finally:
            await client.close()
    return asyncio.run(go())
