"""A state machine that only writes: Kafka's TestRaftServer workload (kafka.tools.TestRaftServer),
used by benchmarks/quorum.py through `kafkawire test-raft-server`.

While this node leads, it schedules appends of one record of ``record_size`` bytes (the same
payload each time) at ``throughput`` records per second, without waiting for their commits
(TestRaftServer's prepareAppend); the leader's own bound (AppendQueueFull) is the only limit,
and the driver's commit-latency window measures each append from its queueing to its commit.
Followers only replicate. Committed records are counted, not interpreted (the log holds no metadata records).
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

    def __init__(self, driver, *, throughput: int, record_size: int):
        if throughput <= 0 or record_size <= 0:
            raise ValueError("throughput and record size must be positive")
        self.driver = driver
        self.throughput = throughput
        self.record_size = record_size
        self.payload = os.urandom(record_size)     # one payload for every record, as TestRaftServer
        self.committed_records = 0
        self.scheduled = 0
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
    async def run(self) -> None:
        interval = 1.0 / self.throughput
        while True:
            await self._leader_event.wait()
            log.info("leading: appending %d records/s of %d bytes", self.throughput, self.record_size)
            next_at = time.monotonic()
            while self._leader_event.is_set():
                now = time.monotonic()
                if now < next_at:
                    await asyncio.sleep(next_at - now)
                    continue
                # Catch up on the schedule in one go, as TestRaftServer's fixed-rate timer does;
                # what the leader refuses (its queue is full) is dropped, not retried.
                due = int((now - next_at) / interval) + 1
                self.scheduled += self._schedule(due)
                next_at += due * interval
                await asyncio.sleep(0)

    def _schedule(self, count: int) -> int:
        """Up to ``count`` appends of one record each (one prepareAppend per record, as
        TestRaftServer); returns how many the leader took."""
        records = [self.payload]
        for done in range(count):
            try:
                self.driver.schedule_append(records)
            except AppendQueueFull:
                return done     # the leader pushed back: load it could not take (its appends-refused metric)
            except NotLeader:
                self._leader_event.clear()
                return done
        return count
