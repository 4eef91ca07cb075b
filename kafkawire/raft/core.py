"""RaftCore: KRaft (KIP-595, KIP-853, KIP-996) as a deterministic state machine.

``RaftCore.step(input) -> Ready`` is the whole interface (see io.py for the contract). One
input is handled at a time: requests and responses go to one ``_handle_<api>`` each, then
the current state is polled (``_poll_<state>``: timers and the requests it must send), then
the writes, messages and notices of the step are collected into a Ready.

Which transitions are legal lives in quorum_state.py; when to take them lives here. Leader
bookkeeping is in leader.py, membership changes in reconfig.py; snapshot fetching is the
FetchSnapshot handlers below.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from kafkawire.messages import (begin_quorum_epoch_request as bqe_req, begin_quorum_epoch_response as bqe_resp,
                                describe_quorum_request as dq_req, end_quorum_epoch_request as eqe_req,
                                end_quorum_epoch_response as eqe_resp, fetch_request as f_req,
                                fetch_response as f_resp, fetch_snapshot_request as fs_req,
                                fetch_snapshot_response as fs_resp, vote_request as v_req, vote_response as v_resp)
from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
from kafkawire.messages.leader_change_message import LeaderChangeMessage, Voter as LeaderChangeVoter
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import ControlRecordType, RecordBatchBuilder, iter_batches
from kafkawire.records.control import encode_control_key
from kafkawire.records.kraft_control import encode_value

from . import rpc
from .config import RaftConfig
from .control import ControlState
from .io import (CleanLog, Input, OutboundRequest, OutboundResponse, Propose, Ready, ReplicaProgress, RequestFailed,
                 RequestReceived, Resign, ResponseReceived, Shutdown, SnapshotFrozen, Tick)
from .leader import LeaderBookkeeping
from .log import LogStore, RaftLog, check_fetched_batches, check_fetched_snapshot
from .quorum_state import QuorumState
from .requests import RequestManager
from .states import (NEVER, Candidate, Follower, Leader, Prospective, Resigned, Unattached, can_grant_vote,
                     describe)
from .types import ElectionState, Endpoints, LeaderAndEpoch, OffsetAndEpoch, ReplicaKey
from .bounds import can_start_election, epoch_jump_refusal

NONE = int(Errors.NONE)


class RaftInvariantError(RuntimeError):
    """The core found itself in a state the protocol forbids (Kafka throws IllegalStateException)."""


@dataclass(slots=True)
class ParkedFetch:
    """A long-poll Fetch waiting for new records, a high watermark change or its deadline."""
    request_id: object
    api_version: int
    replica: ReplicaKey
    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int
    deadline_ms: int
    high_watermark_at_park: int | None


@dataclass(slots=True)
class SnapshotFetch:
    snapshot_id: OffsetAndEpoch
    position: int = 0
    size: int | None = None
    data: bytearray = None

    def __post_init__(self):
        if self.data is None:
            self.data = bytearray()


class RaftCore:
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
        self.parked_fetches: list[ParkedFetch] = []
        self.accumulator: list[tuple[object, tuple[bytes, ...]]] = []
        self.linger_deadline_ms: int | None = None
        self.shutdown_deadline_ms: int | None = None
        self.shutdown_done = False
        self._out = Ready()
        self._reported_leader: LeaderAndEpoch | None = None
        self._reported_hw: int | None = None
        self._pending_load_snapshot: OffsetAndEpoch | None = None
        self.transition_log: list[tuple[str, str]] = []
        self.counters = {"fetch_records": 0, "append_records": 0, "elections": 0, "unexpected_errors": 0,
                         "truncations": 0, "snapshot_installs": 0, "prevote_unsupported": 0, "resignations": 0,
                         "check_quorum_resignations": 0, "leaderships": 0, "votes_granted": 0, "votes_rejected": 0}
        self.quorum.initialize(election, self.log.last_fetched_epoch, now_ms)
        from .reconfig import Reconfig
        self.reconfig = Reconfig(self)

    # ==========================================================================================
    # the public interface
    # ==========================================================================================
    def start(self) -> Ready:
        """The first Ready: persist the initial election, then act as the state demands."""
        self._after_transition()
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
        if isinstance(event, RequestReceived):
            self._handle_request(event)
        elif isinstance(event, ResponseReceived):
            self._handle_response(event)
        elif isinstance(event, RequestFailed):
            self._handle_request_failed(event)
        elif isinstance(event, Propose):
            self._handle_propose(event)
        elif isinstance(event, SnapshotFrozen):
            self._handle_snapshot_frozen(event.snapshot_id)
        elif isinstance(event, Shutdown):
            if self.shutdown_deadline_ms is None:
                self.shutdown_deadline_ms = self.now_ms + event.timeout_ms
        elif isinstance(event, CleanLog):
            self._clean_log()
        elif isinstance(event, Resign):
            if isinstance(self.quorum.state, Leader) and self.quorum.epoch == event.epoch:
                self._resign(self._leader().book.preferred_successors())
        elif not isinstance(event, Tick):
            raise TypeError(f"unknown input {event!r}")
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

    def snapshot_id_for(self, committed_offset: int) -> OffsetAndEpoch:
        """The id a state machine snapshot at ``committed_offset`` (records below it) gets."""
        hw = self.high_watermark()
        if hw is None or committed_offset > hw:
            raise ValueError(f"cannot snapshot at {committed_offset}: it is not committed (high watermark {hw})")
        if committed_offset <= self.log.start_offset:
            snapshot = self.log.latest_snapshot()
            if snapshot is None or committed_offset != snapshot.offset:
                raise ValueError(f"cannot snapshot at {committed_offset}: before the log start {self.log.start_offset}")
            return snapshot
        epoch = self.log.epochs.epoch_for_offset(committed_offset - 1)
        return OffsetAndEpoch(epoch, committed_offset)

    def snapshot_control_records(self, snapshot_id: OffsetAndEpoch) -> tuple[int, object | None]:
        """(kraft.version, VotersRecord or None) in force at the end of a snapshot: what a
        snapshot must carry after its header when kraft.version > 0 (KIP-853)."""
        version = self.control.kraft_version_at(snapshot_id.offset - 1)
        if version == 0:
            return 0, None
        return version, self.control.voter_set_at(snapshot_id.offset - 1).to_voters_record()

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
    def _load_control_state(self) -> None:
        """Voters and kraft.version from the latest snapshot, then from the log after it."""
        self.control.clear()
        snapshot = self.log.latest_snapshot()
        if snapshot is not None:
            self._apply_snapshot_control(snapshot, self.log.store.read_snapshot(
                snapshot, 0, self.log.store.snapshot_size(snapshot)))
        # The log before the snapshot's end is summarised by the snapshot's records.
        offset = max(self.log.start_offset, snapshot.offset if snapshot is not None else 0)
        while offset < self.log.end_offset:
            data = self.log.store.read(offset, self.config.fetch_max_bytes)
            if not data:
                break
            for batch in iter_batches(data):
                if batch.last_offset >= offset:
                    self.control.apply_batch(batch)
                offset = max(offset, batch.last_offset + 1)

    def _apply_snapshot_control(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """Control records in a snapshot take effect at the snapshot's last contained offset."""
        at = snapshot_id.offset - 1
        for batch in iter_batches(data):
            if not batch.is_control:
                continue
            for record in batch:
                if record.control_type in (ControlRecordType.KRAFT_VOTERS, ControlRecordType.KRAFT_VERSION):
                    self.control.apply_control_record(at, record.control_type, record.control_value)

    # ==========================================================================================
    # collecting a Ready
    # ==========================================================================================
    def _collect(self) -> Ready:
        out, self._out = self._out, Ready()
        if self.quorum.pending_election is not None:
            out.election, self.quorum.pending_election = self.quorum.pending_election, None
        out.log_ops, out.flush = self.log.take_pending()
        self.transition_log.extend(self.quorum.take_transitions())
        leader = self.quorum.leader_and_epoch()
        if leader != self._reported_leader:
            out.leader_change = self._reported_leader = leader
        hw = self.quorum.high_watermark()
        if hw is not None and (self._reported_hw is None or hw != self._reported_hw):
            self._check_high_watermark_monotonic(hw)
            out.committed_through = self._reported_hw = hw
        if self._pending_load_snapshot is not None:
            out.load_snapshot, self._pending_load_snapshot = self._pending_load_snapshot, None
        if isinstance(self.quorum.state, Leader):
            out.appends_committed.extend(self._leader().book.take_committed_appends())
        out.shutdown_complete = self.shutdown_done
        out.wake_at_ms = self._next_wake_ms()
        return out

    def _check_high_watermark_monotonic(self, hw: int) -> None:
        if self._reported_hw is not None and hw < self._reported_hw:
            raise RaftInvariantError(f"high watermark went back from {self._reported_hw} to {hw}")

    def _warn(self, message: str) -> None:
        self._out.warnings.append(message)

    def _is_known_voter(self, key: ReplicaKey) -> bool:
        """A voter of the latest voter set or of the committed one (a replica that is behind
        may not have the record that added a voter yet, or may have the removal uncommitted)."""
        if self.voters().is_voter(key):
            return True
        hw = self.quorum.high_watermark()
        return hw is not None and self.control.voter_set_at(hw - 1).is_voter(key)

    def _log_ends_before(self, last_epoch: int, last_offset: int) -> bool:
        """Whether a candidate's log ends beyond ours. Then it may hold the VotersRecord adding
        it that we have not fetched yet, and our not knowing it as a voter proves nothing: the
        vote goes on as in Kafka, which never asks. (Seeds 2002899 and 2002953: a lagging voter
        refused the only replica that could lead, and the quorum stayed leaderless.)"""
        return OffsetAndEpoch(last_epoch, last_offset) > self.log.end_offset_and_epoch()

    def _send(self, destination: int, address: tuple[str, int] | None, body, api: str) -> None:
        cid = self.requests.next_correlation_id()
        self.requests.on_sent(destination, cid, api, self.now_ms)
        self._out.send.append(OutboundRequest(cid, destination, address, body))

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
            for parked in self.parked_fetches:
                self._complete_parked_fetch(parked)
            self.parked_fetches.clear()
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
        if isinstance(state, Follower):
            state.fetch_deadline_ms = later
        else:
            state.election_deadline_ms = later

    def _maybe_transition_forward(self) -> None:
        """A nominee whose election is already won moves on (a single voter wins alone)."""
        state = self.quorum.state
        if isinstance(state, Prospective) and state.pre_election.is_granted:
            self._transition_to_candidate()
        elif isinstance(state, Candidate) and state.vote_election.is_granted:
            self._become_leader()

    def _become_leader(self) -> None:
        candidate = self.quorum.state
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

    def _leader_to_discover(self, leader_id: int) -> bool:
        """Whether an answer naming ``leader_id`` in our epoch teaches us whom to follow: the
        leader is unknown (Kafka's rule), or, beyond Kafka, we are Unattached knowing its id
        but not its endpoints. Kafka's handler then expects a Follower and throws when the
        leader itself answers such a replica's bootstrap fetch; here it follows and takes
        the records in the same response (see the README, raft)."""
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
            f_req.FetchRequest: self._handle_fetch_request,
            fs_req.FetchSnapshotRequest: self._handle_fetch_snapshot_request,
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

    def _validate_voter_only_request(self, remote_id: int, request_epoch: int) -> int:
        if request_epoch < self.quorum.epoch:
            return int(Errors.FENCED_LEADER_EPOCH)
        if remote_id < 0:
            return int(Errors.INVALID_REQUEST)
        refusal = epoch_jump_refusal(request_epoch, self.quorum.epoch)
        if refusal is not None:
            self._warn(f"refused a request from replica {remote_id}: {refusal}")
            return int(Errors.INVALID_REQUEST)
        # No shutdown check, as Kafka's validateVoterOnlyRequest: a voter shutting down still
        # votes (testGrantVotesWhenShuttingDown); its vote may be the one a successor needs.
        return NONE

    def _validate_leader_claim(self, api: str, leader_id: int, epoch: int) -> int:
        """Deliberately stricter than Kafka (README): a BeginQuorumEpoch or EndQuorumEpoch
        must name a leader we can believe, else INVALID_REQUEST and no state changes. The
        leader we already follow in this epoch is believed even when a committed removal took
        it out of the voter set (a removed leader resigns with EndQuorumEpoch)."""
        known = self.quorum.leader_id()
        if epoch == self.quorum.epoch and known == leader_id:
            return NONE
        voted = self.quorum.voted_key()
        if epoch == self.quorum.epoch and known is not None:
            reason = f"epoch {epoch} already has leader {known}"
        elif epoch == self.quorum.epoch and voted is not None and voted.id == leader_id:
            # The candidate we voted for in this epoch won. A voter that lags may not know it
            # as a voter yet (its VotersRecord unfetched) and still granted the vote, its log
            # being ahead; refusing its BeginQuorumEpoch left such a voter leaderless.
            return NONE
        elif leader_id == self.quorum.local_id:
            reason = f"it names us leader of epoch {epoch}, which we did not lead"
        elif not self._is_known_voter(ReplicaKey(leader_id)):
            reason = f"leader {leader_id} is not a voter"
        else:
            return NONE
        self._warn(f"refused {api} for leader {leader_id} at epoch {epoch}: {reason}")
        return int(Errors.INVALID_REQUEST)

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

    def _voter_key_matches(self, voter_id: int, directory_id) -> bool:
        """A v1+ request names its intended receiver; a mismatch means it is for someone else."""
        if voter_id < 0:
            return True   # v0 requests do not say
        return ReplicaKey.of(voter_id, directory_id).matches(self.quorum.local_key) and voter_id == self.quorum.local_id

    def _leader_fields(self):
        return dict(epoch=self.quorum.epoch, leader_id=self.quorum.leader_id(),
                    endpoints=self.quorum.leader_endpoints(), listener=self.config.listener)

    # --- Vote -------------------------------------------------------------------------------------
    def _handle_vote_request(self, request: RequestReceived) -> None:
        body = request.body

        def reply(top=NONE, error=NONE, granted=False):
            self._respond(request, rpc.vote_response(top, error, granted=granted, api_version=request.api_version,
                                                     **self._leader_fields()))
        if not self._valid_cluster_id(body.cluster_id):
            return reply(top=int(Errors.INCONSISTENT_CLUSTER_ID))
        partition = rpc.single_partition(body.topics)
        if partition is None:
            return reply(top=int(Errors.INVALID_REQUEST))
        pre_vote = bool(partition.pre_vote)
        last_epoch, last_offset = partition.last_offset_epoch, partition.last_offset
        # A candidate bumps its epoch before asking, so its log cannot hold that epoch yet; a
        # prospective asks at its current epoch, which its log may hold.
        illegal_epoch = last_epoch > partition.replica_epoch if pre_vote else last_epoch >= partition.replica_epoch
        if last_offset < 0 or last_epoch < 0 or illegal_epoch:
            return reply(error=int(Errors.INVALID_REQUEST))
        error = self._validate_voter_only_request(partition.replica_id, partition.replica_epoch)
        if error != NONE:
            return reply(error=error)
        candidate = ReplicaKey.of(partition.replica_id, partition.replica_directory_id)
        # Deliberately unlike Kafka (README): a candidate no voter set we know names, or one
        # claiming our own id, neither moves our epoch nor gets our vote.
        if candidate.id == self.quorum.local_id:
            self._warn(f"refused a Vote at epoch {partition.replica_epoch} claiming our own id {candidate.id}")
            return reply(error=int(Errors.INVALID_REQUEST))
        if not self._is_known_voter(candidate) and not self._log_ends_before(last_epoch, last_offset):
            self._warn(f"rejected a Vote at epoch {partition.replica_epoch} from {candidate}, not a voter")
            self.counters["votes_rejected"] += 1
            return reply(granted=False)
        # As Kafka's handleVoteRequest, a pre-vote of a higher epoch moves us to that epoch
        # too: the epoch is one some replica reached (a prospective does not bump it), and
        # the refusal of a follower whose leader is alive still protects that leader.
        if partition.replica_epoch > self.quorum.epoch:
            self._transition_to_unattached(partition.replica_epoch)
        if not self._voter_key_matches(body.voter_id, partition.voter_directory_id):
            return reply(error=int(Errors.INVALID_VOTER_KEY))
        up_to_date = OffsetAndEpoch(last_epoch, last_offset) >= self.log.end_offset_and_epoch()
        granted = self._can_grant_vote(candidate, up_to_date, pre_vote)
        self.counters["votes_granted" if granted else "votes_rejected"] += 1
        if granted and not pre_vote:
            self._record_vote(partition.replica_epoch, candidate)
        reply(granted=granted)

    def _can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        return can_grant_vote(self.quorum.state, candidate, log_up_to_date, pre_vote, self.now_ms)

    def _record_vote(self, epoch: int, candidate: ReplicaKey) -> None:
        """Persisted (Ready.election) before the response leaves: one vote per epoch."""
        if self.quorum.voted_key() is None:
            self.quorum.add_voted_state(epoch, candidate, self.now_ms)

    def _handle_vote_response(self, event: ResponseReceived) -> bool:
        body = event.body
        if body.error_code != NONE:
            return self._handle_top_level_error(body.error_code)
        partition = rpc.single_partition(body.topics)
        if partition is None:
            return False
        leader_id = partition.leader_id if partition.leader_id >= 0 else None
        endpoints = rpc.endpoints_from_response(body.node_endpoints, leader_id, self.config.listener)
        handled = self._maybe_handle_common_response(partition.error_code, leader_id, partition.leader_epoch, endpoints)
        if handled is not None:
            # An answer from a voter still in an older epoch (a pre-vote's usual case) counts
            # neither way; asking it again at once would spin, so it waits out the backoff.
            return handled and partition.leader_epoch >= self.quorum.epoch
        if partition.error_code != NONE:
            return self._handle_unexpected_error(partition.error_code)
        state = self.quorum.state
        if isinstance(state, (Prospective, Candidate)):
            strict = isinstance(state, Candidate)
            election = state.vote_election if strict else state.pre_election
            if event.destination not in election.voters:
                return True
            if partition.vote_granted:
                election.record_granted(event.destination, strict=strict)
                self._maybe_transition_forward()
            else:
                election.record_rejected(event.destination, strict=strict)
                if election.is_rejected:
                    self._handle_election_loss()
        return True

    # --- BeginQuorumEpoch ---------------------------------------------------------------------------
    def _handle_begin_quorum_epoch_request(self, request: RequestReceived) -> None:
        body = request.body

        def reply(top=NONE, error=NONE):
            self._respond(request, rpc.begin_quorum_epoch_response(top, error, api_version=request.api_version,
                                                                   **self._leader_fields()))
        if not self._valid_cluster_id(body.cluster_id):
            return reply(top=int(Errors.INCONSISTENT_CLUSTER_ID))
        partition = rpc.single_partition(body.topics)
        if partition is None:
            return reply(top=int(Errors.INVALID_REQUEST))
        error = self._validate_voter_only_request(partition.leader_id, partition.leader_epoch)
        if error == NONE:
            error = self._validate_leader_claim("BeginQuorumEpoch", partition.leader_id, partition.leader_epoch)
        if error != NONE:
            return reply(error=error)
        endpoints = rpc.endpoints_from_leader_field(body.leader_endpoints)
        self._maybe_transition(partition.leader_id, partition.leader_epoch, endpoints)
        # As Kafka's handleBeginQuorumEpochRequest: the leader is learnt before the voter key
        # is checked, so a request meant for another key still names the leader we now follow.
        if not self._voter_key_matches(body.voter_id, partition.voter_directory_id):
            return reply(error=int(Errors.INVALID_VOTER_KEY))
        reply()

    def _handle_begin_quorum_epoch_response(self, event: ResponseReceived) -> bool:
        body = event.body
        if body.error_code != NONE:
            return self._handle_top_level_error(body.error_code)
        partition = rpc.single_partition(body.topics)
        if partition is None:
            return False
        leader_id = partition.leader_id if partition.leader_id >= 0 else None
        endpoints = rpc.endpoints_from_response(body.node_endpoints, leader_id, self.config.listener)
        handled = self._maybe_handle_common_response(partition.error_code, leader_id, partition.leader_epoch, endpoints)
        if handled is not None:
            return handled
        if partition.error_code != NONE:
            return self._handle_unexpected_error(partition.error_code)
        state = self.quorum.state
        if isinstance(state, Leader):
            replica = state.book.voter_states.get(event.destination)
            if replica is not None:
                replica.has_endorsed = True
        return True

    # --- EndQuorumEpoch -------------------------------------------------------------------------------
    def _handle_end_quorum_epoch_request(self, request: RequestReceived) -> None:
        body = request.body

        def reply(top=NONE, error=NONE):
            self._respond(request, rpc.end_quorum_epoch_response(top, error, api_version=request.api_version,
                                                                 **self._leader_fields()))
        if not self._valid_cluster_id(body.cluster_id):
            return reply(top=int(Errors.INCONSISTENT_CLUSTER_ID))
        partition = rpc.single_partition(body.topics)
        if partition is None:
            return reply(top=int(Errors.INVALID_REQUEST))
        error = self._validate_voter_only_request(partition.leader_id, partition.leader_epoch)
        if error == NONE:
            error = self._validate_leader_claim("EndQuorumEpoch", partition.leader_id, partition.leader_epoch)
        if error != NONE:
            return reply(error=error)
        endpoints = rpc.endpoints_from_leader_field(body.leader_endpoints)
        self._maybe_transition(partition.leader_id, partition.leader_epoch, endpoints)
        state = self.quorum.state
        if isinstance(state, Follower) and state.leader_id == partition.leader_id:
            if request.api_version >= 1:
                successors = [ReplicaKey.of(c.candidate_id, c.candidate_directory_id)
                              for c in partition.preferred_candidates]
            else:
                successors = [ReplicaKey(i) for i in partition.preferred_successors]
            backoff = self._end_epoch_election_backoff_ms(successors)
            state.fetch_deadline_ms = min(state.fetch_deadline_ms, self.now_ms + backoff)
            # The leader is leaving: the "my leader is alive" reason to refuse pre-votes is gone.
            state.has_fetched_from_leader = False
            state.leader_resigned = True
        reply()

    def _end_epoch_election_backoff_ms(self, successors: list[ReplicaKey]) -> int:
        """KIP-595: the most up-to-date successor runs at once; the one at position N waits
        min(backoff max, (backoff max >> (count - 1)) << (N - 1)); one not listed waits the max."""
        position = len(successors)
        for i, key in enumerate(successors):
            if key.id == self.quorum.local_id and key.directory_id in (None, self.quorum.local_key.directory_id):
                position = i
                break
        maximum = self.config.election_backoff_max_ms
        if position == 0:
            return 0
        if position >= len(successors):
            return maximum
        base = maximum >> (len(successors) - 1)
        return min(maximum, base << (position - 1))

    def _handle_end_quorum_epoch_response(self, event: ResponseReceived) -> bool:
        body = event.body
        if body.error_code != NONE:
            return self._handle_top_level_error(body.error_code)
        partition = rpc.single_partition(body.topics)
        if partition is None:
            return False
        leader_id = partition.leader_id if partition.leader_id >= 0 else None
        endpoints = rpc.endpoints_from_response(body.node_endpoints, leader_id, self.config.listener)
        handled = self._maybe_handle_common_response(partition.error_code, leader_id, partition.leader_epoch, endpoints)
        if handled is not None:
            return handled
        if partition.error_code != NONE:
            return self._handle_unexpected_error(partition.error_code)
        state = self.quorum.state
        if isinstance(state, Resigned):
            state.unacknowledged.discard(event.destination)
        return True

    # --- Fetch (leader side) -----------------------------------------------------------------------------
    def _handle_fetch_request(self, request: RequestReceived) -> None:
        body = request.body
        if not self._valid_cluster_id(body.cluster_id):
            return self._respond(request, rpc.fetch_response(int(Errors.INCONSISTENT_CLUSTER_ID)))
        partition = rpc.fetch_partition(body)
        if partition is None:
            return self._respond(request, rpc.fetch_response(int(Errors.INVALID_REQUEST)))
        if body.max_wait_ms < 0 or partition.fetch_offset < 0 or partition.last_fetched_epoch < 0 \
                or partition.last_fetched_epoch > partition.current_leader_epoch:
            return self._respond(request, rpc.fetch_response(NONE, error=int(Errors.INVALID_REQUEST),
                                                             api_version=request.api_version, **self._leader_fields()))
        parked = ParkedFetch(request.request_id, request.api_version,
                             ReplicaKey.of(rpc.fetch_replica_id(body), partition.replica_directory_id),
                             partition.fetch_offset, partition.last_fetched_epoch, partition.current_leader_epoch,
                             self.now_ms + body.max_wait_ms, self.quorum.high_watermark())
        response = self._try_complete_fetch(parked)
        p = response.responses[0].partitions[0] if response.responses else None
        if (p is None or p.error_code != NONE or len(p.records or b"") > 0 or body.max_wait_ms == 0
                or p.diverging_epoch.epoch >= 0 or p.snapshot_id.epoch >= 0):
            self._out.respond.append(OutboundResponse(request.request_id, request.api_version, response))
        else:
            self.parked_fetches.append(parked)

    def _try_complete_fetch(self, fetch: ParkedFetch):
        error = self._validate_leader_only_request(fetch.current_leader_epoch)
        fields = dict(api_version=fetch.api_version, **self._leader_fields())
        if error != NONE:
            return rpc.fetch_response(NONE, error=error, high_watermark=self._hw_or_minus_one(), **fields)
        leader = self._leader()
        valid = self.log.validate_offset_and_epoch(fetch.fetch_offset, fetch.last_fetched_epoch)
        records, diverging, snapshot_id = b"", None, None
        if valid.kind == "valid":
            records = self.log.read(fetch.fetch_offset, self.config.fetch_max_bytes)
            if fetch.replica.id >= 0 and fetch.replica.id != self.quorum.local_id:
                if leader.book.update_replica(fetch.replica, fetch.fetch_offset, self.log.end_offset, self.now_ms):
                    self._on_leader_high_watermark_update()
        elif valid.kind == "diverging":
            diverging = valid.offset_and_epoch
        else:
            snapshot_id = valid.offset_and_epoch
        return rpc.fetch_response(NONE, high_watermark=self._hw_or_minus_one(), log_start_offset=self.log.start_offset,
                                  records=records, diverging=diverging, snapshot_id=snapshot_id, **fields)

    def _hw_or_minus_one(self) -> int:
        hw = self.quorum.high_watermark()
        return -1 if hw is None else hw

    def _complete_parked_fetch(self, parked: ParkedFetch) -> None:
        self._out.respond.append(OutboundResponse(parked.request_id, parked.api_version, self._try_complete_fetch(parked)))

    def _complete_ready_fetches(self, *, all_of_them: bool = False) -> None:
        """Answer parked fetches that have new records, expired, or (``all_of_them``) learn a
        new high watermark."""
        keep = []
        for parked in self.parked_fetches:
            if all_of_them or self.now_ms >= parked.deadline_ms or self.log.end_offset > parked.fetch_offset:
                self._complete_parked_fetch(parked)
            else:
                keep.append(parked)
        self.parked_fetches = keep

    def _on_leader_high_watermark_update(self) -> None:
        self._complete_ready_fetches(all_of_them=True)
        self.reconfig.on_high_watermark()

    # --- Fetch (follower side) ------------------------------------------------------------------------------
    def _handle_fetch_response(self, event: ResponseReceived) -> bool:
        body = event.body
        if body.error_code != NONE:
            return self._handle_top_level_error(body.error_code)
        partition = rpc.fetch_response_partition(body)
        if partition is None:
            return False
        leader = partition.current_leader
        leader_id = leader.leader_id if leader.leader_id >= 0 else None
        endpoints = rpc.endpoints_from_response(body.node_endpoints, leader_id, self.config.listener)
        before = self.quorum.leader_and_epoch()
        handled = self._maybe_handle_common_response(partition.error_code, leader_id, leader.leader_epoch, endpoints)
        if handled is not None:
            if handled and partition.error_code != NONE and self.quorum.leader_and_epoch() == before:
                # A replica that is not the leader (an unattached voter, a resigned leader)
                # answers at once; asking again at once would spin until an election ends.
                # Nothing was learnt, so the next fetch waits out the retry backoff.
                return False
            return handled
        state = self.quorum.state
        if not isinstance(state, Follower):
            return False   # a bootstrap fetch that taught us nothing new: back off likewise
        if partition.error_code != NONE:
            return self._handle_unexpected_error(partition.error_code)
        # Only the leader of our epoch answers a fetch without an error, whichever address
        # (a bootstrap server, for an observer) the request went to.
        if partition.diverging_epoch.epoch >= 0:
            self._truncate_to_diverging(OffsetAndEpoch(partition.diverging_epoch.epoch,
                                                       partition.diverging_epoch.end_offset))
        elif partition.snapshot_id.epoch >= 0 or partition.snapshot_id.end_offset >= 0:
            if partition.snapshot_id.epoch < 0 or partition.snapshot_id.end_offset < 0:
                return self._handle_unexpected_error(int(Errors.INVALID_REQUEST))
            if partition.snapshot_id.end_offset <= self.log.start_offset:
                # The answer to a fetch sent before we installed this snapshot (or a later one):
                # an observer can have a bootstrap fetch and a leader fetch in flight at once.
                return True
            state.fetching_snapshot = SnapshotFetch(OffsetAndEpoch(partition.snapshot_id.epoch,
                                                                   partition.snapshot_id.end_offset))
        else:
            records = partition.records
            if records is not None and len(records) > 0 and not self._append_as_follower(bytes(records)):
                return False   # refused: nothing appended, no progress; fetch again after a backoff
            self._update_follower_high_watermark(state, partition.high_watermark)
        self._on_successful_fetch(state)
        return True

    def _on_successful_fetch(self, state: Follower) -> None:
        if not state.leader_resigned:
            state.has_fetched_from_leader = True
            state.fetch_deadline_ms = self.now_ms + self.config.fetch_timeout_ms

    def _truncate_to_diverging(self, diverging: OffsetAndEpoch) -> None:
        """Truncate to where our log agrees with the leader's (Kafka's truncateToEndOffset)."""
        self._check_truncation_keeps_committed(diverging.offset)
        if diverging.epoch == 0:
            offset = min(diverging.offset, self.log.end_offset)
        else:
            local = self.log.end_offset_for_epoch(diverging.epoch)
            offset = min(local.offset, diverging.offset) if local.epoch == diverging.epoch else local.offset
        offset = max(offset, self.log.start_offset)
        self._check_truncation_keeps_committed(offset)
        if offset < self.log.end_offset:
            self.counters["truncations"] += 1
        self.log.truncate_to(offset)
        self.control.truncate_from(offset)

    def _check_truncation_keeps_committed(self, offset: int) -> None:
        hw = self.quorum.high_watermark()
        if hw is not None and offset < hw:
            raise RaftInvariantError(f"truncation to {offset} would cut committed records (high watermark {hw})")

    def _append_as_follower(self, data: bytes) -> bool:
        """Append a fetched response's batches; False (and nothing appended) if it breaks the
        log's rules: a leader's corrupt or hostile answer must not stop a follower."""
        batches, problem = check_fetched_batches(data, self.log.end_offset, self.log.last_fetched_epoch,
                                                 self.quorum.epoch)
        if problem is None:
            problem = self.control.problem_with(batches)
        if problem is not None:
            self.counters["fetch_responses_refused"] = self.counters.get("fetch_responses_refused", 0) + 1
            self._warn(f"refused the records fetched from leader {self.quorum.leader_id()} in epoch "
                       f"{self.quorum.epoch}: {problem}; the log end offset stays {self.log.end_offset}")
            return False
        appended = 0
        for batch in batches:
            self.log.append(bytes(batch.raw), batch.base_offset, batch.last_offset, batch.partition_leader_epoch,
                            flush=self.quorum.is_voter() or self.config.can_become_voter)
            self.control.apply_batch(batch)
            appended += batch.last_offset - batch.base_offset + 1
        self.counters["fetch_records"] += appended
        return True

    def _update_follower_high_watermark(self, state: Follower, leader_hw: int) -> None:
        if leader_hw < 0:
            return   # a new leader does not know the high watermark until its epoch commits
        new_hw = min(self.log.end_offset, leader_hw)
        if state.high_watermark is not None and new_hw < state.high_watermark:
            return   # an old response; the high watermark never goes back
        state.high_watermark = new_hw

    # --- FetchSnapshot -------------------------------------------------------------------------------------
    def _handle_fetch_snapshot_request(self, request: RequestReceived) -> None:
        body = request.body

        def reply(top=NONE, **kw):
            self._respond(request, rpc.fetch_snapshot_response(top, api_version=request.api_version, **kw,
                                                               **self._leader_fields()))
        if not self._valid_cluster_id(body.cluster_id):
            return reply(top=int(Errors.INCONSISTENT_CLUSTER_ID))
        partition = rpc.fetch_snapshot_partition(body)
        if partition is None:
            return reply(top=int(Errors.INVALID_REQUEST))
        error = self._validate_leader_only_request(partition.current_leader_epoch)
        if error != NONE:
            return reply(error=error)
        snapshot_id = OffsetAndEpoch(partition.snapshot_id.epoch, partition.snapshot_id.end_offset)
        if snapshot_id not in self.log.snapshots:
            return reply(error=int(Errors.SNAPSHOT_NOT_FOUND), snapshot_id=snapshot_id)
        size = self.log.store.snapshot_size(snapshot_id)
        if partition.position < 0 or partition.position >= size:
            return reply(error=int(Errors.POSITION_OUT_OF_RANGE), snapshot_id=snapshot_id, size=size)
        max_bytes = min(body.max_bytes if body.max_bytes > 0 else size, self.config.fetch_snapshot_max_bytes)
        data = self.log.store.read_snapshot(snapshot_id, partition.position, max_bytes)
        replica = ReplicaKey.of(body.replica_id, partition.replica_directory_id)
        leader = self._leader()
        if leader.book.is_voter(replica) and replica.id != self.quorum.local_id:
            leader.book.fetched_voters.add(replica.id)
            leader.book._maybe_reset_check_quorum(self.now_ms)
        reply(snapshot_id=snapshot_id, size=size, position=partition.position, data=data)

    def _handle_fetch_snapshot_response(self, event: ResponseReceived) -> bool:
        body = event.body
        if body.error_code != NONE:
            return self._handle_top_level_error(body.error_code)
        partition = rpc.fetch_snapshot_response_partition(body)
        if partition is None:
            return False
        leader_id = partition.current_leader.leader_id if partition.current_leader.leader_id >= 0 else None
        endpoints = rpc.endpoints_from_response(body.node_endpoints, leader_id, self.config.listener)
        handled = self._maybe_handle_common_response(partition.error_code, leader_id,
                                                     partition.current_leader.leader_epoch, endpoints)
        if handled is not None:
            return handled
        state = self.quorum.state
        if not isinstance(state, Follower) or state.fetching_snapshot is None:
            return True
        fetch = state.fetching_snapshot
        if partition.error_code in (Errors.SNAPSHOT_NOT_FOUND, Errors.OFFSET_OUT_OF_RANGE, Errors.POSITION_OUT_OF_RANGE):
            state.fetching_snapshot = None
            return True
        if partition.error_code != NONE:
            return self._handle_unexpected_error(partition.error_code)
        got = OffsetAndEpoch(partition.snapshot_id.epoch, partition.snapshot_id.end_offset)
        if got != fetch.snapshot_id or partition.position != fetch.position or partition.size <= 0 \
                or (fetch.size is not None and partition.size != fetch.size):
            state.fetching_snapshot = None   # an answer to another question: start over
            return False
        data = bytes(partition.unaligned_records or b"")
        if partition.position + len(data) > partition.size or not data:
            state.fetching_snapshot = None
            return False
        fetch.size = partition.size
        self.log.write_snapshot_chunk(fetch.snapshot_id, fetch.position, data)
        fetch.data += data
        fetch.position += len(data)
        self._on_successful_fetch(state)
        if fetch.position == fetch.size:
            self._install_fetched_snapshot(state, fetch)
        return True

    def _install_fetched_snapshot(self, state: Follower, fetch: SnapshotFetch) -> None:
        snapshot_id = fetch.snapshot_id
        problem = check_fetched_snapshot(bytes(fetch.data))
        if problem is not None:
            # A damaged or hostile answer must not replace the log (nor stop the node): the
            # log stays as it was and the next fetch starts the snapshot over.
            state.fetching_snapshot = None
            self.counters["fetched_snapshots_refused"] = self.counters.get("fetched_snapshots_refused", 0) + 1
            self._warn(f"refused snapshot {snapshot_id} fetched from leader {self.quorum.leader_id()}: {problem}; "
                       f"the log stays [{self.log.start_offset}, {self.log.end_offset})")
            return
        hw = state.high_watermark
        if hw is not None and snapshot_id.offset < hw:
            raise RaftInvariantError(f"snapshot {snapshot_id} ends before the high watermark {hw}")
        self.log.install_snapshot(snapshot_id)
        self.control.clear()
        self._apply_snapshot_control(snapshot_id, bytes(fetch.data))
        state.fetching_snapshot = None
        state.high_watermark = snapshot_id.offset
        self._pending_load_snapshot = snapshot_id
        self.counters["snapshot_installs"] += 1

    # --- DescribeQuorum ----------------------------------------------------------------------------------
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
            NONE, leader_id=self.quorum.local_id, epoch=self.quorum.epoch, high_watermark=self._hw_or_minus_one(),
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
    # local appends
    # ==========================================================================================
    def _handle_propose(self, event: Propose) -> None:
        state = self.quorum.state
        if not isinstance(state, Leader) or self.shutdown_deadline_ms is not None or state.book.resign_requested:
            self._out.appends_failed.append((event.token, int(Errors.NOT_LEADER_OR_FOLLOWER)))
            return
        if not event.records:
            self._out.appends_failed.append((event.token, int(Errors.INVALID_REQUEST)))
            return
        pending = sum(len(r) for _, r in self.accumulator)
        last = self.log.end_offset + pending + len(event.records) - 1
        self.accumulator.append((event.token, event.records))
        self._out.appended.append((event.token, last))
        if self.linger_deadline_ms is None:
            self.linger_deadline_ms = self.now_ms + self.config.append_linger_ms

    def _flush_accumulator(self) -> None:
        leader = self._leader()
        while self.accumulator:
            builder = RecordBatchBuilder(base_offset=self.log.end_offset, partition_leader_epoch=self._batch_epoch())
            tokens = []
            while self.accumulator and len(builder) + len(self.accumulator[0][1]) <= self.config.max_batch_records \
                    or self.accumulator and len(builder) == 0:
                token, records = self.accumulator.pop(0)
                for value in records:
                    builder.append(None, value, (), self.now_ms)
                tokens.append((token, self.log.end_offset + len(builder) - 1))
            self._append_as_leader(builder.build(), len(builder))
            for token, last in tokens:
                leader.book.waiting_appends.append((last, token))
        self.linger_deadline_ms = None

    def _append_as_leader(self, batch: bytes, count: int) -> None:
        leader = self._leader()
        base = self.log.end_offset
        self.log.append(batch, base, base + count - 1, self._batch_epoch(), flush=True)
        for parsed in iter_batches(batch):
            self.control.apply_batch(parsed)
            if parsed.is_control:
                leader.book.update_voters(self.voters(), self.now_ms)
        self.counters["append_records"] += count
        if leader.book.update_local_end(self.log.end_offset, self.now_ms):
            self._on_leader_high_watermark_update()
        self._complete_ready_fetches()

    def _batch_epoch(self) -> int:
        """Every batch a leader writes carries its epoch (KIP-595: records are identified by
        offset and epoch)."""
        return self._leader().epoch

    def append_control_records(self, records: list[tuple[int, object]]) -> int:
        """Append one control batch holding ``records`` ((control type, message) pairs) as the
        leader; returns the offset of its first record. Used for LeaderChange and KIP-853."""
        leader = self._leader()
        if self.accumulator:
            self._flush_accumulator()
        base = self.log.end_offset
        builder = RecordBatchBuilder(base_offset=base, partition_leader_epoch=self._batch_epoch(), is_control=True)
        for control_type, message in records:
            builder.append(encode_control_key(control_type), encode_value(message), (), self.now_ms)
        self._append_as_leader(builder.build(), len(records))
        return base

    def _append_start_of_epoch_records(self) -> None:
        leader = self._leader()
        voters = self.voters()
        change = LeaderChangeMessage(
            version=0, leader_id=self.quorum.local_id,
            voters=[LeaderChangeVoter(voter_id=i) for i in sorted(voters.ids)],
            granting_voters=[LeaderChangeVoter(voter_id=i) for i in sorted(leader.book.granting_voters)])
        records: list[tuple[int, object]] = [(ControlRecordType.LEADER_CHANGE, change)]
        kraft_version = self.control.last_kraft_version()
        if kraft_version >= 1 and self.control.last_voter_set_offset() == -1:
            # The voters came from the bootstrap snapshot only: the first leader writes them
            # into the log, with kraft.version, in the same batch (as Kafka's LeaderState does).
            records.append((ControlRecordType.KRAFT_VERSION, KRaftVersionRecord(version=0, k_raft_version=kraft_version)))
            records.append((ControlRecordType.KRAFT_VOTERS, voters.to_voters_record()))
        self.append_control_records(records)

    # ==========================================================================================
    # snapshots
    # ==========================================================================================
    def _handle_snapshot_frozen(self, snapshot_id: OffsetAndEpoch) -> None:
        self.log.snapshot_frozen(snapshot_id)
        if self.config.clean_log_on_snapshot:
            self._clean_log()

    def _clean_log(self) -> None:
        """Drop the log below the latest snapshot that is committed (records a lagging replica
        then gets through FetchSnapshot)."""
        hw = self.quorum.high_watermark()
        snapshot = self.log.latest_snapshot()
        if hw is not None and snapshot is not None and snapshot.offset <= hw:
            self.log.delete_before(snapshot.offset)
            self.control.prune_before(snapshot.offset)

    # ==========================================================================================
    # polling: timers and what each state must send
    # ==========================================================================================
    def _poll(self) -> None:
        for _ in range(8):   # a poll may transition; the new state is polled too (bounded)
            state = self.quorum.state
            if self.shutdown_deadline_ms is not None and self._poll_shutdown():
                return
            if isinstance(state, Leader):
                self._poll_leader(state)
            elif isinstance(state, Candidate):
                self._poll_candidate(state)
            elif isinstance(state, Prospective):
                self._poll_prospective(state)
            elif isinstance(state, Follower):
                self._poll_follower(state)
            elif isinstance(state, Unattached):
                self._poll_unattached(state)
            elif isinstance(state, Resigned):
                self._poll_resigned(state)
            self.reconfig.poll()
            if self.quorum.state is state:
                return

    def _poll_shutdown(self) -> bool:
        """Kafka's maybeCompleteShutdown: a leader resigns; the shutdown completes once another
        replica is known to lead (or we are an observer, or the only voter), or at the deadline.
        Until then the replica starts no election but still answers (and grants) votes and
        resends EndQuorumEpoch, so a successor can be elected with its vote."""
        state = self.quorum.state
        if isinstance(state, Leader):
            self._resign(state.book.preferred_successors())
            state = self.quorum.state
        leader_id = self.quorum.leader_id()
        voters = self.voters()
        only_voter = len(voters) == 1 and voters.node(self.quorum.local_id) is not None
        finished = (self.now_ms >= self.shutdown_deadline_ms or self.quorum.is_observer() or only_voter
                    or (leader_id is not None and leader_id != self.quorum.local_id))
        if finished:
            self.shutdown_done = True
            return True
        if isinstance(state, Resigned):
            self._poll_resigned(state)
        return True

    def _poll_leader(self, leader: Leader) -> None:
        book = leader.book
        if book.check_quorum_expired(self.now_ms):
            self.counters["check_quorum_resignations"] += 1
            self._resign(())
            return
        if book.resign_requested:
            self._resign(book.preferred_successors())
            return
        if self.linger_deadline_ms is not None and (self.now_ms >= self.linger_deadline_ms or
                                                    sum(len(r) for _, r in self.accumulator) >= self.config.max_batch_records):
            self._flush_accumulator()
        self._complete_ready_fetches()
        if self.now_ms >= book.begin_epoch_deadline_ms:
            for node_id in sorted(book.voter_states):
                if node_id == self.quorum.local_id or book.voter_states[node_id].has_endorsed:
                    continue
                if self.requests.is_ready(node_id, self.now_ms):
                    key = book.voter_states[node_id].key
                    self._send(node_id, self._address_of(node_id), rpc.begin_quorum_epoch_request(
                        self.config.cluster_id, leader.epoch, self.quorum.local_id, key, self.config.endpoints),
                        "BeginQuorumEpoch")
            book.begin_epoch_deadline_ms = self.now_ms + max(1, self.config.fetch_timeout_ms // 2)

    def _send_vote_requests(self, election, epoch: int, pre_vote: bool) -> None:
        last = self.log.end_offset_and_epoch()
        for node_id in sorted(election.unrecorded):
            if node_id == self.quorum.local_id or not self.requests.is_ready(node_id, self.now_ms):
                continue
            node = self.voters().node(node_id)
            address = self._address_of(node_id)
            if node is None or address is None:
                continue
            self._send(node_id, address, rpc.vote_request(self.config.cluster_id, epoch, self.quorum.local_key,
                                                          node.key, last.epoch, last.offset, pre_vote), "Vote")

    def _poll_candidate(self, state: Candidate) -> None:
        if self.now_ms >= state.election_deadline_ms:
            self._transition_to_prospective()
            return
        self._send_vote_requests(state.vote_election, state.epoch, pre_vote=False)

    def _poll_prospective(self, state: Prospective) -> None:
        if self.now_ms >= state.election_deadline_ms:
            self._handle_election_loss()
            return
        if not self.config.pre_vote:
            self._transition_to_candidate()
            return
        self._send_vote_requests(state.pre_election, state.epoch, pre_vote=True)

    def _poll_follower(self, state: Follower) -> None:
        if self.now_ms >= state.fetch_deadline_ms:
            if self.quorum.is_voter():
                self._transition_to_prospective()
                return
            self._maybe_send_bootstrap_fetch()
            return
        if not self.requests.is_ready(state.leader_id, self.now_ms):
            return
        address = state.leader_endpoints.address(self.config.listener)
        if address is None:
            return
        # UpdateRaftVoter and auto-join requests take the place of a fetch when they are due,
        # as in Kafka (one request in flight to the leader at a time).
        if self.reconfig.maybe_send_to_leader(state, address):
            return
        if state.fetching_snapshot is not None:
            fetch = state.fetching_snapshot
            self._send(state.leader_id, address, rpc.fetch_snapshot_request(
                self.config.cluster_id, self.quorum.local_key, state.epoch, fetch.snapshot_id, fetch.position,
                self.config.fetch_snapshot_max_bytes), "FetchSnapshot")
        else:
            self._send(state.leader_id, address, self._fetch_request(state.epoch), "Fetch")

    def _fetch_request(self, epoch: int):
        return rpc.fetch_request(self.config.cluster_id, self.quorum.local_key, epoch, self.log.end_offset,
                                 self.log.last_fetched_epoch, self.config.fetch_max_wait_ms, self.config.fetch_max_bytes)

    def _maybe_send_bootstrap_fetch(self) -> None:
        """Find the leader by fetching from a bootstrap server (KIP-853), or from any voter
        whose endpoint we know when no bootstrap servers are configured."""
        if self.requests.bootstrap:
            if self.requests.has_bootstrap_in_flight():
                return
            node = self.requests.ready_bootstrap_server(self.now_ms)
            if node is not None:
                self._send(node, self.requests.bootstrap[node], self._fetch_request(self.quorum.epoch), "Fetch")
            return
        candidates = [n.key.id for n in self.voters() if n.key.id != self.quorum.local_id
                      and self._address_of(n.key.id) is not None]
        if any(self.requests.in_flight(n) for n in candidates):
            return
        ready = [n for n in candidates if self.requests.is_ready(n, self.now_ms)]
        if ready:
            node = self.rng.choice(ready)
            self._send(node, self._address_of(node), self._fetch_request(self.quorum.epoch), "Fetch")

    def _poll_unattached(self, state: Unattached) -> None:
        if self.quorum.is_voter():
            if self.now_ms >= state.election_deadline_ms:
                self._transition_to_prospective()
                return
            if self.requests.bootstrap:
                self._maybe_send_bootstrap_fetch()
        else:
            self._maybe_send_bootstrap_fetch()

    def _poll_resigned(self, state: Resigned) -> None:
        if self.now_ms >= state.election_deadline_ms and self.shutdown_deadline_ms is None:
            if can_start_election(state.epoch):
                self._transition_to_unattached(state.epoch + 1)
                return
            self._postpone_impossible_election()
        for node_id in sorted(state.unacknowledged):
            if not self.requests.is_ready(node_id, self.now_ms):
                continue
            address = self._address_of(node_id)
            if address is None:
                continue
            self._send(node_id, address, rpc.end_quorum_epoch_request(
                self.config.cluster_id, state.epoch, state.local_id, state.preferred_successors,
                self.config.endpoints), "EndQuorumEpoch")

    # ==========================================================================================
    # the next deadline
    # ==========================================================================================
    def _next_wake_ms(self) -> int:
        now = self.now_ms
        if self.shutdown_done:
            return NEVER
        state = self.quorum.state
        times = [now + 60_000]
        for conn in self.requests.connections.values():
            times.append(conn.timeout_at_ms if conn.correlation_id is not None else conn.backoff_until_ms)
        times.append(self.requests.bootstrap_backoff_until_ms)
        if self.shutdown_deadline_ms is not None:
            times.append(self.shutdown_deadline_ms)
        if isinstance(state, Leader):
            times += [state.book.check_quorum_deadline_ms, state.book.begin_epoch_deadline_ms]
            if self.linger_deadline_ms is not None:
                times.append(self.linger_deadline_ms)
            times += [p.deadline_ms for p in self.parked_fetches]
        elif isinstance(state, Candidate):
            times.append(state.election_deadline_ms)
        elif isinstance(state, (Prospective, Unattached, Resigned)):
            times.append(state.election_deadline_ms)
        elif isinstance(state, Follower):
            times.append(state.fetch_deadline_ms)
        times += self.reconfig.deadlines()
        # Deadlines already past were acted on in this step's poll; an idle connection's old
        # backoff or an observer's expired fetch timer must not make the driver spin.
        return min(t for t in times if t is not None and t > now)
