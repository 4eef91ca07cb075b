"""Classic members in KIP-848 consumer groups and the online conversions between classic and
consumer groups (kafkawire.broker.consumer_classic, consumer_migration) without sockets or clocks:
what Kafka 4.3.1's GroupMetadataManager answers a classic client (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup) in a consumer group, the upgrade by a ConsumerGroupHeartbeat, the downgrade when the
last consumer-protocol member leaves, and ``group.consumer.migration.policy``.
"""
from __future__ import annotations

import struct

import pytest

from kafkawire.broker import consumer_records as rec
from kafkawire.broker.consumer_admin import commit_validator, describe
from kafkawire.broker.consumer_classic import ClassicMembers
from kafkawire.broker.consumer_protocol import decode_assignment, decode_subscription, encode_assignment
from kafkawire.broker.group_records import GROUP_METADATA_TYPE
from kafkawire.broker.group_state import PREPARING_REBALANCE
from kafkawire.messages.heartbeat_request import HeartbeatRequest
from kafkawire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kafkawire.messages.sync_group_request import SyncGroupRequest
from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.protocol.error_codes import Errors

from .test_consumer_protocol import GROUP, T1, Harness, assigned
from .test_group_coordinator import Harness as ClassicHarness
from .test_group_coordinator import stable_group_of_two


def subscription(topics, owned=(), version=1) -> bytes:
    """A ConsumerProtocolSubscription, hand-built from its schema (v1: topics, user data, owned)."""
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">i", -1)
    if version >= 1:
        out += struct.pack(">i", len(owned))
        for topic, partitions in owned:
            out += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", len(partitions))
            out += b"".join(struct.pack(">i", p) for p in partitions)
    return out


class Mixed(Harness):
    """The consumer-group harness with classic requests."""

    def __init__(self, **settings):
        super().__init__(**settings)
        self.classic_members = ClassicMembers(self.coordinator)

    def cjoin(self, member_id="", owned=(), *, version=9, protocol="range", session=10_000, rebalance=30_000,
              instance=None):
        request = JoinGroupRequest(group_id=GROUP, session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                                   member_id=member_id, group_instance_id=instance, protocol_type="consumer",
                                   protocols=[JoinGroupRequestProtocol(name=protocol,
                                                                       metadata=subscription(["t1"], owned))])
        return self.classic_members.join(self.group, request, version=version, client_id="classic",
                                         client_host="/127.0.0.1")

    def new_classic(self, **kwargs):
        first = self.cjoin(**kwargs)
        assert first.error_code == Errors.MEMBER_ID_REQUIRED
        return self.cjoin(first.member_id, **kwargs)

    def csync(self, member_id, generation, protocol="range"):
        return self.classic_members.sync(self.group, SyncGroupRequest(
            group_id=GROUP, generation_id=generation, member_id=member_id, protocol_type="consumer",
            protocol_name=protocol, assignments=[]))

    def cbeat(self, member_id, generation):
        return self.classic_members.heartbeat(self.group, HeartbeatRequest(
            group_id=GROUP, generation_id=generation, member_id=member_id)).error_code


def partitions_of(sync_response) -> set:
    partitions, user_data = decode_assignment(sync_response.assignment)
    assert user_data is None
    return set(partitions.get("t1", ()))


# -- classic members in a consumer group --

def test_a_classic_member_joins_a_consumer_group_and_gets_its_share_from_the_server_assignor():
    h = Mixed()
    h.join("m1")                                            # a consumer-protocol member, every partition
    joined = h.new_classic()
    assert (joined.error_code, joined.protocol_type, joined.protocol_name, joined.leader, joined.members) == (
        Errors.NONE, "consumer", "range", "", [])
    c = joined.member_id
    assert h.group.members[c].classic.session_timeout_ms == 10_000
    # m1 still owns what c is to get: c's generation is the group epoch, with nothing yet
    assert joined.generation_id == 2 and partitions_of(h.csync(c, 2)) == set()
    m1 = h.beat("m1", 1, owned={T1: {0, 1, 2, 3}})        # m1 revokes half
    assert assigned(m1) == {T1: {0, 1}}
    h.beat("m1", 1, owned={T1: {0, 1}})
    assert h.cbeat(c, 2) == Errors.REBALANCE_IN_PROGRESS    # its partitions are free: rejoin to take them
    again = h.cjoin(c)
    assert again.generation_id == 2 and partitions_of(h.csync(c, 2)) == {2, 3}
    assert h.cbeat(c, 2) == Errors.NONE
    described = describe(h.group, {T1: "t1"}, "uniform")
    assert {m.member_id: m.member_type for m in described.members} == {"m1": 1, c: 0}


def test_a_new_target_makes_the_classic_member_rejoin_and_revoke_through_its_owned_partitions():
    h = Mixed()
    h.join("m0", topics=("t2",))                           # a member of a topic that does not exist
    c = h.new_classic().member_id
    assert partitions_of(h.csync(c, 2)) == {0, 1, 2, 3}
    h.join("m2")                                            # epoch 3: half of c's partitions go to m2
    assert h.cbeat(c, 2) == Errors.REBALANCE_IN_PROGRESS
    assert h.csync(c, 2).error_code == Errors.REBALANCE_IN_PROGRESS
    still = h.cjoin(c, owned=[("t1", [0, 1, 2, 3])])       # a cooperative client keeps what it owns
    assert still.generation_id == 2 and h.group.members[c].revoking
    kept = partitions_of(h.csync(c, 2))                      # revoking: told to rejoin by its heartbeat
    assert len(kept) == 2
    assert h.cbeat(c, 2) == Errors.REBALANCE_IN_PROGRESS
    done = h.cjoin(c, owned=[("t1", sorted(kept))])
    assert done.generation_id == 3 and partitions_of(h.csync(c, 3)) == kept
    assert assigned(h.beat("m2", 3, owned={})) == {T1: {0, 1, 2, 3} - kept}


@pytest.mark.parametrize("change, code", [
    (dict(generation=7), Errors.ILLEGAL_GENERATION),
    (dict(protocol="roundrobin"), Errors.INCONSISTENT_GROUP_PROTOCOL),
    (dict(member_id="nobody"), Errors.UNKNOWN_MEMBER_ID),
    (dict(member_id="m1"), Errors.UNKNOWN_MEMBER_ID),          # a consumer-protocol member
])
def test_sync_group_errors_are_kafkas(change, code):
    h = Mixed()
    h.join("m1")
    c = h.new_classic().member_id
    generation = h.group.members[c].member_epoch
    response = h.csync(change.get("member_id", c), change.get("generation", generation),
                       protocol=change.get("protocol", "range"))
    assert response.error_code == code


def test_join_refusals_and_the_disabled_policy():
    h = Mixed(migration_policy="disabled")
    h.join("m1")
    assert h.cjoin().error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    h = Mixed(max_size=1)
    h.join("m1")
    assert h.cjoin().error_code == Errors.GROUP_MAX_SIZE_REACHED
    h = Mixed()
    h.join("m1")
    c = h.new_classic(protocol="range").member_id
    # a protocol the group's classic members do not all support
    assert h.cjoin(protocol="roundrobin", version=3).error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert h.cjoin(c, version=3).error_code == Errors.NONE


def test_a_classic_member_not_syncing_or_not_heartbeating_is_fenced():
    h = Mixed()
    h.join("m1")
    c = h.new_classic(rebalance=20_000, session=10_000).member_id
    h.timer.advance(20_000)                                 # no SyncGroup within the rebalance timeout
    assert c not in h.group.members
    c = h.new_classic(rebalance=60_000, session=10_000).member_id
    h.csync(c, h.group.members[c].member_epoch)
    h.beat("m1", h.group.members["m1"].member_epoch)
    h.timer.advance(9_000)
    h.beat("m1", h.group.members["m1"].member_epoch)
    assert c in h.group.members
    h.timer.advance(1_000)                                  # its own session timeout, not the group's
    assert c not in h.group.members


def test_the_classic_metadata_is_written_and_replayed():
    h = Mixed()
    h.join("m1")
    c = h.new_classic().member_id
    key, value = rec.encode(rec.member_record(GROUP, h.group.members[c]))
    decoded = rec.decode(5, key, value)[2]
    assert decoded.classic_member_metadata.session_timeout_ms == 10_000
    assert decoded.classic_member_metadata.supported_protocols[0].name == "range"
    again = Mixed()
    for k, v in h.written:
        again.offsets.replay(k, v)
    assert again.group.members == h.group.members


def test_offset_commits_of_a_classic_member_take_old_versions_and_answer_illegal_generation():
    h = Mixed()
    h.join("m0", topics=("t2",))
    c = h.new_classic().member_id
    h.csync(c, 2)
    assert commit_validator(h.group, c, 2, 2) is None              # OffsetCommit v2 is fine for it
    with pytest.raises(Exception) as refused:
        commit_validator(h.group, c, 5, 2)
    assert refused.value.code == Errors.ILLEGAL_GENERATION


# -- upgrade --

def classic_group_of_two():
    """A Stable classic group whose two members were assigned t1 by their leader."""
    ch = ClassicHarness()
    h = Mixed()
    h.classic, h.offsets = ch.coordinator, ch.offsets
    h.written = ch.written
    h.coordinator.classic = ch.coordinator
    ch.coordinator.consumer_groups, ch.coordinator.consumer = h.coordinator.groups, h.coordinator
    h.timer = ch.timer
    sub = subscription(["t1"])
    a, b = stable_group_of_two(ch)
    group = ch.coordinator.groups[GROUP]
    for member_id, partitions in ((a, [0, 1]), (b, [2, 3])):
        group.members[member_id].protocols = [("range", sub)]
        group.members[member_id].assignment = encode_assignment({"t1": partitions}, 1)
    return h, ch, a, b


def test_a_consumer_member_joining_a_classic_group_upgrades_it_with_kafkas_records():
    h, ch, a, b = classic_group_of_two()
    generation = ch.group.generation_id
    before = len(h.written)
    response = h.join("m1")
    assert response.error_code == Errors.NONE and GROUP not in h.classic.groups
    records = h.written[before:]
    types = [int.from_bytes(k[:2], "big") for k, _ in records]
    # classic tombstone; members; epoch; targets; target metadata; current assignments; then m1's
    assert types[:9] == [GROUP_METADATA_TYPE, 5, 5, 3, 7, 7, 6, 8, 8] and records[0][1] is None
    converted = Mixed()                         # what the conversion's records alone rebuild
    for key, value in records[:9]:
        converted.offsets.replay(key, value)
    assert {m: (x.member_epoch, x.assigned, x.uses_classic) for m, x in converted.group.members.items()} == {
        a: (generation, {T1: {0: generation, 1: generation}}, True),
        b: (generation, {T1: {2: generation, 3: generation}}, True)}
    assert converted.group.target == {a: {T1: {0, 1}}, b: {T1: {2, 3}}}
    assert h.group.group_epoch == generation + 1 and h.group.members[a].uses_classic
    reloaded = Mixed()                          # the classic group's records, then the conversion's
    for key, value in h.written:
        reloaded.offsets.replay(key, value)
    assert GROUP not in reloaded.classic.groups and reloaded.group.members == h.group.members
    # the classic members are told to rejoin: their epoch is behind the new target's
    assert h.cbeat(a, generation) == Errors.REBALANCE_IN_PROGRESS
    joined = h.cjoin(a, owned=[("t1", [0, 1])])
    assert joined.error_code == Errors.NONE


@pytest.mark.parametrize("settings, message", [
    (dict(migration_policy="disabled"), "online upgrade is disabled."),
    (dict(migration_policy="downgrade"), "online upgrade is disabled."),
    (dict(max_size=1), "the group size exceeds the consumer group maximum size."),
])
def test_the_policy_and_the_consumer_max_size_refuse_an_upgrade(settings, message):
    h, ch, a, b = classic_group_of_two()
    h.coordinator.settings = type(h.coordinator.settings)(assignment_interval_ms=0, **settings)
    response = h.join("m1")
    assert (response.error_code, response.error_message) == (
        Errors.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {GROUP} to consumer group because {message}")
    assert GROUP in h.classic.groups


# -- downgrade --

def test_the_last_consumer_member_leaving_downgrades_the_group_to_a_rebalancing_classic_group():
    h = Mixed()
    h.join("m1")
    c = h.new_classic().member_id
    before = len(h.written)
    assert h.beat("m1", -1).error_code == Errors.NONE
    assert GROUP not in h.coordinator.groups
    classic = h.classic.groups[GROUP]
    assert list(classic.members) == [c] and classic.state == PREPARING_REBALANCE
    types = [int.from_bytes(k[:2], "big") for k, _ in h.written[before:]]
    assert types[-1] == GROUP_METADATA_TYPE and h.written[-1][1] is not None
    assert set(types[:-1]) == {3, 4, 5, 6, 7, 8}
    again = Mixed()                             # a reload rebuilds the classic group, not the consumer group
    for key, value in h.written:
        again.offsets.replay(key, value)
    assert GROUP not in again.coordinator.groups and list(again.classic.groups[GROUP].members) == [c]


def test_without_the_downgrade_policy_the_group_stays_a_consumer_group():
    h = Mixed(migration_policy="upgrade")
    h.join("m1")
    c = h.new_classic().member_id
    h.beat("m1", -1)
    assert list(h.group.members) == [c] and GROUP not in h.classic.groups


def test_a_classic_leave_then_the_last_member_leaving_leaves_an_empty_consumer_group_a_join_drops():
    h = Mixed()
    h.join("m1")
    c = h.new_classic().member_id
    epoch = h.group.group_epoch
    assert h.coordinator.classic_leave(GROUP, [(c, None), ("x", None)]) == (
        Errors.NONE, [(c, None, Errors.NONE), ("x", None, Errors.UNKNOWN_MEMBER_ID)])
    assert list(h.group.members) == ["m1"] and h.group.group_epoch == epoch + 1
    h.beat("m1", -1)                            # nobody remains: no downgrade, an empty consumer group
    assert h.group.members == {} and GROUP not in h.classic.groups
    assert h.classic_members.drop_empty(GROUP) == Errors.NONE and GROUP not in h.coordinator.groups


# -- the codec and the setting --

def test_subscriptions_of_every_version_decode_and_bad_bytes_are_a_clear_error():
    assert decode_subscription(subscription(["a", "b"], version=0)).topics == ("a", "b")
    assert decode_subscription(subscription(["a"], owned=[("a", [1, 2])])).owned == (("a", (1, 2)),)
    with pytest.raises(ValueError, match="array of 1000"):
        decode_subscription(struct.pack(">hi", 0, 1000))
    assert decode_assignment(encode_assignment({"t": [2, 1]}, 9)) == ({"t": [1, 2]}, None)


def test_the_migration_policy_setting():
    base = "process.roles=broker\nnode.id=1\ncontroller.quorum.bootstrap.servers=localhost:9093\n" \
           "listeners=PLAINTEXT://:9092\ncontroller.listener.names=CONTROLLER\nlog.dirs=/tmp/x\n"
    assert parse_server_config(base).group_consumer_migration_policy == "bidirectional"
    assert parse_server_config(base + "group.consumer.migration.policy=UPGRADE\n") \
        .group_consumer_migration_policy == "upgrade"
    with pytest.raises(ConfigError, match="group.consumer.migration.policy"):
        parse_server_config(base + "group.consumer.migration.policy=sideways\n")


def test_an_upgrade_answers_the_classic_groups_parked_joins_rebalance_in_progress_and_starts_sessions():
    h, ch, a, b = classic_group_of_two()
    parked = ch.join(a, protocols=(("range", subscription(["t1"])),))    # the leader rejoins: parked
    assert parked == [] and ch.group.state == PREPARING_REBALANCE
    assert h.join("m1").error_code == Errors.NONE
    assert [r.error_code for r in parked] == [Errors.REBALANCE_IN_PROGRESS]
    h.timer.advance(9_999)                               # the classic session timeout (10 s) is theirs
    assert a in h.group.members
    h.beat("m1", h.group.members["m1"].member_epoch)
    h.timer.advance(1)
    assert set(h.group.members) == {"m1"}


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_the_group():
    """validateOnlineDowngradeWithReplacedMember: the new member takes the old one's partitions
    in a Stable classic group (no rebalance: the target is current)."""
    h = Mixed()
    h.join("m1", instance="i-1")
    c = h.new_classic().member_id
    h.beat("m1", h.group.members["m1"].member_epoch, owned={T1: {0, 1, 2, 3}})
    h.beat("m1", h.group.members["m1"].member_epoch, owned={T1: set(h.group.members["m1"].assigned[T1])})
    kept = set(h.group.target["m1"][T1])
    epoch = h.group.group_epoch
    joined = h.cjoin(instance="i-1", version=9)
    assert joined.error_code == Errors.NONE and GROUP not in h.coordinator.groups
    classic = h.classic.groups[GROUP]
    assert classic.state == "Stable" and classic.generation_id == epoch == joined.generation_id
    assert list(classic.members) == [c, joined.member_id] and classic.static_members == {"i-1": joined.member_id}
    partitions, _ = decode_assignment(classic.members[joined.member_id].assignment)
    assert set(partitions["t1"]) == kept
    tombstoned = {rec.decode(t, k, None)[1].member_id for k, v in h.written[-12:] if v is None
                  for t in [int.from_bytes(k[:2], "big")] if t in (5, 7, 8)}
    assert tombstoned == {c, joined.member_id}          # the new id, as Kafka tombstones a replaced member
    answers: list = []
    h.classic.sync(SyncGroupRequest(group_id=GROUP, generation_id=joined.generation_id, member_id=joined.member_id,
                                    group_instance_id="i-1", assignments=[]), respond=answers.append)
    assert answers[0].error_code == Errors.NONE and set(decode_assignment(answers[0].assignment)[0]["t1"]) == kept
