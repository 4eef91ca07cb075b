"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92)
on the group coordinator, as Kafka 4.3.1's KafkaApis and GroupCoordinatorService serve them
(``kafka-share-groups --describe``, ``--reset-offsets``, ``--delete-offsets``); their ACL checks
are in kafkawire.broker.share_authorization.

Kafka reads and writes a share-partition's start offset through the share coordinator
(``__share_group_state``), which kafkawire does not have: its share-partitions live in their
leader's memory, their start offsets checkpointed in the leader's log directory
(kafkawire.broker.share_apis, share_checkpoint). So the coordinator's broker answers for the
share-partitions it leads (docs/differences.md):

- Describe: the start offset of the share-partition in memory, else the checkpointed one, with
  its leader epoch and lag (high watermark - start offset - records acknowledged or archived
  above it, Kafka's formula); -1 (Kafka's "uninitialized") for a partition led by another broker
  or never fetched by the group. Without topics: every share-partition of the group known here.
- Alter: the group must be Empty (NON_EMPTY_GROUP, as throwIfShareGroupIsNotEmpty); each
  share-partition led here starts again at the given offset (its in-flight state dropped; the
  group has no members); one led elsewhere is answered NOT_LEADER_OR_FOLLOWER.
- Delete: the group must exist (GROUP_ID_NOT_FOUND) and be Empty (NON_EMPTY_GROUP, as
  validateDeleteGroup); the topic's share-partitions known here are forgotten (the next fetch
  starts at ``share.auto.offset.reset``); a topic without any is UNKNOWN_TOPIC_OR_PARTITION
  ("There is no offset information to delete.").
"""
from __future__ import annotations

from kafkawire.messages import alter_share_group_offsets_response as alter
from kafkawire.messages import delete_share_group_offsets_response as delete
from kafkawire.messages import describe_share_group_offsets_response as describe
from kafkawire.protocol.error_codes import Errors

from .consumer_coordinator import GroupError
from .share_partition import ACKNOWLEDGED, ARCHIVED, SharePartition

__all__ = ["ShareOffsets", "UNINITIALIZED"]

UNINITIALIZED = -1           # PartitionFactory.UNINITIALIZED_START_OFFSET and UNINITIALIZED_LAG
NO_OFFSETS = "There is no offset information to delete."


class ShareOffsets:
    """The offsets handlers of ``share`` (a kafkawire.broker.share_apis.ShareApis)."""

    def __init__(self, share):
        self.share = share
        self.broker = share.broker

    # -- helpers --

    def _local(self, topic, index: int):
        """The partition when this broker leads ``index`` of ``topic`` (an image topic), else None."""
        registration = topic.partitions.get(index)
        if registration is None or registration.leader != self.broker.node_id:
            return None
        return self.broker.partitions.get((topic.name, index))

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

    def describe_group(self, group_id: str, topics) -> describe.DescribeShareGroupOffsetsResponseGroup:
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
        answered = []
        for name, partitions in topics:
            topic = image.topics_by_name.get(name)
            if topic is None:
                answered.append(describe.DescribeShareGroupOffsetsResponseTopic(topic_name=name, partitions=[
                    describe.DescribeShareGroupOffsetsResponsePartition(partition_index=p, start_offset=UNINITIALIZED)
                    for p in partitions]))
                continue
            answered.append(describe.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name, topic_id=topic.id,
                partitions=[self._describe_partition(group_id, topic, p) for p in partitions]))
        return describe.DescribeShareGroupOffsetsResponseGroup(group_id=group_id, topics=answered)

    def _known(self, group_id: str, image) -> list:
        keys = {k for k in self.share.partitions if k[0] == group_id}
        keys.update(k for k in self.share.starts.starts if k[0] == group_id)
        by_topic: dict[str, list] = {}
        for _, topic_id, index in keys:
            topic = image.topics_by_id.get(topic_id)
            if topic is not None and index in topic.partitions:
                by_topic.setdefault(topic.name, []).append(index)
        return [(name, sorted(ps)) for name, ps in sorted(by_topic.items())]

    def _describe_partition(self, group_id: str, topic, index: int):
        answer = describe.DescribeShareGroupOffsetsResponsePartition(
            partition_index=index, start_offset=UNINITIALIZED, leader_epoch=0, lag=UNINITIALIZED)
        partition = self._local(topic, index)
        if partition is None:
            return answer
        key = (group_id, topic.id, index)
        sp = self.share.partitions.get(key)
        if sp is not None and sp.leader_epoch == partition.leader_epoch:
            start, epoch = sp.start_offset, sp.leader_epoch
            complete = sum(1 for e in sp.entries.values() if e.state in (ACKNOWLEDGED, ARCHIVED))
        else:
            start, epoch, complete = self.share.starts.get(key), partition.leader_epoch, 0
            if start is None:
                return answer
        answer.start_offset, answer.leader_epoch = start, epoch
        answer.lag = max(partition.high_watermark() - start - complete, 0)
        return answer

    # -- AlterShareGroupOffsets --

    def alter(self, group_id: str, topics) -> alter.AlterShareGroupOffsetsResponse:
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
                code, message = self._alter_partition(group_id, topic, p.partition_index, p.start_offset)
                answer.partitions.append(alter.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=code, error_message=message))
            responses.append(answer)
        self.share.changed()
        return alter.AlterShareGroupOffsetsResponse(responses=responses)

    def _alter_partition(self, group_id: str, topic, index: int, start: int):
        if topic is None or index not in topic.partitions:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION.message
        if start < 0:
            return Errors.INVALID_REQUEST, f"The start offset {start} of partition {index} is negative."
        partition = self._local(topic, index)
        if partition is None:
            return (Errors.NOT_LEADER_OR_FOLLOWER, f"kafkawire keeps the share-partition's state on its leader "
                    f"(broker {topic.partitions[index].leader}), not on the group coordinator.")
        key = (group_id, topic.id, index)
        start = min(max(start, partition.log.log_start_offset), partition.log.log_end_offset)
        self.share.partitions[key] = SharePartition(start, partition.leader_epoch)
        self.share.starts.update({key: start})
        return Errors.NONE, None

    # -- DeleteShareGroupOffsets --

    def delete(self, group_id: str, topic_names: list) -> delete.DeleteShareGroupOffsetsResponse:
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
            if not self._forget(group_id, topic.id):
                responses.append(delete.DeleteShareGroupOffsetsResponseTopic(
                    topic_name=name, error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, error_message=NO_OFFSETS))
                continue
            responses.append(delete.DeleteShareGroupOffsetsResponseTopic(topic_name=name, topic_id=topic.id))
        self.share.changed()
        return delete.DeleteShareGroupOffsetsResponse(responses=responses)

    def _forget(self, group_id: str, topic_id) -> bool:
        """Drop the group's share-partitions of the topic known here: whether there were any."""
        starts = self.share.starts
        keys = [k for k in self.share.partitions if k[0] == group_id and k[1] == topic_id]
        kept = [k for k in starts.starts if k[0] == group_id and k[1] == topic_id]
        for key in keys:
            del self.share.partitions[key]
        for key in kept:
            del starts.starts[key]
            starts.dirty = True
        return bool(keys or kept)


def _alter_error(code: int, message: str | None = None) -> alter.AlterShareGroupOffsetsResponse:
    return alter.AlterShareGroupOffsetsResponse(error_code=code, error_message=message or Errors(code).message)


def _delete_error(code: int, message: str | None = None) -> delete.DeleteShareGroupOffsetsResponse:
    return delete.DeleteShareGroupOffsetsResponse(error_code=code, error_message=message or Errors(code).message)
