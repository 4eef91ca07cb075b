"""KIP-345's static members of a classic group: a JoinGroup without member id but with a known
``group.instance.id`` takes that instance's place, as Kafka 4.3.1's GroupMetadataManager
(updateStaticMemberThenRebalanceOrCompleteJoin) does it.

The old member id is fenced at once (its parked JoinGroup or SyncGroup is answered
FENCED_INSTANCE_ID; its later requests get FENCED_INSTANCE_ID from ClassicGroup.validate_member).
In a Stable group whose protocol stays the same the new id is written to ``__consumer_offsets``
and answered without a rebalance; in CompletingRebalance (the leader may be assigning to the old
id) or with another protocol selected the group rebalances; in PreparingRebalance the new id
simply takes part in the rebalance under way.
"""
from __future__ import annotations

import logging

from kafkawire.messages.join_group_response import JoinGroupResponse
from kafkawire.messages.sync_group_response import SyncGroupResponse
from kafkawire.protocol.error_codes import Errors

from .group_records import group_record
from .group_state import COMPLETING_REBALANCE, STABLE, ClassicGroup, Member

__all__ = ["StaticMembership"]

log = logging.getLogger(__name__)
SKIP_ASSIGNMENT_VERSION = 9          # JoinGroup v9 (KIP-814): a static leader is told not to assign again


class StaticMembership:
    """The static-member paths of ``coordinator`` (a kafkawire.broker.group_coordinator.GroupCoordinator)."""

    def __init__(self, coordinator):
        self.coordinator = coordinator

    def rejoin(self, group: ClassicGroup, request, protocols: list, version: int, new_id: str, respond) -> None:
        """A known instance id joins with no member id: it replaces its old member id."""
        c, instance_id = self.coordinator, request.group_instance_id
        old_id = group.static_members[instance_id]
        log.info("Static member with groupInstanceId=%s and unknown member id joins group %s in %s state. "
                 "Replacing previously mapped member %s with this groupInstanceId.", instance_id,
                 group.group_id, group.state, old_id)
        leader_before = group.leader_id
        old, member = group.replace_static_member(instance_id, old_id, new_id)
        self._fence(group, old)
        c.cancel_heartbeat(group.group_id, old_id)
        c._schedule_heartbeat(group, member)
        previous = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(member, protocols, request.rebalance_timeout_ms, request.session_timeout_ms, respond)
        reason = f"static member {new_id} with instance id {instance_id} rejoined"
        if group.state == STABLE:
            if group.protocol_name == group.select_protocol():
                return self._keep_stable(group, member, old_id, previous, leader_before, version)
            return c._rebalance_or_complete_join(group, f"{reason} with a change of protocol")
        if group.state == COMPLETING_REBALANCE:
            return c.prepare_rebalance(group, reason)
        c._maybe_complete_join_phase(group)

    @staticmethod
    def _fence(group: ClassicGroup, old: Member) -> None:
        """An old instance still waiting for a JoinGroup or SyncGroup answer learns it was replaced."""
        group.complete_join(old, JoinGroupResponse(error_code=Errors.FENCED_INSTANCE_ID, member_id=old.member_id,
                                                   protocol_name=None))
        group.complete_sync(old, SyncGroupResponse(error_code=Errors.FENCED_INSTANCE_ID, assignment=b""))

    def _keep_stable(self, group: ClassicGroup, member: Member, old_id: str, previous: tuple,
                     leader_before: str | None, version: int) -> None:
        """Stable, same protocol: write the group with the new id and answer the current
        generation; a failed write puts the old id back and answers the mapped error."""
        c = self.coordinator
        log.info("Static member which joins during Stable stage and doesn't affect the selected protocol "
                 "will not trigger a rebalance.")
        error = c.persist(group.group_id, [group_record(group, {m.member_id: m.assignment
                                                                for m in group.members.values()})])
        if error != Errors.NONE:
            return self._revert(group, member, old_id, previous, leader_before, error)
        if version >= SKIP_ASSIGNMENT_VERSION:
            is_leader = group.leader_id == member.member_id
            answer = c._join_answer(group, member.member_id, with_members=is_leader)
            answer.skip_assignment = is_leader
        else:                                    # an older leader is named as before, so it does not assign
            answer = c._join_answer(group, member.member_id, with_members=False)
            answer.leader = leader_before or ""
        group.complete_join(member, answer)

    def _revert(self, group: ClassicGroup, member: Member, old_id: str, previous: tuple, leader_before: str | None,
                error: int) -> None:
        c = self.coordinator
        new_id, instance_id = member.member_id, member.group_instance_id
        log.warning("Failed to persist metadata for group %s static member %s with group instance id %s due to "
                    "%s. Reverting to old member id %s.", group.group_id, new_id, instance_id,
                    Errors.for_code(error).name, old_id)
        respond = member.join_waiter
        protocols, rebalance_timeout_ms, session_timeout_ms = previous
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, None)
        _, old = group.replace_static_member(instance_id, new_id, old_id)
        c.cancel_heartbeat(group.group_id, new_id)
        c._schedule_heartbeat(group, old)
        respond(JoinGroupResponse(error_code=error, member_id="", generation_id=group.generation_id,
                                  protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                                  leader=leader_before or ""))
