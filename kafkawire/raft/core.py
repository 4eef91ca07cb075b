"""RaftCore: KRaft (KIP-595, KIP-853, KIP-996) as a deterministic state machine.

``RaftCore.step(input) -> Ready`` is the whole interface (see io.py for the contract). One
input is handled at a time: requests and responses go to one handler each, then the current
state is polled (polling.py: timers and the requests it must send), then the writes,
messages and notices of the step are collected into a frozen Ready.

This module keeps the step loop and the changes of state: which transitions are legal lives
in quorum_state.py, when to take them lives here. The handlers are split by idea: votes and
epoch announcements (voting.py), the follower's fetch (fetching.py), the leader's appends
(appends.py) and polling (polling.py) are parts of this class (mixins, see parts.py); the
leader's parked fetches (fetching.py), snapshot fetching (snapshot_fetch.py) and membership
changes (reconfig.py) are objects that see the core only through its Effects (effects.py, where
its adapter CoreEffects lives too).
"""
from __future__ import annotations

import random
from typing import Any, Never, NoReturn

from kafkawire.messages import (begin_quorum_epoch_request as bqe_req, begin_quorum_epoch_response as bqe_resp,
                                describe_quorum_request as dq_req, end_quorum_epoch_request as eqe_req,
                                end_quorum_epoch_response as eqe_resp, fetch_request as f_req,
                                fetch_response as f_resp, fetch_snapshot_request as fs_req,
                                fetch_snapshot_response as fs_resp, vote_request as v_req, vote_response as v_resp)
from kafkawire.protocol.error_codes import Errors

from . import rpc
from .appends import LocalAppends
from .config import RaftConfig
from .control import ControlState
from .effects import CoreEffects, Outbox, RaftInvariantError
from .election import PreVoteYield
from .fetching import FollowerFetching, ParkedFetches
from .io import (CleanLog, Input, LogFlushed, OutboundRequest, OutboundResponse, Propose, RaftStatus, Ready, ReplicaProgress,
                 RequestFailed, RequestReceived, Resign, ResponseReceived, Shutdown, SnapshotFrozen, Tick)
from .leader import LeaderBookkeeping
from .log import LogStore, RaftLog
from .polling import Polling
from .quorum_state import QuorumState
from .reconfig import Reconfig
from .requests import RequestManager
from .snapshot_fetch import SnapshotFetching
from .snapshots import SnapshotHandling
from .states import Candidate, Follower, Leader, Prospective, Resigned, Unattached, describe, voted_key_of
from .bounds import can_start_election
from .types import ElectionState, Endpoints, LeaderAndEpoch, OffsetAndEpoch, ReplicaKey
from .voting import VoteHandling

NONE = int(Errors.NONE)

__all__ = ["RaftCore", "RaftInvariantError"]


def _unknown_input(event: Never) -> NoReturn:
    """The type checker proves every input type is handled; this names the one that is not."""
    raise TypeError(f"unknown input {event!r}")


class RaftCore(VoteHandling, FollowerFetching, LocalAppends, SnapshotHandling, Polling):
    """One KRaft replica as a deterministic state machine: ``step(input)`` takes a request, a
    response, a tick or a local append and returns a Ready (what to write and fsync, the messages
    to send, the notices for the state machine). No I/O, no clock of its own; a seed makes it
    replayable.
    """
    def __init__(self, config: RaftConfig, store: LogStore, election: ElectionState | None, *,
                 now_ms: int = 0, seed: int = 0):
        self.config = config
        self.rng = random.Random(seed)
        self.now_ms = now_ms
        self.log = RaftLog(store)
        self.control = ControlState(config.static_voters)
        self._load_control_state()
        self.quorum = QuorumState(config.local_key, config.endpoints, self.control,
                                  config.election_timeout_ms, config.fetch_timeout_ms, self.rng)
        bootstrap = {-(i + 2): address for i, address in enumerate(config.bootstrap_servers)}
        self.requests = RequestManager(config.request_timeout_ms, config.retry_backoff_ms, self.rng, bootstrap)
        self.accumulator = []
        self.linger_deadline_ms = None
        self.shutdown_deadline_ms = None
        self.shutdown_done = False
        self._out = Outbox()
        self._reported_leader: LeaderAndEpoch | None = None
        self._reported_hw: int | None = None
        self._pending_load_snapshot: OffsetAndEpoch | None = None
        self.pre_vote_yield: PreVoteYield | None = None     # see voting.py, _note_pre_vote_granted
        self.counters = {"fetch_records": 0, "append_records": 0, "elections": 0, "unexpected_errors": 0,
                         "truncations": 0, "snapshot_installs": 0, "prevote_unsupported": 0, "resignations": 0,
                         "check_quorum_resignations": 0, "leaderships": 0, "votes_granted": 0, "votes_rejected": 0,
                         "pre_vote_yields": 0}
        self.quorum.initialize(election, self.log.last_fetched_epoch, now_ms)
        self.effects = CoreEffects(self)
        self.parked = ParkedFetches(self.effects, config, self.quorum, self.log)
        self.snapshot_fetching = SnapshotFetching(self.effects, config, self.quorum, self.log,
                                                  self._install_fetched_snapshot, self._refuse_fetched_snapshot)
        self.reconfig = Reconfig(self.effects, config, self.quorum, self.control, self.requests)

    # ==========================================================================================
    # the public interface
    # ==========================================================================================
    def start(self) -> Ready:
        """The first Ready: persist the initial election, then act as the state demands."""
        self._after_transition()
        if self.quorum.voters().is_only_voter(self.quorum.local_key) and \
                isinstance(self.quorum.state, (Unattached, Follower, Resigned)):
            # Kafka's KafkaRaftClient.initialize: the only voter campaigns at once and wins alone,
            # instead of waiting an election timeout for votes nobody else can give.
            self._transition_to_prospective()
        self._poll()
        return self._collect()

    def step(self, event: Input) -> Ready:
        if event.now_ms < self.now_ms:
            raise ValueError(f"time went backwards: {event.now_ms} < {self.now_ms}")
        self.now_ms = event.now_ms
        if self.shutdown_done:
            if isinstance(event, Propose):
                self._out.appends_failed.append((event.token, int(Errors.NOT_LEADER_OR_FOLLOWER)))
            return self._collect()
        self.requests.expire(self.now_ms)
        match event:
            case RequestReceived():
                self._handle_request(event)
            case ResponseReceived():
                self._handle_response(event)
            case RequestFailed():
                self._handle_request_failed(event)
            case Propose():
                self._handle_propose(event)
            case SnapshotFrozen():
                self._handle_snapshot_frozen(event.snapshot_id)
            case Shutdown():
                if self.shutdown_deadline_ms is None:
                    self.shutdown_deadline_ms = self.now_ms + event.timeout_ms
            case CleanLog():
                self._clean_log()
            case LogFlushed():
                self._handle_log_flushed(event.flush_id)
            case Resign():
                if isinstance(self.quorum.state, Leader) and self.quorum.epoch == event.epoch:
                    self._resign(self._leader().book.preferred_successors())
            case Tick():
                pass
            case _:
                _unknown_input(event)
        self._poll()
        return self._collect()

    # --- queries for the driver and the tests ---------------------------------------------------
    @property
    def state(self):
        return self.quorum.state

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    def leader_and_epoch(self) -> LeaderAndEpoch:
        return self.quorum.leader_and_epoch()

    def high_watermark(self) -> int | None:
        return self.quorum.high_watermark()

    def voters(self):
        return self.control.last_voter_set()

    def kraft_version(self) -> int:
        return self.control.last_kraft_version()

    def is_leader(self) -> bool:
        """``status().is_leader`` without building a RaftStatus: asked several times per request."""
        return isinstance(self.quorum.state, Leader)

    def status(self) -> RaftStatus:
        """A frozen copy of what the driver and its metrics show (they never read the core)."""
        state = self.quorum.state
        voted = voted_key_of(state)
        voters = self.voters()
        leader = state if isinstance(state, Leader) else None
        return RaftStatus(
            role=type(state).__name__.lower(), epoch=self.quorum.epoch, leader=self.quorum.leader_and_epoch(),
            voted_id=None if voted is None else voted.id, high_watermark=self.quorum.high_watermark(),
            log_start_offset=self.log.start_offset, log_end_offset=self.log.end_offset,
            last_fetched_epoch=self.log.last_fetched_epoch,
            epoch_start_offset=None if leader is None else leader.epoch_start_offset,
            proposed_records=sum(len(records) for _, records in self.accumulator),
            voters=len(voters),
            unknown_voter_connections=sum(1 for v in voters if v.key.id != self.config.node_id
                                          and v.endpoints.address(self.config.listener) is None),
            observers=0 if leader is None else len(leader.book.observer_states),
            uncommitted_voter_change=leader is not None and self.reconfig.pending is not None,
            kraft_version=self.kraft_version(),
            counters=tuple(sorted(self.counters.items())))

    def replica_progress(self) -> tuple[list[ReplicaProgress], list[ReplicaProgress]]:
        """(voters, observers) as DescribeQuorum reports them; leader only."""
        leader = self._leader()
        voters, observers = [], []
        for state in leader.book.voter_states.values():
            if state.key.id == self.quorum.local_id:
                voters.append(ReplicaProgress(state.key, self.log.end_offset, self.now_ms, self.now_ms))
            else:
                voters.append(ReplicaProgress(state.key, -1 if state.end_offset is None else state.end_offset,
                                              state.last_fetch_ms, state.last_caught_up_ms))
        for state in leader.book.observer_states.values():
            observers.append(ReplicaProgress(state.key, -1 if state.end_offset is None else state.end_offset,
                                             state.last_fetch_ms, state.last_caught_up_ms))
        return voters, observers

    # ==========================================================================================
    # start-up
    # ==========================================================================================
    # ==========================================================================================
    # collecting a Ready
    # ==========================================================================================
    def _collect(self) -> Ready:
        out, self._out = self._out, Outbox()
        election = None
        if self.quorum.pending_election is not None:
            election, self.quorum.pending_election = self.quorum.pending_election, None
        log_ops, flush, hold = self.log.take_pending()
        flush_id = self.log.request_flush() if flush and self.config.async_flush else 0
        transitions = tuple(self.quorum.take_transitions())
        leader_change = None
        leader = self.quorum.leader_and_epoch()
        if leader != self._reported_leader:
            leader_change = self._reported_leader = leader
        committed_through = None
        hw = self.quorum.high_watermark()
        if hw is not None and (self._reported_hw is None or hw != self._reported_hw):
            self._check_high_watermark_monotonic(hw)
            committed_through = self._reported_hw = hw
        load_snapshot = None
        if self._pending_load_snapshot is not None:
            load_snapshot, self._pending_load_snapshot = self._pending_load_snapshot, None
        committed: tuple[tuple[object, int], ...] = ()
        if isinstance(self.quorum.state, Leader):
            committed = tuple(self._leader().book.take_committed_appends())
        return Ready(election=election, log_ops=tuple(log_ops), flush=flush, flush_id=flush_id,
                     hold_until_flushed=hold if self.config.async_flush else flush, send=tuple(out.send),
                     respond=tuple(out.respond), committed_through=committed_through, load_snapshot=load_snapshot,
                     leader_change=leader_change, appends_committed=committed,
                     appends_failed=tuple(out.appends_failed), appended=tuple(out.appended),
                     shutdown_complete=self.shutdown_done, wake_at_ms=self._next_wake_ms(),
                     warnings=tuple(out.warnings), transitions=transitions)

    def _check_high_watermark_monotonic(self, hw: int) -> None:
        if self._reported_hw is not None and hw < self._reported_hw:
            raise RaftInvariantError(f"high watermark went back from {self._reported_hw} to {hw}")

    def _warn(self, message: str) -> None:
        self._out.warnings.append(message)

    def _send(self, destination: int, address: tuple[str, int] | None, body: Any, api: str) -> int:
        cid = self.requests.next_correlation_id()
        self.requests.on_sent(destination, cid, api, self.now_ms)
        self._out.send.append(OutboundRequest(cid, destination, address, body))
        return cid

    def _respond(self, request: RequestReceived, body) -> None:
        self._out.respond.append(OutboundResponse(request.request_id, request.api_version, body))

    def _address_of(self, node_id: int) -> tuple[str, int] | None:
        return self.voters().endpoints(node_id).address(self.config.listener)

    # ==========================================================================================
    # transitions (when to take them; quorum_state.py says whether they are legal)
    # ==========================================================================================
    def _after_transition(self) -> None:
        """What every change of state does: forget in-flight requests, fail waiting work."""
        self.requests.reset_all()
        state = self.quorum.state
        if not isinstance(state, Leader):
            self.parked.complete_all()
            for token, _ in self.accumulator:
                self._out.appends_failed.append((token, int(Errors.NOT_LEADER_OR_FOLLOWER)))
            self.accumulator.clear()
            self.linger_deadline_ms = None
        self.reconfig.on_state_change()

    def _leader(self) -> Leader:
        state = self.quorum.state
        if not isinstance(state, Leader):
            raise RaftInvariantError(f"expected to be leader, but the state is {describe(state)}")
        return state

    def _fail_waiting_appends(self, state) -> None:
        if isinstance(state, Leader):
            for _, token in state.book.waiting_appends:
                self._out.appends_failed.append((token, int(Errors.NOT_LEADER_OR_FOLLOWER)))
            state.book.waiting_appends.clear()

    def _transition_to_unattached(self, epoch: int, leader_id: int | None = None) -> None:
        old = self.quorum.state
        self.quorum.transition_to_unattached(epoch, leader_id, self.now_ms)
        self._fail_waiting_appends(old)
        self._after_transition()

    def _transition_to_follower(self, epoch: int, leader_id: int, endpoints: Endpoints) -> None:
        old = self.quorum.state
        self.quorum.transition_to_follower(epoch, leader_id, endpoints, self.now_ms)
        self._fail_waiting_appends(old)
        self._after_transition()

    def _transition_to_prospective(self) -> None:
        if not can_start_election(self.quorum.epoch):
            self._postpone_impossible_election()
            return
        self.quorum.transition_to_prospective(self.now_ms)
        self.counters["elections"] += 1
        self._after_transition()
        self._maybe_transition_forward()

    def _transition_to_candidate(self) -> None:
        self.quorum.transition_to_candidate(self.now_ms)
        self._after_transition()
        self._maybe_transition_forward()

    def _postpone_impossible_election(self) -> None:
        """At epoch INT32_MAX there is no next epoch to campaign in: the replica keeps its
        state, says so, and looks again after an election timeout (it still follows a leader
        that announces itself in this epoch)."""
        state = self.quorum.state
        self._warn(f"epoch {state.epoch} is the last int32 epoch: no election can start; waiting for a leader")
        later = self.now_ms + max(1, self.quorum.random_election_timeout_ms())
        match state:
            case Follower():
                state.fetch_deadline_ms = later
            case Leader():
                raise RaftInvariantError("a leader does not campaign")
            case _:
                state.election_deadline_ms = later

    def _maybe_transition_forward(self) -> None:
        """A nominee whose election is already won moves on (a single voter wins alone)."""
        state = self.quorum.state
        if isinstance(state, Prospective) and state.pre_election.is_granted:
            if not self._yielding_to_peer():
                self._transition_to_candidate()
        elif isinstance(state, Candidate) and state.vote_election.is_granted:
            self._become_leader()

    def _become_leader(self) -> None:
        candidate = self.quorum.state
        if not isinstance(candidate, Candidate):
            raise RaftInvariantError(f"only a candidate becomes leader, not {describe(candidate)}")
        epoch_start = self.log.end_offset
        book = self._new_leader_bookkeeping(candidate.epoch, epoch_start, frozenset(candidate.vote_election.granted))
        self.quorum.transition_to_leader(epoch_start, book)
        self.counters["leaderships"] += 1
        book.start(self.voters(), self.now_ms)
        self._after_transition()
        # The high watermark moves only once a record of this epoch is committed, so the
        # epoch starts with a control batch at once rather than waiting for client data.
        self._append_start_of_epoch_records()

    def _new_leader_bookkeeping(self, epoch: int, epoch_start: int, granting: frozenset[int]) -> LeaderBookkeeping:
        return LeaderBookkeeping(self.quorum.local_key, epoch, epoch_start, self.config.fetch_timeout_ms, granting)

    def _resign(self, successors: tuple[ReplicaKey, ...]) -> None:
        self.counters["resignations"] += 1
        old = self.quorum.state
        self.quorum.transition_to_resigned(successors, self.now_ms)
        self._fail_waiting_appends(old)
        self._after_transition()

    def _handle_election_loss(self) -> None:
        """A lost pre-vote: back to following the known leader, or to Unattached; a lost vote:
        the candidate waits out its election timeout, then pre-votes again (Kafka's
        maybeHandleElectionLoss, testCandidateWaitsRestOfElectionTimeoutAfterElectionLoss)."""
        state = self.quorum.state
        if isinstance(state, Prospective):
            if state.leader_id is not None and state.leader_endpoints:
                self._transition_to_follower(state.epoch, state.leader_id, state.leader_endpoints)
            else:
                # Kafka keeps a leader known by id only (no endpoints) across the lost
                # pre-vote (testProspectiveLosesElectionHasLeaderButMissingEndpoint).
                self._transition_to_unattached(state.epoch, state.leader_id)

    def _maybe_transition(self, leader_id: int | None, epoch: int, endpoints: Endpoints) -> None:
        """React to the (leader, epoch) another replica told us about (Kafka's maybeTransition)."""
        if leader_id is not None and leader_id < 0:
            leader_id = None
        current = self.quorum.leader_id()
        if epoch == self.quorum.epoch and leader_id is not None and current is not None and leader_id != current:
            raise RaftInvariantError(f"epoch {epoch} has two leaders: {current} (known) and {leader_id} (reported)")
        if leader_id == self.quorum.local_id:
            if epoch > self.quorum.epoch:
                # We led that epoch in a previous life (restart): learn the epoch only.
                self._transition_to_unattached(epoch)
            return
        if not endpoints and leader_id is not None:
            endpoints = self.voters().endpoints(leader_id)
        if epoch > self.quorum.epoch:
            if leader_id is not None and endpoints:
                self._transition_to_follower(epoch, leader_id, endpoints)
            else:
                self._transition_to_unattached(epoch, leader_id)
        elif epoch == self.quorum.epoch and leader_id is not None and endpoints:
            # As Kafka: follow the leader of this epoch when it was unknown, or when we learn
            # more of its endpoints. The latter includes knowing its id without any endpoint
            # (an Unattached restarted with a leader missing from its voter set), which must
            # follow once an answer says where the leader is, not stay Unattached forever.
            if not isinstance(self.quorum.state, (Leader, Resigned)) and (
                    current is None or len(endpoints) > len(self.quorum.leader_endpoints())):
                self._transition_to_follower(epoch, leader_id, endpoints)

    def _maybe_handle_common_response(self, error: int, leader_id: int | None, epoch: int,
                                      endpoints: Endpoints) -> bool | None:
        """Epoch handling shared by every response (Kafka's maybeHandleCommonResponse):
        True/False if the response is fully handled (success or not), None to go on."""
        if leader_id is not None and leader_id < 0:
            leader_id = None
        if epoch < self.quorum.epoch or error == Errors.UNKNOWN_LEADER_EPOCH:
            return True   # we have moved on: the answer is about an older epoch
        if epoch > self.quorum.epoch or error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER):
            self._maybe_transition(leader_id, epoch, endpoints)
            return True
        if epoch == self.quorum.epoch and leader_id is not None and self._leader_to_discover(leader_id) \
                and leader_id != self.quorum.local_id and not isinstance(self.quorum.state, (Leader, Resigned)):
            if not endpoints:
                endpoints = self.voters().endpoints(leader_id)
            if endpoints:
                self._transition_to_follower(epoch, leader_id, endpoints)
                return None if error == NONE else True
        return None

    def _response_prologue(self, body: Any, partition: Any, nested_leader: bool = False) -> bool | None:
        """What every raft response's handler does first: a top-level error or a missing
        partition fails the request; then the epoch handling every response gets (Kafka's
        maybeHandleCommonResponse). True/False: handled (success or not); None: go on. The
        leader is named in the partition, or (Fetch, FetchSnapshot: ``nested_leader``) in
        its CurrentLeader."""
        if body.error_code != NONE:
            return self._handle_top_level_error(body.error_code)
        if partition is None:
            return False
        leader = partition.current_leader if nested_leader else partition
        leader_id = leader.leader_id if leader.leader_id >= 0 else None
        endpoints = rpc.endpoints_from_response(body.node_endpoints, leader_id, self.config.listener)
        return self._maybe_handle_common_response(partition.error_code, leader_id, leader.leader_epoch, endpoints)

    def _leader_to_discover(self, leader_id: int) -> bool:
        """Whether an answer naming ``leader_id`` in our epoch teaches us whom to follow: the
        leader is unknown (Kafka's rule), or, beyond Kafka, we are Unattached knowing its id
        but not its endpoints. Kafka's handler then expects a Follower and throws when the
        leader itself answers such a replica's bootstrap fetch; here it follows and takes
        the records in the same response (see docs/differences.md, Raft)."""
        known = self.quorum.leader_id()
        return known is None or (known == leader_id and isinstance(self.quorum.state, Unattached)
                                 and not self.quorum.leader_endpoints())

    # ==========================================================================================
    # requests
    # ==========================================================================================
    def _handle_request(self, request: RequestReceived) -> None:
        body = request.body
        handler = {
            v_req.VoteRequest: self._handle_vote_request,
            bqe_req.BeginQuorumEpochRequest: self._handle_begin_quorum_epoch_request,
            eqe_req.EndQuorumEpochRequest: self._handle_end_quorum_epoch_request,
            f_req.FetchRequest: self.parked.handle_request,
            fs_req.FetchSnapshotRequest: self.snapshot_fetching.handle_request,
            dq_req.DescribeQuorumRequest: self._handle_describe_quorum_request,
        }.get(type(body))
        if handler is None:
            handler = self.reconfig.request_handler(body)
        if handler is None:
            raise TypeError(f"the raft core does not serve {type(body).__name__}")
        handler(request)

    def _valid_cluster_id(self, cluster_id: str | None) -> bool:
        # Kafka does not enforce the cluster id when the request leaves it out.
        return cluster_id is None or self.config.cluster_id is None or cluster_id == self.config.cluster_id

    def _validate_leader_only_request(self, request_epoch: int) -> int:
        if request_epoch < self.quorum.epoch:
            return int(Errors.FENCED_LEADER_EPOCH)
        if request_epoch > self.quorum.epoch:
            return int(Errors.UNKNOWN_LEADER_EPOCH)
        if not isinstance(self.quorum.state, Leader):
            return int(Errors.NOT_LEADER_OR_FOLLOWER)
        if self.shutdown_deadline_ms is not None:
            return int(Errors.BROKER_NOT_AVAILABLE)
        return NONE

    def _leader_fields(self):
        return dict(epoch=self.quorum.epoch, leader_id=self.quorum.leader_id(),
                    endpoints=self.quorum.leader_endpoints(), listener=self.config.listener)

    def _handle_describe_quorum_request(self, request: RequestReceived) -> None:
        body = request.body
        partition = rpc.single_partition(body.topics)
        if partition is None:
            return self._respond(request, rpc.describe_quorum_response(int(Errors.INVALID_REQUEST)))
        if not isinstance(self.quorum.state, Leader):
            return self._respond(request, rpc.describe_quorum_response(
                NONE, error=int(Errors.NOT_LEADER_OR_FOLLOWER), error_message=Errors.NOT_LEADER_OR_FOLLOWER.message,
                leader_id=self.quorum.leader_id(), epoch=self.quorum.epoch, api_version=request.api_version))
        voters, observers = self.replica_progress()
        nodes = [(n.key.id, n.endpoints) for n in self.voters()]
        self._respond(request, rpc.describe_quorum_response(
            NONE, leader_id=self.quorum.local_id, epoch=self.quorum.epoch, high_watermark=self.parked.hw_or_minus_one(),
            voters=voters, observers=observers, nodes=nodes, api_version=request.api_version))

    # ==========================================================================================
    # responses and failures
    # ==========================================================================================
    def _handle_response(self, event: ResponseReceived) -> None:
        if not self.requests.is_expected(event.destination, event.correlation_id):
            return   # stale: a duplicate, or an answer to a request we stopped waiting for
        handler = {
            v_resp.VoteResponse: self._handle_vote_response,
            bqe_resp.BeginQuorumEpochResponse: self._handle_begin_quorum_epoch_response,
            eqe_resp.EndQuorumEpochResponse: self._handle_end_quorum_epoch_response,
            f_resp.FetchResponse: self._handle_fetch_response,
            fs_resp.FetchSnapshotResponse: self._handle_fetch_snapshot_response,
        }.get(type(event.body))
        if handler is None:
            handler = self.reconfig.response_handler(event.body)
        if handler is None:
            raise TypeError(f"unexpected response type {type(event.body).__name__}")
        # Kafka marks the request done before handling, so a transition's reset_all wins.
        success = handler(event)
        self.requests.on_response(event.destination, event.correlation_id, bool(success), self.now_ms)

    def _handle_request_failed(self, event: RequestFailed) -> None:
        if not self.requests.is_expected(event.destination, event.correlation_id):
            return
        api = self.requests.in_flight(event.destination)
        self.requests.on_response(event.destination, event.correlation_id, False, self.now_ms)
        state = self.quorum.state
        if api == "Vote" and event.error_code == Errors.UNSUPPORTED_VERSION and isinstance(state, Prospective):
            # A voter that does not know PreVote (Vote v2): skip the pre-vote (Kafka does the same).
            self.counters["prevote_unsupported"] += 1
            self._transition_to_candidate()
        else:
            self.reconfig.on_request_failed(event, api)

    def _handle_top_level_error(self, error: int) -> bool:
        if error == Errors.BROKER_NOT_AVAILABLE:
            return False
        return self._handle_unexpected_error(error)

    def _handle_unexpected_error(self, error: int) -> bool:
        self.counters["unexpected_errors"] += 1
        return False

    # ==========================================================================================
    # the high watermark
    # ==========================================================================================
    def _on_leader_high_watermark_update(self) -> None:
        self.parked.complete_ready(all_of_them=True)
        self.reconfig.on_high_watermark()
