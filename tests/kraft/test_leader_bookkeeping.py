"""LeaderBookkeeping's check-quorum timer around voter-set changes (Kafka's LeaderState)."""
import uuid

from kafkawire.raft.leader import LeaderBookkeeping
from kafkawire.raft.types import Endpoints, ReplicaKey
from kafkawire.raft.voters import VoterNode, VoterSet

ENDPOINTS = Endpoints((("CONTROLLER", "h", 1),))


def voters(*ids):
    return VoterSet.of(VoterNode(ReplicaKey(i, uuid.UUID(int=i)), ENDPOINTS, 0, 1) for i in ids)


def book(now=0):
    b = LeaderBookkeeping(ReplicaKey(1, uuid.UUID(int=1)), epoch=1, epoch_start_offset=0, fetch_timeout_ms=2000,
                          granting_voters=frozenset({1}))
    b.start(voters(1), now)
    return b


def test_a_sole_voter_never_expires_and_keeps_its_timer_fresh():
    b = book()
    assert not b.check_quorum_expired(10_000)
    assert b.check_quorum_deadline_ms == 10_000 + 3000


def test_the_first_added_voter_gets_a_whole_period_to_fetch():
    b = book()
    b.check_quorum_expired(1000)            # last poll while alone: deadline 4000
    b.update_voters(voters(1, 2), now_ms=3990)
    assert not b.check_quorum_expired(4010)   # the stale deadline would have expired here
    assert b.check_quorum_deadline_ms == 3990 + 3000
    assert b.check_quorum_expired(7000)       # no fetch from voter 2 in a whole period: resign


def test_a_fetch_from_the_added_voter_resets_the_timer():
    b = book()
    b.update_voters(voters(1, 2), now_ms=100)
    b.update_replica(ReplicaKey(2, uuid.UUID(int=2)), 0, 5, now_ms=2500)
    assert b.check_quorum_deadline_ms == 2500 + 3000
    assert not b.check_quorum_expired(5000)
