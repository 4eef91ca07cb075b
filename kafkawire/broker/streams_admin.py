"""What the offset APIs ask of streams groups, as Kafka 4.3.1's StreamsGroup answers it:
OffsetCommit's and OffsetFetch's member checks (validateOffsetCommit, validateOffsetFetch), and
the replay of the streams records of ``__consumer_offsets`` into the coordinator's groups.

A commit with an older member epoch is checked partition by partition, as Kafka's
createAssignmentEpochValidator does: the partition's task (the subtopology reading its topic) must
be the member's, assigned at or before that epoch.
"""
from __future__ import annotations

from kafkawire.messages.list_groups_response import ListedGroup
from kafkawire.protocol.error_codes import Errors

from . import streams_group as sg

__all__ = ["commit_error", "fetch_error", "streams_replay", "listed", "subscribed_topics", "tombstones",
           "STREAMS_TYPE"]

STREAMS_TYPE = "streams"            # GroupType and the protocol type ListGroups gives streams groups


def listed(groups: dict, states: set) -> list:
    """ListGroups' entries of the streams groups in ``states`` (lower case; all when empty)."""
    return [ListedGroup(group_id=g.group_id, protocol_type=STREAMS_TYPE, group_state=g.state, group_type=STREAMS_TYPE)
            for g in groups.values() if not states or lower_case_state(g.state) in states]


def lower_case_state(state: str) -> str:
    """StreamsGroupState.toLowerCaseString, what ListGroups' state filter matches."""
    return "not_ready" if state == sg.NOT_READY else state.lower()


def subscribed_topics(group: sg.StreamsGroup) -> set:
    """StreamsGroup.isSubscribedToTopic: the topology's source and repartition source topics while
    the group has members (none when Empty, so that its offsets may expire or be deleted)."""
    if not group.members or group.topology is None:
        return set()
    return {t for s in group.topology.subtopologies
            for t in [*s.source_topics, *(r.name for r in s.repartition_source_topics)]}


def tombstones(group: sg.StreamsGroup) -> list:
    """StreamsGroup.createGroupTombstoneRecords of an empty group, encoded."""
    return [sg.encode(r) for r in sg.group_removal(group.group_id)]


def commit_error(group: sg.StreamsGroup, member_id: str, epoch: int, version: int, *, transactional: bool = False,
                 instance_id: str | None = None):
    """StreamsGroup.validateOffsetCommit: None when the commit may go on, (code, message) when it
    is refused as a whole, else a function of (topic name, partition) giving each one's error code."""
    if epoch < 0 and not group.members:
        return None
    if transactional and epoch == -1 and member_id == "" and instance_id is None:
        return None
    member = group.members.get(member_id)
    if member is None:
        return Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}."
    if not transactional and version < 9:
        return Errors.UNSUPPORTED_VERSION, ("OffsetCommit version 9 or above must be used by members using the "
                                            "streams group protocol")
    if epoch == member.member_epoch:
        return None
    if epoch > member.member_epoch:
        return Errors.STALE_MEMBER_EPOCH, (f"Received member epoch {epoch} is newer than current member epoch "
                                           f"{member.member_epoch}.")
    if group.topology is None:
        return Errors.STALE_MEMBER_EPOCH, "Topology is not available for offset commit validation."
    reading = {t: s.subtopology_id for s in group.topology.subtopologies
               for t in [*s.source_topics, *(r.name for r in s.repartition_source_topics)]}

    def check(topic_name, partition: int) -> int:
        subtopology = reading.get(topic_name)
        if subtopology is None:
            return Errors.STALE_MEMBER_EPOCH
        assigned = member.active.get(subtopology, {}).get(partition)
        if assigned is None:
            assigned = member.revoking_active.get(subtopology, {}).get(partition)
        return Errors.STALE_MEMBER_EPOCH if assigned is None or epoch < assigned else Errors.NONE
    return check


def fetch_error(group: sg.StreamsGroup, member_id: str | None, epoch: int) -> int:
    """StreamsGroup.validateOffsetFetch: an admin (no member id, epoch -1) may always fetch."""
    if member_id is None and epoch < 0:
        return Errors.NONE
    member = group.members.get(member_id)
    if member is None:
        return Errors.UNKNOWN_MEMBER_ID
    return Errors.NONE if epoch == member.member_epoch else Errors.STALE_MEMBER_EPOCH


def streams_replay(coordinator, key: bytes, value: bytes | None) -> bool:
    """Replay ``key``/``value`` if it is a streams record (True), as an empty classic group of the
    same id (a simple group its offsets created) gives way in Kafka."""
    record_type = int.from_bytes(key[:2], "big", signed=True)
    if record_type not in sg.STREAMS_RECORD_TYPES:
        return False
    record = sg.decode(record_type, key, value)
    group_id = record[1].group_id
    classic = coordinator.groups.get(group_id)
    if classic is not None and value is not None and classic.is_empty() and not classic.members:
        del coordinator.groups[group_id]
    sg.apply(coordinator.streams_groups, record)
    return True
