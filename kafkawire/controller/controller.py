"""MetadataController: the state machine a KRaft controller node runs on raft (the
StateMachine of kafkawire.raft.contract), behaving as Kafka's QuorumController does for a
controller-only quorum.

Every node replays committed records into a ControllerState (the MetadataImage plus what the
controller keeps beside it) and registers itself with the active controller
(registration.py). The leader becomes the active controller once it has applied everything
committed before its epoch began (Kafka's rule for handleLeaderChange): it appends the
activation records (activation.py), then serves ControllerRegistration, BrokerRegistration,
BrokerHeartbeat and CreateTopics, appends a NoOpRecord every metadata.max.idle.interval.ms,
and fences brokers whose session expired (these periodic duties are in periodic_duties.py).
Every other node answers those requests with NOT_CONTROLLER, naming the active controller when
it knows it.

Writes are pipelined as in Kafka's QuorumController (pipeline.py): a write generates its
records from the controller's state, which are applied to that state at once and appended as
one batch, in one step with nothing run in between; the write is answered when that batch
commits, while the next writes already run against the state holding its records. A write
without records waits for the writes in flight before it is answered, as Kafka's read-only
operations wait for the purgatory (a BrokerHeartbeat only for those that changed its broker's
registration: ``_registration_in_flight``). When leadership is lost with writes in flight, each is
answered NOT_CONTROLLER and the state goes back to the committed one (Kafka's
resetToLastCommitted). A write cannot be torn: generating, applying and appending happen
together, whether its caller still waits (a request timeout, a closed connection) or not. A
deadline only stops a write that has not generated yet, as a deadline stops an event in
Kafka's event queue; each API gets the deadline Kafka's ControllerApis gives it (the request's
timeoutMs, half of broker.heartbeat.interval.ms for BrokerHeartbeat, or none). The
activation records alone are appended and waited for before anything else is written.

Writes generate from ``state.image``, which holds the records in flight; everything else reads
``image``, the committed image (committed.py: never a record a lost leadership rolls back), and
``committed_offset``, the offset of its last record.

The raft handle is the contract's RaftHandle: ``next_offset()`` gives the offset the next
appended record gets (Kafka's broker epochs are the offset of the RegisterBrokerRecord), and
``leader_caught_up()`` says the leader has applied everything before its epoch start. Besides
its own APIs the controller answers the ACL APIs and AlterUserScramCredentials (acl_apis.py).
"""
from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid

from kafkawire.messages.create_topics_response import CreateTopicsResponse
from kafkawire.metadata.delegation_tokens import TokenHmacs
from kafkawire.metadata.group_configs import GroupBounds
from kafkawire.net.authorizer import CreateTopicsFailed
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler
from kafkawire.raft.contract import NotLeader, RaftHandle, SnapshotLoadInSteps

from . import admin_apis, broker_apis, fence_timeline, registration_apis
from .acl_apis import acl_handlers
from .activation import BootstrapError, activation_records
from .bounded import BoundedListTooLong, excessive_batch
from .committed import CommittedImage
from .delegation_tokens import DelegationTokenSettings, delegation_token_handlers
from .errors import ApiError, WriteTimedOut, not_controller
from .fencing import PartitionMoves
from .heartbeats import HEARTBEAT_INTERVAL_MS, SESSION_TIMEOUT_MS, BrokerHeartbeatManager
from .mutation_quota import ControllerMutationQuotas
from .periodic_duties import PeriodicDuties
from .pipeline import InFlight, WritePipeline
from .registration import ControllerRegistrationManager
from .snapshot import image_records, iter_image_records
from .state import ControllerState, SnapshotLoad
from .state_release import release_in_steps
from .stats import ControllerStats
from .topics import TopicDefaults, create_topics
from .node_configs import NodeConfigs
from .leader_balance import LEADER_IMBALANCE_CHECK_INTERVAL_MS, LeaderBalanceTask
from .unclean_elections import UNCLEAN_ELECTION_INTERVAL_MS, UncleanElectionTask
from .versions import SUPPORTED_FEATURES
from .unregister_broker import unregister_broker_handlers

log = logging.getLogger(__name__)

MAX_IDLE_INTERVAL_MS = 500           # metadata.max.idle.interval.ms
# How long a request without a deadline waits for a new leader to finish activating (Kafka's
# queue runs it right behind the activation event; ours waits for that event's commit).
ACTIVATION_WAIT_MS = 5000
CREATE_TOPICS = 19
CREATE_TOPICS_MIN_VERSION = 2        # Kafka 4.x serves CreateTopics v2-v7


def _monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


async def _wait(event: asyncio.Event, seconds: float | None) -> None:
    """Wait for ``event`` at most ``seconds``. (asyncio.timeout, not wait_for: on 3.11 wait_for
    can swallow a cancellation that arrives as the event fires, and a loop would never stop.)"""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        pass


class MetadataController(PeriodicDuties):
    """The metadata controller of one KRaft node (Kafka's QuorumController for a controller-only
    quorum): it replays committed __cluster_metadata records into its state and, while its node
    leads, answers the controller APIs (registrations, heartbeats, topics, configs, ACLs, ...) by
    appending the records Kafka's controller appends.
    """
    def __init__(self, raft: RaftHandle, *, cluster_id: str, bootstrap_records: list[bytes],
                 bootstrap_source: str = "the bootstrap records", listeners=(),
                 supported_features: dict[str, tuple[int, int]] | None = None, incarnation_id: uuid.UUID | None = None,
                 max_idle_interval_ms: int = MAX_IDLE_INTERVAL_MS, session_timeout_ms: int = SESSION_TIMEOUT_MS,
                 heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS,
                 static_min_insync_replicas: int = 1, topic_defaults: TopicDefaults = TopicDefaults(),
                 registration_backoff_ms: int = 100, clock=_monotonic_ms, rng: random.Random | None = None,
                 acls_enabled: bool = False, group_bounds: GroupBounds = GroupBounds(),
                 delegation_tokens: DelegationTokenSettings = DelegationTokenSettings(),
                 wall_clock_ms=_wall_clock_ms, mutation_quota_window: tuple[int, int] = (11, 1),
                 unclean_election_interval_ms: int = UNCLEAN_ELECTION_INTERVAL_MS,
                 static_unclean_election: bool = False, auto_leader_rebalance: bool = True,
                 leader_imbalance_check_interval_ms: int = LEADER_IMBALANCE_CHECK_INTERVAL_MS):
        """``listeners``: this node's controller listeners as (name, host, port, security protocol),
        which it registers; ``bootstrap_records``: the metadata record frames of bootstrap.checkpoint
        (factory.load_bootstrap_records); ``clock``: monotonic milliseconds; ``acls_enabled``: the
        node has an authorizer (authorizer.class.name), so the ACL APIs write ACL records;
        ``heartbeat_interval_ms``: broker.heartbeat.interval.ms, half of which is a
        BrokerHeartbeat's deadline (ControllerApis.handleBrokerHeartbeatRequest);
        ``delegation_tokens``: the delegation.token.* settings (delegation_tokens.py), whose
        timestamps are ``wall_clock_ms()`` milliseconds; ``mutation_quota_window``: controller.quota.window.*;
        ``unclean_election_interval_ms``: unclean.leader.election.interval.ms (unclean_elections.py);
        ``static_unclean_election``: unclean.leader.election.enable in server.properties, the
        default of a topic that sets none when no dynamic config does (node_configs.py);
        ``auto_leader_rebalance``, ``leader_imbalance_check_interval_ms``: auto.leader.rebalance.enable
        and leader.imbalance.check.interval.seconds, the electPreferred task (leader_balance.py)."""
        self.raft = raft
        self.acls_enabled = acls_enabled
        self.delegation_tokens = delegation_tokens
        self.token_hmacs = TokenHmacs(delegation_tokens.secret_key)
        self.wall_clock_ms = wall_clock_ms
        self._next_token_sweep_ms = 0
        self.unclean_elections = UncleanElectionTask(unclean_election_interval_ms)
        self.leader_balance = LeaderBalanceTask(leader_imbalance_check_interval_ms, auto_leader_rebalance)
        self.node_id = raft.node_id
        self.cluster_id = cluster_id
        self.bootstrap_records = list(bootstrap_records)
        self.bootstrap_source = bootstrap_source
        self.supported_features = dict(supported_features or SUPPORTED_FEATURES)
        self.incarnation_id = incarnation_id or uuid.uuid4()
        self.max_idle_interval_ms = max_idle_interval_ms
        self.topic_defaults = topic_defaults
        self.clock = clock
        self.rng = rng or random.Random()
        self.group_bounds = group_bounds        # group.consumer.*: what a GROUP config is checked against
        self.mutation_quotas = ControllerMutationQuotas(lambda: self.image, *mutation_quota_window, clock=clock)
        self.state = ControllerState(self.supported_features)
        self.state.node_configs = NodeConfigs(self.node_id, static_unclean_election, static_min_insync_replicas)
        self.committed = CommittedImage(self.state)     # what readers see: committed records only
        self.sessions = BrokerHeartbeatManager(session_timeout_ms)
        self.moves = PartitionMoves()               # a broker's partitions moved in bounded events (fencing.py)
        self.heartbeat_deadline_ms = int(heartbeat_interval_ms / 2)   # Java's int division
        self.stats = ControllerStats()              # TimedOutBrokerHeartbeatCount, event-queue metrics, ...
        self.registration = ControllerRegistrationManager(
            raft, lambda: self.committed.image, incarnation_id=self.incarnation_id, listeners=listeners,
            supported_features=self.supported_features, backoff_initial_ms=registration_backoff_ms, rng=self.rng)
        self.activation_error: str | None = None
        self._claimed_epoch: int | None = None      # the epoch we lead, from on_leader_change
        self._claimed_at_ms = 0                     # when this node learned it leads that epoch
        self._active_epoch: int | None = None       # the epoch whose activation records committed
        self._next_noop_ms = 0
        self._writing = False                       # the activation records are being written
        self.pipeline = WritePipeline(self.state, lambda listener: self.raft.replay_committed(listener),
                                      self._signal_write_done, committed=self.committed)
        self._write_done = asyncio.Event()          # set (and replaced) whenever a write ends
        self._wake = asyncio.Event()
        self._applied = asyncio.Event()             # set (and replaced) whenever a batch is applied
        self._activated = asyncio.Event()           # set (and replaced) whenever activation completes

    # --- what other parts of the node read ------------------------------------------------------
    @property
    def image(self):
        """The committed image (committed.py): what everything but the controller's own writes
        reads. The writes generate from ``state.image``."""
        return self.committed.image

    @property
    def committed_offset(self) -> int:
        """The offset of the last data record ``image`` holds (-1 before any)."""
        return self.committed.offset

    @property
    def applied_offset(self) -> int:
        """The offset of the last data record applied to the state (-1 before any)."""
        return self.state.next_offset - 1

    @property
    def in_transaction(self) -> bool:
        """A metadata transaction is open, or writes are in flight: a snapshot now would miss
        the transaction's records, or hold records not committed yet (see snapshot_records)."""
        return self.state.in_transaction or self.pipeline.in_flight > 0

    @property
    def replay_stats(self):
        """What replay counted (elections, records that could not be applied), for the metrics."""
        return self.state.replay_stats

    def is_active(self) -> bool:
        return (self._active_epoch is not None and self._active_epoch == self._claimed_epoch
                and self.raft.is_leader())

    # --- the raft side (kafkawire.raft.contract) --------------------------------------------------------
    def on_committed(self, base_offset: int, epoch: int, append_time_ms: int, records: list[bytes]) -> None:
        timeline = fence_timeline.enabled()
        if self.pipeline.applied_ahead(base_offset, records):
            self.pipeline.committed(base_offset, records)       # the committed image moves with it
            if timeline:
                fence_timeline.committed(self.node_id, base_offset, len(records), None)
        else:
            replay_started = time.process_time() if timeline else 0.0
            if self.pipeline.in_flight:
                # Commits come in log order: a batch not applied ahead while writes are in flight
                # means the log is not the one they were applied to, or another writer's came first.
                log.error("controller %d: committed batch at offset %d is not the writes applied ahead up to %d; "
                          "going back to the committed state", self.node_id, base_offset, self.state.next_offset - 1)
                self.pipeline.roll_back(not_controller(None))
            self.state.apply_batch(base_offset, epoch, append_time_ms, records)
            self.committed.state_committed()
            if timeline:
                fence_timeline.committed(self.node_id, base_offset, len(records), time.process_time() - replay_started)
        self._applied.set()
        self._applied = asyncio.Event()
        self.poke()

    def on_snapshot_loaded(self, snapshot_id, records: list[bytes]) -> None:
        load = self.begin_snapshot_load(snapshot_id)
        load.add(records)
        load.finish()

    def begin_snapshot_load(self, snapshot_id) -> SnapshotLoadInSteps:
        """The driver's load in steps (contract.py): the records replayed into a state aside,
        which ``finish`` swaps in whole; readers and writes see the old state until then."""
        load = SnapshotLoad(self.state.supported_features, snapshot_id.offset, snapshot_id.epoch)
        return SnapshotLoadInSteps(load.add, lambda: self._snapshot_loaded(snapshot_id, load.result()), load.prepare)

    def _snapshot_loaded(self, snapshot_id, loaded: ControllerState):
        if self.pipeline.in_flight:      # raft loads snapshots on followers: not expected with writes ahead
            self._renounce(f"snapshot {snapshot_id} loaded")
        old = self.state.adopt(loaded)
        self.committed.state_committed()
        self._applied.set()
        self._applied = asyncio.Event()
        self.poke()
        return release_in_steps(old)    # the old state, as large as the new: freed at once it held the loop

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None:
        if self.pipeline.in_flight and (leader_id != self.node_id or epoch != self._claimed_epoch):
            self._renounce(f"leader {leader_id} in epoch {epoch}")
        self.moves.clear()                          # the next activation resumes them (fencing.py)
        if leader_id == self.node_id and epoch != self._claimed_epoch:
            self._claimed_at_ms = self.clock()      # for the activation's timing log
        self._claimed_epoch = epoch if leader_id == self.node_id else None
        self._active_epoch = None
        self._applied.set()                         # a write waiting for its batch re-checks its epoch
        self._applied = asyncio.Event()
        self.poke()

    def snapshot_records(self) -> list[bytes]:
        """The committed image as records, in Kafka's snapshot order. Records of a metadata
        transaction still open are not in the image, so not here either (``in_transaction``)."""
        return image_records(self.state.image, self.state.feature_order)

    def frozen_snapshot(self):
        """``snapshot_records`` in two halves: on the loop, a frozen view of the committed image
        (MetadataImage.frozen: copies of its top-level maps, nothing per partition); the
        function returned turns it into the same records later, on the driver's worker thread."""
        view, feature_order = self.state.image.frozen(), list(self.state.feature_order)
        return lambda: iter_image_records(view, feature_order)

    def poke(self) -> None:
        """Wake the background work (the driver also calls this when the high watermark moves)."""
        self._wake.set()
        self.registration.poke()

    def handlers(self) -> dict:
        return {
            **acl_handlers(self),
            **delegation_token_handlers(self),
            **unregister_broker_handlers(self),
            **registration_apis.handlers(self),
            CREATE_TOPICS: ApiHandler(self._create_topics, min_version=CREATE_TOPICS_MIN_VERSION),
            **broker_apis.handlers(self),
            **admin_apis.handlers(self),
        }

    async def run(self) -> None:
        await asyncio.gather(self._lead(), self.registration.run())

    # --- being the active controller -------------------------------------------------------------
    def _caught_up(self) -> bool:
        return self.raft.leader_caught_up()

    def _next_offset(self) -> int:
        return self.raft.next_offset()

    async def _lead(self) -> None:
        while True:
            await _wait(self._wake, self._seconds_to_next_duty())
            self._wake.clear()
            epoch = self._claimed_epoch
            if epoch is not None and self._active_epoch != epoch and self._caught_up() and self.raft.is_leader():
                await self._activate(epoch)
            if self.is_active():
                await self._periodic_duties()
            if self.moves and self.is_active():
                await self._move_partitions()

    async def _activate(self, epoch: int) -> None:
        while self._writing or self.pipeline.in_flight:     # a write of an earlier epoch still ending
            await self._write_done.wait()
        await self._run_write(self._activation(epoch))

    async def _activation(self, epoch: int) -> None:
        if self._claimed_epoch != epoch or not self.raft.is_leader():
            return
        try:
            activation = activation_records(
                metadata_version=self.state.metadata_version,
                transaction_start_offset=self.state.transaction_start_offset,
                bootstrap_records=self.bootstrap_records, bootstrap_source=self.bootstrap_source,
                static_min_insync_replicas=self.state.node_configs.static_min_isr)
        except BootstrapError as exc:
            # Kafka's controller halts here; this one stays a non-active voter and says why.
            if self.activation_error != str(exc):
                log.critical("controller %d cannot activate: %s", self.node_id, exc)
            self.activation_error = str(exc)
            return
        log.info("controller %d: %s", self.node_id, activation.message)
        activation_started_ms = self.clock()
        if activation.records:
            try:
                await self._append(activation.records)
            except NotLeader as exc:
                log.info("controller %d: lost leadership while activating: %s", self.node_id, exc)
                return
        if self._claimed_epoch != epoch:
            return
        self.activation_error = None
        self._active_epoch = epoch
        now = self.clock()
        self.rearm(now)
        self._next_noop_ms = now + self.max_idle_interval_ms
        self._next_token_sweep_ms = now + self.delegation_tokens.expiry_check_interval_ms
        self.unclean_elections.activate(now)
        self.leader_balance.activate(now)
        self._activated.set()
        self._activated = asyncio.Event()
        log.info("controller %d is the active controller in epoch %d, %d ms after it won the election (%d ms "
                 "catching up with the log, %d ms writing %d activation records, %d ms re-arming); the sessions "
                 "of %d brokers start now, with broker.session.timeout.ms=%d before any is fenced",
                 self.node_id, epoch, now - self._claimed_at_ms, activation_started_ms - self._claimed_at_ms,
                 now - activation_started_ms, len(activation.records), self.clock() - now,
                 len(self.state.image.brokers), self.sessions.session_timeout_ms)

    def rearm(self, now: int) -> None:
        """The activation's own work after its records: every broker's session starts now
        (ClusterControlManager.activate), and the partition moves the previous active controller
        left are resumed (fencing.py; Kafka has none: it moves a broker's partitions in one event)."""
        self.sessions.activate(self.state.image.brokers, now)
        self.moves.resume(self.state)
        self.stats.contacted(self.state.image.brokers, now)

    async def _append(self, records: list[bytes]) -> int:
        """Append one batch and wait until this node has applied it, or raise NotLeader when
        leadership moves first (the batch may then never commit)."""
        epoch = self._claimed_epoch
        last = await self.raft.append(records)
        while self.state.next_offset <= last:
            if self._claimed_epoch != epoch:
                raise NotLeader(f"node {self.node_id} lost leadership of epoch {epoch} before offset {last} "
                                f"was applied")
            await self._applied.wait()
        return last

    async def _await_active(self, timeout_ms: int) -> None:
        """Requests reaching a leader that is still activating wait for it, as they queue
        behind the activation event in Kafka; anyone else is told NOT_CONTROLLER."""
        deadline = self.clock() + timeout_ms
        while not self.is_active():
            if self._claimed_epoch is None or not self.raft.is_leader():
                raise not_controller(self._known_leader())
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise not_controller(self._known_leader())
            await _wait(self._activated, remaining / 1000)

    def _known_leader(self) -> int | None:
        leader = self.raft.leader().leader_id
        return None if leader == self.node_id and not self.is_active() else leader

    async def _write(self, generate, timeout_ms: int | None = None, reads_uncommitted=None):
        """Run ``generate() -> (records, result)`` against the state as the active controller
        (the committed state and the writes in flight), apply and append its records as one
        batch, and return (result, the batch's last offset or None) once committed.
        ``timeout_ms`` is the operation's deadline from now, or None for none (Kafka's
        OptionalLong.empty(): the write waits its turn however long it takes). Raises
        WriteTimedOut, having generated nothing, when the deadline passes before the write's
        turn comes (the activation records are being written, or the pipeline is full).

        A result without records waits for the writes in flight (it may tell of them), unless
        ``reads_uncommitted(result)`` (given) says it holds nothing that they changed."""
        called_ms = self.clock()
        if timeout_ms is None:
            await self._await_active(ACTIVATION_WAIT_MS)
            await self._turn(None)
        else:
            deadline_ms = called_ms + max(timeout_ms, 0)
            await self._await_active(max(timeout_ms, 0))
            if not await self._turn(deadline_ms):
                self.stats.operations_timed_out += 1
                raise WriteTimedOut(timeout_ms)
        if not self.is_active():
            raise not_controller(self._known_leader())
        # Generated right after the checks, with nothing run in between; from here on the write
        # is committed to, whoever still waits for it.
        records, result = self._generate(generate, called_ms)
        if not records:
            previous = self.pipeline.last_answer()
            if previous is not None and (reads_uncommitted is None or reads_uncommitted(result)):
                await self._answered(previous)
            return result, None
        write = self._append_ahead(records)
        await self._answered(write.answer)
        return result, write.last_offset

    def _generate(self, generate, called_ms: int):
        """``generate()``, timed for the event-queue metrics (stats.py)."""
        started_ms = self.clock()
        self.stats.write_started(started_ms - called_ms)
        try:
            generated = generate()
            if self.moves:
                # A job may have just started (fencing.py), maybe by a write of no records,
                # whose commit would not wake the loop that runs the jobs.
                self._wake.set()
            return generated
        except BoundedListTooLong as exc:           # as EventHandlerExceptionInfo: the whole request
            log.info("controller %d: refusing an operation that would write too many records: %s",
                     self.node_id, exc)
            raise excessive_batch() from None
        except ApiError:
            raise
        except Exception:
            self.stats.faults += 1                  # Kafka counts a non-fatal fault in MetadataErrorCount
            raise
        finally:
            self.stats.processing_time.record(self.clock() - started_ms)

    async def _turn(self, deadline_ms: int | None) -> bool:
        """Wait until the activation records are written and the pipeline has room; False if
        ``deadline_ms`` (None: none) passed first."""
        while self._writing or not self.pipeline.has_room():
            remaining_ms = None if deadline_ms is None else deadline_ms - self.clock()
            if remaining_ms is not None and remaining_ms <= 0:
                return False
            await _wait(self._write_done, None if remaining_ms is None else remaining_ms / 1000)
        return deadline_ms is None or self.clock() < deadline_ms

    async def _run_write(self, write):
        """Run the coroutine ``write`` as the one write in progress, to its end: a caller that
        stops waiting (cancelled) leaves it running, and the next write waits for it."""
        self._writing = True
        task = asyncio.ensure_future(write)
        task.add_done_callback(self._write_ended)
        return await asyncio.shield(task)

    def _write_ended(self, task: asyncio.Future) -> None:
        self._writing = False
        self._signal_write_done()
        if not task.cancelled() and task.exception() is not None and not isinstance(task.exception(), ApiError):
            self.stats.faults += 1
            log.warning("controller %d: a write ended with %r", self.node_id, task.exception())

    def _signal_write_done(self) -> None:
        self._write_done.set()
        self._write_done = asyncio.Event()

    def _append_ahead(self, records: list[bytes]) -> InFlight:
        """QuorumController.appendRecords: the raft log takes the batch (prepareAppend), the
        records are applied at the offsets it gives them, and the batch goes out
        (schedulePreparedAppend); all in one step, before anything else runs."""
        base_offset = self._next_offset()
        try:
            appended = self.raft.prepare_append(records)
        except NotLeader:
            raise not_controller(self._known_leader()) from None
        write = self.pipeline.apply_ahead(base_offset, self._claimed_epoch, self.clock(), records)
        appended.add_done_callback(lambda done: self._append_settled(done, write))
        return write

    def _append_settled(self, appended: asyncio.Future, write: InFlight) -> None:
        """The raft log gave up on a batch in flight (leadership lost): everything in flight
        goes back, if the leader change has not done so already."""
        error = None if appended.cancelled() else appended.exception()
        if (appended.cancelled() or error is not None) and self.pipeline.is_in_flight(write):
            self._renounce(f"the append of offsets up to {write.last_offset} failed: {error!r}")

    def _renounce(self, why: str) -> None:
        """QuorumController.renounce: the writes in flight are answered NOT_CONTROLLER (no
        controller named, as Kafka's failAll) and the state goes back to the committed one."""
        self.moves.clear()
        failed = self.pipeline.roll_back(not_controller(None))
        self.poke()                                 # what waited on the state looks again (the registration)
        log.info("controller %d: %d writes in flight answered NOT_CONTROLLER and the state rolled back to "
                 "offset %d (%s)", self.node_id, failed, self.state.next_offset - 1, why)

    @staticmethod
    async def _answered(answer: asyncio.Future) -> None:
        """Wait for a write's answer (its caller may stop waiting; the write goes on) and raise
        the error it was answered with, if any."""
        error = await asyncio.shield(answer)
        if error is not None:
            raise ApiError(error.error, error.message)       # one exception per waiter

    async def write(self, generate, timeout_ms: int | None = None, reads_uncommitted=None):
        """``_write`` for the handlers of other modules (acl_apis.py, admin_apis.py, broker_apis.py,
        registration_apis.py)."""
        return await self._write(generate, timeout_ms, reads_uncommitted)

    def next_offset(self) -> int:
        """The offset the next record appended gets (a new broker epoch, as Kafka's)."""
        return self._next_offset()

    # --- request handlers -----------------------------------------------------------------------
    async def _create_topics(self, ctx, request):
        quota = self.mutation_quotas.quota_for(ctx)
        if not request.topics:
            # QuorumController.createTopics answers an empty request at once, active or not: one
            # whose every topic the authorizer refused gets those refusals, not NOT_CONTROLLER.
            return quota.answer(ctx, CreateTopicsResponse(topics=[]))
        try:
            results, _ = await self._write(
                lambda: create_topics(self.state, request, defaults=self.topic_defaults, rng=self.rng,
                                      controller_id=self.node_id, quota=quota.record),
                timeout_ms=max(request.timeout_ms, 0))
        except ApiError as exc:
            return quota.answer(ctx, _create_topics_error(request, exc.error, exc.message))
        return quota.answer(ctx, CreateTopicsResponse(topics=results))


def _create_topics_error(request, error: Errors, message: str | None):
    """CreateTopicsRequest.getErrorResponse: every topic gets the error."""
    return CreateTopicsFailed.of(request, error, message)
