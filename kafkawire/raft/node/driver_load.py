"""The raft driver's load of a snapshot into its listeners, in steps (RaftDriver's part,
kafkawire.raft.node.driver; the rules are in the driver's docstring).

A load reads the snapshot file off the loop (the default executor: one read of the file, and the
listeners' loads' ``prepare``, such as importing the record decoders), then
walks its batches on the loop, a few milliseconds of records per step (LOAD_STEP_MS of wall time,
checked every LOAD_SLICE_RECORDS records), handing them to each listener's
``begin_snapshot_load`` (contract.py) and yielding the loop between steps; the last step calls
every listener's ``finish``, which swaps its new state in whole, then the commits held meanwhile
are applied. At start the same steps run all at once (``load_now``): the node does not listen
yet, so there is nothing to yield to.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

from kafkawire.raft.types import OffsetAndEpoch
from kafkawire.storage.snapshot import stream_snapshot_data

from . import gc_pauses
from .driver_state import DriverState

log = logging.getLogger(__name__)

LOAD_STEP_MS = 4.0          # a step's wall time before it yields (a decoded record costs ~13 us here)
LOAD_SLICE_RECORDS = 5      # records handed to the listeners between two looks at the clock (see _slices)
# A committed backlog of more offsets than this is applied in steps (a catch-up, below): at ~15 us
# a record, ~0.15 s of the loop at once is the most a commit holds it.
CATCH_UP_IN_STEPS_OFFSETS = 10_000


@dataclasses.dataclass
class SnapshotLoading:
    """One load in progress and what the driver holds for after it (``snapshot_id`` None: a
    catch-up, the committed log only)."""
    snapshot_id: OffsetAndEpoch | None
    commit_through: int | None = None           # the highest committed_through of the Readys meanwhile
    appends_committed: list = dataclasses.field(default_factory=list)     # (token, offset), in order
    late_listeners: list = dataclasses.field(default_factory=list)        # registered during the load
    task: asyncio.Future | None = None
    records: int = 0
    steps: int = 0
    longest_step_ms: float = 0.0          # wall time of the longest step (the machine's load counts)
    longest_step_cpu_ms: float = 0.0      # its CPU time (time.thread_time of the loop's thread)
    releases: list = dataclasses.field(default_factory=list)    # what the listeners' finish returned


    def step_ended(self, started: float, cpu: float) -> None:
        self.steps += 1
        self.longest_step_ms = max(self.longest_step_ms, (time.perf_counter() - started) * 1000)
        self.longest_step_cpu_ms = max(self.longest_step_cpu_ms, (time.thread_time() - cpu) * 1000)


class _Collected:
    """The load of a listener without ``begin_snapshot_load``: its records kept, handed to its
    ``on_snapshot_loaded`` at the end."""

    def __init__(self, listener, snapshot_id: OffsetAndEpoch):
        self.listener, self.snapshot_id, self.values = listener, snapshot_id, []

    def add(self, values: list[bytes]) -> None:
        self.values += values

    def finish(self) -> None:
        self.listener.on_snapshot_loaded(self.snapshot_id, self.values)


def _read_file(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _prepare(loads: list) -> None:
    for load in loads:
        prepare = getattr(load, "prepare", None)
        if prepare is not None:
            prepare()


def _read_and_prepare(path: str, loads: list) -> bytes:
    """On a worker thread: the snapshot file, and the loads' one-time preparations (contract.py)."""
    data = _read_file(path)
    _prepare(loads)
    return data


class SnapshotLoads(DriverState):
    """RaftDriver's snapshot loads (a mixin: it uses the driver's store, listeners and failure)."""

    last_load: SnapshotLoading | None       # the last load done, with its steps' times

    def _loads_of(self, snapshot_id: OffsetAndEpoch) -> list:
        loads = []
        for listener in self._all_listeners():
            begin = getattr(listener, "begin_snapshot_load", None)
            loads.append(begin(snapshot_id) if begin is not None else _Collected(listener, snapshot_id))
        return loads

    def _slices(self, data, path: str, loading: SnapshotLoading):
        """The snapshot's data records, LOAD_SLICE_RECORDS at a time: a look at the clock every few
        records, because a record's cost is uneven (one that grows a broker's partition-index set
        of 150k keys rehashes it whole, ~10 ms at 1M partitions and 10 brokers): at 1M partitions
        the longest step was 51 ms of CPU with slices of 100, 25 ms with slices of 5, for 2% more
        CPU in all (benchmarks/README.md, "A snapshot's load in steps")."""
        for batch in stream_snapshot_data(data, path):
            values = batch.values()             # in C (kafkawire.records.batch), the same list
            loading.records += len(values)
            for i in range(0, len(values), LOAD_SLICE_RECORDS):
                yield values[i:i + LOAD_SLICE_RECORDS]

    def load_now(self, snapshot_id: OffsetAndEpoch) -> None:
        """The load at start, all steps at once, before the core starts (raises what a listener
        raises: StateMachineFatal becomes the node's start error)."""
        path = self.store.snapshot_path(snapshot_id)
        loading = SnapshotLoading(snapshot_id)
        loads = self._loads_of(snapshot_id)
        gc_pauses.hold_full_collections()
        try:
            _prepare(loads)
            for values in self._slices(_read_file(path), path, loading):
                for load in loads:
                    load.add(values)
            for load in loads:
                load.finish()
        finally:
            gc_pauses.give_back_full_collections()
        gc_pauses.freeze_after_load(loading.records)
        self.applied_offset = snapshot_id.offset
        log.info("node %d: loaded snapshot %s (%d records)", self.node_id, snapshot_id, loading.records)

    def _begin_load(self, snapshot_id: OffsetAndEpoch) -> None:
        """A snapshot installed: load it in steps. A load still running is dropped unfinished
        (its snapshot is older than this one, which covers every commit it held)."""
        previous = self._load
        loading = SnapshotLoading(snapshot_id)
        if previous is not None:
            previous.task.cancel()
            log.info("node %d: load of snapshot %s dropped for snapshot %s", self.node_id,
                     previous.snapshot_id, snapshot_id)
            loading.commit_through = previous.commit_through
            loading.appends_committed = previous.appends_committed
            loading.late_listeners = previous.late_listeners
        self._load = loading
        loading.task = asyncio.ensure_future(self._run_load(loading))

    async def _run_load(self, loading: SnapshotLoading) -> None:
        """The load, then (full collections still held off) the listeners' release of the
        states it replaced; then what survives is frozen (gc_pauses.freeze_after_load), so that
        no full collection walks the million objects of a large image (0.5-3 s at 1M
        partitions, the first one after a load)."""
        gc_pauses.hold_full_collections()
        try:
            await self._load_in_steps(loading)
            loaded = self.last_load is loading
            if loaded and loading.releases:
                await asyncio.wait(loading.releases)
        finally:
            gc_pauses.give_back_full_collections()
        if loaded:
            gc_pauses.freeze_after_load(loading.records)

    async def _load_in_steps(self, loading: SnapshotLoading) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        path = self.store.snapshot_path(loading.snapshot_id)
        try:
            loads = self._loads_of(loading.snapshot_id)
            data = await asyncio.get_running_loop().run_in_executor(None, _read_and_prepare, path, loads)
            if self._load is not loading or self.failure is not None or self._closing:
                return
            step_started, step_cpu = time.perf_counter(), time.thread_time()
            for values in self._slices(data, path, loading):
                for load in loads:
                    load.add(values)
                if (time.perf_counter() - step_started) * 1000 >= LOAD_STEP_MS:
                    loading.step_ended(step_started, step_cpu)
                    await asyncio.sleep(0)
                    if self._load is not loading or self.failure is not None or self._closing:
                        return
                    step_started, step_cpu = time.perf_counter(), time.thread_time()
            for load in loads:
                released = load.finish()
                if released is not None:
                    loading.releases.append(released)
            self.applied_offset = loading.snapshot_id.offset
            # The commits held, applied in steps too: each step ends on a whole batch, a state
            # as committed as any; the load ends (commits no longer held) once they are all in.
            if not await self._apply_held_commits(loading, step_started, step_cpu):
                return
            self.last_load = loading
            log.info("node %d: loaded snapshot %s (%d records) in %.0f ms (%.0f ms of CPU), %d steps, the longest "
                     "%.1f ms (%.1f ms of CPU)", self.node_id, loading.snapshot_id, loading.records,
                     (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000, loading.steps,
                     loading.longest_step_ms, loading.longest_step_cpu_ms)
        except asyncio.CancelledError:
            raise
        except Exception as exc:      # a bad snapshot file, a state machine refusing it: stop, as in a step
            if self._load is loading or self._load is None:
                self._load = None
                self._stop_on_failure(exc)

    async def _apply_held_commits(self, loading: SnapshotLoading, step_started: float, step_cpu: float) -> bool:
        """The commits ``loading`` holds applied in steps of LOAD_STEP_MS, each ending on a whole
        batch, the loop turning between them; then the hold ends (the listeners that came during
        it registered, the rest of the held Readys done). False, the hold left as it is, when the
        load was replaced or the node failed or closes meanwhile."""
        while loading.commit_through is not None and self._apply_committed(
                loading.commit_through, deadline=step_started + LOAD_STEP_MS / 1000):
            loading.step_ended(step_started, step_cpu)
            await asyncio.sleep(0)
            if self._load is not loading or self.failure is not None or self._closing:
                return False
            step_started, step_cpu = time.perf_counter(), time.thread_time()
        self._load = None
        for listener in loading.late_listeners:
            self.register(listener)
        self._after_load(loading)
        loading.step_ended(step_started, step_cpu)
        return True

    def _after_load(self, loading: SnapshotLoading) -> None:
        """The rest of what the Readys during the load held, as _apply_effects would have done it."""
        now = self.running.now_ms
        if loading.commit_through is not None:
            self._commit_through(loading.commit_through)      # the last held commits, if any came meanwhile
        for token, offset in loading.appends_committed:
            self._complete_appends(self._settled(token), offset, now)
        self._schedule_snapshot_check()

    def _cancel_load(self) -> None:
        if self._load is not None:
            self._load.task.cancel()
            self._load = None

    # --- a long committed backlog, in steps ---------------------------------------------------------
    def _catch_up_due(self, through: int) -> bool:
        """Whether the commits up to ``through`` are many enough to apply in steps: a node that
        starts with a long log after its snapshot (a cold start of the quorum: 132k records at
        100k partitions with no snapshot yet) applied it all in one turn of the loop once the
        high watermark was known, and a new leader doing so answered no fetch meanwhile (13 s at
        load 10, its followers' fetch timeout 2 s: three leaders lost in a row). A leader that is
        caught up applies its own commits as they come (it applied them ahead)."""
        if through - self.applied_offset <= CATCH_UP_IN_STEPS_OFFSETS:
            return False
        return not self.is_leader() or not self.leader_caught_up()

    def _begin_catch_up(self) -> None:
        """Hold the commits as a load does (driver docstring) and apply them in steps."""
        loading = SnapshotLoading(None)
        self._load = loading
        loading.task = asyncio.ensure_future(self._catch_up_in_steps(loading))

    async def _catch_up_in_steps(self, loading: SnapshotLoading) -> None:
        """No full collection meanwhile, as during a load: replayed from the start, the state
        grows from nothing to the whole image, which in CPython's rule meant a full collection
        each time it grew by a quarter (0.9-1.4 s each at 100k partitions and load 15: the leader
        lost its leadership to one). Once done, what it built is frozen, as after a load (else the
        first full collection after it walks the whole image: 634 ms at 100k partitions)."""
        first = self.applied_offset
        gc_pauses.hold_full_collections()
        try:
            await self._apply_backlog_in_steps(loading)
            done = self._load is None and self.failure is None and not self._closing
        finally:
            gc_pauses.give_back_full_collections()
        if done:
            gc_pauses.freeze_after_load(max(0, self.applied_offset - first), what="a catch-up of the committed log")

    async def _apply_backlog_in_steps(self, loading: SnapshotLoading) -> None:
        started, cpu, first = time.perf_counter(), time.thread_time(), self.applied_offset
        try:
            if not await self._apply_held_commits(loading, time.perf_counter(), time.thread_time()):
                return
            log.info("node %d: applied the committed log from offset %d to %d in %.0f ms (%.0f ms of CPU), %d steps, "
                     "the longest %.1f ms (%.1f ms of CPU)", self.node_id, first, self.applied_offset,
                     (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000, loading.steps,
                     loading.longest_step_ms, loading.longest_step_cpu_ms)
        except asyncio.CancelledError:
            raise
        except Exception as exc:      # a gap in the log, a state machine refusing a batch: stop, as in _apply_effects
            if self._load is loading or self._load is None:
                self._load = None
                self._stop_on_failure(exc)


    # --- a follower's commits, after its next Fetch has left ----------------------------------------
    def _commit_after_send(self, ready) -> None:
        """A Ready's commits (``committed_through``). A follower's, in a Ready that sends its next
        Fetch, are applied on a later turn of the loop, after that Fetch has left (its task was
        scheduled first, and the commit's call after it), not before: the Fetch tells the leader
        this node's log end, which the leader's high watermark waits for, and applying the
        committed records first delayed it by their replay (a fencing at 1M partitions commits
        ~300,000 PartitionChangeRecords, each follower replaying them at ~7 us each). Kafka's raft
        thread likewise fetches while its listener replays on another thread. Each deferred
        commit is applied in its turn, in order; one applied meanwhile up to a higher offset (a
        commit not deferred) leaves it nothing to do."""
        through = ready.committed_through
        if ready.send and not self.is_leader():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:        # outside a loop (tools): nothing to send first
                loop = None
            if loop is not None:
                loop.call_soon(self._commit_deferred, through)
                return
        self._commit_through(through)

    def _commit_deferred(self, through: int) -> None:
        if self.failure is not None or self._closing or through <= self.high_watermark():
            return
        if self._load is not None:      # a load or a catch-up began meanwhile: it holds the commits
            self._load.commit_through = max(self._load.commit_through or 0, through)
            return
        try:
            self._commit_through(through)
        except Exception as exc:        # the state machine or the log broke a rule: stop, as in _step
            self._stop_on_failure(exc)
            return
        self._schedule_snapshot_check()
