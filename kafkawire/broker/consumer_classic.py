"""Classic members (JoinGroup, SyncGroup, Heartbeat) in a KIP-848 consumer group, as Kafka 4.3.1's
GroupMetadataManager serves them (classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup): the member is a member of the consumer group like any
other, its assignment computed by the group's server-side assignor.

    members = ClassicMembers(coordinator)      # a kafkawire.broker.consumer_coordinator.ConsumerCoordinator
    response = members.join(group, request, version=9, client_id="c", client_host="/127.0.0.1")

- JoinGroup creates or updates the member from its ConsumerProtocolSubscription (topics, rack,
  owned partitions), moves the group and the member on as a ConsumerGroupHeartbeat would, and
  answers at once: the generation is the member epoch, the protocol the member's first one, no
  leader (the assignment is the server's). The member must then sync within its rebalance timeout.
- SyncGroup answers the member's assigned partitions as a ConsumerProtocolAssignment (the version
  of its subscription), or REBALANCE_IN_PROGRESS when the target moved past its epoch.
- Heartbeat answers REBALANCE_IN_PROGRESS when the member must rejoin to move on (a newer target,
  partitions to revoke, or released partitions to take); it must rejoin within its rebalance timeout.
- LeaveGroup is the coordinator's ``classic_leave``; a session ends after the member's own
  session timeout. Any of these timeouts fences the member.
"""
from __future__ import annotations

import logging
import uuid

from kafkawire.messages.heartbeat_response import HeartbeatResponse
from kafkawire.messages.join_group_response import JoinGroupResponse
from kafkawire.messages.sync_group_response import SyncGroupResponse
from kafkawire.protocol.error_codes import Errors

from .consumer_admin import tombstones
from .consumer_coordinator import GroupError, join_timeout_key, sync_timeout_key
from .consumer_group import UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, ClassicMeta, ConsumerGroup, ConsumerMember
from .consumer_migration import downgrade, downgrade_allowed
from .consumer_protocol import decode_subscription, encode_assignment, subscription_version
from .group_state import CONSUMER_PROTOCOL_TYPE

__all__ = ["ClassicMembers"]

log = logging.getLogger(__name__)


class ClassicMembers:
    """The classic protocol's requests for the groups of ``coordinator``."""

    def __init__(self, coordinator):
        self.coordinator = coordinator

    # -- JoinGroup --

    def join(self, group: ConsumerGroup, request, *, version: int, client_id: str,
             client_host: str) -> JoinGroupResponse:
        try:
            return self._join(group, request, version, client_id, client_host)
        except GroupError as exc:         # the service's answer to a failed operation: no member id
            return JoinGroupResponse(error_code=exc.code, member_id="")

    def _join(self, group, request, version, client_id, client_host) -> JoinGroupResponse:
        c = self.coordinator
        if c.settings.migration_policy == "disabled":
            log.info("Cannot join the consumer group %s with the classic protocol because the group migration is "
                     "disabled.", group.group_id)
            raise GroupError(Errors.INCONSISTENT_GROUP_PROTOCOL)
        unknown = request.member_id == ""
        member_id = str(uuid.uuid4()) if unknown else request.member_id
        if len(group.members) >= c.settings.max_size and member_id not in group.members:
            raise GroupError(Errors.GROUP_MAX_SIZE_REACHED)
        protocols = tuple((p.name, p.metadata) for p in request.protocols)
        if not group.supports_classic_protocols(request.protocol_type, {name for name, _ in protocols}):
            raise GroupError(Errors.INCONSISTENT_GROUP_PROTOCOL)
        if unknown and version >= 4 and request.group_instance_id is None:     # KIP-394: come back with this id
            log.info("[GroupId %s] Dynamic member with unknown member id joins the consumer group. Created a new "
                     "member id %s and requesting the member to rejoin with this id.", group.group_id, member_id)
            return JoinGroupResponse(error_code=Errors.MEMBER_ID_REQUIRED, member_id=member_id)
        try:
            subscription = decode_subscription(protocols[0][1])
        except ValueError as exc:
            log.warning("[GroupId %s] Member %s's embedded consumer protocol subscription does not decode: %s",
                        group.group_id, member_id, exc)
            raise GroupError(Errors.UNKNOWN_SERVER_ERROR) from None
        records: list = []
        if request.group_instance_id is None:
            member, replaced = group.members.get(member_id), None
            if member is None:
                member = ConsumerMember(member_id)
                log.info("[GroupId %s] Member %s joins the consumer group using the classic protocol.",
                         group.group_id, member_id)
        else:
            member, replaced = c.static_member(group, member_id, request.group_instance_id, -1, [], unknown, records,
                                               classic=True)
        view = c.topics()
        updated = member.copy(
            instance_id=request.group_instance_id if request.group_instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=member.rebalance_timeout_ms if request.rebalance_timeout_ms == -1
            else request.rebalance_timeout_ms,
            subscribed_topic_names=frozenset(subscription.topics), subscribed_topic_regex="", client_id=client_id,
            client_host=client_host, classic=ClassicMeta(request.session_timeout_ms, protocols))
        owned = [(view.by_name[t][0], list(ps)) for t, ps in subscription.owned if t in view.by_name]
        existing_id = group.static_members.get(request.group_instance_id)
        existing = None if existing_id is None else group.members.get(existing_id)
        if existing is not None and downgrade_allowed(group, (), c.settings.migration_policy,
                                                      c.classic.settings.max_size, replaced=existing):
            return self._join_downgrading(group, member, updated, existing, owned, records)
        reconciled = c.advance(group, member, updated, replaced, owned, c.classic.now_ms(), records)
        error = c.write(group.group_id, records)
        if error != Errors.NONE:
            raise GroupError(error)
        c.groups[group.group_id].metadata_stale = False
        self._cancel_join_timeout(group.group_id, member_id)
        c.schedule_session(group.group_id, member_id, request.session_timeout_ms)
        c.classic.timer.schedule(sync_timeout_key(group.group_id, member_id), request.rebalance_timeout_ms,
                                 lambda: c.fence_if(group.group_id, member_id,
                                                    "the member failed to sync within timeout"))
        return JoinGroupResponse(error_code=Errors.NONE, member_id=member_id, generation_id=reconciled.member_epoch,
                                 protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0][0], leader="",
                                 members=[])

    def _join_downgrading(self, group, member, updated, existing, owned, records) -> JoinGroupResponse:
        """A classic static member replacing the last consumer-protocol member (its instance id's):
        the group becomes a classic group with it in place of the old member, rebalancing if the
        group's target assignment is behind its epoch, else taking the old member's partitions."""
        c = self.coordinator
        replaced = existing if existing.member_id != updated.member_id else None
        group_epoch, topics_changed = c.subscribe(group, member, updated, replaced, records)
        rebalance = group.assignment_epoch < group_epoch
        joining = updated
        if not rebalance:
            joining = c.reconciled(group, updated, group.assignment_epoch, group.target.get(existing.member_id, {}),
                                   owned, topics_changed, records)
        error = downgrade(c, group, frozenset(), joining=joining, replaced=existing, rebalance=rebalance,
                          records=records)
        if error != Errors.NONE:
            raise GroupError(Errors.GROUP_ID_NOT_FOUND if error is None else error)
        return JoinGroupResponse(error_code=Errors.NONE, member_id=joining.member_id, generation_id=joining.member_epoch,
                                 protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=joining.classic.protocols[0][0],
                                 leader="", members=[])

    # -- SyncGroup --

    def sync(self, group: ConsumerGroup, request) -> SyncGroupResponse:
        c = self.coordinator
        try:
            member = self._classic_member(group, request.member_id, request.group_instance_id, request.generation_id)
            protocol_name = member.classic.protocols[0][0]
            if request.protocol_type is not None and request.protocol_type != CONSUMER_PROTOCOL_TYPE or \
                    request.protocol_name is not None and request.protocol_name != protocol_name:
                raise GroupError(Errors.INCONSISTENT_GROUP_PROTOCOL)
            if group.assignment_epoch > member.member_epoch and member.state != UNREVOKED_PARTITIONS:
                self._schedule_join_timeout(group.group_id, member)
                raise GroupError(Errors.REBALANCE_IN_PROGRESS)
        except GroupError as exc:
            return SyncGroupResponse(error_code=exc.code)
        c.classic.timer.cancel(sync_timeout_key(group.group_id, member.member_id))
        c.schedule_session(group.group_id, member.member_id, member.classic.session_timeout_ms)
        names = c.topics().by_id
        try:
            version = subscription_version(member.classic.protocols[0][1])
        except ValueError:
            version = 0
        assignment = encode_assignment({names[t]: ps for t, ps in member.assigned.items() if t in names}, version)
        return SyncGroupResponse(error_code=Errors.NONE, protocol_type=request.protocol_type,
                                 protocol_name=request.protocol_name, assignment=assignment)

    # -- Heartbeat --

    def heartbeat(self, group: ConsumerGroup, request) -> HeartbeatResponse:
        try:
            member = self._classic_member(group, request.member_id, request.group_instance_id, request.generation_id)
        except GroupError as exc:
            return HeartbeatResponse(error_code=exc.code)
        self.coordinator.schedule_session(group.group_id, member.member_id, member.classic.session_timeout_ms)
        if member.member_epoch < group.assignment_epoch or member.state == UNREVOKED_PARTITIONS or (
                member.state == UNRELEASED_PARTITIONS and not group.waiting_on_unreleased_partition(member)):
            self._schedule_join_timeout(group.group_id, member)
            return HeartbeatResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
        return HeartbeatResponse(error_code=Errors.NONE)

    # -- helpers --

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                        generation_id: int) -> ConsumerMember:
        """validateConsumerGroupMember, then the member must use the classic protocol at this generation."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise GroupError(Errors.UNKNOWN_MEMBER_ID)
        else:
            found = group.static_members.get(instance_id)
            member = None if found is None else group.members.get(found)
            if member is None:
                raise GroupError(Errors.UNKNOWN_MEMBER_ID)
            if member.member_id != member_id:
                raise GroupError(Errors.FENCED_INSTANCE_ID)
        if not member.uses_classic:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID)
        if member.member_epoch != generation_id:
            raise GroupError(Errors.ILLEGAL_GENERATION)
        return member

    def _schedule_join_timeout(self, group_id: str, member: ConsumerMember) -> None:
        """scheduleConsumerGroupJoinTimeoutIfAbsent: told to rejoin, it must within its rebalance timeout."""
        c = self.coordinator
        key = (group_id, member.member_id)
        if key in c.join_timeouts:
            return
        c.join_timeouts.add(key)

        def due():
            c.join_timeouts.discard(key)
            c.fence_if(group_id, member.member_id, "the classic member failed to join within the rebalance timeout")
        c.classic.timer.schedule(join_timeout_key(group_id, member.member_id), member.rebalance_timeout_ms, due)

    def _cancel_join_timeout(self, group_id: str, member_id: str) -> None:
        self.coordinator.join_timeouts.discard((group_id, member_id))
        self.coordinator.classic.timer.cancel(join_timeout_key(group_id, member_id))

    def drop_empty(self, group_id: str) -> int:
        """maybeDeleteEmptyConsumerGroup: a classic JoinGroup turns an empty consumer group into a
        classic group; its tombstones are written first."""
        group = self.coordinator.groups[group_id]
        error = self.coordinator.classic.persist(group_id, tombstones(group))
        if error == Errors.NONE:
            del self.coordinator.groups[group_id]
            log.info("[GroupId %s] Converted the empty consumer group to a classic group.", group_id)
        return error

