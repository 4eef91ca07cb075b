"""The raft driver's append queue (RaftDriver's part, kafkawire.raft.node.driver): appends wait
here for the core, go to it as full batches after the fsync in flight, and are bounded as
Kafka's BatchAccumulator bounds them (AppendQueueFull); their futures resolve at commit.

The queue's work is per call and per batch, not per record: ``schedule_appends`` takes many
one-record appends in one call (a workload's records due in one turn), reads the clock once,
answers a refusal with a count, and queues them in chunks of at most ``max_batch_records``;
a Propose joins whole chunks (``itertools.chain``), and a committed chunk records its records'
commit latencies as a few weighted samples (LatencyWindow.record_spread). Per record, in
Python, this cost about half of a leader's CPU at 100,000 records/s (benchmarks/README.md,
"Quorum"). A call whose records continue the schedule of the last queued chunk joins it (up to
``max_batch_records``), so a workload calling once a millisecond queues ~1000-record chunks,
not 100 chunks of a few records, each with its own latency samples.

Bounds: record counts for every append (``append_queue_limit`` queued, ``append_uncommitted_limit``
handed to the core and not committed), and, for ``schedule_appends``, time: it takes no more
records than the quorum commits in ``append_queue_max_ms`` (plus the linger) at its measured
commit rate (CommitRate: the highest rate of records committed in RATE_WINDOW_MS seen over the
last RATE_PEAK_HORIZON_MS), counting what is
queued and uncommitted already, but always up to one batch (``max_batch_records``) in all, so a
quorum whose rate fell (or that just started) still gets a batch to commit. At overload the
records taken then wait about that long and the excess is refused (counted), instead of
queueing for the count bounds' hundreds of milliseconds (Little's law: 30,000 records at
66,000/s is 450 ms). ``append`` and ``prepare_append`` (the controller's writes) have the
count bounds only: the controller bounds its own writes in flight, and a refusal there is a
failed write, not a dropped record."""
from __future__ import annotations

import asyncio
import dataclasses
import collections
import itertools
import sys
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

# The window over which a leader measures its commit rate for the time bound (CommitRate): long
# enough to hold many commits (one per fsync and fetch round trip, a few ms), short enough that
# a slowed quorum shows within a fraction of a second.
RATE_WINDOW_MS = 250

# The time bound uses the highest rate measured over this long, not the last window's: the rate
# a leader measures is what it admitted, so a bound on the last window's rate feeds on itself (a
# stall lowers the rate, the bound admits less, the rate falls further) down to one batch in
# flight: with it, 42,000-46,000/s committed at the 100,000/s target against 93,000 without a
# time bound (benchmarks/README.md, 2026-11-30). The peak over a few seconds is what the quorum
# showed it commits; the bound keeps the queue to that long at that rate.
RATE_PEAK_HORIZON_MS = 3000


class CommitRate:
    """Records committed per ms over the last ``window_ms`` (the driver's clock): the sum of
    the commits in the window over the window, so a quorum that commits nothing for a window
    (a stall, or no load) measures 0; and ``peak_per_ms``, the highest of those rates (as
    measured at each commit) over the last ``horizon_ms``. One entry per committed Propose,
    not per record."""

    def __init__(self, window_ms: int = RATE_WINDOW_MS, horizon_ms: int = RATE_PEAK_HORIZON_MS):
        self.window_ms = window_ms
        self.horizon_ms = horizon_ms
        self._commits: collections.deque[tuple[float, int]] = collections.deque()   # (when, records)
        self._records = 0
        # (when, rate), rates falling from the front: the front is the horizon's highest.
        self._peaks: collections.deque[tuple[float, float]] = collections.deque()

    def add(self, now_ms: float, records: int) -> None:
        self._commits.append((now_ms, records))
        self._records += records
        rate = self.per_ms(now_ms)
        peaks = self._peaks
        while peaks and peaks[-1][1] <= rate:
            peaks.pop()
        peaks.append((now_ms, rate))

    def per_ms(self, now_ms: float) -> float:
        self._forget(now_ms)
        return self._records / self.window_ms

    def peak_per_ms(self, now_ms: float) -> float:
        """The highest rate measured at a commit in the last ``horizon_ms`` (0 when none)."""
        peaks, since = self._peaks, now_ms - self.horizon_ms
        while peaks and peaks[0][0] <= since:
            peaks.popleft()
        return peaks[0][1] if peaks else 0.0

    def _forget(self, now_ms: float) -> None:
        commits, since = self._commits, now_ms - self.window_ms
        while commits and commits[0][0] <= since:
            self._records -= commits.popleft()[1]


@dataclasses.dataclass(slots=True)
class _QueuedAppend:
    records: tuple | list               # a list: a chunk of scheduled appends later calls may join
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
        the first ones, as many as the bounds leave room for: ``append``'s record counts and
        the time bound (``append_queue_max_ms``: no more queued and uncommitted records than
        the quorum commits in that long plus the linger at its measured rate, but always up to
        one batch; see the module's docstring). The rest are refused, nothing of them queued;
        they are counted in appends-refused (one per record), not raised: refusal is the answer
        an overloaded leader gives, not an error. The records taken keep their order but, unlike
        ``append``'s, may go in different batches. Record i's commit latency counts from
        ``due_ms + i * spacing_ms`` (the driver's clock; default: now), so a workload that
        catches up on its schedule in one call still measures each record from when it was
        due; records that join the last queued chunk (their first one due where that chunk's
        schedule puts it, within a millisecond) are timed on that chunk's schedule. Raises
        NodeFailed when the node stopped."""
        if self.failure is not None:
            raise NodeFailed(str(self.failure))
        now = self.clock()
        room = min(self.append_queue_limit - self._queued_records,
                   self.append_uncommitted_limit - self._uncommitted_records,
                   self._time_room(now))
        taken = max(0, min(len(records), room))
        self.metrics.appends_refused += len(records) - taken
        if taken == 0:
            return 0
        due = now if due_ms is None else due_ms
        chunk = self.config.max_batch_records
        start = self._join_last_chunk(records, taken, due, spacing_ms) if spacing_ms > 0 else 0
        for start in range(start, taken, chunk):
            end = min(start + chunk, taken)
            self._append_queue.append(_QueuedAppend(list(records[start:end]), None, due + start * spacing_ms,
                                                    end - start, spacing_ms))
        self._queued_records += taken
        self._schedule_drain()
        return taken

    def _time_room(self, now: float) -> int:
        """How many more records the time bound takes: what the quorum commits in
        append_queue_max_ms plus the linger at its peak measured rate (CommitRate.peak_per_ms;
        at least one batch), less the records queued or uncommitted already; unbounded when
        append_queue_max_ms is 0."""
        bound_ms = self.append_queue_max_ms
        if bound_ms <= 0:
            return sys.maxsize
        budget = max(self._commit_rate.peak_per_ms(now) * (bound_ms + self.config.append_linger_ms),
                     self.config.max_batch_records)
        return int(budget) - self._queued_records - self._uncommitted_records

    def _join_last_chunk(self, records: Sequence[bytes], taken: int, due: float, spacing_ms: float) -> int:
        """Add the first of ``taken`` records to the last queued chunk when they continue its
        schedule (same spacing, the first due within a millisecond of where the chunk's next
        record is due) and it has room; returns how many it took."""
        if not self._append_queue:
            return 0
        last = self._append_queue[-1]
        if last.future is not None or last.spacing_ms != spacing_ms or not isinstance(last.records, list) \
                or abs(due - (last.proposed_ms + last.appends * spacing_ms)) > max(spacing_ms, 1.0):
            return 0
        joined = min(self.config.max_batch_records - len(last.records), taken)
        if joined > 0:
            last.records += records[0:joined]
            last.appends += joined
        return max(joined, 0)

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
        records = tuple(group[0].records) if len(group) == 1 else tuple(itertools.chain.from_iterable(
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
        self._commit_rate.add(now, sum(len(entry.records) for entry in group))
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
