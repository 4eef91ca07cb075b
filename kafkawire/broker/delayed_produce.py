"""acks=all answers waiting for the high watermark: Kafka's DelayedProduce in its purgatory.

    acks = AcksPurgatory()
    await acks.wait([(key, partition, response, required_offset), ...], timeout_ms)   # the responses set
    acks.check(key, partition)          # after the partition's high watermark moved
    acks.step_down(broker.partitions)   # partitions no longer led here: NOT_LEADER_OR_FOLLOWER

Each waiting partition answer starts as REQUEST_TIMED_OUT (what it stays if the request's
``timeout_ms`` passes) and is decided by Partition.checkEnoughReplicasReachOffset once the high
watermark reaches the end of its batch (NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR
is then below min.insync.replicas), or NOT_LEADER_OR_FOLLOWER when the partition is no longer
led here. Per partition the waiting answers are in a heap by the offset they need, so a moving
high watermark looks only at those it completes; answers that timed out leave the heap lazily,
and the heap is rebuilt when they are half of it (its size stays bounded by the waiting answers).
"""
from __future__ import annotations

import asyncio
import heapq
import itertools

from kafkawire.protocol.error_codes import Errors

__all__ = ["AcksPurgatory"]


class _RequestAcks:
    """One Produce request's waiting partitions."""
    __slots__ = ("pending", "event")

    def __init__(self):
        self.pending = 0
        self.event = asyncio.Event()


class _Status:
    """ProducePartitionStatus: a partition answer waiting for ``required`` to be replicated."""
    __slots__ = ("response", "required", "request", "done")

    def __init__(self, response, required: int, request: _RequestAcks):
        self.response, self.required, self.request, self.done = response, required, request, False
        response.error_code = Errors.REQUEST_TIMED_OUT

    def complete(self, error: Errors) -> None:
        if not self.done:
            self.done = True
            self.response.error_code = error
            self.request.pending -= 1
            if self.request.pending == 0:
                self.request.event.set()


class _Waiting:
    __slots__ = ("partition", "heap", "expired")

    def __init__(self, partition):
        self.partition, self.heap, self.expired = partition, [], 0


def enough_replicas(partition, required: int) -> tuple[bool, Errors]:
    hw = partition.high_watermark()
    if partition.replicas is None:
        return hw >= required, Errors.NONE
    return partition.replicas.enough_replicas(hw, required)


class AcksPurgatory:
    """The acks=all answers waiting, per partition (topic, index)."""

    def __init__(self):
        self.waiting: dict[tuple[str, int], _Waiting] = {}
        self._sequence = itertools.count()

    async def wait(self, entries: list, timeout_ms: int) -> None:
        """DelayedProduce: until every entry's partition decided or ``timeout_ms``; the responses are set."""
        request = _RequestAcks()
        statuses = []
        for key, partition, response, required in entries:
            status = _Status(response, required, request)
            request.pending += 1
            done, error = enough_replicas(partition, required)
            if done:
                status.complete(error)
                continue
            statuses.append((key, status))
            waiting = self.waiting.get(key)
            if waiting is None or waiting.partition is not partition:
                waiting = self.waiting[key] = _Waiting(partition)
            heapq.heappush(waiting.heap, (required, next(self._sequence), status))
        if request.pending == 0:
            return
        try:
            await asyncio.wait_for(request.event.wait(), max(timeout_ms, 0) / 1000)
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
        """The partition's high watermark moved: complete the answers it reached."""
        waiting = self.waiting.get(key)
        if waiting is None or waiting.partition is not partition:
            return
        heap = waiting.heap
        hw = partition.high_watermark()
        while heap and heap[0][0] <= hw:
            _, _, status = heapq.heappop(heap)
            if status.done:
                waiting.expired = max(waiting.expired - 1, 0)
                continue
            status.complete(enough_replicas(partition, status.required)[1])
        if not heap:
            del self.waiting[key]

    def step_down(self, led: dict) -> None:
        """Fail the answers of partitions no longer led here (``led``: key -> the partition led now)."""
        for key in [k for k, w in self.waiting.items() if led.get(k) is not w.partition]:
            for _, _, status in self.waiting.pop(key).heap:
                status.complete(Errors.NOT_LEADER_OR_FOLLOWER)

    def close(self) -> None:
        self.step_down({})
