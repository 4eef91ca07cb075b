"""Every (from state, to state) pair: legal ones succeed, the rest raise IllegalTransition
naming the rule (Kafka's QuorumStateTest, as one matrix)."""
from __future__ import annotations

import random

import pytest

from kafkawire.raft.control import ControlState
from kafkawire.raft.election import EpochElection
from kafkawire.raft.leader import LeaderBookkeeping
from kafkawire.raft.quorum_state import ALLOWED, IllegalTransition, QuorumState
from kafkawire.raft.states import Candidate, Follower, Leader, Prospective, Resigned, Unattached
from kafkawire.raft.types import ElectionState, Endpoints, ReplicaKey
from kafkawire.raft.voters import VoterSet

LOCAL = ReplicaKey(1)
ENDPOINTS = Endpoints((("CONTROLLER", "node2", 9093),))
STATES = [Unattached, Prospective, Candidate, Leader, Follower, Resigned]


def quorum(voters=(1, 2, 3), local=LOCAL) -> QuorumState:
    control = ControlState(VoterSet.static({i: Endpoints((("CONTROLLER", f"node{i}", 9093),)) for i in voters}))
    q = QuorumState(local, Endpoints((("CONTROLLER", "node1", 9093),)), control, 1000, 2000, random.Random(0))
    q.initialize(ElectionState.unknown(5), 0, 0)
    return q


def into(q: QuorumState, kind: type) -> QuorumState:
    """Drive a fresh quorum (Unattached, epoch 5) into a state of ``kind``, legally."""
    if kind is Unattached:
        return q
    if kind is Follower:
        q.transition_to_follower(5, 2, ENDPOINTS, 0)
        return q
    q.transition_to_prospective(0)
    if kind is Prospective:
        return q
    q.transition_to_candidate(0)
    if kind is Candidate:
        return q
    q.state.vote_election.record_granted(2, strict=True)
    book = LeaderBookkeeping(LOCAL, q.epoch, 0, 2000, frozenset({1, 2}))
    q.transition_to_leader(0, book)
    if kind is Leader:
        return q
    q.transition_to_resigned((), 0)
    return q


def attempt(q: QuorumState, target: type) -> None:
    """The transition to ``target`` in the next epoch where the rules allow it."""
    epoch = q.epoch
    if target is Unattached:
        q.transition_to_unattached(epoch + 1, None, 0)
    elif target is Follower:
        q.transition_to_follower(epoch + 1, 2, ENDPOINTS, 0)
    elif target is Prospective and isinstance(q.state, Prospective):
        q.add_voted_state(epoch, ReplicaKey(2), 0)     # a prospective casting its vote
    elif target is Prospective:
        q.transition_to_prospective(0)
    elif target is Candidate:
        q.transition_to_candidate(0)
    elif target is Leader:
        book = LeaderBookkeeping(LOCAL, q.epoch, 0, 2000, frozenset({1, 2}))
        if isinstance(q.state, Candidate):
            q.state.vote_election.record_granted(2, strict=True)
        q.transition_to_leader(0, book)
    elif target is Resigned:
        q.transition_to_resigned((), 0)


@pytest.mark.parametrize("source", STATES, ids=lambda s: s.__name__)
@pytest.mark.parametrize("target", STATES, ids=lambda s: s.__name__)
def test_transition_matrix(source, target):
    q = into(quorum(), source)
    assert type(q.state) is source
    legal = target in ALLOWED[source]
    if legal:
        attempt(q, target)
        assert type(q.state) is target
    else:
        with pytest.raises(IllegalTransition) as exc:
            attempt(q, target)
        assert source.__name__ in str(exc.value) and ":" in str(exc.value)


def test_epoch_never_goes_back():
    q = into(quorum(), Follower)
    with pytest.raises(IllegalTransition, match="the epoch never goes back"):
        q.transition_to_follower(4, 2, ENDPOINTS, 0)
    with pytest.raises(IllegalTransition):
        q.transition_to_unattached(4, None, 0)


def test_same_epoch_unattached_only_from_prospective_and_keeps_the_vote():
    q = quorum()
    q.add_voted_state(5, ReplicaKey(2), 0)
    q.transition_to_prospective(0)
    q.transition_to_unattached(5, None, 0)
    assert q.state.voted_key == ReplicaKey(2)
    with pytest.raises(IllegalTransition):
        q.transition_to_unattached(5, None, 0)


def test_a_prospective_that_casts_its_vote_starts_its_pre_vote_over():
    """Kafka's prospectiveAddVotedState builds a new ProspectiveState: the pre-vote grants
    gathered before the vote are dropped, with a new election timer."""
    q = quorum(voters=(1, 2, 3, 4, 5))
    q.transition_to_prospective(0)
    q.state.pre_election.record_granted(3, strict=False)
    q.state.pre_election.record_rejected(4, strict=False)
    q.add_voted_state(5, ReplicaKey(2), 100)
    assert isinstance(q.state, Prospective) and q.state.voted_key == ReplicaKey(2)
    assert (q.state.pre_election.granted, q.state.pre_election.rejected) == ({1}, set())
    assert q.state.election_deadline_ms >= 100 + 1000


def test_one_vote_per_epoch():
    q = quorum()
    q.add_voted_state(5, ReplicaKey(2), 0)
    with pytest.raises(IllegalTransition, match="once per epoch"):
        q.add_voted_state(5, ReplicaKey(3), 0)


def test_leader_needs_a_majority():
    q = into(quorum(voters=(1, 2, 3, 4, 5)), Candidate)
    q.state.vote_election.record_granted(2, strict=True)
    with pytest.raises(IllegalTransition, match="majority"):
        q.transition_to_leader(0, LeaderBookkeeping(LOCAL, q.epoch, 0, 2000, frozenset()))


def test_follower_same_epoch_only_for_more_endpoints_and_same_leader():
    q = into(quorum(), Follower)
    with pytest.raises(IllegalTransition, match="more endpoints"):
        q.transition_to_follower(5, 2, ENDPOINTS, 0)
    q.transition_to_follower(5, 2, Endpoints(ENDPOINTS.listeners + (("OTHER", "h", 1),)), 0)
    q2 = quorum()
    q2.transition_to_prospective(0)
    q2.transition_to_candidate(0)
    q2.transition_to_follower(6, 3, ENDPOINTS, 0)   # another candidate won the epoch
    assert q2.state.voted_key == LOCAL              # our own vote in that epoch is kept


def test_observers_only_move_between_unattached_and_follower():
    q = quorum(voters=(2, 3, 4))
    with pytest.raises(IllegalTransition, match="observers never run"):
        q.transition_to_prospective(0)
    q.transition_to_follower(6, 2, ENDPOINTS, 0)
    q.transition_to_unattached(7, None, 0)


def test_restarted_leader_is_resigned_and_restarted_candidate_is_candidate():
    q = quorum()
    q.initialize(ElectionState.elected(9, 1, LOCAL), 9, 0)
    assert isinstance(q.state, Resigned) and q.epoch == 9
    q = quorum()
    q.initialize(ElectionState.voted(9, LOCAL), 9, 0)
    assert isinstance(q.state, Candidate)
    q = quorum()
    q.initialize(ElectionState.unknown(3), 8, 0)     # the log is ahead of quorum-state
    assert isinstance(q.state, Unattached) and q.epoch == 8


def test_durable_transitions_persist_and_memory_ones_do_not():
    q = quorum()
    q.pending_election = None
    q.transition_to_prospective(0)
    assert q.pending_election is None                 # Prospective: nothing new to persist
    q.transition_to_candidate(0)
    assert q.pending_election == ElectionState.voted(6, LOCAL)
    q.pending_election = None
    q.state.vote_election.record_granted(2, strict=True)
    q.transition_to_leader(0, LeaderBookkeeping(LOCAL, 6, 0, 2000, frozenset({1, 2})))
    assert q.pending_election == ElectionState.elected(6, 1, LOCAL)
    q.pending_election = None
    q.transition_to_resigned((), 0)
    assert q.pending_election is None


def test_vote_tally_strictness():
    election = EpochElection(frozenset({1, 2, 3}))
    election.record_rejected(2, strict=False)
    election.record_granted(2, strict=False)          # pre-votes may change their mind
    assert election.granted == {2}
    with pytest.raises(ValueError):
        election.record_rejected(2, strict=True)       # a persisted vote cannot
