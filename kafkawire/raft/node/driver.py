"""The production driver of the raft core: one asyncio task owns a RaftCore and applies its
Readys to the disk and the network, in the order raft/io.py prescribes.

Inputs reach the core from four places, all on the event loop and all through ``_step``:
the KafkaServer handlers (a request becomes RequestReceived; the handler awaits the core's
OutboundResponse), the tasks sending our requests (ResponseReceived / RequestFailed), the
timer (Tick at the Ready's wake_at_ms) and the local clients (Propose, SnapshotFrozen,
Shutdown). ``_step`` never awaits: a Ready's writes (election, log operations) are made before
the next input, so the store the core reads reflects every Ready so far.

The fsync a Ready asks for runs on the driver's disk thread, not on the loop (as Kafka's raft
thread flushes while its network threads go on), and the core learns that it is done from a
LogFlushed input (RaftConfig.async_flush, which the driver turns on). A leader's own appends
do not wait for it: their fetch answers leave at once, and the leader counts its log end
toward the high watermark only once LogFlushed reports it durable, so commits need a majority
of durable logs (etcd-raft's leader likewise). A Ready that must wait (``hold_until_flushed``:
a follower's fetched records, whose next Fetch tells the leader its log end; a truncation; a
snapshot install) keeps its messages and commits in ``_held``, and the Readys after it queue
behind, in order, until that fsync is done. Flushes asked for while one runs are done
together by the next (group commit). An election's quorum-state file is written and fsynced on
the same disk thread (some 8 ms on the project machine, on the loop before), and its Ready
held likewise until that is done: a vote leaves only once it is durable, and the Readys after
it wait behind it, in order. A fetched snapshot's chunks are written there as they arrive, and
its install (the file's fsync, its rename, then the log emptied; 12-68 ms for 12-62 MB, on the
loop before) after them: the store tells the core "installed" at once
(DiskLogStore.prepare_install) and the Ready waits likewise; a log operation that comes before
it is done waits for it on the loop, and the clients reading the log beside the core
(MetadataTopic) see the log the install makes meanwhile (net/install_aware_log.py). The core
checks each chunk as it comes and keeps none of the snapshot (raft/snapshot_check.py), so no
step of the fetch or the install grows with the snapshot's size. Segment rolls still fsync on
the loop.

The state machine's load of an installed snapshot runs in steps (driver_load; Kafka loads on
its MetadataLoader's thread and publishes the image when done). Its rules:

* The file is read off the loop; its records go to each listener's ``begin_snapshot_load``
  (contract.py) a few ms of them per step (LOAD_STEP_MS), the loop free between steps. The
  listener builds its new state aside; ``finish``, in the last step, swaps it in whole. Readers
  (the controller's requests, a broker's image) see the old state until then, never a half one.
* Meanwhile the listeners get no ``on_committed``: the Readys' ``committed_through`` (its
  highest), their committed appends' answers, the high watermark exposed (``hw_listeners``) are
  held, and applied after ``finish``, in order, from the store, each batch once
  (``applied_offset`` stays the old one until ``finish`` sets it to the snapshot's offset),
  in steps too (a step ends on a whole batch: each a committed state); the load ends, and
  commits flow as before, once the held ones are all applied. The log behind them cannot go
  meanwhile: no snapshot is written during a load (the state
  machine does not hold the applied state), so retention does not clean below it.
* Leader changes reach the listeners as they happen, load or not (they carry no state). A node
  elected during a load is not ``leader_caught_up`` until the load (its catch-up included) is
  done and every record committed before its epoch applied, so the controller does not
  activate on a half-loaded or old state (Kafka's controller becomes active only once it
  replayed to the high watermark). A rollback of the controller's writes in flight
  (``replay_committed``) during a load would read the snapshot being loaded, at once, on the
  loop: it cannot happen in the usual order (a leader that has writes in flight renounces at
  the leader change that comes before an install), and if it did it would be slow, not wrong.
* A second install during a load drops the first one unfinished (its task cancelled at its
  next step, its state never swapped in); the new load takes over what was held (the new
  snapshot covers every commit held, which all lie below the offset it starts the log at).
* ``register`` during a load: the listener joins at its end. The node stopping cancels it.
* No full garbage collection runs while a load does (generation 2's threshold is put out of
  reach and given back at its end): the new state doubles the heap, which in CPython's rule
  meant collections of the whole heap on the loop during the load. The hold lasts until the
  listeners have let the replaced state go (``finish`` may return an awaitable for that), and
  then the node freezes what survives (gc_pauses.freeze_after_load, when
  kafkawire.gc.freeze.after.ms is above 0): else the first full collection after the load
  walked the whole new image (0.5-3 s at 1M partitions). The start's load freezes too.
* At start (``start``) the latest snapshot is loaded by the same code in one go, before the
  core starts and the node listens (nothing to yield to; a StateMachineFatal is the start's
  error), as before.
* A commit that leaves more than CATCH_UP_IN_STEPS_OFFSETS offsets to apply (a cold start's log
  after its snapshot) is applied by the same steps, with the same holds, as a load with no
  snapshot (``_catch_up_in_steps``), except on a leader already caught up (its own commits,
  applied ahead by the controller); a new leader is caught up once it is done.
* A follower's commits are applied on the loop turn after the Ready that carries them, once its
  next Fetch (which tells the leader its log end) has left (driver_load._commit_after_send).

RaftDriver is split in parts, mixins of one class: driver_disk (the disk thread's work and the
held Readys), driver_snapshots (when a snapshot is due, writing it, cleaning behind it) and
driver_appends (the append queue and its bounds, record counts for every append and, for
``schedule_appends``, which takes many one-record appends in one call with the work per batch,
not per record, a time bound at the measured commit rate: kafkawire.quorum.append.queue.max.ms);
driver_state declares what they share. Committed batches reach the listeners as lists of bytes
made in one C call per batch (RecordBatch.values), the leader's batches are written by one C
call per Propose (RecordBatchBuilder.append_values).

Time given to the core is wall-clock milliseconds (DescribeQuorum reports fetch timestamps
as Kafka does, in epoch ms), held monotonic: a clock step backwards is absorbed.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import dataclasses
import itertools
import logging
import random
import time

from kafkawire.net import background
from kafkawire.net.client import NetworkClient, RequestTimedOut, TransportError, UnsupportedVersion
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import EncodeError
from kafkawire.protocol.handler import CloseConnection
from kafkawire.storage.snapshot import SnapshotReader
from kafkawire.raft.config import RaftConfig
from kafkawire.raft.contract import NodeFailed, NoLeader, NotLeader, RaftListener, StateMachine
from kafkawire.raft.core import RaftCore
from kafkawire.raft.io import (InstallSnapshot, LogFlushed, OutboundRequest, Propose, Ready, RequestFailed, RequestReceived, ResponseReceived, Shutdown,
                     Tick, WriteSnapshotChunk)
from kafkawire.raft.rpc import adapt_request_for_version
from kafkawire.raft.types import LeaderAndEpoch, OffsetAndEpoch

from .disk_store import DiskLogStore
from .driver_appends import APPEND_QUEUE_BATCHES, APPEND_UNCOMMITTED_BATCHES, AppendQueueing, CommitRate, _QueuedAppend
from .driver_disk import DiskWork
from .driver_load import SnapshotLoading, SnapshotLoads
from .driver_snapshots import SnapshotDuties
from .metrics import RaftMetrics
from .to_leader import unless_the_leader_changes

log = logging.getLogger(__name__)


class WallClock:
    """Epoch milliseconds that never go backwards."""

    def __init__(self):
        self._last = 0

    def __call__(self) -> int:
        self._last = max(self._last, int(time.time() * 1000))
        return self._last


class RaftDriver(DiskWork, SnapshotDuties, AppendQueueing, SnapshotLoads):
    def __init__(self, config: RaftConfig, store: DiskLogStore, client: NetworkClient, *,
                 state_machine: StateMachine | None = None, seed: int | None = None, clock=None,
                 snapshot_min_bytes: int = 20 * 1024 * 1024, snapshot_interval_ms: int = 3_600_000,
                 retention_bytes: int = 100 * 1024 * 1024, retention_ms: int = 7 * 24 * 3_600_000):
        # The disk thread fsyncs in the background and reports each flush (LogFlushed).
        self.config = config = dataclasses.replace(config, async_flush=True)
        self.store = store
        self.client = client
        self.state_machine = state_machine     # the listener that also makes snapshots
        self.listeners: list[RaftListener] = []  # more listeners (Kafka's RaftClient.register)
        self.clock = clock or WallClock()
        self.seed = random.SystemRandom().getrandbits(32) if seed is None else seed
        self.snapshot_min_bytes = snapshot_min_bytes
        self.snapshot_interval_ms = snapshot_interval_ms
        self.retention_bytes = retention_bytes      # metadata.max.retention.bytes (-1: no limit)
        self.retention_ms = retention_ms            # metadata.max.retention.ms (-1: no limit)
        self.core: RaftCore | None = None
        self.metrics = RaftMetrics(config.node_id)
        self.applied_offset = 0                 # next offset the state machine needs
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = 0
        self._snapshot_check_scheduled = False
        self._snapshot_task: asyncio.Future | None = None     # a snapshot being written by a worker thread
        self._load: SnapshotLoading | None = None            # an installed snapshot loading in steps
        self.last_load: SnapshotLoading | None = None        # the last load done, with its steps' times
        self._closing = False
        self._waiting_responses: dict[object, asyncio.Future] = {}   # io's request_id -> the reply
        self._request_ids = itertools.count()
        # Appends wait in _append_queue until one call per event-loop turn (_drain_appends)
        # hands them to the core together, up to a batch: one Propose, one log write and one
        # fsync for all that arrived meanwhile (Kafka's raft thread drains its accumulator on
        # each poll likewise). One Propose per append cost an fsync each at linger 0 and held
        # the loop for seconds under load: fetches went unanswered and leadership moved.
        self._append_queue: collections.deque[_QueuedAppend] = collections.deque()
        self._queued_records = 0
        self._drain_scheduled = False
        self._drain_after_flush = False     # a drain waits for the fsync in flight
        self.append_queue_limit = config.max_batch_records * APPEND_QUEUE_BATCHES
        self._uncommitted_records = 0       # proposed, neither committed nor failed yet
        self.append_uncommitted_limit = config.max_batch_records * APPEND_UNCOMMITTED_BATCHES
        self.append_queue_max_ms = config.append_queue_max_ms    # schedule_appends' time bound (0: none)
        self._commit_rate = CommitRate()
        self._appends: dict[object, list[_QueuedAppend]] = {}   # token -> the appends of that Propose
        self._tokens = itertools.count()
        # fsyncs run on a thread of their own (_start_flush); the effects of Readys that need
        # theirs wait in _held, in order, as (the flush id they need, or 0, the disk write
        # they need, or 0, Ready). Flushes are numbered by the core (Ready.flush_id):
        # _flush_done of _flush_requested are durable; disk writes (an election's quorum-state,
        # a snapshot install) by the driver, in the order the disk thread runs them:
        # _disk_writes_done of _disk_writes are durable.
        self._disk_thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"raft-disk-{config.node_id}")
        self._flushing: asyncio.Future | None = None
        self._flush_requested = 0
        self._flush_done = 0
        self._held: collections.deque[tuple[int, int, Ready]] = collections.deque()
        self._disk_writes = 0
        self._disk_writes_done = 0
        self._installing: concurrent.futures.Future | None = None   # a snapshot install on the disk thread
        self._unreported_flush = 0      # a flush done outside a loop, for the core's next input
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: int | None = None
        self._send_tasks: set[asyncio.Task] = set()
        self._control_client: NetworkClient | None = None
        self.leader_change = asyncio.Event()    # set (and replaced) on every leader change
        self.hw_listeners: list = []           # called when the high watermark moves
        self.shutdown_complete = asyncio.Event()
        self.failure: BaseException | None = None
        self.failed = asyncio.Event()

    # --- life cycle ----------------------------------------------------------------------------
    def start(self) -> None:
        now = self.clock()
        self._load_latest_snapshot()
        self._last_snapshot_ms = now
        # The core takes the log it opens as durable: what a killed process left in the page
        # cache becomes so here, before this leader could count it toward a commit.
        self.store.prepare_flush()()
        self.core = RaftCore(self.config, self.store, self.store.read_election(), now_ms=now, seed=self.seed)
        self._apply(self.core.start())
        log.info("node %d started: %s, log %d..%d, epoch %d", self.config.node_id, type(self.core.state).__name__,
                 self.store.start_offset(), self.store.end_offset(), self.core.epoch)

    def _load_latest_snapshot(self) -> None:
        snapshots = self.store.snapshot_ids()
        if not snapshots:
            return
        self.load_now(snapshots[-1])

    def begin_shutdown(self, timeout_ms: int = 5000) -> None:
        """Graceful stop: a leader resigns (EndQuorumEpoch); ``shutdown_complete`` is set when done."""
        if self.core is not None and not self.shutdown_complete.is_set():
            self._step(Shutdown(self.clock(), timeout_ms))

    async def close(self) -> None:
        self._closing = True
        self._cancel_load()
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._send_tasks):
            task.cancel()
        for fut in self._waiting_responses.values():
            if not fut.done():
                fut.cancel()
        for group in [*self._appends.values(), list(self._append_queue)]:
            self._fail_appends(group, NotLeader("the node is shutting down", int(Errors.NOT_LEADER_OR_FOLLOWER)))
        self._appends.clear()
        self._append_queue.clear()
        self._queued_records = self._uncommitted_records = 0
        if self._control_client is not None:
            await self._control_client.close()
        await asyncio.sleep(0)
        if self._snapshot_task is not None:
            # The worker thread finishes its file (it cannot be interrupted); nothing is
            # published after close, and a file it leaves is a complete, durable snapshot.
            await asyncio.wait([self._snapshot_task])
        if self._flushing is not None:
            await asyncio.wait([self._flushing])    # its descriptors are duplicates: the store may close after
        self._held.clear()
        self._disk_thread.shutdown(wait=True)
        self.store.close()

    # --- stepping the core ------------------------------------------------------------------------
    def _step(self, event) -> None:
        """One input to the core and its output applied: the raft work poll-idle-ratio-avg counts."""
        started = time.perf_counter()
        try:
            self._step_now(event)
        finally:
            self.metrics.busy_ms += (time.perf_counter() - started) * 1000

    def _step_now(self, event) -> None:
        if self.failure is not None:
            return
        if self._unreported_flush and not isinstance(event, LogFlushed):
            flush_id, self._unreported_flush = self._unreported_flush, 0
            self._step(LogFlushed(event.now_ms, flush_id))
        if self._append_queue and not isinstance(event, Propose):
            # Appends queued before this input reach the core before it, as when every append
            # stepped the core at once: nothing the input makes the core append (a VotersRecord,
            # a LeaderChange) can come between, so an offset next_offset() gave stays true.
            while self._append_queue and self.failure is None:
                self._propose_queued_batch(event.now_ms)    # the input's time: the core's clock only goes on
            if self.failure is not None:
                return
        try:
            ready = self.running.step(event)
            self._apply(ready)
        except Exception as exc:     # the core or the disk broke a rule: stop, as Kafka halts
            self._stop_on_failure(exc)

    def _stop_on_failure(self, exc: Exception) -> None:
        self.failure = exc
        log.critical("node %d stopping: %s", self.config.node_id, exc, exc_info=True)
        self.failed.set()
        stopped = NodeFailed(str(exc))
        for group in [*self._appends.values(), list(self._append_queue)]:
            self._fail_appends(group, stopped)
        self._appends.clear()
        self._append_queue.clear()
        self._queued_records = self._uncommitted_records = 0

    def _apply(self, ready: Ready) -> None:
        core = self.running
        # 1-2: written now, durable before anything of this Ready leaves (below).
        if ready.election is not None:
            election = ready.election
            if core.kraft_version() == 0 and not election.voters:
                # Data version 0 lists the voters (Kafka writes the static voter ids).
                election = dataclasses.replace(election, voters=frozenset(core.voters().ids))
            self._write_election(election, core.kraft_version())
        installs = 0
        for op in ready.log_ops:
            self._finish_install()      # a log operation after an install in flight waits for it
            if isinstance(op, InstallSnapshot):
                self._start_install(op)
                installs += 1
            elif isinstance(op, WriteSnapshotChunk):
                self._write_chunk(op)
            else:
                self.store.apply(op)
        if ready.flush:
            self._flush_requested = ready.flush_id
            self._start_flush()
        for before, after in ready.transitions:
            log.info("node %d: %s -> %s", self.config.node_id, before, after)
        for warning in ready.warnings:
            log.warning("node %d: %s", self.config.node_id, warning)
        # 3-4 at once, or, for a Ready that must wait for its flush, once that is done; in
        # Ready order, so nothing leaves before what an earlier held Ready waits for.
        disk_write_needed = self._disk_writes if ready.election is not None or installs else 0
        if (self._held or ready.hold_until_flushed and ready.flush_id > self._flush_done
                or disk_write_needed > self._disk_writes_done):
            self._held.append((ready.flush_id if ready.hold_until_flushed else 0, disk_write_needed, ready))
        else:
            self._apply_effects(ready)
        self.metrics.status_changed(core.status, self.store)
        # 5: the next tick.
        self._schedule(ready.wake_at_ms)

    def _apply_effects(self, ready: Ready) -> None:
        """Steps 3 and 4 of a Ready whose writes are durable."""
        core = self.running
        # 3: messages.
        for request in ready.send:
            background.start(self._send(request), f"node {self.node_id}: sending {type(request.body).__name__} "
                             f"to node {request.destination}", keep=self._send_tasks, logger=log)
        for response in ready.respond:
            fut = self._waiting_responses.pop(response.request_id, None)
            if fut is not None and not fut.done():
                fut.set_result(response.body)
        # 4: the state machine and the local clients.
        now = core.now_ms
        if ready.leader_change is not None:
            self._on_leader_change(ready.leader_change, now)
        if ready.load_snapshot is not None:
            log.info("node %d: installed snapshot %s fetched from the leader", self.config.node_id,
                     ready.load_snapshot)
            self._begin_load(ready.load_snapshot)
        if self._load is None and ready.committed_through is not None and self._catch_up_due(ready.committed_through):
            self._begin_catch_up()
        loading = self._load
        if loading is not None:      # held until the load is swapped in (driver_load._after_load)
            if ready.committed_through is not None:
                loading.commit_through = max(loading.commit_through or 0, ready.committed_through)
            loading.appends_committed += ready.appends_committed
        elif ready.committed_through is not None:
            self._commit_after_send(ready)          # a follower's after its next Fetch (driver_load)
        for token, offset in ready.appends_committed if loading is None else ():
            self._complete_appends(self._settled(token), offset, now)
        for token, error in ready.appends_failed:
            self._fail_appends(self._settled(token), NotLeader(f"append failed: {Errors.for_code(error).name}", error))
        if ready.shutdown_complete:
            self.shutdown_complete.set()
        if ready.committed_through is not None and loading is None:
            self._schedule_snapshot_check()

    def _commit_through(self, through: int) -> None:
        self._apply_committed(through)
        self.metrics.set_high_watermark(through)
        for listener in self.hw_listeners:
            listener()

    def _schedule(self, wake_at_ms: int) -> None:
        if self._timer is not None and self._timer_at == wake_at_ms:
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(wake_at_ms - self.clock(), 0) / 1000
        self._timer_at = wake_at_ms
        self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self._step(Tick(self.clock()))

    # --- the state machine ------------------------------------------------------------------------
    def _on_leader_change(self, leader: LeaderAndEpoch, now: int) -> None:
        self.metrics.on_leader_change(leader, now)
        log.info("node %d: leader is now %s in epoch %d", self.config.node_id,
                 "unknown" if leader.leader_id is None else leader.leader_id, leader.epoch)
        for listener in self._all_listeners():
            listener.on_leader_change(leader.leader_id, leader.epoch)
        self.leader_change.set()
        self.leader_change = asyncio.Event()

    def _apply_committed(self, through: int, deadline: float | None = None) -> bool:
        """Hand the newly committed batches to the listeners, in order and without a gap. A
        gap (a log the recovery and the fetch checks should have kept out) stops the node with
        the offsets named, as Kafka halts, rather than leaving the state machine silently behind.
        With a ``deadline`` (perf_counter), stops after the batch that passes it and returns
        True: more is left (a load's catch-up, in steps)."""
        if through <= self.applied_offset:
            return False
        straddles = False
        for batch in self.store.data_batches(self.applied_offset, through):
            if batch.base_offset != self.applied_offset:
                raise NodeFailed(f"the committed log has a gap: the batch after offset {self.applied_offset - 1} "
                                 f"starts at {batch.base_offset}; records up to {through - 1} cannot be applied")
            if batch.last_offset >= through:
                straddles = True
                break      # a batch is committed whole or not at all
            self._bytes_since_snapshot += batch.size_in_bytes
            if not batch.is_control:
                values = batch.values()         # in C: no Record object per record
                for listener in self._all_listeners():
                    listener.on_committed(batch.base_offset, batch.partition_leader_epoch, batch.max_timestamp,
                                          values)
            self.applied_offset = batch.last_offset + 1
            if deadline is not None and self.applied_offset < through and time.perf_counter() >= deadline:
                return True
        if self.applied_offset < through and not straddles:
            raise NodeFailed(f"the log holds no batch at offset {self.applied_offset}, below the high watermark "
                             f"{through}: the committed records cannot be applied")
        return False

    def _all_listeners(self) -> list:
        return ([self.state_machine] if self.state_machine is not None else []) + self.listeners

    def register(self, listener: RaftListener) -> None:
        """Kafka's RaftClient.register: the listener first gets the latest snapshot (when the log
        starts there) and the committed records up to now, then every commit, snapshot load
        and leader change, in order. It has on_committed, on_snapshot_loaded, on_leader_change.
        During a snapshot's load it joins at the load's end (it gets the new snapshot then)."""
        if self._load is not None:
            self._load.late_listeners.append(listener)
            return
        self.replay_committed(listener)
        if self.core is not None:
            leader = self.leader()
            listener.on_leader_change(leader.leader_id, leader.epoch)
        self.listeners.append(listener)

    def replay_committed(self, listener) -> None:
        """Hand ``listener`` the latest snapshot (when the log starts there) and the committed
        batches after it, as applied so far (RaftHandle.replay_committed)."""
        self._finish_install()
        start = self.store.start_offset()
        snapshots = [s for s in self.store.snapshot_ids() if s.offset >= start]
        if snapshots:
            reader = SnapshotReader(self.store.snapshot_path(snapshots[-1]))
            listener.on_snapshot_loaded(snapshots[-1], [bytes(r.value) for r in reader.records()])
        for batch in self.read_committed(start):
            listener.on_committed(batch.base_offset, batch.partition_leader_epoch, batch.max_timestamp,
                                  batch.values())

    def read_committed(self, from_offset: int):
        """The committed data batches from the one holding ``from_offset`` (control batches
        skipped): what a reader of the metadata log may see."""
        for batch in self.store.data_batches(from_offset, self.applied_offset):
            if not batch.is_control:
                yield batch


    # --- inbound requests (KafkaServer handlers) ------------------------------------------------
    async def handle_request(self, ctx, request):
        """A raft RPC from a peer or an admin client: the core answers, maybe later (long poll)."""
        if self.failure is not None:
            raise NodeFailed(str(self.failure))
        if self.shutdown_complete.is_set():
            # A core that finished its shutdown answers nothing: close the connection now rather
            # than leave the request waiting until the listener's close cancels it.
            raise CloseConnection("the node is shutting down")
        request_id = next(self._request_ids)
        fut = asyncio.get_running_loop().create_future()
        self._waiting_responses[request_id] = fut
        self._step(RequestReceived(self.clock(), request_id, ctx.api_version, request,
                                   f"{ctx.peer[0]}:{ctx.peer[1]}"))
        try:
            return await fut
        finally:
            self._waiting_responses.pop(request_id, None)

    # --- outbound requests ----------------------------------------------------------------------
    async def _send(self, request: OutboundRequest) -> None:
        address = request.address or self._address_of(request.destination)
        if address is None:
            self._step(RequestFailed(self.clock(), request.correlation_id, request.destination,
                                     int(Errors.BROKER_NOT_AVAILABLE)))
            return
        body = request.body
        api = api_table()[body.API_KEY]
        try:
            versions = await self.client.connect(address, self.config.request_timeout_ms)
            theirs = versions.get(body.API_KEY)
            high = api.max_version - (1 if api.request.LATEST_VERSION_UNSTABLE else 0)
            if theirs is None or max(theirs[0], api.min_version) > min(theirs[1], high):
                raise UnsupportedVersion(address, f"no common {api.name} version")
            version = min(theirs[1], high)
            body = adapt_request_for_version(body, version)
            response = await self.client.send(address, body, api_version=version,
                                              timeout_ms=self.config.request_timeout_ms + 1000)
        except asyncio.CancelledError:
            raise
        except (UnsupportedVersion, EncodeError) as exc:
            log.debug("%s to node %d at %s: %s", api.name, request.destination, address, exc)
            self._step(RequestFailed(self.clock(), request.correlation_id, request.destination,
                                     int(Errors.UNSUPPORTED_VERSION)))
            return
        except (TransportError, RequestTimedOut) as exc:
            log.debug("%s to node %d at %s failed: %s", api.name, request.destination, address, exc)
            self._step(RequestFailed(self.clock(), request.correlation_id, request.destination,
                                     int(Errors.BROKER_NOT_AVAILABLE)))
            return
        except Exception:       # a bug: logged by background.start; the core hears the request failed
            self._step(RequestFailed(self.clock(), request.correlation_id, request.destination,
                                     int(Errors.BROKER_NOT_AVAILABLE)))
            raise
        self._step(ResponseReceived(self.clock(), request.correlation_id, request.destination, response))

    def _address_of(self, node_id: int):
        if self.core is None:
            return None
        return self.core.voters().endpoints(node_id).address(self.config.listener) if node_id >= 0 else None

    # --- the local client's API (RaftHandle for the metadata controller) ---------------------------
    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def running(self) -> RaftCore:
        """The core, which exists from start() on."""
        if self.core is None:
            raise RuntimeError(f"node {self.node_id} is not started")
        return self.core

    def leader(self) -> LeaderAndEpoch:
        return self.running.leader_and_epoch()

    def is_leader(self) -> bool:
        return self.running.is_leader()

    def leader_caught_up(self) -> bool:
        """This node leads and has applied every record committed before its epoch started:
        Kafka tells its listener of the new leadership only then."""
        if self.core is None or not self.is_leader() or self._load is not None:
            return False
        epoch_start = self.running.status().epoch_start_offset
        return epoch_start is not None and self.applied_offset >= epoch_start

    def next_offset(self) -> int:
        """The offset the next proposed record will get (the log end plus what is batching
        in the core and waiting in the append queue)."""
        status = self.running.status()
        return status.log_end_offset + status.proposed_records + self._queued_records

    def kraft_version(self) -> int:
        """The latest kraft.version in the log, uncommitted included (KafkaRaftClient.kraftVersion)."""
        return self.running.kraft_version()

    def high_watermark(self) -> int:
        """The high watermark as far as the driver has exposed it (the last committed_through
        applied): the core's may be ahead while its fsync runs."""
        return max(self.metrics.high_watermark, 0)

    def controller_clients(self) -> list[NetworkClient]:
        """The clients this node has towards the controllers: the raft client and, once made,
        the channel to the active controller (send_to_leader), which takes the raft client's
        TLS context when it is made (a store changed dynamically reaches both)."""
        return [self.client] + ([] if self._control_client is None else [self._control_client])

    async def send_to_leader(self, request, timeout_ms: int = 5000):
        change = self.leader_change
        leader = self.leader()
        if leader.leader_id is None:
            raise NoLeader(f"no leader is known in epoch {leader.epoch}")
        address = self._address_of(leader.leader_id)
        if address is None:
            raise NoLeader(f"the leader {leader.leader_id} has no {self.config.listener} endpoint we know")
        # Not on the raft connection: the server answers each connection's requests in order, so
        # a request waiting for a commit (ControllerRegistration) would hold back the fetch
        # answers that the commit needs. Kafka's controller channel is a separate client too.
        if self._control_client is None:
            # The raft client's TLS and SASL settings: the same controller listener.
            self._control_client = NetworkClient(client_id=f"controller-{self.node_id}-to-active-controller",
                                                 request_timeout_ms=max(timeout_ms, 1000),
                                                 ssl_context=self.client.ssl_context, sasl=self.client.sasl)
        return await unless_the_leader_changes(
            change, self._control_client.send(address, request, timeout_ms=timeout_ms), address,
            f"{type(request).__name__} to node {leader.leader_id}")
