"""KIP-345's static members of a classic group without sockets or clocks
(kafkawire.broker.group_static, the coordinator's validate_member paths): what Kafka 4.3.1's
GroupMetadataManager and ClassicGroup do when a member with a ``group.instance.id`` restarts.
"""
from __future__ import annotations

import pytest

from kafkawire.broker.group_offsets import CommitRefused
from kafkawire.broker.group_records import decode_record
from kafkawire.broker.group_state import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE
from kafkawire.messages.heartbeat_request import HeartbeatRequest
from kafkawire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kafkawire.messages.leave_group_request import LeaveGroupRequest, MemberIdentity
from kafkawire.messages.sync_group_request import SyncGroupRequest, SyncGroupRequestAssignment
from kafkawire.protocol.error_codes import Errors

from .test_group_coordinator import GROUP, Harness

RANGE = (("range", b"r"),)


def join(h: Harness, instance: str | None, member_id: str = "", *, version: int = 9, protocols=RANGE,
         session: int = 10_000) -> list:
    answers = []
    h.coordinator.join(JoinGroupRequest(group_id=GROUP, session_timeout_ms=session, rebalance_timeout_ms=30_000,
                                        member_id=member_id, group_instance_id=instance, protocol_type="consumer",
                                        protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols]),
                       version=version, client_id="c", client_host="/127.0.0.1", respond=answers.append)
    return answers


def sync(h: Harness, member_id: str, generation: int, instance: str | None, assignments=None) -> list:
    answers = []
    h.coordinator.sync(SyncGroupRequest(group_id=GROUP, generation_id=generation, member_id=member_id,
                                        group_instance_id=instance,
                                        assignments=[SyncGroupRequestAssignment(member_id=m, assignment=a)
                                                     for m, a in (assignments or {}).items()]),
                       respond=answers.append)
    return answers


def heartbeat(h: Harness, member_id: str, instance: str | None, generation: int = 1) -> int:
    return h.coordinator.heartbeat(HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id=member_id,
                                                    group_instance_id=instance)).error_code


def stable_static_pair(h: Harness, session: int = 10_000) -> tuple[str, str]:
    """Static members i-a (the leader) and i-b in generation 1, Stable, assigned A and B."""
    a_join, b_join = join(h, "i-a", session=session), join(h, "i-b", session=session)
    assert a_join == b_join == []                        # static members join at once, no MEMBER_ID_REQUIRED
    h.timer.advance(0)
    a, b = a_join[0].member_id, b_join[0].member_id
    assert a.startswith("i-a-") and b.startswith("i-b-") and h.group.leader_id == a
    sync(h, b, 1, "i-b")
    sync(h, a, 1, "i-a", {a: b"A", b: b"B"})
    assert h.group.state == STABLE
    return a, b


def test_a_restarted_static_follower_takes_its_place_in_a_stable_group_without_a_rebalance():
    """Same protocol, Stable: the new id answers the current generation at once, keeps the old
    assignment, and the group is written with the new id under the same instance id."""
    h = Harness()
    a, b = stable_static_pair(h)
    (answer,) = join(h, "i-b")
    new_b = answer.member_id
    assert answer.error_code == Errors.NONE and new_b not in (a, b) and new_b.startswith("i-b-")
    assert (answer.generation_id, answer.leader, answer.members, answer.skip_assignment) == (1, a, [], False)
    assert h.group.state == STABLE and h.group.generation_id == 1 and h.group.static_members["i-b"] == new_b
    (synced,) = sync(h, new_b, 1, "i-b")
    assert (synced.error_code, synced.assignment) == (Errors.NONE, b"B")
    _, _, value = decode_record(*h.written[-1])
    assert [(m.member_id, m.group_instance_id, m.assignment) for m in value.members] == \
        [(a, "i-a", b"A"), (new_b, "i-b", b"B")]
    assert heartbeat(h, new_b, "i-b") == Errors.NONE and heartbeat(h, a, "i-a") == Errors.NONE


def test_the_replaced_member_id_is_fenced_on_heartbeat_sync_commit_and_leave():
    """ClassicGroup.validateMember: an instance id now mapped to another member id is
    FENCED_INSTANCE_ID; an old id sent without its instance id is just unknown."""
    h = Harness()
    a, b = stable_static_pair(h)
    join(h, "i-b")
    assert heartbeat(h, b, "i-b") == Errors.FENCED_INSTANCE_ID
    assert heartbeat(h, b, None) == Errors.UNKNOWN_MEMBER_ID
    assert heartbeat(h, a, "i-nobody") == Errors.UNKNOWN_MEMBER_ID
    assert sync(h, b, 1, "i-b")[0].error_code == Errors.FENCED_INSTANCE_ID
    assert join(h, "i-b", b)[0].error_code == Errors.FENCED_INSTANCE_ID
    with pytest.raises(CommitRefused) as refused:
        h.offsets.validate_commit(GROUP, 1, b, "i-b", version=9)
    assert refused.value.code == Errors.FENCED_INSTANCE_ID
    left = h.coordinator.leave(LeaveGroupRequest(group_id=GROUP, members=[
        MemberIdentity(member_id=b, group_instance_id="i-b")]), version=5)
    assert left.members[0].error_code == Errors.FENCED_INSTANCE_ID and h.group.state == STABLE


def test_a_restarted_static_leader_is_told_to_skip_the_assignment_from_join_group_v9():
    """v9+: the new leader id, the members and skip_assignment; before v9 the old leader id is
    named, so the restarted leader acts as a follower. No rebalance either way."""
    h = Harness()
    a, b = stable_static_pair(h)
    (answer,) = join(h, "i-a")
    new_a = answer.member_id
    assert (answer.leader, answer.skip_assignment, answer.generation_id) == (new_a, True, 1)
    assert {m.member_id: m.group_instance_id for m in answer.members} == {new_a: "i-a", b: "i-b"}
    (old_client,) = join(h, "i-a", version=8)
    assert (old_client.leader, old_client.members, old_client.skip_assignment) == (new_a, [], False)
    assert h.group.leader_id == old_client.member_id and h.group.state == STABLE and h.group.generation_id == 1


def test_a_static_member_rejoining_with_another_preferred_protocol_rebalances_the_group():
    """Stable, but the protocol the group would select changes: a rebalance, as Kafka does."""
    h = Harness()
    join(h, "i-a", protocols=(("range", b"r"), ("roundrobin", b"rr")))
    h.timer.advance(0)
    assert h.group.protocol_name == "range"
    (answer,) = join(h, "i-a", protocols=(("roundrobin", b"rr"), ("range", b"r")))
    assert (answer.error_code, answer.generation_id, answer.protocol_name) == (Errors.NONE, 2, "roundrobin")
    assert h.group.state == COMPLETING_REBALANCE


def test_a_static_member_rejoining_in_completing_rebalance_rebalances_and_its_old_sync_is_fenced():
    """CompletingRebalance: the leader may be assigning to the old id, so Kafka rebalances; the
    old id's parked SyncGroup answers FENCED_INSTANCE_ID."""
    h = Harness()
    a_join, b_join = join(h, "i-a"), join(h, "i-b")
    h.timer.advance(0)
    b = b_join[0].member_id
    parked = sync(h, b, 1, "i-b")
    assert parked == [] and h.group.state == COMPLETING_REBALANCE
    new_join = join(h, "i-b")
    assert parked[0].error_code == Errors.FENCED_INSTANCE_ID
    assert h.group.state == PREPARING_REBALANCE and new_join == []
    (a_again,) = join(h, "i-a", a_join[0].member_id)
    assert a_again.generation_id == 2 and new_join[0].generation_id == 2 and new_join[0].member_id != b


def test_a_static_member_rejoining_during_a_rebalance_fences_its_old_parked_join():
    """PreparingRebalance: the old id's parked JoinGroup answers FENCED_INSTANCE_ID and the new
    id (the leader now) takes part in the rebalance under way."""
    h = Harness()
    a, b = stable_static_pair(h)
    old_parked = join(h, "i-a", a)                    # the leader rejoins: PreparingRebalance
    assert old_parked == [] and h.group.state == PREPARING_REBALANCE
    new_join = join(h, "i-a")
    assert (old_parked[0].error_code, old_parked[0].member_id) == (Errors.FENCED_INSTANCE_ID, a)
    assert new_join == [] and h.group.state == PREPARING_REBALANCE
    (b_answer,) = join(h, "i-b", b)
    new_a = new_join[0].member_id
    assert new_join[0].generation_id == b_answer.generation_id == 2 and b_answer.leader == new_a
    assert {m.member_id for m in new_join[0].members} == {new_a, b}


def test_a_static_member_missing_a_rebalance_is_kept_and_its_session_timeout_removes_it():
    """Kafka's completeClassicGroupJoin drops only the dynamic members that did not rejoin; a
    static member is removed by its session timeout (then the group rebalances)."""
    h = Harness()
    a, b = stable_static_pair(h, session=60_000)
    join(h, "i-a", a)                                 # the leader rejoins: PreparingRebalance
    h.timer.advance(30_000)                           # the rebalance timeout: i-b did not rejoin
    assert h.group.generation_id == 2 and b in h.group.members and h.group.static_members["i-b"] == b
    quiet = Harness()
    a, b = stable_static_pair(quiet)
    quiet.timer.advance(9_999)
    assert heartbeat(quiet, a, "i-a") == Errors.NONE
    quiet.timer.advance(1)                            # i-b's session (10 s) ends
    assert set(quiet.group.members) == {a} and "i-b" not in quiet.group.static_members
    assert quiet.group.state == PREPARING_REBALANCE


def test_a_failed_write_of_the_replacement_keeps_the_old_member_id():
    """Kafka reverts the replacement when the group cannot be written: the old id stays valid
    and the joining instance gets the mapped error with no member id."""
    h = Harness()
    a, b = stable_static_pair(h)
    h.fail_writes = Errors.NOT_COORDINATOR
    (answer,) = join(h, "i-b")
    assert (answer.error_code, answer.member_id, answer.leader) == (Errors.NOT_COORDINATOR, "", a)
    assert h.group.static_members["i-b"] == b and set(h.group.members) == {a, b}
    assert heartbeat(h, b, "i-b") == Errors.NONE and h.group.awaiting_join_count == 0


def test_static_members_survive_a_reload_and_a_restart_after_it_still_replaces_without_a_rebalance():
    """GroupMetadataValue keeps each member's group_instance_id: a coordinator loading
    __consumer_offsets knows the instances and fences the replaced ids."""
    h = Harness()
    a, b = stable_static_pair(h)
    loaded = Harness()
    for key, value in h.written:
        loaded.offsets.replay(key, value)
    assert loaded.group.static_members == {"i-a": a, "i-b": b}
    (answer,) = join(loaded, "i-b")
    assert answer.error_code == Errors.NONE and loaded.group.generation_id == 1 and loaded.group.state == STABLE
    assert heartbeat(loaded, b, "i-b") == Errors.FENCED_INSTANCE_ID
