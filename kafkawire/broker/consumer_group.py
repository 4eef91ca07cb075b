"""A KIP-848 consumer group's state, as Kafka 4.3.1's ConsumerGroup and ConsumerGroupMember keep it,
and the replay of its ``__consumer_offsets`` records (kafkawire.broker.consumer_records) into it.

The state changes only by replaying records, both when the coordinator loads a partition and
after each of its writes, so what a restart rebuilds is what was served:

    group = ConsumerGroup("orders-app")
    apply(groups, record)                 # groups: {group id: ConsumerGroup}

A member's partitions are ``{topic id: {partition: assignment epoch}}``; ``group.owners`` maps
every partition a member holds (assigned or pending revocation) to its owner's member epoch,
as ConsumerGroup.currentPartitionEpoch answers it (a partition without owner: -1).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from .consumer_records import (CURRENT_ASSIGNMENT, GROUP_EPOCH, MEMBER_METADATA, REGULAR_EXPRESSION, TARGET_MEMBER,
                               TARGET_METADATA)

__all__ = ["ConsumerGroup", "ConsumerMember", "ClassicMeta", "ResolvedRegex", "apply", "MEMBER_STABLE", "UNREVOKED_PARTITIONS",
           "UNRELEASED_PARTITIONS", "MEMBER_UNKNOWN", "EMPTY", "ASSIGNING", "RECONCILING", "STABLE",
           "LEAVE_EPOCH", "STATIC_LEAVE_EPOCH"]

# MemberState's values, as the CurrentMemberAssignment record stores them.
MEMBER_STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, MEMBER_UNKNOWN = 0, 1, 2, 127
# ConsumerGroupState's names.
EMPTY, ASSIGNING, RECONCILING, STABLE = "Empty", "Assigning", "Reconciling", "Stable"
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2


@dataclass(frozen=True)
class ClassicMeta:
    """ClassicMemberMetadata: what a member using the classic protocol (JoinGroup) joined with, its
    session timeout and its (protocol name, metadata) pairs in its order of preference."""
    session_timeout_ms: int
    protocols: tuple

    def protocol_names(self) -> set:
        return {name for name, _ in self.protocols}


@dataclass(frozen=True)
class ResolvedRegex:
    """ResolvedRegularExpression: the topics a regex matched, the offset of the image it matched
    them in and when."""
    topics: frozenset
    version: int
    timestamp_ms: int


@dataclass
class ConsumerMember:
    """ConsumerGroupMember: its subscription and where its reconciliation stands."""
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset = frozenset()
    subscribed_topic_regex: str | None = ""
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = MEMBER_STABLE
    assigned: dict = field(default_factory=dict)
    revoking: dict = field(default_factory=dict)
    classic: ClassicMeta | None = None          # set while the member uses the classic protocol

    def subscription(self) -> tuple:
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names,
                self.subscribed_topic_regex, self.rebalance_timeout_ms, self.server_assignor, self.classic)

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def topics(self, resolved: dict) -> frozenset:
        """The topics it subscribes to: its names, and those its regex resolved to (``resolved``:
        the group's regex -> ResolvedRegex; a regex not resolved yet adds none)."""
        found = resolved.get(self.subscribed_topic_regex) if self.subscribed_topic_regex else None
        return self.subscribed_topic_names if found is None else self.subscribed_topic_names | found.topics

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MEMBER_STABLE and self.member_epoch == epoch

    def owned(self) -> dict:
        """Assigned and pending revocation together: what the member still holds."""
        owned = {t: dict(ps) for t, ps in self.assigned.items()}
        for topic_id, epochs in self.revoking.items():
            owned.setdefault(topic_id, {}).update(epochs)
        return owned

    def copy(self, **changes) -> "ConsumerMember":
        return replace(self, **changes)


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    assignment_timestamp_ms: int = 0
    members: dict = field(default_factory=dict)                # member id -> ConsumerMember
    static_members: dict = field(default_factory=dict)         # instance id -> member id
    target: dict = field(default_factory=dict)                 # member id -> {topic id: set(partitions)}
    owners: dict = field(default_factory=dict)                 # (topic id, partition) -> owner's member epoch
    resolved: dict = field(default_factory=dict)               # regex -> ResolvedRegex
    metadata_stale: bool = True        # recompute the topics' hash at the next heartbeat

    @property
    def state(self) -> str:
        """ConsumerGroup.maybeUpdateGroupState, computed when asked."""
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return RECONCILING
        return STABLE

    def current_partition_epoch(self, topic_id, partition: int) -> int:
        return self.owners.get((topic_id, partition), -1)

    def subscribed_topic_names(self, replacing: ConsumerMember | None = None, without: frozenset = frozenset()) -> set:
        """The topics the members subscribe to (by name, or by a regex as it was last resolved),
        with ``replacing`` in place of the member of its id and without the members of ``without``."""
        topics: set = set()
        for member_id, member in self.members.items():
            if member_id in without or (replacing is not None and member_id == replacing.member_id):
                continue
            topics.update(member.topics(self.resolved))
        if replacing is not None:
            topics.update(replacing.topics(self.resolved))
        return topics

    def classic_members(self, without=frozenset()) -> list:
        return [m for m in self.members.values() if m.classic is not None and m.member_id not in without]

    def supports_classic_protocols(self, protocol_type: str, names: set) -> bool:
        """ConsumerGroup.supportsClassicProtocols: a classic member may join with the consumer
        protocol type and a protocol every classic member supports."""
        if protocol_type != "consumer":
            return False
        classic = self.classic_members()
        if not self.members or not classic:
            return bool(names)
        return any(all(name in m.classic.protocol_names() for m in classic) for name in names)

    def all_classic_except(self, member_ids) -> bool:
        """allMembersUseClassicProtocolExcept: every member but ``member_ids`` uses the classic protocol."""
        return all(m.classic is not None for m in self.members.values() if m.member_id not in member_ids)

    def waiting_on_unreleased_partition(self, member: ConsumerMember) -> bool:
        """Whether a partition of its target is still held by another member."""
        if member.state != UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target.get(member.member_id, {}).items():
            assigned = member.assigned.get(topic_id, {})
            if any(p not in assigned and self.current_partition_epoch(topic_id, p) != -1 for p in partitions):
                return True
        return False

    def uses_regex(self) -> bool:
        return any(m.subscribed_topic_regex for m in self.members.values())

    def subscribed_regexes(self) -> dict:
        """subscribedRegularExpressions: regex -> how many members subscribe with it."""
        counts: dict = {}
        for member in self.members.values():
            if member.subscribed_topic_regex:
                counts[member.subscribed_topic_regex] = counts.get(member.subscribed_topic_regex, 0) + 1
        return counts

    def last_regex_refresh(self) -> tuple[int, int]:
        """(lastResolvedRegularExpressionRefreshTimeMs, lastResolvedRegularExpressionVersion): those
        of a resolved regex (all are resolved together), or (-2**63, 0) without any."""
        first = next(iter(self.resolved.values()), None)
        return (-2**63, 0) if first is None else (first.timestamp_ms, first.version)

    def preferred_assignor(self, replacing: ConsumerMember | None = None) -> str | None:
        """The server assignor most members name (ConsumerGroup.computePreferredServerAssignor)."""
        counts: dict = {}
        for member in self.members.values():
            if replacing is not None and member.member_id == replacing.member_id:
                member = replacing
            if member.server_assignor:
                counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
        if replacing is not None and replacing.member_id not in self.members and replacing.server_assignor:
            counts[replacing.server_assignor] = counts.get(replacing.server_assignor, 0) + 1
        return max(counts, key=counts.get) if counts else None

    # -- owners --

    def _release(self, member: ConsumerMember) -> None:
        for topic_id, epochs in member.owned().items():
            for partition in epochs:
                self.owners.pop((topic_id, partition), None)

    def _claim(self, member: ConsumerMember) -> None:
        for topic_id, epochs in member.owned().items():
            for partition in epochs:
                self.owners[(topic_id, partition)] = member.member_epoch

    def put_member(self, member: ConsumerMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
                del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._claim(member)

    def drop_member(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        self._release(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]


# -- replay --

def _partitions_with_epochs(topics) -> dict:
    out = {}
    for t in topics:
        epochs = t.assignment_epochs or []
        out[t.topic_id] = {p: (epochs[i] if i < len(epochs) else 0) for i, p in enumerate(t.partitions)}
    return out


def apply(groups: dict, record) -> None:
    """Replay one consumer group record into ``groups`` (group id -> ConsumerGroup)."""
    record_type, key, value = record
    group = groups.get(key.group_id)
    if group is None:
        if value is None:
            return
        group = groups[key.group_id] = ConsumerGroup(key.group_id)
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
            group.target.pop(key.member_id, None)
        else:
            group.target[key.member_id] = {t.topic_id: set(t.partitions) for t in value.topic_partitions}
    elif record_type == MEMBER_METADATA:
        _apply_member(group, key.member_id, value)
    elif record_type == CURRENT_ASSIGNMENT:
        _apply_current(group, key.member_id, value)
    elif record_type == REGULAR_EXPRESSION:
        if value is None:
            group.resolved.pop(key.regular_expression, None)
        else:
            group.resolved[key.regular_expression] = ResolvedRegex(frozenset(value.topics), value.version,
                                                                   value.timestamp)


def _apply_member(group: ConsumerGroup, member_id: str, value) -> None:
    if value is None:
        group.drop_member(member_id)
        return
    member = group.members.get(member_id) or ConsumerMember(member_id)
    group.put_member(member.copy(
        instance_id=value.instance_id, rack_id=value.rack_id, client_id=value.client_id,
        client_host=value.client_host, subscribed_topic_names=frozenset(value.subscribed_topic_names),
        subscribed_topic_regex=value.subscribed_topic_regex, rebalance_timeout_ms=value.rebalance_timeout_ms,
        server_assignor=value.server_assignor, classic=_classic_of(value.classic_member_metadata)))


def _classic_of(metadata) -> ClassicMeta | None:
    if metadata is None:
        return None
    return ClassicMeta(metadata.session_timeout_ms, tuple((p.name, p.metadata) for p in metadata.supported_protocols))


def _apply_current(group: ConsumerGroup, member_id: str, value) -> None:
    member = group.members.get(member_id)
    if value is None:
        if member is not None:
            group.put_member(member.copy(member_epoch=LEAVE_EPOCH, previous_member_epoch=LEAVE_EPOCH,
                                         assigned={}, revoking={}))
        return
    member = member or ConsumerMember(member_id)
    group.put_member(member.copy(
        member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch, state=value.state,
        assigned=_partitions_with_epochs(value.assigned_partitions),
        revoking=_partitions_with_epochs(value.partitions_pending_revocation)))
