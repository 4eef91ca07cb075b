"""A client flood must not cost a quorum its leader (issue: hostile peers, item 2): 100
connections each pipelining 64 long-poll Fetches of __cluster_metadata (min_bytes 100 MB,
max_wait 60 s) at the leader, while DescribeQuorum is asked every 200 ms. As in Kafka, a
connection has one request in flight at a time and a waiting fetch reads nothing until the high
watermark moves, so raft keeps its leader and the answers stay quick; closing the clients ends
their fetches."""
import asyncio
import time

import pytest

from kafkawire.protocol.framing import encode_request
from kafkawire.raft.node.local_quorum import LocalQuorum, describe_quorum
from tests.nemesis.hostile import long_poll_fetch

CONNECTIONS, PIPELINED = 100, 64


async def flood_and_watch(address, offset: int, watch_s: float):
    frames = b"".join(encode_request(long_poll_fetch(offset), 11, i) for i in range(PIPELINED))
    writers = []
    for _ in range(CONNECTIONS):
        _, writer = await asyncio.open_connection(*address)
        writer.write(frames)
        writers.append(writer)
    await asyncio.gather(*(w.drain() for w in writers))
    latencies, views = [], []
    deadline = time.monotonic() + watch_s
    while time.monotonic() < deadline:
        started = time.monotonic()
        views.append(await describe_quorum(address, timeout_ms=5000))
        latencies.append(time.monotonic() - started)
        await asyncio.sleep(0.2)
    for writer in writers:
        writer.close()
    return latencies, views


@pytest.fixture
def quorum(tmp_path):
    with LocalQuorum(tmp_path, voters=3).started("initial-controllers", graceful=False) as q:
        yield q


def test_a_flood_of_pipelined_long_poll_fetches_does_not_cost_the_leader(quorum):
    first = quorum.wait_for_leader(120)
    address = quorum.address(first.leader_id)
    latencies, views = asyncio.run(asyncio.wait_for(
        flood_and_watch(address, first.high_watermark, watch_s=10), 60))
    assert {(v.leader_id, v.leader_epoch) for v in views} == {(first.leader_id, first.leader_epoch)}
    latencies.sort()
    median, worst = latencies[len(latencies) // 2], latencies[-1]
    print(f"DescribeQuorum under the flood: {len(latencies)} answers, median {median * 1000:.0f} ms, "
          f"max {worst * 1000:.0f} ms")
    assert worst < 1.5, f"DescribeQuorum took {worst:.2f} s under the flood"
    # The quorum still commits: the high watermark moved on (NoOpRecords every 500 ms).
    assert views[-1].high_watermark > first.high_watermark
    after = quorum.wait_for_leader(10)
    assert (after.leader_id, after.leader_epoch) == (first.leader_id, first.leader_epoch)
