"""StreamsGroupHeartbeat (88, v0) and StreamsGroupDescribe (89, v0) on the broker's listeners, as
Kafka 4.3.1's KafkaApis and GroupCoordinatorService hand them to the group coordinator.

Both answer UNSUPPORTED_VERSION while the finalized ``streams.version`` is below 1 (KafkaApis'
isStreamsGroupProtocolEnabled; kafkawire's controller finalizes 1 at format, as Kafka 4.3.1
does). A heartbeat is routed to the group's ``__consumer_offsets`` partition (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE); the internal topics its group still
needs (repartition and changelog topics) are then created through the controller, as Kafka's
AutoTopicCreationManager.createStreamsInternalTopics does, when the principal may CREATE them (on
the cluster, else on each topic); otherwise the MISSING_INTERNAL_TOPICS status says which it may not.

The ACL checks before the coordinator (READ on the group; the topology's topics neither
internal nor invalid, and DESCRIBE on each) are ``streams_checks``'; the CREATE check after it
reaches the handler through ``CREATE_CHECK`` (a context variable the check sets), so that without
an authorizer every creation is allowed.
"""
from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import time

from kafkawire.messages import streams_group_describe_response as sgd
from kafkawire.messages.create_topics_request import CreateTopicsRequest
from kafkawire.messages.streams_group_heartbeat_response import Status, StreamsGroupHeartbeatResponse
from kafkawire.metadata.group_configs import GroupBounds, with_dynamic_streams_assignment_interval
from kafkawire.metadata.image import GROUP_RESOURCE
from kafkawire.metadata.topic_config_synonyms import dynamic_broker_configs
from kafkawire.net import background
from kafkawire.net.authorizer import CLUSTER_NAME, RESOURCE_CLUSTER, RESOURCE_TOPIC, Op
from kafkawire.net.client import TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler
from kafkawire.raft.contract import NoLeader, NotLeader

from . import streams_admin
from . import streams_group as sg
from .forwarding import ForwardingFailed
from .metadata_apis import CREATE_TOPICS, CREATE_TOPICS_VERSION
from .streams_coordinator import StreamsCoordinator, StreamsSettings
from .streams_topology import MISSING_INTERNAL_TOPICS

__all__ = ["StreamsApis", "streams_checks", "CREATE_CHECK"]

log = logging.getLogger(__name__)

STREAMS_ASSIGNMENT_INTERVAL = "group.streams.assignment.interval.ms"

STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE = 88, 89
STREAMS_VERSION = "streams.version"
INT32_MIN = -2**31
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)      # READ, DELETE, DESCRIBE: no authorizer
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
# (names) -> the names the principal may not CREATE; set by streams_checks for one request
CREATE_CHECK: contextvars.ContextVar = contextvars.ContextVar("streams_create_check", default=None)


def _valid_topic_name(name: str) -> bool:
    return 0 < len(name) <= 249 and name not in (".", "..") and set(name) <= LEGAL


class CreationErrors:
    """AutoTopicCreationManager's ExpiringErrorCache: each internal topic's last creation error
    for a while (the heartbeats meanwhile report it and do not ask again), at most CAPACITY topics
    (the ones expiring first make room)."""
    CAPACITY = 1000

    def __init__(self, clock=lambda: time.monotonic() * 1000):
        self.clock = clock
        self._by_topic: dict[str, tuple[str, float]] = {}      # name -> (message, expiry in clock ms)

    def put(self, name: str, message: str, ttl_ms: int) -> None:
        self._by_topic[name] = (message, self.clock() + ttl_ms)
        if len(self._by_topic) > self.CAPACITY:
            del self._by_topic[min(self._by_topic, key=lambda n: self._by_topic[n][1])]

    def live(self, names) -> dict:
        """{name: message} of ``names`` whose error has not expired (expired ones are dropped)."""
        now, found = self.clock(), {}
        for name in names:
            entry = self._by_topic.get(name)
            if entry is not None and entry[1] <= now:
                del self._by_topic[name]
            elif entry is not None:
                found[name] = entry[0]
        return found


class StreamsApis:
    """The KIP-1071 handlers of ``apis`` (a kafkawire.broker.group_apis.GroupApis)."""

    def __init__(self, apis):
        self.apis = apis
        self._bounds = GroupBounds.of(apis.broker.config)
        self._dynamic: tuple[str | None, GroupBounds] = (None, self._bounds)    # (dynamic value, bounds)
        self.coordinator = StreamsCoordinator(apis.coordinator, topics=apis.consumer_apis.topics,
                                              settings=self.group_settings,
                                              max_size=apis.broker.config.group_streams_max_size)
        self._creating: dict[str, asyncio.Future] = {}      # topic name -> its CreateTopics in flight
        self.creation_errors = CreationErrors()

    def group_settings(self, group_id: str) -> StreamsSettings:
        image = self.apis.broker.image()
        if image is None:
            return StreamsSettings.of(group_id, None, self._bounds)
        return StreamsSettings.of(group_id, image.configs.get((GROUP_RESOURCE, group_id)), self._dynamic_bounds(image))

    def _dynamic_bounds(self, image) -> GroupBounds:
        """The bounds with the dynamic ``group.streams.assignment.interval.ms`` (GroupCoordinatorConfig's
        only reconfigurable streams setting), recomputed (and warned about) only when it changes."""
        node = str(self.apis.broker.config.node_id)
        value = dynamic_broker_configs(image, node).get(STREAMS_ASSIGNMENT_INTERVAL)
        if value is None:
            value = dynamic_broker_configs(image, "").get(STREAMS_ASSIGNMENT_INTERVAL)
        if value != self._dynamic[0]:
            self._dynamic = (value, with_dynamic_streams_assignment_interval(self._bounds, value))
        return self._dynamic[1]

    def handlers(self) -> dict[int, ApiHandler]:
        return {STREAMS_GROUP_HEARTBEAT: ApiHandler(self.heartbeat, max_version=0),
                STREAMS_GROUP_DESCRIBE: ApiHandler(self.describe, max_version=0)}

    def enabled(self) -> bool:
        image = self.apis.broker.image()
        return image is not None and image.finalized_features.get(STREAMS_VERSION, 0) >= 1

    async def heartbeat(self, ctx, request):
        if not self.enabled():
            return StreamsGroupHeartbeatResponse(error_code=Errors.UNSUPPORTED_VERSION)
        code = self.apis.store.coordinator_error(request.group_id) if request.group_id else Errors.NONE
        if code != Errors.NONE:
            return StreamsGroupHeartbeatResponse(error_code=code)
        response, to_create = self.coordinator.heartbeat(request, client_id=ctx.client_id,
                                                         client_host=f"/{ctx.peer[0]}")
        if to_create:
            self._create_internal(ctx, response, to_create,
                                  2 * self.group_settings(request.group_id).heartbeat_interval_ms)
        return response

    def _create_internal(self, ctx, response, to_create: dict, error_ttl_ms: int) -> None:
        """KafkaApis.handleStreamsGroupHeartbeat's creation step: CREATE checked, then a CreateTopics
        for the topics neither in flight nor failed within ``error_ttl_ms`` (twice the heartbeat
        interval), and the cached failures added to the MISSING_INTERNAL_TOPICS status. The
        CreateTopics goes to the active controller on behalf of the member's client (an Envelope
        with its principal, as AutoTopicCreationManager sends it), so the controller authorizes it
        and counts it against the client's controller_mutation_rate."""
        check = CREATE_CHECK.get()
        refused = sorted(check(list(to_create))) if check is not None else []
        if refused:
            detail = f"Unauthorized to CREATE on topics {', '.join(refused)}."
            missing = next((s for s in response.status if s.status_code == MISSING_INTERNAL_TOPICS), None)
            if missing is not None:
                missing.status_detail += "; " + detail
            else:
                response.status.append(Status(status_code=MISSING_INTERNAL_TOPICS, status_detail=detail))
            return
        failed = self.creation_errors.live(to_create)
        wanted = [t for name, t in sorted(to_create.items()) if name not in failed and
                  (name not in self._creating or self._creating[name].done())]
        if wanted:
            request = CreateTopicsRequest(timeout_ms=self.apis.broker.config.request_timeout_ms, validate_only=False,
                                          topics=wanted)
            on_behalf = dataclasses.replace(ctx, api_key=CREATE_TOPICS, api_version=CREATE_TOPICS_VERSION, header=None)
            task = background.start(self._create(on_behalf, request, error_ttl_ms),
                                    f"Creating the internal topics {', '.join(t.name for t in wanted)}", logger=log)
            for t in wanted:
                self._creating[t.name] = task
            task.add_done_callback(lambda _, names=[t.name for t in wanted]: [
                self._creating.pop(n, None) for n in names if self._creating.get(n) is task])
        missing = next((s for s in response.status if s.status_code == MISSING_INTERNAL_TOPICS), None)
        if missing is not None and failed:
            listed = [f"{name} ({failed[name]})" for name in sorted(failed)[:3]]
            more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
            missing.status_detail += f"; Creation failed: {', '.join(listed)}{more}."

    async def _create(self, ctx, request, error_ttl_ms: int) -> None:
        names = [t.name for t in request.topics]
        try:
            response = await self.apis.broker.forwarder.on_behalf(ctx, request)
        except (ForwardingFailed, NoLeader, NotLeader, TransportError, TimeoutError, OSError) as exc:
            log.warning("Auto topic creation failed for %s: %s", ", ".join(names), exc)
            for name in names:
                self.creation_errors.put(name, str(exc) or type(exc).__name__, error_ttl_ms)
            return
        for result in response.topics:
            if result.error_code != Errors.NONE:
                message = result.error_message or Errors.for_code(result.error_code).message
                log.warning("Creating the streams internal topic %s failed: %s", result.name, message)
                self.creation_errors.put(result.name, message, error_ttl_ms)

    async def describe(self, ctx, request):
        groups = []
        for group_id in request.group_ids:
            code = Errors.UNSUPPORTED_VERSION if not self.enabled() else self.apis.store.coordinator_error(group_id)
            group = self.coordinator.groups.get(group_id)
            if code != Errors.NONE:
                found = sgd.DescribedGroup(group_id=group_id, error_code=code, members=[])
            elif group is None:
                c = self.apis.coordinator
                other = group_id in c.groups or group_id in c.consumer_groups
                found = sgd.DescribedGroup(group_id=group_id, error_code=Errors.GROUP_ID_NOT_FOUND, members=[],
                                           error_message=f"Group {group_id} is not a streams group." if other
                                           else f"Group {group_id} not found.")
            else:
                found = described(group)
            if request.include_authorized_operations and found.error_code == Errors.NONE:
                found.authorized_operations = GROUP_OPERATIONS
            groups.append(found)
        return sgd.StreamsGroupDescribeResponse(groups=groups)

    def classic_join_error(self, group_id: str) -> int:
        """A classic JoinGroup for a streams group: INCONSISTENT_GROUP_PROTOCOL while it has members;
        an empty one gives way to a classic group (its tombstones), as in Kafka's classicGroupJoin."""
        group = self.coordinator.groups[group_id]
        if group.members:
            return Errors.INCONSISTENT_GROUP_PROTOCOL
        error = self.apis.store.persist(group_id, streams_admin.tombstones(group))
        if error == Errors.NONE:
            del self.coordinator.groups[group_id]
        return error

    def after_load(self, loaded_here) -> None:
        self.coordinator.after_load(loaded_here)


def _assignment(active: dict, standby: dict) -> sgd.Assignment:
    def ids(tasks):
        return [sgd.TaskIds(subtopology_id=s, partitions=sorted(p)) for s, p in sorted(tasks.items()) if p]
    return sgd.Assignment(active_tasks=ids(active), standby_tasks=ids(standby), warmup_tasks=[])


def _topic_infos(infos) -> list:
    return [sgd.TopicInfo(name=t.name, partitions=t.partitions, replication_factor=t.replication_factor,
                          topic_configs=[sgd.KeyValue(key=c.key, value=c.value) for c in t.topic_configs])
            for t in infos]


def described(group: sg.StreamsGroup) -> sgd.DescribedGroup:
    """StreamsGroup.asDescribedGroup."""
    topology = None
    if group.topology is not None:
        topology = sgd.Topology(epoch=group.topology.epoch, subtopologies=[sgd.Subtopology(
            subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
            repartition_sink_topics=list(s.repartition_sink_topics),
            state_changelog_topics=_topic_infos(s.state_changelog_topics),
            repartition_source_topics=_topic_infos(s.repartition_source_topics)) for s in group.topology.subtopologies])
    members = [sgd.Member(
        member_id=m.member_id, member_epoch=m.member_epoch, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, topology_epoch=m.topology_epoch, process_id=m.process_id,
        user_endpoint=None if m.user_endpoint is None else sgd.Endpoint(host=m.user_endpoint[0],
                                                                        port=m.user_endpoint[1]),
        client_tags=[sgd.KeyValue(key=k, value=v) for k, v in m.client_tags], task_offsets=[], task_end_offsets=[],
        assignment=_assignment(m.active_tasks(), m.standby),
        target_assignment=_assignment(group.targets.get(m.member_id, {}), group.standby_targets.get(m.member_id, {})))
        for m in group.members.values()]
    return sgd.DescribedGroup(group_id=group.group_id, group_state=group.state, group_epoch=group.epoch,
                              assignment_epoch=group.assignment_epoch, topology=topology, members=members)


# -- the ACL checks of KafkaApis --

def streams_checks(broker) -> dict:
    from .authorization import authorized_operations
    async def heartbeat(ctx, request, may, handle):
        if not broker.group_apis.streams_apis.enabled():
            return await handle(ctx, request)
        if not may(Op.READ, 3, request.group_id):          # 3: the GROUP resource type
            return StreamsGroupHeartbeatResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
        if request.topology is not None:
            required = list(dict.fromkeys(
                name for s in request.topology.subtopologies for name in
                [*s.source_topics, *s.repartition_sink_topics, *(t.name for t in s.repartition_source_topics),
                 *(t.name for t in s.state_changelog_topics)]))
            prohibited = [t for t in required if t in INTERNAL_TOPICS]
            if prohibited:
                return StreamsGroupHeartbeatResponse(error_code=Errors.STREAMS_INVALID_TOPOLOGY, error_message=(
                    f"Use of Kafka internal topics {','.join(prohibited)} in a Kafka Streams topology is prohibited."))
            invalid = [t for t in required if not _valid_topic_name(t)]
            if invalid:
                return StreamsGroupHeartbeatResponse(error_code=Errors.STREAMS_INVALID_TOPOLOGY,
                                                     error_message=f"Topic names {','.join(invalid)} are not valid "
                                                                   "topic names.")
            if any(not may(Op.DESCRIBE, RESOURCE_TOPIC, t) for t in required):
                return StreamsGroupHeartbeatResponse(error_code=Errors.TOPIC_AUTHORIZATION_FAILED)

        def refused_creates(names):
            if may(Op.CREATE, RESOURCE_CLUSTER, CLUSTER_NAME):
                return []
            return [n for n in names if not may(Op.CREATE, RESOURCE_TOPIC, n)]
        token = CREATE_CHECK.set(refused_creates)
        try:
            return await handle(ctx, request)
        finally:
            CREATE_CHECK.reset(token)

    async def describe(ctx, request, may, handle):
        """DESCRIBE on each group; the others are answered GROUP_AUTHORIZATION_FAILED."""
        kept = [g for g in request.group_ids if may(Op.DESCRIBE, 3, g)]
        refused = [g for g in request.group_ids if g not in set(kept)]
        request.group_ids = kept
        response = await handle(ctx, request)
        for group in response.groups:
            if group.error_code == Errors.NONE and group.authorized_operations != INT32_MIN:
                group.authorized_operations = authorized_operations(may, 3, group.group_id)
        response.groups = list(response.groups) + [sgd.DescribedGroup(
            group_id=g, error_code=Errors.GROUP_AUTHORIZATION_FAILED, members=[]) for g in refused]
        return response
    return {STREAMS_GROUP_HEARTBEAT: heartbeat, STREAMS_GROUP_DESCRIBE: describe}
