"""What the group administration APIs and offsets do with KIP-848 consumer groups, as Kafka 4.3.1's
GroupMetadataManager and ConsumerGroup answer them: ListGroups (type ``consumer``),
ConsumerGroupDescribe, DescribeGroups (a consumer group is "not a classic group"), DeleteGroups
(Empty groups only, every record tombstoned), the OffsetCommit member epoch checks
(STALE_MEMBER_EPOCH), the replay of the consumer records of ``__consumer_offsets`` and the
unload of the groups of a partition no longer led here.

kafkawire.broker.group_offsets calls these for the ids in ``coordinator.consumer_groups``.
"""
from __future__ import annotations

from kafkawire.messages.consumer_group_describe_response import Assignment, DescribedGroup, Member, TopicPartitions
from kafkawire.messages.list_groups_response import ListedGroup
from kafkawire.protocol.error_codes import Errors

from . import consumer_records as rec
from . import share_records as share_rec
from .consumer_group import EMPTY, apply
from .consumer_regex_refresh import regex_key

__all__ = ["CONSUMER_TYPE", "listed", "describe", "tombstones", "commit_validator", "fetch_error", "replay",
           "unload", "CommitError"]

CONSUMER_TYPE = "consumer"
CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE = 0, 1


class CommitError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def listed(groups: dict, states: set) -> list:
    return [ListedGroup(group_id=g.group_id, protocol_type=CONSUMER_TYPE, group_state=g.state, group_type=CONSUMER_TYPE)
            for g in groups.values() if not states or g.state.lower() in states]


def _topic_partitions(partitions: dict, names: dict) -> list:
    return [TopicPartitions(topic_id=topic_id, topic_name=names[topic_id], partitions=sorted(ps))
            for topic_id, ps in partitions.items() if topic_id in names and ps]


def describe(group, names: dict, default_assignor: str) -> DescribedGroup:
    """ConsumerGroup.asDescribedGroup; ``names`` maps topic ids to names (unknown ids are left out)."""
    members = []
    for m in group.members.values():
        members.append(Member(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=sorted(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=Assignment(topic_partitions=_topic_partitions(m.owned(), names)),
            target_assignment=Assignment(topic_partitions=_topic_partitions(group.target.get(m.member_id, {}), names)),
            member_type=CLASSIC_MEMBER_TYPE if m.uses_classic else CONSUMER_MEMBER_TYPE))
    return DescribedGroup(error_code=Errors.NONE, group_id=group.group_id, group_state=group.state,
                          group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                          assignor_name=group.preferred_assignor() or default_assignor, members=members)


def tombstones(group, renamed: dict | None = None) -> list:
    """ConsumerGroup.createGroupTombstoneRecords, in Kafka's order, as (key, value) bytes;
    ``renamed`` (old member id -> new id): a static member replaced in this same write is
    tombstoned under its new id (createGroupTombstoneRecordsWithReplacedMember)."""
    gid = group.group_id
    ids = [(renamed or {}).get(m, m) for m in group.members]
    records = [rec.current_assignment_tombstone(gid, m) for m in ids]
    records += [rec.target_member_tombstone(gid, m) for m in ids]
    records.append(rec.target_metadata_tombstone(gid))
    records += [rec.member_tombstone(gid, m) for m in ids]
    records += [rec.regex_tombstone(gid, regex) for regex in group.resolved]
    records.append(rec.partition_metadata_tombstone(gid))
    records.append(rec.group_epoch_tombstone(gid))
    return [rec.encode(r) for r in records]


def delete_error(group) -> int:
    return Errors.NONE if group.state == EMPTY else Errors.NON_EMPTY_GROUP


def commit_validator(group, member_id: str, epoch: int, version: int, *, transactional: bool = False,
                     instance_id: str | None = None):
    """ConsumerGroup.validateOffsetCommit: None (every partition may commit) or a function of
    (topic id, partition) giving each partition's error code. Raises CommitError. A transactional
    commit (TxnOffsetCommit) naming no member, generation or instance is not checked, and needs
    no OffsetCommit version."""
    if epoch < 0 and not group.members:
        return None
    if transactional and epoch == -1 and member_id == "" and instance_id is None:
        return None
    member = group.members.get(member_id)
    if member is None:
        raise CommitError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
    if version < 9 and not transactional and not member.uses_classic:
        raise CommitError(Errors.UNSUPPORTED_VERSION, "OffsetCommit version 9 or above must be used by members "
                                                      "using the consumer group protocol")
    if epoch == member.member_epoch:
        return None
    # a classic member's generation is its member epoch: its errors are the classic ones
    stale = Errors.ILLEGAL_GENERATION if member.uses_classic else Errors.STALE_MEMBER_EPOCH
    if epoch > member.member_epoch:
        what = "generation id" if member.uses_classic else "member epoch"
        raise CommitError(stale, f"Received {what} {epoch} is newer than current member epoch {member.member_epoch}.")

    def check(topic_id, partition: int) -> int:
        assigned = member.assigned.get(topic_id, {}).get(partition)
        if assigned is None:
            assigned = member.revoking.get(topic_id, {}).get(partition)
        if assigned is None or epoch < assigned:
            return stale
        return Errors.NONE
    return check


def fetch_error(group, member_id: str | None, epoch: int) -> int:
    """ConsumerGroup.validateOffsetFetch: a member fetching (OffsetFetch v9+) must be one at its
    current epoch; an admin (no member id, epoch -1) may always fetch."""
    if member_id is None and epoch < 0:
        return Errors.NONE
    member = group.members.get(member_id)
    if member is None:
        return Errors.UNKNOWN_MEMBER_ID
    if epoch == member.member_epoch:
        return Errors.NONE
    return Errors.ILLEGAL_GENERATION if member.uses_classic else Errors.STALE_MEMBER_EPOCH


def replay(coordinator, key: bytes, value: bytes | None) -> None:
    """Replay a consumer or share group record (other record types are ignored, as the streams
    groups this coordinator does not serve); a classic group left empty under the same id
    (a simple group its offsets created) gives way, as in Kafka."""
    record_type = int.from_bytes(key[:2], "big", signed=True)
    if record_type in share_rec.SHARE_RECORD_TYPES and coordinator.share is not None:
        coordinator.share.replay(share_rec.decode(record_type, key, value))
        return
    if record_type not in rec.CONSUMER_RECORD_TYPES:
        return
    record = rec.decode(record_type, key, value)
    group_id = record[1].group_id
    classic = coordinator.groups.get(group_id)
    if classic is not None and value is not None and classic.is_empty() and not classic.members:
        del coordinator.groups[group_id]
    apply(coordinator.consumer_groups, record)


def unload(consumer, here) -> None:
    """GroupMetadataManager.onUnloaded for the consumer groups of ``consumer`` (a ConsumerCoordinator)
    that ``here(group id)`` names (their partition no longer led here, or about to be loaded
    again): dropped, with their members' timers and a regex resolution scheduled; a load rebuilds
    them from the log."""
    for group_id in [g for g in consumer.groups if here(g)]:
        for member_id in list(consumer.groups[group_id].members):
            consumer.cancel_timers(group_id, member_id)
        consumer.classic.timer.cancel(regex_key(group_id))
        consumer.regexes.pending.discard(group_id)
        del consumer.groups[group_id]
