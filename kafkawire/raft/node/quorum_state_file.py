"""ElectionState <-> the `quorum-state` file's QuorumStateData, as Kafka's ElectionState
toQuorumStateData/fromQuorumStateData and FileQuorumStateStore do it.

The data version follows kraft.version (KRaftVersion.quorumStateVersion): version 0 lists the
static voters and has no voted directory id; version 1 has the voted directory id and no voters.
"""
from __future__ import annotations

from kafkawire.messages.quorum_state_data import QuorumStateData, Voter
from kafkawire.raft.types import ElectionState, ReplicaKey

__all__ = ["election_to_quorum_state", "election_from_quorum_state"]


def election_to_quorum_state(election: ElectionState, kraft_version: int) -> tuple[QuorumStateData, int]:
    version = 0 if kraft_version == 0 else 1
    data = QuorumStateData(
        leader_epoch=election.epoch,
        leader_id=-1 if election.leader_id is None else election.leader_id,
        voted_id=-1 if election.voted_key is None else election.voted_key.id)
    if version == 0:
        data.current_voters = [Voter(voter_id=i) for i in sorted(election.voters)]
    else:
        data.voted_directory_id = (election.voted_key.wire_directory_id if election.voted_key is not None
                                   else ReplicaKey(0).wire_directory_id)
    return data, version


def election_from_quorum_state(data: QuorumStateData) -> ElectionState:
    voted = None
    if data.voted_id >= 0:
        voted = ReplicaKey.of(data.voted_id, getattr(data, "voted_directory_id", None))
    voters = frozenset(v.voter_id for v in (data.current_voters or ()))
    return ElectionState(data.leader_epoch, None if data.leader_id < 0 else data.leader_id, voted, voters)
