"""Where the raft core's reconfiguration answers disagree with Kafka's (found while writing
the datadriven files; see the issue note). Each test states Kafka's behaviour, with the
class and rule it comes from, and is marked xfail(strict=True) with what this core does
instead: once the core is fixed the test passes, strict xfail turns that into a failure, and
the marker must go.
"""
from __future__ import annotations

import pytest

from .datadriven import Case, parse_command
from .interaction import InteractionEnv


def drive(env: InteractionEnv, *lines: str) -> str:
    """Run interaction commands; the output of the last one."""
    out = ""
    for line in lines:
        out = env.handle(Case(0, *parse_command(line)))
    return out


def elected(cluster: str = "cluster voters=(1,2,3)") -> InteractionEnv:
    """A cluster whose node 1 was elected and whose messages were all delivered."""
    env = InteractionEnv()
    drive(env, cluster, "elect 1", "stabilize")
    return env


def static_quorum_upgraded_while_voter_3_was_down() -> InteractionEnv:
    """Three static voters; 3 is down while 1 and 2 upgrade to kraft.version 1 and 1 snapshots
    past the upgrade and drops its log; then 1 removes voter 2, a change that needs 3's fetch
    to commit (new voters {1, 3}); then 3 restarts: its log ends before the upgrade, so it
    still counts the static voters and must catch up through FetchSnapshot."""
    env = elected("cluster voters=(1,2,3) kraft-version=0 clean-log-on-snapshot=true")
    drive(env, "crash 3", "inject 1 update-features level=1", "stabilize", "propose 1 count=2", "stabilize",
          "run ms=100", "snapshot 1")
    assert "append 5..5" in drive(env, "inject 1 remove-voter voter=2")
    drive(env, "restart 3")
    return env


def test_a_voter_refused_on_update_raft_voter_keeps_fetching():
    """Kafka sends UpdateVoter once per update-voter period and fetches in between; resending at
    the retry backoff starved the fetch a pending voter change needed (simulator seeds 882, 1440,
    2304 and 2829 at 800 events failed liveness that way before the fix)."""
    env = static_quorum_upgraded_while_voter_3_was_down()
    out = drive(env, "run ms=3000")
    assert "3: install snapshot (1,5)" in out
    assert "1->9 RemoveRaftVoterResponse" in out.split("\n")   # the removal commits under {1, 3}
    assert out.count("3->1 UpdateRaftVoter") <= 2


@pytest.mark.xfail(strict=True, reason=(
    "this core answers UpdateRaftVoter only once the new VotersRecord commits (PendingChange.ack_when_committed); "
    "Kafka's UpdateVoterHandler replies right after appending it ('Reply immediately and don't wait for the "
    "change to commit'), so the voter, which waits for the answer, can fetch and help commit it"))
def test_update_raft_voter_is_answered_as_soon_as_the_record_is_appended():
    env = elected()
    out = drive(env, "inject 1 update-voter from=2 epoch=1 host=node2-new").split("\n")
    assert out[1:] == ["1: append 3..3 epoch=1", "1->2 UpdateRaftVoterResponse leader=1 epoch=1"]


@pytest.mark.xfail(strict=True, reason=(
    "the UpdateRaftVoterResponse answered on commit (reconfig._finish) has no CurrentLeader, so it reads "
    "leader -1, epoch -1 on the wire; Kafka's RaftUtil.updateVoterResponse always names the leader, its epoch "
    "and its endpoint"))
def test_every_update_raft_voter_answer_names_the_leader():
    env = elected()
    drive(env, "inject 1 update-voter from=2 epoch=1 host=node2-new")
    answers = [line for line in drive(env, "stabilize").split("\n") if "UpdateRaftVoterResponse" in line]
    assert answers == ["1->2 UpdateRaftVoterResponse leader=1 epoch=1"]


@pytest.mark.xfail(strict=True, reason=(
    "this core answers RemoveRaftVoter and UpdateRaftVoter without a directory id with VOTER_NOT_FOUND, and an "
    "AddRaftVoter of a voter id without an endpoint on the quorum's listener with DUPLICATE_VOTER; Kafka's "
    "KafkaRaftClient.handle{Remove,Update,Add}VoterRequest refuse a missing directory id or listener with "
    "INVALID_REQUEST before any voter-set check"))
def test_a_voter_key_without_directory_id_or_listener_is_an_invalid_request():
    env = elected()
    assert drive(env, "inject 1 remove-voter voter=2 dir=none").endswith("RemoveRaftVoterResponse err=INVALID_REQUEST")
    assert drive(env, "inject 1 update-voter from=2 epoch=1 dir=none").endswith(
        "UpdateRaftVoterResponse err=INVALID_REQUEST leader=1 epoch=1")
    assert drive(env, "inject 1 add-voter voter=2 listener=OTHER").endswith("AddRaftVoterResponse err=INVALID_REQUEST")


@pytest.mark.xfail(strict=True, reason=(
    "at kraft.version 0 this core keeps any UpdateRaftVoter for the upgrade (Reconfig.learned) without checks: "
    "a voter without a directory id ends up in the upgraded voter set with none, which Kafka's "
    "LeaderState.maybeAppendUpgradedKRaftVersion refuses ('Directory id must be known for all of the voters'); "
    "Kafka refuses such an UpdateRaftVoter with INVALID_REQUEST (KafkaRaftClient.handleUpdateVoterRequest), and "
    "one whose kraft.version range leaves out the finalized 0 also with INVALID_REQUEST (UpdateVoterHandler)"))
def test_a_static_quorum_only_learns_valid_voter_updates():
    env = elected("cluster voters=(1,2,3) kraft-version=0")
    assert drive(env, "inject 1 update-voter from=2 epoch=1 kraft=(1,1)").endswith(
        "UpdateRaftVoterResponse err=INVALID_REQUEST leader=1 epoch=1")
    assert drive(env, "inject 1 update-voter from=2 epoch=1 dir=none").endswith(
        "UpdateRaftVoterResponse err=INVALID_REQUEST leader=1 epoch=1")
    drive(env, "inject 1 update-features level=1", "stabilize")
    assert "2/-" not in drive(env, "voters 1")


def test_removing_the_last_voter_is_voter_not_found():
    env = elected("cluster voters=(1)")
    assert drive(env, "inject 1 remove-voter voter=1").endswith("RemoveRaftVoterResponse err=VOTER_NOT_FOUND")


def test_an_upgrade_cut_short_by_a_leader_change_is_answered_not_controller():
    env = elected("cluster voters=(1,2,3) kraft-version=0")
    drive(env, "partition (1) (2,3)", "inject 1 update-features level=1")
    answers = [line for line in drive(env, "run ms=4000").split("\n") if line.startswith("1->9 ")]
    assert answers == ["1->9 UpdateFeaturesResponse err=NOT_CONTROLLER"]
