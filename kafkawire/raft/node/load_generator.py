"""A state machine that only writes: Kafka's TestRaftServer workload (kafka.tools.TestRaftServer),
used by benchmarks/quorum.py through `kafkawire test-raft-server`.

While this node leads, it appends records of ``record_size`` random bytes at ``throughput``
records per second, keeping at most ``max_outstanding`` appends waiting for their commit; the
driver's commit-latency window measures each append from Propose to commit. Followers only
replicate. Committed records are counted, not interpreted (the log holds no metadata records).
"""
from __future__ import annotations

import asyncio
import logging
import os
import time

from kafkawire.raft.contract import AppendQueueFull, NotLeader

log = logging.getLogger(__name__)


class LoadGenerator:
    """A StateMachine of kafkawire.raft.contract that keeps no state: no metadata image, no
    features, no transactions, no APIs of its own."""
    in_transaction = False
    image = None
    supported_features: dict[str, tuple[int, int]] = {}

    def __init__(self, driver, *, throughput: int, record_size: int, max_outstanding: int = 1000):
        if throughput <= 0 or record_size <= 0:
            raise ValueError("throughput and record size must be positive")
        self.driver = driver
        self.throughput = throughput
        self.record_size = record_size
        self.max_outstanding = max_outstanding
        self.committed_records = 0
        self.outstanding = 0
        self._leader_event = asyncio.Event()

    # --- the state machine side ---------------------------------------------------------------------
    def on_committed(self, base_offset, epoch, append_time_ms, records) -> None:
        self.committed_records += len(records)

    def on_snapshot_loaded(self, snapshot_id, records) -> None:
        pass

    def on_leader_change(self, leader_id, epoch) -> None:
        if leader_id == self.driver.node_id:
            self._leader_event.set()
        else:
            self._leader_event.clear()

    def snapshot_records(self) -> list[bytes]:
        return []

    def handlers(self) -> dict:
        return {}

    # --- the workload ---------------------------------------------------------------------------------
    async def _append_one(self, payload: bytes) -> None:
        self.outstanding += 1
        try:
            await self.driver.append([payload])
        except NotLeader:
            pass
        except AppendQueueFull:
            pass    # the leader pushed back: load it could not take (its appends-refused metric)
        finally:
            self.outstanding -= 1

    async def run(self) -> None:
        interval = 1.0 / self.throughput
        tasks: set[asyncio.Task] = set()
        while True:
            await self._leader_event.wait()
            log.info("leading: appending %d records/s of %d bytes", self.throughput, self.record_size)
            next_at = time.monotonic()
            while self._leader_event.is_set():
                now = time.monotonic()
                if now < next_at:
                    await asyncio.sleep(next_at - now)
                    continue
                # Catch up on the schedule in one go (as TestRaftServer's fixed-rate timer does),
                # but never past the outstanding limit.
                due = min(int((now - next_at) / interval) + 1, self.max_outstanding - self.outstanding)
                for _ in range(max(due, 0)):
                    task = asyncio.ensure_future(self._append_one(os.urandom(self.record_size)))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                next_at += max(due, 1) * interval
                await asyncio.sleep(0)
