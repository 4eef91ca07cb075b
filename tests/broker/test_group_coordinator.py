"""The classic group protocol without sockets or clocks (kafkawire.broker.group_coordinator and
group_offsets): each test drives a GroupCoordinator with a manual timer and checks what Kafka
4.3.1's GroupMetadataManager and OffsetMetadataManager answer, and the records they write.
"""
from __future__ import annotations

import struct

import pytest

from kafkawire.broker.group_coordinator import GroupCoordinator, GroupSettings
from kafkawire.broker.group_offsets import CommitRefused, GroupOffsets
from kafkawire.broker.group_records import decode_record, java_string_hash, partition_for
from kafkawire.broker.group_state import (COMPLETING_REBALANCE, EMPTY, PREPARING_REBALANCE, STABLE, ClassicGroup,
                                          InvalidTransition, subscription_topics)
from kafkawire.messages.heartbeat_request import HeartbeatRequest
from kafkawire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kafkawire.messages.leave_group_request import LeaveGroupRequest, MemberIdentity
from kafkawire.messages.sync_group_request import SyncGroupRequest, SyncGroupRequestAssignment
from kafkawire.protocol.error_codes import Errors

GROUP = "g"


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0 naming ``topics`` (what a Java consumer's metadata starts with)."""
    data = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        data += struct.pack(">h", len(topic)) + topic.encode()
    return data + struct.pack(">i", -1)            # user data: null


class ManualTimer:
    """The coordinator's timers, run when the test moves the clock."""

    def __init__(self):
        self.now = 0
        self.due: dict[str, tuple[int, object]] = {}

    def schedule(self, key, delay_ms, callback):
        self.due[key] = (self.now + delay_ms, callback)

    def cancel(self, key):
        self.due.pop(key, None)

    def advance(self, ms: int) -> None:
        end = self.now + ms
        while True:
            ready = [(at, key) for key, (at, _) in self.due.items() if at <= end]
            if not ready:
                break
            at, key = min(ready)
            self.now = at
            _, callback = self.due.pop(key)
            callback()
        self.now = end


class Harness:
    def __init__(self, **settings):
        self.timer = ManualTimer()
        self.written: list = []
        self.fail_writes = None
        self.coordinator = GroupCoordinator(GroupSettings(**{"initial_rebalance_delay_ms": 0, **settings}),
                                            timer=self.timer, persist=self.persist, now_ms=lambda: self.timer.now)
        self.offsets = GroupOffsets(self.coordinator)

    def persist(self, group_id, records):
        if self.fail_writes is not None:
            return self.fail_writes
        self.written.extend(records)
        return Errors.NONE

    def join(self, member_id="", *, version=9, protocols=(("range", b"r"),), session=10_000, rebalance=30_000,
             client="c"):
        answers = []
        request = JoinGroupRequest(group_id=GROUP, session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                                   member_id=member_id, protocol_type="consumer",
                                   protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols])
        self.coordinator.join(request, version=version, client_id=client, client_host="/127.0.0.1",
                              respond=answers.append)
        return answers

    def new_member(self, **kwargs) -> str:
        """KIP-394's two steps: the member id, then the JoinGroup with it (parked)."""
        first, = self.join(**kwargs)
        assert first.error_code == Errors.MEMBER_ID_REQUIRED
        self.parked = self.join(first.member_id, **kwargs)
        return first.member_id

    def sync(self, member_id, generation, assignments=None):
        answers = []
        self.coordinator.sync(SyncGroupRequest(group_id=GROUP, generation_id=generation, member_id=member_id,
                                               assignments=[SyncGroupRequestAssignment(member_id=m, assignment=a)
                                                            for m, a in (assignments or {}).items()]),
                              respond=answers.append)
        return answers

    def heartbeat(self, member_id, generation) -> int:
        return self.coordinator.heartbeat(HeartbeatRequest(group_id=GROUP, generation_id=generation,
                                                           member_id=member_id)).error_code

    @property
    def group(self) -> ClassicGroup:
        return self.coordinator.groups[GROUP]


def stable_group_of_two(h: Harness, rebalance: int = 30_000):
    a = h.new_member(rebalance=rebalance)
    a_join = h.parked
    h.timer.advance(0)                       # the initial delay (0 here) ends: generation 1 with a
    assert a_join[0].generation_id == 1
    h.sync(a, 1, {a: b"A"})
    b = h.new_member(rebalance=rebalance)
    b_join = h.parked
    assert h.group.state == PREPARING_REBALANCE and b_join == []
    a_rejoin = h.join(a, rebalance=rebalance)
    (a_answer,), (b_answer,) = a_rejoin, b_join
    assert a_answer.generation_id == b_answer.generation_id == 2
    a_sync = h.sync(a, 2, {a: b"A2", b: b"B2"})
    b_sync = h.sync(b, 2)
    assert (a_sync[0].assignment, b_sync[0].assignment) == (b"A2", b"B2")
    return a, b


def test_a_join_without_member_id_from_v4_is_member_id_required_and_before_v4_joins_at_once():
    """KIP-394: from JoinGroup v4 an unknown member first gets MEMBER_ID_REQUIRED with its id."""
    h = Harness()
    first, = h.join(version=4, client="app")
    assert first.error_code == Errors.MEMBER_ID_REQUIRED and first.member_id.startswith("app-")
    assert h.group.state == EMPTY and first.member_id in h.group.pending_join_members
    old = Harness()
    assert old.join(version=3) == []                     # parked: a member of the rebalance at once
    assert old.group.state == PREPARING_REBALANCE and len(old.group.members) == 1


def test_the_initial_rebalance_waits_for_the_delay_and_takes_every_member_that_joined_meanwhile():
    """group.initial.rebalance.delay.ms: members joining an Empty group within the delay are in
    its first generation; each new one extends the wait (up to the rebalance timeout)."""
    h = Harness(initial_rebalance_delay_ms=3000)
    h.new_member()
    a_join = h.parked
    h.timer.advance(2000)
    h.new_member()
    b_join = h.parked
    h.timer.advance(1500)                                # 3.5 s: b's join extended the wait by a delay
    assert a_join == [] and b_join == []
    h.timer.advance(2500)                                # 6 s
    assert a_join[0].generation_id == b_join[0].generation_id == 1
    assert len(a_join[0].members) + len(b_join[0].members) == 2        # the leader's answer lists both
    assert h.group.state == COMPLETING_REBALANCE


def test_the_leaders_assignment_is_written_and_each_member_gets_its_part():
    h = Harness()
    a, b = stable_group_of_two(h)
    assert h.group.state == STABLE
    kind, key, value = decode_record(*h.written[-1])
    assert (kind, key.group, value.generation, value.protocol, value.leader) == ("group", GROUP, 2, "range", a)
    assert {m.member_id: m.assignment for m in value.members} == {a: b"A2", b: b"B2"}


def test_a_follower_syncing_first_waits_for_the_leaders_assignment():
    h = Harness()
    a = h.new_member()
    b = h.new_member()
    h.timer.advance(0)
    follower = h.sync(b, 1)
    assert follower == [] and h.group.state == COMPLETING_REBALANCE
    h.sync(a, 1, {a: b"A", b: b"B"})
    assert follower[0].assignment == b"B" and h.group.state == STABLE


def test_heartbeats_during_a_rebalance_are_rebalance_in_progress_and_a_member_not_rejoining_is_dropped():
    h = Harness()
    a, b = stable_group_of_two(h, rebalance=5000)
    c = h.new_member(rebalance=5000)
    assert h.heartbeat(a, 2) == Errors.REBALANCE_IN_PROGRESS
    h.join(a, rebalance=5000)
    h.timer.advance(5000)                                  # the rebalance timeout: b never rejoined
    assert set(h.group.members) == {a, c} and h.group.generation_id == 3
    assert h.heartbeat(b, 3) == Errors.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a, 2) == Errors.ILLEGAL_GENERATION


def test_a_member_whose_session_times_out_is_removed_and_the_group_rebalances():
    h = Harness()
    a, b = stable_group_of_two(h)
    for _ in range(2):
        h.timer.advance(4000)
        assert h.heartbeat(a, 2) == Errors.NONE           # a keeps its session; b is silent
    h.timer.advance(4000)                                 # b's 10 s session is over
    assert b not in h.group.members and h.group.state == PREPARING_REBALANCE
    assert h.heartbeat(a, 2) == Errors.REBALANCE_IN_PROGRESS


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout():
    h = Harness()
    a = h.new_member(rebalance=2000)
    b = h.new_member(rebalance=2000)
    h.timer.advance(0)
    h.sync(a, 1, {a: b"A", b: b"B"})
    h.timer.advance(2000)
    assert set(h.group.members) == {a} and h.group.state in (PREPARING_REBALANCE, COMPLETING_REBALANCE)


def test_leave_group_rebalances_the_rest_and_the_last_member_leaving_empties_the_group():
    h = Harness()
    a, b = stable_group_of_two(h)
    left = h.coordinator.leave(LeaveGroupRequest(group_id=GROUP, members=[MemberIdentity(member_id=b),
                                                                           MemberIdentity(member_id="nobody")]),
                               version=5)
    assert [(m.member_id, m.error_code) for m in left.members] == [(b, Errors.NONE), ("nobody", Errors.UNKNOWN_MEMBER_ID)]
    assert h.group.state == PREPARING_REBALANCE
    (rejoined,) = h.join(a)
    assert rejoined.generation_id == 3 and h.group.state == COMPLETING_REBALANCE
    last = h.coordinator.leave(LeaveGroupRequest(group_id=GROUP, member_id=a), version=1)
    assert last.error_code == Errors.NONE and h.group.state == EMPTY and h.group.generation_id == 4
    _, _, value = decode_record(*h.written[-1])
    assert (value.generation, value.members, value.protocol) == (4, [], None)


def test_leave_group_by_instance_id_removes_the_member_with_that_instance_id():
    """KIP-345's admin removal: LeaveGroup naming a group.instance.id without member id."""
    h = Harness()
    request = JoinGroupRequest(group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
                               group_instance_id="i-1", protocol_type="consumer",
                               protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")])
    h.coordinator.join(request, version=5, client_id="c", client_host="/h", respond=lambda r: None)
    h.timer.advance(0)
    left = h.coordinator.leave(LeaveGroupRequest(group_id=GROUP, members=[
        MemberIdentity(member_id="", group_instance_id="i-1"), MemberIdentity(member_id="", group_instance_id="i-2")]),
        version=4)
    assert [m.error_code for m in left.members] == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert not h.group.members


def test_join_group_refusals_carry_kafkas_error_codes():
    h = Harness()
    assert h.join(session=1000)[0].error_code == Errors.INVALID_SESSION_TIMEOUT
    assert h.join("someone")[0].error_code == Errors.UNKNOWN_MEMBER_ID        # no such group
    h.new_member()
    h.timer.advance(0)
    assert h.join(protocols=(("other", b""),))[0].error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    small = Harness(max_size=1)
    small.new_member()
    small.timer.advance(0)
    assert small.join()[0].error_code == Errors.GROUP_MAX_SIZE_REACHED


def test_offset_commits_are_validated_against_the_group_as_kafka_does():
    h = Harness()
    with pytest.raises(CommitRefused) as refused:
        h.offsets.validate_commit(GROUP, 1, "m", None, version=9)
    assert refused.value.code == Errors.GROUP_ID_NOT_FOUND
    with pytest.raises(CommitRefused) as refused:
        h.offsets.validate_commit(GROUP, 1, "m", None, version=8)
    assert refused.value.code == Errors.ILLEGAL_GENERATION
    a = h.new_member()
    h.timer.advance(0)
    with pytest.raises(CommitRefused) as refused:
        h.offsets.validate_commit(GROUP, 1, a, None, version=9)          # CompletingRebalance
    assert refused.value.code == Errors.REBALANCE_IN_PROGRESS
    h.sync(a, 1, {a: b""})
    for generation, member, code in ((0, a, Errors.ILLEGAL_GENERATION), (1, "x", Errors.UNKNOWN_MEMBER_ID),
                                     (-1, "", Errors.UNKNOWN_MEMBER_ID)):
        with pytest.raises(CommitRefused) as refused:
            h.offsets.validate_commit(GROUP, generation, member, None, version=9)
        assert refused.value.code == code
    h.offsets.validate_commit(GROUP, 1, a, None, version=9)


def test_a_simple_consumers_commit_creates_an_empty_group_and_metadata_over_the_limit_is_refused():
    h = Harness(offset_metadata_max_bytes=10)
    h.offsets.validate_commit("simple", -1, "", None, version=9)
    codes = h.offsets.commit("simple", [("t", 0, 42, 3, "ok", None), ("t", 1, 7, -1, "x" * 11, None)])
    assert codes == {("t", 0): Errors.NONE, ("t", 1): Errors.OFFSET_METADATA_TOO_LARGE}
    assert h.coordinator.groups["simple"].state == EMPTY
    error, found = h.offsets.fetch("simple", [("t", 0), ("t", 1)])
    assert error == Errors.NONE and [(t, p, v and (v.offset, v.leader_epoch, v.metadata)) for t, p, v in found] == \
        [("t", 0, (42, 3, "ok")), ("t", 1, None)]


def test_a_failed_write_fails_the_commit_and_stores_nothing():
    h = Harness()
    h.fail_writes = Errors.NOT_COORDINATOR
    assert h.offsets.commit("simple", [("t", 0, 1, -1, "", None)]) == {("t", 0): Errors.NOT_COORDINATOR}
    assert h.offsets.fetch("simple", None) == (Errors.NONE, [])


def test_replaying_the_written_records_restores_offsets_and_groups():
    """What a coordinator loads from __consumer_offsets at start: the last record of each key wins,
    a tombstone deletes."""
    h = Harness()
    a, b = stable_group_of_two(h)
    h.offsets.commit(GROUP, [("t", 0, 10, 1, "m", None), ("t", 1, 20, 1, "", None)])
    h.offsets.commit(GROUP, [("t", 0, 11, 1, "", None)])
    h.offsets.commit("gone", [("t", 0, 5, -1, "", None)])
    h.coordinator.groups["gone"] = ClassicGroup("gone", now_ms=0)
    assert h.offsets.delete("gone") == Errors.NONE
    loaded = Harness()
    for key, value in h.written:
        loaded.offsets.replay(key, value)
    assert {k: v.offset for k, v in loaded.offsets.offsets[GROUP].items()} == {("t", 0): 11, ("t", 1): 20}
    assert "gone" not in loaded.coordinator.groups and not loaded.offsets.offsets.get("gone")
    group = loaded.group
    assert (group.state, group.generation_id, group.leader_id, set(group.members)) == (STABLE, 2, a, {a, b})
    assert group.members[b].assignment == b"B2"


def test_expiry_drops_old_offsets_of_empty_and_simple_groups_then_the_groups_without_offsets():
    """offsets.retention.minutes: an empty group's offsets expire counting from when it became
    Empty, a simple group's from each commit; a group with members keeps its offsets; an Empty
    group left without offsets is deleted. Tombstones are written for each."""
    h = Harness()
    a, b = stable_group_of_two(h)
    h.offsets.commit(GROUP, [("t", 0, 1, -1, "", None)])
    h.offsets.validate_commit("simple", -1, "", None, version=9)
    h.offsets.commit("simple", [("t", 0, 1, -1, "", None)])
    h.timer.advance(1000)
    h.offsets.commit("simple", [("t", 1, 1, -1, "", None)])
    h.coordinator.groups["idle"] = ClassicGroup("idle", now_ms=h.timer.now, protocol_type="consumer")
    for member in (a, b):          # the stable group keeps heartbeating
        h.heartbeat(member, 2)
    h.written.clear()
    assert h.offsets.expire(retention_ms=1000) == 2          # "simple" t-0, and the idle group without offsets
    assert set(h.offsets.offsets["simple"]) == {("t", 1)} and "idle" not in h.coordinator.groups
    assert set(h.offsets.offsets[GROUP]) == {("t", 0)}
    assert [decode_record(*r)[0] for r in h.written] == ["offset", "group"]
    assert all(value is None for _, value in h.written)
    h.coordinator.leave(LeaveGroupRequest(group_id=GROUP, members=[MemberIdentity(member_id=a),
                                                                    MemberIdentity(member_id=b)]), version=5)
    assert h.group.state == EMPTY
    h.timer.now += 1000
    h.offsets.expire(retention_ms=1000)
    assert GROUP not in h.coordinator.groups and GROUP not in h.offsets.offsets and "simple" not in h.offsets.offsets


def test_a_replayed_commit_of_an_unknown_group_makes_a_simple_group():
    h = Harness()
    h.offsets.commit("simple", [("t", 0, 9, -1, "", None)])
    loaded = Harness()
    for key, value in h.written:
        loaded.offsets.replay(key, value)
    assert loaded.coordinator.groups["simple"].state == EMPTY and loaded.offsets.fetch("simple", None)[1][0][2].offset == 9


def test_offset_delete_removes_the_offsets_of_topics_the_members_do_not_subscribe_to():
    """OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for a topic a member's subscription names, a
    tombstone for the others; an unknown group is GROUP_ID_NOT_FOUND."""
    h = Harness()
    a = h.new_member(protocols=(("range", subscription("in-use")),))
    h.timer.advance(0)
    h.sync(a, 1, {a: b""})
    h.offsets.commit(GROUP, [("in-use", 0, 5, -1, "", None), ("old", 0, 7, -1, "", None)])
    h.written.clear()
    error, codes = h.offsets.delete_offsets(GROUP, [("in-use", [0]), ("old", [0, 1])])
    assert error == Errors.NONE
    assert codes == {("in-use", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC, ("old", 0): Errors.NONE, ("old", 1): Errors.NONE}
    assert [(decode_record(*r)[1].topic, r[1]) for r in h.written] == [("old", None)]
    assert set(h.offsets.offsets[GROUP]) == {("in-use", 0)}
    assert h.offsets.delete_offsets("unknown", [("old", [0])]) == (Errors.GROUP_ID_NOT_FOUND, {})


def test_offset_delete_refuses_a_group_with_members_of_another_protocol_type():
    h = Harness()
    request = JoinGroupRequest(group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
                               protocol_type="connect", protocols=[JoinGroupRequestProtocol(name="x", metadata=b"")])
    h.coordinator.join(request, version=3, client_id="c", client_host="/h", respond=lambda r: None)
    assert h.offsets.delete_offsets(GROUP, [("t", [0])]) == (Errors.NON_EMPTY_GROUP, {})


def test_a_stable_groups_offsets_of_topics_it_no_longer_subscribes_to_expire():
    h = Harness()
    a = h.new_member(protocols=(("range", subscription("kept")),))
    h.timer.advance(0)
    h.sync(a, 1, {a: b""})
    h.offsets.commit(GROUP, [("kept", 0, 1, -1, "", None), ("dropped", 0, 1, -1, "", None)])
    h.timer.advance(1000)
    h.heartbeat(a, 1)
    assert h.offsets.expire(retention_ms=1000) == 1
    assert set(h.offsets.offsets[GROUP]) == {("kept", 0)} and h.group.state == STABLE


def test_subscriptions_are_read_as_their_version_0_prefix_and_bad_bytes_are_refused():
    assert subscription_topics(subscription("a", "bb")) == ["a", "bb"]
    assert subscription_topics(struct.pack(">hi", 3, 1) + struct.pack(">h", 1) + b"t" + b"later fields") == ["t"]
    for bad in (b"", struct.pack(">hi", 0, 1), struct.pack(">hi", 0, 1) + struct.pack(">h", 9) + b"x",
                struct.pack(">hi", 0, 2**31 - 1)):
        with pytest.raises(ValueError):
            subscription_topics(bad)


def test_delete_groups_refuses_a_group_with_members_and_an_unknown_one():
    h = Harness()
    stable_group_of_two(h)
    assert h.offsets.delete(GROUP) == Errors.NON_EMPTY_GROUP
    assert h.offsets.delete("unknown") == Errors.GROUP_ID_NOT_FOUND


def test_groups_land_on_the_partition_kafka_picks_from_the_ids_java_hash_code():
    assert java_string_hash("abc") == 96354
    assert java_string_hash("polygenelubricants") == -(1 << 31)          # Utils.abs maps it to 0
    assert partition_for("abc", 50) == 4 and partition_for("polygenelubricants", 50) == 0


def test_a_transition_kafkas_group_states_do_not_allow_is_refused():
    group = ClassicGroup(GROUP, now_ms=0)
    with pytest.raises(InvalidTransition):
        group.transition_to(STABLE, 1)
