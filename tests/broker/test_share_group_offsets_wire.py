"""DescribeShareGroupOffsets, AlterShareGroupOffsets and DeleteShareGroupOffsets on the session's
embedded broker (the group coordinator and the partitions' leader): Kafka 4.3.1's rules, with the
start offsets kafkawire's share-partitions keep on their leader (kafkawire.broker.share_offsets)."""
from __future__ import annotations

import time
import uuid

from kafkawire.broker.share_partition import ACCEPT
from kafkawire.messages.alter_share_group_offsets_request import (AlterShareGroupOffsetsRequest,
                                                                  AlterShareGroupOffsetsRequestPartition,
                                                                  AlterShareGroupOffsetsRequestTopic)
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.delete_groups_request import DeleteGroupsRequest
from kafkawire.messages.delete_share_group_offsets_request import (DeleteShareGroupOffsetsRequest,
                                                                   DeleteShareGroupOffsetsRequestTopic)
from kafkawire.messages.describe_share_group_offsets_request import (DescribeShareGroupOffsetsRequest,
                                                                     DescribeShareGroupOffsetsRequestGroup,
                                                                     DescribeShareGroupOffsetsRequestTopic)
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.share_fetch_request import AcknowledgementBatch, FetchPartition, FetchTopic, ShareFetchRequest
from kafkawire.messages.share_group_heartbeat_request import ShareGroupHeartbeatRequest
from kafkawire.protocol.error_codes import Errors
from .test_share_groups_wire import create_topic, delivered, produce
from .wire import call

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

TOPIC, GROUP = "share-offsets-wire", "share-offsets-wire-group"


def heartbeat(node, member_id: str, epoch: int, topics=None):
    return call(node, ShareGroupHeartbeatRequest(group_id=GROUP, member_id=member_id, member_epoch=epoch,
                                                 subscribed_topic_names=topics), 1)


def join(node, member_id: str):
    """FindCoordinator, then the member's first heartbeat, until the coordinator answers (bounded)."""
    for _ in range(200):
        found = call(node, FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 6).coordinators[0]
        if found.error_code == Errors.NONE:
            joined = heartbeat(node, member_id, 0, [TOPIC])
            if joined.error_code == Errors.NONE:
                return joined
    raise AssertionError("no coordinator for the group")


def share_fetch(node, member_id: str, epoch: int, topic_id, partitions, acks=None, wait_ms=0):
    acks = acks or {}
    return call(node, ShareFetchRequest(
        group_id=GROUP, member_id=member_id, share_session_epoch=epoch, max_wait_ms=wait_ms, min_bytes=1,
        max_bytes=1 << 20, max_records=500, batch_size=500, topics=[FetchTopic(topic_id=topic_id, partitions=[
            FetchPartition(partition_index=p, acknowledgement_batches=acks.get(p, [])) for p in partitions])],
        forgotten_topics_data=[]), 2)


def offsets(node, topics=None, group=GROUP):
    """{topic name: {partition: (start offset, lag, error code)}} of the group (every known one when topics is None)."""
    request_topics = None if topics is None else [
        DescribeShareGroupOffsetsRequestTopic(topic_name=n, partitions=ps) for n, ps in topics.items()]
    response = call(node, DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
        group_id=group, topics=request_topics)]), 1)
    answer = response.groups[0]
    assert answer.error_code == Errors.NONE, answer
    return {t.topic_name: {p.partition_index: (p.start_offset, p.lag, p.error_code) for p in t.partitions}
            for t in answer.topics}


def wait_initialized(node):
    """The group's described share-partitions once the group coordinator lists any (bounded: 60 s,
    as the node shares a loaded machine)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        described = offsets(node)
        if described:
            return described
        time.sleep(0.02)
    raise AssertionError("no share-partition initialized in 60 s")


def alter(node, starts: dict, topic=TOPIC, group=GROUP):
    response = call(node, AlterShareGroupOffsetsRequest(group_id=group, topics=[AlterShareGroupOffsetsRequestTopic(
        topic_name=topic, partitions=[AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
                                      for p, o in starts.items()])]), 0)
    return response


def delete(node, topics, group=GROUP):
    return call(node, DeleteShareGroupOffsetsRequest(group_id=group, topics=[
        DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics]), 0)


def test_share_group_offsets_describe_alter_delete(kafkawire_broker):
    node = kafkawire_broker
    versions = {k.api_key: (k.min_version, k.max_version) for k in call(
        node, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).api_keys}
    assert [versions.get(k) for k in (90, 91, 92)] == [(0, 1), (0, 0), (0, 0)]
    topic_id = create_topic(node, TOPIC, 2)
    member = str(uuid.uuid4())
    assert join(node, member).member_epoch >= 1
    # the share-partitions the group coordinator initialized (its ShareGroupStatePartitionMetadata),
    # at start offset -1 until their leader's first fetch resolves share.auto.offset.reset
    assert wait_initialized(node) == {TOPIC: {0: (-1, -1, 0), 1: (-1, -1, 0)}}
    share_fetch(node, member, 0, topic_id, [0, 1])                    # both start at the high watermark, 0
    produce(node, TOPIC, 0, [b"a", b"b", b"c", b"d", b"e", b"f"])
    assert delivered(share_fetch(node, member, 1, topic_id, [], wait_ms=5_000))[0][1] == [(0, 5, 1)]
    share_fetch(node, member, 2, topic_id, [0], acks={0: [
        AcknowledgementBatch(first_offset=0, last_offset=2, acknowledge_types=[ACCEPT]),
        AcknowledgementBatch(first_offset=4, last_offset=4, acknowledge_types=[ACCEPT])]})
    # the write carried the start offset from before its own records' change, 0, and the delivery-complete
    # count 4 (0-2 and 4), as Kafka's SharePartition writes them; lag (Kafka's formula): 6 - 0 - 4 = 2
    assert offsets(node) == {TOPIC: {0: (0, 2, 0), 1: (0, 0, 0)}}
    assert offsets(node, {TOPIC: [0], "share-offsets-missing": [0]}) == {
        TOPIC: {0: (0, 2, 0)}, "share-offsets-missing": {0: (-1, -1, 0)}}

    busy = alter(node, {0: 1})
    assert (busy.error_code, busy.error_message) == (Errors.NON_EMPTY_GROUP, Errors.NON_EMPTY_GROUP.message)
    assert delete(node, [TOPIC]).error_code == Errors.NON_EMPTY_GROUP
    assert heartbeat(node, member, -1).error_code == Errors.NONE       # leaves: the group is Empty

    altered = alter(node, {0: 1, 5: 0})
    assert altered.error_code == Errors.NONE
    assert [(p.partition_index, p.error_code) for p in altered.responses[0].partitions] == [
        (0, Errors.NONE), (5, Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    assert altered.responses[0].topic_id == topic_id
    assert alter(node, {0: 0}, topic="share-offsets-missing").responses[0].partitions[0].error_code == \
        Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert offsets(node)[TOPIC][0] == (1, 5, 0)
    again = str(uuid.uuid4())                                          # a new member gets them from offset 1
    join(node, again)
    assert delivered(share_fetch(node, again, 0, topic_id, [0], wait_ms=5_000))[0][1] == [(1, 5, 1)]
    heartbeat(node, again, -1)

    deleted = delete(node, [TOPIC, "share-offsets-missing"])
    assert deleted.error_code == Errors.NONE
    assert {t.topic_name: t.error_code for t in deleted.responses} == {
        TOPIC: Errors.NONE, "share-offsets-missing": Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert offsets(node) == {}
    nothing = delete(node, [TOPIC]).responses[0]
    assert (nothing.error_code, nothing.error_message) == (Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                                           "There is no offset information to delete.")
    assert delete(node, [TOPIC], group="share-offsets-no-group").error_code == Errors.GROUP_ID_NOT_FOUND
    # as Kafka's coordinator: Alter makes a group that does not exist (Empty), and passes a negative
    # start offset on (-1: the leader resolves share.auto.offset.reset at its first read)
    made = alter(node, {0: 4, 1: -1}, group="share-offsets-made")
    assert [(p.partition_index, p.error_code) for p in made.responses[0].partitions] == [(0, 0), (1, 0)], made
    assert offsets(node, group="share-offsets-made") == {TOPIC: {0: (4, 2, 0), 1: (-1, -1, 0)}}
    assert call(node, DeleteGroupsRequest(groups_names=["share-offsets-made"]), 2).results[0].error_code == 0
    # the session's broker is shared: the group goes (the other tests list the share groups)
    gone = call(node, DeleteGroupsRequest(groups_names=[GROUP]), 2).results[0]
    assert gone.error_code == Errors.NONE
