"""Share groups (KIP-932) through the wire, on the session's embedded broker (kafkawire.testing):
raw ShareGroupHeartbeat, ShareFetch, ShareAcknowledge and ShareGroupDescribe requests, as Kafka's
KafkaShareConsumer sends them (tests/interop/test_share_consumer_on_kafkawire_broker.py runs the
Java consumer itself). No waiting on heartbeat intervals: each step is one request.
"""
from __future__ import annotations

import time
import uuid

import pytest

from kafkawire.broker.share_partition import ACCEPT, REJECT, RELEASE
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.consumer_group_heartbeat_request import ConsumerGroupHeartbeatRequest
from kafkawire.messages.join_group_request import JoinGroupRequest, JoinGroupRequestProtocol
from kafkawire.messages.delete_groups_request import DeleteGroupsRequest
from kafkawire.messages.describe_groups_request import DescribeGroupsRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.heartbeat_request import HeartbeatRequest
from kafkawire.messages.offset_commit_request import (OffsetCommitRequest, OffsetCommitRequestPartition,
                                                      OffsetCommitRequestTopic)
from kafkawire.messages.list_groups_request import ListGroupsRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.messages.share_acknowledge_request import (AcknowledgementBatch as AckBatch, AcknowledgePartition,
                                                          AcknowledgeTopic, ShareAcknowledgeRequest)
from kafkawire.messages.share_fetch_request import AcknowledgementBatch, FetchPartition, FetchTopic, ShareFetchRequest
from kafkawire.messages.share_group_describe_request import ShareGroupDescribeRequest
from kafkawire.messages.share_group_heartbeat_request import ShareGroupHeartbeatRequest
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import build_batch, iter_batches
from .wire import call

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

TOPIC, GROUP = "share-wire", "share-wire-group"


def create_topic(node, name: str, partitions: int):
    from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    response = call(node, CreateTopicsRequest(timeout_ms=20_000, validate_only=False, topics=[CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])]), 5)
    assert response.topics[0].error_code in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS)
    for _ in range(200):          # bounded: until the metadata names a leader for each partition
        topic = call(node, MetadataRequest(topics=[MetadataRequestTopic(name=name)]), 12).topics[0]
        if topic.error_code == Errors.NONE and len(topic.partitions) == partitions and \
                all(p.leader_id >= 0 for p in topic.partitions):
            return topic.topic_id
    raise AssertionError(f"{name} has no leaders")


def wait_for_coordinator(node) -> None:
    """FindCoordinator (key type GROUP, as a share consumer asks) until the group's coordinator
    answers: the first one creates __consumer_offsets."""
    for _ in range(200):
        found = call(node, FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 6).coordinators[0]
        if found.error_code == Errors.NONE and heartbeat(node, "probe", -1).error_code in (
                Errors.GROUP_ID_NOT_FOUND, Errors.UNKNOWN_MEMBER_ID):
            return
        time.sleep(0.05)
    raise AssertionError("no coordinator for the group")


def produce(node, name: str, partition: int, values: list[bytes]) -> None:
    batch = build_batch([(None, v, (), 0) for v in values])
    response = call(node, ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[TopicProduceData(
        name=name, partition_data=[PartitionProduceData(index=partition, records=batch)])]), 9)
    assert response.responses[0].partition_responses[0].error_code == Errors.NONE


def heartbeat(node, member_id: str, epoch: int, topics=None):
    return call(node, ShareGroupHeartbeatRequest(group_id=GROUP, member_id=member_id, member_epoch=epoch,
                                                 subscribed_topic_names=topics), 1)


def assigned_once_initialized(node, member_id: str, epoch: int):
    """Heartbeat until the group coordinator has initialized the share-partitions and assigns
    them, at most once per group.share.assignment.interval.ms (1 s) as Kafka's (bounded: 60 s, as
    the session's node shares a loaded machine): the answer."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = heartbeat(node, member_id, epoch)
        if answer.assignment is not None and answer.assignment.topic_partitions:
            return answer
        time.sleep(0.02)
    raise AssertionError("the share-partitions were not initialized in 60 s")


def share_fetch(node, member_id: str, epoch: int, topic_id, partitions, acks=None, wait_ms=0, version=2):
    acks = acks or {}
    return call(node, ShareFetchRequest(
        group_id=GROUP, member_id=member_id, share_session_epoch=epoch, max_wait_ms=wait_ms, min_bytes=1,
        max_bytes=1 << 20, max_records=500, batch_size=500, topics=[FetchTopic(topic_id=topic_id, partitions=[
            FetchPartition(partition_index=p, acknowledgement_batches=acks.get(p, [])) for p in partitions])],
        forgotten_topics_data=[]), version)


def delivered(response) -> dict:
    """partition -> (values of the acquired records, [(first, last, delivery count)])."""
    out = {}
    for topic in response.responses:
        for p in topic.partitions:
            ranges = [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]
            values = [r.value for b in iter_batches(p.records or b"") for r in b
                      if any(f <= r.offset <= la for f, la, _ in ranges)]
            out[p.partition_index] = (values, ranges)
    return out


def test_share_group_members_fetch_acknowledge_and_redeliver(kafkawire_broker):
    node = kafkawire_broker
    versions = {k.api_key: (k.min_version, k.max_version) for k in call(
        node, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).api_keys}
    assert [versions.get(k) for k in (76, 77, 78, 79)] == [(1, 1), (1, 1), (1, 2), (1, 2)]
    topic_id = create_topic(node, TOPIC, 2)
    m1, m2 = str(uuid.uuid4()), str(uuid.uuid4())
    wait_for_coordinator(node)

    assert heartbeat(node, m1, 0).error_code == Errors.INVALID_REQUEST            # no subscription
    joined = heartbeat(node, m1, 0, [TOPIC])
    # nothing assigned until the share coordinator initialized the share-partitions (as in Kafka)
    assert (joined.error_code, joined.member_epoch, joined.assignment.topic_partitions) == (Errors.NONE, 1, [])
    initialized = assigned_once_initialized(node, m1, 1)
    assert initialized.member_epoch == 2 and sorted(initialized.assignment.topic_partitions[0].partitions) == [0, 1]
    assert heartbeat(node, m1, 5).error_code == Errors.FENCED_MEMBER_EPOCH

    # the first fetch opens the session and starts each share-partition at its high watermark (0)
    opened = share_fetch(node, m1, 0, topic_id, [0, 1])
    assert opened.error_code == Errors.NONE and delivered(opened) == {0: ([], []), 1: ([], [])}
    produce(node, TOPIC, 0, [b"a", b"b", b"c", b"d", b"e", b"f"])
    first = share_fetch(node, m1, 1, topic_id, [], wait_ms=5_000)
    assert delivered(first)[0] == ([b"a", b"b", b"c", b"d", b"e", b"f"], [(0, 5, 1)])
    assert first.acquisition_lock_timeout_ms == 30_000

    second = heartbeat(node, m2, 0, [TOPIC])                  # two members, two partitions: one each
    if not second.assignment.topic_partitions:                # within 1 s of the last target: the next one waits
        second = assigned_once_initialized(node, m2, second.member_epoch)
    assert second.member_epoch == 3 and len(second.assignment.topic_partitions[0].partitions) == 1
    assert delivered(share_fetch(node, m2, 0, topic_id, [0])) == {0: ([], [])}   # all locked by m1

    bad = call(node, ShareAcknowledgeRequest(group_id=GROUP, member_id=m1, share_session_epoch=7, topics=[]), 2)
    assert bad.error_code == Errors.INVALID_SHARE_SESSION_EPOCH
    acked = call(node, ShareAcknowledgeRequest(group_id=GROUP, member_id=m1, share_session_epoch=2, topics=[
        AcknowledgeTopic(topic_id=topic_id, partitions=[AcknowledgePartition(partition_index=0, acknowledgement_batches=[
            AckBatch(first_offset=0, last_offset=5, acknowledge_types=[ACCEPT, ACCEPT, RELEASE, REJECT, ACCEPT,
                                                                       RELEASE])])])]), 2)
    assert acked.error_code == Errors.NONE and acked.responses[0].partitions[0].error_code == Errors.NONE
    again = share_fetch(node, m2, 1, topic_id, [], wait_ms=5_000)
    assert delivered(again)[0] == ([b"c", b"f"], [(2, 2, 2), (5, 5, 2)])     # the released ones, again

    # m2 accepts c on the next fetch and releases f: f comes back; an acknowledgement of a record
    # done already (below the share-partition's start offset, 5) is skipped without an error, as
    # Kafka's SharePartition.acknowledge skips it
    both = share_fetch(node, m2, 2, topic_id, [0], acks={0: [
        AcknowledgementBatch(first_offset=2, last_offset=2, acknowledge_types=[ACCEPT]),
        AcknowledgementBatch(first_offset=5, last_offset=5, acknowledge_types=[RELEASE])]}, wait_ms=5_000)
    assert both.responses[0].partitions[0].acknowledge_error_code == Errors.NONE
    assert delivered(both)[0] == ([b"f"], [(5, 5, 3)])
    done = share_fetch(node, m2, 3, topic_id, [0], acks={0: [
        AcknowledgementBatch(first_offset=0, last_offset=0, acknowledge_types=[REJECT])]})
    assert done.responses[0].partitions[0].acknowledge_error_code == Errors.NONE
    assert done.responses[0].partitions[0].acknowledge_error_message is None

    consumer = call(node, ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=str(uuid.uuid4()), member_epoch=0,
                                                        rebalance_timeout_ms=10_000, subscribed_topic_names=[TOPIC],
                                                        topic_partitions=[]), 1)
    assert consumer.error_code == Errors.GROUP_ID_NOT_FOUND          # a share group's id, as Kafka answers
    joined_classic = call(node, JoinGroupRequest(group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                                 member_id="", protocol_type="consumer",
                                                 protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")]), 9)
    assert joined_classic.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    classic_view = call(node, DescribeGroupsRequest(groups=[GROUP]), 6).groups[0]        # as Kafka answers
    assert (classic_view.error_code, classic_view.error_message, classic_view.group_state) == (
        Errors.GROUP_ID_NOT_FOUND, f"Group {GROUP} is not a classic group.", "Dead")
    assert call(node, DescribeGroupsRequest(groups=[GROUP]), 5).groups[0].error_code == Errors.NONE   # v5: Dead
    committed = call(node, OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="",
                                               topics=[OffsetCommitRequestTopic(name=TOPIC, partitions=[
                                                   OffsetCommitRequestPartition(partition_index=0,
                                                                                committed_offset=1)])]), 9)
    assert committed.topics[0].partitions[0].error_code == Errors.GROUP_ID_NOT_FOUND   # no simple group made
    classic_beat = call(node, HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=m1), 4)
    assert classic_beat.error_code == Errors.UNKNOWN_MEMBER_ID                           # as Kafka's
    described = call(node, ShareGroupDescribeRequest(group_ids=[GROUP, "no-such-share-group"]), 1).groups
    assert (described[0].error_code, described[0].group_state, described[0].assignor_name) == \
        (Errors.NONE, "Stable", "simple")
    assert sorted(m.member_id for m in described[0].members) == sorted([m1, m2])
    assert described[1].error_code == Errors.GROUP_ID_NOT_FOUND
    # The session's broker is shared with other test files (their groups of every type may be
    # there, in any order): only share groups are listed, this one among them.
    listed = call(node, ListGroupsRequest(states_filter=[], types_filter=["share"]), 5).groups
    assert {(g.group_type, g.protocol_type) for g in listed} == {("share", "share")}
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed if g.group_id == GROUP] == \
        [(GROUP, "share", "share", "Stable")]

    # m2 leaves: its session ends and f (held by m2) is delivered to m1
    left = heartbeat(node, m2, -1)
    assert (left.error_code, left.member_epoch) == (Errors.NONE, -1)
    assert share_fetch(node, m2, 4, topic_id, []).error_code == Errors.SHARE_SESSION_NOT_FOUND
    assert delivered(share_fetch(node, m1, 3, topic_id, [], wait_ms=5_000))[0] == ([b"f"], [(5, 5, 4)])
    closed = call(node, ShareAcknowledgeRequest(group_id=GROUP, member_id=m1, share_session_epoch=-1, topics=[
        AcknowledgeTopic(topic_id=topic_id, partitions=[AcknowledgePartition(partition_index=0, acknowledgement_batches=[
            AckBatch(first_offset=5, last_offset=5, acknowledge_types=[ACCEPT])])])]), 2)
    assert closed.responses[0].partitions[0].error_code == Errors.NONE
    # v1 of ShareFetch and ShareAcknowledge (Kafka 4.3.1's lowest): a new session, one more record
    produce(node, TOPIC, 1, [b"g"])
    v1 = share_fetch(node, m1, 0, topic_id, [1], wait_ms=5_000, version=1)
    assert delivered(v1)[1] == ([b"g"], [(0, 0, 1)])
    acked_v1 = call(node, ShareAcknowledgeRequest(group_id=GROUP, member_id=m1, share_session_epoch=-1, topics=[
        AcknowledgeTopic(topic_id=topic_id, partitions=[AcknowledgePartition(partition_index=1, acknowledgement_batches=[
            AckBatch(first_offset=0, last_offset=0, acknowledge_types=[ACCEPT])])])]), 1)
    assert acked_v1.error_code == Errors.NONE and acked_v1.responses[0].partitions[0].error_code == Errors.NONE
    assert heartbeat(node, m1, -1).member_epoch == -1
    def start_offsets():                 # at the share coordinator (this node), -1: no state
        from kafkawire.messages.read_share_group_state_summary_request import (
            PartitionData as SummaryPartition, ReadShareGroupStateSummaryRequest, ReadStateSummaryData)
        return [p.start_offset for p in call(node, ReadShareGroupStateSummaryRequest(group_id=GROUP, topics=[
            ReadStateSummaryData(topic_id=topic_id, partitions=[SummaryPartition(partition=i, leader_epoch=0)
                                                                for i in (0, 1)])]), 1).results[0].partitions]
    # each write carries the start offset from before its own records' change (kept once written),
    # as Kafka's SharePartition writes it: 5 and 0, with 5 and 0 written acknowledged
    assert start_offsets() == [5, 0]
    deleted = call(node, DeleteGroupsRequest(groups_names=[GROUP, GROUP]), 2).results
    assert [r.error_code for r in deleted] == [Errors.NONE, Errors.GROUP_ID_NOT_FOUND]
    assert start_offsets() == [-1, -1]            # the state is deleted before DeleteGroups answers
    assert call(node, ShareGroupDescribeRequest(group_ids=[GROUP]), 1).groups[0].error_code == Errors.GROUP_ID_NOT_FOUND


def test_a_share_partition_without_state_is_refused_with_the_share_coordinators_message(kafkawire_broker):
    """A member fetching a partition the group coordinator never initialized (not assigned to it)
    gets the share coordinator's refusal as UNKNOWN_SERVER_ERROR with its message, and acknowledging
    there UNKNOWN_TOPIC_OR_PARTITION with its message, as Kafka's SharePartitionManager answers."""
    node, name, member = kafkawire_broker, "share-wire-no-state", str(uuid.uuid4())
    topic_id = create_topic(node, name, 1)
    wait_for_coordinator(node)
    fetched = call(node, ShareFetchRequest(
        group_id="share-wire-no-state-group", member_id=member, share_session_epoch=0, max_wait_ms=0, min_bytes=1,
        max_bytes=1 << 20, max_records=500, batch_size=500, forgotten_topics_data=[],
        topics=[FetchTopic(topic_id=topic_id, partitions=[FetchPartition(partition_index=0)])]), 2)
    partition = fetched.responses[0].partitions[0]
    assert (fetched.error_code, partition.error_code, partition.error_message) == (
        Errors.NONE, Errors.UNKNOWN_SERVER_ERROR, "Read operation on uninitialized share partition not allowed.")
    acked = call(node, ShareAcknowledgeRequest(
        group_id="share-wire-no-state-group", member_id=member, share_session_epoch=1, topics=[AcknowledgeTopic(
            topic_id=topic_id, partitions=[AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                AckBatch(first_offset=0, last_offset=0, acknowledge_types=[ACCEPT])])])]), 2)
    partition = acked.responses[0].partitions[0]
    assert (partition.error_code, partition.error_message) == (
        Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION.message)
