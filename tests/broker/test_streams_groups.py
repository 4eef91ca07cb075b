"""KIP-1071 streams groups without sockets or clocks (kafkawire.broker.streams_coordinator and its
modules): StreamsGroupHeartbeat driven with a manual timer, checked against what Kafka 4.3.1's
GroupMetadataManager answers: validation messages, topology configuration (missing source and
internal topics), member epochs, the revoke-then-assign steps, the records written to
``__consumer_offsets`` and what their replay rebuilds, and the offset checks of streams groups.
"""
from __future__ import annotations

import logging
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker import streams_group as sg
from kafkawire.broker.consumer_coordinator import TopicsView
from kafkawire.broker.group_coordinator import GroupCoordinator, GroupSettings
from kafkawire.broker.group_offsets import CommitRefused, GroupOffsets
from kafkawire.broker.streams_apis import StreamsApis, described
from kafkawire.broker.streams_coordinator import StreamsCoordinator, StreamsSettings
from kafkawire.broker.streams_topology import MISSING_INTERNAL_TOPICS, MISSING_SOURCE_TOPICS, STALE_TOPOLOGY
from kafkawire.messages.streams_group_heartbeat_request import (CopartitionGroup, StreamsGroupHeartbeatRequest,
                                                                Subtopology, TaskIds, TopicInfo, Topology)
from kafkawire.metadata.image import BROKER_RESOURCE, GROUP_RESOURCE
from kafkawire.net.config import parse_server_config
from kafkawire.protocol.error_codes import Errors

from .test_group_coordinator import ManualTimer

GROUP = "app"
IN, OUT = uuid.UUID(int=1), uuid.UUID(int=2)


def copy_topology(epoch=1) -> Topology:
    """One subtopology reading ``in`` with a state store (its changelog topic is internal)."""
    return Topology(epoch=epoch, subtopologies=[Subtopology(
        subtopology_id="0", source_topics=["in"],
        state_changelog_topics=[TopicInfo(name="app-store-changelog", topic_configs=[])])])


def repartition_topology() -> Topology:
    """Subtopology 0 reads ``in`` and writes the repartition topic 1 reads."""
    return Topology(epoch=1, subtopologies=[
        Subtopology(subtopology_id="0", source_topics=["in"], repartition_sink_topics=["app-rep"]),
        Subtopology(subtopology_id="1", repartition_source_topics=[TopicInfo(name="app-rep", topic_configs=[])])])


class Harness:
    def __init__(self, topics=(("in", IN, 4), ("app-store-changelog", OUT, 4)), **settings):
        self.timer = ManualTimer()
        self.timer.now = 1_000_000
        self.written: list = []
        self.view = TopicsView.of(topics)
        self.classic = GroupCoordinator(GroupSettings(initial_rebalance_delay_ms=0), timer=self.timer,
                                        persist=self.persist, now_ms=lambda: self.timer.now)
        self.offsets = GroupOffsets(self.classic)
        chosen = StreamsSettings(**{"initial_rebalance_delay_ms": 0, "assignment_interval_ms": 0, **settings})
        self.coordinator = StreamsCoordinator(self.classic, topics=lambda: self.view, settings=lambda group_id: chosen)

    def persist(self, group_id, records):
        self.written.extend(records)
        return Errors.NONE

    def beat(self, member_id, epoch, *, topology=None, active=None, standby=None, rebalance=-1, **fields):
        tasks = None if active is None else [TaskIds(subtopology_id=s, partitions=sorted(p))
                                             for s, p in active.items()]
        standbys = [TaskIds(subtopology_id=s, partitions=sorted(p)) for s, p in (standby or {}).items()]
        request = StreamsGroupHeartbeatRequest(
            group_id=GROUP, member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=rebalance,
            topology=topology, active_tasks=tasks, standby_tasks=None if active is None else standbys,
            warmup_tasks=None if active is None else [], process_id=fields.pop("process_id", "p-" + member_id),
            **fields)
        return self.coordinator.heartbeat(request, client_id="c", client_host="/127.0.0.1")

    def join(self, member_id, topology=None):
        return self.beat(member_id, 0, topology=topology or copy_topology(), active={}, rebalance=30_000)

    @property
    def group(self) -> sg.StreamsGroup:
        return self.coordinator.groups[GROUP]


def active(response) -> dict:
    return {t.subtopology_id: set(t.partitions) for t in response.active_tasks}


# -- validation --

@pytest.mark.parametrize("fields, code, message", [
    (dict(member_id="", member_epoch=0), Errors.INVALID_REQUEST, "MemberId can't be empty."),
    (dict(member_id="m", member_epoch=0, rebalance_timeout_ms=-1), Errors.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    (dict(member_id="m", member_epoch=0, topology=None), Errors.INVALID_REQUEST,
     "Topology must be non-null when (re-)joining."),
    (dict(member_id="m", member_epoch=0, instance_id="i"), Errors.INVALID_REQUEST,
     "Static membership is not yet supported."),
    (dict(member_id="m", member_epoch=3, topology=Topology(epoch=1)), Errors.INVALID_REQUEST,
     "Topology can only be provided when (re-)joining."),
    (dict(member_id="m", member_epoch=-3, topology=None), Errors.INVALID_REQUEST,
     "MemberEpoch is -3, but must be greater than or equal to -2."),
    # Kafka 4.3.1's StickyTaskAssignor assigns no warm-up task, and its coordinator refuses any a member reports
    (dict(member_id="m", member_epoch=3, topology=None, active_tasks=[], standby_tasks=[],
          warmup_tasks=[TaskIds(subtopology_id="0", partitions=[1])]), Errors.INVALID_REQUEST,
     "WarmupTasks are not supported yet."),
    (dict(member_id="m", member_epoch=0, topology=Topology(epoch=1, subtopologies=[Subtopology(
        subtopology_id="0", source_topics=["in"], state_changelog_topics=[TopicInfo(name="c", partitions=3)])])),
     Errors.STREAMS_INVALID_TOPOLOGY, "Changelog topic c must have an undefined partition count, but it is set to 3."),
    # Kafka's List.get of a copartition group's index fails the heartbeat, before a source topic is looked for
    (dict(member_id="m", member_epoch=0, topology=Topology(epoch=1, subtopologies=[Subtopology(
        subtopology_id="0", source_topics=["in", "gone"],
        copartition_groups=[CopartitionGroup(source_topics=[0, 2], repartition_source_topics=[])])])),
     Errors.UNKNOWN_SERVER_ERROR, None),
])
def test_invalid_heartbeats_are_refused_with_kafkas_messages(fields, code, message):
    h = Harness()
    request = StreamsGroupHeartbeatRequest(group_id=GROUP, **{"rebalance_timeout_ms": 30_000,
                                                              "topology": copy_topology(), **fields})
    response, to_create = h.coordinator.heartbeat(request, client_id="c", client_host="/h")
    assert (response.error_code, response.error_message, to_create) == (code, message, {})
    assert h.written == []


def test_unknown_group_and_member():
    h = Harness()
    response, _ = h.beat("m", 1, active={})
    assert (response.error_code, response.error_message) == (Errors.GROUP_ID_NOT_FOUND, "Streams group app not found.")
    h.join("a")
    response, _ = h.beat("b", 1, active={})
    assert (response.error_code, response.error_message) == (Errors.UNKNOWN_MEMBER_ID,
                                                             "Member b is not a member of group app.")


# -- topology configuration --

def test_missing_internal_topics_are_reported_and_returned_for_creation():
    h = Harness(topics=(("in", IN, 4),))
    response, to_create = h.join("a")
    assert response.error_code == Errors.NONE and response.member_epoch == 2
    assert [(s.status_code, s.status_detail) for s in response.status] == [
        (MISSING_INTERNAL_TOPICS, "Internal topics are missing: app-store-changelog")]
    assert {n: (t.num_partitions, t.replication_factor) for n, t in to_create.items()} == {
        "app-store-changelog": (4, -1)}
    assert active(response) == {} and h.group.state == sg.NOT_READY
    # once the topic exists, the next heartbeat configures the topology and assigns the tasks
    h.view = TopicsView.of((("in", IN, 4), ("app-store-changelog", OUT, 4)))
    response, to_create = h.beat("a", 2, active={})
    assert (response.member_epoch, response.status, to_create) == (3, [], {})
    assert active(response) == {"0": {0, 1, 2, 3}}
    assert h.group.state == sg.STABLE and h.group.validated_topology_epoch == 1


def test_missing_source_topics_and_repartition_sizing():
    h = Harness(topics=())
    response, to_create = h.join("a")
    assert [(s.status_code, s.status_detail) for s in response.status] == [
        (MISSING_SOURCE_TOPICS, "Source topics in are missing.")]
    assert to_create == {}
    h = Harness(topics=(("in", IN, 3),))
    response, to_create = h.join("a", repartition_topology())
    assert {n: t.num_partitions for n, t in to_create.items()} == {"app-rep": 3}


def test_stale_topology_status():
    h = Harness()
    h.join("a", copy_topology(epoch=2))
    response, _ = h.beat("b", 0, topology=copy_topology(epoch=1), active={}, rebalance=30_000)
    assert [(s.status_code, s.status_detail) for s in response.status] == [
        (STALE_TOPOLOGY, "The member's topology epoch 1 is behind the group's topology epoch 2.")]


# -- assignment and reconciliation --

def test_second_member_gets_tasks_after_the_first_revokes_them():
    h = Harness()
    first, _ = h.join("a")
    assert (first.member_epoch, active(first)) == (2, {"0": {0, 1, 2, 3}})
    second, _ = h.join("b")
    assert (second.member_epoch, active(second)) == (3, {})          # its tasks are still a's
    assert h.group.members["b"].state == sg.UNRELEASED_TASKS
    revoking, _ = h.beat("a", 2, active={"0": {0, 1, 2, 3}})
    assert revoking.member_epoch == 2 and len(active(revoking)["0"]) == 2
    assert h.group.members["a"].state == sg.UNREVOKED_TASKS and h.group.state == sg.RECONCILING
    kept = active(revoking)
    released, _ = h.beat("a", 2, active=kept)
    assert (released.member_epoch, released.active_tasks) == (3, None)   # unchanged tasks are not repeated
    got, _ = h.beat("b", 3, active={})
    assert got.member_epoch == 3 and active(got)["0"] == {0, 1, 2, 3} - kept["0"]
    assert h.group.state == sg.STABLE


def test_epoch_checks_and_leaving():
    h = Harness()
    h.join("a")
    response, _ = h.beat("a", 5, active={})
    assert response.error_code == Errors.FENCED_MEMBER_EPOCH
    assert response.error_message.startswith("The streams group member has a greater member epoch (5)")
    left, _ = h.beat("a", -1)
    assert (left.error_code, left.member_id, left.member_epoch) == (Errors.NONE, "a", -1)
    assert h.group.members == {} and h.group.state == sg.EMPTY and h.group.epoch == 3


def test_a_silent_member_is_fenced_after_the_session_timeout():
    h = Harness()
    h.join("a")
    h.join("b")
    h.timer.advance(44_000)
    h.beat("b", 3, active={})
    h.timer.advance(2_000)
    assert set(h.group.members) == {"b"}


def test_replay_rebuilds_the_served_state():
    h = Harness()
    h.join("a")
    h.join("b")
    h.beat("a", 2, active={"0": {0, 1, 2, 3}})
    rebuilt = Harness()
    for key, value in h.written:
        rebuilt.offsets.replay(key, value)
    old, new = h.group, rebuilt.classic.streams_groups[GROUP]
    assert (new.epoch, new.assignment_epoch, new.validated_topology_epoch, new.targets) == \
        (old.epoch, old.assignment_epoch, old.validated_topology_epoch, old.targets)
    assert new.members == old.members and new.topology.epoch == 1
    # the first record is StreamsGroupMemberMetadata (type 19), as Kafka writes it
    assert int.from_bytes(h.written[0][0][:2], "big") == 19


def test_describe():
    h = Harness()
    h.join("a")
    found = described(h.group)
    assert (found.group_state, found.group_epoch, found.assignment_epoch) == ("Stable", 2, 2)
    assert [(m.member_id, m.process_id, [(t.subtopology_id, t.partitions) for t in m.assignment.active_tasks])
            for m in found.members] == [("a", "p-a", [("0", [0, 1, 2, 3])])]
    assert found.topology.subtopologies[0].source_topics == ["in"]


# -- offsets --

def test_offset_commit_checks_the_member_epoch():
    h = Harness()
    h.join("a")
    validate = h.offsets.validate_commit
    assert validate(GROUP, 2, "a", None, 9) is None
    for member, epoch, version, code in (("x", 2, 9, Errors.UNKNOWN_MEMBER_ID), ("a", 3, 9, Errors.STALE_MEMBER_EPOCH),
                                         ("a", 1, 8, Errors.UNSUPPORTED_VERSION)):
        with pytest.raises(CommitRefused) as refused:
            validate(GROUP, epoch, member, None, version)
        assert refused.value.code == code
    assert validate(GROUP, 1, "a", None, 9)(IN, 0) == Errors.STALE_MEMBER_EPOCH     # older than the task's epoch
    h.beat("a", -1)
    assert validate(GROUP, -1, "", None, 9) is None            # an empty group takes admin commits


def test_a_shutdown_request_is_reported_to_every_member():
    h = Harness()
    h.join("a")
    h.join("b")
    response, _ = h.beat("a", 2, active={"0": {0, 1, 2, 3}}, shutdown_application=True)
    detail = "Streams group member a encountered a fatal error and requested a shutdown for the entire application."
    assert [(s.status_code, s.status_detail) for s in response.status] == [(4, detail)]
    other, _ = h.beat("b", 3, active={})
    assert [(s.status_code, s.status_detail) for s in other.status] == [(4, detail)]


def test_list_describe_and_delete_groups_know_streams_groups():
    from kafkawire.broker.consumer_coordinator import ConsumerCoordinator, ConsumerSettings
    from kafkawire.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest
    h = Harness()
    consumers = ConsumerCoordinator(h.classic, ConsumerSettings(), topics=lambda: h.view)
    h.join("a")
    listed = h.offsets.list_groups([], [])
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed] == [
        (GROUP, "streams", "Stable", "streams")]
    assert h.offsets.list_groups([], ["classic"]) == []
    assert h.offsets.describe(GROUP, 6).error_message == "Group app is not a classic group."
    joined = consumers.heartbeat(ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id="c", member_epoch=0, rebalance_timeout_ms=30_000, subscribed_topic_names=["in"],
        topic_partitions=[]), version=1, client_id="c", client_host="/h")
    assert (joined.error_code, joined.error_message) == (Errors.GROUP_ID_NOT_FOUND, "Group app is not a consumer group.")
    assert h.offsets.delete(GROUP) == Errors.NON_EMPTY_GROUP
    h.beat("a", -1)
    before = len(h.written)
    assert h.offsets.delete(GROUP) == Errors.NONE and GROUP not in h.classic.streams_groups
    assert [int.from_bytes(k[:2], "big") for k, v in h.written[before:] if v is None] == [20, 17, 23]
    rebuilt = Harness()
    for key, value in h.written:
        rebuilt.offsets.replay(key, value)
    assert rebuilt.classic.streams_groups == {}


def test_a_commit_with_an_older_epoch_is_checked_task_by_task():
    """createAssignmentEpochValidator: a partition of a task the member holds (or is revoking)
    since an epoch at or before the commit's is accepted; any other is STALE_MEMBER_EPOCH."""
    h = Harness()
    h.join("a")                                         # a holds 0-3 since epoch 2
    h.join("b")
    h.beat("a", 2, active={"0": {0, 1, 2, 3}})           # a revokes two of them, still at epoch 2
    kept = h.group.members["a"].active["0"]
    h.beat("a", 2, active={"0": set(kept)})              # a moves to epoch 3
    assert h.group.members["a"].member_epoch == 3
    check = h.offsets.validate_commit(GROUP, 2, "a", None, 9)
    given = ({0, 1, 2, 3} - set(kept)).pop()
    assert [check(IN, p) for p in sorted(kept)] == [Errors.NONE] * 2
    assert check(IN, given) == Errors.STALE_MEMBER_EPOCH             # no longer a's
    assert check(OUT, 0) == Errors.STALE_MEMBER_EPOCH                # not a source topic
    assert check(uuid.UUID(int=9), 0) == Errors.STALE_MEMBER_EPOCH   # an unknown topic


def test_a_member_not_revoking_within_its_rebalance_timeout_is_fenced():
    h = Harness()
    h.join("a")
    h.join("b")
    h.beat("a", 2, active={"0": {0, 1, 2, 3}})          # asked to revoke two tasks (rebalance timeout 30 s)
    assert h.group.members["a"].state == sg.UNREVOKED_TASKS
    h.timer.advance(20_000)
    h.beat("b", 3, active={})                            # b's session stays alive
    h.timer.advance(10_000)
    assert set(h.group.members) == {"b"}
    response, _ = h.beat("b", 3, active={})
    assert response.member_epoch == 4 and active(response) == {"0": {0, 1, 2, 3}}     # a's fence bumped the epoch


def test_a_new_groups_assignment_waits_for_the_initial_rebalance_delay():
    h = Harness(initial_rebalance_delay_ms=3_000)
    first, _ = h.join("a")
    delayed = (5, "Assignment delayed due to the configured initial rebalance delay.")
    assert (first.member_epoch, active(first)) == (1, {})
    assert [(s.status_code, s.status_detail) for s in first.status] == [delayed]
    second, _ = h.join("b")                         # the group is not empty: no second timer
    assert second.member_epoch == 1 and [(s.status_code, s.status_detail) for s in second.status] == [delayed]
    h.timer.advance(3_000)                          # the delayed target is computed at the group's epoch
    assert h.group.assignment_epoch == h.group.epoch == 3
    a, _ = h.beat("a", 0, topology=copy_topology(), active={}, rebalance=30_000)
    b, _ = h.beat("b", 0, topology=copy_topology(), active={}, rebalance=30_000)
    assert (a.member_epoch, b.member_epoch, a.status, b.status) == (3, 3, [], [])
    assert sorted(len(active(r)["0"]) for r in (a, b)) == [2, 2]


def test_a_new_target_waits_for_the_assignment_interval():
    h = Harness(assignment_interval_ms=1_000)
    h.join("a")
    second, _ = h.join("b")
    assert [(s.status_code, s.status_detail) for s in second.status] == [
        (5, "Assignment delayed due to the configured assignment interval.")]
    assert (second.member_epoch, h.group.assignment_epoch, h.group.epoch) == (2, 2, 3)
    h.timer.advance(1_000)
    again, _ = h.beat("b", 0, topology=copy_topology(), active={}, rebalance=30_000)
    assert (again.member_epoch, again.status, h.group.assignment_epoch) == (3, [], 3)


def test_the_groups_own_configs_set_its_timings():
    settings = StreamsSettings.of(GROUP, {"streams.session.timeout.ms": "50000", "streams.heartbeat.interval.ms": "6000",
                                   "streams.initial.rebalance.delay.ms": "0"})
    assert settings == StreamsSettings(50_000, 6_000, 0, 1_000)
    h = Harness(session_timeout_ms=50_000, heartbeat_interval_ms=6_000)
    response, _ = h.join("a")
    assert response.heartbeat_interval_ms == 6_000
    h.timer.advance(49_999)
    assert "a" in h.group.members
    h.timer.advance(1)
    assert h.group.members == {}


def test_offset_delete_and_expiry_spare_the_source_topics_of_a_group_with_members():
    h = Harness()
    h.join("a")
    h.offsets.commit(GROUP, [("in", 0, 5, -1, "", IN), ("other", 0, 7, -1, "", OUT)])
    error, codes = h.offsets.delete_offsets(GROUP, [("in", [0]), ("other", [0])])
    assert (error, codes) == (Errors.NONE, {("in", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): Errors.NONE})
    h.timer.now += 10_000
    assert h.offsets.expire(retention_ms=1_000) == 0          # "in" is a source topic of a group with members
    h.beat("a", -1)
    assert h.offsets.expire(retention_ms=1_000) == 4          # the offset and the group's three tombstones
    assert GROUP not in h.classic.streams_groups and h.offsets.list_groups(["not_ready"], []) == []


def test_a_classic_join_is_refused_by_a_streams_group_with_members_and_replaces_an_empty_one():
    from types import SimpleNamespace

    from kafkawire.broker.streams_apis import StreamsApis
    h = Harness()
    apis = StreamsApis.__new__(StreamsApis)
    apis.coordinator = h.coordinator
    apis.apis = SimpleNamespace(store=SimpleNamespace(persist=h.persist))
    h.join("a")
    assert apis.classic_join_error(GROUP) == Errors.INCONSISTENT_GROUP_PROTOCOL
    h.beat("a", -1)
    before = len(h.written)
    assert apis.classic_join_error(GROUP) == Errors.NONE and GROUP not in h.classic.streams_groups
    assert [int.from_bytes(k[:2], "big") for k, v in h.written[before:] if v is None] == [20, 17, 23]


def kafkas_passes(subtopologies, partition_count) -> dict | None:
    """RepartitionTopics.computeRepartitionTopicPartitionCount as Kafka writes it (passes over every
    subtopology until each sink is sized); None where it throws."""
    counts = {t.name: t.partitions for s in subtopologies for t in s.repartition_source_topics if t.partitions}
    while True:
        needed = progress = False
        for s in subtopologies:
            for sink in s.repartition_sink_topics:
                if sink in counts:
                    continue
                known = [counts[t.name] for t in s.repartition_source_topics if t.name in counts]
                known += [c for c in map(partition_count, s.source_topics) if c is not None]
                if known:
                    counts[sink], progress = max(known), True
                else:
                    needed = True
        if not needed:
            break
        if not progress:
            return None
    if any(t.name not in counts for s in subtopologies for t in s.repartition_source_topics):
        return None
    return counts


def test_repartition_topics_are_sized_as_kafkas_passes_size_them():
    """The linear sizing (kafkawire.broker.streams_topology) against Kafka's quadratic passes, on
    random topologies with chains, fan-in, fixed counts, external sources and loops."""
    import random

    from kafkawire.broker.streams_topology import InvalidTopology, _repartition_counts
    from kafkawire.messages.streams_group_topology_value import Subtopology as S
    from kafkawire.messages.streams_group_topology_value import TopicInfo as T
    rng = random.Random(1071)
    sizes = {"x1": 3, "x2": 8}
    for _ in range(400):
        n = rng.randint(1, 8)
        topics = [f"r{i}" for i in range(rng.randint(1, 6))]
        fixed = {t: rng.choice([0, 0, 2, 5]) for t in topics}
        subtopologies = [S(subtopology_id=str(i), source_topics=rng.sample(["x1", "x2", "missing"], rng.randint(0, 2)),
                           repartition_source_topics=[T(name=t, partitions=fixed[t])
                                                      for t in rng.sample(topics, rng.randint(0, min(2, len(topics))))],
                           repartition_sink_topics=rng.sample(topics, rng.randint(0, min(2, len(topics))))) for i in range(n)]
        expected = kafkas_passes(subtopologies, sizes.get)
        try:
            found = _repartition_counts(subtopologies, sizes.get)
        except InvalidTopology:
            found = None
        assert found == expected, subtopologies


def test_the_assignment_is_balanced_and_keeps_tasks_with_their_previous_owner():
    h = Harness(topics=(("in", IN, 7), ("app-store-changelog", OUT, 7)))
    for member in "abc":
        h.join(member)
    targets = {m: h.group.targets[m].get("0", frozenset()) for m in "abc"}
    assert sorted(len(t) for t in targets.values()) == [2, 2, 3]
    assert set().union(*targets.values()) == set(range(7))
    h.join("d")
    after = {m: h.group.targets[m].get("0", frozenset()) for m in "abcd"}
    assert sorted(len(t) for t in after.values()) == [1, 2, 2, 2]
    assert all(after[m] <= targets[m] for m in "abc")       # nobody gets another's task; d takes the surplus


def test_a_member_of_a_group_whose_topology_was_deleted_gets_an_answer():
    """A group replayed without its topology record (tombstoned) still answers its members."""
    h = Harness()
    h.join("a")
    h.coordinator.write(GROUP, [(sg.TOPOLOGY, sg.StreamsGroupTopologyKey(group_id=GROUP), None)])
    response, to_create = h.beat("a", 2, active={"0": {0, 1, 2, 3}})
    assert (response.error_code, to_create) == (Errors.NONE, {}) and h.group.state == sg.NOT_READY


def test_members_with_user_endpoints_are_told_who_holds_which_partitions():
    """Interactive queries: PartitionsByUserEndpoint and its epoch (EndpointToPartitionsManager)."""
    from kafkawire.messages.streams_group_heartbeat_request import Endpoint
    h = Harness()
    first, _ = h.beat("a", 0, topology=copy_topology(), active={}, rebalance=30_000,
                      user_endpoint=Endpoint(host="a-host", port=1))
    assert first.endpoint_information_epoch == 0            # the group was created by this heartbeat
    assert [(e.user_endpoint.host, [(t.topic, t.partitions) for t in e.active_partitions])
            for e in first.partitions_by_user_endpoint] == [("a-host", [("in", [0, 1, 2, 3])])]
    again, _ = h.beat("a", 2, active={"0": {0, 1, 2, 3}}, endpoint_information_epoch=1)
    assert (again.endpoint_information_epoch, again.partitions_by_user_endpoint) == (1, None)   # up to date


def test_internal_topic_creation_failures_are_reported_and_not_asked_again_meanwhile():
    """AutoTopicCreationManager's error cache: a failed creation is reported in the
    MISSING_INTERNAL_TOPICS status ("; Creation failed: t (why).") for twice the heartbeat interval,
    during which the broker does not ask the controller again."""
    import asyncio
    from types import SimpleNamespace

    from kafkawire.broker.streams_apis import CreationErrors, StreamsApis
    from kafkawire.messages.create_topics_response import CreatableTopicResult, CreateTopicsResponse
    from kafkawire.messages.streams_group_heartbeat_response import Status, StreamsGroupHeartbeatResponse
    from kafkawire.protocol.handler import RequestContext
    asked = []
    member = RequestContext(api_key=88, api_version=0, correlation_id=7, client_id="app-client", peer=("h", 1),
                            listener_name="PLAINTEXT", connection_id="c", principal="User:app")

    async def forward(ctx, request):          # to the controller, on the member's client's behalf
        assert (ctx.api_key, ctx.principal, ctx.client_id) == (19, "User:app", "app-client")
        asked.append([t.name for t in request.topics])
        return CreateTopicsResponse(topics=[CreatableTopicResult(
            name=t.name, error_code=Errors.POLICY_VIOLATION, error_message="no, thanks") for t in request.topics])
    now = [0.0]
    apis = StreamsApis.__new__(StreamsApis)
    apis.apis = SimpleNamespace(broker=SimpleNamespace(forwarder=SimpleNamespace(on_behalf=forward),
                                                     config=SimpleNamespace(request_timeout_ms=30_000)))
    apis._creating, apis.creation_errors = {}, CreationErrors(clock=lambda: now[0])
    to_create = Harness(topics=(("in", IN, 4),)).join("a")[1]

    def heartbeat():
        response = StreamsGroupHeartbeatResponse(status=[Status(status_code=3, status_detail="Internal topics are "
                                                                "missing: app-store-changelog")])
        apis._create_internal(member, response, to_create, 10_000)
        return response.status[0].status_detail

    async def scenario():
        first = heartbeat()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        second = heartbeat()
        now[0] = 10_000                                      # the error expired: asked again
        third = heartbeat()
        await asyncio.sleep(0)
        return first, second, third
    first, second, third = asyncio.run(scenario())
    assert first == "Internal topics are missing: app-store-changelog"
    assert second == first + "; Creation failed: app-store-changelog (no, thanks)."
    assert third == first and asked == [["app-store-changelog"], ["app-store-changelog"]]


def standby(response) -> dict:
    return {t.subtopology_id: set(t.partitions) for t in response.standby_tasks}


def test_standby_replicas_go_to_another_process_than_the_active_task():
    """streams.num.standby.replicas: each task's standby on a member of another process; a member
    alone in the group gets none; the record's LastAssignmentConfigs says how many."""
    h = Harness(num_standby_replicas=1)
    first, _ = h.join("a")
    assert (active(first), standby(first)) == ({"0": {0, 1, 2, 3}}, {})
    second, _ = h.join("b")
    assert (active(second), standby(second)) == ({}, {"0": set(h.group.standby_targets["b"]["0"])})
    assert h.group.standby_targets["b"]["0"] == h.group.targets["a"]["0"]
    revoking, _ = h.beat("a", 2, active={"0": {0, 1, 2, 3}})
    kept = active(revoking)["0"]
    released, _ = h.beat("a", 2, active={"0": kept})
    # the tasks it revoked are still its own in this heartbeat (as in Kafka): their standby comes next
    assert (released.member_epoch, h.group.members["a"].state) == (3, sg.UNRELEASED_TASKS)
    standing, _ = h.beat("a", 3, active={"0": kept})
    assert (active(standing), standby(standing)) == ({"0": kept}, {"0": {0, 1, 2, 3} - kept})
    got, _ = h.beat("b", 3, active={}, standby={"0": kept})
    assert (active(got), standby(got)) == ({"0": {0, 1, 2, 3} - kept}, {"0": kept})
    assert h.group.state == sg.STABLE and h.group.standby_replicas == 1


def test_a_streams_group_and_a_share_group_never_share_an_id():
    """One name space for every group type, as GroupMetadataManager keeps it: a share group's id
    is not a streams group's, nor the other way round, whichever came first."""
    from kafkawire.broker.share_groups import ShareGroups
    from kafkawire.messages.share_group_heartbeat_request import ShareGroupHeartbeatRequest
    h = Harness()
    shares = ShareGroups(h.classic, topics=lambda: h.view, timeouts=lambda g: (45_000, 5_000),
                         on_member_gone=lambda g, m: None)

    def share_join(group_id):
        return shares.heartbeat(ShareGroupHeartbeatRequest(group_id=group_id, member_id="s", member_epoch=0,
                                                           subscribed_topic_names=["in"]),
                                client_id="c", client_host="/127.0.0.1")
    h.join("a")                                     # the streams group "app"
    refused = share_join(GROUP)
    assert (refused.error_code, refused.error_message) == (Errors.GROUP_ID_NOT_FOUND,
                                                           f"Group {GROUP} is not a share group.")
    assert share_join("queue").error_code == Errors.NONE
    response, _ = h.coordinator.heartbeat(StreamsGroupHeartbeatRequest(
        group_id="queue", member_id="m", member_epoch=0, rebalance_timeout_ms=30_000, topology=copy_topology(),
        process_id="p"), client_id="c", client_host="/h")
    assert (response.error_code, response.error_message) == (Errors.GROUP_ID_NOT_FOUND,
                                                             "Group queue is not a streams group.")


NODE = ("process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
        "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.quorum.voters=1@127.0.0.1:9093\n")


def broker_harness(settings: str, group_configs: dict | None = None) -> Harness:
    """A Harness whose coordinator is the one StreamsApis builds from a node's server.properties
    (``settings``) and the image's GROUP configs of the group (``h.image``, ``h.apis``)."""
    h = Harness()
    h.image = SimpleNamespace(configs={(GROUP_RESOURCE, GROUP): group_configs} if group_configs else {})
    apis = SimpleNamespace(coordinator=h.classic, consumer_apis=SimpleNamespace(topics=lambda: h.view),
                           broker=SimpleNamespace(config=parse_server_config(NODE + settings), image=lambda: h.image))
    h.classic.streams_groups = {}
    h.apis = StreamsApis(apis)
    h.coordinator = h.apis.coordinator
    return h


def test_the_brokers_streams_settings_set_a_groups_timings_and_size():
    """group.streams.*: the heartbeat interval a member is told, the session timeout that fences
    it, and group.streams.max.size refusing one member more with Kafka's error and message."""
    h = broker_harness("group.streams.initial.rebalance.delay.ms=0\ngroup.streams.assignment.interval.ms=0\n"
                       "group.streams.min.heartbeat.interval.ms=100\ngroup.streams.heartbeat.interval.ms=700\n"
                       "group.streams.min.session.timeout.ms=1000\ngroup.streams.session.timeout.ms=3000\n"
                       "group.streams.max.size=2\n")
    first, _ = h.join("a")
    assert (first.error_code, first.heartbeat_interval_ms) == (Errors.NONE, 700)
    h.join("b")
    refused, _ = h.join("c")
    assert (refused.error_code, refused.error_message) == (
        Errors.GROUP_MAX_SIZE_REACHED, "The streams group has reached its maximum capacity of 2 members.")
    h.timer.advance(2_000)
    h.beat("b", 3, active={})
    h.timer.advance(1_000)
    assert set(h.group.members) == {"b"}        # a's 3 s passed, b heartbeat 1 s ago


def test_a_groups_streams_configs_are_bounded_by_the_brokers_settings():
    """A group's streams.* configs apply within this broker's bounds: the standby count comes from
    group.streams.num.standby.replicas when the group sets none, and a group's larger count is
    clamped to group.streams.max.standby.replicas."""
    node = ("group.streams.initial.rebalance.delay.ms=0\ngroup.streams.assignment.interval.ms=0\n"
            "group.streams.num.standby.replicas=1\n")
    h = broker_harness(node)
    h.join("a")
    h.join("b")
    assert h.group.standby_replicas == 1 and h.group.standby_targets["b"]["0"] == h.group.targets["a"]["0"]
    clamped = broker_harness(node + "group.streams.max.standby.replicas=1\n",
                             {"streams.num.standby.replicas": "2", "streams.heartbeat.interval.ms": "20000"})
    response, _ = clamped.join("a")
    assert (response.heartbeat_interval_ms, clamped.group.standby_replicas) == (15_000, 1)


def test_a_dynamic_assignment_interval_applies_clamped_to_the_static_bounds(caplog):
    """group.streams.assignment.interval.ms is reconfigurable in Kafka: the node's dynamic value,
    else the cluster default's, clamped to group.streams.{min,max}.assignment.interval.ms with a
    WARN (clampDynamicConfigs); a group's own streams.assignment.interval.ms still wins."""
    h = broker_harness("group.streams.assignment.interval.ms=2000\n")
    assert h.apis.group_settings(GROUP).assignment_interval_ms == 2_000
    h.image.configs[(BROKER_RESOURCE, "")] = {"group.streams.assignment.interval.ms": "20000"}
    with caplog.at_level(logging.WARNING, logger="kafkawire.metadata.group_configs"):
        assert h.apis.group_settings(GROUP).assignment_interval_ms == 15_000
        assert h.apis.group_settings(GROUP).assignment_interval_ms == 15_000
    assert caplog.text.count("group.streams.assignment.interval.ms=20000 is outside") == 1    # once a change
    h.image.configs[(BROKER_RESOURCE, "1")] = {"group.streams.assignment.interval.ms": "300"}
    assert h.apis.group_settings(GROUP).assignment_interval_ms == 300
    h.image.configs[(GROUP_RESOURCE, GROUP)] = {"streams.assignment.interval.ms": "0"}
    assert h.apis.group_settings(GROUP).assignment_interval_ms == 0


def test_unloading_drops_the_partitions_streams_groups_with_their_timers():
    """GroupMetadataManager.onUnloaded (the runtime cancels the partition's timers): the streams
    groups of a partition no longer led here go with their members' session timers, and their
    offsets with them (GroupOffsets.unload), so no timer fences a member of the group a reload
    brings back; another group's offsets stay."""
    from kafkawire.broker.streams_coordinator import session_key
    h = Harness()
    h.join("m1")
    assert session_key(GROUP, "m1") in h.timer.due
    h.offsets.offsets[GROUP] = {("in", 0): None}
    h.offsets.offsets["other"] = {("in", 0): None}
    h.offsets.unload(lambda group_id: group_id == GROUP)
    assert GROUP not in h.coordinator.groups and list(h.offsets.offsets) == ["other"]
    assert [key for key in h.timer.due if GROUP in key.split("-")] == []
