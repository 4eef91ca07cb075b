"""StreamsGroupHeartbeat without I/O: KIP-1071 streams groups as Kafka 4.3.1's GroupMetadataManager
runs them (streamsGroupHeartbeat, streamsGroupLeave, the session timeout).

    coordinator = StreamsCoordinator(classic, topics=lambda: view)
    response, to_create = coordinator.heartbeat(request, client_id="c", client_host="/127.0.0.1")

A heartbeat (1) creates or updates the member, bumping the group epoch when it changed; (2) stores
the topology the first member joins with (StreamsGroupTopology); (3) configures it against the
image (kafkawire.broker.streams_topology), bumping the epoch when the topics' metadata hash or the
validated topology epoch changed, and returns the internal topics to create; (4) computes a new
target assignment of the active tasks when the group epoch is ahead of the assignment epoch;
(5) moves the member towards its target: tasks it must give up first (UNREVOKED_TASKS), then the
new ones as their owners release them (UNRELEASED_TASKS). Every change is a record of
kafkawire.broker.streams_group written through the classic coordinator's ``persist`` and replayed.

The timings and the standby count are the broker's ``group.streams.*`` settings, each overridden
by the group's own ``streams.*`` GROUP config clamped to the broker's bounds (StreamsSettings.of,
kafkawire.metadata.group_configs.effective_streams_configs; the dynamic
``group.streams.assignment.interval.ms`` is StreamsApis'); ``group.streams.max.size`` bounds the
members of every group (``max_size``). No warm-up task
is ever assigned, as in Kafka 4.3.1 (its StickyTaskAssignor makes none; reported ones are refused).

Differences from Kafka 4.3.1 (documented in docs/broker.md, "Streams groups"): the assignor
balances active tasks over members keeping each on its previous owner and puts each standby on
another process (not Kafka's process- and rack-aware StickyTaskAssignor).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from kafkawire.messages.streams_group_heartbeat_response import (Endpoint, EndpointToPartitions, Status,
                                                                  StreamsGroupHeartbeatResponse, TaskIds, TopicPartition)
from kafkawire.metadata.group_configs import GroupBounds, effective_streams_configs
from kafkawire.protocol.error_codes import Errors

from . import streams_group as sg
from .consumer_coordinator import GroupError, metadata_hash
from .group_records import group_tombstone
from .java_collections import java_hash_map_order, timeline_hash_map_order
from .streams_assignor import assign
from .streams_topology import (STALE_TOPOLOGY, Configured, CopartitionIndexOutOfRange, InvalidTopology, configure,
                               topology_value)

__all__ = ["StreamsCoordinator", "StreamsSettings", "validate"]

log = logging.getLogger(__name__)

ASSIGNMENT_DELAYED = 5                                          # the heartbeat status


@dataclass(frozen=True)
class StreamsSettings:
    """A streams group's timings and standby count: its GROUP configs (``streams.*``) clamped to the
    broker's bounds, else the broker's ``group.streams.*`` settings (GroupMetadataManager's
    streamsGroup*Ms(groupId) over GroupConfig.evaluate)."""
    session_timeout_ms: int = 45_000              # streams.session.timeout.ms
    heartbeat_interval_ms: int = 5_000            # streams.heartbeat.interval.ms
    initial_rebalance_delay_ms: int = 3_000       # streams.initial.rebalance.delay.ms
    assignment_interval_ms: int = 1_000           # streams.assignment.interval.ms
    num_standby_replicas: int = 0                 # streams.num.standby.replicas

    @classmethod
    def of(cls, group_id: str, configs: dict | None, bounds: GroupBounds = GroupBounds()) -> "StreamsSettings":
        """From a group's configs as the image holds them (validated by the controller) and this
        broker's settings."""
        values = effective_streams_configs(group_id, configs, bounds)
        return cls(session_timeout_ms=values["streams.session.timeout.ms"],
                   heartbeat_interval_ms=values["streams.heartbeat.interval.ms"],
                   initial_rebalance_delay_ms=values["streams.initial.rebalance.delay.ms"],
                   assignment_interval_ms=values["streams.assignment.interval.ms"],
                   num_standby_replicas=values["streams.num.standby.replicas"])


LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
SHUTDOWN_APPLICATION = 4                                        # the heartbeat status


def validate(request) -> None:
    """GroupCoordinatorService's checks of a streams heartbeat (unsupported features, then the
    request's shape), with Kafka's messages. Raises GroupError."""
    def refuse(message, code=Errors.INVALID_REQUEST):
        raise GroupError(code, message)
    if request.instance_id is not None:
        refuse("Static membership is not yet supported.")
    if request.task_offsets is not None:
        refuse("TaskOffsets are not supported yet.")
    if request.task_end_offsets is not None:
        refuse("TaskEndOffsets are not supported yet.")
    if request.warmup_tasks:
        refuse("WarmupTasks are not supported yet.")
    if request.topology is not None and any(s.source_topic_regex for s in request.topology.subtopologies):
        refuse("Regular expressions for source topics are not supported yet.")
    for value, what in ((request.member_id, "MemberId"), (request.group_id, "GroupId"),
                        (request.rack_id, "RackId")):
        if value is not None and not value.strip():
            refuse(f"{what} can't be empty.")
    epoch = request.member_epoch
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            refuse("RebalanceTimeoutMs must be provided in first request.")
        for tasks, name in ((request.active_tasks, "ActiveTasks"), (request.standby_tasks, "StandbyTasks"),
                            (request.warmup_tasks, "WarmupTasks")):
            if tasks:
                refuse(f"{name} must be empty when (re-)joining.")
        if request.topology is None:
            refuse("Topology must be non-null when (re-)joining.")
        for s in request.topology.subtopologies:
            for t in s.state_changelog_topics:
                if t.partitions != 0:
                    refuse(f"Changelog topic {t.name} must have an undefined partition count, but it is set to "
                           f"{t.partitions}.", Errors.STREAMS_INVALID_TOPOLOGY)
    elif epoch == STATIC_LEAVE_EPOCH:
        refuse("InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        refuse(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
    kinds = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    if any(k is not None for k in kinds) and any(k is None for k in kinds):
        refuse("If one task-type is non-null, all must be non-null.")
    if epoch != 0 and request.topology is not None:
        refuse("Topology can only be provided when (re-)joining.")


def _assignor_order(group: sg.StreamsGroup, members_before: tuple | None) -> list:
    """The order Kafka's TargetAssignmentBuilder puts the members into its member spec map, which
    decides the assignor's ties: the group's members map (a TimelineHashMap) as it was before this
    heartbeat's records, then the member that joins with them."""
    ids, capacity = members_before if members_before is not None else (list(group.members), group.members_capacity)
    known = [m for m in timeline_hash_map_order(ids, capacity) if m in group.members]
    seen = set(known)
    return known + [m for m in group.members if m not in seen]


def _owned(task_ids) -> dict | None:
    return None if task_ids is None else {t.subtopology_id: frozenset(t.partitions) for t in task_ids}


def _is_subset(owned: dict | None, assigned: dict) -> bool:
    return owned is None or all(p <= set(assigned.get(s, ())) for s, p in owned.items())


def _updated(member: sg.StreamsMember, request, client_id: str, client_host: str) -> sg.StreamsMember:
    """The member with what the heartbeat sets (StreamsGroupMember.Builder's maybeUpdate*: a
    field left out keeps its value)."""
    endpoint = request.user_endpoint
    return member.copy(
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
        else member.rebalance_timeout_ms,
        topology_epoch=request.topology.epoch if request.topology is not None else member.topology_epoch,
        client_id=client_id, client_host=client_host,
        process_id=request.process_id if request.process_id is not None else member.process_id,
        client_tags=tuple(sorted((kv.key, kv.value) for kv in request.client_tags))
        if request.client_tags is not None else member.client_tags,
        user_endpoint=(endpoint.host, endpoint.port) if endpoint is not None else member.user_endpoint)


def _holds_any(owned: dict | None, *task_sets) -> bool:
    """Whether the member still owns any of ``task_sets``' tasks (it did not say: it does)."""
    return owned is None or any(owned.get(s, frozenset()).intersection(p) for tasks in task_sets
                                for s, p in tasks.items())


def _response_tasks(active: dict) -> list:
    return [TaskIds(subtopology_id=s, partitions=sorted(p)) for s, p in sorted(active.items()) if p]


def shutdown_status(member_id: str) -> Status:
    return Status(status_code=SHUTDOWN_APPLICATION, status_detail=(
        f"Streams group member {member_id} encountered a fatal error and requested a shutdown for the entire "
        "application."))


def endpoints_to_partitions(group: sg.StreamsGroup, updated: sg.StreamsMember, view) -> list:
    """StreamsGroup.buildEndpointToPartitions: for interactive queries, each member with a user
    endpoint and the partitions of the source topics of its active tasks (the updated member last)."""
    if group.topology is None:
        return []
    sources = {s.subtopology_id: [*s.source_topics, *(r.name for r in s.repartition_source_topics)]
               for s in group.topology.subtopologies}
    found = []
    for member in [*(m for m in group.members.values() if m.member_id != updated.member_id), updated]:
        if member.user_endpoint is None:
            continue
        def partitions_of(tasks):
            found_partitions = []
            for subtopology, partitions in sorted(tasks.items()):
                for topic in sources.get(subtopology, ()):
                    count = view.by_name[topic][1] if topic in view.by_name else 0
                    found_partitions.append(TopicPartition(topic=topic, partitions=sorted(partitions)[:count]))
            return found_partitions
        found.append(EndpointToPartitions(user_endpoint=Endpoint(host=member.user_endpoint[0],
                                                                 port=member.user_endpoint[1]),
                                          active_partitions=partitions_of(member.active_tasks()),
                                          standby_partitions=partitions_of(member.standby)))
    return found


def session_key(group_id: str, member_id: str) -> str:
    return f"streams-session-{group_id}-{member_id}"


def initial_key(group_id: str) -> str:
    return f"streams-initial-rebalance-{group_id}"


def rebalance_key(group_id: str, member_id: str) -> str:
    return f"streams-rebalance-{group_id}-{member_id}"


class StreamsCoordinator:
    """The streams groups of ``classic`` (a kafkawire.broker.group_coordinator.GroupCoordinator,
    whose timer, clock and persist it shares); ``topics()`` gives a
    kafkawire.broker.topics_view.TopicsView of the image."""

    def __init__(self, classic, *, topics, settings=lambda group_id: StreamsSettings(), max_size: int = 2**31 - 1):
        """``settings(group_id)``: the group's StreamsSettings; ``max_size``: group.streams.max.size."""
        self.classic = classic
        self.topics = topics
        self.settings = settings
        self.max_size = max_size
        self.groups: dict[str, sg.StreamsGroup] = {}
        self.delayed: set = set()           # groups whose initial rebalance delay runs
        classic.streams_groups = self.groups
        classic.streams = self

    def write(self, group_id: str, records: list) -> int:
        if not records:
            return Errors.NONE
        error = self.classic.persist(group_id, [sg.encode(r) for r in records])
        if error != Errors.NONE:
            return error
        for record in records:
            sg.apply(self.groups, record)
        return Errors.NONE

    def heartbeat(self, request, *, client_id: str, client_host: str):
        """(StreamsGroupHeartbeatResponse, {topic name: CreatableTopic} to create)."""
        try:
            validate(request)
            if request.member_epoch == LEAVE_EPOCH:
                return self._leave(request), {}
            return self._heartbeat(request, client_id, client_host)
        except GroupError as exc:
            return StreamsGroupHeartbeatResponse(error_code=exc.code, error_message=exc.message), {}

    def _group(self, group_id: str, joining: bool) -> sg.StreamsGroup:
        group = self.groups.get(group_id)
        other = group_id in self.classic.groups or group_id in getattr(self.classic, "consumer_groups", {}) or \
            group_id in getattr(self.classic, "share_groups", {})
        if other and not (joining and group_id in self.classic.groups and self.classic.groups[group_id].is_empty()):
            raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        if group is None:
            if not joining:
                raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Streams group {group_id} not found.")
            group = sg.StreamsGroup(group_id)
        return group

    def _member(self, group: sg.StreamsGroup, request) -> sg.StreamsMember:
        member_id, epoch = request.member_id, request.member_epoch
        member = group.members.get(member_id)
        if epoch == 0:
            # throwIfStreamsGroupIsFull: Kafka checks every joining heartbeat, a known member's too
            if len(group.members) >= self.max_size:
                raise GroupError(Errors.GROUP_MAX_SIZE_REACHED, "The streams group has reached its maximum "
                                                                f"capacity of {self.max_size} members.")
            return member or sg.StreamsMember(member_id)
        if member is None:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group.group_id}.")
        fenced = ("The streams group member has a {} member epoch ({}) than the one known by the group coordinator "
                  "({}). The member must abandon all its partitions and rejoin.")
        if epoch > member.member_epoch:
            raise GroupError(Errors.FENCED_MEMBER_EPOCH, fenced.format("greater", epoch, member.member_epoch))
        if epoch < member.member_epoch and (epoch != member.previous_member_epoch or
                                            not _is_subset(_owned(request.active_tasks), member.active)):
            raise GroupError(Errors.FENCED_MEMBER_EPOCH, fenced.format("smaller", epoch, member.member_epoch))
        return member

    def _heartbeat(self, request, client_id: str, client_host: str):
        group_id, now = request.group_id, self.classic.now_ms()
        joining = request.member_epoch == 0
        is_new = group_id not in self.groups
        group = self._group(group_id, joining)
        was_empty, settings = not group.members, self.settings(group_id)
        member = self._member(group, request)
        records, statuses = [], []
        if group_id in self.classic.groups:                  # an empty classic group gives way
            records.append(("classic-tombstone", group_id))
        updated = _updated(member, request, client_id, client_host)
        bump = updated != member or member.member_id not in group.members
        if bump:
            records.append(sg.member_record(group_id, updated))
        topology = group.topology
        if topology is None and request.topology is not None:
            topology = topology_value(request.topology)
            records.append(sg.topology_record(group_id, topology))
        if topology is not None and updated.topology_epoch < topology.epoch:
            statuses.append(Status(status_code=STALE_TOPOLOGY, status_detail=(
                f"The member's topology epoch {updated.topology_epoch} is behind the group's topology epoch "
                f"{topology.epoch}.")))
        configured, hashed = self._configured(group, topology)
        validated = topology.epoch if configured.ready else -1
        if hashed != group.metadata_hash or validated != group.validated_topology_epoch:
            bump = True
        if settings.num_standby_replicas != group.standby_replicas:   # the assignment configs changed
            bump = True
        group_epoch = group.epoch + 1 if bump else group.epoch
        if bump:
            records.append(sg.group_metadata_record(group_id, group_epoch, hashed, validated,
                                                    settings.num_standby_replicas))
        members_before = (list(group.members), group.members_capacity)    # the assignor's member order
        error = self._write(group_id, records)
        if error != Errors.NONE:
            raise GroupError(error)
        group = self.groups[group_id]
        group.configured, group.configured_for = configured, (None if topology is None else topology.epoch, hashed)
        if was_empty and settings.initial_rebalance_delay_ms > 0 and group_id not in self.delayed:
            self.delayed.add(group_id)
            self.classic.timer.schedule(initial_key(group_id), settings.initial_rebalance_delay_ms,
                                        lambda: self._delayed_assignment(group_id))
        self._maybe_assign(group, settings, now, statuses, members_before)
        before = group.members[updated.member_id]
        owned = _owned(request.active_tasks)
        if owned is not None:
            for s, partitions in (_owned(request.standby_tasks) or {}).items():
                owned[s] = owned.get(s, frozenset()) | partitions
        after = self._reconcile(group, before, owned)
        self.classic.timer.schedule(session_key(group_id, after.member_id), settings.session_timeout_ms,
                                    lambda: self.fence_if(group_id, after.member_id, "the member session expired."))
        if configured.status is not None:
            statuses.append(Status(status_code=configured.status[0], status_detail=configured.status[1]))
        if request.shutdown_application:
            group.shutdown_requested_by = after.member_id
        if group.shutdown_requested_by is not None:
            statuses.append(shutdown_status(group.shutdown_requested_by))
        response = StreamsGroupHeartbeatResponse(
            member_id=after.member_id, member_epoch=after.member_epoch,
            heartbeat_interval_ms=settings.heartbeat_interval_ms,
            status=statuses)
        if joining or before.active_tasks() != after.active_tasks() or before.standby != after.standby:
            response.active_tasks = _response_tasks(after.active_tasks())
            response.standby_tasks, response.warmup_tasks = _response_tasks(after.standby), []
            if after.user_endpoint is not None:
                group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != request.endpoint_information_epoch:
            response.partitions_by_user_endpoint = endpoints_to_partitions(group, after, self.topics())
        # a group created by this heartbeat answers 0, as Kafka's (its epoch is not yet the group's)
        response.endpoint_information_epoch = 0 if is_new else group.endpoint_information_epoch
        return response, configured.to_create

    def _write(self, group_id: str, records: list) -> int:
        if records and records[0][0] == "classic-tombstone":
            key, value = group_tombstone(group_id)
            error = self.classic.persist(group_id, [(key, value)])
            if error != Errors.NONE:
                return error
            self.classic.groups.pop(group_id, None)
            records = records[1:]
        return self.write(group_id, records)

    def _configured(self, group: sg.StreamsGroup, topology):
        """(Configured, metadata hash): configured again when the topology or its topics changed."""
        view = self.topics()
        if topology is None:
            return Configured(), group.metadata_hash
        required = {t for s in topology.subtopologies for t in s.source_topics} | \
            {t.name for s in topology.subtopologies for t in s.repartition_source_topics} | \
            {t.name for s in topology.subtopologies for t in s.state_changelog_topics}
        hashed = metadata_hash(required, view)
        if group.configured is not None and group.configured_for == (topology.epoch, hashed):
            return group.configured, hashed
        try:
            configured = configure(topology, lambda name: view.by_name[name][1] if name in view.by_name else None)
        except InvalidTopology as exc:
            raise GroupError(Errors.STREAMS_INVALID_TOPOLOGY, str(exc)) from None
        except CopartitionIndexOutOfRange as exc:      # Kafka's handleOperationException: logged, no message
            log.error("Operation streams-group-heartbeat of group %s hit an unexpected exception: %s", group.group_id, exc)
            raise GroupError(Errors.UNKNOWN_SERVER_ERROR) from None
        return configured, hashed

    # -- the target assignment --

    def _maybe_assign(self, group: sg.StreamsGroup, settings: StreamsSettings, now: int, statuses: list,
                      members_before: tuple) -> None:
        """maybeUpdateStreamsTargetAssignment: none during the initial rebalance delay, nor sooner
        than the assignment interval after the last one (ASSIGNMENT_DELAYED either way)."""
        if group.group_id in self.delayed:
            statuses.append(Status(status_code=ASSIGNMENT_DELAYED, status_detail=(
                "Assignment delayed due to the configured initial rebalance delay.")))
            return
        if group.assignment_epoch >= group.epoch:
            return
        interval = settings.assignment_interval_ms
        if group.assignment_timestamp and interval and now < group.assignment_timestamp + interval:
            statuses.append(Status(status_code=ASSIGNMENT_DELAYED, status_detail=(
                "Assignment delayed due to the configured assignment interval.")))
            return
        self._assign(group, now, members_before)

    def _delayed_assignment(self, group_id: str) -> None:
        """computeDelayedTargetAssignment: the first target of a new group, once its delay is over."""
        self.delayed.discard(group_id)
        group = self.groups.get(group_id)
        if group is None or not group.members or group.configured is None or group.assignment_epoch >= group.epoch:
            return
        try:
            self._assign(group, self.classic.now_ms())
        except GroupError as exc:
            log.warning("[GroupId %s] The delayed target assignment failed: %s", group_id, exc.code)

    def _assign(self, group: sg.StreamsGroup, now: int, members_before: tuple | None = None) -> None:
        """A new target assignment (kafkawire.broker.streams_assignor) at the group's epoch; none
        while the topology is not ready, as Kafka's TargetAssignmentBuilder. ``members_before``:
        (member ids, table capacity) of the group before the heartbeat's records, if any."""
        members = _assignor_order(group, members_before)
        ready = group.configured.ready
        counts = group.configured.tasks if ready else {}      # not ready: nothing to assign
        targets, standby = assign(group, members, counts, group.configured.stateful if ready else frozenset())
        records = []
        for m in java_hash_map_order(members):          # the builder's member spec map's order
            active = targets[m]
            if group.targets.get(m) != active or group.standby_targets.get(m, {}) != standby[m]:
                records.append(sg.target_member_record(group.group_id, m, active, standby[m]))
        records.append(sg.target_metadata_record(group.group_id, group.epoch, now))
        error = self.write(group.group_id, records)
        if error != Errors.NONE:
            raise GroupError(error)

    # -- reconciliation (CurrentAssignmentBuilder, active tasks) --

    def _reconcile(self, group: sg.StreamsGroup, member: sg.StreamsMember, owned: dict | None) -> sg.StreamsMember:
        """CurrentAssignmentBuilder: ``owned`` is the request's owned active and standby tasks
        together ({subtopology: frozenset}), None when the request left them out."""
        target_epoch = group.assignment_epoch
        if member.member_epoch == target_epoch and member.state == sg.MEMBER_STABLE:     # isReconciledTo
            return member
        if member.state == sg.UNREVOKED_TASKS and _holds_any(owned, member.revoking_active, member.revoking_standby):
            return member
        target = group.targets.get(member.member_id, {})        # none yet: no tasks (TasksTuple.EMPTY)
        standby_target = group.standby_targets.get(member.member_id, {})
        keep = {s: {p: e for p, e in parts.items() if p in target.get(s, ())} for s, parts in member.active.items()}
        revoke = {s: {p: e for p, e in parts.items() if p not in target.get(s, ())} for s, parts in member.active.items()}
        revoke = {s: p for s, p in revoke.items() if p}
        standby_keep = {s: parts & standby_target.get(s, frozenset()) for s, parts in member.standby.items()}
        standby_revoke = {s: parts - standby_target.get(s, frozenset()) for s, parts in member.standby.items()}
        standby_revoke = {s: p for s, p in standby_revoke.items() if p}
        if (revoke or standby_revoke) and _holds_any(owned, revoke, standby_revoke):
            # the epoch advances only once the member has released these tasks
            updated = member.copy(state=sg.UNREVOKED_TASKS, active={s: p for s, p in keep.items() if p},
                                  standby={s: p for s, p in standby_keep.items() if p}, revoking_active=revoke,
                                  revoking_standby=standby_revoke, previous_member_epoch=member.member_epoch)
        else:
            active, pending = {s: dict(p) for s, p in keep.items()}, False
            for s, parts in target.items():
                for p in parts:
                    if p in active.get(s, {}):
                        continue
                    owner = group.owner_of(s, p)
                    if (owner is None or owner == member.member_id) and not self._standby_in_process(group, member, s, p):
                        active.setdefault(s, {})[p] = target_epoch
                    else:
                        pending = True
            standby = {s: set(p) for s, p in standby_keep.items()}
            for s, parts in standby_target.items():
                for p in parts - standby.get(s, set()):
                    if self._active_in_process(group, member, s, p) or self._standby_in_process(group, member, s, p):
                        pending = True
                    else:
                        standby.setdefault(s, set()).add(p)
            updated = member.copy(member_epoch=target_epoch, previous_member_epoch=member.member_epoch,
                                  state=sg.UNRELEASED_TASKS if pending else sg.MEMBER_STABLE,
                                  active={s: p for s, p in active.items() if p},
                                  standby={s: frozenset(p) for s, p in standby.items() if p},
                                  revoking_active={}, revoking_standby={})
        if updated != member:
            error = self.write(group.group_id, [sg.current_assignment_record(group.group_id, updated)])
            if error != Errors.NONE:
                raise GroupError(error)
            self._schedule_rebalance_timeout(group.group_id, updated)
        return group.members[member.member_id]

    @staticmethod
    def _active_in_process(group: sg.StreamsGroup, member: sg.StreamsMember, s: str, p: int) -> bool:
        """Whether a member of ``member``'s process (itself included) holds the task as active."""
        owner = group.owner_of(s, p)
        return owner is not None and group.members[owner].process_id == member.process_id

    @staticmethod
    def _standby_in_process(group: sg.StreamsGroup, member: sg.StreamsMember, s: str, p: int) -> bool:
        """Whether a member of ``member``'s process holds the task as a standby (not yet released)."""
        return any(group.members[m].process_id == member.process_id
                   for m in group.standby_holders.get((s, p), ()) if m != member.member_id or
                   p not in group.standby_targets.get(m, {}).get(s, frozenset()))

    def _schedule_rebalance_timeout(self, group_id: str, member: sg.StreamsMember) -> None:
        """A member revoking tasks must move past its epoch within its rebalance timeout, else it
        is fenced (scheduleStreamsGroupRebalanceTimeout); any other state cancels the timer."""
        key = rebalance_key(group_id, member.member_id)
        if member.state != sg.UNREVOKED_TASKS:
            self.classic.timer.cancel(key)
            return
        epoch, timeout_ms = member.member_epoch, member.rebalance_timeout_ms

        def due():
            group = self.groups.get(group_id)
            current = None if group is None else group.members.get(member.member_id)
            if current is not None and current.member_epoch == epoch:
                log.info("[GroupId %s] Member %s fenced from the group because it failed to transition from epoch "
                         "%d within %dms.", group_id, member.member_id, epoch, timeout_ms)
                self.fence(group, member.member_id)
        self.classic.timer.schedule(key, timeout_ms, due)

    # -- leaving and fencing --

    def _leave(self, request) -> StreamsGroupHeartbeatResponse:
        group = self.groups.get(request.group_id)
        if group is None:
            raise GroupError(Errors.GROUP_ID_NOT_FOUND, f"Streams group {request.group_id} not found.")
        if request.member_id not in group.members:
            raise GroupError(Errors.UNKNOWN_MEMBER_ID,
                             f"Member {request.member_id} is not a member of group {request.group_id}.")
        log.info("[GroupId %s][MemberId %s] Member left the streams group.", request.group_id, request.member_id)
        if request.shutdown_application:
            group.shutdown_requested_by = request.member_id
        error = self.fence(group, request.member_id)
        if error != Errors.NONE:
            raise GroupError(error)
        return StreamsGroupHeartbeatResponse(member_id=request.member_id, member_epoch=request.member_epoch,
                                             status=[])

    def fence(self, group: sg.StreamsGroup, member_id: str) -> int:
        """streamsGroupFenceMember: the member's tombstones and a bumped group epoch."""
        records = sg.member_removal(group.group_id, member_id)
        records.append(sg.group_metadata_record(group.group_id, group.epoch + 1, group.metadata_hash,
                                                group.validated_topology_epoch, group.standby_replicas or 0))
        self.classic.timer.cancel(session_key(group.group_id, member_id))
        self.classic.timer.cancel(rebalance_key(group.group_id, member_id))
        return self.write(group.group_id, records)

    def fence_if(self, group_id: str, member_id: str, why: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and member_id in group.members:
            log.info("[GroupId %s] Member %s fenced from the group because %s", group_id, member_id, why)
            self.fence(group, member_id)

    def after_load(self, loaded_here=lambda group_id: True) -> None:
        """Every member of a loaded group must heartbeat within the session timeout."""
        for group_id, group in self.groups.items():
            if loaded_here(group_id):
                for member_id in group.members:
                    self.classic.timer.schedule(session_key(group_id, member_id),
                                                self.settings(group_id).session_timeout_ms,
                                                lambda g=group_id, m=member_id: self.fence_if(
                                                    g, m, "the member session expired."))

    def unload(self, here) -> None:
        """GroupMetadataManager.onUnloaded for the streams groups ``here(group id)`` names (their
        partition no longer led here, or about to be loaded again): dropped with their timers; a
        load rebuilds them from the log."""
        for group_id in [g for g in self.groups if here(g)]:
            for member_id in self.groups[group_id].members:
                self.classic.timer.cancel(session_key(group_id, member_id))
                self.classic.timer.cancel(rebalance_key(group_id, member_id))
            self.classic.timer.cancel(initial_key(group_id))
            del self.groups[group_id]
