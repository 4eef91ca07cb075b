"""The epoch states, one class each, as Kafka's raft module names them.

Lifetimes (KIP-595, KIP-853 and KIP-996):

- Unattached: the epoch is known but no leader is followed; the replica may hold a vote for
  the epoch. A voter's election timer runs; an observer waits to discover the leader.
- Prospective: a voter whose timer expired asks for pre-votes (Vote with PreVote=true) at
  its current epoch, without bumping it, so a partitioned replica cannot disrupt a working
  quorum.
- Candidate: a majority granted the pre-vote; the epoch is bumped, the replica voted for
  itself (persisted) and asks for votes.
- Leader: a majority voted for it; it appends, serves fetches and advances the high watermark.
- Follower: it knows the leader of its epoch and fetches from it.
- Resigned: a leader that is stepping down (shutdown, check-quorum, removal); it tells the
  voters with EndQuorumEpoch and never leads this epoch again.

States hold only their own data. Deadlines are absolute virtual times (ms), so a state is
plain data and "expired" is a comparison. Only QuorumState (quorum_state.py) builds them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from .election import EpochElection
from .types import EMPTY_ENDPOINTS, ElectionState, Endpoints, ReplicaKey

if TYPE_CHECKING:
    from .leader import LeaderBookkeeping
    from .snapshot_fetch import SnapshotFetch

NEVER = 2 ** 62   # a deadline that does not expire (observers' election timer)


@dataclass(slots=True)
class Unattached:
    epoch: int
    leader_id: int | None
    voted_key: ReplicaKey | None
    election_deadline_ms: int
    high_watermark: int | None = None

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)


@dataclass(slots=True)
class Prospective:
    epoch: int
    leader_id: int | None
    leader_endpoints: Endpoints
    voted_key: ReplicaKey | None
    pre_election: EpochElection
    retries: int
    election_deadline_ms: int
    high_watermark: int | None = None

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)


@dataclass(slots=True)
class Candidate:
    epoch: int
    local_key: ReplicaKey
    vote_election: EpochElection
    retries: int
    election_deadline_ms: int
    high_watermark: int | None = None

    def election(self) -> ElectionState:
        return ElectionState.voted(self.epoch, self.local_key)


@dataclass(slots=True)
class Leader:
    epoch: int
    local_key: ReplicaKey
    epoch_start_offset: int
    book: LeaderBookkeeping

    @property
    def high_watermark(self) -> int | None:
        return self.book.high_watermark

    def election(self) -> ElectionState:
        return ElectionState.elected(self.epoch, self.local_key.id, self.local_key)


@dataclass(slots=True)
class Follower:
    epoch: int
    leader_id: int
    leader_endpoints: Endpoints
    voted_key: ReplicaKey | None
    fetch_deadline_ms: int
    has_fetched_from_leader: bool = False
    high_watermark: int | None = None
    # While a snapshot is being fetched: its id and the bytes received so far.
    fetching_snapshot: SnapshotFetch | None = None
    # The leader said it is stepping down (EndQuorumEpoch): answers it sent before that must
    # not make us believe it alive again, nor push back the election it asked for.
    leader_resigned: bool = False

    def election(self) -> ElectionState:
        return ElectionState.elected(self.epoch, self.leader_id, self.voted_key)


@dataclass(slots=True)
class Resigned:
    epoch: int
    local_id: int
    election_deadline_ms: int
    preferred_successors: tuple[ReplicaKey, ...]
    unacknowledged: set[int] = field(default_factory=set)
    high_watermark: int | None = None

    def election(self) -> ElectionState:
        return ElectionState.elected(self.epoch, self.local_id)


EpochState = Union[Unattached, Prospective, Candidate, Leader, Follower, Resigned]
Nominee = Union[Prospective, Candidate]


def leader_id_of(state: EpochState) -> int | None:
    if isinstance(state, Leader):
        return state.local_key.id
    if isinstance(state, Resigned):
        return state.local_id
    if isinstance(state, (Unattached, Prospective, Follower)):
        return state.leader_id
    return None


def leader_endpoints_of(state: EpochState, local_endpoints: Endpoints) -> Endpoints:
    if isinstance(state, (Follower, Prospective)):
        return state.leader_endpoints
    if isinstance(state, (Leader, Resigned)):
        return local_endpoints
    return EMPTY_ENDPOINTS


def voted_key_of(state: EpochState) -> ReplicaKey | None:
    if isinstance(state, (Unattached, Prospective, Follower)):
        return state.voted_key
    if isinstance(state, (Candidate, Leader)):
        return state.local_key
    return None


def can_grant_vote(state: EpochState, candidate: ReplicaKey, log_up_to_date: bool, pre_vote: bool,
                   now_ms: int = 0) -> bool:
    """Whether this replica grants a (pre-)vote in its current epoch: the rules of Kafka's
    EpochState.canGrantVote (KIP-595, KIP-996), in one place.

    - Unattached and Prospective: a pre-vote needs only an up-to-date log. A standard vote
      goes to the replica already voted for in this epoch (again, idempotently), is refused
      if another replica holds the vote or a leader is known, and otherwise needs an
      up-to-date log.
    - Candidate: grants pre-votes with an up-to-date log (it knows no leader either), never a
      standard vote: it voted for itself.
    - Follower: grants a pre-vote only before it has fetched successfully from its leader
      (a leader it can reach is alive, so the prospective is the partitioned one), or once
      its fetch timer has run out; never a standard vote in an epoch that has a leader.
      The timer clause goes beyond Kafka's FollowerState: a voter times out into Prospective
      anyway, but a voter that has not yet fetched the VotersRecord naming it stays a
      Follower (an observer in its own eyes) and, without the clause, would refuse every
      pre-vote forever once its leader is gone, leaving the quorum without a majority.
    - Resigned: a pre-vote with an up-to-date log (it is stepping down and wants a
      successor, as Kafka's ResignedState); never a standard vote.
    - Leader: never.
    """
    if isinstance(state, (Unattached, Prospective)):
        if pre_vote:
            return log_up_to_date
        if state.voted_key is not None:
            voted = state.voted_key
            return voted.id == candidate.id and voted.directory_id in (None, candidate.directory_id)
        if state.leader_id is not None:
            return False
        return log_up_to_date
    if isinstance(state, Candidate):
        return pre_vote and log_up_to_date
    if isinstance(state, Follower):
        leader_silent = not state.has_fetched_from_leader or now_ms >= state.fetch_deadline_ms
        return pre_vote and leader_silent and log_up_to_date
    if isinstance(state, Resigned):
        return pre_vote and log_up_to_date
    if isinstance(state, Leader):
        return False
    raise TypeError(f"unknown epoch state {state!r}")


def describe(state: EpochState) -> str:
    """One stable line per state, as the interaction tests print it."""
    name = type(state).__name__
    parts = [f"e={state.epoch}"]
    leader = leader_id_of(state)
    if leader is not None and not isinstance(state, (Leader, Resigned)):
        parts.append(f"leader={leader}")
    voted = voted_key_of(state)
    if voted is not None and isinstance(state, (Unattached, Prospective, Follower)):
        parts.append(f"voted={voted.id}")
    return f"{name}({', '.join(parts)})"
