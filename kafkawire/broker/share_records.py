"""The ``__consumer_offsets`` records of share groups (KIP-932) in Kafka 4.3.1's formats
(GroupCoordinatorRecordHelpers), and their replay into the groups' state, as Kafka's coordinator
runtime applies its records: the state rebuilt at load is the state served.

    ShareGroupMemberMetadata (10)           a member's rack, client and subscription
    ShareGroupMetadata (11)                 the group epoch and the hash of its topics' metadata
    ShareGroupTargetAssignmentMetadata (12) the assignment epoch
    ShareGroupTargetAssignmentMember (13)   a member's target partitions
    ShareGroupCurrentMemberAssignment (14)  a member's epochs, state and assigned partitions
    ShareGroupStatePartitionMetadata (15)   the topics' partitions whose state the group coordinator
                                            is initializing / has initialized at the share
                                            coordinator, and the topics whose state it is deleting

Each record is ``(record type, key message, value message | None)``, None a tombstone; partitions
are ``{topic id: frozenset(partitions)}``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from kafkawire.messages.share_group_current_member_assignment_key import ShareGroupCurrentMemberAssignmentKey
from kafkawire.messages.share_group_current_member_assignment_value import (
    ShareGroupCurrentMemberAssignmentValue, TopicPartitions as CurrentTopicPartitions)
from kafkawire.messages.share_group_member_metadata_key import ShareGroupMemberMetadataKey
from kafkawire.messages.share_group_member_metadata_value import ShareGroupMemberMetadataValue
from kafkawire.messages.share_group_metadata_key import ShareGroupMetadataKey
from kafkawire.messages.share_group_metadata_value import ShareGroupMetadataValue
from kafkawire.messages.share_group_state_partition_metadata_key import ShareGroupStatePartitionMetadataKey
from kafkawire.messages.share_group_state_partition_metadata_value import ShareGroupStatePartitionMetadataValue
from kafkawire.messages.share_group_target_assignment_member_key import ShareGroupTargetAssignmentMemberKey
from kafkawire.messages.share_group_target_assignment_member_value import (
    ShareGroupTargetAssignmentMemberValue, TopicPartition as TargetTopicPartition)
from kafkawire.messages.share_group_target_assignment_metadata_key import ShareGroupTargetAssignmentMetadataKey
from kafkawire.messages.share_group_target_assignment_metadata_value import ShareGroupTargetAssignmentMetadataValue

from kafkawire.messages.share_group_state_partition_metadata_value import TopicInfo, TopicPartitionsInfo

from .group_records import decode_typed, encode_typed

__all__ = ["ShareGroup", "ShareMember", "SHARE_RECORD_TYPES", "encode", "decode", "apply", "epoch_record",
           "member_record", "member_tombstone", "target_record", "target_tombstone", "target_metadata_record",
           "current_record", "current_tombstone", "epoch_tombstone", "target_metadata_tombstone",
           "state_partitions_tombstone", "state_partitions_record"]

MEMBER_METADATA, GROUP_EPOCH, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, STATE_PARTITIONS = 10, 11, 12, 13, 14, 15
_CLASSES = {
    MEMBER_METADATA: (ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue),
    GROUP_EPOCH: (ShareGroupMetadataKey, ShareGroupMetadataValue),
    TARGET_METADATA: (ShareGroupTargetAssignmentMetadataKey, ShareGroupTargetAssignmentMetadataValue),
    TARGET_MEMBER: (ShareGroupTargetAssignmentMemberKey, ShareGroupTargetAssignmentMemberValue),
    CURRENT_ASSIGNMENT: (ShareGroupCurrentMemberAssignmentKey, ShareGroupCurrentMemberAssignmentValue),
    STATE_PARTITIONS: (ShareGroupStatePartitionMetadataKey, ShareGroupStatePartitionMetadataValue),
}
SHARE_RECORD_TYPES = frozenset(_CLASSES)
STABLE = 0                  # MemberState.STABLE: a share member always is (no revocation step)


@dataclass(frozen=True)
class ShareMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed: tuple = ()
    assigned: dict = field(default_factory=dict)      # topic id -> frozenset(partitions)

    def copy(self, **changes) -> "ShareMember":
        return replace(self, **changes)


class ShareGroup:
    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.assignment_timestamp_ms = 0              # when the last target assignment was computed
        self.members: dict[str, ShareMember] = {}
        self.targets: dict[str, dict] = {}           # member id -> its target partitions
        # ShareGroupStatePartitionMetadata: topic id -> (topic name, frozenset(partitions))
        self.initializing: dict = {}
        self.initialized: dict = {}
        self.deleting: dict = {}                      # topic id -> topic name
        self.has_state_metadata = False               # a record 15 was written or replayed
        # topic id -> when its initialization was last asked for (memory only, as Kafka's InitMapValue)
        self.initializing_since: dict = {}

    @property
    def state(self) -> str:
        """ShareGroup.ShareGroupState: Empty without members, else Stable."""
        return "Stable" if self.members else "Empty"

    def subscribed_topic_names(self, replacing: ShareMember | None = None) -> set:
        names = set()
        for member in self.members.values():
            if replacing is None or member.member_id != replacing.member_id:
                names.update(member.subscribed)
        if replacing is not None:
            names.update(replacing.subscribed)
        return names


encode = encode_typed


def decode(record_type: int, key: bytes, value: bytes | None):
    return decode_typed(_CLASSES, record_type, key, value)


# -- the records --

def epoch_record(group_id: str, epoch: int, metadata_hash: int):
    return GROUP_EPOCH, ShareGroupMetadataKey(group_id=group_id), ShareGroupMetadataValue(
        epoch=epoch, metadata_hash=metadata_hash)


def epoch_tombstone(group_id: str):
    return GROUP_EPOCH, ShareGroupMetadataKey(group_id=group_id), None


def member_record(group_id: str, member: ShareMember):
    return MEMBER_METADATA, ShareGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id), \
        ShareGroupMemberMetadataValue(rack_id=member.rack_id, client_id=member.client_id,
                                      client_host=member.client_host, subscribed_topic_names=list(member.subscribed))


def member_tombstone(group_id: str, member_id: str):
    return MEMBER_METADATA, ShareGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None


def target_record(group_id: str, member_id: str, target: dict):
    return TARGET_MEMBER, ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), \
        ShareGroupTargetAssignmentMemberValue(topic_partitions=[
            TargetTopicPartition(topic_id=t, partitions=sorted(ps)) for t, ps in target.items()])


def target_tombstone(group_id: str, member_id: str):
    return TARGET_MEMBER, ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None


def target_metadata_record(group_id: str, epoch: int, timestamp_ms: int):
    return TARGET_METADATA, ShareGroupTargetAssignmentMetadataKey(group_id=group_id), \
        ShareGroupTargetAssignmentMetadataValue(assignment_epoch=epoch, assignment_timestamp=timestamp_ms)


def target_metadata_tombstone(group_id: str):
    return TARGET_METADATA, ShareGroupTargetAssignmentMetadataKey(group_id=group_id), None


def current_record(group_id: str, member: ShareMember):
    return CURRENT_ASSIGNMENT, ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member.member_id), \
        ShareGroupCurrentMemberAssignmentValue(
            member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch, state=STABLE,
            assigned_partitions=[CurrentTopicPartitions(topic_id=t, partitions=sorted(ps))
                                 for t, ps in member.assigned.items()])


def state_partitions_tombstone(group_id: str):
    return STATE_PARTITIONS, ShareGroupStatePartitionMetadataKey(group_id=group_id), None


def state_partitions_record(group_id: str, initializing: dict, initialized: dict, deleting: dict):
    """``initializing``/``initialized``: {topic id: (name, partitions)}; ``deleting``: {topic id: name}."""
    def infos(table):
        return [TopicPartitionsInfo(topic_id=t, topic_name=name, partitions=sorted(ps))
                for t, (name, ps) in sorted(table.items(), key=lambda item: str(item[0]))]
    return STATE_PARTITIONS, ShareGroupStatePartitionMetadataKey(group_id=group_id), \
        ShareGroupStatePartitionMetadataValue(
            initializing_topics=infos(initializing), initialized_topics=infos(initialized),
            deleting_topics=[TopicInfo(topic_id=t, topic_name=name)
                             for t, name in sorted(deleting.items(), key=lambda item: str(item[0]))])


def current_tombstone(group_id: str, member_id: str):
    return CURRENT_ASSIGNMENT, ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None


# -- replay --

def apply(groups: dict, record) -> None:
    """Apply one share-group record to ``groups`` (group id -> ShareGroup)."""
    record_type, key, value = record
    if record_type == STATE_PARTITIONS:
        if key.group_id not in groups and value is not None:
            groups[key.group_id] = ShareGroup(key.group_id)      # getOrMaybeCreatePersistedShareGroup
        _apply_state_partitions(groups.get(key.group_id), value)
        return
    group = groups.get(key.group_id)
    if group is None:
        if value is None:
            return
        group = groups[key.group_id] = ShareGroup(key.group_id)
    if record_type == GROUP_EPOCH:
        if value is None:
            del groups[key.group_id]
        else:
            group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
    elif record_type == TARGET_METADATA:
        group.assignment_epoch = 0 if value is None else value.assignment_epoch
        group.assignment_timestamp_ms = 0 if value is None else value.assignment_timestamp
    elif record_type == TARGET_MEMBER:
        if value is None:
            group.targets.pop(key.member_id, None)
        else:
            group.targets[key.member_id] = {t.topic_id: frozenset(t.partitions) for t in value.topic_partitions}
    elif record_type == MEMBER_METADATA:
        if value is None:
            group.members.pop(key.member_id, None)
        else:
            member = group.members.get(key.member_id) or ShareMember(key.member_id)
            group.members[key.member_id] = member.copy(
                rack_id=value.rack_id, client_id=value.client_id, client_host=value.client_host,
                subscribed=tuple(value.subscribed_topic_names))
    elif record_type == CURRENT_ASSIGNMENT and value is not None and key.member_id in group.members:
        group.members[key.member_id] = group.members[key.member_id].copy(
            member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
            assigned={t.topic_id: frozenset(t.partitions) for t in value.assigned_partitions})


def _apply_state_partitions(group: ShareGroup | None, value) -> None:
    """GroupMetadataManager.replay of ShareGroupStatePartitionMetadata: the tables replaced, or
    emptied by a tombstone. A topic still initializing after a load is asked for again at the
    group's next heartbeat (its time of asking is not in the record)."""
    if group is None:
        return
    if value is None:
        group.initializing, group.initialized, group.deleting = {}, {}, {}
        group.initializing_since.clear()
        group.has_state_metadata = False
        return
    group.initializing = {t.topic_id: (t.topic_name, frozenset(t.partitions)) for t in value.initializing_topics}
    group.initialized = {t.topic_id: (t.topic_name, frozenset(t.partitions)) for t in value.initialized_topics}
    group.deleting = {t.topic_id: t.topic_name for t in value.deleting_topics}
    group.initializing_since = {t: ts for t, ts in group.initializing_since.items() if t in group.initializing}
    group.has_state_metadata = True
