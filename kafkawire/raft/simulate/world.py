"""The discrete-event simulation: N replicas, a lossy network, a virtual clock, faults.

Everything is driven by one seeded random generator and one event heap, so a seed replays
the same run. Messages cross the simulated network as real Kafka frames (request header and
body encoded at the version both ends support, decoded on arrival), so the simulation also
exercises the codec and version negotiation.

Faults: message loss, duplication and reordering (random delays); symmetric and one-way
partitions; crashes that lose everything not fsynced (optionally in the middle of applying a
Ready: after the quorum-state write, or after the log write but before its fsync); with
``async_flush`` the fsyncs finish in the background, in order, after a random delay (an event
of their own, delivered to the core as LogFlushed), so a crash also loses whatever was written
but whose flush had not finished, and a Ready that must wait for its flush keeps its messages
and notices (and those of the Readys after it) until then, as the node's driver does; restarts;
damaged Fetch and FetchSnapshot payloads; per-node clock drift (faults.py). Membership
changes and disk replacements are in membership.py.
"""
from __future__ import annotations

import heapq
import random
import uuid
from typing import Protocol
from collections import Counter, deque
from dataclasses import dataclass

from kafkawire.protocol import framing
from kafkawire.protocol.apis import api_table
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import UnsupportedVersionError
from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
from kafkawire.records import ControlRecordType
from kafkawire.records.kraft_control import encode_value
from kafkawire.storage.snapshot import SnapshotBuilder, SnapshotId
from kafkawire.raft.config import RaftConfig
from kafkawire.raft.io import (LogFlushed, Propose, Ready, RequestFailed, RequestReceived, ResponseReceived, Shutdown, SnapshotFrozen, Tick,
                     TruncateTo)
from kafkawire.raft.rpc import adapt_request_for_version
from kafkawire.raft.states import Leader, describe
from kafkawire.raft.types import Endpoints, OffsetAndEpoch, ReplicaKey
from kafkawire.raft.voters import VoterNode, VoterSet

from .faults import FaultInjection
from .invariants import Invariants, InvariantViolation
from .membership import MembershipChanges, kraft_version_upgrade_request
from .node import LISTENER, SimNode, address_of
from kafkawire.raft.io import OutboundResponse
from kafkawire.raft.reconfig import api_versions_response

# Where the scenarios and tests/kraft have always found them.
__all__ = ["LISTENER", "address_of", "kraft_version_upgrade_request", "SimSettings", "Simulation", "run_seed"]


class AdminAnswer(Protocol):
    """What the simulation reads of an admin response (AddRaftVoter, RemoveRaftVoter, UpdateFeatures)."""
    error_code: int


@dataclass
class SimSettings:
    """The knobs of a simulation: voters, observers and brokers, kraft.version, the network's
    loss, duplication and delay, the faults (crashes, partitions, damaged payloads) and how often
    they come, the proposals, snapshots and membership changes, and the raft timeouts.
    """
    voters: int = 3
    observers: int = 0
    kraft_version: int = 1            # 1: voters from a bootstrap snapshot (KIP-853); 0: static voters
    drop_rate: float = 0.02
    duplicate_rate: float = 0.01
    min_delay_ms: int = 1
    max_delay_ms: int = 40
    fault_every_ms: int = 3000        # mean time between faults
    crash_weight: int = 3
    partition_weight: int = 3
    one_way_weight: int = 2
    propose_every_ms: int = 40
    snapshot_every: int = 60          # records applied between state machine snapshots
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    request_timeout_ms: int = 1000
    election_backoff_max_ms: int = 1000
    pre_vote: bool = True
    clean_log_on_snapshot: bool = True
    old_vote_version_nodes: int = 0   # nodes that speak Vote only up to v1 (no PreVote)
    auto_join_observers: bool = False # observers run with controller.quorum.auto.join.enable
    admin_every_ms: int = 0           # mean time between membership changes (0: none)
    format_observers: bool = True     # False: observers start with empty disks (--no-initial-controllers)
    broker_observers: int = 0         # the last N observers are brokers: never voters, no voter set
                                      # until fetched, no fsync of what they fetch (Kafka's brokers)
    corrupt_rate: float = 0.0         # share of Fetch/FetchSnapshot responses whose payload is damaged
    clock_drift: float = 0.0          # each node's clock runs at a rate within this of 1, from its own origin
    async_flush: bool = False         # fsyncs finish in the background (RaftConfig.async_flush), each after
    max_flush_ms: int = 10            # 0 to max_flush_ms of virtual time, in order


# An event on the heap: (time, seq, kind, data). A plain tuple, since the heap compares events
# on every push and pop (a dataclass's generated __lt__ cost 2 % of a run); seq is unique, so
# the order is (time, seq) and kind and data are never compared.
_Event = tuple[int, int, str, tuple]


class Simulation(FaultInjection, MembershipChanges):
    """A seeded discrete-event simulation of a KRaft quorum (see the module docstring): ``run(n)``
    processes n events; every step is checked against the Invariants, which raise
    InvariantViolation.
    """
    def __init__(self, seed: int, settings: SimSettings | None = None, *, trace_size: int = 20000, core_factory=None,
                 invariants: Invariants | None = None, machine_factory=None):
        self.seed = seed
        self.settings = settings or SimSettings()
        self.rng = random.Random(seed)
        self.now = 0
        self._seq = 0
        self.heap: list[_Event] = []
        self.trace: deque[str] = deque(maxlen=trace_size)
        self.invariants = invariants or Invariants()
        self.blocked: set[tuple[int, int]] = set()     # (from, to) pairs that lose every message
        self.events_run = 0
        self.tokens = 0
        self.values: dict[object, bytes] = {}
        self.committed_tokens: set[object] = set()
        self.failed_tokens: set[object] = set()
        self.faults_enabled = True
        self.core_factory = core_factory
        self.machine_factory = machine_factory
        self._next_tick: dict[int, int] = {}
        # async_flush: per node, the Readys whose messages and notices wait for a flush, as
        # (flush id they need, 0 for none, Ready), and when its last flush asked for finishes.
        self._held: dict[int, deque[tuple[int, Ready]]] = {}
        self._flush_due: dict[int, int] = {}
        # Counters printed even when zero: what the kraft.version upgrade and the voter-set
        # truncations (KIP-853's uncommitted voter sets) did in the run.
        self.stats: Counter = Counter({"truncations_removing_voters_record": 0, "voters_records_truncated": 0})
        self.admin_answers: dict[int, AdminAnswer] = {}     # admin request number -> response body
        self.nodes: dict[int, SimNode] = {}
        self.recovery_ms: int | None = None          # set by run_seed once the quiet cluster commits again
        self._build_cluster()
        self._set_up_clocks()

    # --- set-up -----------------------------------------------------------------------------------
    def _build_cluster(self) -> None:
        s = self.settings
        voter_ids = list(range(1, s.voters + 1))
        observer_ids = list(range(s.voters + 1, s.voters + s.observers + 1))
        directory = {i: uuid.UUID(int=self.rng.getrandbits(128)) for i in voter_ids + observer_ids}
        endpoints = {i: Endpoints(((LISTENER, *address_of(i)),)) for i in voter_ids + observer_ids}
        static = VoterSet.static({i: endpoints[i] for i in voter_ids}) if s.kraft_version == 0 else None
        bootstrap = tuple(address_of(i) for i in voter_ids)
        brokers = set(observer_ids[len(observer_ids) - s.broker_observers:]) if s.broker_observers else set()
        for i in voter_ids + observer_ids:
            config = RaftConfig(
                # Every node has a directory id (meta.properties' directory.id), also at
                # kraft.version 0: the kraft.version upgrade writes them into the voter set.
                node_id=i, directory_id=directory[i], cluster_id="simcluster",
                listener=LISTENER, endpoints=endpoints[i], static_voters=static,
                bootstrap_servers=bootstrap if i in observer_ids else (),
                election_timeout_ms=s.election_timeout_ms, fetch_timeout_ms=s.fetch_timeout_ms,
                request_timeout_ms=s.request_timeout_ms, election_backoff_max_ms=s.election_backoff_max_ms,
                pre_vote=s.pre_vote, clean_log_on_snapshot=s.clean_log_on_snapshot,
                auto_join=s.auto_join_observers and i in observer_ids and i not in brokers,
                can_become_voter=i not in brokers, async_flush=s.async_flush)
            # Each node its own random stream: with the run's seed alone every node drew the
            # same election timeouts and, once in step, three candidates split every vote.
            node = SimNode(config, self.seed * 64 + i, self.machine_factory)
            if i in voter_ids[:s.old_vote_version_nodes]:
                node.max_versions[52] = 1
            self.nodes[i] = node
        if s.kraft_version >= 1:
            voters = VoterSet.of(VoterNode(ReplicaKey(i, directory[i]), endpoints[i], 0, 1) for i in voter_ids)
            for node in self.nodes.values():
                if (s.format_observers and node.node_id not in brokers) or node.node_id in voter_ids:
                    self.format_bootstrap_snapshot(node, voters, s.kraft_version)

    @staticmethod
    def format_bootstrap_snapshot(node: SimNode, voters: VoterSet, kraft_version: int) -> None:
        """What `kafka-storage format --initial-controllers` writes: snapshot (0, 0) with the
        kraft.version and the voter set."""
        control = [(ControlRecordType.KRAFT_VERSION, encode_value(KRaftVersionRecord(version=0, k_raft_version=kraft_version))),
                   (ControlRecordType.KRAFT_VOTERS, encode_value(voters.to_voters_record()))]
        data = SnapshotBuilder(SnapshotId(0, 0), last_contained_log_timestamp=-1, control_records=control,
                               time_ms=lambda: 0).finish()
        node.store.add_snapshot(OffsetAndEpoch(0, 0), data)

    # --- the event loop ---------------------------------------------------------------------------
    def _push(self, time: int, kind: str, *data) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (time, self._seq, kind, data))

    def log(self, line: str) -> None:
        self.trace.append(f"{self.now:>8} {line}")

    def start(self) -> None:
        for node in self.nodes.values():
            self._boot(node)
        self._push(self.settings.propose_every_ms, "propose")
        self._push(self._next_fault_delay(), "fault")
        if self.settings.admin_every_ms:
            self._push(self.settings.admin_every_ms, "admin")

    def run(self, events: int) -> None:
        """Process ``events`` events (or until nothing is left)."""
        for _ in range(events):
            if not self.heap:
                return
            self.step()

    def run_until(self, time_ms: int, predicate=None, max_events: int = 200_000) -> bool:
        for _ in range(max_events):
            if predicate is not None and predicate():
                return True
            if not self.heap or self.heap[0][0] > time_ms:
                self.now = max(self.now, time_ms)
                return predicate() if predicate is not None else True
            self.step()
        raise RuntimeError(f"run_until({time_ms}) did not finish in {max_events} events")

    def step(self) -> None:
        time, _, kind, data = heapq.heappop(self.heap)
        self.now = max(self.now, time)
        self.events_run += 1
        getattr(self, f"_on_{kind}")(*data)

    # --- node lifecycle ---------------------------------------------------------------------------
    def _boot(self, node: SimNode) -> None:
        ready = node.boot(self.local_time(node.node_id), self.core_factory)
        self.log(f"{node.node_id}: boot #{node.incarnation} as {describe(node.running.state)}")
        if node.loaded_at_boot is not None:
            self.invariants.on_snapshot_loaded(node, node.loaded_at_boot, at_boot=True)
        self._apply_ready(node, ready)

    def _crash(self, node: SimNode, restart_after_ms: int) -> None:
        lost = node.store.unflushed_count()
        self.stats["crashes"] += 1
        self.stats["unflushed_batches_lost"] += lost
        if node.core is not None:
            self.stats.update({k: v for k, v in node.core.counters.items() if v})
        if node.core is not None and node.core.quorum.is_observer() and not node.config.can_become_voter:
            # Brokers do not fsync what they fetch (as Kafka's): after a crash their log, and so
            # their high watermark, may restart lower. Controllers (voters or not) never go back.
            self.invariants.forget_high_watermark(node.core.quorum.local_key)
        node.crash()
        self._held.pop(node.node_id, None)
        self.log(f"{node.node_id}: crash (loses {lost} unflushed batches); restart in {restart_after_ms} ms")
        self._push(self.now + restart_after_ms, "restart", node.node_id)

    def _on_restart(self, node_id: int) -> None:
        node = self.nodes[node_id]
        if not node.alive:
            self._boot(node)

    # --- applying a Ready -------------------------------------------------------------------------
    def _apply_ready(self, node: SimNode, ready, crash_point: str | None = None) -> None:
        if ready.election is not None:
            self.invariants.on_election_persisted(node, ready.election)
        if crash_point is not None:
            self.stats[f"crash_after_{crash_point}"] += 1
            node.persist(ready, until=crash_point)
            self._crash(node, self.rng.randint(100, 3000))
            return
        node.persist(ready)
        self.invariants.check_appends(node, ready.log_ops)
        for t in ready.transitions:
            self.log(f"{node.node_id}: {t[0]} -> {t[1]}")
        self.invariants.on_state(node)
        if ready.leader_change is not None and ready.leader_change.leader_id == node.node_id \
                and isinstance(node.running.state, Leader):
            self.invariants.on_became_leader(node)
        self.invariants.check_high_watermark_within_log(node)
        if ready.log_ops:
            self.invariants.check_log_start(node)
            self.invariants.check_log_matching(list(self.nodes.values()))
            self.invariants.check_voter_changes(node)
        if ready.flush and node.config.async_flush:
            self._schedule_flush(node, ready.flush_id)
        held = self._held.setdefault(node.node_id, deque())
        if held or ready.hold_until_flushed and node.config.async_flush:
            held.append((ready.flush_id if ready.hold_until_flushed else 0, ready))
            self._schedule_tick(node, ready.wake_at_ms)
            return
        self._apply_effects(node, ready)

    def _apply_effects(self, node: SimNode, ready, *, released: bool = False) -> None:
        """Steps 3-4 of a Ready whose writes are durable: messages, then the notices. A Ready
        ``released`` after its flush had its wake-up scheduled when it was persisted."""
        for request in ready.send:
            self._send_request(node, request)
        for response in ready.respond:
            self._send_response(node, response)
        if ready.load_snapshot is not None:
            node.machine.load_snapshot(node.store.snapshots[ready.load_snapshot], ready.load_snapshot)
            self.log(f"{node.node_id}: loaded snapshot {ready.load_snapshot}")
            self.invariants.on_snapshot_loaded(node, ready.load_snapshot)
        if ready.committed_through is not None:
            self.invariants.on_high_watermark(node, ready.committed_through)
            if isinstance(node.running.state, Leader):
                self.invariants.check_majority_reached(node, ready.committed_through, self.nodes)
            position = node.machine.applied_offset
            applied = node.machine.apply_committed(node.store, ready.committed_through)
            if ready.committed_through > position:
                self.invariants.on_committed_stream(node, position, ready.committed_through, node.machine.handed)
            self.invariants.on_applied(node, applied)
        for token, _ in ready.appends_failed:
            self.failed_tokens.add(token)
        for token, offset in ready.appends_committed:
            self.committed_tokens.add(token)
            self.invariants.on_acked(node, token, offset, self.values[token])
        if node.alive and node.core is not None:
            snapshot_id = node.maybe_snapshot(self.now, self.settings.snapshot_every)
            if snapshot_id is not None:
                self.log(f"{node.node_id}: snapshot {snapshot_id}")
                self._step(node, SnapshotFrozen(self.now, snapshot_id))
                return
        if not released:
            self._schedule_tick(node, ready.wake_at_ms)

    def _schedule_flush(self, node: SimNode, flush_id: int) -> None:
        """The background fsync of this Ready's writes finishes later, after the earlier ones."""
        due = max(self.now + self.rng.randint(0, self.settings.max_flush_ms), self._flush_due.get(node.node_id, 0))
        self._flush_due[node.node_id] = due
        self._push(due, "flushed", node.node_id, node.incarnation, flush_id)

    def _on_flushed(self, node_id: int, incarnation: int, flush_id: int) -> None:
        """A flush is done: its state is durable, the Readys that waited for it go on, in order,
        and the core learns of it."""
        node = self.nodes[node_id]
        if not node.alive or node.incarnation != incarnation:
            return
        node.store.complete_flushes(flush_id)
        self.stats["flushes_completed"] += 1
        held = self._held.get(node_id, deque())
        while held and held[0][0] <= flush_id and node.alive and node.incarnation == incarnation:
            self._apply_effects(node, held.popleft()[1], released=True)
        self._step(node, LogFlushed(self.now, flush_id))

    def _step(self, node: SimNode, event) -> None:
        if not node.alive:
            return
        core = node.running
        voter_records_before = tuple(core.control.voters.offsets)
        ready = core.step(self._on_local_clock(node.node_id, event))
        self._count_reverted_voter_changes(node, ready, voter_records_before)
        crash_point = None
        if self.faults_enabled and (ready.log_ops or ready.election) and self.rng.random() < 0.002:
            crash_point = self.rng.choice(["election", "ops"])
        self._apply_ready(node, ready, crash_point)

    def _count_reverted_voter_changes(self, node: SimNode, ready, offsets_before: tuple[int, ...]) -> None:
        """Truncations that removed a VotersRecord (KIP-853 applies voter sets uncommitted, so
        the node must fall back to the set in force before it), counted from the node's control
        state before the step; the invariants check the state after it."""
        truncations = [op.offset for op in ready.log_ops if isinstance(op, TruncateTo)]
        if not truncations:
            return
        cut = min(truncations)
        removed = [o for o in offsets_before if o >= cut]
        if not removed:
            return
        self.stats["truncations_removing_voters_record"] += 1
        self.stats["voters_records_truncated"] += len(removed)
        self.log(f"{node.node_id}: truncation to {cut} removed the VotersRecord at {removed}")
        self.invariants.on_voters_records_truncated(node, cut, removed)

    def _schedule_tick(self, node: SimNode, wake_at_local: int) -> None:
        wake_at = max(self._to_simulated(node.node_id, wake_at_local), self.now)
        key = node.node_id
        if self._next_tick.get(key, -1) == wake_at:
            return
        self._next_tick[key] = wake_at
        self._push(wake_at, "tick", node.node_id, node.incarnation, wake_at)

    def _on_tick(self, node_id: int, incarnation: int, wake_at: int) -> None:
        node = self.nodes[node_id]
        if not node.alive or node.incarnation != incarnation or self._next_tick.get(node_id) != wake_at:
            return
        self._step(node, Tick(self.now))

    # --- the network --------------------------------------------------------------------------------
    def _resolve(self, request) -> int | None:
        if request.address is not None:
            for node_id in self.nodes:
                if address_of(node_id) == tuple(request.address):
                    return node_id
            return None
        return request.destination if request.destination in self.nodes else None

    def _version_for(self, sender: SimNode, receiver: SimNode, api_key: int) -> int:
        api = api_table()[api_key]
        return min(api.max_version, sender.max_versions.get(api_key, api.max_version),
                   receiver.max_versions.get(api_key, api.max_version))

    def _delay(self) -> int:
        return self.rng.randint(self.settings.min_delay_ms, self.settings.max_delay_ms)

    def _lost(self, src: int, dst: int) -> bool:
        lost = (src, dst) in self.blocked or (self.faults_enabled and self.rng.random() < self.settings.drop_rate)
        if lost:
            self.stats["messages_lost"] += 1
        return lost

    def _send_request(self, node: SimNode, request) -> None:
        target = self._resolve(request)
        if target is None:
            self._push(self.now + 1, "failed", node.node_id, node.incarnation, request.correlation_id,
                       request.destination, int(Errors.BROKER_NOT_AVAILABLE))
            return
        receiver = self.nodes[target]
        api_key = request.body.API_KEY
        version = self._version_for(node, receiver, api_key)
        body = adapt_request_for_version(request.body, version)
        try:
            frame = framing.encode_request(body, version, request.correlation_id, client_id=f"raft-{node.node_id}")
        except UnsupportedVersionError:
            self._push(self.now + 1, "failed", node.node_id, node.incarnation, request.correlation_id,
                       request.destination, int(Errors.UNSUPPORTED_VERSION))
            return
        if not receiver.alive and self.rng.random() < 0.5:
            # connection refused: the sender's network client reports it quickly
            self._push(self.now + self._delay(), "failed", node.node_id, node.incarnation, request.correlation_id,
                       request.destination, int(Errors.BROKER_NOT_AVAILABLE))
            return
        if self._lost(node.node_id, target):
            return
        copies = 2 if self.faults_enabled and self.rng.random() < self.settings.duplicate_rate else 1
        self.stats["messages_duplicated"] += copies - 1
        self.stats["requests"] += 1
        for _ in range(copies):
            self._push(self.now + self._delay(), "request", node.node_id, node.incarnation, request.destination,
                       target, frame)

    def _on_request(self, src: int, src_incarnation: int, dest_as_named: int, target: int, frame: bytes) -> None:
        receiver = self.nodes[target]
        if not receiver.alive:
            return
        decoded = framing.decode_request(frame[4:])
        handle = (src, src_incarnation, dest_as_named, decoded.correlation_id, decoded.api_key)
        self.log(f"{src}->{target} {type(decoded.body).__name__} v{decoded.api_version} #{decoded.correlation_id}")
        if decoded.api_key == 18:
            # ApiVersions is the network layer's business, not the raft core's.
            body = api_versions_response(receiver.config.kraft_version_min, receiver.config.kraft_version_max)
            self._send_response(receiver, OutboundResponse(handle, decoded.api_version, body))
            return
        self._step(receiver, RequestReceived(self.now, handle, decoded.api_version, decoded.body, f"node{src}"))

    def _send_response(self, node: SimNode, response) -> None:
        if response.request_id[0] == "admin":
            error = Errors.for_code(response.body.error_code).name
            self.log(f"admin {response.request_id[1]}: {type(response.body).__name__} {error}")
            self.stats[f"admin_{type(response.body).__name__}_{error}"] += 1
            self.admin_answers[response.request_id[1]] = response.body
            return
        src, src_incarnation, dest_as_named, correlation_id, api_key = response.request_id
        frame = framing.encode_response(response.body, response.api_version, correlation_id)
        if self._lost(node.node_id, src):
            return
        frame = self._maybe_corrupt(frame, api_key, response.api_version)
        copies = 2 if self.faults_enabled and self.rng.random() < self.settings.duplicate_rate else 1
        for _ in range(copies):
            self._push(self.now + self._delay(), "response", node.node_id, src, src_incarnation, dest_as_named,
                       api_key, response.api_version, frame)

    def _on_response(self, responder: int, src: int, src_incarnation: int, dest_as_named: int, api_key: int,
                     version: int, frame: bytes) -> None:
        node = self.nodes[src]
        if not node.alive or node.incarnation != src_incarnation:
            return
        correlation_id, body = framing.decode_response(frame[4:], api_key, version)
        self.log(f"{responder}->{src} {type(body).__name__} #{correlation_id}")
        self._step(node, ResponseReceived(self.now, correlation_id, dest_as_named, body))

    def _on_failed(self, node_id: int, incarnation: int, correlation_id: int, destination: int, error: int) -> None:
        node = self.nodes[node_id]
        if node.alive and node.incarnation == incarnation:
            self._step(node, RequestFailed(self.now, correlation_id, destination, error))

    # --- clients ----------------------------------------------------------------------------------------
    def leaders(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.alive and isinstance(n.running.state, Leader)]

    def propose(self) -> object | None:
        leaders = self.leaders()
        if not leaders:
            return None
        # Clients may reach a stale leader cut off in a minority: its appends never commit and
        # must be truncated away later, which is the case the log-matching rules are for.
        leader = self.rng.choice(leaders)
        self.tokens += 1
        token = ("t", self.tokens)
        self.values[token] = f"value-{self.seed}-{self.tokens}".encode()
        self._step(leader, Propose(self.now, token, (self.values[token],)))
        return token

    def _on_propose(self) -> None:
        self.propose()
        self._push(self.now + self.settings.propose_every_ms, "propose")

    def quiesce(self) -> None:
        """Stop injecting faults: heal the network, restart every node."""
        self.faults_enabled = False
        self.blocked.clear()
        for node in self.nodes.values():
            if not node.alive:
                self._boot(node)
        self.log("quiesce: network healed, all nodes up, no more faults")

    # --- scenario helpers ---------------------------------------------------------------------------------
    def shutdown(self, node_id: int, timeout_ms: int = 5000) -> None:
        self._step(self.nodes[node_id], Shutdown(self.now, timeout_ms))

    def check_all(self) -> None:
        self.invariants.check_log_matching(list(self.nodes.values()))
        self.invariants.check_acked(self.values)

    def final_stats(self) -> Counter:
        """What happened in the run: faults injected and protocol paths taken."""
        out = Counter(self.stats)
        for node in self.nodes.values():
            if node.alive and node.core is not None:
                out.update({k: v for k, v in node.core.counters.items() if v})
        out["virtual_ms"] = self.now
        out["events"] = self.events_run
        out["epochs_with_leader"] = len(self.invariants.leaders)
        out["acknowledged_appends"] = len(self.committed_tokens)
        out["kraft_version_upgrades"] += 0
        if self.settings.kraft_version == 0 and any(
                n.alive and n.core is not None and self._committed_kraft_version(n) >= 1 for n in self.nodes.values()):
            out["kraft_version_upgrades"] += 1   # the run began at kraft.version 0 and committed 1
        return out

    def describe(self) -> str:
        lines = []
        for node in self.nodes.values():
            if node.alive:
                core = node.running
                lines.append(f"  node {node.node_id}: {describe(core.state)} log=[{core.log.start_offset}, "
                             f"{core.log.end_offset}) hw={core.high_watermark()} applied={node.machine.applied_offset}")
            else:
                lines.append(f"  node {node.node_id}: down")
        return "\n".join(lines)


def run_seed(seed: int, events: int, settings: SimSettings | None = None, *, liveness_ms: int = 20_000,
             core_factory=None, keep: dict | None = None, invariants: Invariants | None = None,
             machine_factory=None) -> Simulation:
    """One simulation: ``events`` events with faults, then a quiet period in which a leader
    must emerge and a new append must commit within ``liveness_ms`` of virtual time."""
    sim = Simulation(seed, settings, core_factory=core_factory, invariants=invariants, machine_factory=machine_factory)
    if keep is not None:
        keep["sim"] = sim
    sim.start()
    sim.run(events)
    sim.quiesce()
    deadline = sim.now + liveness_ms
    token_holder = {}

    def committed():
        if "token" not in token_holder:
            token = sim.propose()
            if token is None:
                return False
            token_holder["token"] = token
        token = token_holder["token"]
        if token in sim.committed_tokens:
            return True
        # A proposal to a leader that then lost its epoch never commits; propose again.
        if token in sim.failed_tokens or not sim.leaders():
            token_holder.pop("token")
        return False
    quiet_since = sim.now
    if not sim.run_until(deadline, committed):
        raise InvariantViolation("liveness", f"no append committed within {liveness_ms} ms of a quiet network "
                                             f"with every node up\n{sim.describe()}")
    sim.recovery_ms = sim.now - quiet_since      # how long the quiet cluster took to commit again
    sim.check_all()
    return sim
