"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92)
on the group coordinator, as Kafka 4.3.1's KafkaApis and GroupCoordinatorService serve them
(``kafka-share-groups --describe``, ``--reset-offsets``, ``--delete-offsets``); their ACL checks
are in kafkawire.broker.share_authorization.

As Kafka's group coordinator, it reads and writes a share-partition's start offset through the
share coordinator (kafkawire.broker.share_persister), wherever the partition is led:

- Describe: ReadShareGroupStateSummary's start offset and leader epoch, -1 (Kafka's
  "uninitialized") for a share-partition without state or whose summary failed; the lag (the
  leader's latest offset - start offset - records acknowledged or archived above it, Kafka's
  formula), the latest offsets asked of the leaders with ListOffsets (kafkawire.broker.share_lag),
  a partition whose latest offset failed answered with that error.
  Without topics: the share-partitions the group coordinator has initialized (its
  ShareGroupStatePartitionMetadata, kafkawire.broker.share_group_init).
- Alter: the group must be Empty (NON_EMPTY_GROUP, as throwIfShareGroupIsNotEmpty; one that
  does not exist is made, Empty, as getOrMaybeCreateShareGroup makes it); each share-partition is
  initialized again at the given offset (a negative one as it is, as Kafka passes it on) with the next state epoch
  (InitializeShareGroupState), which fences its leader's older state (FENCED_STATE_EPOCH at its
  next write: it reads the new state), and recorded as initialized.
- Delete: the group must exist (GROUP_ID_NOT_FOUND) and be Empty (NON_EMPTY_GROUP, as
  validateDeleteGroup); each partition of the topic with state has it deleted
  (DeleteShareGroupState: the next fetch starts at ``share.auto.offset.reset``), the topic moved
  to the group's deleting topics first and dropped from them once deleted, as Kafka's
  coordinator records it; a topic without any is UNKNOWN_TOPIC_OR_PARTITION ("There is no
  offset information to delete.").
"""
from __future__ import annotations

from kafkawire.messages import alter_share_group_offsets_response as alter
from kafkawire.messages import delete_share_group_offsets_response as delete
from kafkawire.messages import describe_share_group_offsets_response as describe
from kafkawire.protocol.error_codes import Errors

from .consumer_coordinator import GroupError
from .share_lag import LatestOffsets
from .share_records import state_partitions_record

__all__ = ["ShareOffsets", "UNINITIALIZED"]

UNINITIALIZED = -1           # PartitionFactory.UNINITIALIZED_START_OFFSET and UNINITIALIZED_LAG
NO_OFFSETS = "There is no offset information to delete."


class ShareOffsets:
    """The offsets handlers of ``share`` (a kafkawire.broker.share_apis.ShareApis)."""

    def __init__(self, share):
        self.share = share
        self.broker = share.broker
        self._latest: LatestOffsets | None = None

    @property
    def latest(self) -> LatestOffsets:
        """The leaders' latest offsets, asked over the persister's inter-broker connections."""
        if self._latest is None:
            self._latest = LatestOffsets(self.broker, self.share.keeper.persister.peers)
        return self._latest

    # -- helpers --

    def _group_error(self, group_id: str, *, must_exist: bool):
        """(code, message) refusing the request for the group, or None."""
        code = self.share.apis.store.coordinator_error(group_id)
        if code != Errors.NONE:
            return code, Errors(code).message
        groups = self.share.groups
        group = groups.groups.get(group_id)
        if group is None:
            try:
                groups._check_type(group_id)
            except GroupError as exc:             # a group of another type has the id
                return exc.code, exc.message
            return (Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.") if must_exist else None
        if group.members:
            return Errors.NON_EMPTY_GROUP, Errors.NON_EMPTY_GROUP.message
        return None

    # -- DescribeShareGroupOffsets --

    async def describe_group(self, group_id: str, topics) -> describe.DescribeShareGroupOffsetsResponseGroup:
        """``topics``: [(name, [partition])], or None for every share-partition of the group known here."""
        image = self.broker.image()
        if image is None:
            return describe.DescribeShareGroupOffsetsResponseGroup(
                group_id=group_id, error_code=Errors.COORDINATOR_NOT_AVAILABLE,
                error_message=Errors.COORDINATOR_NOT_AVAILABLE.message)
        code = self.share.apis.store.coordinator_error(group_id)
        if code != Errors.NONE:
            return describe.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, error_code=code,
                                                                   error_message=Errors(code).message)
        if topics is None:
            topics = self._known(group_id, image)
        described, missing, wanted = [], [], []
        for name, partitions in topics:
            topic = image.topics_by_name.get(name)
            if topic is None:        # as Kafka: no offset information, not an error; after the others
                missing.append(describe.DescribeShareGroupOffsetsResponseTopic(topic_name=name, partitions=[
                    describe.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=UNINITIALIZED)
                    for p in partitions]))
                continue
            described.append((topic, list(partitions)))
            wanted += [(topic.id, p) for p in partitions]
        summaries = await self.share.keeper.persister.summary_many(group_id, wanted) if wanted else {}
        lagging = [(topic.name, p) for topic, ps in described for p in ps if _has_lag(summaries[(topic.id, p)])]
        latest = await self.latest.of(image, lagging) if lagging else {}
        answered = [describe.DescribeShareGroupOffsetsResponseTopic(
            topic_name=topic.name, topic_id=topic.id,
            partitions=[_described(p, summaries[(topic.id, p)], latest.get((topic.name, p))) for p in ps])
            for topic, ps in described]
        return describe.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, topics=answered + missing)

    def _known(self, group_id: str, image) -> list:
        """initializedShareGroupPartitions: the initialized share-partitions of topics that exist."""
        group = self.share.groups.groups.get(group_id)
        by_topic: dict[str, list] = {}
        for topic_id, (_, partitions) in ({} if group is None else group.initialized).items():
            topic = image.topics_by_id.get(topic_id)
            if topic is not None:
                by_topic[topic.name] = [p for p in partitions if p in topic.partitions]
        return [(name, sorted(ps)) for name, ps in sorted(by_topic.items())]

    def _record(self, group_id: str, initialized=None, deleting=None, *, create: bool = False) -> None:
        """Write the group's ShareGroupStatePartitionMetadata with ``initialized`` ({topic id:
        (name, partitions)}) and ``deleting`` ({topic id: name}) in place of its own. A group
        that does not exist has none: nothing written, unless ``create`` (the record makes it, Empty)."""
        group = self.share.groups.groups.get(group_id)
        if group is None and not create:
            return
        initializing, own_initialized, own_deleting = ({}, {}, {}) if group is None else \
            (group.initializing, group.initialized, group.deleting)
        self.share.groups.write(group_id, [state_partitions_record(
            group_id, initializing, own_initialized if initialized is None else initialized,
            own_deleting if deleting is None else deleting)])

    # -- AlterShareGroupOffsets --

    async def alter(self, group_id: str, topics) -> alter.AlterShareGroupOffsetsResponse:
        """``topics``: the request's AlterShareGroupOffsetsRequestTopic list (those authorized)."""
        image = self.broker.image()
        if image is None:
            return _alter_error(Errors.COORDINATOR_NOT_AVAILABLE)
        if not group_id:
            return _alter_error(Errors.INVALID_GROUP_ID)
        refused = self._group_error(group_id, must_exist=False)
        if refused is not None:
            return _alter_error(*refused)
        responses = []
        for request_topic in topics:
            topic = image.topics_by_name.get(request_topic.topic_name)
            answer = alter.AlterShareGroupOffsetsResponseTopic(topic_name=request_topic.topic_name)
            if topic is not None:
                answer.topic_id = topic.id
            for p in request_topic.partitions:
                code, message = await self._alter_partition(group_id, topic, p.partition_index, p.start_offset)
                answer.partitions.append(alter.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=code, error_message=message))
            responses.append(answer)
            self._record_altered(group_id, topic, answer)
        self.share.changed()
        return alter.AlterShareGroupOffsetsResponse(responses=responses)

    def _record_altered(self, group_id: str, topic, answer) -> None:
        """The altered share-partitions are initialized ones now."""
        altered = {p.partition_index for p in answer.partitions if p.error_code == Errors.NONE}
        group = self.share.groups.groups.get(group_id)
        if topic is None or not altered:
            return
        initialized = {} if group is None else dict(group.initialized)
        initialized[topic.id] = (topic.name, initialized.get(topic.id, ("", frozenset()))[1] | altered)
        try:
            # a group that does not exist is made, Empty (getOrMaybeCreateShareGroup), by this record
            self._record(group_id, initialized=initialized, create=True)
        except GroupError as exc:
            for p in answer.partitions:
                if p.partition_index in altered:
                    p.error_code, p.error_message = exc.code, Errors.for_code(exc.code).message

    async def _alter_partition(self, group_id: str, topic, index: int, start: int):
        if topic is None or index not in topic.partitions:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION.message
        # as it is, as Kafka's coordinator passes it on (-1: share.auto.offset.reset; below the log
        # start: the leader moves it to the log start; past the log end: the records before it are
        # never delivered)
        persister = self.share.keeper.persister
        code, summary = await persister.summary(group_id, topic.id, index)
        if code == Errors.NONE:
            code = await persister.initialize(group_id, topic.id, index, summary.state_epoch + 1, start)
        if code != Errors.NONE:
            return code, Errors.for_code(code).message
        self.share.partitions.pop((group_id, topic.id, index), None)        # read again at the next fetch
        self.share.keeper.known.add((group_id, topic.id, index))
        return Errors.NONE, None

    # -- DeleteShareGroupOffsets --

    async def delete(self, group_id: str, topic_names: list) -> delete.DeleteShareGroupOffsetsResponse:
        image = self.broker.image()
        if image is None:
            return _delete_error(Errors.COORDINATOR_NOT_AVAILABLE)
        if not group_id:
            return _delete_error(Errors.INVALID_GROUP_ID)
        refused = self._group_error(group_id, must_exist=True)
        if refused is not None:
            return _delete_error(*refused)
        responses = []
        for name in topic_names:
            topic = image.topics_by_name.get(name)
            if topic is None:
                responses.append(delete.DeleteShareGroupOffsetsResponseTopic(
                    topic_name=name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=Errors.UNKNOWN_TOPIC_OR_PARTITION.message))
                continue
            try:
                found = await self._forget(group_id, topic)
            except GroupError as exc:                 # the group's record not written
                responses.append(delete.DeleteShareGroupOffsetsResponseTopic(
                    topic_name=name, topic_id=topic.id, error_code=exc.code,
                    error_message=Errors.for_code(exc.code).message))
                continue
            if not found:
                responses.append(delete.DeleteShareGroupOffsetsResponseTopic(
                    topic_name=name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, error_message=NO_OFFSETS))
                continue
            responses.append(delete.DeleteShareGroupOffsetsResponseTopic(topic_name=name, topic_id=topic.id))
        self.share.changed()
        return delete.DeleteShareGroupOffsetsResponse(responses=responses)

    async def _forget(self, group_id: str, topic) -> bool:
        """Delete the group's share-partition state of each partition of the topic: whether there
        was any (initialized by the group coordinator, else found at the share coordinator or in
        an old checkpoint: a group served before the group coordinator recorded them)."""
        group = self.share.groups.groups.get(group_id)
        if group is not None and (topic.id in group.initialized or topic.id in group.deleting):
            await self._forget_recorded(group_id, group, topic)
            return True
        persister, starts, found = self.share.keeper.persister, self.share.starts, False
        for index in sorted(topic.partitions):
            key = (group_id, topic.id, index)
            code, summary = await persister.summary(group_id, topic.id, index)
            if code == Errors.NONE and summary.start_offset != UNINITIALIZED:
                found = True
                await persister.delete(group_id, topic.id, index)
            self.share.partitions.pop(key, None)
            self.share.keeper.known.discard(key)
            if key in starts.starts:
                found = True
                del starts.starts[key]
                starts.dirty = True
        return found

    async def _forget_recorded(self, group_id: str, group, topic) -> None:
        """sharePartitionsEligibleForOffsetDeletion: the topic moved from initialized to deleting,
        its state deleted (every partition for a topic deleting already), then dropped from
        deleting (kept there when a deletion failed: the next DeleteShareGroupOffsets or
        DeleteGroups asks again)."""
        partitions = sorted(group.initialized[topic.id][1]) if topic.id in group.initialized \
            else sorted(topic.partitions)
        self._record(group_id, initialized={t: v for t, v in group.initialized.items() if t != topic.id},
                     deleting={**group.deleting, topic.id: topic.name})
        codes = await self.share.keeper.persister.delete_many(group_id, [(topic.id, p) for p in partitions])
        for p in partitions:
            self.share.partitions.pop((group_id, topic.id, p), None)
            self.share.keeper.known.discard((group_id, topic.id, p))
        group = self.share.groups.groups.get(group_id)
        if group is not None and all(c == Errors.NONE for c in codes.values()):
            self._record(group_id, deleting={t: n for t, n in group.deleting.items() if t != topic.id})


def _has_lag(summary) -> bool:
    """shouldComputeSharePartitionLag: the summary was read and has a start offset and a
    delivery-complete count."""
    return (summary.error_code == Errors.NONE and summary.start_offset != UNINITIALIZED
            and summary.delivery_complete_count != UNINITIALIZED)


def _described(index: int, summary, latest) -> describe.DescribeShareGroupOffsetsResponsePartition:
    """A partition's answer from its ReadShareGroupStateSummary result and its leader's latest
    offset ((error code, offset), None when no lag is computed), as Kafka's
    computeShareGroupLagAndBuildResponse: a summary that failed is no offset information (-1,
    not an error); a latest offset that failed is the partition's error."""
    if latest is None:
        read = summary.error_code == Errors.NONE
        return describe.DescribeShareGroupOffsetsResponsePartition(
            partition_index=index, start_offset=summary.start_offset if read else UNINITIALIZED,
            leader_epoch=summary.leader_epoch if read else 0, lag=UNINITIALIZED)
    code, end = latest
    if code != Errors.NONE:
        return describe.DescribeShareGroupOffsetsResponsePartition(
            partition_index=index, error_code=code, error_message=Errors.for_code(code).message)
    # the latest offset is the next one to be written: records past the start offset less
    # those acknowledged or archived above it
    return describe.DescribeShareGroupOffsetsResponsePartition(
        partition_index=index, start_offset=summary.start_offset, leader_epoch=summary.leader_epoch,
        lag=end - summary.start_offset - summary.delivery_complete_count)


def _alter_error(code: int, message: str | None = None) -> alter.AlterShareGroupOffsetsResponse:
    return alter.AlterShareGroupOffsetsResponse(error_code=code, error_message=message or Errors(code).message)


def _delete_error(code: int, message: str | None = None) -> delete.DeleteShareGroupOffsetsResponse:
    return delete.DeleteShareGroupOffsetsResponse(error_code=code, error_message=message or Errors(code).message)
