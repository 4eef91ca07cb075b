"""What a combined node's broker reads of the metadata, and when it acts on it (Kafka's
BrokerMetadataPublisher, fed by the MetadataLoader with committed records only).

The broker reads ``image`` and ``offset``: the committed image and the offset of the last
record it holds, as last PUBLISHED. ``committed_moved()`` (a listener of the controller's
committed image, kafkawire.controller.committed) schedules one publish for the loop's next
turn, however many batches commit in this one; ``publish()`` takes the source's committed image
and offset, then calls every listener (the broker's on_metadata). Taking the image and acting on
it happen in one step, so no request is answered from an image the broker has not acted on yet
(Metadata naming this broker the leader of a partition whose log it has not opened).
"""
from __future__ import annotations

import asyncio
from typing import Callable

__all__ = ["MetadataPublisher"]


class MetadataPublisher:
    def __init__(self, committed_image: Callable[[], object], committed_offset: Callable[[], int]):
        """``committed_image()`` and ``committed_offset()``: the source's committed image and the
        offset of its last record (the controller's ``image`` and ``committed_offset``)."""
        self._committed_image = committed_image
        self._committed_offset = committed_offset
        self.listeners: list[Callable[[], None]] = []
        self.image = committed_image()
        self.offset = committed_offset()
        self._scheduled = False

    def committed_moved(self) -> None:
        if self._scheduled:
            return
        self._scheduled = True
        asyncio.get_running_loop().call_soon(self.publish)

    def publish(self) -> None:
        self._scheduled = False
        image, offset = self._committed_image(), self._committed_offset()
        if image is self.image and offset == self.offset:
            return
        self.image, self.offset = image, offset
        for listener in self.listeners:
            listener()
