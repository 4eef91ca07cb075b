"""OffsetCommit (8, v2-10), OffsetFetch (9, v1-10) and OffsetDelete (47, v0) on the broker, as Kafka 4.3.1's KafkaApis
answers them: topics resolved against the metadata first (by name; by id from v10, the response
then naming topics by id), unknown ones refused per partition, the rest handed to the group
coordinator (kafkawire.broker.group_offsets), whose refusal of the whole commit (an unknown
member, an old generation, a rebalance in progress) is every partition's error.

OffsetFetch v8+ asks for several groups at once; a partition without a committed offset is
answered with offset -1, leader epoch -1 and empty metadata, as Kafka answers it. With
``require_stable`` (v7+) each group's answer, read from the latest state, waits until the writes
to its partition before it are committed (Kafka's write event without records): NOT_COORDINATOR
for the group after ``offsets.commit.timeout.ms``.
"""
from __future__ import annotations

from kafkawire.messages.offset_commit_response import (OffsetCommitResponse, OffsetCommitResponsePartition,
                                                       OffsetCommitResponseTopic)
from kafkawire.messages.offset_delete_response import (OffsetDeleteResponse, OffsetDeleteResponsePartition,
                                                       OffsetDeleteResponseTopic)
from kafkawire.messages.offset_fetch_response import (OffsetFetchResponse, OffsetFetchResponseGroup,
                                                      OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
                                                      OffsetFetchResponseTopic, OffsetFetchResponseTopics)
from kafkawire.protocol.error_codes import Errors

from . import consumer_admin, streams_admin
from .coordinator_acks import wait_for_log_ends
from .group_offsets import CommitRefused
from .group_records import ZERO_UUID

__all__ = ["OffsetApis"]


class OffsetApis:
    """OffsetCommit and OffsetFetch for ``apis`` (a kafkawire.broker.group_apis.GroupApis)."""

    def __init__(self, apis):
        self.apis = apis

    def _topic(self, image, name: str, topic_id, by_id: bool):
        if image is None:
            return None
        return image.topics_by_id.get(topic_id) if by_id else image.topics_by_name.get(name)

    # -- OffsetCommit --

    async def offset_commit(self, ctx, request):
        v = ctx.api_version
        by_id = v >= 10
        image = self.apis.broker.image()
        codes: dict = {}          # (request topic index, partition) -> code, for the refused ones
        wanted = []
        for i, t in enumerate(request.topics):
            topic = self._topic(image, t.name, t.topic_id, by_id)
            for p in t.partitions:
                if topic is None:
                    codes[(i, p.partition_index)] = Errors.UNKNOWN_TOPIC_ID if by_id else \
                        Errors.UNKNOWN_TOPIC_OR_PARTITION
                elif p.partition_index not in topic.partitions:
                    codes[(i, p.partition_index)] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    wanted.append((i, topic, p))
        if wanted:
            codes.update(self._commit(request, v, wanted))
        return OffsetCommitResponse(topics=[OffsetCommitResponseTopic(
            name=t.name, topic_id=t.topic_id, partitions=[OffsetCommitResponsePartition(
                partition_index=p.partition_index, error_code=codes[(i, p.partition_index)]) for p in t.partitions])
            for i, t in enumerate(request.topics)])

    def _commit(self, request, version: int, wanted: list) -> dict:
        group_id = request.group_id
        code = self.apis.store.coordinator_error(group_id) if group_id else Errors.INVALID_GROUP_ID
        check = None
        if code == Errors.NONE:
            try:
                check = self.apis.offsets.validate_commit(group_id, request.generation_id_or_member_epoch,
                                                          request.member_id, request.group_instance_id, version)
            except CommitRefused as exc:
                code = exc.code
        if code != Errors.NONE:
            return {(i, p.partition_index): code for i, _, p in wanted}
        if check is not None:       # a consumer group member committing with an older epoch: all or nothing
            code = next((c for _, topic, p in wanted if (c := check(topic.id, p.partition_index)) != Errors.NONE),
                        Errors.NONE)
            if code != Errors.NONE:
                return {(i, p.partition_index): code for i, _, p in wanted}
        stored = self.apis.offsets.commit(group_id, [
            (topic.name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata,
             topic.id if version >= 10 else ZERO_UUID)
            for _, topic, p in wanted])
        return {(i, p.partition_index): stored[(topic.name, p.partition_index)] for i, topic, p in wanted}

    # -- OffsetFetch --

    async def offset_fetch(self, ctx, request):
        v = ctx.api_version
        if v >= 8:
            groups = [self._fetch_group(g, v, request) for g in request.groups]
            if request.require_stable:
                codes = await self._committed([g.group_id if g.error_code == Errors.NONE else None for g in groups])
                groups = [g if code == Errors.NONE else OffsetFetchResponseGroup(group_id=g.group_id, error_code=code,
                                                                                 topics=[])
                          for g, code in zip(groups, codes)]
            return OffsetFetchResponse(groups=groups)
        topics = None if request.topics is None else [
            _Wanted(t.name, None, t.partition_indexes) for t in request.topics]
        code, answered = self._fetch(request.group_id, topics, v, request.require_stable)
        self._mark_unstable(request, request.group_id, answered)
        if request.require_stable and code == Errors.NONE:
            code, = await self._committed([request.group_id])
            if code != Errors.NONE:
                return OffsetFetchResponse(error_code=code, topics=[])
        if v < 2 and code != Errors.NONE:            # no top-level error code before v2
            for _, partitions in answered:
                for p in partitions:
                    p.error_code = code
            code = Errors.NONE
        return OffsetFetchResponse(error_code=code, topics=[OffsetFetchResponseTopic(name=name, partitions=[
            OffsetFetchResponsePartition(partition_index=p.partition_index, committed_offset=p.committed_offset,
                                         committed_leader_epoch=p.committed_leader_epoch, metadata=p.metadata,
                                         error_code=p.error_code) for p in partitions])
            for (name, _), partitions in answered])

    def _fetch_group(self, g, version: int, request) -> OffsetFetchResponseGroup:
        consumer_group = self.apis.coordinator.consumer_groups.get(g.group_id)
        streams_group = self.apis.coordinator.streams_groups.get(g.group_id)
        if version >= 9 and streams_group is not None and \
                self.apis.store.coordinator_error(g.group_id) == Errors.NONE:
            code = streams_admin.fetch_error(streams_group, g.member_id, g.member_epoch)
            if code != Errors.NONE:
                return OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[])
        if version >= 9 and consumer_group is not None and self.apis.store.coordinator_error(g.group_id) == Errors.NONE:
            code = consumer_admin.fetch_error(consumer_group, g.member_id, g.member_epoch)
            if code != Errors.NONE:
                return OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[])
        topics = None if g.topics is None else [_Wanted(t.name, t.topic_id, t.partition_indexes) for t in g.topics]
        code, answered = self._fetch(g.group_id, topics, version, request.require_stable)
        self._mark_unstable(request, g.group_id, answered)
        return OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[
            OffsetFetchResponseTopics(name=name if version < 10 else "", topic_id=topic_id or ZERO_UUID,
                                      partitions=partitions) for (name, topic_id), partitions in answered])

    def _fetch(self, group_id: str, topics: list | None, version: int, require_stable: bool):
        """(group error, [((name, topic id), [partitions])]) for one group: with ``require_stable``
        the latest offsets, else those at the high watermark (GroupOffsets.fetch)."""
        code = self.apis.store.coordinator_error(group_id) if group_id else Errors.INVALID_GROUP_ID
        if code != Errors.NONE:
            return code, [((t.name, t.topic_id), []) for t in topics or []] if version < 8 else []
        image = self.apis.broker.image()
        by_id = version >= 10
        if topics is None:
            code, found = self.apis.offsets.fetch(group_id, None, latest=require_stable)
            grouped: dict = {}
            for name, partition, value in found:
                topic = None if image is None else image.topics_by_name.get(name)
                if by_id and topic is None:
                    continue                       # a deleted topic has no id to name it by
                key = (name, topic.id if topic is not None else None)
                grouped.setdefault(key, []).append(_partition(partition, value))
            return code, list(grouped.items())
        answered = []
        for t in topics:
            topic = self._topic(image, t.name, t.topic_id, by_id)
            if by_id and topic is None:
                answered.append(((t.name, t.topic_id), [_partition(p, None, Errors.UNKNOWN_TOPIC_ID)
                                                        for p in t.partitions]))
                continue
            name = topic.name if topic is not None else t.name
            code, found = self.apis.offsets.fetch(group_id, [(name, p) for p in t.partitions], latest=require_stable)
            answered.append(((name, t.topic_id), [_partition(p, value) for _, p, value in found]))
        return code, answered


    async def _committed(self, group_ids: list) -> list[int]:
        """A stable OffsetFetch is a write without records in Kafka's runtime: each group's answer
        (computed first, from the latest state) is given once the writes before it to the group's
        partition are committed (its high watermark at its log end as it is now), within
        ``offsets.commit.timeout.ms``; else NOT_COORDINATOR for that group, which
        handleOffsetFetchException answers for a timeout (older consumers retry no other error)
        and for a partition led elsewhere. None in ``group_ids``: no wait (an answered error)."""
        store = self.apis.store
        partitions = [None if group_id is None else store.led_partition(group_id) for group_id in group_ids]
        codes = await wait_for_log_ends(self.apis.broker, partitions, self.apis.broker.config.offsets_commit_timeout_ms)
        return [Errors.NONE if code == Errors.NONE else Errors.NOT_COORDINATOR for code in codes]

    def _mark_unstable(self, request, group_id: str, answered: list) -> None:
        """require_stable (v7+): a partition with a transactional offset still pending is
        UNSTABLE_OFFSET_COMMIT (offset -1), as Kafka's fetchOffsets answers it."""
        pending = self.apis.store.txn_offsets
        if pending is None or not getattr(request, "require_stable", False):
            return
        for (name, _), partitions in answered:
            for p in partitions:
                if pending.is_pending(group_id, name, p.partition_index):
                    p.committed_offset, p.committed_leader_epoch, p.metadata = -1, -1, ""
                    p.error_code = Errors.UNSTABLE_OFFSET_COMMIT

    # -- OffsetDelete --

    async def offset_delete(self, ctx, request):
        """Unknown topics and partitions are UNKNOWN_TOPIC_OR_PARTITION, the rest go to the group."""
        image = self.apis.broker.image()
        codes, known = {}, []
        for t in request.topics:
            topic = self._topic(image, t.name, None, False)
            asked = []
            for p in t.partitions:
                if topic is None or p.partition_index not in topic.partitions:
                    codes[(t.name, p.partition_index)] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    asked.append(p.partition_index)
            if asked:
                known.append((t.name, asked))
        group_id = request.group_id
        code = self.apis.store.coordinator_error(group_id) if group_id else Errors.INVALID_GROUP_ID
        if code == Errors.NONE:
            code, deleted = self.apis.offsets.delete_offsets(group_id, known)
            codes.update(deleted)
        if code != Errors.NONE:
            return OffsetDeleteResponse(error_code=code, topics=[])
        return OffsetDeleteResponse(error_code=Errors.NONE, topics=[OffsetDeleteResponseTopic(
            name=t.name, partitions=[OffsetDeleteResponsePartition(
                partition_index=p.partition_index, error_code=codes[(t.name, p.partition_index)])
                for p in t.partitions]) for t in request.topics])


class _Wanted:
    __slots__ = ("name", "topic_id", "partitions")

    def __init__(self, name, topic_id, partitions):
        self.name, self.topic_id, self.partitions = name, topic_id, partitions


def _partition(index: int, value, code: int = Errors.NONE) -> OffsetFetchResponsePartitions:
    if value is None:
        return OffsetFetchResponsePartitions(partition_index=index, committed_offset=-1, committed_leader_epoch=-1,
                                             metadata="", error_code=code)
    return OffsetFetchResponsePartitions(partition_index=index, committed_offset=value.offset,
                                         committed_leader_epoch=value.leader_epoch, metadata=value.metadata,
                                         error_code=code)
