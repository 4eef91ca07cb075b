"""Hostile traffic a node must shrug off: pipelined long-poll fetches from many connections, and
raft requests that would push the epoch to the end of the int32 space, name a leader that is
not a voter, or claim the receiver's own id (issue 18, item 1)."""
from __future__ import annotations

import asyncio
import contextlib

from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.protocol.framing import encode_request
from kafkawire.raft import rpc
from kafkawire.raft.bounds import INT32_MAX
from kafkawire.raft.types import Endpoints, ReplicaKey

STRANGER = 99


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


def hostile_requests(cluster_id: str, target: int, voter_ids: list[int]) -> list[tuple[str, object]]:
    spoofed = next((v for v in voter_ids if v != target), target)
    nowhere = Endpoints((("CONTROLLER", "127.0.0.1", 1),))
    to = ReplicaKey(target, None)
    return [
        ("Vote from a stranger", rpc.vote_request(cluster_id, INT32_MAX - 1, ReplicaKey(STRANGER, None), to,
                                                  0, 10**6, False)),
        ("Vote from a stranger, small epoch", rpc.vote_request(cluster_id, 1000, ReplicaKey(STRANGER, None), to,
                                                               0, 10**6, False)),
        ("BeginQuorumEpoch of a stranger, small epoch", rpc.begin_quorum_epoch_request(
            cluster_id, 1000, STRANGER, to, nowhere)),
        ("EndQuorumEpoch of a stranger, small epoch", rpc.end_quorum_epoch_request(
            cluster_id, 1000, STRANGER, (), nowhere)),
        ("Vote claiming the receiver's id", rpc.vote_request(cluster_id, 1000, ReplicaKey(target, None), to,
                                                              0, 10**6, False)),
        ("Vote from a voter's id, jumping to the end", rpc.vote_request(
            cluster_id, INT32_MAX, ReplicaKey(spoofed, None), to, 0, 10**6, False)),
        ("BeginQuorumEpoch of a stranger", rpc.begin_quorum_epoch_request(cluster_id, INT32_MAX - 1, STRANGER, to,
                                                                         nowhere)),
        ("EndQuorumEpoch of a stranger", rpc.end_quorum_epoch_request(cluster_id, INT32_MAX - 1, STRANGER, (),
                                                                     nowhere)),
    ]


async def send_hostile_raft_requests(address, cluster_id: str, target: int, voter_ids: list[int]) -> int:
    """Send every hostile raft request to one node; returns how many were answered."""
    answered = 0
    async with NetworkClient(client_id="hostile", request_timeout_ms=2000, connect_timeout_ms=2000) as client:
        for _, request in hostile_requests(cluster_id, target, voter_ids):
            try:
                await asyncio.wait_for(client.send(address, request), 4)
                answered += 1
            except (TransportError, asyncio.TimeoutError, OSError):
                pass                       # the node is down or paused: nothing to attack
    return answered
