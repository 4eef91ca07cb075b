"""Share groups (KIP-932) on the broker's listeners: ShareGroupHeartbeat (76) and ShareGroupDescribe
(77) on the group coordinator (kafkawire.broker.share_groups), ShareFetch (78) and ShareAcknowledge
(79) on the partitions' leaders, as Kafka 4.3.1's KafkaApis, GroupCoordinatorService and
SharePartitionManager serve them.

All four answer UNSUPPORTED_VERSION while the finalized ``share.version`` is below 1 (Kafka's
isShareGroupProtocolEnabled; kafkawire's controller finalizes 1 at format, as Kafka 4.3.1 does).

ShareFetch: the request's share session (kafkawire.broker.share_sessions) names the partitions;
the piggybacked acknowledgements are applied first, then each partition led here acquires
records for the member (kafkawire.broker.share_partition) and answers with the log's batches
that hold them and the acquired offset ranges. A fetch that acquires nothing waits for appends
up to ``max_wait_ms`` (capped at 30 s), as a Fetch does. A share-partition starts, at its first
fetch, where the group's ``share.auto.offset.reset`` says: the high watermark (``latest``, the
default), the log start (``earliest``) or the first record at most the duration old
(``by_duration:``), and reads
below the high watermark, or with ``share.isolation.level=read_committed`` below the last stable
offset with the aborted transactions' batches archived (kafkawire.broker.share_batches).

A share-partition's durable state (start offset, records' states and delivery counts) is read
from the share coordinator when this leader first serves it and written after each change,
acknowledgements answered once written (kafkawire.broker.share_state_keeper), so a restarted or
new leader resumes where the last one was. Where the coordinator has no start offset yet, an old
kafkawire checkpoint (kafkawire.broker.share_checkpoint, read once), else
``share.auto.offset.reset``, says where to start.
"""
from __future__ import annotations

import asyncio
import os
import time

from kafkawire.messages.share_acknowledge_response import (LeaderIdAndEpoch as AckLeader,
                                                           NodeEndpoint as AckEndpoint,
                                                           PartitionData as AckPartition,
                                                           ShareAcknowledgeResponse, ShareAcknowledgeTopicResponse)
from kafkawire.messages.share_fetch_response import (AcquiredRecords, LeaderIdAndEpoch, NodeEndpoint, PartitionData,
                                                     ShareFetchableTopicResponse, ShareFetchResponse)
from kafkawire.messages.alter_share_group_offsets_response import AlterShareGroupOffsetsResponse
from kafkawire.messages.delete_share_group_offsets_response import DeleteShareGroupOffsetsResponse
from kafkawire.messages.describe_share_group_offsets_response import (
    DescribeShareGroupOffsetsResponse, DescribeShareGroupOffsetsResponseGroup as DescribedOffsets)
from kafkawire.messages.share_group_describe_response import DescribedGroup, ShareGroupDescribeResponse
from kafkawire.messages.share_group_heartbeat_response import ShareGroupHeartbeatResponse
from kafkawire.metadata.group_configs import (SHARE_DELIVERY_LIMIT, SHARE_HEARTBEAT, SHARE_LOCK_DURATION,
                                              SHARE_RECORD_LOCKS, SHARE_SESSION, GroupBounds, by_duration_ns, cached_by_configs,
                                              BrokerAssignmentInterval, effective_assignment_interval,
                                              effective_share_configs)
from kafkawire.metadata.image import GROUP_RESOURCE
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.message import uuid_to_kafka_string
from kafkawire.protocol.handler import ApiHandler

from .leader_discovery import LeaderHints
from .share_offsets import ShareOffsets
from .share_checkpoint import FILE_NAME, ShareStarts
from .share_authorization import topic_reader
from .share_batches import batch_bounds, deliverable
from .share_errors import message_of, not_hosted, with_message
from .consumer_coordinator import GroupError
from .share_group_init import ShareGroupInitializer
from .share_groups import ShareGroups, validate_heartbeat
from .share_partition import SharePartition, ShareSettings
from .share_sessions import FINAL_EPOCH, INITIAL_EPOCH, ShareSessionError, ShareSessions
from .share_state_keeper import ShareStateKeeper
from .share_metrics import (FAILED_SHARE_ACK, FAILED_SHARE_FETCH, TOTAL_SHARE_ACK, TOTAL_SHARE_FETCH, ShareMetrics,
                            mark_topics)

__all__ = ["ShareApis", "SHARE_VERSION"]

SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE, SHARE_FETCH, SHARE_ACKNOWLEDGE = 76, 77, 78, 79
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = 90, 91, 92
SHARE_VERSION = "share.version"
MAX_WAIT_CAP_MS = 30_000
RECORD_LIMIT = 1                     # ShareAcquireMode record_limit: exactly MaxRecords
RENEW_VERSION = 2                    # ShareFetch and ShareAcknowledge v2: KIP-1222's RENEW
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
SAVE_KEY, SAVE_INTERVAL_MS = "share-partition-starts", 1_000


class ShareApis:
    """The share-group handlers of ``apis`` (a kafkawire.broker.group_apis.GroupApis)."""

    def __init__(self, apis):
        self.apis = apis
        self.broker = apis.broker
        config = apis.broker.config
        self.bounds = GroupBounds.of(config)         # the broker's group.share.* settings
        self._effective_configs: dict[str, tuple] = {}   # group id -> (its configs, their effective values)
        self._intervals: dict[str, tuple] = {}           # the same for its own assignment interval
        self._broker_interval = BrokerAssignmentInterval("share", config)
        # Kafka's effective retry interval is at least offsets.commit.timeout.ms (GroupCoordinatorConfig)
        retry_ms = max(config.group_share_initialize_retry_interval_ms, config.offsets_commit_timeout_ms)
        self.groups = ShareGroups(apis.coordinator, topics=apis.consumer_apis.topics, timeouts=self.timeouts,
                                  on_member_gone=self.release_member, on_group_deleted=self.forget_group,
                                  on_initialize=self._initialize, max_size=config.group_share_max_size,
                                  initialize_retry_ms=retry_ms, assignment_interval=self.assignment_interval)
        self.sessions = ShareSessions(max_sessions=config.group_share_max_share_sessions)
        # (group id, topic id, partition) -> its SharePartition, on this broker as the leader
        self.partitions: dict[tuple, SharePartition] = {}
        self._starts: ShareStarts | None = None       # read at the first share fetch
        self._save_scheduled = False
        self.offsets = ShareOffsets(self)
        self.keeper = ShareStateKeeper(self)          # the state read from / written to the share coordinator
        self.metrics = ShareMetrics()                 # ShareGroupMetrics, SharePartitionMetrics (share_metrics)
        # the group coordinator's initialization of its groups' share-partitions
        self.initializer = ShareGroupInitializer(self.groups, self.keeper.persister)

    def _initialize(self, group_id: str, group_epoch: int, change: dict, adopt: bool) -> None:
        self.initializer.start(group_id, group_epoch, change, adopt)

    def handlers(self) -> dict[int, ApiHandler]:
        return {SHARE_GROUP_HEARTBEAT: ApiHandler(self.heartbeat, min_version=1, max_version=1),
                SHARE_GROUP_DESCRIBE: ApiHandler(self.describe, min_version=1, max_version=1),
                SHARE_FETCH: ApiHandler(self.share_fetch, min_version=1, max_version=2),
                SHARE_ACKNOWLEDGE: ApiHandler(self.share_acknowledge, min_version=1, max_version=2),
                DESCRIBE_OFFSETS: ApiHandler(self.describe_offsets, min_version=0, max_version=1),
                ALTER_OFFSETS: ApiHandler(self.alter_offsets, min_version=0, max_version=0),
                DELETE_OFFSETS: ApiHandler(self.delete_offsets, min_version=0, max_version=0)}

    def enabled(self) -> bool:
        image = self.broker.image()
        return image is not None and image.finalized_features.get(SHARE_VERSION, 0) >= 1

    def _configs(self, group_id: str) -> dict:
        image = self.broker.image()
        return (None if image is None else image.configs.get((GROUP_RESOURCE, group_id))) or {}

    def _effective(self, group_id: str) -> dict[str, int]:
        """The group's share configs clamped to the broker's bounds, else the broker's group.share.*
        settings (GroupConfig.evaluate), evaluated again only when its configs change (a clamped
        value is logged once, not at each request)."""
        configs = self._configs(group_id)
        if not configs:
            self._effective_configs.pop(group_id, None)
            return self.bounds.defaults()
        return cached_by_configs(self._effective_configs, group_id, configs,
                                 lambda: effective_share_configs(group_id, configs, self.bounds))

    def assignment_interval(self, group_id: str) -> int:
        """shareGroupAssignmentIntervalMs: the group's share.assignment.interval.ms clamped to the
        broker's bounds, else group.share.assignment.interval.ms (dynamic, else static)."""
        configs = self._configs(group_id)
        if "share.assignment.interval.ms" not in configs:
            self._intervals.pop(group_id, None)
            return self._broker_interval.interval(self.broker.image())
        return cached_by_configs(self._intervals, group_id, configs, lambda: effective_assignment_interval(
            "share", group_id, configs, self.bounds, 0))

    def timeouts(self, group_id: str) -> tuple[int, int]:
        """The group's (session timeout, heartbeat interval)."""
        values = self._effective(group_id)
        return values[SHARE_SESSION], values[SHARE_HEARTBEAT]

    def settings(self, group_id: str) -> ShareSettings:
        values = self._effective(group_id)
        return ShareSettings(record_lock_duration_ms=values[SHARE_LOCK_DURATION],
                             delivery_count_limit=values[SHARE_DELIVERY_LIMIT],
                             max_record_locks=values[SHARE_RECORD_LOCKS],
                             renew_acknowledge_enabled=self._configs(group_id).get(
                                 "share.renew.acknowledge.enable", "true").strip().lower() == "true")

    @property
    def starts(self) -> ShareStarts:
        """The start offsets checkpointed in the first log directory."""
        if self._starts is None:
            self._starts = ShareStarts(os.path.join(self.broker.config.log_dirs[0], FILE_NAME))
        return self._starts

    def changed(self) -> None:
        """An old checkpoint's entries were taken: what is left is written within a second."""
        if not self._save_scheduled:
            self._save_scheduled = True
            self.apis.timer.schedule(SAVE_KEY, SAVE_INTERVAL_MS, self.save)

    def save(self) -> None:
        self._save_scheduled = False
        if self._starts is None:             # no share fetch served: nothing to keep
            return
        self.starts.save()          # what is left of an old checkpoint (the share coordinator keeps the rest)

    async def delete_group(self, group_id: str) -> int:
        """DeleteGroups of a share group, in Kafka's order: its share-partitions moved to its
        deleting topics, their state deleted at the share coordinators (DeleteShareGroupState,
        batched; also of those this broker led for it), then the group's records tombstoned. A
        failed state deletion is the group's error (the group stays, its deletion asked again by
        the next DeleteGroups)."""
        code, keys = self.groups.start_delete(group_id)
        if code != Errors.NONE:
            return code
        image = self.broker.image()
        seen = [(t, i) for g, t, i in self.partitions if g == group_id
                and image is not None and t in image.topics_by_id]
        keys = list(dict.fromkeys(keys + seen))
        if keys:
            codes = await self.keeper.persister.delete_many(group_id, keys)
            failed = [c for c in codes.values() if c != Errors.NONE]
            if failed:
                return failed[0]
        return self.groups.delete(group_id)

    def forget_group(self, group_id: str) -> None:
        """A deleted group's share-partitions (their state deleted at the share coordinator
        already) are dropped here, with an old checkpoint's starts: the group made again under
        that id starts at share.auto.offset.reset."""
        for key in [k for k in self.partitions if k[0] == group_id]:
            del self.partitions[key]
            self.keeper.forget(key)
        for key in [k for k in self.sessions.sessions if k[0] == group_id]:
            del self.sessions.sessions[key]
        self.starts.forget(group_id)
        self.changed()

    def release_member(self, group_id: str, member_id: str) -> None:
        """A member gone from the group: its share session here ends and its records go back."""
        self.sessions.close(group_id, member_id)
        settings = self.settings(group_id)
        changes: dict = {}
        for key, sp in self.partitions.items():
            if key[0] == group_id:
                sp.release_member(member_id, settings, changes.setdefault(key, []))
        self.keeper.write_soon(list(changes), changes)

    # -- ShareGroupHeartbeat, ShareGroupDescribe --

    async def heartbeat(self, ctx, request):
        if not self.enabled():
            return ShareGroupHeartbeatResponse(error_code=Errors.UNSUPPORTED_VERSION)
        try:
            validate_heartbeat(request)          # before the coordinator is looked for, as Kafka's
        except GroupError as exc:
            return ShareGroupHeartbeatResponse(error_code=exc.code, error_message=exc.message)
        code = self.apis.store.coordinator_error(request.group_id)
        if code != Errors.NONE:
            return ShareGroupHeartbeatResponse(error_code=code)
        self.metrics.rebalances.observe(self.groups.rebalances)       # share-group-rebalance-rate's windows
        return self.groups.heartbeat(request, client_id=ctx.client_id or "", client_host=f"/{ctx.peer[0]}")

    async def describe(self, ctx, request):
        if not self.enabled():
            return ShareGroupDescribeResponse(groups=[DescribedGroup(
                group_id=g, error_code=Errors.UNSUPPORTED_VERSION, members=[]) for g in request.group_ids])
        groups = []
        for group_id in request.group_ids:
            code = self.apis.store.coordinator_error(group_id)
            if code != Errors.NONE:
                groups.append(DescribedGroup(group_id=group_id, error_code=code, members=[]))
                continue
            described = self.groups.describe(group_id)
            if described.error_code == Errors.NONE and request.include_authorized_operations:
                described.authorized_operations = GROUP_OPERATIONS
            groups.append(described)
        return ShareGroupDescribeResponse(groups=groups)

    # -- DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets --

    async def describe_offsets(self, ctx, request):
        groups = []
        for group in request.groups:
            if not self.enabled():
                groups.append(DescribedOffsets(group_id=group.group_id, error_code=Errors.UNSUPPORTED_VERSION))
            elif group.topics is not None and not group.topics:
                groups.append(DescribedOffsets(group_id=group.group_id))
            else:
                groups.append(await self.offsets.describe_group(group.group_id, None if group.topics is None else [
                    (t.topic_name, t.partitions) for t in group.topics]))
        return DescribeShareGroupOffsetsResponse(groups=groups)

    async def alter_offsets(self, ctx, request):
        if not self.enabled():
            return AlterShareGroupOffsetsResponse(error_code=Errors.UNSUPPORTED_VERSION,
                                                  error_message=Errors.UNSUPPORTED_VERSION.message)
        return await self.offsets.alter(request.group_id, request.topics)

    async def delete_offsets(self, ctx, request):
        if not self.enabled():
            return DeleteShareGroupOffsetsResponse(error_code=Errors.UNSUPPORTED_VERSION,
                                                   error_message=Errors.UNSUPPORTED_VERSION.message)
        return await self.offsets.delete(request.group_id, [t.topic_name for t in request.topics])

    # -- ShareFetch --

    async def share_fetch(self, ctx, request):
        v = ctx.api_version
        if not self.enabled():
            return ShareFetchResponse(error_code=Errors.UNSUPPORTED_VERSION, responses=[])
        refused = self._invalid_fetch(request, v)
        if refused is not None:
            return ShareFetchResponse(error_code=Errors.INVALID_REQUEST, error_message=refused, responses=[])
        group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
        wanted = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
        forgotten = [(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions]
        acks = [(t.topic_id, p.partition_index, p.acknowledgement_batches)
                for t in request.topics for p in t.partitions if p.acknowledgement_batches]
        if epoch == INITIAL_EPOCH and acks:
            return ShareFetchResponse(error_code=Errors.INVALID_REQUEST, responses=[],
                                      error_message="Acknowledge data present in initial fetch request.")
        try:
            session = self.sessions.open_or_advance(group_id, member_id, epoch, wanted, forgotten)
        except ShareSessionError as exc:
            return ShareFetchResponse(error_code=exc.code, error_message=exc.message, responses=[])
        settings = self.settings(group_id)
        hints = LeaderHints(self.broker, self.broker.image(), ctx.listener_name)
        may_read = topic_reader(self.broker, ctx)
        answers: dict[tuple, PartitionData] = {}
        failed = await self._load(group_id, session.partitions, settings, may_read)
        changes: dict = {}
        for topic_id, index, batches in acks:
            answer = answers.setdefault((topic_id, index), PartitionData(partition_index=index, records=b""))
            answer.acknowledge_error_code = self._acknowledge(
                group_id, member_id, topic_id, index, batches, settings, v, v >= RENEW_VERSION and request.is_renew_ack,
                may_read, changes.setdefault((group_id, topic_id, index), []))
        # acknowledgements are answered once written to the share coordinator (Kafka's SharePartition)
        written = await self.keeper.write_changes(changes)
        for (_, topic_id, index), code in written.items():
            if code != Errors.NONE and answers[(topic_id, index)].acknowledge_error_code == Errors.NONE:
                answers[(topic_id, index)].acknowledge_error_code = code
        for answer in (answers[(t, i)] for t, i, _ in acks):
            answer.acknowledge_error_message = message_of(answer.acknowledge_error_code)
        self._acknowledged({(t, i): (answers[(t, i)].acknowledge_error_code, batches) for t, i, batches in acks})
        if epoch == FINAL_EPOCH:
            self._close(group_id, member_id, settings)
        elif not (v >= RENEW_VERSION and request.is_renew_ack):
            await self._fetch_into(answers, session, request, settings, may_read, failed)
            self.keeper.write_soon([(group_id, t, i) for t, i in session.partitions])
            mark_topics(self.broker.topic_stats, [(self._name(t), answers[(t, i)].error_code)
                                                  for t, i in session.partitions], TOTAL_SHARE_FETCH, FAILED_SHARE_FETCH)
        full = epoch == INITIAL_EPOCH
        acked = {(t, i) for t, i, _ in acks}
        responses: dict = {}
        for (topic_id, index), answer in answers.items():
            if full or answer.error_code or answer.acquired_records or (topic_id, index) in acked:
                if answer.error_code in (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH):
                    leader, leader_epoch = hints.current_leader(self._name(topic_id), index)
                    answer.current_leader = LeaderIdAndEpoch(leader_id=leader, leader_epoch=leader_epoch)
                responses.setdefault(topic_id, []).append(answer)
        return ShareFetchResponse(
            error_code=Errors.NONE, acquisition_lock_timeout_ms=settings.record_lock_duration_ms,
            responses=[ShareFetchableTopicResponse(topic_id=t, partitions=ps) for t, ps in responses.items()],
            node_endpoints=[NodeEndpoint(node_id=n, host=h, port=p, rack=r) for n, h, p, r in hints.endpoints()])

    @staticmethod
    def _invalid_fetch(request, version: int) -> str | None:
        if request.group_id is None:
            return "Invalid group id in the request."
        if not request.member_id or len(request.member_id) > 36:
            return "Invalid member id in the request."
        if version >= RENEW_VERSION and request.is_renew_ack and (
                request.max_bytes or request.min_bytes or request.max_records or request.max_wait_ms):
            return "maxBytes, minBytes, maxRecords and maxWaitMs must be set to 0 if isRenewAck is true."
        if request.share_session_epoch == FINAL_EPOCH and request.topics and any(
                not p.acknowledgement_batches for t in request.topics for p in t.partitions):
            return "Final share fetch request must not fetch."
        return None

    def _name(self, topic_id) -> str | None:
        image = self.broker.image()
        topic = None if image is None else image.topics_by_id.get(topic_id)
        return None if topic is None else topic.name

    def _close(self, group_id: str, member_id: str, settings: ShareSettings) -> None:
        """The session ends: the member's records acquired here go back (Kafka's releaseSession)."""
        session = self.sessions.close(group_id, member_id)
        if session is None:
            return
        changes: dict = {}
        for topic_id, index in session.partitions:
            sp = self.partitions.get((group_id, topic_id, index))
            if sp is not None:
                sp.release_member(member_id, settings, changes.setdefault((group_id, topic_id, index), []))
        self.keeper.write_soon(list(changes), changes)

    async def _load(self, group_id: str, partitions, settings: ShareSettings, may_read) -> dict:
        """Read the state of the share-partitions led here that this broker has none of (or
        from an older leader epoch) from the share coordinator: {(topic id, index): error} of
        those that failed (their fetch answers that error)."""
        loads = {}
        for topic_id, index in list(partitions):
            code, partition = self._led(topic_id, index, may_read)
            key = (group_id, topic_id, index)
            if code == Errors.NONE and self.keeper.needs_load(key, partition):
                loads[(topic_id, index)] = self._timed_load(self.keeper.load(key, partition, settings))
        codes = await asyncio.gather(*loads.values())          # the share-partitions read together
        return {where: code for where, code in zip(loads, codes) if code != Errors.NONE}

    async def _timed_load(self, load) -> int:
        started = time.monotonic()
        code = await load
        self.metrics.record_load(started)              # PartitionLoadTimeMs, errors included as in Kafka
        return code

    async def _fetch_into(self, answers: dict, session, request, settings: ShareSettings, may_read,
                          failed: dict) -> None:
        """Acquire records in the session's partitions, waiting for appends while none is found."""
        started = time.monotonic()
        deadline = started + min(max(request.max_wait_ms, 0), MAX_WAIT_CAP_MS) / 1000
        max_records = request.max_records if request.max_records > 0 else 500
        while True:
            seen = self.broker.appends
            found = self._fetch_once(answers, session, request, max_records, settings, may_read, failed)
            remaining = deadline - time.monotonic()
            if found or remaining <= 0 or not session.partitions:
                if session.partitions:
                    self.metrics.record_fetch(session.group_id, started, sum(
                        1 for key in session.partitions if answers[key].acquired_records), len(session.partitions))
                return
            await self.broker.wait_for_appends(seen, remaining)

    def _fetch_once(self, answers: dict, session, request, max_records: int, settings: ShareSettings,
                    may_read, failed: dict) -> bool:
        budget = max(request.max_bytes, 0) if request.max_bytes else self.broker.config.fetch_max_bytes
        budget = min(budget, self.broker.config.fetch_max_bytes)
        found = False
        now = int(time.time() * 1000)
        strict = getattr(request, "share_acquire_mode", 0) == RECORD_LIMIT       # v2 (KIP-1206)
        for topic_id, index in session.partitions:
            answer = answers.setdefault((topic_id, index), PartitionData(partition_index=index, records=b""))
            code, partition = self._led(topic_id, index, may_read)
            answer.error_code = failed.get((topic_id, index), code)
            answer.error_message = message_of(answer.error_code)
            if answer.error_code != Errors.NONE or max_records <= 0 or budget <= 0 or answer.acquired_records:
                continue                  # (the first partition with records may pass max_bytes by a batch)
            records, acquired = self._acquire(session, partition, topic_id, index, budget, max_records, now, settings,
                                              strict)
            if acquired:
                found = True
                answer.records = records
                answer.acquired_records = [AcquiredRecords(first_offset=f, last_offset=la, delivery_count=c)
                                           for f, la, c in acquired]
                max_records -= sum(la - f + 1 for f, la, _ in acquired)
                budget -= len(records)
        return found

    def _led(self, topic_id, index: int, may_read):
        """(NONE, the partition) when this broker leads it and the principal may READ its topic."""
        image = self.broker.image()
        topic = None if image is None else image.topics_by_id.get(topic_id)
        if topic is None:
            return Errors.UNKNOWN_TOPIC_ID, None
        if not may_read(topic.name):
            return Errors.TOPIC_AUTHORIZATION_FAILED, None
        registration = topic.partitions.get(index)
        if registration is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, None
        partition = self.broker.partitions.get((topic.name, index))
        if partition is None:
            return with_message(Errors.NOT_LEADER_OR_FOLLOWER, not_hosted(topic.name, index)), None
        if registration.leader != self.broker.node_id:
            return Errors.NOT_LEADER_OR_FOLLOWER, None
        return Errors.NONE, partition

    def initial_start(self, key, partition) -> tuple[int, int]:
        """(error code, offset): where a share-partition without a start offset at the share
        coordinator starts: its start checkpointed by an older kafkawire (read once), else
        share.auto.offset.reset, as Kafka's SharePartition resolves it: ``latest`` the high
        watermark, ``earliest`` the log start, ``by_duration:`` the first offset whose timestamp
        is at least now minus the duration (ListOffsets by timestamp; OFFSET_NOT_AVAILABLE when no
        record is that recent, as Kafka's OffsetNotAvailableException: asked again at the next fetch)."""
        start = self.starts.take(key)
        if start is not None:
            self.changed()
            return Errors.NONE, start
        reset = self._configs(key[0]).get("share.auto.offset.reset") or "latest"
        if reset == "latest":
            return Errors.NONE, partition.high_watermark()
        duration_ns = by_duration_ns(reset)
        if duration_ns is None:
            return Errors.NONE, partition.log.log_start_offset
        timestamp = (time.time_ns() - duration_ns) // 1_000_000
        found = partition.log.find_offset_by_timestamp(timestamp)
        if found is None:                # ShareFetchUtils.offsetForTimestamp's message
            return with_message(Errors.OFFSET_NOT_AVAILABLE, f"Offset for timestamp {timestamp} not found for topic "
                                f"partition: {uuid_to_kafka_string(key[1])}:{partition.topic}-{key[2]}"), -1
        return Errors.NONE, found[0]

    def _share_partition(self, group_id: str, topic_id, index: int, partition) -> SharePartition | None:
        """The share-partition as read from the share coordinator (None: not read, or of an older
        leader epoch: ``_load`` failed for it)."""
        sp = self.partitions.get((group_id, topic_id, index))
        if sp is None or sp.leader_epoch != partition.leader_epoch:
            return None
        sp.move_start(partition.log.log_start_offset)
        return sp

    def _acquire(self, session, partition, topic_id, index: int, budget: int, max_records: int, now: int,
                 settings: ShareSettings, strict: bool):
        sp = self._share_partition(session.group_id, topic_id, index, partition)
        if sp is None:
            return b"", []
        first = sp.first_available(now, settings)
        committed = self._configs(session.group_id).get("share.isolation.level") == "read_committed"
        if first >= (partition.last_stable_offset() if committed else partition.high_watermark()):
            return b"", []
        aborted = ()
        if committed:                   # below the last stable offset, aborted transactions archived
            data, aborted = partition.read_committed(first, max(budget, 1), min_one_batch=True)
        else:
            data = partition.read(first, max(budget, 1), min_one_batch=True)
        bounds = list(batch_bounds(data))
        acquired = sp.acquire(session.member_id, deliverable(bounds, aborted), max_records=max_records, now_ms=now,
                              settings=settings, strict=strict)
        if not acquired:
            return b"", []
        self.metrics.record_acquired((session.group_id, topic_id, index), acquired)
        low, high = acquired[0][0], acquired[-1][1]
        kept = [(b.start, b.end) for b in bounds if b.last >= low and b.first <= high]
        return data[kept[0][0]:kept[-1][1]], acquired

    # -- acknowledging --

    def _acknowledge(self, group_id: str, member_id: str, topic_id, index: int, batches, settings: ShareSettings,
                     version: int, renew: bool, may_read, changed: list) -> int:
        """Apply one partition's acknowledgement batches as one transition (its offsets appended
        to ``changed``, committed or rolled back by its write); a batch refused undoes the
        earlier ones, as Kafka's SharePartition.acknowledge does."""
        code, partition = self._led(topic_id, index, may_read)
        if code != Errors.NONE:
            return code
        sp = self.partitions.get((group_id, topic_id, index))
        if sp is None or sp.leader_epoch != partition.leader_epoch:      # not served here: as Kafka's cache miss
            return with_message(Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION.message)
        now = int(time.time() * 1000)
        for batch in batches:
            code = sp.acknowledge(member_id, batch.first_offset, batch.last_offset, list(batch.acknowledge_types),
                                  now_ms=now, settings=settings, renew_allowed=version >= RENEW_VERSION and renew,
                                  changed=changed)
            if code != Errors.NONE:
                sp.rollback(changed, now, settings)
                changed.clear()
                return code
        return Errors.NONE

    def _acknowledged(self, outcomes: dict) -> None:
        """Acknowledgements answered: {(topic id, partition): (error code, batches)} counted in
        RecordAcknowledgementsPerSec (the written ones) and the topics' share acknowledgement meters."""
        for code, batches in outcomes.values():
            if code == Errors.NONE:
                self.metrics.record_acknowledgements(batches)
        mark_topics(self.broker.topic_stats, [(self._name(t), code) for (t, _), (code, _) in outcomes.items()],
                    TOTAL_SHARE_ACK, FAILED_SHARE_ACK)

    async def share_acknowledge(self, ctx, request):
        v = ctx.api_version
        if not self.enabled():
            return ShareAcknowledgeResponse(error_code=Errors.UNSUPPORTED_VERSION, responses=[])
        if request.group_id is None or not request.member_id or len(request.member_id) > 36:
            return ShareAcknowledgeResponse(error_code=Errors.INVALID_REQUEST, responses=[])
        group_id, member_id = request.group_id, request.member_id
        try:
            self.sessions.check_epoch(group_id, member_id, request.share_session_epoch)
        except ShareSessionError as exc:
            return ShareAcknowledgeResponse(error_code=exc.code, error_message=exc.message, responses=[])
        settings = self.settings(group_id)
        hints = LeaderHints(self.broker, self.broker.image(), ctx.listener_name)
        renew = v >= RENEW_VERSION and request.is_renew_ack
        may_read = topic_reader(self.broker, ctx)
        changes: dict = {}
        codes = {(t.topic_id, p.partition_index): self._acknowledge(
            group_id, member_id, t.topic_id, p.partition_index, p.acknowledgement_batches, settings, v, renew, may_read,
            changes.setdefault((group_id, t.topic_id, p.partition_index), []))
            for t in request.topics for p in t.partitions}
        # answered once written to the share coordinator (Kafka's SharePartition)
        for (_, topic_id, index), code in (await self.keeper.write_changes(changes)).items():
            if code != Errors.NONE and codes[(topic_id, index)] == Errors.NONE:
                codes[(topic_id, index)] = code
        self._acknowledged({(t.topic_id, p.partition_index): (codes[(t.topic_id, p.partition_index)],
                                                              p.acknowledgement_batches)
                            for t in request.topics for p in t.partitions})
        responses = []
        for topic in request.topics:
            partitions = []
            for p in topic.partitions:
                code = codes[(topic.topic_id, p.partition_index)]
                answer = AckPartition(partition_index=p.partition_index, error_code=code,
                                      error_message=message_of(code))
                if code == Errors.NOT_LEADER_OR_FOLLOWER:
                    leader, leader_epoch = hints.current_leader(self._name(topic.topic_id), p.partition_index)
                    answer.current_leader = AckLeader(leader_id=leader, leader_epoch=leader_epoch)
                partitions.append(answer)
            responses.append(ShareAcknowledgeTopicResponse(topic_id=topic.topic_id, partitions=partitions))
        if request.share_session_epoch == FINAL_EPOCH:
            self._close(group_id, member_id, settings)
        response = ShareAcknowledgeResponse(
            error_code=Errors.NONE, responses=responses,
            node_endpoints=[AckEndpoint(node_id=n, host=h, port=p, rack=r) for n, h, p, r in hints.endpoints()])
        if v >= RENEW_VERSION:
            response.acquisition_lock_timeout_ms = settings.record_lock_duration_ms
        return response
