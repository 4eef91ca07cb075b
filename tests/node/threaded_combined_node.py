"""A combined node (broker and controller in one process) on an event loop of its own thread, for
tests that drive it from synchronous code: ``call`` runs a coroutine on its loop, ``started``
starts it and stops it (and ends the thread) when the block ends."""
from __future__ import annotations

import asyncio
import contextlib
import io
import threading

from kafkawire.controller.factory import controller_factory
from kafkawire.raft.node.controller_node import ControllerNode
from kafkawire.tools.server_start import start_broker
from kafkawire.tools.storage import format_storage

from .test_authorizer_node import CLUSTER_ID, free_port, wait_for


class ThreadedCombinedNode:
    """The combined node on an event loop of its own thread; ``call`` runs a coroutine there."""

    def __init__(self, make_config):
        """``make_config(controller_port, broker_port)``: the node's ServerConfig."""
        self.controller_port, self.broker_port = free_port(), free_port()
        self.config = make_config(self.controller_port, self.broker_port)
        format_storage(self.config, CLUSTER_ID, mode=None, out=io.StringIO())
        self.start_loop_thread()
        self.node = self.broker = None

    def start_loop_thread(self):
        """The event loop ``call`` runs coroutines on, running on a thread of its own."""
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coroutine, timeout=60):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def start(self):
        self.node = ControllerNode(self.config, state_machine_factory=controller_factory, fsync=False)
        await self.node.start()
        controller = self.node.state_machine
        await wait_for(lambda: controller.is_active() and controller.registration.registered(), "activation", 30)
        self.broker = await start_broker(self.node)
        assert self.broker is not None, "the broker did not start"
        await wait_for(lambda: self.broker.serving.is_set(), "the broker to be unfenced and serving", 30)

    async def stop(self):
        if self.broker is not None:
            await self.broker.stop(graceful=False)
        if self.node is not None:
            await self.node.stop()


@contextlib.contextmanager
def started(combined: ThreadedCombinedNode, setup=None):
    """``combined`` started (then ``setup(combined)`` run on its loop, if given), stopped and its
    thread ended when the block ends."""
    try:
        combined.call(combined.start())
        if setup is not None:
            combined.call(setup(combined))
        yield combined
    finally:
        combined.call(combined.stop())
        combined.loop.call_soon_threadsafe(combined.loop.stop)
        combined.thread.join(10)
