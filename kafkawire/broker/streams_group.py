"""A KIP-1071 streams group's state, as Kafka 4.3.1's StreamsGroup and StreamsGroupMember keep it,
its ``__consumer_offsets`` records in Kafka's formats (StreamsCoordinatorRecordHelpers) and their
replay into the state.

    StreamsGroupMetadata (17)               group epoch, metadata hash, validated topology epoch
    StreamsGroupMemberMetadata (19)         a member's client, process, endpoint and topology epoch
    StreamsGroupTargetAssignmentMetadata (20)  the assignment epoch
    StreamsGroupTargetAssignmentMember (21)    a member's target tasks
    StreamsGroupCurrentMemberAssignment (22)   a member's epochs, state and tasks
    StreamsGroupTopology (23)               the group's topology (its subtopologies and topics)

A record is ``(type, key message, value message | None)`` (None: a tombstone), as in
kafkawire.broker.consumer_records. The state changes only by replaying records, after each write
and at load, so what a restart rebuilds is what was served. Tasks are ``{subtopology id:
frozenset(partitions)}``; a member's active tasks carry the epoch they were assigned at
(``{subtopology id: {partition: epoch}}``), as 4.3.1's AssignmentEpochs field keeps them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from kafkawire.messages import streams_group_current_member_assignment_value as current_msg
from kafkawire.messages import streams_group_member_metadata_value as member_msg
from kafkawire.messages import streams_group_target_assignment_member_value as target_msg
from kafkawire.messages.streams_group_current_member_assignment_key import StreamsGroupCurrentMemberAssignmentKey
from kafkawire.messages.streams_group_member_metadata_key import StreamsGroupMemberMetadataKey
from kafkawire.messages.streams_group_metadata_key import StreamsGroupMetadataKey
from kafkawire.messages.streams_group_metadata_value import LastAssignmentConfig, StreamsGroupMetadataValue
from kafkawire.messages.streams_group_target_assignment_member_key import StreamsGroupTargetAssignmentMemberKey
from kafkawire.messages.streams_group_target_assignment_metadata_key import StreamsGroupTargetAssignmentMetadataKey
from kafkawire.messages.streams_group_target_assignment_metadata_value import StreamsGroupTargetAssignmentMetadataValue
from kafkawire.messages.streams_group_topology_key import StreamsGroupTopologyKey
from kafkawire.messages.streams_group_topology_value import StreamsGroupTopologyValue

from .group_records import decode_typed, encode_typed
from .java_collections import TIMELINE_INITIAL_CAPACITY, timeline_capacity

__all__ = ["StreamsGroup", "StreamsMember", "apply", "encode", "decode", "STREAMS_RECORD_TYPES", "EMPTY",
           "NOT_READY", "ASSIGNING", "RECONCILING", "STABLE", "MEMBER_STABLE", "UNREVOKED_TASKS",
           "UNRELEASED_TASKS"]

GROUP_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, TOPOLOGY = 17, 19, 20, 21, 22, 23
_CLASSES = {
    GROUP_METADATA: (StreamsGroupMetadataKey, StreamsGroupMetadataValue),
    MEMBER_METADATA: (StreamsGroupMemberMetadataKey, member_msg.StreamsGroupMemberMetadataValue),
    TARGET_METADATA: (StreamsGroupTargetAssignmentMetadataKey, StreamsGroupTargetAssignmentMetadataValue),
    TARGET_MEMBER: (StreamsGroupTargetAssignmentMemberKey, target_msg.StreamsGroupTargetAssignmentMemberValue),
    CURRENT_ASSIGNMENT: (StreamsGroupCurrentMemberAssignmentKey, current_msg.StreamsGroupCurrentMemberAssignmentValue),
    TOPOLOGY: (StreamsGroupTopologyKey, StreamsGroupTopologyValue),
}
STREAMS_RECORD_TYPES = frozenset(_CLASSES)
STANDBY_REPLICAS = "num.standby.replicas"
# StreamsGroup.StreamsGroupState's names; MemberState's values as the records store them.
EMPTY, NOT_READY, ASSIGNING, RECONCILING, STABLE = "Empty", "NotReady", "Assigning", "Reconciling", "Stable"
MEMBER_STABLE, UNREVOKED_TASKS, UNRELEASED_TASKS = 1, 2, 3      # streams' MemberState, not the consumer one's


encode = encode_typed


def decode(record_type: int, key: bytes, value: bytes | None):
    return decode_typed(_CLASSES, record_type, key, value)


@dataclass
class StreamsMember:
    """StreamsGroupMember: who the member is and where its reconciliation stands."""
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple | None = None              # (host, port)
    client_tags: tuple = ()                         # ((key, value), ...) sorted
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = MEMBER_STABLE
    active: dict = field(default_factory=dict)      # {subtopology: {partition: assignment epoch}}
    standby: dict = field(default_factory=dict)     # {subtopology: frozenset}
    revoking_active: dict = field(default_factory=dict)   # {subtopology: {partition: assignment epoch}}
    revoking_standby: dict = field(default_factory=dict)  # {subtopology: frozenset}

    def copy(self, **changes) -> "StreamsMember":
        return replace(self, **changes)

    def active_tasks(self) -> dict:
        return {s: frozenset(p) for s, p in self.active.items() if p}


@dataclass
class StreamsGroup:
    """A new group starts at group and assignment epoch 1 and validated topology epoch 0, as
    Kafka's StreamsGroup (its first member's join bumps the epoch to 2)."""
    group_id: str
    epoch: int = 1
    metadata_hash: int = 0
    validated_topology_epoch: int = 0
    topology: StreamsGroupTopologyValue | None = None
    assignment_epoch: int = 1
    assignment_timestamp: int = 0                   # when the target was computed (ms), 0: unknown
    members: dict = field(default_factory=dict)     # member id -> StreamsMember
    members_capacity: int = TIMELINE_INITIAL_CAPACITY   # Kafka's members TimelineHashMap's table, for its order
    targets: dict = field(default_factory=dict)     # member id -> {subtopology: frozenset}
    standby_targets: dict = field(default_factory=dict)     # member id -> {subtopology: frozenset}
    standby_replicas: int | None = None             # num.standby.replicas of the last assignment configs
    owners: dict = field(default_factory=dict)      # (subtopology, partition) -> owner member id (active)
    standby_holders: dict = field(default_factory=dict)     # (subtopology, partition) -> {member ids}
    configured: object = None                       # streams_topology.Configured, recomputed, not stored
    configured_for: tuple | None = None             # (topology epoch, metadata hash) it was computed for
    shutdown_requested_by: str | None = None        # a member's ShutdownApplication, kept in memory as Kafka does
    endpoint_information_epoch: int = 0             # bumped when a member with a user endpoint gets new tasks

    @property
    def state(self) -> str:
        """StreamsGroup.maybeUpdateGroupState: NOT_READY until its topology's epoch is validated."""
        if not self.members:
            return EMPTY
        if self.topology is None or self.topology.epoch != self.validated_topology_epoch:
            return NOT_READY
        if self.assignment_epoch != self.epoch:
            return ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state != MEMBER_STABLE for m in self.members.values()):
            return RECONCILING
        return STABLE

    def owner_of(self, subtopology: str, partition: int) -> str | None:
        return self.owners.get((subtopology, partition))

    def _release(self, member: StreamsMember) -> None:
        for tasks in (member.active, member.revoking_active):
            for s, partitions in tasks.items():
                for p in partitions:
                    if self.owners.get((s, p)) == member.member_id:
                        del self.owners[(s, p)]
        for tasks in (member.standby, member.revoking_standby):
            for s, partitions in tasks.items():
                for p in partitions:
                    holders = self.standby_holders.get((s, p))
                    if holders is not None:
                        holders.discard(member.member_id)
                        if not holders:
                            del self.standby_holders[(s, p)]

    def put_member(self, member: StreamsMember) -> None:
        self.members_capacity = timeline_capacity(len(self.members), self.members_capacity)
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
        self.members[member.member_id] = member
        for tasks in (member.active, member.revoking_active):
            for s, partitions in tasks.items():
                for p in partitions:
                    self.owners[(s, p)] = member.member_id
        for tasks in (member.standby, member.revoking_standby):
            for s, partitions in tasks.items():
                for p in partitions:
                    self.standby_holders.setdefault((s, p), set()).add(member.member_id)

    def drop_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._release(old)


# -- records --

def group_metadata_record(group_id: str, epoch: int, metadata_hash: int, validated_topology_epoch: int,
                          standby_replicas: int = 0):
    """``standby_replicas``: the group's num.standby.replicas the assignment uses (LastAssignmentConfigs)."""
    return GROUP_METADATA, StreamsGroupMetadataKey(group_id=group_id), StreamsGroupMetadataValue(
        epoch=epoch, metadata_hash=metadata_hash, validated_topology_epoch=validated_topology_epoch,
        last_assignment_configs=[LastAssignmentConfig(key=STANDBY_REPLICAS, value=str(standby_replicas))])


def topology_record(group_id: str, topology: StreamsGroupTopologyValue):
    return TOPOLOGY, StreamsGroupTopologyKey(group_id=group_id), topology


def member_record(group_id: str, member: StreamsMember):
    endpoint = None if member.user_endpoint is None else member_msg.Endpoint(host=member.user_endpoint[0],
                                                                             port=member.user_endpoint[1])
    value = member_msg.StreamsGroupMemberMetadataValue(
        instance_id=None, rack_id=member.rack_id, client_id=member.client_id, client_host=member.client_host,
        rebalance_timeout_ms=member.rebalance_timeout_ms, topology_epoch=member.topology_epoch,
        process_id=member.process_id, user_endpoint=endpoint,
        client_tags=[member_msg.KeyValue(key=k, value=v) for k, v in member.client_tags])
    return MEMBER_METADATA, StreamsGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id), value


def target_member_record(group_id: str, member_id: str, active: dict, standby: dict | None = None):
    def ids(tasks):
        return [target_msg.TaskIds(subtopology_id=s, partitions=sorted(p)) for s, p in sorted(tasks.items()) if p]
    value = target_msg.StreamsGroupTargetAssignmentMemberValue(active_tasks=ids(active), standby_tasks=ids(standby or {}),
                                                               warmup_tasks=[])
    return TARGET_MEMBER, StreamsGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), value


def target_metadata_record(group_id: str, epoch: int, timestamp_ms: int):
    return TARGET_METADATA, StreamsGroupTargetAssignmentMetadataKey(group_id=group_id), \
        StreamsGroupTargetAssignmentMetadataValue(assignment_epoch=epoch, assignment_timestamp=timestamp_ms)


def _task_ids(tasks: dict, with_epochs: bool) -> list:
    out = []
    for s in sorted(tasks):
        partitions = sorted(tasks[s])
        if partitions:
            epochs = [tasks[s][p] for p in partitions] if with_epochs else None
            out.append(current_msg.TaskIds(subtopology_id=s, partitions=partitions, assignment_epochs=epochs))
    return out


def current_assignment_record(group_id: str, member: StreamsMember):
    value = current_msg.StreamsGroupCurrentMemberAssignmentValue(
        member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch, state=member.state,
        active_tasks=_task_ids(member.active, True), standby_tasks=_task_ids(member.standby, False),
        warmup_tasks=[], active_tasks_pending_revocation=_task_ids(member.revoking_active, True),
        standby_tasks_pending_revocation=_task_ids(member.revoking_standby, False), warmup_tasks_pending_revocation=[])
    return CURRENT_ASSIGNMENT, StreamsGroupCurrentMemberAssignmentKey(group_id=group_id,
                                                                      member_id=member.member_id), value


def member_removal(group_id: str, member_id: str) -> list:
    """The tombstones that remove a member, in Kafka's order (current, target, metadata)."""
    return [(CURRENT_ASSIGNMENT, StreamsGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None),
            (TARGET_MEMBER, StreamsGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None),
            (MEMBER_METADATA, StreamsGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None)]


def group_removal(group_id: str) -> list:
    """The tombstones that delete an empty group (StreamsGroup.createGroupTombstoneRecords)."""
    return [(TARGET_METADATA, StreamsGroupTargetAssignmentMetadataKey(group_id=group_id), None),
            (GROUP_METADATA, StreamsGroupMetadataKey(group_id=group_id), None),
            (TOPOLOGY, StreamsGroupTopologyKey(group_id=group_id), None)]


# -- replay --

def _tasks(task_ids, with_epochs: bool = False) -> dict:
    out: dict = {}
    for t in task_ids or ():
        if with_epochs:
            epochs = t.assignment_epochs or [0] * len(t.partitions)
            out[t.subtopology_id] = dict(zip(t.partitions, epochs))
        else:
            out[t.subtopology_id] = frozenset(t.partitions)
    return out


def apply(groups: dict, record) -> None:
    """Replay one streams record into ``groups`` ({group id: StreamsGroup})."""
    record_type, key, value = record
    group_id = key.group_id
    group = groups.get(group_id)
    if group is None:
        if value is None:
            return
        group = groups[group_id] = StreamsGroup(group_id)
    if record_type == GROUP_METADATA:
        if value is None:
            del groups[group_id]
            return
        group.epoch, group.metadata_hash = value.epoch, value.metadata_hash
        group.validated_topology_epoch = value.validated_topology_epoch
        configs = {c.key: c.value for c in value.last_assignment_configs or ()}
        group.standby_replicas = int(configs[STANDBY_REPLICAS]) if configs.get(STANDBY_REPLICAS, "").isdigit() else None
    elif record_type == TOPOLOGY:
        group.topology = value
        group.configured = group.configured_for = None
    elif record_type == TARGET_METADATA:
        group.assignment_epoch = 1 if value is None else value.assignment_epoch
        group.assignment_timestamp = 0 if value is None else value.assignment_timestamp
    elif record_type == TARGET_MEMBER:
        if value is None:
            group.targets.pop(key.member_id, None)
            group.standby_targets.pop(key.member_id, None)
        else:
            group.targets[key.member_id] = _tasks(value.active_tasks)
            group.standby_targets[key.member_id] = _tasks(value.standby_tasks)
    elif record_type == MEMBER_METADATA:
        _apply_member(group, key.member_id, value)
    elif record_type == CURRENT_ASSIGNMENT:
        _apply_current(group, key.member_id, value)


def _apply_member(group: StreamsGroup, member_id: str, value) -> None:
    if value is None:
        group.drop_member(member_id)
        return
    old = group.members.get(member_id) or StreamsMember(member_id)
    endpoint = None if value.user_endpoint is None else (value.user_endpoint.host, value.user_endpoint.port)
    group.put_member(old.copy(rack_id=value.rack_id, client_id=value.client_id, client_host=value.client_host,
                              rebalance_timeout_ms=value.rebalance_timeout_ms, topology_epoch=value.topology_epoch,
                              process_id=value.process_id, user_endpoint=endpoint,
                              client_tags=tuple(sorted((kv.key, kv.value) for kv in value.client_tags))))


def _apply_current(group: StreamsGroup, member_id: str, value) -> None:
    if value is None:
        old = group.members.get(member_id)
        if old is not None:
            group.put_member(old.copy(member_epoch=0, previous_member_epoch=0, state=MEMBER_STABLE, active={},
                                      standby={}, revoking_active={}, revoking_standby={}))
        return
    old = group.members.get(member_id) or StreamsMember(member_id)
    group.put_member(old.copy(member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
                              state=value.state, active=_tasks(value.active_tasks, True),
                              standby=_tasks(value.standby_tasks),
                              revoking_standby=_tasks(value.standby_tasks_pending_revocation),
                              revoking_active=_tasks(value.active_tasks_pending_revocation, True)))
