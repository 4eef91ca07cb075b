"""Consumer groups on a one-node combined kafkawire (issue 29, slice 2), with kafka-python's
KafkaConsumer as the judge: members of one group split a topic's partitions, commit, and a later
member resumes from the committed offsets; a member leaving makes the others rebalance; the
committed offsets are in ``__consumer_offsets`` and survive a restart. One node for the module
(``group.initial.rebalance.delay.ms=0`` so that a group forms without Kafka's 3 s wait).
"""
from __future__ import annotations

import contextlib
import io
import os
import threading
import time

import pytest

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.delete_groups_request import DeleteGroupsRequest
from kafkawire.messages.describe_groups_request import DescribeGroupsRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.heartbeat_request import HeartbeatRequest
from kafkawire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kafkawire.messages.leave_group_request import LeaveGroupRequest, MemberIdentity
from kafkawire.messages.list_groups_request import ListGroupsRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.offset_commit_request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                      OffsetCommitRequestTopic)
from kafkawire.messages.offset_delete_request import (OffsetDeleteRequest, OffsetDeleteRequestPartition,
                                                      OffsetDeleteRequestTopic)
from kafkawire.messages.offset_fetch_request import (OffsetFetchRequest, OffsetFetchRequestGroup,
                                                     OffsetFetchRequestTopic, OffsetFetchRequestTopics)
from kafkawire.messages.sync_group_request import SyncGroupRequest, SyncGroupRequestAssignment
from kafkawire.broker.group_records import partition_for
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch
from kafkawire.tools import cli

from .test_combined_node import WAIT_S, combined_node

kafka = pytest.importorskip("kafka")

GROUP_SETTINGS = {"group_initial_rebalance_delay_ms": 0, "offsets_topic_num_partitions": 3,
                  "offsets_topic_replication_factor": 1}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    with combined_node(tmp_path_factory.mktemp("groups"), **GROUP_SETTINGS) as n:
        yield n


def consumer(node, group: str, *, topic: str | None = None, **overrides):
    """A kafka-python member of ``group``, subscribed to ``topic`` once it knows the topic's
    partitions: kafka-python's leader otherwise assigns nothing, sees the partitions appear and
    rejoins at once, and its join racing a short poll() sometimes never completes on the client's
    side (kafka-python 3.0's own race, whichever broker answers)."""
    settings = dict(bootstrap_servers=node.bootstrap, group_id=group, auto_offset_reset="earliest",
                    enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=200,
                    max_poll_interval_ms=20_000, request_timeout_ms=21_000)
    settings.update(overrides)
    c = kafka.KafkaConsumer(**settings)
    if topic is not None:
        deadline = time.monotonic() + WAIT_S
        while not c.partitions_for_topic(topic):
            assert time.monotonic() < deadline, f"no metadata for {topic}"
            time.sleep(0.05)
        c.subscribe([topic])
    return c


def produce(node, topic: str, partitions: int, per_partition: int, tag: str) -> None:
    for p in range(partitions):
        batch = build_batch([(b"k", f"{tag}-{p}-{i}".encode()) for i in range(per_partition)])
        assert node.produce(topic, batch, partition=p).error_code == Errors.NONE


class Polled:
    """What a consumer has read ((partition, value) pairs) and its assignment, as its own thread
    polling it saw them."""

    def __init__(self):
        self.values: list = []
        self.assignment: frozenset = frozenset()


def poll_until(consumers, predicate, what: str) -> list:
    """Poll every consumer in a thread of its own (a member blocked in a rebalance must not keep
    another from polling, and so from rejoining) until ``predicate(polled)`` holds."""
    polled = [Polled() for _ in consumers]
    stop = threading.Event()

    def run(c, into: Polled):
        while not stop.is_set():
            for records in c.poll(timeout_ms=500).values():
                into.values.extend((r.partition, r.value.decode()) for r in records)
            into.assignment = frozenset(tp.partition for tp in c.assignment())
    threads = [threading.Thread(target=run, args=(c, into), daemon=True) for c, into in zip(consumers, polled)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + WAIT_S
    try:
        while not predicate(polled):
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {[vars(p) for p in polled]}"
            time.sleep(0.05)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=WAIT_S)
    return polled


def test_two_members_split_the_partitions_and_a_third_resumes_from_the_commits(node):
    node.create_topic("split", partitions=4)
    produce(node, "split", 4, 5, "first")
    a, b = consumer(node, "splitters", topic="split"), consumer(node, "splitters", topic="split")
    expected = {f"first-{p}-{i}" for p in range(4) for i in range(5)}
    pa, pb = poll_until([a, b], lambda g: {v for _, v in g[0].values + g[1].values} == expected and
                        g[0].assignment and g[1].assignment and all(c.position(tp) == 5 for c in (a, b)
                                                                    for tp in c.assignment()),
                        "both members to have partitions, read to their ends")
    assert pa.assignment | pb.assignment == {0, 1, 2, 3} and not pa.assignment & pb.assignment
    a.commit()
    b.commit()
    a.close(autocommit=False)
    b.close(autocommit=False)
    assert_dump_log_shows_the_commits(node, "splitters", "split", 4, 5)
    produce(node, "split", 4, 2, "second")
    c = consumer(node, "splitters", topic="split")
    later, = poll_until([c], lambda g: len(g[0].values) >= 8, "the third member to read the new records")
    c.close(autocommit=False)
    assert sorted(v for _, v in later.values) == sorted(f"second-{p}-{i}" for p in range(4) for i in range(2))


def assert_dump_log_shows_the_commits(node, group: str, topic: str, partitions: int, offset: int) -> None:
    """The records are Kafka's OffsetCommitKey/Value (dump-log --offsets-decoder reads them as
    Kafka's DumpLogSegments does), in the partition Kafka's hash of the group id picks."""
    index = partition_for(group, GROUP_SETTINGS["offsets_topic_num_partitions"])
    segment = os.path.join(node.data_dir, f"__consumer_offsets-{index}", "00000000000000000000.log")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["dump-log", "--offsets-decoder", "--print-data-log", "--files", segment]) == 0
    for p in range(partitions):
        assert (f'key: {{"type":"1","data":{{"group":"{group}","topic":"{topic}","partition":{p}}}}} '
                f'payload: {{"version":"4","data":{{"offset":{offset},') in out.getvalue()


def test_a_member_leaving_makes_the_other_take_its_partitions(node):
    node.create_topic("leaving", partitions=2)
    a, b = consumer(node, "leavers", topic="leaving"), consumer(node, "leavers", topic="leaving")
    poll_until([a, b], lambda g: g[0].assignment and g[1].assignment, "a partition each")
    b.close(autocommit=False)                  # LeaveGroup
    poll_until([a], lambda g: g[0].assignment == {0, 1}, "the remaining member to take both partitions")
    a.close(autocommit=False)


def test_the_group_apis_describe_and_list_the_group(node):
    node.create_topic("described")
    c = consumer(node, "describers", topic="described")
    poll_until([c], lambda g: g[0].assignment == {0}, "the member's assignment")
    found = node.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["describers"]), api_version=4)
    assert [(k.key, k.error_code, k.node_id) for k in found.coordinators] == [("describers", Errors.NONE, 1)]
    listed = node.call(ListGroupsRequest(states_filter=["stable"]), api_version=4)
    assert ("describers", "consumer", "Stable") in {(g.group_id, g.protocol_type, g.group_state) for g in listed.groups}
    group, = node.call(DescribeGroupsRequest(groups=["describers"]), api_version=5).groups
    assert (group.error_code, group.group_state, group.protocol_type, len(group.members)) == \
        (Errors.NONE, "Stable", "consumer", 1)
    c.close(autocommit=False)


def group_api_ranges(node) -> dict:
    advertised = {k.api_key: (k.min_version, k.max_version) for k in node.call(ApiVersionsRequest(
        client_software_name="kafkawire-tests", client_software_version="1")).api_keys}
    return {key: advertised[key] for key in (8, 9, 10, 11, 12, 13, 14, 15, 16, 42, 47)}


def at(ranges: dict, key: int, step: int) -> int:
    low, high = ranges[key]
    return max(low, min(step, high))


def member_of_a_fresh_group(node, group: str, join_version: int):
    """A JoinGroup at ``join_version`` (v4+: after MEMBER_ID_REQUIRED) into generation 1."""
    request = JoinGroupRequest(group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                               member_id="", protocol_type="consumer",
                               protocols=[JoinGroupRequestProtocol(name="range", metadata=b"meta")])
    joined = node.call(request, api_version=join_version)
    if join_version >= 4:
        assert joined.error_code == Errors.MEMBER_ID_REQUIRED
        request.member_id = joined.member_id
        joined = node.call(request, api_version=join_version)
    assert (joined.error_code, joined.generation_id, joined.leader) == (Errors.NONE, 1, joined.member_id)
    return joined.member_id


def test_every_advertised_version_of_every_group_api_is_answered(node):
    """Kafka 4.3.1's ranges (OffsetCommit v2-10, OffsetFetch v1-10, DeleteGroups v0-2, the rest
    from v0): a member joins, syncs, heartbeats, commits, fetches, is described and listed, leaves,
    its offsets are deleted (OffsetDelete v0) and its group is deleted, each request at every
    version the broker advertises."""
    node.create_topic("versioned")
    topic_id = node.call(MetadataRequest(topics=[MetadataRequestTopic(name="versioned")]),
                         api_version=12).topics[0].topic_id
    ranges = group_api_ranges(node)
    assert ranges[8] == (2, 10) and ranges[9] == (1, 10) and ranges[42] == (0, 2) and ranges[11] == (0, 9)
    assert ranges[47] == (0, 0)
    for step in range(max(high for _, high in ranges.values()) + 1):
        group = f"versions-{step}"
        find_version = at(ranges, 10, step)
        node.quorum.wait_until(lambda: coordinator_found(node, group, find_version), WAIT_S,
                               "FindCoordinator to name this node (__consumer_offsets is created on first use)")
        member = member_of_a_fresh_group(node, group, at(ranges, 11, step))
        sync_version = at(ranges, 14, step)
        sync = SyncGroupRequest(group_id=group, generation_id=1, member_id=member, assignments=[
            SyncGroupRequestAssignment(member_id=member, assignment=b"mine")])
        if sync_version >= 5:
            sync.protocol_type, sync.protocol_name = "consumer", "range"
        synced = node.call(sync, api_version=sync_version)
        assert (synced.error_code, synced.assignment) == (Errors.NONE, b"mine")
        beat = node.call(HeartbeatRequest(group_id=group, generation_id=1, member_id=member),
                         api_version=at(ranges, 12, step))
        assert beat.error_code == Errors.NONE
        commit_version = at(ranges, 8, step)
        by_id = dict(topic_id=topic_id) if commit_version >= 10 else dict(name="versioned")
        committed = node.call(OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=1, member_id=member, topics=[OffsetCommitRequestTopic(
                **by_id, partitions=[OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=step + 1, committed_metadata="m")])]),
            api_version=commit_version)
        assert [p.error_code for t in committed.topics for p in t.partitions] == [Errors.NONE]
        assert fetched_offset(node, group, topic_id, at(ranges, 9, step)) == step + 1
        described = node.call(DescribeGroupsRequest(groups=[group]), api_version=at(ranges, 15, step)).groups[0]
        assert (described.error_code, described.group_state, len(described.members)) == (Errors.NONE, "Stable", 1)
        listed = node.call(ListGroupsRequest(), api_version=at(ranges, 16, step))
        assert group in {g.group_id for g in listed.groups}
        leave_version = at(ranges, 13, step)
        left = node.call(LeaveGroupRequest(group_id=group, members=[MemberIdentity(member_id=member)])
                         if leave_version >= 3 else LeaveGroupRequest(group_id=group, member_id=member),
                         api_version=leave_version)
        assert left.error_code == Errors.NONE and all(m.error_code == Errors.NONE for m in left.members)
        if step == 0:           # OffsetDelete has one version; its group is Empty now
            emptied = node.call(OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequestTopic(
                name="versioned", partitions=[OffsetDeleteRequestPartition(partition_index=0)])]), api_version=0)
            assert (emptied.error_code, emptied.topics[0].partitions[0].error_code) == (Errors.NONE, Errors.NONE)
            assert fetched_offset(node, group, topic_id, at(ranges, 9, step)) == -1
        deleted = node.call(DeleteGroupsRequest(groups_names=[group]), api_version=at(ranges, 42, step))
        assert [(r.group_id, r.error_code) for r in deleted.results] == [(group, Errors.NONE)]


def coordinator_found(node, group: str, version: int) -> bool:
    found = node.call(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]) if version >= 4 else
                      FindCoordinatorRequest(key=group), api_version=version)
    one = found.coordinators[0] if version >= 4 else found
    assert one.error_code in (Errors.NONE, Errors.COORDINATOR_NOT_AVAILABLE)
    return one.error_code == Errors.NONE and one.node_id == 1


def test_find_coordinator_v1_to_v3_answers_an_error_with_kafkas_message(node):
    """FindCoordinator v1-v3 carry one key and an error_message: an error (here the SHARE key
    type, which Kafka answers INVALID_REQUEST below v6) is answered with the error's text, as
    Kafka's Errors.message(), not a broken connection (librdkafka asks v2 while
    __consumer_offsets is being created)."""
    for version in (1, 2, 3):
        found = node.call(FindCoordinatorRequest(key="a-share-group", key_type=2), api_version=version)
        assert (found.error_code, found.error_message) == (Errors.INVALID_REQUEST, Errors.INVALID_REQUEST.message)


def fetched_offset(node, group: str, topic_id, version: int) -> int:
    if version >= 8:
        by_id = dict(topic_id=topic_id) if version >= 10 else dict(name="versioned")
        response = node.call(OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=[
            OffsetFetchRequestTopics(**by_id, partition_indexes=[0])])]), api_version=version)
        g, = response.groups
        assert g.error_code == Errors.NONE
        return g.topics[0].partitions[0].committed_offset
    response = node.call(OffsetFetchRequest(group_id=group, topics=[OffsetFetchRequestTopic(
        name="versioned", partition_indexes=[0])]), api_version=version)
    assert response.error_code == Errors.NONE
    return response.topics[0].partitions[0].committed_offset


def test_confluent_kafka_consumes_in_a_group_and_resumes_from_its_commit(node):
    """librdkafka's classic group protocol: subscribe, read, commit synchronously; a second
    consumer of the group starts after the commit."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    node.create_topic("rdkafka-group", partitions=2)
    produce(node, "rdkafka-group", 2, 3, "first")
    settings = {"bootstrap.servers": node.bootstrap, "group.id": "rdkafka", "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "session.timeout.ms": 6000}

    def read(count: int) -> list:
        c = confluent_kafka.Consumer(settings)
        c.subscribe(["rdkafka-group"])
        got = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < count:
            assert time.monotonic() < deadline, f"timed out with {got}"
            message = c.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value().decode())
        c.commit(asynchronous=False)
        c.close()
        return got
    assert sorted(read(6)) == sorted(f"first-{p}-{i}" for p in range(2) for i in range(3))
    produce(node, "rdkafka-group", 2, 1, "second")
    assert sorted(read(2)) == ["second-0-0", "second-1-0"]


def test_committed_offsets_survive_a_restart(node):
    """Last in the module: it restarts the node (gracefully). The offsets come back from
    __consumer_offsets when the coordinator loads it."""
    node.create_topic("durable-offsets")
    produce(node, "durable-offsets", 1, 6, "before")
    c = consumer(node, "restarters", topic="durable-offsets")
    poll_until([c], lambda g: len(g[0].values) == 6, "the six records")
    c.commit()
    c.close(autocommit=False)
    node.quorum.stop(1)
    node.quorum.start(1)
    node.wait_unfenced()
    node.quorum.wait_until(lambda: node.leaders("durable-offsets") == [1], WAIT_S, "the topic's leader")
    produce(node, "durable-offsets", 1, 1, "after")
    c = consumer(node, "restarters", topic="durable-offsets")
    got, = poll_until([c], lambda g: len(g[0].values) >= 1, "the record produced after the restart")
    c.close(autocommit=False)
    assert got.values == [(0, "after-0-0")]
