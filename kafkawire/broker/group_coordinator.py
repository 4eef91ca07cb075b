"""The classic group protocol without I/O: JoinGroup, SyncGroup, Heartbeat and LeaveGroup as
Kafka 4.3.1's GroupMetadataManager runs them for classic groups (KIP-394's MEMBER_ID_REQUIRED,
the initial rebalance delay, session and rebalance timeouts, the pending-sync expiry).

    coordinator = GroupCoordinator(settings, timer=timer, persist=write, now_ms=clock)
    coordinator.join(request, version=9, client_id="c", client_host="/127.0.0.1", respond=reply)
    coordinator.sync(request, respond=reply)
    response = coordinator.heartbeat(request)

The caller owns the clock and the timers: ``timer.schedule(key, delay_ms, callback)`` replaces the
timer of that key, ``timer.cancel(key)`` drops it, and the caller runs ``callback()`` when it is
due (kafkawire.broker.group_apis on the event loop; the tests by hand). A JoinGroup or SyncGroup
may be answered later, when the rebalance moves on: ``respond(response)`` is called exactly once
for each. ``persist(group_id, records)`` writes ``__consumer_offsets`` records (key, value) and
returns an error code (Errors.NONE when written), as Kafka's coordinator runtime appends a
write operation's records before it answers.

Offsets, ListGroups, DescribeGroups, DeleteGroups and the replay of ``__consumer_offsets`` at
load are kafkawire.broker.group_offsets', on the same ``groups``.

Static members (KIP-345, a ``group.instance.id``): one joining without member id takes the
place of its instance's member under a new id (kafkawire.broker.group_static), after which the
old id is FENCED_INSTANCE_ID; a join phase's end keeps a static member that did not rejoin (its
session timeout removes it). KIP-848 consumer groups are kafkawire.broker.consumer_coordinator's.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

from kafkawire.messages.heartbeat_response import HeartbeatResponse
from kafkawire.messages.join_group_response import JoinGroupResponse, JoinGroupResponseMember
from kafkawire.messages.leave_group_response import LeaveGroupResponse, MemberResponse
from kafkawire.messages.sync_group_response import SyncGroupResponse
from kafkawire.protocol.error_codes import Errors

from .group_records import group_record
from .group_static import StaticMembership
from .group_state import COMPLETING_REBALANCE, DEAD, EMPTY, PREPARING_REBALANCE, STABLE, ClassicGroup, Member

__all__ = ["GroupCoordinator", "GroupSettings", "UNKNOWN_MEMBER_ID"]

log = logging.getLogger(__name__)
UNKNOWN_MEMBER_ID = ""
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000      # Kafka's classicGroupNewMemberJoinTimeoutMs


@dataclass(frozen=True)
class GroupSettings:
    """The broker settings the group coordinator reads (Kafka's names and defaults)."""
    initial_rebalance_delay_ms: int = 3000       # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000           # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000      # group.max.session.timeout.ms
    max_size: int = 2**31 - 1                    # group.max.size
    offset_metadata_max_bytes: int = 4096        # offset.metadata.max.bytes


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


class GroupCoordinator:
    """Every classic group this coordinator owns, by id."""

    def __init__(self, settings: GroupSettings, *, timer, persist: Callable[[str, list], int],
                 now_ms: Callable[[], int]):
        self.settings = settings
        self.timer = timer
        self.persist = persist
        # after_write(callback): callback(error code) once the running request's writes are committed
        # or have failed (kafkawire.broker.coordinator_acks.after_write; at once, NONE, by default)
        self.after_write = lambda callback: callback(Errors.NONE)
        self.now_ms = now_ms
        self.groups: dict[str, ClassicGroup] = {}
        # KIP-848 groups of the same name space (kafkawire.broker.consumer_coordinator fills it).
        self.consumer_groups: dict = {}
        self.consumer = None
        # share groups (KIP-932) of the same name space (kafkawire.broker.share_groups fills them)
        self.share_groups: dict = {}
        self.share = None
        # KIP-1071 streams groups (kafkawire.broker.streams_coordinator fills it).
        self.streams_groups: dict = {}
        self.streams = None
        self.static = StaticMembership(self)

    # -- JoinGroup --

    def join(self, request, *, version: int, client_id: str, client_host: str, respond) -> None:
        """Answer (now or when the rebalance completes) through ``respond``."""
        if not request.group_id:
            return respond(JoinGroupResponse(error_code=Errors.INVALID_GROUP_ID, member_id=request.member_id))
        s = self.settings
        if not s.min_session_timeout_ms <= request.session_timeout_ms <= s.max_session_timeout_ms:
            return respond(JoinGroupResponse(error_code=Errors.INVALID_SESSION_TIMEOUT, member_id=request.member_id))
        protocols = [(p.name, p.metadata) for p in request.protocols]
        group = self.groups.get(request.group_id)
        unknown = request.member_id == UNKNOWN_MEMBER_ID
        if group is None:
            if not unknown:
                return respond(JoinGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID, member_id=request.member_id))
            group = self.groups[request.group_id] = ClassicGroup(request.group_id, now_ms=self.now_ms())
            new_group = True
        else:
            new_group = False
        if not self._accepts(group, request.member_id):
            group.remove(request.member_id)
            respond(JoinGroupResponse(error_code=Errors.GROUP_MAX_SIZE_REACHED, member_id=UNKNOWN_MEMBER_ID))
        elif unknown:
            self._join_new_member(group, request, protocols, version, client_id, client_host, respond)
        else:
            self._join_existing_member(group, request, protocols, client_id, client_host, respond)
        if new_group and group.is_empty() and not group.members:
            self.persist(group.group_id, [group_record(group, {})])     # the new group, as Kafka records it

    def _accepts(self, group: ClassicGroup, member_id: str) -> bool:
        """group.max.size, counted as Kafka's acceptJoiningMember counts it in each state."""
        if group.state in (EMPTY, DEAD):
            return True
        member = group.members.get(member_id)
        if group.state == PREPARING_REBALANCE:
            return (member is not None and member.awaiting_join) or group.awaiting_join_count < self.settings.max_size
        return member is not None or len(group.members) < self.settings.max_size

    def _join_new_member(self, group, request, protocols, version, client_id, client_host, respond) -> None:
        if group.state == DEAD:
            return respond(JoinGroupResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE, member_id=UNKNOWN_MEMBER_ID))
        if not group.supports_protocols(request.protocol_type, protocols):
            return respond(JoinGroupResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL,
                                             member_id=UNKNOWN_MEMBER_ID))
        member_id = group.generate_member_id(client_id, request.group_instance_id)
        if request.group_instance_id is not None and request.group_instance_id in group.static_members:
            return self.static.rejoin(group, request, protocols, version, member_id, respond)
        if version >= 4 and request.group_instance_id is None:       # KIP-394: come back with this id
            group.pending_join_members.add(member_id)
            self.timer.schedule(heartbeat_key(group.group_id, member_id), request.session_timeout_ms,
                                lambda: self._expire_heartbeat(group.group_id, member_id))
            return respond(JoinGroupResponse(error_code=Errors.MEMBER_ID_REQUIRED, member_id=member_id))
        self._add_member(group, request, protocols, member_id, client_id, client_host, respond)

    def _join_existing_member(self, group, request, protocols, client_id, client_host, respond) -> None:
        member_id = request.member_id
        if group.state == DEAD:
            return respond(JoinGroupResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE, member_id=member_id))
        if not group.supports_protocols(request.protocol_type, protocols):
            return respond(JoinGroupResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
        if member_id in group.pending_join_members:
            return self._add_member(group, request, protocols, member_id, client_id, client_host, respond)
        error = group.validate_member(member_id, request.group_instance_id)
        if error != Errors.NONE:
            return respond(JoinGroupResponse(error_code=error, member_id=member_id, protocol_name=None))
        member = group.members[member_id]
        if group.state == PREPARING_REBALANCE:
            return self._update_member_and_rebalance(group, member, request, protocols, respond)
        if group.state == COMPLETING_REBALANCE:
            if member.matches(protocols):      # it missed the answer: the same generation again
                return respond(self._join_answer(group, member_id))
            return self._update_member_and_rebalance(group, member, request, protocols, respond)
        if group.state == STABLE:
            if group.leader_id == member_id or not member.matches(protocols):
                return self._update_member_and_rebalance(group, member, request, protocols, respond)
            return respond(self._join_answer(group, member_id, with_members=False))
        respond(JoinGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID, member_id=member_id))     # Empty

    def _join_answer(self, group: ClassicGroup, member_id: str, *, with_members: bool = True) -> JoinGroupResponse:
        members = []
        if with_members and group.leader_id == member_id:
            members = [JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                               metadata=m.metadata(group.protocol_name))
                       for m in group.members.values()]
        return JoinGroupResponse(error_code=Errors.NONE, generation_id=group.generation_id,
                                 protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                                 leader=group.leader_id or "", member_id=member_id, members=members)

    def _add_member(self, group, request, protocols, member_id, client_id, client_host, respond) -> None:
        member = Member(member_id, client_id=client_id, client_host=client_host,
                        rebalance_timeout_ms=request.rebalance_timeout_ms,
                        session_timeout_ms=request.session_timeout_ms, protocol_type=request.protocol_type,
                        protocols=protocols, group_instance_id=request.group_instance_id, is_new=True)
        if group.state == PREPARING_REBALANCE and group.previous_state == EMPTY:
            group.new_member_added = True        # the initial rebalance waits a little longer
        group.add(member, respond)
        # A new member cannot heartbeat while its JoinGroup is parked: it is dropped if it never
        # comes back within Kafka's new-member join timeout.
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._rebalance_or_complete_join(group, f"Adding new member {member_id}")

    def _update_member_and_rebalance(self, group, member, request, protocols, respond) -> None:
        group.update_member(member, protocols, request.rebalance_timeout_ms, request.session_timeout_ms, respond)
        self._rebalance_or_complete_join(group, f"member {member.member_id} (re)joining in {group.state}")

    # -- the rebalance --

    def _rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if group.state == PREPARING_REBALANCE and group.previous_state != EMPTY and group.has_all_members_joined():
            self._complete_join(group)

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.state == COMPLETING_REBALANCE:
            self._reset_and_propagate(group, Errors.REBALANCE_IN_PROGRESS)
        group.pending_sync_members.clear()
        self.timer.cancel(sync_key(group.group_id))
        initial = group.state == EMPTY
        group.transition_to(PREPARING_REBALANCE, self.now_ms())
        log.info("Preparing to rebalance group %s with old generation %d (reason: %s).", group.group_id,
                 group.generation_id, reason)
        if initial:
            delay = self.settings.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial(group.group_id, delay, remaining)
        elif group.has_all_members_joined():
            self._complete_join(group)
        else:
            self._schedule_join_completion(group)

    def _schedule_initial(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        self.timer.schedule(join_key(group_id), delay_ms,
                            lambda: self._initial_rebalance_due(group_id, delay_ms, remaining_ms))

    def _initial_rebalance_due(self, group_id: str, delay_ms: int, remaining_ms: int) -> None:
        """group.initial.rebalance.delay.ms passed: wait once more if a member joined meanwhile
        (up to the rebalance timeout), else complete the join phase."""
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            self._schedule_initial(group_id, min(self.settings.initial_rebalance_delay_ms, remaining_ms),
                                   max(remaining_ms - delay_ms, 0))
        else:
            self._complete_join(group)

    def _schedule_join_completion(self, group: ClassicGroup) -> None:
        group_id = group.group_id
        self.timer.schedule(join_key(group_id), group.rebalance_timeout_ms(), lambda: self._join_due(group_id))

    def _join_due(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        """End the join phase: drop the members that did not rejoin, start the next generation
        and answer every parked JoinGroup (the leader's with the members' metadata)."""
        self.timer.cancel(join_key(group.group_id))
        if group.state != PREPARING_REBALANCE:
            return
        for member in group.not_yet_rejoined_dynamic():
            group.remove(member.member_id)
            self.timer.cancel(heartbeat_key(group.group_id, member.member_id))
        if group.state == DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            self._schedule_join_completion(group)       # nobody rejoined: wait for the sessions to end
            return
        group.init_next_generation(self.now_ms())
        if group.state == EMPTY:
            log.info("Group %s with generation %d is now empty.", group.group_id, group.generation_id)
            self.persist(group.group_id, [group_record(group, {})])
            return
        log.info("Stabilized group %s generation %d with %d members.", group.group_id, group.generation_id,
                 len(group.members))
        for member in list(group.members.values()):
            group.complete_join(member, self._join_answer(group, member.member_id))
            self._schedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        self.timer.schedule(sync_key(group.group_id), group.rebalance_timeout_ms(),
                            lambda: self._sync_due(group.group_id, generation))

    def _sync_due(self, group_id: str, generation: int) -> None:
        """The rebalance timeout passed after the join phase: the members that never sent their
        SyncGroup are removed and the group rebalances again."""
        group = self.groups.get(group_id)
        if group is None or group.generation_id != generation or group.state not in (COMPLETING_REBALANCE, STABLE):
            return
        if group.pending_sync_members:
            late = sorted(group.pending_sync_members)
            for member_id in late:
                group.remove(member_id)
                self.timer.cancel(heartbeat_key(group_id, member_id))
            self.prepare_rebalance(group, f"Removing {late} on pending sync request expiration")

    def _reset_and_propagate(self, group: ClassicGroup, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate(group, error)

    def _propagate(self, group: ClassicGroup, error: int) -> None:
        ok = error == Errors.NONE
        for member in group.members.values():
            answer = SyncGroupResponse(error_code=error, protocol_type=group.protocol_type if ok else None,
                                       protocol_name=group.protocol_name if ok else None, assignment=member.assignment)
            if group.complete_sync(member, answer):
                self._schedule_heartbeat(group, member)

    # -- heartbeats and their expiry --

    def _schedule_heartbeat(self, group: ClassicGroup, member: Member, timeout_ms: int | None = None) -> None:
        group_id, member_id = group.group_id, member.member_id
        self.timer.schedule(heartbeat_key(group_id, member_id),
                            member.session_timeout_ms if timeout_ms is None else timeout_ms,
                            lambda: self._expire_heartbeat(group_id, member_id))

    def reschedule_heartbeat(self, group: ClassicGroup, member: Member) -> None:
        self._schedule_heartbeat(group, member)

    def cancel_heartbeat(self, group_id: str, member_id: str) -> None:
        self.timer.cancel(heartbeat_key(group_id, member_id))

    def _expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            return
        if member_id in group.pending_join_members:
            log.info("Pending member %s in group %s has been removed after session timeout expiration.",
                     member_id, group_id)
            group.remove(member_id)
            if group.state == PREPARING_REBALANCE and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is not None and not member.has_satisfied_heartbeat():
            log.info("Member %s in group %s has failed, removing it from the group.", member_id, group_id)
            self.remove_member(group, member, "removing member on heartbeat expiration")

    def remove_member(self, group: ClassicGroup, member: Member, reason: str) -> None:
        group.complete_join(member, JoinGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID,
                                                      member_id=UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        self.timer.cancel(heartbeat_key(group.group_id, member.member_id))
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._rebalance_or_complete_join(group, reason)
        elif group.state == PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join(group)

    # -- SyncGroup --

    def sync(self, request, *, respond) -> None:
        if not request.group_id:
            return respond(SyncGroupResponse(error_code=Errors.INVALID_GROUP_ID))
        group = self.groups.get(request.group_id)
        if group is None or group.is_empty():
            return respond(SyncGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID))
        error = self._sync_error(group, request)
        if error != Errors.NONE:
            return respond(SyncGroupResponse(error_code=error))
        if group.state == PREPARING_REBALANCE:
            return respond(SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS))
        member = group.members[request.member_id]
        if group.state == STABLE:
            self._synced(group, member.member_id)
            return respond(SyncGroupResponse(error_code=Errors.NONE, protocol_type=group.protocol_type,
                                             protocol_name=group.protocol_name, assignment=member.assignment))
        member.sync_waiter = respond                 # CompletingRebalance: wait for the leader's assignment
        self._synced(group, member.member_id)
        if group.leader_id == member.member_id:
            self._leader_assigned(group, request)

    def _sync_error(self, group: ClassicGroup, request) -> int:
        if group.state == DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        error = group.validate_member(request.member_id, request.group_instance_id)
        if error != Errors.NONE:
            return error
        if request.generation_id != group.generation_id:
            return Errors.ILLEGAL_GENERATION
        if (request.protocol_type is not None and request.protocol_type != group.protocol_type) or \
                (request.protocol_name is not None and request.protocol_name != group.protocol_name):
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        return Errors.NONE

    def _synced(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.state in (DEAD, EMPTY, PREPARING_REBALANCE) or not group.pending_sync_members:
            self.timer.cancel(sync_key(group.group_id))

    def _leader_assigned(self, group: ClassicGroup, request) -> None:
        """The leader's assignment: written to ``__consumer_offsets``; once the record is committed
        every member gets its part and the group is Stable (_assignment_written)."""
        assignment = {a.member_id: a.assignment for a in request.assignments}
        for member_id in group.members:
            assignment.setdefault(member_id, b"")
        error = self.persist(group.group_id, [group_record(group, assignment)])
        if group.state != COMPLETING_REBALANCE or request.generation_id != group.generation_id:
            return
        if error != Errors.NONE:
            self._assignment_written(group.group_id, group.generation_id, assignment, error)
            return
        generation = group.generation_id
        self.after_write(lambda code: self._assignment_written(group.group_id, generation, assignment, code))

    def _assignment_written(self, group_id: str, generation: int, assignment: dict, error: int) -> None:
        """Kafka's appendFuture of the assignment record, if the group is still CompletingRebalance
        in that generation: committed, every member gets its part (the parked SyncGroup answers)
        and the group is Stable; refused or not committed (a timeout, the partition led elsewhere),
        the members get the error and the group rebalances."""
        group = self.groups.get(group_id)
        if group is None or group.state != COMPLETING_REBALANCE or group.generation_id != generation:
            return
        if error != Errors.NONE:
            self._reset_and_propagate(group, error)
            self._rebalance_or_complete_join(group, f"Error {Errors.for_code(error).name} when storing group "
                                                    "assignment during SyncGroup")
            return
        for member_id, member in group.members.items():
            member.assignment = assignment.get(member_id, b"")
        self._propagate(group, Errors.NONE)
        group.transition_to(STABLE, self.now_ms())

    # -- Heartbeat --

    def heartbeat(self, request) -> HeartbeatResponse:
        if not request.group_id:
            return HeartbeatResponse(error_code=Errors.INVALID_GROUP_ID)
        group = self.groups.get(request.group_id)
        if group is None:
            return HeartbeatResponse(error_code=Errors.UNKNOWN_MEMBER_ID)
        if group.state == DEAD:
            return HeartbeatResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE)
        error = group.validate_member(request.member_id, request.group_instance_id)
        if error != Errors.NONE:
            return HeartbeatResponse(error_code=error)
        member = group.members[request.member_id]
        if request.generation_id != group.generation_id:
            return HeartbeatResponse(error_code=Errors.ILLEGAL_GENERATION)
        if group.state == EMPTY:
            return HeartbeatResponse(error_code=Errors.UNKNOWN_MEMBER_ID)
        self._schedule_heartbeat(group, member)
        if group.state == PREPARING_REBALANCE:
            return HeartbeatResponse(error_code=Errors.REBALANCE_IN_PROGRESS)
        return HeartbeatResponse(error_code=Errors.NONE)

    # -- LeaveGroup --

    def leave(self, request, *, version: int) -> LeaveGroupResponse:
        """v0-2 name one member (``member_id``); v3+ a batch (``members``), answered member by member."""
        if not request.group_id:
            return LeaveGroupResponse(error_code=Errors.INVALID_GROUP_ID, members=[])
        identities = [(m.member_id, m.group_instance_id) for m in request.members] if version >= 3 else \
            [(request.member_id, None)]
        group = self.groups.get(request.group_id)
        if group is None:
            return LeaveGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID, members=[])
        if group.state == DEAD:
            return LeaveGroupResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE, members=[])
        results = [(member_id, instance_id, self._leave_one(group, member_id, instance_id))
                   for member_id, instance_id in identities]
        if any(code == Errors.NONE for _, _, code in results):
            if group.state in (STABLE, COMPLETING_REBALANCE):
                self._rebalance_or_complete_join(group, "explicit `LeaveGroup` request")
            elif group.state == PREPARING_REBALANCE:
                self._maybe_complete_join_phase(group)
        if version < 3:
            return LeaveGroupResponse(error_code=results[0][2], members=[])
        return LeaveGroupResponse(error_code=Errors.NONE, members=[
            MemberResponse(member_id=member_id, group_instance_id=instance_id, error_code=code)
            for member_id, instance_id, code in results])

    def _leave_one(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> int:
        if member_id == UNKNOWN_MEMBER_ID:            # an admin removing a member by its instance id
            member_id = group.static_members.get(instance_id) if instance_id is not None else None
            if member_id is None:
                return Errors.UNKNOWN_MEMBER_ID
        elif member_id in group.pending_join_members:
            group.remove(member_id)
            self.timer.cancel(heartbeat_key(group.group_id, member_id))
            return Errors.NONE
        else:
            error = group.validate_member(member_id, instance_id)
            if error != Errors.NONE:
                return error
        member = group.members[member_id]
        log.info("Member %s has left group %s through explicit `LeaveGroup` request.", member_id, group.group_id)
        group.complete_join(member, JoinGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID,
                                                      member_id=UNKNOWN_MEMBER_ID))
        group.remove(member_id)
        self.timer.cancel(heartbeat_key(group.group_id, member_id))
        return Errors.NONE

    # -- unloading --

    def unload(self, here) -> None:
        """GroupMetadataManager.onUnloaded for the classic groups ``here(group id)`` names (their
        partition no longer led here, or about to be loaded again): a parked JoinGroup or SyncGroup
        is answered NOT_COORDINATOR, the groups' timers stop and the groups are dropped; a load
        rebuilds them from the log."""
        for group in [g for g in self.groups.values() if here(g.group_id)]:
            log.info("Unloading group metadata for %s with generation %d.", group.group_id, group.generation_id)
            for member in list(group.members.values()):
                group.complete_join(member, JoinGroupResponse(error_code=Errors.NOT_COORDINATOR,
                                                              member_id=member.member_id))
                group.complete_sync(member, SyncGroupResponse(error_code=Errors.NOT_COORDINATOR))
                self.timer.cancel(heartbeat_key(group.group_id, member.member_id))
            for member_id in group.pending_join_members:
                self.timer.cancel(heartbeat_key(group.group_id, member_id))
            self.timer.cancel(join_key(group.group_id))
            self.timer.cancel(sync_key(group.group_id))
            group.transition_to(DEAD, self.now_ms())
            del self.groups[group.group_id]
