"""A replica that is the only voter becomes leader as it starts, with no election timeout to wait
(Kafka's KafkaRaftClient.initialize: an only voter that starts Unattached, Follower or Resigned
goes to Prospective at once, and a single voter wins its pre-vote and vote alone). A one-node
combined kafkawire waited 1 to 2 s (controller.quorum.election.timeout.ms plus its jitter)
before its broker could register. With other voters the replica still waits.
"""
from __future__ import annotations

import uuid

import pytest

from kafkawire.raft.config import RaftConfig
from kafkawire.raft.core import RaftCore
from kafkawire.raft.simulate.store import MemoryLogStore
from kafkawire.raft.states import Leader, Unattached
from kafkawire.raft.types import ElectionState, Endpoints
from kafkawire.raft.voters import VoterSet


def _endpoints(i: int) -> Endpoints:
    return Endpoints((("CONTROLLER", f"node{i}", 9093),))


def started(voters, election):
    config = RaftConfig(node_id=1, directory_id=uuid.UUID(int=1), cluster_id="c", endpoints=_endpoints(1),
                        static_voters=VoterSet.static({i: _endpoints(i) for i in voters}))
    core = RaftCore(config, MemoryLogStore(), election, now_ms=0, seed=1)
    core.start()
    return core


@pytest.mark.parametrize("election, epoch", [
    (None, 1),                                      # a fresh log
    (ElectionState.unknown(4), 5),                  # Unattached in epoch 4
    (ElectionState.elected(3, 1), 4),               # it led epoch 3: restarts Resigned, leads epoch 4
], ids=["fresh", "unattached", "restarted-leader"])
def test_the_only_voter_leads_as_it_starts(election, epoch):
    core = started((1,), election)
    assert isinstance(core.state, Leader) and core.epoch == epoch


def test_one_of_three_voters_waits_for_its_election_timeout():
    core = started((1, 2, 3), None)
    assert isinstance(core.state, Unattached) and core.epoch == 0
