"""The ``__consumer_offsets`` records of KIP-848 consumer groups in Kafka 4.3.1's formats
(GroupCoordinatorRecordHelpers): each is ``(record type, key message, value message | None)``,
``None`` a tombstone, and ``encode`` turns it into the (key, value) bytes Kafka writes (an int16
record type + the key at version 0; an int16 version 0 + the flexible value).

    ConsumerGroupMetadata (3)          the group epoch and the hash of its topics' metadata
    ConsumerGroupPartitionMetadata (4) not written since Kafka 4.1 (the hash above replaced it);
                                       tombstoned when a group is deleted, as 4.3.1 does
    ConsumerGroupMemberMetadata (5)    a member's subscription
    ConsumerGroupTargetAssignmentMetadata (6)  the assignment epoch
    ConsumerGroupTargetAssignmentMember (7)    a member's target partitions
    ConsumerGroupCurrentMemberAssignment (8)   a member's epochs, state and owned partitions
    ConsumerGroupRegularExpression (16)        a subscribed regex's resolution: the topics it
                                               matched, the image offset and the time of the match

A member's partitions are ``{topic id: {partition: assignment epoch}}`` (the epochs go to the
tagged AssignmentEpochs field, as 4.3.1 writes them); a target is ``{topic id: set(partitions)}``.
"""
from __future__ import annotations

from kafkawire.messages.consumer_group_current_member_assignment_key import ConsumerGroupCurrentMemberAssignmentKey
from kafkawire.messages.consumer_group_current_member_assignment_value import (
    ConsumerGroupCurrentMemberAssignmentValue, TopicPartitions as CurrentTopicPartitions)
from kafkawire.messages.consumer_group_member_metadata_key import ConsumerGroupMemberMetadataKey
from kafkawire.messages.consumer_group_member_metadata_value import (ClassicMemberMetadata, ClassicProtocol,
                                                                     ConsumerGroupMemberMetadataValue)
from kafkawire.messages.consumer_group_metadata_key import ConsumerGroupMetadataKey
from kafkawire.messages.consumer_group_metadata_value import ConsumerGroupMetadataValue
from kafkawire.messages.consumer_group_partition_metadata_key import ConsumerGroupPartitionMetadataKey
from kafkawire.messages.consumer_group_partition_metadata_value import ConsumerGroupPartitionMetadataValue
from kafkawire.messages.consumer_group_regular_expression_key import ConsumerGroupRegularExpressionKey
from kafkawire.messages.consumer_group_regular_expression_value import ConsumerGroupRegularExpressionValue
from kafkawire.messages.consumer_group_target_assignment_member_key import ConsumerGroupTargetAssignmentMemberKey
from kafkawire.messages.consumer_group_target_assignment_member_value import (
    ConsumerGroupTargetAssignmentMemberValue, TopicPartition as TargetTopicPartition)
from kafkawire.messages.consumer_group_target_assignment_metadata_key import ConsumerGroupTargetAssignmentMetadataKey
from kafkawire.messages.consumer_group_target_assignment_metadata_value import (
    ConsumerGroupTargetAssignmentMetadataValue)

from .group_records import decode_typed, encode_typed

__all__ = ["GROUP_EPOCH", "PARTITION_METADATA", "MEMBER_METADATA", "TARGET_METADATA", "TARGET_MEMBER",
           "CURRENT_ASSIGNMENT", "REGULAR_EXPRESSION", "CONSUMER_RECORD_TYPES", "encode", "decode",
           "group_epoch_record", "group_epoch_tombstone", "partition_metadata_tombstone", "member_record",
           "member_tombstone", "target_member_record", "target_member_tombstone", "target_metadata_record",
           "target_metadata_tombstone", "current_assignment_record", "current_assignment_tombstone", "regex_record",
           "regex_tombstone"]

GROUP_EPOCH, PARTITION_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 3, 4, 5, 6, 7, 8
REGULAR_EXPRESSION = 16
_CLASSES = {
    GROUP_EPOCH: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    PARTITION_METADATA: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    MEMBER_METADATA: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    TARGET_METADATA: (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    TARGET_MEMBER: (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    CURRENT_ASSIGNMENT: (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
    REGULAR_EXPRESSION: (ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
}
CONSUMER_RECORD_TYPES = frozenset(_CLASSES)


encode = encode_typed


def decode(record_type: int, key: bytes, value: bytes | None):
    """The record of ``key`` (its type already read) and ``value``: (type, key, value | None).
    Raises DecodeError on bytes that do not decode."""
    return decode_typed(_CLASSES, record_type, key, value)


# -- the group --

def group_epoch_record(group_id: str, epoch: int, metadata_hash: int):
    return GROUP_EPOCH, ConsumerGroupMetadataKey(group_id=group_id), ConsumerGroupMetadataValue(
        epoch=epoch, metadata_hash=metadata_hash)


def group_epoch_tombstone(group_id: str):
    return GROUP_EPOCH, ConsumerGroupMetadataKey(group_id=group_id), None


def partition_metadata_tombstone(group_id: str):
    return PARTITION_METADATA, ConsumerGroupPartitionMetadataKey(group_id=group_id), None


# -- a member's subscription --

def member_record(group_id: str, member):
    """``member`` is a kafkawire.broker.consumer_group.ConsumerMember."""
    value = ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=sorted(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex, rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor, classic_member_metadata=_classic_metadata(member.classic))
    return MEMBER_METADATA, ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id), value


def _classic_metadata(classic):
    if classic is None:
        return None
    return ClassicMemberMetadata(session_timeout_ms=classic.session_timeout_ms, supported_protocols=[
        ClassicProtocol(name=name, metadata=metadata) for name, metadata in classic.protocols])


def member_tombstone(group_id: str, member_id: str):
    return MEMBER_METADATA, ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None


# -- the target assignment --

def target_member_record(group_id: str, member_id: str, target: dict):
    value = ConsumerGroupTargetAssignmentMemberValue(topic_partitions=[
        TargetTopicPartition(topic_id=topic_id, partitions=sorted(partitions))
        for topic_id, partitions in target.items()])
    return TARGET_MEMBER, ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), value


def target_member_tombstone(group_id: str, member_id: str):
    return TARGET_MEMBER, ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None


def target_metadata_record(group_id: str, epoch: int, timestamp_ms: int):
    return TARGET_METADATA, ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id), \
        ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch, assignment_timestamp=timestamp_ms)


def target_metadata_tombstone(group_id: str):
    return TARGET_METADATA, ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id), None


# -- a member's current assignment --

def _with_epochs(partitions: dict) -> list:
    topics = []
    for topic_id, epochs in partitions.items():
        ordered = sorted(epochs)
        topics.append(CurrentTopicPartitions(topic_id=topic_id, partitions=ordered,
                                             assignment_epochs=[epochs[p] for p in ordered]))
    return topics


def current_assignment_record(group_id: str, member):
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch, state=member.state,
        assigned_partitions=_with_epochs(member.assigned), partitions_pending_revocation=_with_epochs(member.revoking))
    return CURRENT_ASSIGNMENT, ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member.member_id), \
        value


def current_assignment_tombstone(group_id: str, member_id: str):
    return CURRENT_ASSIGNMENT, ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None


# -- a resolved regular expression --

def regex_record(group_id: str, regex: str, topics, version: int, timestamp_ms: int):
    """newConsumerGroupRegularExpressionRecord: the topics ``regex`` matched in the image of
    offset ``version`` at ``timestamp_ms`` (sorted here for a stable record; Kafka's order is its
    HashSet's)."""
    return REGULAR_EXPRESSION, ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex), \
        ConsumerGroupRegularExpressionValue(topics=sorted(topics), version=version, timestamp=timestamp_ms)


def regex_tombstone(group_id: str, regex: str):
    return REGULAR_EXPRESSION, ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex), None
