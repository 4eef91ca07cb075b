"""QuorumState: the only place that builds epoch states, and the guard on every transition.

The transitions (Kafka's QuorumState, with KIP-996's Prospective state):

    Resigned    -> Unattached   a higher epoch, or its election timeout (at epoch + 1)
                -> Follower     a leader of a larger epoch
                -> Prospective  at start, when it is the only voter (it led before a restart)
    Unattached  -> Unattached   a higher epoch; or, in the same epoch, casting a vote
                -> Prospective  election timeout (voters only), or at start when the only voter
                -> Follower     a leader of this or a larger epoch
    Prospective -> Unattached   a higher epoch, or it lost the pre-vote knowing no leader
                -> Candidate    a majority granted the pre-vote
                -> Follower     a leader of a larger epoch, or it lost the pre-vote and knew
                                the leader of its epoch
                (-> Prospective in the same epoch when it casts a vote)
    Candidate   -> Unattached   a higher epoch
                -> Prospective  election timeout or lost election (after backoff)
                -> Leader       a majority voted for it
                -> Follower     another candidate of its epoch won
    Leader      -> Unattached   a higher epoch
                -> Resigned     shutdown, failed check-quorum, or removal from the voters
                -> Follower     a leader of a larger epoch
    Follower    -> Unattached   a higher epoch
                -> Prospective  fetch timeout (voters only)
                -> Follower     a leader of a larger epoch, or more endpoints for the same one

Observers (not in the voter set) only move between Unattached and Follower.

``ALLOWED`` is that table as data; the epoch rules that go with each edge are checked in the
``transition_to_*`` functions, which raise IllegalTransition naming the rule. Prospective and
Resigned are memory-only transitions (the persisted election does not change); every other
transition sets ``pending_election`` for the driver to persist before anything is sent.
"""
from __future__ import annotations

import random

from .bounds import INT32_MAX
from .control import ControlState
from .election import EpochElection
from .states import (NEVER, Candidate, EpochState, Follower, Leader, Prospective, Resigned,
                     Unattached, describe, leader_endpoints_of, leader_id_of, voted_key_of)
from .types import EMPTY_ENDPOINTS, ElectionState, Endpoints, LeaderAndEpoch, ReplicaKey

ALLOWED: dict[type, frozenset[type]] = {
    Resigned: frozenset({Unattached, Follower, Prospective}),
    Unattached: frozenset({Unattached, Prospective, Follower}),
    Prospective: frozenset({Unattached, Candidate, Follower, Prospective}),
    Candidate: frozenset({Unattached, Prospective, Leader, Follower}),
    Leader: frozenset({Unattached, Resigned, Follower}),
    Follower: frozenset({Unattached, Prospective, Follower}),
}
OBSERVER_ALLOWED: dict[type, frozenset[type]] = {
    Unattached: frozenset({Unattached, Follower}),
    Follower: frozenset({Unattached, Follower}),
}


class IllegalTransition(RuntimeError):
    def __init__(self, old: EpochState, new: str, rule: str):
        super().__init__(f"cannot go from {describe(old)} to {new}: {rule}")
        self.old, self.new, self.rule = old, new, rule


class QuorumState:
    def __init__(self, local_key: ReplicaKey, local_endpoints: Endpoints, control: ControlState,
                 election_timeout_ms: int, fetch_timeout_ms: int, rng: random.Random):
        self.local_key = local_key
        self.local_endpoints = local_endpoints
        self.control = control
        self.election_timeout_ms = election_timeout_ms
        self.fetch_timeout_ms = fetch_timeout_ms
        self.rng = rng
        self.state: EpochState = Unattached(0, None, None, NEVER)
        self.pending_election: ElectionState | None = None
        self.transitions: list[tuple[str, str]] = []   # (from, to) since the last take, for tests

    # --- queries -------------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def local_id(self) -> int:
        return self.local_key.id

    def voters(self):
        return self.control.last_voter_set()

    def is_voter(self) -> bool:
        return self.voters().is_voter(self.local_key)

    def is_observer(self) -> bool:
        return not self.is_voter()

    def leader_id(self) -> int | None:
        return leader_id_of(self.state)

    def leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self.leader_id(), self.epoch)

    def leader_endpoints(self) -> Endpoints:
        return leader_endpoints_of(self.state, self.local_endpoints)

    def voted_key(self) -> ReplicaKey | None:
        return voted_key_of(self.state)

    def high_watermark(self) -> int | None:
        return self.state.high_watermark

    def random_election_timeout_ms(self) -> int:
        if self.election_timeout_ms == 0:
            return 0
        return self.election_timeout_ms + self.rng.randrange(self.election_timeout_ms)

    # --- plumbing --------------------------------------------------------------------------------
    def _check_edge(self, new_type: type, rule_if_missing: str) -> None:
        table = ALLOWED if self.is_voter() or isinstance(self.state, (Leader, Resigned, Candidate, Prospective)) \
            else OBSERVER_ALLOWED
        allowed = table.get(type(self.state), frozenset())
        if new_type not in allowed:
            raise IllegalTransition(self.state, new_type.__name__, rule_if_missing)

    def _durable(self, new: EpochState) -> None:
        if not 0 <= new.epoch <= INT32_MAX:
            raise IllegalTransition(self.state, describe(new), f"an epoch is an int32 (0..{INT32_MAX}): never persisted beyond")
        self.pending_election = new.election()
        self._memory(new)

    def _memory(self, new: EpochState) -> None:
        self.transitions.append((describe(self.state), describe(new)))
        self.state = new

    def take_transitions(self) -> list[tuple[str, str]]:
        out, self.transitions = self.transitions, []
        return out

    # --- initialisation --------------------------------------------------------------------------
    def initialize(self, election: ElectionState | None, log_end_epoch: int, now_ms: int) -> None:
        """Pick the starting state from the persisted election (Kafka's QuorumState.initialize)."""
        election = election or ElectionState.unknown(0)
        timeout = now_ms + self.random_election_timeout_ms()
        if election.epoch < log_end_epoch:
            # The quorum-state file is behind the log: the epoch in the log wins.
            new: EpochState = Unattached(log_end_epoch, None, None, timeout)
        elif election.is_leader(self.local_id):
            # A restarted leader starts Resigned in its epoch, so that it can neither vote
            # nor lead again in it: unflushed records it had appended may be lost, and two
            # different records must never share an (offset, epoch).
            new = Resigned(election.epoch, self.local_id, timeout, ())
        elif election.voted_key is not None and election.voted_key.matches(self.local_key) \
                and election.leader_id is None:
            new = Candidate(election.epoch, self.local_key,
                            EpochElection(self.voters().ids), 1, timeout)
            new.vote_election.record_granted(self.local_id, strict=True)
        elif election.leader_id is not None:
            endpoints = self.voters().endpoints(election.leader_id)
            if endpoints:
                new = Follower(election.epoch, election.leader_id, endpoints, election.voted_key,
                               now_ms + self.fetch_timeout_ms)
            else:
                # The leader's endpoints are unknown: find it again through the bootstrap
                # servers or its BeginQuorumEpoch.
                new = Unattached(election.epoch, election.leader_id, election.voted_key, timeout)
        else:
            new = Unattached(election.epoch, None, election.voted_key, timeout)
        if isinstance(new, Unattached) and self.is_observer():
            new.election_deadline_ms = NEVER
        self.pending_election = new.election()
        self.state = new

    # --- transitions -----------------------------------------------------------------------------
    def transition_to_unattached(self, epoch: int, leader_id: int | None, now_ms: int) -> None:
        old = self.state
        if epoch < old.epoch or (epoch == old.epoch and not isinstance(old, Prospective)):
            raise IllegalTransition(old, f"Unattached(e={epoch})",
                                    "Unattached needs a higher epoch, or the same epoch from Prospective")
        self._check_edge(Unattached, "no such edge")
        if self.is_observer():
            deadline = NEVER
        elif isinstance(old, (Candidate, Unattached, Resigned)) or (
                isinstance(old, Prospective) and not old.pre_election.is_rejected):
            deadline = old.election_deadline_ms
        else:
            deadline = now_ms + self.random_election_timeout_ms()
        # In the same epoch (from Prospective) the vote is kept: one vote per epoch.
        voted = voted_key_of(old) if epoch == old.epoch else None
        self._durable(Unattached(epoch, leader_id, voted, deadline, old.high_watermark))

    def add_voted_state(self, epoch: int, candidate: ReplicaKey, now_ms: int) -> None:
        """Cast this epoch's vote, as Unattached or Prospective (Kafka's unattachedAddVotedState
        and prospectiveAddVotedState)."""
        old = self.state
        if candidate.id == self.local_id:
            raise IllegalTransition(old, "voted", "a replica does not vote for itself this way")
        if epoch != old.epoch or not isinstance(old, (Unattached, Prospective)) or old.voted_key is not None:
            raise IllegalTransition(old, f"voted for {candidate} in epoch {epoch}",
                                    "a vote is cast once per epoch, as Unattached or Prospective, in its own epoch")
        # The timer restarts: the candidate has at least as good a chance as we do.
        deadline = now_ms + self.random_election_timeout_ms()
        if isinstance(old, Unattached):
            self._durable(Unattached(epoch, old.leader_id, candidate, deadline, old.high_watermark))
        else:
            # As Kafka's prospectiveAddVotedState (a new ProspectiveState): the pre-vote starts
            # over, so grants gathered before the vote cannot make us a candidate that
            # disrupts the election we just voted in.
            self._durable(Prospective(epoch, old.leader_id, old.leader_endpoints, candidate,
                                      self._new_pre_election(), old.retries, deadline, old.high_watermark))

    def transition_to_follower(self, epoch: int, leader_id: int, endpoints: Endpoints, now_ms: int) -> None:
        old = self.state
        if not endpoints:
            raise IllegalTransition(old, f"Follower(e={epoch}, leader={leader_id})", "a follower needs the leader's endpoints")
        if leader_id == self.local_id:
            raise IllegalTransition(old, f"Follower(e={epoch}, leader={leader_id})", "a replica cannot follow itself")
        if epoch < old.epoch:
            raise IllegalTransition(old, f"Follower(e={epoch})", "the epoch never goes back")
        if epoch == old.epoch:
            if isinstance(old, Follower) and len(old.leader_endpoints) >= len(endpoints):
                raise IllegalTransition(old, f"Follower(e={epoch})",
                                        "a follower re-follows its epoch's leader only to learn more endpoints")
            if isinstance(old, Leader):
                raise IllegalTransition(old, f"Follower(e={epoch})", "a leader never follows in its own epoch")
            if leader_id_of(old) not in (None, leader_id):
                raise IllegalTransition(old, f"Follower(e={epoch}, leader={leader_id})",
                                        f"epoch {epoch} already has leader {leader_id_of(old)}")
        self._check_edge(Follower, "no such edge")
        voted = voted_key_of(old) if epoch == old.epoch else None
        if isinstance(old, (Candidate, Leader)):
            voted = old.local_key if epoch == old.epoch else None
        self._durable(Follower(epoch, leader_id, endpoints, voted, now_ms + self.fetch_timeout_ms,
                               high_watermark=old.high_watermark))

    def transition_to_prospective(self, now_ms: int) -> None:
        old = self.state
        if self.is_observer():
            raise IllegalTransition(old, "Prospective", "observers never run for election")
        if isinstance(old, (Leader, Prospective)):
            raise IllegalTransition(old, "Prospective", "only Unattached, Follower and Candidate start a pre-vote")
        self._check_edge(Prospective, "no such edge")
        retries = old.retries + 1 if isinstance(old, Candidate) else 1
        self._memory(Prospective(old.epoch, leader_id_of(old) if not isinstance(old, Candidate) else None,
                                 leader_endpoints_of(old, self.local_endpoints), voted_key_of(old),
                                 self._new_pre_election(), retries, now_ms + self.random_election_timeout_ms(),
                                 old.high_watermark))

    def _new_pre_election(self) -> EpochElection:
        election = EpochElection(self.voters().ids)
        election.record_granted(self.local_id, strict=False)
        return election

    def transition_to_candidate(self, now_ms: int) -> None:
        old = self.state
        if self.is_observer():
            raise IllegalTransition(old, "Candidate", "observers never run for election")
        if not isinstance(old, Prospective):
            raise IllegalTransition(old, "Candidate", "only a Prospective whose pre-vote won becomes Candidate")
        election = EpochElection(self.voters().ids)
        election.record_granted(self.local_id, strict=True)
        self._durable(Candidate(old.epoch + 1, self.local_key, election, old.retries,
                                now_ms + self.random_election_timeout_ms(), high_watermark=old.high_watermark))

    def transition_to_leader(self, epoch_start_offset: int, book) -> Leader:
        old = self.state
        if self.is_observer():
            raise IllegalTransition(old, "Leader", "observers never lead")
        if not isinstance(old, Candidate):
            raise IllegalTransition(old, "Leader", "only a Candidate becomes Leader")
        if not old.vote_election.is_granted:
            raise IllegalTransition(old, "Leader", "a majority of votes is needed")
        # The new leader does not keep the old high watermark: it is exposed only once a
        # majority has replicated a record of the new epoch, which keeps it monotonic.
        new = Leader(old.epoch, self.local_key, epoch_start_offset, book)
        self._durable(new)
        return new

    def transition_to_resigned(self, preferred_successors: tuple[ReplicaKey, ...], now_ms: int) -> None:
        old = self.state
        if not isinstance(old, Leader):
            raise IllegalTransition(old, "Resigned", "only a leader resigns")
        remote = {k.id for k in self.voters().keys if k.id != self.local_id}
        self._memory(Resigned(old.epoch, self.local_id, now_ms + self.random_election_timeout_ms(),
                              preferred_successors, remote, old.high_watermark))
