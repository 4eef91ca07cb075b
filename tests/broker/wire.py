"""One raw request to a broker, through kafkawire's NetworkClient, for the wire tests of
tests/broker (the one copy of the helper the test modules share)."""
from __future__ import annotations

import asyncio
import contextlib

from kafkawire.messages.metadata_request import MetadataRequest
from kafkawire.net.client import NetworkClient

__all__ = ["call", "registered", "serving_brokers"]


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


def registered(target) -> list[int]:
    """The ids of the brokers ``target``'s Metadata lists ([] while it does not answer yet)."""
    try:
        return sorted(b.node_id for b in call(target, MetadataRequest(topics=[]), 12, timeout_ms=2000).brokers)
    except Exception:            # not listening yet, or the connection reset
        return []


@contextlib.contextmanager
def serving_brokers(quorum, brokers: dict, bound_s: float):
    """``quorum`` (a started LocalQuorum of combined nodes) once every node of ``brokers`` (node
    id -> broker address) is registered, as the first one's Metadata says; its processes
    killed on the way out. A node that exits meanwhile fails the wait at once (its exit code and
    log tail), not after ``bound_s``."""
    try:
        first = brokers[min(brokers)]
        quorum.wait_until(lambda: registered(first) == sorted(brokers), bound_s, f"brokers {sorted(brokers)} to register",
                          watch=sorted(brokers))
        yield
    finally:
        for proc in quorum.processes.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
