"""ConsumerGroupHeartbeat without I/O: KIP-848 consumer groups as Kafka 4.3.1's GroupMetadataManager
runs them (consumerGroupHeartbeat, consumerGroupLeave, the session and rebalance timeouts).

    coordinator = ConsumerCoordinator(classic, settings, topics=lambda: view)
    response = coordinator.heartbeat(request, version=1, client_id="c", client_host="/127.0.0.1")

A heartbeat (1) creates or updates the member, bumping the group epoch when its subscription or
the subscribed topics' metadata changed, (2) computes a new target assignment with the
group's server assignor when the group epoch is ahead of the assignment epoch (at most once per
its ``consumer.assignment.interval.ms``, else the broker's), (3) moves the member towards its target
(kafkawire.broker.consumer_reconcile). Every change is a record of kafkawire.broker.consumer_records
written through the classic coordinator's ``persist`` and then replayed into the state
(kafkawire.broker.consumer_group.apply), as Kafka's coordinator runtime applies its records, so the
state rebuilt at load is the state served.

The groups live in ``classic.consumer_groups`` beside the classic groups (``classic.groups``),
one name space as in Kafka: a consumer member joining an empty classic group replaces it, one
joining a classic group with members converts it (``group.consumer.migration.policy``,
kafkawire.broker.consumer_migration), and the last consumer-protocol member leaving a group of
classic members converts it back. Classic members' requests are kafkawire.broker.consumer_classic's.
The view of the image's topics and the metadata hash every group type shares are
kafkawire.broker.topics_view's (re-exported here).
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from kafkawire.messages.consumer_group_heartbeat_response import (Assignment, ConsumerGroupHeartbeatResponse,
                                                                   TopicPartitions)
from kafkawire.protocol.error_codes import Errors

from . import consumer_records as rec
from .consumer_assignors import ASSIGNORS, MemberSpec
from .consumer_migration import (ConversionRefused, downgrade, downgrade_allowed, replayed, retire_classic,
                                 upgrade_records)
from .consumer_group import (LEAVE_EPOCH, STATIC_LEAVE_EPOCH, UNREVOKED_PARTITIONS, ConsumerGroup,
                             ConsumerMember, apply)
from .consumer_reconcile import FencedMemberEpoch, reconcile
from .consumer_regex import regex_error
from .consumer_regex_refresh import REGEX_UPDATED_AND_RESOLVED, NO_CHANGE, RegexRefresher, leaving_tombstones
from .group_records import group_tombstone
from .topics_view import TopicsView, metadata_hash   # re-exported: the share and streams groups import them here

__all__ = ["ConsumerCoordinator", "ConsumerSettings", "TopicsView", "GroupError"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConsumerSettings:
    """The broker settings of KIP-848 groups (Kafka's names and defaults)."""
    session_timeout_ms: int = 45_000             # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000           # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1                    # group.consumer.max.size
    assignors: tuple = ("uniform", "range")      # group.consumer.assignors (the first is the default)
    assignment_interval_ms: int = 1_000          # group.consumer.assignment.interval.ms
    migration_policy: str = "bidirectional"      # group.consumer.migration.policy
    regex_refresh_interval_ms: int = 600_000     # group.consumer.regex.refresh.interval.ms (internal in Kafka)
    # The session and heartbeat bounds (group.consumer.{min,max}.*) are checked with the other
    # settings (kafkawire.net.config); a group's own consumer.session.timeout.ms and
    # consumer.heartbeat.interval.ms (GROUP configs) come through ``group_timeouts``, its
    # consumer.assignment.interval.ms through ``assignment_interval``.


class GroupError(Exception):
    """A heartbeat refused with ``code`` and Kafka's ``message``."""

    def __init__(self, code: int, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


def session_key(group_id: str, member_id: str) -> str:
    return f"consumer-session-{group_id}-{member_id}"


def rebalance_key(group_id: str, member_id: str) -> str:
    return f"consumer-rebalance-{group_id}-{member_id}"


def join_timeout_key(group_id: str, member_id: str) -> str:
    return f"consumer-join-{group_id}-{member_id}"


def sync_timeout_key(group_id: str, member_id: str) -> str:
    return f"consumer-sync-{group_id}-{member_id}"


class ConsumerCoordinator:
    """The consumer groups of ``classic`` (a kafkawire.broker.group_coordinator.GroupCoordinator,
    whose timer, clock and persist it shares)."""

    def __init__(self, classic, settings: ConsumerSettings, *, topics, group_timeouts=None, assignment_interval=None):
        """``group_timeouts(group_id)``: the group's (session timeout, heartbeat interval), and
        ``assignment_interval(group_id)``: its GROUP configs over the broker's; default the settings'."""
        self.classic = classic
        self.settings = settings
        self.topics = topics
        self.group_timeouts = group_timeouts or (lambda group_id: (settings.session_timeout_ms,
                                                                   settings.heartbeat_interval_ms))
        self.assignment_interval = assignment_interval or (lambda group_id: settings.assignment_interval_ms)
        self.groups: dict[str, ConsumerGroup] = {}
        self.join_timeouts: set = set()     # (group id, member id) of classic members told to rejoin
        self.regexes = RegexRefresher(self, settings.regex_refresh_interval_ms)
        classic.consumer_groups = self.groups
        classic.consumer = self

    # -- writing --

    def write(self, group_id: str, records: list) -> int:
        """Persist ``records`` and replay them: an error code (nothing applied on an error)."""
        if not records:
            return Errors.NONE
        error = self.classic.persist(group_id, [(r[1], r[2]) if r[0] == "classic" else rec.encode(r) for r in records])
        if error != Errors.NONE:
            return error
        for record in records:
            if record[0] == "classic":
                retire_classic(self, group_id)
            else:
                apply(self.groups, record)
        return Errors.NONE

    # -- ConsumerGroupHeartbeat --

    def heartbeat(self, request, *, version: int, client_id: str, client_host: str) -> ConsumerGroupHeartbeatResponse:
        try:
            validate(request, version, self.settings.assignors)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(request)
            return self._heartbeat(request, client_id, client_host)
        except GroupError as exc:
            return ConsumerGroupHeartbeatResponse(error_code=exc.code, error_message=exc.message)

    def _heartbeat(self, request, client_id: str, client_host: str) -> ConsumerGroupHeartbeatResponse:
        records: list = []
        now = self.classic.now_ms()
        joining = request.member_epoch == 0
        group = self._group_for(request.group_id, joining, records)
        member_id = request.member_id or str(uuid.uuid4())
        if len(group.members) >= self.settings.max_size and (not request.member_id or member_id not in group.members):
            raise GroupError(Errors.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of "
                             f"{self.settings.max_size} members.")
        owned = _owned(request.topic_partitions)
        if request.instance_id is None:
            member, replaced = _dynamic_member(group, member_id, request.member_epoch, owned, joining), None
        else:
            member, replaced = self.static_member(group, member_id, request.instance_id, request.member_epoch, owned,
                                                  joining, records)
        updated = _updated(member, request, client_id, client_host)
        _check_regex(updated.subscribed_topic_regex)
        reconciled = self.advance(group, member, updated, replaced, owned, now, records)
        error = self.write(group.group_id, records)
        if error != Errors.NONE:
            raise GroupError(error)
        group = self.groups.get(group.group_id, group)
        group.metadata_stale = False
        self._after_reconcile(group.group_id, updated, reconciled)
        self.schedule_session(group.group_id, member_id)
        response = ConsumerGroupHeartbeatResponse(error_code=Errors.NONE, member_id=member_id,
                                                  member_epoch=reconciled.member_epoch,
                                                  heartbeat_interval_ms=self.group_timeouts(group.group_id)[1])
        full = request.rebalance_timeout_ms != -1 and request.topic_partitions is not None and (
            request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
        if joining or full or reconciled.assigned != member.assigned:
            response.assignment = Assignment(topic_partitions=[
                TopicPartitions(topic_id=t, partitions=sorted(ps)) for t, ps in reconciled.assigned.items()])
        return response

    def advance(self, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, replaced, owned,
                now: int, records: list) -> ConsumerMember:
        """Steps 1-3 of a heartbeat (or of a classic member's JoinGroup): ``updated`` (``member``
        with what the request sets) written when it changed, the group epoch bumped when the
        subscribed topics changed, a new target assignment when due, and the member reconciled
        towards its target: the reconciled member (its records added to ``records``)."""
        group_epoch, topics_changed = self.subscribe(group, member, updated, replaced, records)
        target_epoch, target = self._target(group, group_epoch, updated, replaced, self.topics(), now, records)
        return self.reconciled(group, updated, target_epoch, target, owned, topics_changed, records)

    def subscribe(self, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, replaced,
                  records: list) -> tuple[int, bool]:
        """Step 1: (the group epoch, whether the member's topics changed)."""
        view = self.topics()
        # A new member is written; a replacing static member was written with its predecessor's
        # subscription and is written again only if the request changes it (hasMemberSubscriptionChanged).
        changed = updated.subscription() != member.subscription() or (
            replaced is None and member.member_id not in group.members)
        names_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        if changed:
            records.append(rec.member_record(group.group_id, updated))
        regex_status = self.regexes.on_heartbeat(group, member, updated, records)
        # The epoch moves for a regex only once it is resolved (a new one waits for its resolution).
        bump = names_changed or regex_status == REGEX_UPDATED_AND_RESOLVED
        group_epoch = group.group_epoch
        if bump or group.metadata_stale:
            new_hash = metadata_hash(group.subscribed_topic_names(updated, self._without(replaced)), view)
            if bump or new_hash != group.metadata_hash:
                group_epoch += 1
                records.append(rec.group_epoch_record(group.group_id, group_epoch, new_hash))
                log.info("[GroupId %s] Bumped group epoch to %d.", group.group_id, group_epoch)
        topics_changed = names_changed or regex_status != NO_CHANGE
        return group_epoch, topics_changed

    def reconciled(self, group: ConsumerGroup, member: ConsumerMember, target_epoch: int, target: dict, owned,
                   topics_changed: bool, records: list) -> ConsumerMember:
        """Step 3, maybeReconcile: the member moved towards ``target``."""
        if not topics_changed and member.is_reconciled_to(target_epoch):
            return member
        view = self.topics()
        try:
            moved = reconcile(member, target_epoch, target, group.current_partition_epoch,
                              view.ids(member.topics(group.resolved)), owned, topics_changed)
        except FencedMemberEpoch as exc:
            raise GroupError(Errors.FENCED_MEMBER_EPOCH, str(exc)) from None
        if moved != member:
            records.append(rec.current_assignment_record(group.group_id, moved))
        return moved

    @staticmethod
    def _without(replaced) -> frozenset:
        return frozenset() if replaced is None else frozenset((replaced.member_id,))

    def _group_for(self, group_id: str, joining: bool, records: list) -> ConsumerGroup:
        """GroupMetadataManager.getOrMaybeCreateConsumerGroup."""
        group = self.groups.get(group_id)
        if group is not None:
            return group
        if group_id in getattr(self.classic, "streams_groups", ()):
            raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        classic = self.classic.groups.get(group_id)
        if classic is None:
            if not joining:
                raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            return ConsumerGroup(group_id)
        if not joining:
            raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if classic.is_empty():
            records.append(("classic",) + group_tombstone(group_id))
            log.info("[GroupId %s] Converted the empty classic group to a consumer group.", group_id)
            return ConsumerGroup(group_id)
        try:
            converted = upgrade_records(classic, self.settings.migration_policy, self.settings.max_size, self.topics(),
                                        metadata_hash)
        except ConversionRefused as exc:
            log.info("[GroupId %s] %s", group_id, exc)
            raise GroupError(Errors.GROUP_ID_NOT_FOUND, str(exc)) from None
        records.extend(converted)
        log.info("[GroupId %s] Converted the classic group to a consumer group.", group_id)
        return replayed(converted)[group_id]

    def static_member(self, group, member_id, instance_id, epoch, owned, joining, records, classic=False):
        """getOrMaybeSubscribeStaticConsumerGroupMember: (the member, the member it replaces or None);
        ``classic``: for a classic member's JoinGroup (no epoch to check, an instance id in use is taken)."""
        existing_id = group.static_members.get(instance_id)
        existing = None if existing_id is None else group.members.get(existing_id)
        if joining:
            if existing is None:
                return group.members.get(member_id) or ConsumerMember(member_id), None
            if not classic and not existing.uses_classic and existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise GroupError(Errors.UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                 f"{instance_id} cannot join the group because the instance id is owned by "
                                 f"{existing.member_id} member.")
            new = existing.copy(member_id=member_id, member_epoch=0, previous_member_epoch=0)
            if existing.member_id == member_id:
                return new, None
            records.extend(_removal(group.group_id, existing.member_id))
            records.append(rec.member_record(group.group_id, new))
            records.append(rec.target_member_record(group.group_id, member_id, group.target.get(existing.member_id, {})))
            records.append(rec.current_assignment_record(group.group_id, new))
            log.info("[GroupId %s] Static member with instance id %s re-joins the consumer group using the %s "
                     "protocol. Created a new member %s to replace the existing member %s.", group.group_id,
                     instance_id, "classic" if classic else "consumer", member_id, existing.member_id)
            return new, existing
        if existing is None:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        _check_not_fenced(existing, group.group_id, member_id, instance_id)
        if not classic:
            _check_epoch(existing, epoch, owned)
        return existing, None

    # -- the target assignment --

    def _target(self, group: ConsumerGroup, group_epoch: int, member: ConsumerMember, replaced, view: TopicsView,
                now: int, records: list) -> tuple[int, dict]:
        """maybeUpdateTargetAssignment: (assignment epoch, the member's target)."""
        previous_target = group.target.get(member.member_id)
        if previous_target is None and replaced is not None:
            previous_target = group.target.get(replaced.member_id)
        if group.assignment_epoch >= group_epoch or not self._may_assign(group, now):
            return group.assignment_epoch, previous_target or {}
        members = {m.member_id: m for m in group.members.values()}
        if replaced is not None:
            members.pop(replaced.member_id, None)
        members[member.member_id] = member
        current = {m: group.target.get(m, {}) for m in members}
        current[member.member_id] = previous_target or {}
        name = group.preferred_assignor(member) or self.settings.assignors[0]
        topics = {m.member_id: m.topics(group.resolved) for m in members.values()}
        subscribed = set().union(*topics.values())
        sizes = {view.by_name[n][0]: view.by_name[n][1] for n in subscribed if n in view.by_name}
        specs = {m.member_id: MemberSpec(m.instance_id, frozenset(view.ids(topics[m.member_id])))
                 for m in members.values()}
        new = ASSIGNORS[name](specs, sizes, current)
        for member_id, partitions in new.items():
            partitions = {t: ps for t, ps in partitions.items() if ps}
            if partitions != {t: ps for t, ps in current.get(member_id, {}).items() if ps}:
                records.append(rec.target_member_record(group.group_id, member_id, partitions))
        records.append(rec.target_metadata_record(group.group_id, group_epoch, now))
        log.info("[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.", group.group_id,
                 group_epoch, name)
        return group_epoch, new.get(member.member_id, {})

    def _may_assign(self, group: ConsumerGroup, now: int) -> bool:
        """canComputeNextTargetAssignment: not more often than the group's consumer.assignment.interval.ms
        (else group.consumer.assignment.interval.ms)."""
        interval = self.assignment_interval(group.group_id)
        return group.assignment_timestamp_ms == 0 or interval == 0 or now >= group.assignment_timestamp_ms + interval

    # -- leaving and fencing --

    def _leave(self, request) -> ConsumerGroupHeartbeatResponse:
        """consumerGroupLeave: -1 leaves; -2, a static member leaving for now, keeps its place."""
        group = self.groups.get(request.group_id)
        if group is None:
            message = f"Group {request.group_id} is not a consumer group." if request.group_id in \
                self.classic.groups else f"Group {request.group_id} not found."
            raise GroupError(Errors.GROUP_ID_NOT_FOUND, message)
        if request.instance_id is None:
            member = _known_member(group, request.member_id)
        else:
            existing_id = group.static_members.get(request.instance_id)
            member = None if existing_id is None else group.members.get(existing_id)
            if member is None:
                raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
            _check_not_fenced(member, group.group_id, request.member_id, request.instance_id)
            if request.member_epoch == STATIC_LEAVE_EPOCH:
                return self._static_leave(group, member)
        log.info("[GroupId %s] Member %s left the consumer group.", group.group_id, member.member_id)
        error = self.fence(group, member)
        if error != Errors.NONE:
            raise GroupError(error)
        return ConsumerGroupHeartbeatResponse(error_code=Errors.NONE, member_id=request.member_id,
                                              member_epoch=request.member_epoch)

    def _static_leave(self, group: ConsumerGroup, member: ConsumerMember) -> ConsumerGroupHeartbeatResponse:
        leaving = member.copy(member_epoch=STATIC_LEAVE_EPOCH, previous_member_epoch=member.member_epoch, revoking={},
                              assigned={t: dict.fromkeys(ps, 0) for t, ps in member.assigned.items()})
        error = self.write(group.group_id, [rec.current_assignment_record(group.group_id, leaving)])
        if error != Errors.NONE:
            raise GroupError(error)
        log.info("[GroupId %s] Static member %s with instance id %s temporarily left the consumer group.",
                 group.group_id, member.member_id, member.instance_id)
        return ConsumerGroupHeartbeatResponse(error_code=Errors.NONE, member_id=member.member_id,
                                              member_epoch=STATIC_LEAVE_EPOCH)

    def fence(self, group: ConsumerGroup, member: ConsumerMember) -> int:
        """consumerGroupFenceMember: its records go, the group epoch moves on."""
        return self.fence_all(group, [member.member_id])

    def fence_all(self, group: ConsumerGroup, member_ids: list) -> int:
        """consumerGroupFenceMembers: their records go, the group epoch moves on once; or, when
        the members left all use the classic protocol, the group becomes a classic group."""
        if not member_ids:
            return Errors.NONE
        if downgrade_allowed(group, frozenset(member_ids), self.settings.migration_policy,
                             self.classic.settings.max_size):
            error = downgrade(self, group, frozenset(member_ids))
            if error is not None:
                return error
        records = [r for member_id in member_ids for r in _removal(group.group_id, member_id)]
        records += leaving_tombstones(group, member_ids)
        view = self.topics()
        names = group.subscribed_topic_names(without=frozenset(member_ids))
        records.append(rec.group_epoch_record(group.group_id, group.group_epoch + 1, metadata_hash(names, view)))
        error = self.write(group.group_id, records)
        if error == Errors.NONE:
            log.info("[GroupId %s] Bumped group epoch to %d.", group.group_id, group.group_epoch)
            for member_id in member_ids:
                self.cancel_timers(group.group_id, member_id)
        return error

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        for key in (session_key, rebalance_key, join_timeout_key, sync_timeout_key):
            self.classic.timer.cancel(key(group_id, member_id))
        self.join_timeouts.discard((group_id, member_id))

    def classic_leave(self, group_id: str, identities: list) -> tuple[int, list]:
        """A classic LeaveGroup naming members of a consumer group (an admin's removal, Kafka's
        classicGroupLeaveToConsumerGroup): (error, [(member id, instance id, code)]), the
        members found fenced together."""
        group = self.groups[group_id]
        results, leaving = [], []
        for member_id, instance_id in identities:
            try:
                if instance_id is None:
                    member = _known_member(group, member_id)
                else:
                    found = group.static_members.get(instance_id)
                    member = None if found is None else group.members.get(found)
                    if member is None:
                        raise GroupError(Errors.UNKNOWN_MEMBER_ID)
                    if member_id:
                        _check_not_fenced(member, group_id, member_id, instance_id)
            except GroupError as exc:
                results.append((member_id, instance_id, exc.code))
                continue
            log.info("[GroupId %s] Member %s has left group through explicit `LeaveGroup` request.", group_id,
                     member.member_id)
            results.append((member_id, instance_id, Errors.NONE))
            if member.member_id not in leaving:
                leaving.append(member.member_id)
        return self.fence_all(group, leaving), results

    def fence_if(self, group_id: str, member_id: str, why: str, epoch: int | None = None) -> None:
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if member is None or (epoch is not None and member.member_epoch != epoch):
            return                      # gone, or it moved on from the epoch it had to leave
        log.info("[GroupId %s] Member %s fenced from the group because %s.", group_id, member_id, why)
        self.fence(group, member)

    def schedule_session(self, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
        """The member is fenced unless it heartbeats within ``timeout_ms`` (a classic member's own
        session timeout), by default the group's."""
        self.classic.timer.schedule(session_key(group_id, member_id),
                                    self.group_timeouts(group_id)[0] if timeout_ms is None else timeout_ms,
                                    lambda: self.fence_if(group_id, member_id, "the member session expired"))

    def _after_reconcile(self, group_id: str, before: ConsumerMember, after: ConsumerMember) -> None:
        """A member revoking partitions has its rebalance timeout to finish; otherwise none runs."""
        if after == before or after.uses_classic:     # a classic member has its join and sync timeouts instead
            return
        if after.state == UNREVOKED_PARTITIONS:
            self._schedule_rebalance(group_id, after)
        else:
            self.classic.timer.cancel(rebalance_key(group_id, after.member_id))

    def _schedule_rebalance(self, group_id: str, member: ConsumerMember) -> None:
        epoch, timeout = member.member_epoch, member.rebalance_timeout_ms
        why = f"it failed to transition from epoch {epoch} within {timeout}ms"
        self.classic.timer.schedule(rebalance_key(group_id, member.member_id), timeout,
                                    lambda: self.fence_if(group_id, member.member_id, why, epoch))

    def after_load(self, loaded_here=lambda group_id: True) -> None:
        """Every member of the groups just loaded must heartbeat within the session timeout (and
        one revoking partitions finish within its rebalance timeout); the topics' metadata is
        checked again at the next heartbeat."""
        for group in self.groups.values():
            if loaded_here(group.group_id):
                log.info("Loaded consumer group %s with %d members.", group.group_id, len(group.members))
                group.metadata_stale = True
                self.regexes.pending.discard(group.group_id)    # a resolution cut off by an unload
                for member in group.members.values():
                    self.schedule_session(group.group_id, member.member_id,
                                          member.classic.session_timeout_ms if member.uses_classic else None)
                    if member.state == UNREVOKED_PARTITIONS and not member.uses_classic:
                        self._schedule_rebalance(group.group_id, member)

    def subscribed_topics(self, group_id: str) -> set:
        """The topics the group's members subscribe to, by name or regex."""
        return self.groups[group_id].subscribed_topic_names()

    def topics_changed(self, names: set, created: bool = False) -> None:
        """Kafka's onMetadataUpdate: groups subscribed to a changed topic (by name or through a
        resolved regex) refresh at their next heartbeat; a created topic has every group's regexes
        resolved again at its next heartbeat."""
        if created:
            self.regexes.topics_created(self.topics().version)
        for group in self.groups.values():
            if not group.metadata_stale and group.subscribed_topic_names() & names:
                group.metadata_stale = True


# -- helpers --

def validate(request, version: int, assignors: tuple) -> None:
    """GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid."""
    def blank(value):
        return value is not None and not value.strip()
    if (version >= 1 or request.member_epoch > 0 or request.member_epoch == LEAVE_EPOCH) and blank(request.member_id):
        raise GroupError(Errors.INVALID_REQUEST, "MemberId can't be empty.")
    for value, name in ((request.group_id, "GroupId"), (request.instance_id, "InstanceId"),
                        (request.rack_id, "RackId")):
        if blank(value):
            raise GroupError(Errors.INVALID_REQUEST, f"{name} can't be empty.")
    if request.member_epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise GroupError(Errors.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise GroupError(Errors.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise GroupError(Errors.INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex must be "
                                                     "non-null when (re-)joining.")
    elif request.member_epoch == STATIC_LEAVE_EPOCH:
        if request.instance_id is None:
            raise GroupError(Errors.INVALID_REQUEST, "InstanceId can't be null.")
    elif request.member_epoch < STATIC_LEAVE_EPOCH:
        raise GroupError(Errors.INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise GroupError(Errors.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not supported. "
                                                      f"Supported assignors: {', '.join(assignors)}.")


def _check_regex(regex: str | None) -> None:
    """Utils.throwIfRegularExpressionIsInvalid."""
    reason = regex_error(regex) if regex else None
    if reason is not None:
        raise GroupError(Errors.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {reason}.")


def _owned(topic_partitions) -> list | None:
    return None if topic_partitions is None else [(t.topic_id, t.partitions) for t in topic_partitions]


def _known_member(group: ConsumerGroup, member_id: str) -> ConsumerMember:
    member = group.members.get(member_id)
    if member is None:
        raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
    return member


def _dynamic_member(group: ConsumerGroup, member_id: str, epoch: int, owned, joining: bool) -> ConsumerMember:
    member = group.members.get(member_id)
    if member is None:
        if not joining:
            _known_member(group, member_id)
        member = ConsumerMember(member_id)
        log.info("[GroupId %s] Member %s joins the consumer group using the consumer protocol.", group.group_id,
                 member_id)
        return member
    _check_epoch(member, epoch, owned)
    return member


def _check_epoch(member: ConsumerMember, epoch: int, owned) -> None:
    """throwIfConsumerGroupMemberEpochIsInvalid: 0 rejoins; the previous epoch is accepted with
    a subset of the assignment (the answer that bumped it may have been lost)."""
    if epoch == 0 or epoch == member.member_epoch:
        return
    if epoch > member.member_epoch:
        raise GroupError(Errors.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch ({epoch}) "
                         f"than the one known by the group coordinator ({member.member_epoch}). The member must "
                         "abandon all its partitions and rejoin.")
    if epoch != member.previous_member_epoch or not _is_subset(owned, member.assigned):
        raise GroupError(Errors.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member epoch ({epoch}) "
                         f"than the one known by the group coordinator ({member.member_epoch}). The member must "
                         "abandon all its partitions and rejoin.")


def _is_subset(owned, assigned: dict) -> bool:
    if owned is None:
        return True
    return all(p in assigned.get(topic_id, ()) for topic_id, partitions in owned for p in partitions)


def _check_not_fenced(member: ConsumerMember, group_id: str, member_id: str, instance_id: str) -> None:
    if member.member_id != member_id:
        raise GroupError(Errors.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} was "
                                                    f"fenced by member {member.member_id}.")


def _updated(member: ConsumerMember, request, client_id: str, client_host: str) -> ConsumerMember:
    """The member with what the heartbeat sets (a null or -1 field keeps its value)."""
    changes = {"client_id": client_id, "client_host": client_host, "classic": None}
    if request.instance_id is not None:
        changes["instance_id"] = request.instance_id
    if request.rack_id is not None:
        changes["rack_id"] = request.rack_id
    if request.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = request.rebalance_timeout_ms
    if request.server_assignor is not None:
        changes["server_assignor"] = request.server_assignor
    if request.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = frozenset(request.subscribed_topic_names)
    if request.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = request.subscribed_topic_regex
    return member.copy(**changes)


def _removal(group_id: str, member_id: str) -> list:
    """GroupMetadataManager.removeMember's tombstones, in Kafka's order."""
    return [rec.current_assignment_tombstone(group_id, member_id), rec.target_member_tombstone(group_id, member_id),
            rec.member_tombstone(group_id, member_id)]

