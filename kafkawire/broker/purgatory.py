"""Partition answers waiting for a watermark: Kafka's DelayedOperationPurgatory, as its
DelayedProduce (acks=all: the high watermark) and DelayedDeleteRecords (the low watermark) use it.

    waiting = Purgatory(watermark, decide, lost)
    await waiting.wait([(key, partition, answer, required), ...], timeout_ms)   # the answers set
    waiting.check(key, partition)      # after the partition's watermark may have moved
    waiting.step_down(led)             # partitions no longer led here: ``lost`` answers them

Each answer starts as REQUEST_TIMED_OUT, what it stays if the request's ``timeout_ms`` passes.
Once ``watermark(partition)`` reaches the offset an answer requires, ``decide(answer, partition,
required, watermark)`` sets it; ``lost(answer)`` when the partition is no longer led here.
Per partition the answers are in a heap by the offset they need, so a moving watermark looks only
at those it completes; answers that timed out leave the heap lazily, and the heap is rebuilt when
they are half of it (its size stays bounded by the answers waiting).
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Any, Callable

from kafkawire.protocol.error_codes import Errors

__all__ = ["Purgatory"]


class _Request:
    """One request's waiting partitions."""
    __slots__ = ("pending", "event")

    def __init__(self):
        self.pending = 0
        self.event = asyncio.Event()


class _Status:
    """One partition's answer waiting for ``required``."""
    __slots__ = ("answer", "required", "request", "done")

    def __init__(self, answer, required: int, request: _Request):
        self.answer, self.required, self.request, self.done = answer, required, request, False
        answer.error_code = Errors.REQUEST_TIMED_OUT

    def finish(self) -> None:
        self.done = True
        self.request.pending -= 1
        if self.request.pending == 0:
            self.request.event.set()


class _Waiting:
    __slots__ = ("partition", "heap", "expired")

    def __init__(self, partition):
        self.partition, self.heap, self.expired = partition, [], 0


class Purgatory:
    """The answers waiting, per partition key (topic, index)."""

    def __init__(self, watermark: Callable[[Any], int], decide: Callable[[Any, Any, int, int], None],
                 lost: Callable[[Any], None]):
        self.watermark, self.decide, self.lost = watermark, decide, lost
        self.waiting: dict[tuple[str, int], _Waiting] = {}
        self._sequence = itertools.count()

    def _try_complete(self, status: _Status, partition) -> bool:
        mark = self.watermark(partition)
        if mark < status.required:
            return False
        self.decide(status.answer, partition, status.required, mark)
        status.finish()
        return True

    async def wait(self, entries: list, timeout_ms: int) -> None:
        """Until every entry's answer is decided or ``timeout_ms`` passed; the answers are set."""
        request = _Request()
        statuses = []
        for key, partition, answer, required in entries:
            status = _Status(answer, required, request)
            request.pending += 1
            if self._try_complete(status, partition):
                continue
            statuses.append((key, status))
            waiting = self.waiting.get(key)
            if waiting is None or waiting.partition is not partition:
                waiting = self.waiting[key] = _Waiting(partition)
            heapq.heappush(waiting.heap, (required, next(self._sequence), status))
        if request.pending == 0:
            return
        try:
            async with asyncio.timeout(max(timeout_ms, 0) / 1000):
                await request.event.wait()
        except asyncio.TimeoutError:
            pass
        for key, status in statuses:
            if not status.done:
                status.done = True            # stays REQUEST_TIMED_OUT
                self._expired(key)

    def _expired(self, key) -> None:
        waiting = self.waiting.get(key)
        if waiting is None:
            return
        waiting.expired += 1
        if waiting.expired * 2 > len(waiting.heap):
            waiting.heap = [e for e in waiting.heap if not e[2].done]
            heapq.heapify(waiting.heap)
            waiting.expired = 0
            if not waiting.heap:
                del self.waiting[key]

    def check(self, key, partition) -> None:
        """The partition's watermark may have moved: decide the answers it reached."""
        waiting = self.waiting.get(key)
        if waiting is None or waiting.partition is not partition:
            return
        heap = waiting.heap
        mark = self.watermark(partition)
        while heap and heap[0][0] <= mark:
            _, _, status = heapq.heappop(heap)
            if status.done:
                waiting.expired = max(waiting.expired - 1, 0)
                continue
            self.decide(status.answer, partition, status.required, mark)
            status.finish()
        if not heap:
            del self.waiting[key]

    def step_down(self, led: dict) -> None:
        """Answer ``lost`` for the partitions no longer led here (``led``: key -> the partition led now)."""
        for key in [k for k, w in self.waiting.items() if led.get(k) is not w.partition]:
            for _, _, status in self.waiting.pop(key).heap:
                if not status.done:
                    self.lost(status.answer)
                    status.finish()

    def close(self) -> None:
        self.step_down({})
