"""A share-partition's state follows it to a new leader on another broker (three kafkawire
nodes): the share coordinator runs on a third broker, so both leaders read and write the state
over the inter-broker listener (kafkawire.broker.share_persister); after leadership moves, the
new leader delivers no acknowledged record again and the in-flight ones with their delivery
counts kept. Before the share coordinator, a new leader started at share.auto.offset.reset."""
from __future__ import annotations

import uuid

from kafkawire.broker.share_partition import ACCEPT, RELEASE
from kafkawire.broker.share_state_records import coordinator_key
from kafkawire.messages.alter_partition_reassignments_request import (AlterPartitionReassignmentsRequest,
                                                                      ReassignablePartition, ReassignableTopic)
from kafkawire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest, TopicPartitions
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.share_fetch_request import AcknowledgementBatch
from kafkawire.protocol.error_codes import Errors

from .test_replication_follower_wire import NODES, WAIT_S, three_combined_nodes
from .test_share_group_offsets_wire import offsets
from .test_share_groups_wire import GROUP, assigned_once_initialized, delivered, heartbeat, produce, share_fetch
from .wire import call

TOPIC = "moving-queue"
# small internal topics: three partitions each, as many replicas as nodes
SETTINGS = {"offsets.topic.num.partitions": "3", "share.coordinator.state.topic.num.partitions": "3",
            "group.initial.rebalance.delay.ms": "0"}


def _metadata(broker):
    topic = call(broker, MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)]), 12).topics[0]
    return (topic.topic_id, topic.partitions[0].leader_id) if topic.error_code == 0 and topic.partitions else None


def _coordinator(broker, key_type: int, key: str) -> int | None:
    found = call(broker, FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]), 6).coordinators[0]
    return found.node_id if found.error_code == Errors.NONE else None


def _lead(quorum, brokers, replicas: list[int]) -> None:
    """Reorder the partition's replicas and elect the preferred (first) one."""
    any_broker = brokers[replicas[0]]
    call(any_broker, AlterPartitionReassignmentsRequest(timeout_ms=10_000, topics=[ReassignableTopic(
        name=TOPIC, partitions=[ReassignablePartition(partition_index=0, replicas=replicas)])]), 0)
    quorum.wait_until(lambda: call(any_broker, ElectLeadersRequest(election_type=0, timeout_ms=10_000, topic_partitions=[
        TopicPartitions(topic=TOPIC, partitions=[0])]), 2) and (_metadata(any_broker) or (0, 0))[1] == replicas[0],
        WAIT_S, f"broker {replicas[0]} leading {TOPIC}-0")


def test_a_new_leader_on_another_broker_resumes_the_share_partition_from_the_share_coordinator(tmp_path):
    with three_combined_nodes(tmp_path, SETTINGS) as (quorum, brokers):
        first = brokers[1]
        call(first, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name=TOPIC, num_partitions=-1, replication_factor=-1, configs=[], assignments=[
                CreatableReplicaAssignment(partition_index=0, broker_ids=list(NODES))])]))
        topic_id, _ = quorum.wait_until(lambda: _metadata(first), WAIT_S, f"{TOPIC} created")
        coordinator = quorum.wait_until(lambda: _coordinator(first, 2, coordinator_key(GROUP, topic_id, 0)),
                                        WAIT_S, "the share coordinator")
        group_id = quorum.wait_until(lambda: _coordinator(first, 0, GROUP), WAIT_S, "the group coordinator")
        group_node = brokers[group_id]
        # both leaders away from the share coordinator, the new one also away from the group coordinator
        old, new = sorted((n for n in NODES if n != coordinator), key=lambda n: n != group_id)
        _lead(quorum, brokers, [old, new, coordinator])
        member = str(uuid.uuid4())
        quorum.wait_until(lambda: heartbeat(group_node, member, 0, [TOPIC]).error_code == Errors.NONE, WAIT_S,
                          "the member joined")
        # assigned once the group coordinator initialized it at the share coordinator (another node)
        assert assigned_once_initialized(group_node, member, 1).assignment.topic_partitions[0].partitions == [0]
        assert share_fetch(brokers[old], member, 0, topic_id, [0]).error_code == Errors.NONE     # starts at 0
        produce(brokers[old], TOPIC, 0, [b"v%d" % i for i in range(5)])
        assert delivered(share_fetch(brokers[old], member, 1, topic_id, [], wait_ms=5_000))[0][1] == [(0, 4, 1)]
        acked = share_fetch(brokers[old], member, 2, topic_id, [0], acks={0: [
            AcknowledgementBatch(first_offset=0, last_offset=3, acknowledge_types=[ACCEPT] * 3 + [RELEASE])]},
            version=2)
        assert acked.responses[0].partitions[0].acknowledge_error_code == Errors.NONE

        _lead(quorum, brokers, [new, old, coordinator])
        moved = quorum.wait_until(lambda: delivered(share_fetch(brokers[new], member, 0, topic_id, [0],
                                                                wait_ms=2_000)).get(0), WAIT_S, "records from the new leader")
        # 3 released (written with its delivery count), 4 acquired only (not written, as Kafka's)
        assert moved == ([b"v3", b"v4"], [(3, 3, 2), (4, 4, 1)])
        # the group coordinator's lag comes from the leader's latest offset (ListOffsets to it, over
        # the network: it leads elsewhere): 5 records, 3 acknowledged, whichever start offset and
        # delivery-complete count the leader wrote last (0 and 3, or 3 and 0)
        (start, lag, code), = offsets(group_node, {TOPIC: [0]}, group=GROUP)[TOPIC].values()
        assert (start in (0, 3), lag, code) == (True, 2, Errors.NONE)
