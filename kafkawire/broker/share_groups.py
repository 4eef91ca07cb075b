"""ShareGroupHeartbeat and ShareGroupDescribe without I/O: share groups (KIP-932) as Kafka 4.3.1's
GroupMetadataManager runs them (shareGroupHeartbeat, shareGroupLeave, the session timeout).

    groups = ShareGroups(classic, topics=lambda: view, settings=lambda group_id: (45_000, 5_000))
    response = groups.heartbeat(request, client_id="c", client_host="/127.0.0.1")

A heartbeat (1) creates or updates the member, bumping the group epoch when its subscription or
the hash of the subscribed topics' metadata changed, (2) computes a new target assignment with
the simple assignor when the group epoch is ahead of the assignment epoch (at most once per
``share.assignment.interval.ms``), (3) gives the member
its target at once (share members own no partitions exclusively: nothing to revoke). Every change
is a kafkawire.broker.share_records record written through the classic coordinator's ``persist``
to ``__consumer_offsets`` and then replayed into the state, as for consumer groups.

Share groups live in ``classic.share_groups``, one name space with the classic and consumer
groups: a share heartbeat for a group of another type is GROUP_ID_NOT_FOUND, as in Kafka.

Only the partitions whose share-partition state the share coordinator has initialized are
assigned: a heartbeat records the subscribed partitions not initialized yet as initializing
(ShareGroupStatePartitionMetadata) and hands them to ``on_initialize`` (kafkawire.broker
.share_group_init, which initializes them in the background and records the outcome); the
heartbeat after that assigns them.

Differences from Kafka kept here (docs/differences.md):
- the simple assignor (kafkawire.broker.share_assignor) follows Kafka's rules, sticky to the
  current target assignment, but breaks ties by member id, topic name and partition where
  Kafka's follow its hash maps' order.
"""
from __future__ import annotations

import logging
from typing import Callable

from kafkawire.messages.share_group_describe_response import (Assignment as DescribedAssignment, DescribedGroup,
                                                              Member as DescribedMember,
                                                              TopicPartitions as DescribedTopicPartitions)
from kafkawire.messages.share_group_heartbeat_response import (Assignment, ShareGroupHeartbeatResponse,
                                                               TopicPartitions)
from kafkawire.protocol.error_codes import Errors

from . import share_records as rec
from .consumer_coordinator import GroupError, TopicsView, metadata_hash
from .share_group_init import assignable as assignable_partitions
from .share_group_init import (RETRY_INTERVAL_MS, initializing_record, partitions_of, pending_assignment,
                               uninitialized, without_deleted_topics)
from .share_assignor import simple_assign
from .share_records import ShareGroup, ShareMember

__all__ = ["ShareGroups", "simple_assignment", "validate_heartbeat", "LEAVE_EPOCH"]

log = logging.getLogger(__name__)

LEAVE_EPOCH = -1
MAX_SIZE = 200                  # group.share.max.size (Kafka's default)
ASSIGNOR = "simple"


def validate_heartbeat(request) -> None:
    """GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid (KafkaApis checks the
    member id first: ``isMemberIdValid``)."""
    if not request.member_id or len(request.member_id) > 36:
        raise GroupError(Errors.INVALID_REQUEST, "Invalid member id in the request.")
    if request.member_id.strip() == "":
        raise GroupError(Errors.INVALID_REQUEST, "MemberId can't be empty.")
    if request.group_id is None or request.group_id.strip() == "":
        raise GroupError(Errors.INVALID_REQUEST, "GroupId can't be empty.")
    if request.rack_id is not None and request.rack_id.strip() == "":
        raise GroupError(Errors.INVALID_REQUEST, "RackId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise GroupError(Errors.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_EPOCH:
        raise GroupError(Errors.INVALID_REQUEST, "MemberEpoch is invalid.")


def simple_assignment(members: dict, view: TopicsView, assignable: dict | None = None, old: dict | None = None) -> dict:
    """``members``: member id -> its subscribed topic names. Each member's target
    ({topic id: frozenset(partitions)}) by Kafka's simple assignor (kafkawire.broker.share_assignor):
    every partition of the subscribed topics (of those in ``assignable``, {topic id: partitions},
    when given) goes to ceil(members / partitions) of its subscribers, sticky to ``old`` (member
    id -> its current target)."""
    return simple_assign(members, view, assignable, old)


def session_key(group_id: str, member_id: str) -> str:
    return f"share-session-{group_id}-{member_id}"


class ShareGroups:
    """The share groups of ``classic`` (a kafkawire.broker.group_coordinator.GroupCoordinator,
    whose timer, clock and persist they share). ``timeouts(group_id)``: the group's (session
    timeout, heartbeat interval); ``on_member_gone(group_id, member_id)``: the member left or was
    fenced (its acquired records go back: kafkawire.broker.share_apis)."""

    def __init__(self, classic, *, topics: Callable[[], TopicsView], timeouts: Callable,
                 on_member_gone: Callable = lambda group_id, member_id: None,
                 on_group_deleted: Callable = lambda group_id: None,
                 on_initialize: Callable = lambda group_id, group_epoch, change, adopt: None,
                 max_size: int = MAX_SIZE, initialize_retry_ms: int = RETRY_INTERVAL_MS,
                 assignment_interval: Callable[[str], int] = lambda group_id: 0):
        self.classic = classic
        self.assignment_interval = assignment_interval   # the group's share.assignment.interval.ms
        self.max_size = max_size                         # group.share.max.size
        self.initialize_retry_ms = initialize_retry_ms   # group.share.initialize.retry.interval.ms
        self.topics = topics
        self.timeouts = timeouts
        self.on_member_gone = on_member_gone
        self.on_group_deleted = on_group_deleted
        self.on_initialize = on_initialize
        self.groups: dict[str, ShareGroup] = {}
        self._topic_ids: set | None = None               # the topics at the last metadata seen with groups
        self.rebalances = 0                              # group epoch bumps by heartbeats (share-group-rebalance-count)
        classic.share_groups = self.groups
        classic.share = self

    def write(self, group_id: str, records: list) -> None:
        if not records:
            return
        error = self.classic.persist(group_id, [rec.encode(r) for r in records])
        if error != Errors.NONE:
            raise GroupError(error)
        for record in records:
            rec.apply(self.groups, record)

    def replay(self, record) -> None:
        rec.apply(self.groups, record)

    def on_metadata(self) -> None:
        """maybeCleanupShareGroupState: when the metadata shows a topic deleted, each group whose
        ShareGroupStatePartitionMetadata names it has the record written without it (a group
        loaded after the deletion: at its next heartbeat)."""
        if not self.groups:
            self._topic_ids = None
            return
        view = self.topics()
        if self._topic_ids is None or not self._topic_ids <= view.by_id.keys():
            for group_id, group in list(self.groups.items()):
                cleaned = without_deleted_topics(group, view)
                try:
                    self.write(group_id, [] if cleaned is None else [cleaned])
                except GroupError as exc:          # the partition moved away meanwhile: its new coordinator's
                    log.warning("[GroupId %s] Removing deleted topics from the share-partition metadata "
                                "failed: %s", group_id, Errors.for_code(exc.code).name)
        self._topic_ids = set(view.by_id)

    # -- ShareGroupHeartbeat --

    def heartbeat(self, request, *, client_id: str, client_host: str) -> ShareGroupHeartbeatResponse:
        try:
            validate_heartbeat(request)
            self._check_type(request.group_id)
            if request.member_epoch == LEAVE_EPOCH:
                return self._leave(request)
            return self._heartbeat(request, client_id, client_host)
        except GroupError as exc:
            return ShareGroupHeartbeatResponse(error_code=exc.code, error_message=exc.message)

    def _check_type(self, group_id: str) -> None:
        if group_id in self.classic.consumer_groups or group_id in self.classic.groups or \
                group_id in self.classic.streams_groups:
            raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")

    def _heartbeat(self, request, client_id: str, client_host: str) -> ShareGroupHeartbeatResponse:
        group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
        group = self.groups.get(group_id)
        if group is None:
            if epoch != 0:
                raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            group = ShareGroup(group_id)
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            if len(group.members) >= self.max_size:
                raise GroupError(Errors.GROUP_MAX_SIZE_REACHED,
                                 f"The share group has reached its maximum capacity of {self.max_size} members.")
            member = ShareMember(member_id)
        elif epoch != 0:
            _check_epoch(member, epoch)
        records: list = []
        updated = member.copy(client_id=client_id, client_host=client_host,
                              rack_id=member.rack_id if request.rack_id is None else request.rack_id,
                              subscribed=member.subscribed if request.subscribed_topic_names is None
                              else tuple(request.subscribed_topic_names))
        bump = False
        if updated != member or member_id not in group.members:
            records.append(rec.member_record(group_id, updated))
            bump = updated.subscribed != member.subscribed
        view = self.topics()
        names = group.subscribed_topic_names(updated)
        new_hash = metadata_hash(names, view)
        group_epoch = group.group_epoch
        if group.assignment_epoch >= group_epoch and pending_assignment(group, names, view):
            bump = True                  # partitions initialized since the last assignment
        if bump or new_hash != group.metadata_hash:
            group_epoch += 1
            records.append(rec.epoch_record(group_id, group_epoch, new_hash))
            log.info("[GroupId %s] Bumped group epoch to %d with metadata hash %d.", group_id, group_epoch, new_hash)
            self.rebalances += 1
        targets, target_epoch = group.targets, group.assignment_epoch
        now = self.classic.now_ms()
        if group_epoch > group.assignment_epoch and self._may_assign(group, now):
            targets, target_epoch = self._assign(group, updated, group_epoch, view, records), group_epoch
        target = targets.get(member_id, {})
        reconciled = updated
        if bump or updated.member_epoch != target_epoch:
            reconciled = updated.copy(member_epoch=target_epoch, previous_member_epoch=updated.member_epoch,
                                      assigned=_subscribed_only(target, updated.subscribed, view))
            if reconciled != updated or member_id not in group.members:
                records.append(rec.current_record(group_id, reconciled))
        change = uninitialized(group, names, view, now, self.initialize_retry_ms)
        adopt = not group.has_state_metadata
        if change:
            records.append(initializing_record(group, change, view))
        else:
            cleaned = without_deleted_topics(group, view)
            if cleaned is not None:
                records.append(cleaned)
        self.groups.setdefault(group_id, group)
        try:
            self.write(group_id, records)
        except GroupError:
            if not group.members and group.group_epoch == 0:
                self.groups.pop(group_id, None)          # nothing written: the new group is not kept
            raise
        if change:
            group.initializing_since.update((topic_id, now) for topic_id in change)
            self.on_initialize(group_id, group_epoch, change, adopt)
        self.schedule_session(group_id, member_id)
        response = ShareGroupHeartbeatResponse(error_code=Errors.NONE, member_id=member_id,
                                               member_epoch=reconciled.member_epoch,
                                               heartbeat_interval_ms=self.timeouts(group_id)[1])
        if epoch == 0 or request.subscribed_topic_names is not None or reconciled.assigned != member.assigned:
            response.assignment = Assignment(topic_partitions=[
                TopicPartitions(topic_id=t, partitions=sorted(ps)) for t, ps in reconciled.assigned.items()])
        return response

    def _may_assign(self, group: ShareGroup, now: int) -> bool:
        """canComputeNextTargetAssignment: at once for a group never assigned or an interval of 0,
        else not before the group's assignment interval has passed since the last one."""
        interval = self.assignment_interval(group.group_id)
        return group.assignment_timestamp_ms == 0 or interval == 0 or now >= group.assignment_timestamp_ms + interval

    def _assign(self, group: ShareGroup, updated: ShareMember, group_epoch: int, view: TopicsView,
                records: list) -> dict:
        """The new target assignment of every member (``updated`` in place of its old self), its
        changes written as records: the targets."""
        subscriptions = {m.member_id: m.subscribed for m in group.members.values()}
        subscriptions[updated.member_id] = updated.subscribed
        targets = simple_assignment(subscriptions, view, assignable_partitions(group), group.targets)
        for member_id, target in targets.items():
            if group.targets.get(member_id) != target:
                records.append(rec.target_record(group.group_id, member_id, target))
        records.append(rec.target_metadata_record(group.group_id, group_epoch, self.classic.now_ms()))
        return targets

    # -- leaving --

    def _leave(self, request) -> ShareGroupHeartbeatResponse:
        group = self.groups.get(request.group_id)
        if group is None:
            raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Share group {request.group_id} not found.")
        if request.member_id not in group.members:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID,
                             f"Member {request.member_id} is not a member of group {request.group_id}.")
        log.info("[GroupId %s] Member %s left the share group.", request.group_id, request.member_id)
        self.fence(group, request.member_id)
        return ShareGroupHeartbeatResponse(error_code=Errors.NONE, member_id=request.member_id,
                                           member_epoch=LEAVE_EPOCH)

    def fence(self, group: ShareGroup, member_id: str) -> None:
        """shareGroupFenceMember: the member's records tombstoned, the group epoch bumped, a new
        target assignment for the others at their next heartbeat."""
        group_id = group.group_id
        others = {m.member_id: m for m in group.members.values() if m.member_id != member_id}
        remaining = set()
        for m in others.values():
            remaining.update(m.subscribed)
        records = [rec.current_tombstone(group_id, member_id), rec.target_tombstone(group_id, member_id),
                   rec.member_tombstone(group_id, member_id),
                   rec.epoch_record(group_id, group.group_epoch + 1, metadata_hash(remaining, self.topics()))]
        self.write(group_id, records)
        self.classic.timer.cancel(session_key(group_id, member_id))
        self.on_member_gone(group_id, member_id)

    def schedule_session(self, group_id: str, member_id: str) -> None:
        self.classic.timer.schedule(session_key(group_id, member_id), self.timeouts(group_id)[0],
                                    lambda: self._expire(group_id, member_id))

    def _expire(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        log.info("[GroupId %s] Member %s fenced from the group because the member session expired.",
                 group_id, member_id)
        try:
            self.fence(group, member_id)
        except GroupError as exc:         # not written (no longer the coordinator): tried again
            log.warning("[GroupId %s] fencing member %s failed: %s", group_id, member_id,
                        Errors.for_code(exc.code).name)
            self.schedule_session(group_id, member_id)

    def after_load(self, loaded_here=lambda group_id: True) -> None:
        """Every member of the groups just loaded must heartbeat within its session timeout."""
        for group in self.groups.values():
            if loaded_here(group.group_id):
                for member_id in group.members:
                    self.schedule_session(group.group_id, member_id)

    def unload(self, here) -> None:
        """GroupMetadataManager.onUnloaded for the share groups ``here(group id)`` names (their
        partition no longer led here, or about to be loaded again): dropped with their members'
        session timers; a load rebuilds them from the log. Their members are not fenced (no record
        is written) and keep what they acquired: the share-partitions' leaders hold that, and a
        background initialization finds no group to record its outcome in."""
        for group_id in [g for g in self.groups if here(g)]:
            group = self.groups.pop(group_id)
            log.info("[GroupId=%s] Unloaded group metadata for group epoch %d.", group_id, group.group_epoch)
            for member_id in group.members:
                self.classic.timer.cancel(session_key(group_id, member_id))

    # -- DeleteGroups --

    def start_delete(self, group_id: str) -> tuple[int, list]:
        """sharePartitionDeleteRequests: an Empty group only (NON_EMPTY_GROUP); every
        share-partition its ShareGroupStatePartitionMetadata names moved to its deleting topics
        (written first, so a deletion cut short is asked for again): (error code, [(topic id,
        partition)] whose state to delete at the share coordinator)."""
        group = self.groups[group_id]
        if group.members:
            return Errors.NON_EMPTY_GROUP, []
        view = self.topics()
        partitions = partitions_of(group, view)
        deleting = {t: view.by_id[t] for t in partitions}
        if group.has_state_metadata:
            try:
                self.write(group_id, [rec.state_partitions_record(group_id, {}, {}, deleting)])
            except GroupError as exc:
                return exc.code, []
        return Errors.NONE, [(t, p) for t, ps in partitions.items() for p in sorted(ps)]

    def delete(self, group_id: str) -> int:
        """ShareGroup.validateDeleteGroup and createGroupTombstoneRecords: an Empty group only
        (NON_EMPTY_GROUP), every record of it tombstoned: an error code. Its share-partitions'
        state is deleted before (``start_delete``)."""
        group = self.groups[group_id]
        if group.members:
            return Errors.NON_EMPTY_GROUP
        try:
            self.write(group_id, [rec.target_metadata_tombstone(group_id), rec.state_partitions_tombstone(group_id),
                                  rec.epoch_tombstone(group_id)])
        except GroupError as exc:
            return exc.code
        self.on_group_deleted(group_id)
        return Errors.NONE

    # -- ShareGroupDescribe --

    def describe(self, group_id: str) -> DescribedGroup:
        group = self.groups.get(group_id)
        if group is None:
            return DescribedGroup(group_id=group_id, error_code=Errors.GROUP_ID_NOT_FOUND,
                                  error_message=f"Group {group_id} not found.", members=[])
        view = self.topics()
        by_id = view.by_id
        return DescribedGroup(
            error_code=Errors.NONE, group_id=group_id, group_state=group.state, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch, assignor_name=ASSIGNOR, members=[
                DescribedMember(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                                client_id=m.client_id, client_host=m.client_host,
                                subscribed_topic_names=list(m.subscribed),
                                assignment=DescribedAssignment(topic_partitions=[
                                    DescribedTopicPartitions(topic_id=t, topic_name=by_id.get(t, ""),
                                                             partitions=sorted(ps))
                                    for t, ps in m.assigned.items() if t in by_id]))
                for m in group.members.values()])

    def assigned(self, group_id: str, member_id: str) -> dict | None:
        """The member's assigned partitions ({topic id: frozenset}), None when it is no member."""
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        return None if member is None else member.assigned


def _check_epoch(member: ShareMember, epoch: int) -> None:
    """throwIfShareGroupMemberEpochIsInvalid: the member's epoch, or its previous one (the answer
    with the bumped epoch may have been lost)."""
    if epoch > member.member_epoch:
        raise GroupError(Errors.FENCED_MEMBER_EPOCH, f"The share group member has a greater member epoch ({epoch}) "
                         f"than the one known by the group coordinator ({member.member_epoch}). The member must "
                         "abandon all its partitions and rejoin.")
    if epoch < member.member_epoch and epoch != member.previous_member_epoch:
        raise GroupError(Errors.FENCED_MEMBER_EPOCH, f"The share group member has a smaller member epoch ({epoch}) "
                         f"than the one known by the group coordinator ({member.member_epoch}), and it does not "
                         f"match the previous member epoch ({member.previous_member_epoch}). The member must "
                         "abandon all its partitions and rejoin.")


def _subscribed_only(target: dict, subscribed: tuple, view: TopicsView) -> dict:
    """ShareGroupAssignmentBuilder: the target's partitions of topics the member subscribes to."""
    ids = view.ids(subscribed)
    return {t: ps for t, ps in target.items() if t in ids}
