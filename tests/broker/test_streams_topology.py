"""A streams group's topology configured against the topics (kafkawire/broker/streams_topology.py):
Kafka 4.3.1's InternalTopicManager.configureTopics answers, recorded in
tests/broker/data/streams_topology_cases.txt by tests/interop/test_streams_assignor_vs_kafka.py,
must be ours without Java; and co-partitioning (CopartitionedTopicsEnforcer) and the messages
that name topics, case by case."""
from __future__ import annotations

import uuid

import pytest

from kafkawire.broker.consumer_coordinator import TopicsView
from kafkawire.broker.streams_topology import (INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS,
                                               MISSING_SOURCE_TOPICS, CopartitionIndexOutOfRange, configure)
from kafkawire.messages import streams_group_heartbeat_request as request
from kafkawire.messages.streams_group_topology_value import (CopartitionGroup, StreamsGroupTopologyValue, Subtopology,
                                                             TopicInfo)
from kafkawire.protocol.error_codes import Errors

from .streams_topology_cases import generate_topology_cases, our_configuration, read_topology_table, topology_case_text
from .test_streams_groups import GROUP, IN, Harness


def test_we_configure_as_kafkas_recorded_answers():
    table = read_topology_table()
    cases = generate_topology_cases()
    assert [text for text, _ in table] == [topology_case_text(c) for c in cases], "the table is not generate_topology_cases()'s"
    wrong = [(text, answer, our_configuration(c)) for (text, answer), c in zip(table, cases) if our_configuration(c) != answer]
    assert not wrong, f"{len(wrong)} of {len(table)} differ from Kafka's, e.g. {wrong[0]}"
    statuses = [answer[0].split(" ")[:2] for _, answer in table]
    assert all(sum(1 for s in statuses if s == kind) >= 10 for kind in (
        ["status", "-"], ["status", "1"], ["status", "2"], ["status", "3"], ["invalid", "Failed"])), "an outcome is missing"
    assert sum(1 for _, answer in table if "same number of partitions" in answer[0]) >= 10


def topic(name, partitions=0) -> TopicInfo:
    return TopicInfo(name=name, partitions=partitions, topic_configs=[])


def join_topology(left="left", right="right", rekeyed_partitions=0) -> StreamsGroupTopologyValue:
    """Subtopology 0 re-keys ``keys`` into app-rekeyed; subtopology 1 joins ``left``, ``right``
    and app-rekeyed: the three are co-partitioned."""
    return StreamsGroupTopologyValue(epoch=1, subtopologies=[
        Subtopology(subtopology_id="0", source_topics=["keys"], repartition_sink_topics=["app-rekeyed"]),
        Subtopology(subtopology_id="1", source_topics=[left, right],
                    repartition_source_topics=[topic("app-rekeyed", rekeyed_partitions)],
                    state_changelog_topics=[topic("app-join-changelog")],
                    copartition_groups=[CopartitionGroup(source_topics=[0, 1], repartition_source_topics=[0])])])


def sizes(**counts):
    return lambda name: counts.get(name.replace("-", "_"))


def test_copartitioned_source_topics_need_one_partition_count():
    configured = configure(join_topology(), sizes(keys=8, left=3, right=4))
    assert (configured.tasks, configured.status) == (None, (
        INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the same number of partitions: [{left=3, right=4}]"))


def test_a_copartitioned_repartition_topic_takes_the_source_topics_count():
    """app-rekeyed would take 8 partitions from its writer's ``keys``; co-partitioned with left and
    right it takes their 3, and so does the changelog of the subtopology reading them."""
    configured = configure(join_topology(), sizes(keys=8, left=3, right=3))
    assert configured.tasks == {"0": 8, "1": 3}
    assert {n: t.num_partitions for n, t in configured.to_create.items()} == {"app-rekeyed": 3, "app-join-changelog": 3}
    assert configured.status[0] == MISSING_INTERNAL_TOPICS
    # without the copartition group it would have been 8
    unpinned = join_topology()
    unpinned.subtopologies[1].copartition_groups = []
    assert configure(unpinned, sizes(keys=8, left=3, right=3)).to_create["app-rekeyed"].num_partitions == 8


def test_a_repartition_topic_with_a_count_of_its_own_must_match():
    configured = configure(join_topology(rekeyed_partitions=5), sizes(keys=8, left=3, right=3))
    assert configured.status == (INCORRECTLY_PARTITIONED_TOPICS, "Number of partitions [5] of repartition topic "
                                 "[app-rekeyed] doesn't match number of partitions [3] of the source topic.")
    assert configure(join_topology(rekeyed_partitions=3), sizes(keys=8, left=3, right=3)).tasks == {"0": 8, "1": 3}


def repartition_only(first=0, second=0) -> StreamsGroupTopologyValue:
    """Subtopologies 0 and 1 write app-a and app-b, co-partitioned in subtopology 2."""
    return StreamsGroupTopologyValue(epoch=1, subtopologies=[
        Subtopology(subtopology_id="0", source_topics=["x"], repartition_sink_topics=["app-a"]),
        Subtopology(subtopology_id="1", source_topics=["y"], repartition_sink_topics=["app-b"]),
        Subtopology(subtopology_id="2", repartition_source_topics=[topic("app-a", first), topic("app-b", second)],
                    copartition_groups=[CopartitionGroup(source_topics=[], repartition_source_topics=[0, 1])])])


def test_a_group_of_repartition_topics_takes_the_largest_or_the_fixed_count():
    configured = configure(repartition_only(), sizes(x=2, y=6))
    assert {n: t.num_partitions for n, t in configured.to_create.items()} == {"app-a": 6, "app-b": 6}
    configured = configure(repartition_only(first=4, second=4), sizes(x=2, y=6))
    assert {n: t.num_partitions for n, t in configured.to_create.items()} == {"app-a": 4, "app-b": 4}
    assert configure(repartition_only(first=4, second=5), sizes(x=2, y=6)).status == (
        INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the same number of partitions: [{app-a=4, app-b=5}]")


def test_a_copartition_group_index_out_of_range_fails_first_as_kafkas_list_get():
    bad = join_topology()
    bad.subtopologies[1].copartition_groups = [CopartitionGroup(source_topics=[0, 2], repartition_source_topics=[])]
    with pytest.raises(CopartitionIndexOutOfRange, match="subtopology 1 refers to topic index 2, but the subtopology has 2"):
        configure(bad, sizes(keys=8, left=3, right=3))
    with pytest.raises(CopartitionIndexOutOfRange):         # before the source topics are looked for
        configure(bad, sizes())


def test_messages_name_three_topics_and_count_the_others():
    many = StreamsGroupTopologyValue(epoch=1, subtopologies=[
        Subtopology(subtopology_id="0", source_topics=["e", "d", "c", "b", "a"])])
    assert configure(many, sizes()).status == (MISSING_SOURCE_TOPICS,
                                               "Source topics a, b, c and 2 additional topics are missing.")


def test_a_member_is_told_its_topics_are_not_copartitioned():
    h = Harness(topics=(("in", IN, 4), ("other", uuid.UUID(int=3), 2)))
    joined = request.Topology(epoch=1, subtopologies=[request.Subtopology(
        subtopology_id="0", source_topics=["in", "other"], copartition_groups=[request.CopartitionGroup(source_topics=[0, 1])])])
    response, to_create = h.join("a", topology=joined)
    assert (response.error_code, to_create) == (Errors.NONE, {})
    assert [(s.status_code, s.status_detail) for s in response.status] == [
        (INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have the same number of partitions: [{in=4, other=2}]")]
    assert h.coordinator.groups[GROUP].targets["a"] == {}


def test_a_change_of_the_topics_reconfigures_the_topology_at_the_next_heartbeat():
    """As Kafka 4.3.1 (whose metadata update marks the groups of the changed topics for a refresh,
    and whose next heartbeat hashes their topics again): a source topic that grows makes the next
    heartbeat configure the topology again and bump the group epoch; here the existing changelog
    topic then has too few partitions, and the tasks are taken back until it is fixed."""
    h = Harness()
    first, _ = h.join("a")
    assert active_tasks(first) == {"0": {0, 1, 2, 3}} and h.group.epoch == 2
    again, _ = h.beat("a", 2, active={"0": {0, 1, 2, 3}})
    assert (again.status, h.group.epoch) == ([], 2)                    # nothing changed: not configured again
    h.view = TopicsView.of((("in", IN, 6), ("app-store-changelog", uuid.UUID(int=2), 4)))
    grown, _ = h.beat("a", 2, active={"0": {0, 1, 2, 3}})
    assert [(s.status_code, s.status_detail) for s in grown.status] == [(INCORRECTLY_PARTITIONED_TOPICS, (
        "Existing topic app-store-changelog has different number of partitions: expected 6, found 4"))]
    assert h.group.epoch == 3 and h.group.targets["a"] == {}
    h.view = TopicsView.of((("in", IN, 6), ("app-store-changelog", uuid.UUID(int=2), 6)))
    fixed, _ = h.beat("a", grown.member_epoch, active=active_tasks(grown))
    assert fixed.status == [] and h.group.epoch == 4 and h.group.targets["a"] == {"0": frozenset(range(6))}


def active_tasks(response) -> dict:
    return {t.subtopology_id: set(t.partitions) for t in response.active_tasks or ()}
