"""A request to the raft leader gives up when the leader changes while it is in flight (as
Kafka's channel to the controller disconnects from the old controller), so that it is sent again
to the new leader at once rather than after its timeout."""
import asyncio

import pytest

from kafkawire.net.client import Disconnected, RequestTimedOut
from kafkawire.raft.node.to_leader import unless_the_leader_changes


async def _in_flight_when_the_leader_changes():
    change, never_answered = asyncio.Event(), asyncio.Event()
    cancelled = []

    async def sending():
        try:
            await never_answered.wait()          # an old leader behind a partition: never answers
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
    request = asyncio.ensure_future(unless_the_leader_changes(
        change, sending(), ("127.0.0.1", 9093), "BrokerHeartbeatRequest to node 3"))
    await asyncio.sleep(0)                       # the request is in flight
    change.set()
    with pytest.raises(Disconnected, match="127.0.0.1:9093: BrokerHeartbeatRequest to node 3: the leader changed"):
        async with asyncio.timeout(5):
            await request
    assert cancelled == [True]


def test_a_request_in_flight_fails_as_disconnected_when_the_leader_changes():
    asyncio.run(_in_flight_when_the_leader_changes())


async def _answered(result=None, error=None):
    async def sending():
        if error is not None:
            raise error
        return result
    return await unless_the_leader_changes(asyncio.Event(), sending(), ("127.0.0.1", 9093), "a request")


def test_the_answer_or_the_sends_own_error_when_the_leader_stays():
    assert asyncio.run(_answered(result="answer")) == "answer"
    with pytest.raises(RequestTimedOut):
        asyncio.run(_answered(error=RequestTimedOut(("127.0.0.1", 9093), "no answer within 5000 ms")))
