"""Elections and epoch announcements: Vote (KIP-595, with KIP-996's pre-vote),
BeginQuorumEpoch and EndQuorumEpoch, both sides, and the checks their requests share.

A part of RaftCore (a mixin, see parts.py): when a handler here learns of another epoch or
leader it calls the core's transitions.
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors

from . import rpc
from .bounds import epoch_jump_refusal
from .election import PreVoteYield
from .io import RequestReceived, ResponseReceived
from .parts import CoreParts
from .states import Candidate, Follower, Leader, Prospective, Resigned, can_grant_vote
from .types import OffsetAndEpoch, ReplicaKey

NONE = int(Errors.NONE)


class VoteHandling(CoreParts):
    # --- checks the voter-only requests share ------------------------------------------------------
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
        """Deliberately stricter than Kafka (docs/differences.md, Raft): a BeginQuorumEpoch or EndQuorumEpoch
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

    def _voter_key_matches(self, voter_id: int, directory_id) -> bool:
        """A v1+ request names its intended receiver; a mismatch means it is for someone else."""
        if voter_id < 0:
            return True   # v0 requests do not say
        return ReplicaKey.of(voter_id, directory_id).matches(self.quorum.local_key) and voter_id == self.quorum.local_id

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
        # Deliberately unlike Kafka (docs/differences.md, Raft): a candidate no voter set we know names, or one
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
        elif granted:
            self._note_pre_vote_granted(candidate)
        reply(granted=granted)

    def _can_grant_vote(self, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        return can_grant_vote(self.quorum.state, candidate, log_up_to_date, pre_vote, self.now_ms)

    def _record_vote(self, epoch: int, candidate: ReplicaKey) -> None:
        """Persisted (Ready.election) before the response leaves: one vote per epoch."""
        if self.quorum.voted_key() is None:
            self.quorum.add_voted_state(epoch, candidate, self.now_ms)

    # --- yielding to a peer that timed out with us -----------------------------------------------
    def _note_pre_vote_granted(self, candidate: ReplicaKey) -> None:
        """Deliberately beyond Kafka (docs/differences.md, Raft). When a leader dies, the fetch
        timers of its followers run out within milliseconds of each other (the leader's last
        answers reset them all), both pre-vote, the requests cross, each grants the other's,
        and both become candidates of the same epoch that refuse each other's Vote: the
        election then waits out an election timeout (1-2 s) for a second round. So a voter
        that granted the pre-vote of a peer with a lower id holds back its own won pre-vote for
        up to controller.quorum.election.backoff.max.ms (the longest KIP-595 makes a resigned
        leader's later successors wait), for that peer's Vote to arrive: the peer persists its
        vote first, which took 444 ms under another process's disk load in one benchmark run,
        so half that bound was too short. The ids break the tie, so one of the two goes on; if
        the peer never asks, we go on after the hold. Only our timing changes: votes are granted
        and refused by Kafka's rules, and a Kafka voter, which does not hold back, is no worse
        off than before."""
        if candidate.id < self.quorum.local_id:
            self.pre_vote_yield = PreVoteYield(self.quorum.epoch, self.now_ms + self.config.election_backoff_max_ms)

    def _yielding_to_peer(self) -> bool:
        """Whether a won pre-vote waits (see _note_pre_vote_granted); counts each wait once."""
        waiting = self.pre_vote_yield
        if waiting is None or waiting.epoch != self.quorum.epoch or self.now_ms >= waiting.until_ms:
            return False
        if not waiting.held:
            waiting.held = True
            self.counters["pre_vote_yields"] += 1
        return True

    def _handle_vote_response(self, event: ResponseReceived) -> bool:
        partition = rpc.single_partition(event.body.topics)
        handled = self._response_prologue(event.body, partition)
        if handled is not None:
            # An answer from a voter still in an older epoch (a pre-vote's usual case) counts
            # neither way; asking it again at once would spin, so it waits out the backoff.
            return handled and partition.leader_epoch >= self.quorum.epoch
        if partition.error_code != NONE:
            return self._handle_unexpected_error(partition.error_code)
        state = self.quorum.state
        if isinstance(state, (Prospective, Candidate)):
            strict = isinstance(state, Candidate)
            election = state.vote_election if isinstance(state, Candidate) else state.pre_election
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

    def _send_vote_requests(self, election, epoch: int, pre_vote: bool) -> None:
        if election.is_rejected:
            # As Kafka's maybeSendVoteRequests: only while the election can still be won. A
            # refused candidate waits out its timer without moving more voters to its epoch.
            return
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

    # --- BeginQuorumEpoch -------------------------------------------------------------------------
    def _accept_leader_announcement(self, request: RequestReceived, api: str, reply):
        """The checks BeginQuorumEpoch and EndQuorumEpoch share (cluster id, one partition, a
        voter-only request, a believable leader claim), then the leader they name is learnt.
        Returns the partition, or None once ``reply`` has answered the refusal."""
        body = request.body
        if not self._valid_cluster_id(body.cluster_id):
            return reply(top=int(Errors.INCONSISTENT_CLUSTER_ID))
        partition = rpc.single_partition(body.topics)
        if partition is None:
            return reply(top=int(Errors.INVALID_REQUEST))
        error = self._validate_voter_only_request(partition.leader_id, partition.leader_epoch)
        if error == NONE:
            error = self._validate_leader_claim(api, partition.leader_id, partition.leader_epoch)
        if error != NONE:
            return reply(error=error)
        endpoints = rpc.endpoints_from_leader_field(body.leader_endpoints)
        self._maybe_transition(partition.leader_id, partition.leader_epoch, endpoints)
        return partition

    def _handle_begin_quorum_epoch_request(self, request: RequestReceived) -> None:
        body = request.body

        def reply(top=NONE, error=NONE):
            self._respond(request, rpc.begin_quorum_epoch_response(top, error, api_version=request.api_version,
                                                                   **self._leader_fields()))
        partition = self._accept_leader_announcement(request, "BeginQuorumEpoch", reply)
        if partition is None:
            return
        # As Kafka's handleBeginQuorumEpochRequest: the leader is learnt before the voter key
        # is checked, so a request meant for another key still names the leader we now follow.
        if not self._voter_key_matches(body.voter_id, partition.voter_directory_id):
            return reply(error=int(Errors.INVALID_VOTER_KEY))
        reply()

    def _handle_begin_quorum_epoch_response(self, event: ResponseReceived) -> bool:
        partition = rpc.single_partition(event.body.topics)
        handled = self._response_prologue(event.body, partition)
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

    # --- EndQuorumEpoch ---------------------------------------------------------------------------
    def _handle_end_quorum_epoch_request(self, request: RequestReceived) -> None:
        def reply(top=NONE, error=NONE):
            self._respond(request, rpc.end_quorum_epoch_response(top, error, api_version=request.api_version,
                                                                 **self._leader_fields()))
        partition = self._accept_leader_announcement(request, "EndQuorumEpoch", reply)
        if partition is None:
            return
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
        partition = rpc.single_partition(event.body.topics)
        handled = self._response_prologue(event.body, partition)
        if handled is not None:
            return handled
        if partition.error_code != NONE:
            return self._handle_unexpected_error(partition.error_code)
        state = self.quorum.state
        if isinstance(state, Resigned):
            state.unacknowledged.discard(event.destination)
        return True
