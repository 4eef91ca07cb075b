"""The raft driver's append queue (RaftDriver's part, kafkawire.raft.node.driver): appends wait
here for the core, go to it as full batches after the fsync in flight, and are bounded as
Kafka's BatchAccumulator bounds them (AppendQueueFull); their futures resolve at commit.

The queue's work is per call and per batch, not per record: ``schedule_appends`` takes many
one-record appends in one call (a workload's records due in one turn), reads the clock once,
answers a refusal with a count, and queues them in chunks of at most ``max_batch_records``;
a Propose joins whole chunks (``itertools.chain``), and a committed chunk records its records'
commit latencies as a few weighted samples (LatencyWindow.record_spread). Per record, in
Python, this cost about half of a leader's CPU at 100,000 records/s (benchmarks/README.md,
"Quorum")."""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import Sequence

from kafkawire.raft.contract import AppendQueueFull, NodeFailed
from kafkawire.raft.io import Propose

from .driver_state import DriverState

# Appends waiting for the core, in batches of max_batch_records: past this many an append is
# refused (AppendQueueFull), as Kafka's BatchAccumulator refuses one past its ten completed
# batches or when its memory pool has no buffer left (BufferAllocationException).
APPEND_QUEUE_BATCHES = 10

# Appends handed to the core but not committed yet, in batches of max_batch_records: past this
# many a new append is refused too (AppendQueueFull). Kafka bounds only its accumulator, so a
# leader offered more than its followers take grows its uncommitted tail, and the commit
# latency, without limit; this bound keeps that latency to what the quorum commits in about
# this many batches (ours, documented as a difference).
APPEND_UNCOMMITTED_BATCHES = 20


@dataclasses.dataclass(slots=True)
class _QueuedAppend:
    records: tuple
    future: asyncio.Future | None      # None: scheduled, nobody waits (schedule_append[s])
    proposed_ms: float                 # when its first record was due (the driver's clock)
    # schedule_appends: each record is an append of its own (appends == len(records)), due
    # spacing_ms after the one before; else one append of records that stay together.
    appends: int = 1
    spacing_ms: float = 0.0


class AppendQueueing(DriverState):
    """RaftDriver's appends (a mixin: it uses the driver's core, config, clock and _step)."""

    async def append(self, records: list[bytes]) -> int:
        """Append as the leader; resolves with the last offset once committed. The records
        stay together in one batch. Raises AppendQueueFull at once when appends already wait
        for append_queue_limit records' room, or append_uncommitted_limit records appended
        wait for their commit (an overloaded leader pushes back rather than let its queue,
        and the wait for its answers, grow without bound)."""
        return await self.prepare_append(records)

    def prepare_append(self, records: list[bytes]) -> asyncio.Future:
        """``append`` without waiting (RaftHandle.prepare_append): the records are queued, or
        AppendQueueFull or NodeFailed raised, at once; they reach the core on a later loop
        turn (_drain_appends), so the offsets next_offset() gave just before are theirs."""
        future = asyncio.get_running_loop().create_future()
        self._enqueue(records, future)
        return future

    def schedule_append(self, records: list[bytes]) -> None:
        """``append`` without waiting for the commit (Kafka's RaftClient.scheduleAppend, which
        TestRaftServer uses): the records are queued or AppendQueueFull is raised at once;
        the commit shows in the commit-latency metric and the listeners, a lost leadership
        drops them."""
        self._enqueue(records, None)

    def schedule_appends(self, records: Sequence[bytes], *, due_ms: float | None = None,
                         spacing_ms: float = 0.0) -> int:
        """Many appends of one record each, in one call (Kafka's scheduleAppend once per record,
        as TestRaftServer calls it, without the per-record cost): returns how many were taken,
        the first ones, as many as the bounds of ``append`` leave room for. The rest are
        refused, nothing of them queued; they are counted in appends-refused (one per record),
        not raised: refusal is the answer an overloaded leader gives, not an error. The records
        taken keep their order but, unlike ``append``'s, may go in different batches. Record
        i's commit latency counts from ``due_ms + i * spacing_ms`` (the driver's clock;
        default: now), so a workload that catches up on its schedule in one call still
        measures each record from when it was due. Raises NodeFailed when the node stopped."""
        if self.failure is not None:
            raise NodeFailed(str(self.failure))
        room = min(self.append_queue_limit - self._queued_records,
                   self.append_uncommitted_limit - self._uncommitted_records)
        taken = max(0, min(len(records), room))
        self.metrics.appends_refused += len(records) - taken
        if taken == 0:
            return 0
        due = self.clock() if due_ms is None else due_ms
        chunk = self.config.max_batch_records
        for start in range(0, taken, chunk):
            end = min(start + chunk, taken)
            self._append_queue.append(_QueuedAppend(tuple(records[start:end]), None, due + start * spacing_ms,
                                                    end - start, spacing_ms))
        self._queued_records += taken
        self._schedule_drain()
        return taken

    def _schedule_drain(self) -> None:
        if not self._drain_scheduled:
            self._drain_scheduled = True
            asyncio.get_running_loop().call_soon(self._drain_appends)

    def _enqueue(self, records, future: asyncio.Future | None) -> None:
        if self.failure is not None:
            raise NodeFailed(str(self.failure))
        if self._queued_records >= self.append_queue_limit:
            self.metrics.appends_refused += 1
            raise AppendQueueFull(f"node {self.node_id}: {self._queued_records} records wait to be appended "
                                  f"(limit {self.append_queue_limit}): appends arrive faster than the log "
                                  f"takes them; retry later")
        if self._uncommitted_records >= self.append_uncommitted_limit:
            self.metrics.appends_refused += 1
            raise AppendQueueFull(f"node {self.node_id}: {self._uncommitted_records} appended records wait for "
                                  f"their commit (limit {self.append_uncommitted_limit}): appends arrive faster "
                                  f"than the quorum commits them; retry later")
        entry = _QueuedAppend(tuple(records), future, self.clock())
        self._append_queue.append(entry)
        self._queued_records += len(entry.records)
        self._schedule_drain()

    def _drain_appends(self) -> None:
        """Once per loop turn: one Propose of queued appends; the rest wait for the next turn,
        so requests that arrived meanwhile are answered in between. While the disk thread
        flushes, appends wait here and go together once it is done (as Kafka's accumulator
        fills while its raft thread flushes): at linger 0 an fsync covers every append that
        came during the one before, in batches as full as max_batch_records allows, rather
        than a batch of a record or two per loop turn (proposing each turn cost so many
        batches that a leader at 20,000/s spent its loop on them: p50 commit 235-979 ms
        against 28-64). They do not wait for the fsync when a follower asks: any input, its
        Fetch among them, first hands the queue to the core (_step), so the answer carries them."""
        if self._flushing is not None and self.failure is None:
            self._drain_after_flush = True      # _on_flushed drains; _drain_scheduled stays set
            return
        self._drain_scheduled = False
        if not self._append_queue or self.failure is not None:
            return
        if self._drain_after_flush:
            self._drain_after_flush = False
            while len(self._append_queue) > 1 and self.failure is None:
                self._propose_queued_batch(self.clock())
        if self._append_queue and self.failure is None:
            self._propose_queued_batch(self.clock())
        if self._append_queue:
            self._drain_scheduled = True
            asyncio.get_running_loop().call_soon(self._drain_appends)

    def _propose_queued_batch(self, now_ms: int) -> None:
        """Hand the oldest queued appends to the core as one Propose of at most
        max_batch_records records (an append bigger than that goes alone). A chunk of
        scheduled one-record appends that does not fit is split, so that the batch is full."""
        queue = self._append_queue
        group = [queue.popleft()]
        count = len(group[0].records)
        limit = self.config.max_batch_records
        while queue and count + len(queue[0].records) <= limit:
            group.append(queue.popleft())
            count += len(group[-1].records)
        if queue and count < limit and queue[0].appends > 1:
            group.append(self._split_scheduled(limit - count))
            count = limit
        self._queued_records -= count
        self._uncommitted_records += count
        token = next(self._tokens)
        self._appends[token] = group
        records = group[0].records if len(group) == 1 else tuple(itertools.chain.from_iterable(
            entry.records for entry in group))
        self._step(Propose(now_ms, token, records))

    def _split_scheduled(self, take: int) -> _QueuedAppend:
        """The first ``take`` records of the oldest queued chunk of one-record appends; the rest
        stays first in the queue, due from its own first record's time."""
        rest = self._append_queue[0]
        head = _QueuedAppend(rest.records[:take], None, rest.proposed_ms, take, rest.spacing_ms)
        rest.records = rest.records[take:]
        rest.appends -= take
        rest.proposed_ms += take * rest.spacing_ms
        return head

    def _settled(self, token) -> list[_QueuedAppend]:
        """The appends of a Propose the core committed or failed: no longer uncommitted."""
        group = self._appends.pop(token, [])
        self._uncommitted_records -= sum(len(entry.records) for entry in group)
        return group

    def _complete_appends(self, group, last_offset: int, now: int) -> None:
        """The appends of one committed Propose, in order: each resolves with its own last offset.
        A chunk of scheduled one-record appends is one weighted entry of the latency window."""
        latency = self.metrics.commit_latency
        for entry in reversed(group):
            appends = entry.appends
            if appends > 1 and entry.spacing_ms:
                oldest = now - entry.proposed_ms
                latency.record_spread(oldest, oldest - (appends - 1) * entry.spacing_ms, appends)
            else:
                latency.record(now - entry.proposed_ms, appends)
            if entry.future is not None and not entry.future.done():
                entry.future.set_result(last_offset)
            last_offset -= len(entry.records)

    @staticmethod
    def _fail_appends(group, error: Exception) -> None:
        for entry in group:
            if entry.future is not None and not entry.future.done():
                entry.future.set_exception(error)
