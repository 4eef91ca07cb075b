"""TxnOffsetCommit (28) on the broker, as Kafka 4.3.1's KafkaApis and GroupCoordinatorService
answer it (v0-v5, Kafka 4.3.1's versions): topics resolved against the metadata by name, an
unknown one UNKNOWN_TOPIC_OR_PARTITION; the group checked (INVALID_GROUP_ID, NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, answered COORDINATOR_NOT_AVAILABLE before v2); the group's
``__consumer_offsets`` partition verified as part of the producer's transaction (KIP-890, added
to it from v5, asked of its coordinator: kafkawire.broker.txn_verify_routing; its errors mapped
as Kafka's group coordinator maps them, NETWORK_EXCEPTION to COORDINATOR_LOAD_IN_PROGRESS); the
member checked (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); then the offsets
written in the producer's transaction (kafkawire.broker.group_txn_offsets), committed when its
COMMIT marker reaches the partition.

The markers reach the group coordinator through ``broker.txn_marker_listeners``: a callback
``(topic, partition, producer_id, producer_epoch, committed, coordinator_epoch)`` called after a
marker is appended to a partition of this broker.
"""
from __future__ import annotations

from kafkawire.messages.txn_offset_commit_response import (TxnOffsetCommitResponse, TxnOffsetCommitResponsePartition,
                                                           TxnOffsetCommitResponseTopic)
from kafkawire.protocol.error_codes import Errors

from .group_offsets import CommitRefused
from .group_records import OFFSETS_TOPIC, partition_for
from .group_txn_offsets import TxnOffsets
from .txn_verify import txn_offset_commit_operation

__all__ = ["TxnOffsetCommitApi"]

# A verification error as the group coordinator answers it (Kafka's
# CoordinatorOperationExceptionHelper.handleOperationException): NETWORK_EXCEPTION (a lost
# connection, or an older verification of the transactional id replaced by a newer one,
# kafkawire.broker.txn_verify_routing) is COORDINATOR_LOAD_IN_PROGRESS, which producers retry.
_VERIFICATION_ERRORS = {
    Errors.NETWORK_EXCEPTION: Errors.COORDINATOR_LOAD_IN_PROGRESS,
    **dict.fromkeys((Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NOT_ENOUGH_REPLICAS, Errors.REQUEST_TIMED_OUT),
                    Errors.COORDINATOR_NOT_AVAILABLE),
    **dict.fromkeys((Errors.NOT_LEADER_OR_FOLLOWER, Errors.KAFKA_STORAGE_ERROR), Errors.NOT_COORDINATOR),
    **dict.fromkeys((Errors.MESSAGE_TOO_LARGE, Errors.RECORD_LIST_TOO_LARGE, Errors.INVALID_FETCH_SIZE),
                    Errors.UNKNOWN_SERVER_ERROR),
}


class TxnOffsetCommitApi:
    def __init__(self, broker, verifier):
        self.broker = broker
        self.verifier = verifier            # kafkawire.broker.txn_verify_routing.VerificationRouter
        apis = broker.group_apis
        self.store = apis.store
        self.txn_offsets = TxnOffsets(apis.offsets, persist=self.store.persist, partition_of=self.partition_of)
        self.store.txn_offsets = self.txn_offsets            # loading replays transactional batches into it

    def partition_of(self, group_id: str) -> int:
        """The group's __consumer_offsets partition (offsets.topic.num.partitions before it exists,
        as Kafka's partitionFor)."""
        count = self.store.partitions(self.broker.image()) or self.broker.config.offsets_topic_num_partitions
        return partition_for(group_id, count)

    def on_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int, committed: bool,
                  coordinator_epoch: int) -> None:
        if topic == OFFSETS_TOPIC:
            self.txn_offsets.on_marker(partition, producer_id, committed)

    async def txn_offset_commit(self, ctx, request):
        v = ctx.api_version
        image = self.broker.image()
        codes, wanted = {}, []
        for i, t in enumerate(request.topics):
            topic = None if image is None else image.topics_by_name.get(t.name)
            for p in t.partitions:
                if topic is None or p.partition_index not in topic.partitions:
                    codes[(i, p.partition_index)] = Errors.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    wanted.append((i, topic.name, p, topic.id))
        if wanted:
            code = await self._check(request, v, [(topic_id, p.partition_index) for *_, p, topic_id in wanted])
            if code != Errors.NONE:
                codes.update({(i, p.partition_index): code for i, _, p, _ in wanted})
            else:
                stored = self.txn_offsets.commit(request.group_id, request.producer_id, request.producer_epoch, [
                    (name, p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
                    for _, name, p, _ in wanted])
                codes.update({(i, p.partition_index): stored[(name, p.partition_index)] for i, name, p, _ in wanted})
        if v < 2:
            codes = {k: Errors.COORDINATOR_NOT_AVAILABLE if c == Errors.COORDINATOR_LOAD_IN_PROGRESS else c
                     for k, c in codes.items()}
        return TxnOffsetCommitResponse(topics=[TxnOffsetCommitResponseTopic(
            name=t.name, partitions=[TxnOffsetCommitResponsePartition(
                partition_index=p.partition_index, error_code=codes[(i, p.partition_index)]) for p in t.partitions])
            for i, t in enumerate(request.topics)])

    async def _check(self, request, version: int, partitions: list) -> int:
        group_id = request.group_id
        if not group_id:
            return Errors.INVALID_GROUP_ID
        code = self.store.coordinator_error(group_id)
        if code != Errors.NONE:
            return code
        offsets_partition = (OFFSETS_TOPIC, self.partition_of(group_id))
        verified = await self.verifier.verify(request.transactional_id, request.producer_id,
                                                request.producer_epoch, [offsets_partition],
                                                operation=txn_offset_commit_operation(version))
        code = verified[offsets_partition]
        if code != Errors.NONE:
            return _VERIFICATION_ERRORS.get(code, code)
        try:
            self.txn_offsets.validate(group_id, request.generation_id_or_member_epoch, request.member_id or "",
                                      request.group_instance_id, partitions)
        except CommitRefused as exc:
            return exc.code
        return Errors.NONE
