"""Committed offsets and the group administration APIs, without I/O: OffsetCommit, OffsetFetch,
ListGroups, DescribeGroups and DeleteGroups as Kafka 4.3.1's OffsetMetadataManager and
GroupMetadataManager answer them for classic groups, and the replay of ``__consumer_offsets``
records that rebuilds the groups and offsets when the coordinator loads.

    offsets = GroupOffsets(coordinator)          # a kafkawire.broker.group_coordinator.GroupCoordinator
    codes = offsets.commit(group_id, generation, member_id, instance_id, version, partitions)
    offsets.replay(key, value)                   # each record of __consumer_offsets, in log order

Topics are named here by name; the broker side resolves topic ids (OffsetCommit/OffsetFetch v10)
and refuses unknown topics before these run.
"""
from __future__ import annotations

import logging

from kafkawire.messages.describe_groups_response import DescribedGroup, DescribedGroupMember
from kafkawire.messages.list_groups_response import ListedGroup
from kafkawire.protocol.error_codes import Errors

from . import consumer_admin, streams_admin
from .streams_admin import streams_replay
from .group_coordinator import GroupCoordinator
from .group_offsets_committed import UncommittedOffsets
from .group_records import ZERO_UUID, OffsetAndMetadata, decode_record, group_tombstone, offset_record, offset_tombstone
from .group_state import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, ClassicGroup, Member

__all__ = ["GroupOffsets", "CommitRefused"]

log = logging.getLogger(__name__)
CLASSIC_TYPE = "classic"
SHARE_TYPE = "share"


class CommitRefused(Exception):
    """An OffsetCommit the group refuses as a whole: every partition gets ``code``."""

    def __init__(self, code: int):
        super().__init__(Errors.for_code(code).name)
        self.code = code


def group_not_found(group_id: str) -> str:
    return f"Group {group_id} not found."


class GroupOffsets:
    """Offsets by group, then (topic, partition), for the groups of ``coordinator``."""

    def __init__(self, coordinator: GroupCoordinator):
        self.coordinator = coordinator
        self.offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        self.uncommitted = UncommittedOffsets()     # OffsetFetch reads at the high watermark (its position: the store's)

    # -- OffsetCommit --

    def validate_commit(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                        version: int, *, transactional: bool = False) -> None:
        """ClassicGroup.validateOffsetCommit; raises CommitRefused. A commit with generation -1 to
        an unknown group creates a simple (empty, protocol-less) group, as Kafka does. A
        ``transactional`` one (TxnOffsetCommit) may come without member from a group with members,
        in any state, and keeps no session alive. A consumer group's commit may be checked
        partition by partition: the answer is then a function of (topic id, partition) giving each
        one's error code (else None)."""
        c = self.coordinator
        if group_id in c.share_groups:       # ShareGroup.validateOffsetCommit: "... is not a consumer group."
            raise CommitRefused(Errors.GROUP_ID_NOT_FOUND)
        streams_group = c.streams_groups.get(group_id)
        if streams_group is not None:
            refused = streams_admin.commit_error(streams_group, member_id, generation, version,
                                                 transactional=transactional, instance_id=instance_id)
            if isinstance(refused, tuple):
                raise CommitRefused(refused[0])
            if refused is None or c.streams is None:
                return refused
            names = c.streams.topics().by_id                 # the check is asked by topic id
            return lambda topic_id, partition: refused(names.get(topic_id), partition)
        consumer_group = c.consumer_groups.get(group_id)
        if consumer_group is not None:
            try:
                return consumer_admin.commit_validator(consumer_group, member_id, generation, version,
                                                       transactional=transactional, instance_id=instance_id)
            except consumer_admin.CommitError as exc:
                raise CommitRefused(exc.code) from None
        group = c.groups.get(group_id)
        if group is None:
            if generation >= 0:
                raise CommitRefused(Errors.GROUP_ID_NOT_FOUND if version >= 9 and not transactional
                                    else Errors.ILLEGAL_GENERATION)
            group = c.groups[group_id] = ClassicGroup(group_id, now_ms=c.now_ms())
        if group.state == DEAD:
            raise CommitRefused(Errors.COORDINATOR_NOT_AVAILABLE)
        if generation < 0 and group.state == EMPTY:
            return
        if generation >= 0 or member_id or instance_id is not None:
            error = group.validate_member(member_id, instance_id)
            if error != Errors.NONE:                          # FENCED_INSTANCE_ID for a replaced static member
                raise CommitRefused(error)
            if generation != group.generation_id:
                raise CommitRefused(Errors.ILLEGAL_GENERATION)
        elif group.state != EMPTY and not transactional:
            raise CommitRefused(Errors.UNKNOWN_MEMBER_ID)
        if transactional:
            return
        if group.state == COMPLETING_REBALANCE:
            raise CommitRefused(Errors.REBALANCE_IN_PROGRESS)
        if group.state in (STABLE, PREPARING_REBALANCE):       # a commit keeps the member's session alive
            c._schedule_heartbeat(group, group.members[member_id])
        return None

    def commit(self, group_id: str, partitions: list) -> dict:
        """Store ``partitions`` ((topic, partition, offset, leader epoch, metadata, topic id)) after
        validate_commit: (topic, partition) -> error code. Written to __consumer_offsets first; a
        failed write fails every partition of the request, as Kafka's append does."""
        now = self.coordinator.now_ms()
        limit = self.coordinator.settings.offset_metadata_max_bytes
        codes, records, committed = {}, [], {}
        for topic, partition, offset, leader_epoch, metadata, topic_id in partitions:
            if metadata is not None and len(metadata) > limit:
                codes[(topic, partition)] = Errors.OFFSET_METADATA_TOO_LARGE
                continue
            value = OffsetAndMetadata(offset, leader_epoch, metadata or "", now, topic_id or ZERO_UUID)
            records.append(offset_record(group_id, topic, partition, value))
            committed[(topic, partition)] = value
            codes[(topic, partition)] = Errors.NONE
        if records:
            error = self.coordinator.persist(group_id, records)
            if error != Errors.NONE:
                return {key: (error if code == Errors.NONE else code) for key, code in codes.items()}
            current = self.offsets.setdefault(group_id, {})
            previous = {key: current.get(key) for key in committed}
            current.update(committed)
            self.uncommitted.replaced(group_id, previous)
        return codes

    def unload(self, here) -> None:
        """Drop the committed offsets, classic, consumer, share and streams groups of the ids
        ``here(group id)`` names: their partition is no longer led here, or is about to be loaded
        again from the log (the runtime's unload, see OffsetsTopic.unload)."""
        for group_id in [g for g in self.offsets if here(g)]:
            del self.offsets[group_id]
            self.uncommitted.forget(group_id)
        c = self.coordinator
        c.unload(here)
        if c.consumer is not None:
            consumer_admin.unload(c.consumer, here)
        if c.streams is not None:
            c.streams.unload(here)
        if c.share is not None:
            c.share.unload(here)

    # -- OffsetFetch --

    def fetch(self, group_id: str, wanted: list | None, *, latest: bool = False) -> tuple[int, list]:
        """(group error, [(topic, partition, OffsetAndMetadata | None)]): every committed offset
        of the group when ``wanted`` is None, else those of the (topic, partition) pairs named; as
        of the high watermark (kafkawire.broker.group_offsets_committed), or the ``latest``
        (``require_stable``, which Kafka answers as a write, after the writes before it)."""
        group = self.coordinator.groups.get(group_id)
        if group is not None and group.state == DEAD:
            return Errors.GROUP_ID_NOT_FOUND, []
        committed = self.offsets.get(group_id, {})

        def read(key):
            value = committed.get(key)
            return value if latest else self.uncommitted.committed(group_id, key, value)
        if wanted is None:
            found = [(t, p, read((t, p))) for t, p in list(committed)]
            return Errors.NONE, [(t, p, v) for t, p, v in found if v is not None]
        return Errors.NONE, [(t, p, read((t, p))) for t, p in wanted]

    # -- ListGroups, DescribeGroups --

    def list_groups(self, states: list, types: list) -> list:
        states = {s.strip().lower() for s in states}
        types = {t.strip().lower() for t in types}
        consumers = consumer_admin.listed(self.coordinator.consumer_groups, states) \
            if not types or consumer_admin.CONSUMER_TYPE in types else []
        if not types or SHARE_TYPE in types:          # share groups (KIP-932): protocol type and type "share"
            consumers += [ListedGroup(group_id=g.group_id, protocol_type=SHARE_TYPE, group_state=g.state,
                                      group_type=SHARE_TYPE)
                          for g in self.coordinator.share_groups.values() if not states or g.state.lower() in states]
        consumers += streams_admin.listed(self.coordinator.streams_groups, states) \
            if not types or streams_admin.STREAMS_TYPE in types else []
        if types and CLASSIC_TYPE not in types:
            return consumers
        return consumers + [ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type or "", group_state=g.state,
                            group_type=CLASSIC_TYPE)
                for g in self.coordinator.groups.values() if not states or g.state.lower() in states]

    def describe(self, group_id: str, version: int) -> DescribedGroup:
        group = self.coordinator.groups.get(group_id)
        if group is None:
            found = DescribedGroup(group_id=group_id, group_state=DEAD, members=[])
            if version >= 6:
                found.error_code, found.error_message = Errors.GROUP_ID_NOT_FOUND, group_not_found(group_id)
                if group_id in self.coordinator.consumer_groups or group_id in self.coordinator.streams_groups \
                        or group_id in self.coordinator.share_groups:
                    found.error_message = f"Group {group_id} is not a classic group."
            return found
        stable = group.state == STABLE
        members = [DescribedGroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                        client_id=m.client_id, client_host=m.client_host,
                                        member_metadata=m.metadata(group.protocol_name) if stable else b"",
                                        member_assignment=m.assignment if stable else b"")
                   for m in group.members.values()]
        return DescribedGroup(group_id=group_id, group_state=group.state, protocol_type=group.protocol_type or "",
                              protocol_data=(group.protocol_name or "") if stable else "", members=members)

    # -- DeleteGroups --

    def delete(self, group_id: str) -> int:
        if group_id in self.coordinator.consumer_groups:
            return self._delete_consumer_group(group_id)
        if group_id in self.coordinator.share_groups:
            return self.coordinator.share.delete(group_id)
        if group_id in self.coordinator.streams_groups:
            return self._delete_streams_group(group_id)
        group = self.coordinator.groups.get(group_id)
        if group is None or group.state == DEAD:
            return Errors.GROUP_ID_NOT_FOUND
        if group.state in (STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE):
            return Errors.NON_EMPTY_GROUP
        records = [offset_tombstone(group_id, t, p) for t, p in self.offsets.get(group_id, {})]
        records.append(group_tombstone(group_id))
        error = self.coordinator.persist(group_id, records)
        if error != Errors.NONE:
            return error
        self.offsets.pop(group_id, None)
        self.uncommitted.forget(group_id)
        group.transition_to(DEAD, self.coordinator.now_ms())
        del self.coordinator.groups[group_id]
        return Errors.NONE

    def _delete_streams_group(self, group_id: str) -> int:
        """StreamsGroup.validateDeleteGroup (NON_EMPTY_GROUP unless Empty), then its offsets' and
        its own tombstones."""
        group = self.coordinator.streams_groups[group_id]
        if group.members:
            return Errors.NON_EMPTY_GROUP
        records = [offset_tombstone(group_id, t, p) for t, p in self.offsets.get(group_id, {})]
        records += streams_admin.tombstones(group)
        error = self.coordinator.persist(group_id, records)
        if error != Errors.NONE:
            return error
        self.offsets.pop(group_id, None)
        self.uncommitted.forget(group_id)
        del self.coordinator.streams_groups[group_id]
        return Errors.NONE

    def _delete_consumer_group(self, group_id: str) -> int:
        group = self.coordinator.consumer_groups[group_id]
        error = consumer_admin.delete_error(group)
        if error != Errors.NONE:
            return error
        records = [offset_tombstone(group_id, t, p) for t, p in self.offsets.get(group_id, {})]
        records += consumer_admin.tombstones(group)
        error = self.coordinator.persist(group_id, records)
        if error != Errors.NONE:
            return error
        self.offsets.pop(group_id, None)
        self.uncommitted.forget(group_id)
        del self.coordinator.consumer_groups[group_id]
        return Errors.NONE

    # -- expiry (Kafka's cleanupGroupMetadata, every offsets.retention.check.interval.ms) --

    def expire(self, retention_ms: int) -> int:
        """Drop the offsets whose retention (``offsets.retention.minutes``) has passed, and the
        Empty groups left without offsets, writing their tombstones; the records written.

        An offset's age counts from the moment its group became Empty (a group with a protocol
        type), or from its commit for a simple group (committing by hand) and for the topics a
        Stable consumer group no longer subscribes to; other groups with members keep theirs."""
        now = self.coordinator.now_ms()
        written = 0
        for group in list(self.coordinator.groups.values()):
            base = self._expiry_base(group)
            if base is None:
                continue
            committed = self.offsets.get(group.group_id, {})
            subscribed = group.subscribed_topics() or set()
            expired = [key for key, value in committed.items()
                       if key[0] not in subscribed and now - base(value) >= retention_ms]
            records = [offset_tombstone(group.group_id, t, p) for t, p in expired]
            drop_group = len(expired) == len(committed) and group.state == EMPTY
            if drop_group:
                records.append(group_tombstone(group.group_id))
            if not records or self.coordinator.persist(group.group_id, records) != Errors.NONE:
                continue
            written += len(records)
            self.uncommitted.forget(group.group_id, expired)
            for key in expired:
                del committed[key]
            if not committed:
                self.offsets.pop(group.group_id, None)
            if drop_group:
                group.transition_to(DEAD, now)
                del self.coordinator.groups[group.group_id]
        for group_id in list(self.coordinator.consumer_groups):
            written += self._expire_consumer_group(group_id, now, retention_ms)
        for group_id in list(self.coordinator.streams_groups):
            written += self._expire_streams_group(group_id, now, retention_ms)
        if written:
            log.info("Generated %d tombstone records while cleaning up group metadata.", written)
        return written

    def _expire_consumer_group(self, group_id: str, now: int, retention_ms: int) -> int:
        """A consumer group's offsets age from their commit, those of subscribed topics never; an
        Empty group left without offsets is deleted (ConsumerGroup.offsetExpirationCondition)."""
        c = self.coordinator
        group = c.consumer_groups[group_id]
        return self._expire_by_commit(c.consumer_groups, group_id, c.consumer.subscribed_topics(group_id),
                                      consumer_admin.delete_error(group) == Errors.NONE,
                                      lambda: consumer_admin.tombstones(group), now, retention_ms)

    def _expire_streams_group(self, group_id: str, now: int, retention_ms: int) -> int:
        """A streams group's offsets age from their commit, those of its topology's source topics
        never while it has members; an Empty group left without offsets is deleted."""
        group = self.coordinator.streams_groups[group_id]
        return self._expire_by_commit(self.coordinator.streams_groups, group_id,
                                      streams_admin.subscribed_topics(group), not group.members,
                                      lambda: streams_admin.tombstones(group), now, retention_ms)

    def _expire_by_commit(self, groups: dict, group_id: str, subscribed, deletable: bool, tombstones,
                          now: int, retention_ms: int) -> int:
        """The offsets of topics not in ``subscribed`` whose commit is older than ``retention_ms``
        get tombstones; a ``deletable`` group left without offsets goes too (``tombstones()``, and
        out of ``groups``). The records written."""
        committed = self.offsets.get(group_id, {})
        expired = [key for key, value in committed.items()
                   if key[0] not in subscribed and now - value.commit_timestamp_ms >= retention_ms]
        records = [offset_tombstone(group_id, t, p) for t, p in expired]
        drop_group = len(expired) == len(committed) and deletable
        if drop_group:
            records += tombstones()
        if not records or self.coordinator.persist(group_id, records) != Errors.NONE:
            return 0
        self.uncommitted.forget(group_id, expired)
        for key in expired:
            del committed[key]
        if not committed:
            self.offsets.pop(group_id, None)
        if drop_group:
            del groups[group_id]
        return len(records)

    @staticmethod
    def _expiry_base(group: ClassicGroup):
        """ClassicGroup.offsetExpirationCondition: from when an offset's age counts, or None."""
        if group.protocol_type is None:
            return lambda value: value.commit_timestamp_ms
        if group.state == EMPTY:
            return lambda value: group.state_timestamp_ms
        if group.state == STABLE and group.subscribed_topics() is not None:
            return lambda value: value.commit_timestamp_ms
        return None

    # -- OffsetDelete --

    def delete_offsets(self, group_id: str, topics: list) -> tuple[int, dict]:
        """(group error, {(topic, partition): code}) for ``topics`` ((name, [partitions])): the
        offsets of topics the group does not subscribe to are deleted (tombstones written)."""
        c = self.coordinator
        group = c.groups.get(group_id)
        if group_id in c.consumer_groups:             # any state (ConsumerGroup.validateOffsetDelete)
            is_subscribed_to = c.consumer.subscribed_topics(group_id).__contains__
        elif group_id in c.streams_groups:            # any state (StreamsGroup.validateOffsetDelete)
            is_subscribed_to = streams_admin.subscribed_topics(c.streams_groups[group_id]).__contains__
        elif group is None or group.state == DEAD:
            return Errors.GROUP_ID_NOT_FOUND, {}
        elif group.state != EMPTY and not group.uses_consumer_protocol():
            return Errors.NON_EMPTY_GROUP, {}
        else:
            is_subscribed_to = group.is_subscribed_to
        committed = self.offsets.get(group_id, {})
        codes, records, gone = {}, [], []
        for topic, partitions in topics:
            subscribed = is_subscribed_to(topic)
            for p in partitions:
                codes[(topic, p)] = Errors.GROUP_SUBSCRIBED_TO_TOPIC if subscribed else Errors.NONE
                if not subscribed and (topic, p) in committed:
                    records.append(offset_tombstone(group_id, topic, p))
                    gone.append((topic, p))
        if records:
            error = self.coordinator.persist(group_id, records)
            if error != Errors.NONE:
                return error, {}
            self.uncommitted.forget(group_id, gone)
            for key in gone:
                committed.pop(key, None)
        return Errors.NONE, codes

    # -- loading __consumer_offsets --

    def replay(self, key: bytes | None, value: bytes | None) -> None:
        """Apply one record of __consumer_offsets (raises DecodeError/ValueError on bad bytes)."""
        decoded = decode_record(key, value)
        if decoded is None:
            if not streams_replay(self.coordinator, key, value):
                consumer_admin.replay(self.coordinator, key, value)
            return
        kind, k, v = decoded
        if kind == "offset":
            committed = self.offsets.setdefault(k.group, {})
            if v is not None and k.group not in self.coordinator.groups and \
                    k.group not in self.coordinator.consumer_groups and k.group not in self.coordinator.streams_groups:          # a simple group's commit
                self.coordinator.groups[k.group] = ClassicGroup(k.group, now_ms=self.coordinator.now_ms())
            if v is None:
                committed.pop((k.topic, k.partition), None)
            else:
                committed[(k.topic, k.partition)] = OffsetAndMetadata(
                    v.offset, v.leader_epoch, v.metadata or "", v.commit_timestamp, v.topic_id or ZERO_UUID)
            return
        if v is None:
            self.coordinator.groups.pop(k.group, None)
        else:
            self.coordinator.groups[k.group] = loaded_group(k.group, v, self.coordinator.now_ms())

    def after_load(self, loaded_here=lambda group_id: True) -> None:
        """Kafka's onLoaded: every member of the groups just loaded (``loaded_here(group id)``)
        must heartbeat within its session timeout."""
        c = self.coordinator
        for group in c.groups.values():
            if loaded_here(group.group_id):
                for member in group.members.values():
                    c._schedule_heartbeat(group, member)
        if c.consumer is not None:
            c.consumer.after_load(loaded_here)
        if c.share is not None:
            c.share.after_load(loaded_here)
        if c.streams is not None:
            c.streams.after_load(loaded_here)


def loaded_group(group_id: str, value, now_ms: int) -> ClassicGroup:
    """A group from its last GroupMetadataValue: Stable with its members, or Empty without."""
    group = ClassicGroup(group_id, now_ms=now_ms, state=STABLE if value.members else EMPTY,
                         generation_id=value.generation, protocol_type=value.protocol_type or None,
                         protocol_name=value.protocol, leader_id=value.leader,
                         state_timestamp_ms=value.current_state_timestamp if value.current_state_timestamp >= 0
                         else now_ms)
    for m in value.members:
        member = Member(m.member_id, client_id=m.client_id, client_host=m.client_host,
                        rebalance_timeout_ms=m.rebalance_timeout if m.rebalance_timeout >= 0 else m.session_timeout,
                        session_timeout_ms=m.session_timeout, protocol_type=group.protocol_type or "",
                        protocols=[(value.protocol, m.subscription)], group_instance_id=m.group_instance_id,
                        assignment=m.assignment)
        saved_leader = group.leader_id
        group.add(member, None)
        group.leader_id = saved_leader
    return group
