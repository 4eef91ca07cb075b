"""KIP-848 consumer groups without sockets or clocks (kafkawire.broker.consumer_coordinator and
its modules): each test drives ConsumerGroupHeartbeat with a manual timer and checks what Kafka
4.3.1's GroupMetadataManager answers, the member epochs and reconciliation steps, the records
written to ``__consumer_offsets`` and what their replay rebuilds.
"""
from __future__ import annotations

import uuid

import pytest

from kafkawire.broker import consumer_records as rec
from kafkawire.broker.consumer_coordinator import ConsumerCoordinator, ConsumerSettings, TopicsView
from kafkawire.broker.consumer_group import (ASSIGNING, EMPTY, MEMBER_STABLE, RECONCILING, STABLE,
                                             UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS)
from kafkawire.broker.group_coordinator import GroupCoordinator, GroupSettings
from kafkawire.broker.group_offsets import CommitRefused, GroupOffsets
from kafkawire.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest, TopicPartitions
from kafkawire.metadata.group_configs import GroupBounds
from kafkawire.protocol.error_codes import Errors

from .test_group_coordinator import ManualTimer

GROUP = "g"
T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


class Harness:
    """A classic coordinator, its offsets and the consumer coordinator on one manual clock."""

    def __init__(self, topics=(("t1", T1, 4),), group_timeouts=None, **settings):
        self.timer = ManualTimer()
        self.written: list = []
        self.fail_writes = None
        self.view = TopicsView.of(topics)
        self.classic = GroupCoordinator(GroupSettings(initial_rebalance_delay_ms=0), timer=self.timer,
                                        persist=self.persist, now_ms=lambda: self.timer.now)
        self.offsets = GroupOffsets(self.classic)
        self.coordinator = ConsumerCoordinator(self.classic, ConsumerSettings(**{"assignment_interval_ms": 0,
                                                                                 **settings}),
                                               topics=lambda: self.view, group_timeouts=group_timeouts)

    def persist(self, group_id, records):
        if self.fail_writes is not None:
            return self.fail_writes
        self.written.extend(records)
        return Errors.NONE

    def beat(self, member_id, epoch, *, topics=None, owned=None, instance=None, rebalance=-1, assignor=None,
             version=1, group=GROUP):
        request = ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance,
            rebalance_timeout_ms=rebalance, subscribed_topic_names=topics, server_assignor=assignor,
            topic_partitions=None if owned is None else [TopicPartitions(topic_id=t, partitions=sorted(ps))
                                                         for t, ps in owned.items()])
        return self.coordinator.heartbeat(request, version=version, client_id="c", client_host="/127.0.0.1")

    def join(self, member_id, topics=("t1",), **kwargs):
        return self.beat(member_id, 0, topics=list(topics), owned={}, rebalance=kwargs.pop("rebalance", 30_000),
                         **kwargs)

    @property
    def group(self):
        return self.coordinator.groups[GROUP]


def assigned(response) -> dict:
    return {t.topic_id: set(t.partitions) for t in response.assignment.topic_partitions}


# -- validation --

@pytest.mark.parametrize("fields, version, code, message", [
    (dict(member_id="", member_epoch=0), 1, Errors.INVALID_REQUEST, "MemberId can't be empty."),
    (dict(member_id="m", member_epoch=0, group_id=" "), 1, Errors.INVALID_REQUEST, "GroupId can't be empty."),
    (dict(member_id="m", member_epoch=0, instance_id=""), 1, Errors.INVALID_REQUEST, "InstanceId can't be empty."),
    (dict(member_id="m", member_epoch=0, rebalance_timeout_ms=-1), 1, Errors.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    (dict(member_id="m", member_epoch=0, topic_partitions=None), 1, Errors.INVALID_REQUEST,
     "TopicPartitions must be empty when (re-)joining."),
    (dict(member_id="m", member_epoch=0, subscribed_topic_names=None), 1, Errors.INVALID_REQUEST,
     "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
    (dict(member_id="m", member_epoch=-2), 1, Errors.INVALID_REQUEST, "InstanceId can't be null."),
    (dict(member_id="m", member_epoch=-3), 1, Errors.INVALID_REQUEST, "MemberEpoch is invalid."),
    (dict(member_id="m", member_epoch=0, server_assignor="sticky"), 1, Errors.UNSUPPORTED_ASSIGNOR,
     "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
])
def test_invalid_heartbeats_are_refused_with_kafkas_messages(fields, version, code, message):
    h = Harness()
    request = dict(group_id=GROUP, rebalance_timeout_ms=30_000, subscribed_topic_names=["t1"], topic_partitions=[])
    request.update(fields)
    response = h.coordinator.heartbeat(ConsumerGroupHeartbeatRequest(**request), version=version, client_id="c",
                                       client_host="/h")
    assert (response.error_code, response.error_message) == (code, message)
    assert h.written == []


def test_version_0_lets_the_coordinator_pick_the_member_id():
    h = Harness()
    response = h.beat("", 0, topics=["t1"], owned={}, rebalance=30_000, version=0)
    assert response.error_code == Errors.NONE and uuid.UUID(response.member_id)


# -- joining and reconciliation --

def test_a_first_member_gets_every_partition_at_epoch_one_and_the_records_say_so():
    h = Harness()
    response = h.join("m1")
    assert (response.error_code, response.member_epoch, response.heartbeat_interval_ms) == (Errors.NONE, 1, 5000)
    assert assigned(response) == {T1: {0, 1, 2, 3}}
    types = [int.from_bytes(k[:2], "big") for k, _ in h.written]
    # member subscription, group epoch, target member, target epoch, current assignment: Kafka's order
    assert types == [rec.MEMBER_METADATA, rec.GROUP_EPOCH, rec.TARGET_MEMBER, rec.TARGET_METADATA,
                     rec.CURRENT_ASSIGNMENT]
    assert h.group.state == STABLE and h.group.group_epoch == h.group.assignment_epoch == 1


def test_a_partition_moves_only_after_its_owner_revoked_it():
    """The second member waits (UNRELEASED_PARTITIONS) until the first revokes, which it does
    at its own epoch (UNREVOKED_PARTITIONS), then both end at the new epoch."""
    h = Harness()
    h.join("m1")
    second = h.join("m2")
    assert (second.member_epoch, assigned(second)) == (2, {})
    assert h.group.members["m2"].state == UNRELEASED_PARTITIONS and h.group.state == RECONCILING
    keep = h.group.target["m1"][T1]
    first = h.beat("m1", 1, owned={T1: {0, 1, 2, 3}})
    assert (first.member_epoch, assigned(first)) == (1, {T1: keep})
    assert h.group.members["m1"].state == UNREVOKED_PARTITIONS
    assert h.beat("m2", 2).assignment is None            # still held by m1
    first = h.beat("m1", 1, owned={T1: keep})
    assert (first.member_epoch, first.assignment) == (2, None)
    second = h.beat("m2", 2)
    assert assigned(second) == {T1: {0, 1, 2, 3} - keep}
    assert h.group.state == STABLE
    assert all(m.state == MEMBER_STABLE and m.member_epoch == 2 for m in h.group.members.values())


@pytest.mark.parametrize("epoch, owned, code", [
    (5, None, Errors.FENCED_MEMBER_EPOCH),               # ahead of the coordinator
    (1, {T1: {0}}, Errors.NONE),                         # the previous epoch with a subset: answer lost
    (1, {T1: {0, 9}}, Errors.FENCED_MEMBER_EPOCH),       # the previous epoch claiming more
])
def test_member_epochs_are_fenced_as_kafka_fences_them(epoch, owned, code):
    h = Harness()
    h.join("m1")
    h.join("m2")
    h.beat("m1", 1, owned={T1: {0, 1, 2, 3}})
    h.beat("m1", 1, owned={T1: h.group.target["m1"][T1]})      # m1 now at epoch 2, previous 1
    response = h.beat("m1", epoch, owned=owned)
    assert response.error_code == code
    if code == Errors.FENCED_MEMBER_EPOCH:
        assert response.error_message.startswith("The consumer group member has a ")


def test_an_unknown_member_or_group_is_refused():
    h = Harness()
    response = h.beat("m9", 3)
    assert (response.error_code, response.error_message) == (Errors.GROUP_ID_NOT_FOUND, "Consumer group g not found.")
    h.join("m1")
    response = h.beat("m9", 3)
    assert (response.error_code, response.error_message) == (Errors.UNKNOWN_MEMBER_ID,
                                                             "Member m9 is not a member of group g.")


def test_leaving_tombstones_the_member_bumps_the_epoch_and_the_rest_take_over():
    h = Harness()
    h.join("m1")
    h.join("m2")
    h.beat("m1", 1, owned={T1: {0, 1, 2, 3}})
    keep = h.group.target["m1"][T1]
    h.beat("m1", 1, owned={T1: keep})
    h.beat("m2", 2)
    h.written.clear()
    response = h.beat("m2", -1)
    assert (response.error_code, response.member_epoch) == (Errors.NONE, -1)
    assert [(int.from_bytes(k[:2], "big"), v is None) for k, v in h.written] == [
        (rec.CURRENT_ASSIGNMENT, True), (rec.TARGET_MEMBER, True), (rec.MEMBER_METADATA, True),
        (rec.GROUP_EPOCH, False)]
    assert h.group.state == ASSIGNING and set(h.group.members) == {"m1"}
    response = h.beat("m1", 2, owned={T1: keep})
    assert (response.member_epoch, assigned(response)) == (3, {T1: {0, 1, 2, 3}})


def test_a_static_member_leaving_with_minus_two_keeps_its_partitions_for_its_next_member_id():
    h = Harness()
    h.join("a", instance="i-1")
    response = h.beat("a", -2, instance="i-1")
    assert (response.error_code, response.member_epoch) == (Errors.NONE, -2)
    assert h.group.members["a"].assigned == {T1: {0: 0, 1: 0, 2: 0, 3: 0}}   # assignment epochs reset
    response = h.join("b", instance="i-1")
    assert (response.error_code, response.member_epoch, assigned(response)) == (Errors.NONE, 1, {T1: {0, 1, 2, 3}})
    assert set(h.group.members) == {"b"} and h.group.static_members == {"i-1": "b"}
    stale = h.beat("a", 1, instance="i-1")
    assert (stale.error_code, stale.error_message) == (Errors.FENCED_INSTANCE_ID,
                                                       "Static member a with instance id i-1 was fenced by member b.")


def test_a_static_instance_id_in_use_is_unreleased():
    h = Harness()
    h.join("a", instance="i-1")
    response = h.join("b", instance="i-1")
    assert (response.error_code, response.error_message) == (
        Errors.UNRELEASED_INSTANCE_ID, "Static member b with instance id i-1 cannot join the group because the "
                                       "instance id is owned by a member.")


def test_a_silent_member_is_fenced_after_the_session_timeout():
    h = Harness(session_timeout_ms=45_000)
    h.join("m1")
    h.join("m2")
    h.timer.advance(30_000)
    h.beat("m1", 1, owned={T1: {0, 1, 2, 3}})
    h.timer.advance(20_000)                   # m2's last heartbeat was 50 s ago, m1's 20 s
    assert set(h.group.members) == {"m1"}


def test_a_groups_own_configs_set_its_heartbeat_interval_and_session_timeout():
    h = Harness(session_timeout_ms=45_000, group_timeouts=lambda g: (20_000, 2_000) if g == GROUP else (45_000, 5_000))
    assert h.join("m1").heartbeat_interval_ms == 2_000
    assert h.join("m9", group="other").heartbeat_interval_ms == 5_000
    h.timer.advance(20_001)
    assert GROUP not in h.coordinator.groups or not h.group.members     # fenced after the group's 20 s
    assert set(h.coordinator.groups["other"].members) == {"m9"}


def test_the_broker_reads_a_groups_configs_from_its_image_and_clamps_them():
    from types import SimpleNamespace

    from kafkawire.broker.consumer_apis import ConsumerApis
    from kafkawire.metadata.image import MetadataImage
    from kafkawire.net.config import parse_server_config
    config = parse_server_config(
        "process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n")
    image = MetadataImage()
    apis = ConsumerApis(SimpleNamespace(coordinator=Harness().classic,
                                        broker=SimpleNamespace(config=config, image=lambda: image)))
    assert apis.group_timeouts(GROUP) == (45_000, 5_000)
    image.configs[(32, GROUP)] = {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}
    assert apis.group_timeouts(GROUP) == (50_000, 6_000)
    image.configs[(32, GROUP)]["consumer.session.timeout.ms"] = "99000"       # changed in place; above the max
    assert apis.group_timeouts(GROUP) == (60_000, 6_000)
    del image.configs[(32, GROUP)]
    assert apis.group_timeouts(GROUP) == (45_000, 5_000)


def test_a_member_not_revoking_within_its_rebalance_timeout_is_fenced():
    h = Harness()
    h.join("m1", rebalance=10_000)
    h.join("m2")
    h.beat("m1", 1, owned={T1: {0, 1, 2, 3}})          # told to revoke
    h.timer.advance(9_000)
    h.beat("m1", 1, owned={T1: {0, 1, 2, 3}})          # still holding: the timer keeps running
    h.timer.advance(1_000)
    assert set(h.group.members) == {"m2"}


def test_group_consumer_max_size_refuses_a_new_member_only():
    h = Harness(max_size=1)
    h.join("m1")
    response = h.join("m2")
    assert (response.error_code, response.error_message) == (
        Errors.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of 1 members.")
    assert h.beat("m1", 1).error_code == Errors.NONE


def test_a_classic_group_of_the_same_id():
    """An empty classic group gives way (its tombstone written); one with members is not a
    consumer group."""
    h = Harness()
    h.offsets.validate_commit(GROUP, -1, "", None, 9)           # a simple (empty classic) group
    assert GROUP in h.classic.groups
    assert h.beat("m1", 1).error_message == "Group g is not a consumer group."
    assert h.join("m1").error_code == Errors.NONE
    assert GROUP not in h.classic.groups and h.written[0] == (b"\x00\x02\x00\x01g", None)


# -- metadata --

def test_new_partitions_and_deleted_topics_make_a_new_target_assignment():
    h = Harness()
    h.join("m1", topics=("t1", "t2"))
    h.view = TopicsView.of((("t1", T1, 6), ("t2", T2, 1)))
    h.coordinator.topics_changed({"t1", "t2"})
    response = h.beat("m1", 1)
    assert (response.member_epoch, assigned(response)) == (2, {T1: set(range(6)), T2: {0}})
    h.view = TopicsView.of((("t1", T1, 6),))
    h.coordinator.topics_changed({"t2"})
    response = h.beat("m1", 2, owned={T1: set(range(6)), T2: {0}})
    assert (h.group.group_epoch, assigned(response)) == (3, {T1: set(range(6))})


def test_the_assignment_interval_defers_a_new_target_until_it_passed():
    h = Harness(assignment_interval_ms=1000)
    h.timer.now = 10_000
    h.join("m1")
    h.join("m2")
    assert h.group.state == ASSIGNING and h.group.assignment_epoch == 1
    h.timer.now += 1000
    assert h.beat("m2", 0, topics=["t1"], owned={}, rebalance=30_000).member_epoch == 2


# -- persistence --

def test_replaying_the_written_records_rebuilds_the_groups():
    h = Harness()
    h.join("m1", instance="i-1", assignor="range")
    h.join("m2")
    h.beat("m1", 1, owned={T1: {0, 1, 2, 3}})
    again = Harness()
    for key, value in h.written:
        again.offsets.replay(key, value)
    a, b = h.group, again.group
    assert (b.group_epoch, b.assignment_epoch, b.target, b.owners, b.static_members, b.state) == (
        a.group_epoch, a.assignment_epoch, a.target, a.owners, a.static_members, a.state)
    assert b.members == a.members
    for key, value in rec_tombstones(h):
        again.offsets.replay(key, value)
    assert GROUP not in again.coordinator.groups


def rec_tombstones(h):
    from kafkawire.broker.consumer_admin import tombstones
    return tombstones(h.group)


def test_the_records_are_kafkas_bytes():
    """Hand-built from the schemas: int16 type + non-flexible key; int16 version 0 + flexible value."""
    key, value = rec.encode(rec.group_epoch_record("g", 7, 0))
    assert key == b"\x00\x03\x00\x01g"
    assert value == b"\x00\x00" + b"\x00\x00\x00\x07" + b"\x00"       # epoch, no tagged field (hash 0)
    key, value = rec.encode(rec.target_metadata_record("g", 2, 5))
    assert value == b"\x00\x00" + b"\x00\x00\x00\x02" + b"\x01\x00\x08" + (5).to_bytes(8, "big")
    h = Harness()
    h.join("m")
    member = h.group.members["m"]
    key, value = rec.encode(rec.current_assignment_record("g", member))
    assert key == b"\x00\x08\x00\x01g\x00\x01m"
    topic = b"\x02" + T1.bytes + b"\x05" + b"".join(p.to_bytes(4, "big") for p in range(4))
    epochs = b"\x05" + b"\x00\x00\x00\x01" * 4
    assert value == (b"\x00\x00" + (1).to_bytes(4, "big") + (0).to_bytes(4, "big") + b"\x00"
                     + topic + b"\x01\x00" + bytes([len(epochs)]) + epochs + b"\x01" + b"\x00")


# -- offsets and administration --

def test_offset_commits_check_the_member_epoch():
    h = Harness()
    h.join("m1")
    h.join("m2")                                         # m1 at 1 must revoke; the group is at 2
    check = h.offsets.validate_commit(GROUP, 1, "m1", None, 9)
    assert check is None                                 # its current epoch
    with pytest.raises(CommitRefused) as refused:
        h.offsets.validate_commit(GROUP, 3, "m1", None, 9)
    assert refused.value.code == Errors.STALE_MEMBER_EPOCH
    with pytest.raises(CommitRefused) as refused:
        h.offsets.validate_commit(GROUP, 1, "m1", None, 8)
    assert refused.value.code == Errors.UNSUPPORTED_VERSION
    h.beat("m1", 1, owned={T1: h.group.target["m1"][T1]})           # now at 2, its partitions from epoch 1
    check = h.offsets.validate_commit(GROUP, 1, "m1", None, 9)
    kept = min(h.group.target["m1"][T1])
    assert check(T1, kept) == Errors.NONE and check(T2, 0) == Errors.STALE_MEMBER_EPOCH
    with pytest.raises(CommitRefused) as refused:
        h.offsets.validate_commit(GROUP, 1, "nobody", None, 9)
    assert refused.value.code == Errors.UNKNOWN_MEMBER_ID


def test_list_describe_and_delete_see_consumer_groups():
    h = Harness()
    h.join("m1")
    listed = h.offsets.list_groups([], ["consumer"])
    assert [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed] == [
        (GROUP, "consumer", STABLE, "consumer")]
    assert h.offsets.list_groups([], ["classic"]) == []
    described = h.offsets.describe(GROUP, 6)
    assert (described.error_code, described.error_message) == (Errors.GROUP_ID_NOT_FOUND,
                                                               "Group g is not a classic group.")
    assert h.offsets.delete(GROUP) == Errors.NON_EMPTY_GROUP
    h.beat("m1", -1)
    assert h.group.state == EMPTY
    assert h.offsets.delete(GROUP) == Errors.NONE and GROUP not in h.coordinator.groups


def regex_join(h, member_id, regex):
    return h.coordinator.heartbeat(ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id=member_id, member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_regex=regex, topic_partitions=[]), version=1, client_id="c", client_host="/h")


def test_a_regex_subscription_takes_the_topics_it_matches_whole_and_new_ones_later():
    """Resolved off the heartbeat (a timer), at most every 10 s: kafkawire.broker.consumer_regex_refresh,
    tests/broker/test_consumer_regex.py."""
    h = Harness(topics=(("orders", T1, 2), ("orders-eu", T2, 1)))
    regex_join(h, "m1", "orders|orders-new")
    h.timer.advance(0)
    response = regex_join(h, "m1", "orders|orders-new")
    assert assigned(response) == {T1: {0, 1}}                     # "orders-eu" is not a whole match
    t3 = uuid.UUID(int=3)
    h.view = TopicsView.of((("orders", T1, 2), ("orders-eu", T2, 1), ("orders-new", t3, 1)), version=5)
    h.coordinator.topics_changed({"orders-new"}, created=True)
    h.timer.advance(10_001)
    h.beat("m1", 1)
    h.timer.advance(0)
    response = h.beat("m1", 1)
    assert (response.member_epoch, assigned(response)) == (2, {T1: {0, 1}, t3: {0}})
    bad = regex_join(h, "m2", "(")
    assert bad.error_code == Errors.INVALID_REGULAR_EXPRESSION
    assert bad.error_message.startswith("SubscribedTopicRegex `(` is not a valid regular expression: ")
    bad = regex_join(h, "m2", "orders(?!-eu)")                     # fine for Python's re, not for RE2
    assert (bad.error_code, bad.error_message) == (
        Errors.INVALID_REGULAR_EXPRESSION, "SubscribedTopicRegex `orders(?!-eu)` is not a valid regular expression: "
                                           "invalid or unsupported Perl syntax.")


def test_offset_fetch_and_delete_of_a_consumer_group():
    """OffsetFetch v9+ checks the member and its epoch; OffsetDelete keeps the offsets of the
    topics the members subscribe to, whatever the group's state."""
    from kafkawire.broker.consumer_admin import fetch_error
    h = Harness(topics=(("t1", T1, 4), ("t2", T2, 1)))
    h.join("m1")
    assert fetch_error(h.group, None, -1) == Errors.NONE
    assert fetch_error(h.group, "m1", 1) == Errors.NONE
    assert fetch_error(h.group, "m1", 0) == Errors.STALE_MEMBER_EPOCH
    assert fetch_error(h.group, "m9", 1) == Errors.UNKNOWN_MEMBER_ID
    h.offsets.commit(GROUP, [("t1", 0, 5, -1, "", None), ("t2", 0, 7, -1, "", None)])
    code, codes = h.offsets.delete_offsets(GROUP, [("t1", [0]), ("t2", [0])])
    assert (code, codes) == (Errors.NONE, {("t1", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC, ("t2", 0): Errors.NONE})
    assert set(h.offsets.offsets[GROUP]) == {("t1", 0)}


def test_expiry_keeps_subscribed_offsets_and_deletes_an_empty_consumer_group_without_offsets():
    h = Harness(topics=(("t1", T1, 4), ("t2", T2, 1)))
    h.join("m1")
    h.offsets.commit(GROUP, [("t1", 0, 5, -1, "", None), ("t2", 0, 7, -1, "", None)])
    h.timer.advance(2_000)
    h.beat("m1", 1)
    h.offsets.expire(1_000)
    assert set(h.offsets.offsets[GROUP]) == {("t1", 0)} and GROUP in h.coordinator.groups
    h.beat("m1", -1)
    h.written.clear()
    h.offsets.expire(1_000)
    assert GROUP not in h.coordinator.groups and GROUP not in h.offsets.offsets
    assert int.from_bytes(h.written[-1][0][:2], "big") == rec.GROUP_EPOCH and h.written[-1][1] is None


def test_a_restart_replays_the_partitions_batches_into_the_same_groups_and_their_members_must_heartbeat():
    """What a broker's load of __consumer_offsets does (OffsetsTopic._replay over the log's
    batches, then after_load): the group is back, and a member that does not come back within
    the session timeout is fenced."""
    from kafkawire.broker.group_log import OffsetsTopic
    from kafkawire.records.builder import build_batch
    h = Harness()
    h.join("m1")
    h.join("m2")
    h.offsets.commit(GROUP, [("t1", 0, 5, -1, "", None)])
    data = build_batch([(k, v, (), 0) for k, v in h.written])
    again = Harness()
    store = OffsetsTopic(None, again.classic, again.offsets)
    _, records, skipped = store._replay(0, data, 0)
    assert (records, skipped) == (len(h.written), 0)
    again.offsets.after_load()
    assert again.group.members == h.group.members and again.group.target == h.group.target
    assert again.offsets.offsets[GROUP][("t1", 0)].offset == 5
    again.timer.advance(44_000)
    again.beat("m1", 1, owned={T1: {0, 1, 2, 3}})
    again.timer.advance(2_000)
    assert set(again.group.members) == {"m1"}


def test_a_reloaded_member_still_revoking_is_fenced_after_its_rebalance_timeout():
    h = Harness()
    h.join("m1", rebalance=10_000)
    h.join("m2")
    h.beat("m1", 1, owned={T1: {0, 1, 2, 3}})                    # UNREVOKED_PARTITIONS when written
    again = Harness()
    for key, value in h.written:
        again.offsets.replay(key, value)
    again.offsets.after_load()
    assert again.group.members["m1"].state == UNREVOKED_PARTITIONS
    again.timer.advance(10_000)
    assert set(again.group.members) == {"m2"}


def test_a_failed_write_answers_its_error_and_changes_nothing():
    h = Harness()
    h.join("m1")
    h.fail_writes = Errors.NOT_COORDINATOR
    assert h.join("m2").error_code == Errors.NOT_COORDINATOR
    assert set(h.group.members) == {"m1"} and h.group.group_epoch == 1


def consumer_apis_of(h: Harness, image, **config):
    """A ConsumerApis on ``h``'s classic coordinator and ``image``, its broker settings Kafka's
    defaults but for the assignment interval (0) and ``config`` (group_consumer_* attributes)."""
    from types import SimpleNamespace

    from kafkawire.broker.consumer_apis import ConsumerApis
    settings = dict(node_id=1, group_consumer_session_timeout_ms=45_000, group_consumer_heartbeat_interval_ms=5000,
                    group_consumer_max_size=10, group_consumer_assignors=("uniform", "range"),
                    group_consumer_assignment_interval_ms=0, group_consumer_migration_policy="bidirectional",
                    group_consumer_regex_refresh_interval_ms=600_000,
                    group_consumer_min_session_timeout_ms=45_000, group_consumer_max_session_timeout_ms=60_000,
                    group_consumer_min_heartbeat_interval_ms=5000, group_consumer_max_heartbeat_interval_ms=15_000,
                    group_consumer_min_assignment_interval_ms=0, group_consumer_max_assignment_interval_ms=15_000,
                    **{"group_" + name: getattr(GroupBounds(), name) for name in GroupBounds.__dataclass_fields__
                       if name.startswith(("streams_", "share_"))})
    store = SimpleNamespace(coordinator_error=lambda group_id: Errors.NONE)
    apis = SimpleNamespace(coordinator=h.classic, store=store, broker=SimpleNamespace(
        config=SimpleNamespace(**{**settings, **config}), image=lambda: image, authorizer=None))
    return ConsumerApis(apis)


def test_a_groups_own_assignment_interval_paces_its_target_assignments(caplog):
    """consumerGroupAssignmentIntervalMs: the group's consumer.assignment.interval.ms (a GROUP
    config in the image) over the broker's group.consumer.assignment.interval.ms (0 here), clamped
    to group.consumer.max.assignment.interval.ms with a WARN (GroupConfig.evaluate)."""
    from types import SimpleNamespace

    from kafkawire.metadata.image import BROKER_RESOURCE, GROUP_RESOURCE
    h = Harness()
    topic = SimpleNamespace(id=T1, partitions={i: SimpleNamespace(replicas=[]) for i in range(4)})
    configs = {(GROUP_RESOURCE, GROUP): {"consumer.assignment.interval.ms": "3000"}}
    image = SimpleNamespace(finalized_features={"group.version": 1}, topics_by_name={"t1": topic}, brokers={},
                            configs=configs, provenance=SimpleNamespace(offset=0))
    h.coordinator = consumer_apis_of(h, image, group_consumer_max_assignment_interval_ms=5000).coordinator
    h.timer.now = 10_000
    assert h.join("m1").member_epoch == 1                # the first target: at once
    assert h.join("m2").member_epoch == 1                # the group at 2, its target kept at 1
    h.timer.now = 12_999
    assert (h.beat("m2", 1, owned={}).member_epoch, h.group.assignment_epoch) == (1, 1)
    h.timer.now = 13_000
    assert (h.beat("m2", 1, owned={}).member_epoch, h.group.assignment_epoch) == (2, 2)
    configs[(GROUP_RESOURCE, GROUP)] = {"consumer.assignment.interval.ms": "20000"}    # above the broker's 5000
    h.join("m3")
    h.timer.now = 17_999
    assert (h.beat("m3", h.group.members["m3"].member_epoch, owned={}).member_epoch, h.group.assignment_epoch) == (2, 2)
    assert "consumer.assignment.interval.ms=20000 is outside this broker's bounds [0, 5000]; using 5000" in caplog.text
    h.timer.now = 18_000
    assert (h.beat("m3", 2, owned={}).member_epoch, h.group.assignment_epoch) == (3, 3)
    del configs[(GROUP_RESOURCE, GROUP)]                  # the broker's interval again: 0, at every change
    h.join("m4")
    assert h.group.assignment_epoch == h.group.group_epoch == 4
    # group.consumer.assignment.interval.ms as a dynamic broker config (reconfigurable in Kafka):
    # this node's over the cluster default's, clamped to the static bounds with a WARN
    configs[(BROKER_RESOURCE, "")] = {"group.consumer.assignment.interval.ms": "2000"}
    configs[(BROKER_RESOURCE, "1")] = {"group.consumer.assignment.interval.ms": "99999"}
    h.join("m5")
    assert (h.group.group_epoch, h.group.assignment_epoch) == (5, 4)
    assert "group.consumer.assignment.interval.ms=99999 is outside this broker's bounds [0, 5000]; using 5000" in \
        caplog.text
    h.timer.now = 22_999
    assert h.beat("m5", 4, owned={}).member_epoch == 4
    h.timer.now = 23_000
    assert h.beat("m5", 4, owned={}).member_epoch == 5


def test_without_group_version_1_the_apis_are_unsupported_version():
    """Kafka's isConsumerGroupProtocolEnabled: the finalized group.version must be 1 or more."""
    import asyncio
    from types import SimpleNamespace

    from kafkawire.broker.consumer_apis import ConsumerApis
    from kafkawire.messages.consumer_group_describe_request import ConsumerGroupDescribeRequest
    h = Harness()
    features: dict = {}
    image = SimpleNamespace(finalized_features=features, topics_by_name={}, configs={},
                            provenance=SimpleNamespace(offset=0))
    consumer_apis = consumer_apis_of(h, image)
    ctx = SimpleNamespace(api_version=1, client_id="c", peer=("127.0.0.1", 1))
    request = ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id="m", member_epoch=0, rebalance_timeout_ms=1000,
                                            subscribed_topic_names=[], topic_partitions=[])
    assert asyncio.run(consumer_apis.heartbeat(ctx, request)).error_code == Errors.UNSUPPORTED_VERSION
    described = asyncio.run(consumer_apis.describe(ctx, ConsumerGroupDescribeRequest(group_ids=[GROUP])))
    assert described.groups[0].error_code == Errors.UNSUPPORTED_VERSION
    features["group.version"] = 1
    assert asyncio.run(consumer_apis.heartbeat(ctx, request)).error_code == Errors.NONE
    described = asyncio.run(consumer_apis.describe(ctx, ConsumerGroupDescribeRequest(group_ids=[GROUP, "x"])))
    assert [(g.error_code, g.group_state, g.error_message) for g in described.groups] == [
        (Errors.NONE, STABLE, None), (Errors.GROUP_ID_NOT_FOUND, "", "Group x not found.")]


def test_a_static_member_leaving_with_minus_one_is_gone_and_its_instance_id_is_free():
    h = Harness()
    h.join("a", instance="i-1")
    response = h.beat("a", -1, instance="i-1")
    assert (response.error_code, response.member_epoch) == (Errors.NONE, -1)
    assert h.group.members == {} and h.group.static_members == {}
    assert h.join("b", instance="i-1").member_epoch == 3              # joined afresh: epochs 1, 2 (leave), 3


@pytest.mark.parametrize("regex, refused", [
    ("a(?=b)", "invalid or unsupported Perl syntax"), ("a(?<!b)", "invalid named capture"),
    ("(?>x)", "invalid or unsupported Perl syntax"), (r"(a)\1", "invalid escape sequence"),
    ("a*+", "invalid nested repetition operator"), ("a{2}+", "invalid nested repetition operator"),
    ("^rx-.*", None), ("(?P<n>x)", None), ("[*+]+", None), (r"a\++", None), ("[]+]+", None), (r"[\]*+]y", None),
])
def test_regex_constructs_re2_refuses_are_found_outside_character_classes(regex, refused):
    """Refused with RE2J 1.8's description (its jar's answers), what a bracket holds excepted."""
    from kafkawire.broker.consumer_regex import regex_error
    assert regex_error(regex) == refused


def test_a_classic_leave_group_removes_consumer_members_as_an_admin_does():
    """Kafka's classicGroupLeaveToConsumerGroup: each named member (by id, or by instance id) is
    answered on its own, the members found are fenced with one epoch bump."""
    h = Harness()
    h.join("m1")
    h.join("m2", instance="i-2")
    h.join("m3")
    error, results = h.coordinator.classic_leave(GROUP, [("m1", None), ("", "i-2"), ("x", None), ("", "i-9"),
                                                         ("m3", "i-2")])
    assert error == Errors.NONE
    assert [code for _, _, code in results] == [Errors.NONE, Errors.NONE, Errors.UNKNOWN_MEMBER_ID,
                                                Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID]
    assert set(h.group.members) == {"m3"} and h.group.group_epoch == 4


def test_transactional_offset_commits_to_a_consumer_group_are_checked_as_kafka_checks_them():
    """TxnOffsetCommit to a consumer group (ConsumerGroup.validateOffsetCommit with isTransactional,
    OffsetMetadataManager.validateTransactionalOffsetCommit): no member, generation or instance is
    not checked; a member needs no OffsetCommit version 9; a newer epoch, or an older one whose
    partition is not assigned from that epoch, refuses the whole request with ILLEGAL_GENERATION."""
    from kafkawire.broker.group_txn_offsets import TxnOffsets
    h = Harness()
    h.join("m1")
    h.join("m2")                                         # m1 at 1 must revoke; the group is at 2
    txn = TxnOffsets(h.offsets, persist=None, partition_of=lambda group_id: 0)
    txn.validate(GROUP, -1, "", None, [(T1, 0)])         # the producer names no member: accepted
    txn.validate(GROUP, 1, "m1", None, [(T1, 0)])        # its current epoch, TxnOffsetCommit's version
    with pytest.raises(CommitRefused) as refused:
        txn.validate(GROUP, 3, "m1", None, [(T1, 0)])
    assert refused.value.code == Errors.ILLEGAL_GENERATION
    h.beat("m1", 1, owned={T1: h.group.target["m1"][T1]})           # now at 2, its partitions from epoch 1
    kept = min(h.group.target["m1"][T1])
    txn.validate(GROUP, 1, "m1", None, [(T1, kept)])
    with pytest.raises(CommitRefused) as refused:
        txn.validate(GROUP, 1, "m1", None, [(T1, kept), (T2, 0)])
    assert refused.value.code == Errors.ILLEGAL_GENERATION
    with pytest.raises(CommitRefused) as refused:
        txn.validate(GROUP, 1, "nobody", None, [(T1, kept)])
    assert refused.value.code == Errors.UNKNOWN_MEMBER_ID


def test_unloading_drops_the_partitions_consumer_groups_with_their_timers_and_keeps_the_others():
    """GroupMetadataManager.onUnloaded (the runtime cancels the partition's timers): the consumer
    groups of a partition no longer led here go, with their members' session and rebalance timers
    and a regex resolution scheduled, so no timer fences a member of the group a reload brings
    back; the other partitions' groups stay as they were."""
    from kafkawire.broker.consumer_admin import unload
    from kafkawire.broker.consumer_coordinator import session_key
    from kafkawire.broker.consumer_regex_refresh import regex_key
    h = Harness(topics=(("t1", T1, 4), ("t2", T2, 2)))
    h.join("m1")
    h.join("m2", group="other")
    regex_join(h, "m3", "t.*")                  # same group: a resolution scheduled
    ours = {session_key(GROUP, "m1"), session_key(GROUP, "m3"), regex_key(GROUP)}
    assert ours <= set(h.timer.due) and h.coordinator.regexes.pending == {GROUP}
    unload(h.coordinator, lambda group_id: group_id == GROUP)
    assert list(h.coordinator.groups) == ["other"]
    assert h.coordinator.regexes.pending == set()
    assert [key for key in h.timer.due if GROUP in key.split("-")] == []
    assert session_key("other", "m2") in h.timer.due
