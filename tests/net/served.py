"""A MetadataTopic served by KafkaServer on an event loop in a background thread, so blocking
clients (kafka-python, confluent-kafka, kcat) can talk to it from the test thread."""
from __future__ import annotations

import asyncio
import dataclasses
import threading

from kafkawire.net.metadata_topic import MetadataTopic, NodeEndpoint
from kafkawire.net.server import KafkaServer
from kafkawire.storage.log import Log

from .metadata_log import CLUSTER_ID, NODE_ID


class ServedLog:
    """``with ServedLog(log_dir) as served: served.port ...``; ``served.set_high_watermark(n)``.

    ``max_versions`` caps APIs ({api_key: max version}); ``api_versions_max`` caps ApiVersions.
    ``recorder`` (a pcap.Recorder) puts a recording TCP relay in front of the server; clients
    then connect to ``served.port``, which is the relay's.
    """

    def __init__(self, log_dir, *, high_watermark: int | None = None, max_versions=None, api_versions_max=None,
                 recorder=None, server_options=None):
        self.log_dir = log_dir
        self._hw = high_watermark
        self.max_versions = max_versions or {}
        self.api_versions_max = api_versions_max
        self.recorder = recorder
        self.server_options = server_options or {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="served-log", daemon=True)
        self.port = None
        self.server_port = None
        self.topic = None
        self.log = None

    def call(self, coro, timeout=20):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self):
        self.log = Log(self.log_dir)
        options = dict(self.server_options)
        if self.api_versions_max is not None:
            options["api_versions_max_version"] = self.api_versions_max
        self.server = KafkaServer({}, **options)
        await self.server.bind()
        self.server_port = self.server.port
        self.port = self.server_port
        if self.recorder is not None:
            self.port = await self.recorder.start(self.server_port)
        self.topic = MetadataTopic(self.log, cluster_id=CLUSTER_ID, node=NodeEndpoint(NODE_ID, "127.0.0.1", self.port),
                                   high_watermark=self._high_watermark, poll_interval_ms=50)
        for key, handler in self.topic.handlers().items():
            if key in self.max_versions:
                handler = dataclasses.replace(handler, max_version=self.max_versions[key])
            self.server.register(key, handler)
        await self.server.start()

    def _high_watermark(self):
        return self.log.log_end_offset if self._hw is None else self._hw

    def set_high_watermark(self, hw: int) -> None:
        async def advance():
            self._hw = hw
            self.topic.high_watermark_advanced()
        self.call(advance())

    async def _stop(self):
        await self.server.close()
        if self.recorder is not None:
            await self.recorder.stop()
        self.log.close()

    def __enter__(self):
        self.thread.start()
        self.call(self._start())
        return self

    def __exit__(self, *exc):
        try:
            self.call(self._stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()
