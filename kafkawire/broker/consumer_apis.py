"""ConsumerGroupHeartbeat (68, v0-1) and ConsumerGroupDescribe (69, v0-1) on the broker's listeners,
as Kafka 4.3.1's KafkaApis and GroupCoordinatorService hand them to the group coordinator.

Both answer UNSUPPORTED_VERSION while the finalized ``group.version`` is below 1 (Kafka's
isConsumerGroupProtocolEnabled; kafkawire's controller finalizes 1 at format, as Kafka 4.x does)
and are advertised by ApiVersions regardless, as Kafka's broker advertises them. The heartbeat is
validated first (INVALID_REQUEST with Kafka's messages, UNSUPPORTED_ASSIGNOR), then routed to the
group's ``__consumer_offsets`` partition (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE).

Classic members (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) of a consumer group are
kafkawire.broker.consumer_classic's; the conversions between classic and consumer groups
(``group.consumer.migration.policy``) kafkawire.broker.consumer_migration's.

Differences from Kafka kept here (documented in the report of issue 29):
- ``SubscribedTopicRegex`` is matched with Python's ``re.fullmatch`` (RE2's constructs Python
  lacks refused: kafkawire.broker.consumer_regex) and resolved on Kafka's schedule
  (kafkawire.broker.consumer_regex_refresh);
"""
from __future__ import annotations

import contextlib

from kafkawire.messages.consumer_group_describe_response import ConsumerGroupDescribeResponse, DescribedGroup
from kafkawire.messages.consumer_group_heartbeat_response import ConsumerGroupHeartbeatResponse
from kafkawire.messages.join_group_response import JoinGroupResponse
from kafkawire.messages.leave_group_response import LeaveGroupResponse, MemberResponse
from kafkawire.net.admin_authorization import allowed
from kafkawire.net.authorizer import RESOURCE_TOPIC, Op
from kafkawire.metadata.group_configs import (BrokerAssignmentInterval, GroupBounds, cached_by_configs,
                                              effective_assignment_interval,
                                              effective_consumer_timeouts)
from kafkawire.metadata.image import GROUP_RESOURCE
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from . import consumer_admin
from .consumer_classic import ClassicMembers
from .consumer_coordinator import ConsumerCoordinator, ConsumerSettings, GroupError, TopicsView, validate

__all__ = ["ConsumerApis", "consumer_settings_of"]

CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69
GROUP_VERSION = "group.version"
# READ, DELETE and DESCRIBE on a group: what ConsumerGroupDescribe reports with no authorizer.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)


def consumer_settings_of(config) -> ConsumerSettings:
    return ConsumerSettings(session_timeout_ms=config.group_consumer_session_timeout_ms,
                            heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
                            max_size=config.group_consumer_max_size,
                            assignors=tuple(config.group_consumer_assignors),
                            assignment_interval_ms=config.group_consumer_assignment_interval_ms,
                            migration_policy=config.group_consumer_migration_policy,
                            regex_refresh_interval_ms=config.group_consumer_regex_refresh_interval_ms)


def topics_of(image) -> TopicsView:
    if image is None:
        return TopicsView({}, {})

    def racks(name: str) -> tuple:
        """Each partition's replica racks, as Kafka's metadata image gives them to the topic hash."""
        partitions = image.topics_by_name[name].partitions
        brokers = image.brokers
        return tuple(tuple(brokers[r].rack for r in partitions[i].replicas
                           if r in brokers and brokers[r].rack is not None) if i in partitions else ()
                     for i in range(len(partitions)))
    return TopicsView.of(((name, t.id, len(t.partitions)) for name, t in image.topics_by_name.items()), racks,
                         image.provenance.offset)


class ConsumerApis:
    """The KIP-848 handlers of ``apis`` (a kafkawire.broker.group_apis.GroupApis)."""

    def __init__(self, apis):
        self.apis = apis
        self.coordinator = ConsumerCoordinator(apis.coordinator, consumer_settings_of(apis.broker.config),
                                               topics=self.topics, group_timeouts=self.group_timeouts,
                                               assignment_interval=self.assignment_interval)
        self.classic_members = ClassicMembers(self.coordinator)
        self._group_bounds = GroupBounds.of(apis.broker.config)
        # group id -> (its GROUP configs as last read, its timeouts): evaluated once per change, as
        # Kafka's GroupConfigManager does (its clamping WARN once, not at every heartbeat)
        self._timeouts: dict[str, tuple[tuple, tuple[int, int]]] = {}
        self._intervals: dict[str, tuple[tuple, int]] = {}     # the same for its own assignment interval
        self._broker_interval = BrokerAssignmentInterval("consumer", apis.broker.config)
        self._sizes: dict = {}                  # topic name -> (id, partitions) at the last metadata change
        self._view: TopicsView | None = None    # the image's topics, made again after each metadata change

    def group_timeouts(self, group_id: str) -> tuple[int, int]:
        """(session timeout, heartbeat interval) of ``group_id``: its GROUP configs in the image,
        clamped to this broker's bounds, else the broker's settings."""
        image = self.apis.broker.image()
        configs = None if image is None else image.configs.get((GROUP_RESOURCE, group_id))
        if not configs:
            self._timeouts.pop(group_id, None)
            return self._group_bounds.consumer_session_timeout_ms, self._group_bounds.consumer_heartbeat_interval_ms
        return cached_by_configs(self._timeouts, group_id, configs,
                                 lambda: effective_consumer_timeouts(group_id, configs, self._group_bounds))

    def assignment_interval(self, group_id: str) -> int:
        """The group's interval between target assignments: its consumer.assignment.interval.ms in
        the image, clamped to this broker's bounds, else group.consumer.assignment.interval.ms
        (the dynamic broker config, else the static setting)."""
        image = self.apis.broker.image()
        configs = None if image is None else image.configs.get((GROUP_RESOURCE, group_id))
        if not configs or "consumer.assignment.interval.ms" not in configs:
            self._intervals.pop(group_id, None)
            return self._broker_interval.interval(image)
        return cached_by_configs(self._intervals, group_id, configs, lambda: effective_assignment_interval(
            "consumer", group_id, configs, self._group_bounds, 0))

    def topics(self) -> TopicsView:
        if self._view is None:
            self._view = topics_of(self.apis.broker.image())
        return self._view

    def handlers(self) -> dict[int, ApiHandler]:
        return {CONSUMER_GROUP_HEARTBEAT: ApiHandler(self.heartbeat),
                CONSUMER_GROUP_DESCRIBE: ApiHandler(self.describe)}

    def enabled(self) -> bool:
        image = self.apis.broker.image()
        return image is not None and image.finalized_features.get(GROUP_VERSION, 0) >= 1

    def on_metadata(self) -> None:
        """Groups subscribed to a created, deleted or grown topic get a new target assignment."""
        self._view = None
        sizes = self.topics().by_name
        changed = {name for name in sizes.keys() | self._sizes.keys() if sizes.get(name) != self._sizes.get(name)}
        created = any(name not in self._sizes or self._sizes[name][0] != sizes[name][0]
                      for name in changed if name in sizes)
        self._sizes = sizes
        if changed:
            self.coordinator.topics_changed(changed, created)

    def classic_join(self, ctx, request) -> JoinGroupResponse:
        """A classic JoinGroup for a consumer group with members: the session timeout is checked
        against the classic bounds first, as for any JoinGroup."""
        bounds = self.apis.coordinator.settings
        if not bounds.min_session_timeout_ms <= request.session_timeout_ms <= bounds.max_session_timeout_ms:
            return JoinGroupResponse(error_code=Errors.INVALID_SESSION_TIMEOUT, member_id=request.member_id)
        group = self.coordinator.groups[request.group_id]
        with self._resolving_as(ctx):
            return self.classic_members.join(group, request, version=ctx.api_version, client_id=ctx.client_id,
                                             client_host=f"/{ctx.peer[0]}")

    def classic_leave(self, request, version: int) -> LeaveGroupResponse:
        """LeaveGroup for members of a consumer group: v3+ answers member by member, v0-2 with the
        one member's error as the top-level error (Kafka's LeaveGroupResponse)."""
        identities = [(m.member_id, m.group_instance_id) for m in request.members] if version >= 3 else \
            [(request.member_id, None)]
        error, results = self.coordinator.classic_leave(request.group_id, identities)
        if error != Errors.NONE:
            return LeaveGroupResponse(error_code=error, members=[])
        if version < 3:
            return LeaveGroupResponse(error_code=results[0][2], members=[])
        return LeaveGroupResponse(error_code=Errors.NONE, members=[
            MemberResponse(member_id=m, group_instance_id=i, error_code=c) for m, i, c in results])

    async def heartbeat(self, ctx, request):
        if not self.enabled():
            return ConsumerGroupHeartbeatResponse(error_code=Errors.UNSUPPORTED_VERSION)
        try:
            validate(request, ctx.api_version, self.coordinator.settings.assignors)
        except GroupError as exc:
            return ConsumerGroupHeartbeatResponse(error_code=exc.code, error_message=exc.message)
        code = self.apis.store.coordinator_error(request.group_id)
        if code != Errors.NONE:
            return ConsumerGroupHeartbeatResponse(error_code=code)
        if request.group_id in self.apis.coordinator.share_groups:       # GroupMetadataManager's refusal
            return ConsumerGroupHeartbeatResponse(error_code=Errors.GROUP_ID_NOT_FOUND,
                                                  error_message=f"Group {request.group_id} is not a consumer group.")
        with self._resolving_as(ctx):
            return self.coordinator.heartbeat(request, version=ctx.api_version, client_id=ctx.client_id,
                                              client_host=f"/{ctx.peer[0]}")

    @contextlib.contextmanager
    def _resolving_as(self, ctx):
        """TopicRegexResolver's filter: a regex resolution the request of ``ctx`` asks for (a
        ConsumerGroupHeartbeat, or a classic member's JoinGroup, which Kafka's classicGroupJoin
        passes its context to) keeps the topics its principal may DESCRIBE (the question asked
        quietly: Kafka logs no denial there)."""
        authorizer = self.apis.broker.authorizer
        self.coordinator.regexes.describe = None if authorizer is None else (
            lambda name: allowed(authorizer, ctx, Op.DESCRIBE, RESOURCE_TOPIC, name))
        try:
            yield
        finally:
            self.coordinator.regexes.describe = None

    async def describe(self, ctx, request):
        if not self.enabled():
            return ConsumerGroupDescribeResponse(groups=[DescribedGroup(
                group_id=g, error_code=Errors.UNSUPPORTED_VERSION, members=[]) for g in request.group_ids])
        names = self.topics().by_id
        groups = []
        for group_id in request.group_ids:
            code = self.apis.store.coordinator_error(group_id)
            group = self.coordinator.groups.get(group_id)
            if code != Errors.NONE:
                found = DescribedGroup(group_id=group_id, error_code=code, members=[])
            elif group is None:
                other = group_id in self.apis.coordinator.groups or group_id in self.apis.coordinator.share_groups
                message = f"Group {group_id} is not a consumer group." if other else f"Group {group_id} not found."
                found = DescribedGroup(group_id=group_id, error_code=Errors.GROUP_ID_NOT_FOUND, error_message=message,
                                       members=[])
            else:
                found = consumer_admin.describe(group, names, self.coordinator.settings.assignors[0])
            if request.include_authorized_operations and found.error_code == Errors.NONE:
                found.authorized_operations = GROUP_OPERATIONS
            groups.append(found)
        return ConsumerGroupDescribeResponse(groups=groups)

