"""The group APIs on the broker's listeners, as Kafka 4.3.1's KafkaApis hands them to its group
coordinator: FindCoordinator (10), JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup
(14), DescribeGroups (15), ListGroups (16), OffsetCommit (8), OffsetFetch (9), DeleteGroups (42),
OffsetDelete (47).

The state machine is kafkawire.broker.group_coordinator / group_offsets (no I/O); this module
turns requests of every version into its calls, waits for the parked JoinGroup and SyncGroup
answers, and checks first that this broker coordinates the group (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, as Kafka's GroupCoordinatorService).
OffsetCommit and OffsetFetch resolve topics against the metadata (by name, by id from v10):
an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id).

Every request's work is linear in its size; a JoinGroup or SyncGroup waits at most the group's
rebalance timeout (a timer of the coordinator answers it).
"""
from __future__ import annotations

import asyncio
import time

from kafkawire.messages.delete_groups_response import DeletableGroupResult, DeleteGroupsResponse
from kafkawire.messages.describe_groups_response import DescribedGroup, DescribeGroupsResponse
from kafkawire.messages.find_coordinator_response import Coordinator, FindCoordinatorResponse
from kafkawire.messages.heartbeat_response import HeartbeatResponse
from kafkawire.messages.join_group_response import JoinGroupResponse
from kafkawire.messages.leave_group_response import LeaveGroupResponse
from kafkawire.messages.list_groups_response import ListGroupsResponse
from kafkawire.messages.sync_group_response import SyncGroupResponse
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from .consumer_apis import ConsumerApis
from .streams_apis import StreamsApis
from .coordinator_acks import after_write, appends_so_far, replicated_handlers, settle_writes, wait_also_for
from .group_commit import OffsetApis
from .group_coordinator import GroupCoordinator, GroupSettings
from .group_log import LoopTimer, OffsetsTopic
from .group_offsets import GroupOffsets
from .share_apis import ShareApis
from .share_coordinator_apis import SHARE_KEY_TYPE

__all__ = ["GroupApis"]

GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE = 0, 1
# READ, DELETE and DESCRIBE on a group: what DescribeGroups reports with no authorizer.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
INT32_MIN = -2**31
EXPIRY_KEY = "group-expiration"


def settings_of(config) -> GroupSettings:
    return GroupSettings(initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                         min_session_timeout_ms=config.group_min_session_timeout_ms,
                         max_session_timeout_ms=config.group_max_session_timeout_ms,
                         max_size=config.group_max_size, offset_metadata_max_bytes=config.offset_metadata_max_bytes)


def sync_protocol_present(version: int, request) -> bool:
    """SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent: v5+ names both (else
    INCONSISTENT_GROUP_PROTOCOL, which KafkaApis answers before any ACL check)."""
    return version < 5 or (request.protocol_type is not None and request.protocol_name is not None)


class GroupApis:
    """The group coordinator of ``broker`` and its request handlers."""

    def __init__(self, broker):
        self.broker = broker
        self.timer = LoopTimer()
        self.coordinator = GroupCoordinator(settings_of(broker.config), timer=self.timer,
                                            persist=lambda group_id, records: self.store.persist(group_id, records),
                                            now_ms=lambda: int(time.time() * 1000))
        self.coordinator.after_write = after_write
        self.offsets = GroupOffsets(self.coordinator)
        self.store = OffsetsTopic(broker, self.coordinator, self.offsets)
        self.offsets.uncommitted.position = self.store.log_position
        self.offset_apis = OffsetApis(self)
        self.consumer_apis = ConsumerApis(self)
        self.share_apis = ShareApis(self)
        self.streams_apis = StreamsApis(self)
        self._expiry_scheduled = False

    def handlers(self) -> dict[int, ApiHandler]:
        return replicated_handlers({       # answers wait for their __consumer_offsets writes' ISR
            8: ApiHandler(self.offset_apis.offset_commit, min_version=2),
            9: ApiHandler(self.offset_apis.offset_fetch, min_version=1),
            10: ApiHandler(self.find_coordinator),
            11: ApiHandler(self.join_group),
            12: ApiHandler(self.heartbeat),
            13: ApiHandler(self.leave_group),
            14: ApiHandler(self.sync_group),
            15: ApiHandler(self.describe_groups),
            16: ApiHandler(self.list_groups),
            42: ApiHandler(self.delete_groups, max_version=2),
            47: ApiHandler(self.offset_apis.offset_delete),
            **self.consumer_apis.handlers(),
            **self.share_apis.handlers(),
            **self.streams_apis.handlers(),
        }, self.broker)

    def on_metadata(self) -> None:
        self.store.on_metadata()
        self.consumer_apis.on_metadata()
        self.share_apis.groups.on_metadata()
        if not self._expiry_scheduled:
            self._expiry_scheduled = True
            self._schedule_expiry()

    def _schedule_expiry(self) -> None:
        self.timer.schedule(EXPIRY_KEY, self.broker.config.offsets_retention_check_interval_ms, self._expire)

    def _expire(self) -> None:
        """Kafka's cleanupGroupMetadata, then the next round."""
        try:
            self.offsets.expire(self.broker.config.offsets_retention_minutes * 60_000)
        finally:
            self._schedule_expiry()

    def close(self) -> None:
        self.share_apis.save()            # what is left of an old share start-offset checkpoint
        self.share_apis.keeper.close()
        self.share_apis.initializer.close()
        self.timer.close()
        self.store.close()

    # -- FindCoordinator --

    async def find_coordinator(self, ctx, request):
        v = ctx.api_version
        keys = request.coordinator_keys if v >= 4 else [request.key]
        found = [self._coordinator_of(ctx, request.key_type, key) for key in keys]
        if v >= 4:
            return FindCoordinatorResponse(coordinators=found)
        one = found[0]
        response = FindCoordinatorResponse(error_code=one.error_code, node_id=one.node_id, host=one.host,
                                           port=one.port)
        if v >= 1:                            # Kafka's text: the error's message, "NONE" without one
            response.error_message = Errors.for_code(one.error_code).message if one.error_code else "NONE"
        return response

    def _coordinator_of(self, ctx, key_type: int, key: str) -> Coordinator:
        """KafkaApis.getCoordinator: the leader of the key's partition, on the listener asked, when
        it is alive (registered, not fenced); else COORDINATOR_NOT_AVAILABLE."""
        node_id = -1
        if key_type == TRANSACTION_KEY_TYPE:
            code, node_id = self.broker.txn_apis.find(key)
        elif key_type == SHARE_KEY_TYPE:
            code, node_id = self.broker.share_coordinator_apis.find(key, ctx.api_version)
        elif key_type != GROUP_KEY_TYPE:
            code = Errors.INVALID_REQUEST
        else:
            code, node_id = self.store.find(key)
        endpoint = None
        if code == Errors.NONE:
            registration = self.broker.image().brokers.get(node_id)
            alive = registration is not None and not registration.fenced
            endpoint = registration.listeners.get(ctx.listener_name) if alive else None
            code = Errors.NONE if endpoint is not None else Errors.COORDINATOR_NOT_AVAILABLE
        if endpoint is None:
            return Coordinator(key=key, node_id=-1, host="", port=-1, error_code=code)
        return Coordinator(key=key, node_id=node_id, host=endpoint.host, port=endpoint.port, error_code=Errors.NONE)

    # -- JoinGroup, SyncGroup, Heartbeat, LeaveGroup --

    async def join_group(self, ctx, request):
        v = ctx.api_version
        if v == 0:
            request.rebalance_timeout_ms = request.session_timeout_ms      # v0 had one timeout for both
        code = self.store.coordinator_error(request.group_id) if request.group_id else Errors.NONE
        consumer_group = self.coordinator.consumer_groups.get(request.group_id) if code == Errors.NONE else None
        if consumer_group is not None and not consumer_group.members:     # it gives way to a classic group
            code, consumer_group = self.consumer_apis.classic_members.drop_empty(request.group_id), None
        if code == Errors.NONE and request.group_id in self.coordinator.share_groups:
            code = Errors.INCONSISTENT_GROUP_PROTOCOL          # a share group: not for classic members
            request.member_id = ""
        if code == Errors.NONE and request.group_id in self.coordinator.streams_groups:
            code = self.streams_apis.classic_join_error(request.group_id)
        if code != Errors.NONE:
            response = JoinGroupResponse(error_code=code, member_id=request.member_id)
        elif consumer_group is not None:
            response = self.consumer_apis.classic_join(ctx, request)
        else:
            response = await self._parked(lambda respond: self.coordinator.join(
                request, version=v, client_id=ctx.client_id, client_host=f"/{ctx.peer[0]}", respond=respond))
        if v < 7 and response.protocol_name is None:
            response.protocol_name = ""
        elif v >= 7 and response.protocol_name == "":
            response.protocol_name = None
        return response

    async def sync_group(self, ctx, request):
        if not sync_protocol_present(ctx.api_version, request):
            return SyncGroupResponse(error_code=Errors.INCONSISTENT_GROUP_PROTOCOL)
        code = self._classic_error(request.group_id)
        if code != Errors.NONE:
            return SyncGroupResponse(error_code=code)
        consumer_group = self.coordinator.consumer_groups.get(request.group_id)
        if consumer_group is not None:
            return self.consumer_apis.classic_members.sync(consumer_group, request)
        return await self._parked(lambda respond: self.coordinator.sync(request, respond=respond))

    async def _parked(self, call):
        """Run a coordinator call that answers through ``respond``, now or later. An answer another
        request gives after its write waits for that write too. A call that parks until its own
        write is committed (the leader's SyncGroup: its assignment's appendFuture answers every
        member, itself too) starts that wait now (settle_writes)."""
        future = asyncio.get_running_loop().create_future()

        def respond(response):
            if not future.done():
                future.set_result((response, appends_so_far()))
        call(respond)
        if not future.done():
            settle_writes(self.broker)
        response, appends = await future
        wait_also_for(appends)
        return response

    def _classic_error(self, group_id: str) -> int:
        """The coordinator's error for a classic SyncGroup or Heartbeat (an empty group id is the
        classic coordinator's INVALID_GROUP_ID)."""
        return self.store.coordinator_error(group_id) if group_id else Errors.NONE

    async def heartbeat(self, ctx, request):
        code = self._classic_error(request.group_id)
        if code != Errors.NONE:
            return HeartbeatResponse(error_code=code)
        consumer_group = self.coordinator.consumer_groups.get(request.group_id)
        if consumer_group is not None:
            return self.consumer_apis.classic_members.heartbeat(consumer_group, request)
        return self.coordinator.heartbeat(request)

    async def leave_group(self, ctx, request):
        code = self.store.coordinator_error(request.group_id) if request.group_id else Errors.NONE
        if code == Errors.NONE and request.group_id in self.coordinator.consumer_groups:
            return self.consumer_apis.classic_leave(request, ctx.api_version)
        if code != Errors.NONE:
            return LeaveGroupResponse(error_code=code, members=[])
        return self.coordinator.leave(request, version=ctx.api_version)

    # -- ListGroups, DescribeGroups, DeleteGroups --

    async def list_groups(self, ctx, request):
        v = ctx.api_version
        states = request.states_filter if v >= 4 else []
        types = request.types_filter if v >= 5 else []
        if self.store.partitions(self.broker.image()) and not self._all_loaded():
            return ListGroupsResponse(error_code=Errors.COORDINATOR_LOAD_IN_PROGRESS, groups=[])
        return ListGroupsResponse(error_code=Errors.NONE, groups=self.offsets.list_groups(states, types))

    def _all_loaded(self) -> bool:
        return not self.store.still_loading()

    async def describe_groups(self, ctx, request):
        groups = []
        for group_id in request.groups:
            code = self.store.coordinator_error(group_id)
            if code != Errors.NONE:
                described = DescribedGroup(error_code=code, group_id=group_id, members=[])
            else:
                described = self.offsets.describe(group_id, ctx.api_version)
            described.authorized_operations = GROUP_OPERATIONS if request.include_authorized_operations \
                else INT32_MIN
            groups.append(described)
        return DescribeGroupsResponse(groups=groups)

    async def delete_groups(self, ctx, request):
        results = []
        for group_id in request.groups_names:        # a repeated name: GROUP_ID_NOT_FOUND the second time
            code = self.store.coordinator_error(group_id) if group_id else Errors.INVALID_GROUP_ID
            if code == Errors.NONE and group_id in self.coordinator.share_groups:
                code = await self.share_apis.delete_group(group_id)     # the share coordinator's state first
            elif code == Errors.NONE:
                code = self.offsets.delete(group_id)
            results.append(DeletableGroupResult(group_id=group_id, error_code=code))
        return DeleteGroupsResponse(results=results)
