"""A request to the raft leader (the active controller) that gives up when the leader changes.

Kafka's channel to the controller disconnects from the old controller when the controller
changes, and the requests in flight there fail and are sent again to the new one at once. A
request stuck at an old leader that can no longer be reached (a network partition: connected,
never answered) would otherwise wait for its whole timeout: a broker's heartbeat stuck so for
its 5 s let the new controller fence the broker, whose session the new controller had started
on its activation.
"""
from __future__ import annotations

import asyncio

from kafkawire.net.client import Disconnected

__all__ = ["unless_the_leader_changes"]


async def unless_the_leader_changes(change: asyncio.Event, sending, peer, what: str):
    """The result of ``sending`` (an awaitable: the request ``what`` in flight to ``peer``), or
    Disconnected when ``change`` (the driver's leader-change event) is set first."""
    sent = asyncio.ensure_future(sending)
    changed = asyncio.ensure_future(change.wait())
    try:
        await asyncio.wait({sent, changed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        changed.cancel()
        answered = sent.done()
        if not answered:
            sent.cancel()
    if answered:
        return sent.result()
    await asyncio.wait({sent})           # its cancellation done: nothing of it left running
    raise Disconnected(peer, f"{what}: the leader changed while it was in flight")
