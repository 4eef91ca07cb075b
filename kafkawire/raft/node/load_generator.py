"""A state machine that only writes: Kafka's TestRaftServer workload (kafka.tools.TestRaftServer),
used by benchmarks/quorum.py through `kafkawire test-raft-server`.

While this node leads, it schedules appends of one record of ``record_size`` bytes (the same
payload each time) at ``throughput`` records per second, without waiting for their commits
(TestRaftServer's scheduleAppend); the leader's own bound (appends refused, counted) is the
only limit, and the driver's commit-latency window measures each append from the time it was
due to its commit. The appends due in one turn of the loop go to the driver in one call
(``schedule_appends``; TestRaftServer makes one call per record): one append per record
still, without a Python call, a clock read and an exception per record, which cost the leader
most of its CPU at 100,000 records/s.
Followers only replicate. Committed records are counted, not interpreted (the log holds no metadata records).
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence


log = logging.getLogger(__name__)

WAKE_TICK_S = 0.001     # the workload's shortest sleep (see LoadGenerator.run)


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
                    # Wake at most once per tick: at 20,000 records/s the next record is due in
                    # 50 us, and waking for each kept the leader's loop turning for a record or
                    # two a turn. Records due meanwhile go together, each still measured from
                    # when it was due.
                    await asyncio.sleep(max(next_at - now, WAKE_TICK_S))
                    continue
                # Catch up on the schedule in one go, as TestRaftServer's fixed-rate timer does;
                # what the leader refuses (its queue is full) is dropped, not retried.
                due = int((now - next_at) / interval) + 1
                self.scheduled += self._schedule(due, late_s=now - next_at, interval_s=interval)
                next_at += due * interval
                # A tick before the next call, not a loop turn: at 100,000/s the next record is
                # due 10 us later, already past after one turn, so a turn's sleep made a call
                # (clock reads, bounds, a chunk) per loop turn for a few records each, 6,400
                # calls/s, most of the leader's loop CPU when it refused them (2026-11-30).
                await asyncio.sleep(WAKE_TICK_S)

    def _schedule(self, count: int, *, late_s: float = 0.0, interval_s: float = 0.0) -> int:
        """``count`` appends of one record each, the first due ``late_s`` ago and the next ones
        ``interval_s`` apart, in one call; returns how many the leader took (the rest it
        refused: its queue is full, its appends-refused metric counts them)."""
        due_ms = self.driver.clock() - late_s * 1000
        return self.driver.schedule_appends(_Repeated(self.payload, count), due_ms=due_ms,
                                            spacing_ms=interval_s * 1000)


class _Repeated(Sequence):
    """``count`` times the same record, made only for the slice the driver takes: a workload
    seconds behind its schedule (a stalled loop) is due more records than any queue takes."""

    def __init__(self, record: bytes, count: int):
        self.record, self.length = record, count

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return (self.record,) * len(range(*index.indices(self.length)))
        if not -self.length <= index < self.length:
            raise IndexError(index)
        return self.record
