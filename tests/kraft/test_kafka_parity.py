"""Cases of Kafka's KafkaRaftClient*Test that need a state the datadriven commands cannot build
(see tests/kraft/KAFKA_PARITY.md for where every case of the audit is covered)."""
from kafkawire.raft.io import Tick
from kafkawire.raft.states import Prospective, Unattached
from kafkawire.raft.types import ElectionState

from .datadriven import Case
from .interaction import InteractionEnv


def _env(text: str) -> InteractionEnv:
    env = InteractionEnv()
    for line in text.strip().split("\n"):
        from .datadriven import parse_command
        command, args, kwargs = parse_command(line)
        env.handle(Case(0, command, args, kwargs))
    return env


def _restart_with_election(env: InteractionEnv, node_id: int, election: ElectionState):
    node = env.nodes[node_id]
    node.crash()
    node.store.election = election
    env._apply(node, node.boot(env.now), [])
    return node


def _expire(env: InteractionEnv, node) -> None:
    node.core.state.election_deadline_ms = env.now
    env._apply(node, node.core.step(Tick(env.now)), [])


def test_prospective_that_loses_keeps_a_leader_known_without_endpoints():
    # Kafka: KafkaRaftClientPreVoteTest.testProspectiveLosesElectionHasLeaderButMissingEndpoint
    # Voter 1's quorum-state names leader 7 of epoch 2, a replica its voter set has no
    # endpoints for. It times out into Prospective, loses the pre-vote by timeout, and is
    # Unattached still knowing leader 7 (Kafka: isUnattached, hasLeader), then Prospective
    # again knowing it.
    env = _env("cluster voters=(1,2)")
    node = _restart_with_election(env, 1, ElectionState.elected(2, 7))
    assert isinstance(node.core.state, Unattached) and node.core.state.leader_id == 7
    _expire(env, node)
    assert isinstance(node.core.state, Prospective) and node.core.state.leader_id == 7
    env.queue.clear()                                   # the pre-votes are lost
    env.now += 5000                                     # past its election timeout
    out: list[str] = []
    env._apply(node, node.core.step(Tick(env.now)), out)
    # Lost by timeout: Unattached in the same epoch with leader 7 (Kafka: isUnattached and
    # hasLeader); its timer being out, Prospective again at once (Kafka's next poll), still
    # knowing leader 7.
    assert out == ["1: Prospective(e=2, leader=7) -> Unattached(e=2, leader=7)",
                   "1: Unattached(e=2, leader=7) -> Prospective(e=2, leader=7)"], out


def _take_request(env: InteractionEnv, src: int, name: str):
    """Remove and return the first queued request of type ``name`` sent by ``src``."""
    for item in env.queue:
        if item[0] == "request" and item[1] == src and type(item[4].body).__name__ == name:
            env.queue.remove(item)
            return item[4]
    raise AssertionError(f"node {src} sent no {name}: {[type(q[4].body).__name__ for q in env.queue]}")


def test_update_voter_response_naming_a_new_leader_moves_the_follower():
    # Kafka: KafkaRaftClientReconfigTest.testUpdateVoterResponseCausesEpochChange
    # Voter 2 (kraft.version 0: voters send UpdateRaftVoter after their first fetch) gets an
    # answer naming leader 3 in epoch 2: it follows 3 in epoch 2, and its next Fetch goes to
    # 3 with epoch 2.
    from kafkawire.messages import update_raft_voter_response as up_resp
    from kafkawire.raft.io import ResponseReceived
    from kafkawire.raft.simulate.world import address_of
    from kafkawire.raft.states import Follower
    env = _env("cluster voters=(1,2,3) kraft-version=0\nexpire 1")
    for _ in range(20):                                 # deliver round by round until it is sent
        if any(q[1] == 2 and type(q[4].body).__name__ == "UpdateRaftVoterRequest" for q in env.queue):
            break
        env.handle(Case(0, "stabilize", [], {"rounds": "1"}))
    request = _take_request(env, 2, "UpdateRaftVoterRequest")
    env.queue = [q for q in env.queue if q[1] != 2]      # drop 2's other requests in flight
    host, port = address_of(3)
    answer = up_resp.UpdateRaftVoterResponse(error_code=0, current_leader=up_resp.CurrentLeader(
        leader_id=3, leader_epoch=2, host=host, port=port))
    node = env.nodes[2]
    out: list[str] = []
    env._apply(node, node.core.step(ResponseReceived(env.now, request.correlation_id, request.destination,
                                                     answer)), out)
    assert out[0] == "2: Follower(e=1, leader=1, voted=1) -> Follower(e=2, leader=3)", out
    state = node.core.state
    assert isinstance(state, Follower) and (state.epoch, state.leader_id) == (2, 3)
    fetch = _take_request(env, 2, "FetchRequest")
    assert fetch.destination == 3
    assert fetch.body.topics[0].partitions[0].current_leader_epoch == 2


def test_update_voter_request_counts_as_contact_for_check_quorum():
    # Kafka: UpdateVoterHandler.handleUpdateVoterRequest (updateCheckQuorumForFollowingVoter);
    # the audit's testUpdateVoterResetsCheckQuorumTimer is not in Kafka 4.3.1's test sources.
    # Leader 1 hears no fetch for almost a check-quorum period; voter 2's UpdateRaftVoter
    # renews it, so the leader does not resign when the old period ends.
    from kafkawire.raft.states import Leader
    # The followers' fetches parked at the leader complete (and count) within a tick; after
    # that, their next fetches are lost: nobody fetches from now on.
    env = _env("cluster voters=(1,2,3)\nelect 1\nstabilize\ntick ms=1000")
    env.queue.clear()
    leader = env.nodes[1].core.state
    assert not leader.book.fetched_voters
    assert isinstance(leader, Leader)
    old_deadline = leader.book.check_quorum_deadline_ms
    env.now = old_deadline - 1
    out = env.handle(Case(0, "inject", ["1", "update-voter"], {"from": "2", "epoch": "1"}))
    assert out.splitlines()[-1] == "1->2 UpdateRaftVoterResponse leader=1 epoch=1", out
    assert leader.book.check_quorum_deadline_ms == env.now + leader.book.check_quorum_timeout_ms
    env.now = old_deadline + 1
    env._apply(env.nodes[1], env.nodes[1].core.step(Tick(env.now)), [])
    assert isinstance(env.nodes[1].core.state, Leader)


def test_follower_does_not_fetch_the_bootstrap_checkpoint():
    # Kafka: KafkaRaftClientReconfigTest.testFollowerDoesNotRequestLeaderBootstrapSnapshot
    # Follower 2 of leader 1 (epoch 1) fetches from offset 0. Were the answer to name the 0-0
    # bootstrap checkpoint as the snapshot to load, 2 sends no FetchSnapshot: its next request
    # is a Fetch from offset 0 again.
    from kafkawire.protocol.error_codes import Errors
    from kafkawire.raft import rpc
    from kafkawire.raft.io import ResponseReceived
    from kafkawire.raft.types import OffsetAndEpoch
    env = _env("cluster voters=(1,2)\nset-epoch 2 epoch=1 leader=1")
    fetch = _take_request(env, 2, "FetchRequest")
    assert fetch.body.topics[0].partitions[0].fetch_offset == 0
    answer = rpc.fetch_response(int(Errors.NONE), high_watermark=0, leader_id=1, epoch=1,
                                snapshot_id=OffsetAndEpoch(0, 0))
    node = env.nodes[2]
    env._apply(node, node.core.step(ResponseReceived(env.now, fetch.correlation_id, fetch.destination, answer)), [])
    env.now += 50
    env._apply(node, node.core.step(Tick(env.now)), [])
    sent = [type(q[4].body).__name__ for q in env.queue if q[0] == "request" and q[1] == 2]
    assert "FetchSnapshotRequest" not in sent, sent
    again = _take_request(env, 2, "FetchRequest")
    assert again.body.topics[0].partitions[0].fetch_offset == 0
