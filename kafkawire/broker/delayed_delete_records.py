"""DeleteRecords answers waiting for the replicas: Kafka's DelayedDeleteRecords in its purgatory.

    deletes = DeletePurgatory()
    await deletes.wait([(key, partition, result, required_offset), ...], timeout_ms, alive)  # results set
    deletes.check(key, partition, alive)    # after a follower's fetch (its log start offset may have moved)
    deletes.step_down(led)                  # partitions no longer led here: NOT_LEADER_OR_FOLLOWER

A partition's answer is done when its low watermark reached the offset the request moved the log
start to (Partition.lowWatermarkIfLeader: the least log start offset of the leader and of every
follower on a live broker, whatever the ISR); it is the low watermark then. Until the request's
``timeout_ms`` passes it is REQUEST_TIMED_OUT, with the low watermark the leader answered at once
(ReplicaManager.deleteRecords's initial status). ``alive(broker_id)``: whether the metadata has
the broker registered and unfenced (MetadataCache.hasAliveBroker).
"""
from __future__ import annotations

import asyncio

from kafkawire.protocol.error_codes import Errors

__all__ = ["DeletePurgatory", "low_watermark"]

INVALID_LOW_WATERMARK = -1


def low_watermark(partition, alive) -> int:
    """Partition.lowWatermarkIfLeader."""
    low = partition.log.log_start_offset
    replicas = partition.replicas
    if replicas is not None:
        for broker_id, follower in replicas.followers.items():
            if alive(broker_id) and follower.log_start_offset < low:
                low = follower.log_start_offset
    return low


class _Status:
    """DeleteRecordsPartitionStatus: one partition's answer waiting for ``required``."""
    __slots__ = ("partition", "result", "required", "done")

    def __init__(self, partition, result, required: int):
        self.partition, self.result, self.required, self.done = partition, result, required, False
        result.error_code = Errors.REQUEST_TIMED_OUT


class DeletePurgatory:
    """The DeleteRecords answers waiting, per partition (topic, index)."""

    def __init__(self):
        self.waiting: dict[tuple[str, int], list[tuple[_Status, asyncio.Event]]] = {}

    async def wait(self, entries: list, timeout_ms: int, alive) -> None:
        """Until every entry's low watermark reached its offset, or ``timeout_ms``; the results are set."""
        event = asyncio.Event()
        statuses = []
        for key, partition, result, required in entries:
            status = _Status(partition, result, required)
            if not self._try_complete(status, alive):
                statuses.append(status)
                self.waiting.setdefault(key, []).append((status, event))
        if not statuses:
            return
        try:
            await asyncio.wait_for(self._all_done(statuses, event), max(timeout_ms, 0) / 1000)
        except asyncio.TimeoutError:
            pass
        for status in statuses:
            status.done = True            # what is left stays REQUEST_TIMED_OUT
        for key, _, _, _ in entries:
            left = [e for e in self.waiting.get(key, ()) if not e[0].done]
            if left:
                self.waiting[key] = left
            else:
                self.waiting.pop(key, None)

    @staticmethod
    async def _all_done(statuses, event: asyncio.Event) -> None:
        while not all(s.done for s in statuses):
            event.clear()
            await event.wait()

    @staticmethod
    def _try_complete(status: _Status, alive) -> bool:
        low = low_watermark(status.partition, alive)
        if low < status.required:
            return False
        status.done = True
        status.result.error_code = Errors.NONE
        status.result.low_watermark = low
        return True

    def check(self, key, partition, alive) -> None:
        """A follower of ``partition`` fetched: complete the answers its low watermark reached."""
        entries = self.waiting.get(key)
        if not entries:
            return
        for status, event in entries:
            if not status.done and status.partition is partition and self._try_complete(status, alive):
                event.set()

    def step_down(self, led: dict) -> None:
        """Fail the answers of partitions no longer led here (``led``: key -> the partition led now)."""
        for key in list(self.waiting):
            kept = []
            for status, event in self.waiting[key]:
                if status.done:
                    continue
                if led.get(key) is status.partition:
                    kept.append((status, event))
                    continue
                status.done = True
                status.result.error_code = Errors.NOT_LEADER_OR_FOLLOWER
                status.result.low_watermark = INVALID_LOW_WATERMARK
                event.set()
            if kept:
                self.waiting[key] = kept
            else:
                del self.waiting[key]

    def close(self) -> None:
        self.step_down({})
