"""Hostile traffic a node must shrug off: pipelined long-poll fetches from many connections."""
from __future__ import annotations

import asyncio
import contextlib

from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.protocol.framing import encode_request


def long_poll_fetch(offset: int = 0) -> FetchRequest:
    partition = FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)
    return FetchRequest(replica_id=-1, max_wait_ms=60_000, min_bytes=100 * 1024 * 1024, max_bytes=1 << 24,
                        topics=[FetchTopic(topic="__cluster_metadata", partitions=[partition])])


async def fetch_flood(address, duration_s: float, connections: int, pipelined: int, offset: int = 0) -> int:
    """Open ``connections`` connections, each writing ``pipelined`` long-poll fetches at once;
    hold them for ``duration_s``; close. Returns how many connections were opened."""
    frames = b"".join(encode_request(long_poll_fetch(offset), 11, i) for i in range(pipelined))
    writers = []
    try:
        for _ in range(connections):
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(*address), 2)
            except (OSError, asyncio.TimeoutError):
                break                       # the node is down or stopped: nothing to flood
            writer.write(frames)
            writers.append(writer)
        await asyncio.sleep(duration_s)
    finally:
        for writer in writers:
            with contextlib.suppress(Exception):
                writer.transport.abort()
    return len(writers)
