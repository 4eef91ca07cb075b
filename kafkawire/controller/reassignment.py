"""AlterPartitionReassignments and ListPartitionReassignments on the active controller:
ReplicationControlManager.alterPartitionReassignments (change or cancel, per partition) and
listPartitionReassignments, with Kafka's errors and messages.

A reassignment to new replicas writes one PartitionChangeRecord: the target replicas followed by
those being removed, with AddingReplicas and RemovingReplicas (PartitionReassignmentReplicas).
It completes in a later PartitionChangeRecord once the ISR holds every adding replica (the
partition leader's AlterPartition; partition_change.complete_reassignment), or at once when it
only reorders or drops replicas already in sync. Cancelling (no replicas given) reverts to the
original replicas (PartitionReassignmentRevert). One request's records are one atomic batch.

One request writes at most MAX_RECORDS_PER_USER_OP records (bounded.py): as Kafka's (whose
catch-all turns BoundedListTooLongException into that), a partition whose record does not fit
is answered UNKNOWN_SERVER_ERROR without a message and left as it was, the others change.
"""
from __future__ import annotations

from kafkawire.messages.alter_partition_reassignments_response import (AlterPartitionReassignmentsResponse,
                                                                       ReassignablePartitionResponse,
                                                                       ReassignableTopicResponse)
from kafkawire.messages.list_partition_reassignments_response import (ListPartitionReassignmentsResponse,
                                                                      OngoingPartitionReassignment,
                                                                      OngoingTopicReassignment)
from kafkawire.protocol.error_codes import Errors

from .bounded import BoundedList, BoundedListTooLong
from .errors import ApiError
from .partition_change import build_change, change_record
from .partition_creation import check_assignment
from .image_lookups import ImageLookups
from .state import ControllerState


def in_progress(partition) -> bool:
    return bool(partition.removing_replicas) or bool(partition.adding_replicas)


def reassignment_replicas(current: list[int], target: list[int]):
    """PartitionReassignmentReplicas(current, target): (replicas, removing, adding)."""
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    return list(target) + removing, removing, adding


def _replication_factor_unchanged(partition, target: list[int]) -> None:
    """validatePartitionReplicationFactorUnchanged (KIP-860)."""
    if in_progress(partition):
        current = len((set(partition.replicas) | set(partition.adding_replicas)) - set(partition.removing_replicas))
    else:
        current = len(partition.replicas)
    if current != len(target):
        raise ApiError(Errors.INVALID_REPLICATION_FACTOR,
                       f"The replication factor is changed from {current} to {len(target)}")


def _revert(name: str, partition_id: int, partition):
    """PartitionReassignmentRevert: (replicas, isr, unclean)."""
    adding = set(partition.adding_replicas)
    replicas = [r for r in partition.replicas if r not in adding]
    isr = [r for r in partition.isr if r not in adding]
    if isr:
        return replicas, isr, False
    if not replicas:
        raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, "Invalid replica assignment: addingReplicas contains all "
                                                          "replicas.")
    return replicas, [replicas[0]], True


def _change(state: ControllerState, topic, partition_id: int, target, allow_rf_change: bool, lookups: ImageLookups):
    partition = topic.partitions.get(partition_id)
    if partition is None:
        raise ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                       f"Unable to find partition {topic.name}:{partition_id}.")
    common = lookups.build_arguments(topic, partition)
    if target is None:
        if not in_progress(partition):
            raise ApiError(Errors.NO_REASSIGNMENT_IN_PROGRESS, None)
        replicas, isr, unclean = _revert(topic.name, partition_id, partition)
        allowed = lookups.unclean_enabled(topic)
        if unclean and not allowed:
            raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT,
                           f"Unable to revert partition assignment for {topic.name}:{partition_id} because it would "
                           "require an unclean leader election.")
        change = build_change(partition, target_isr=isr, unclean=allowed, reassignment=(replicas, [], []), **common)
    else:
        target = list(target)
        check_assignment(state, target, None)
        if not allow_rf_change:
            _replication_factor_unchanged(partition, target)
        replicas, removing, adding = reassignment_replicas(list(partition.replicas), target)
        change = build_change(partition, target_isr=list(partition.isr), unclean=False, reassignment=(
            None if replicas == list(partition.replicas) else replicas, removing or None, adding or None), **common)
    return None if change is None else change_record(topic.id, partition_id, change, lookups.mv)


def alter_partition_reassignments(state: ControllerState, request):
    """(records, AlterPartitionReassignmentsResponse)."""
    allow_rf_change = getattr(request, "allow_replication_factor_change", True)
    records, responses = BoundedList(), []
    lookups = ImageLookups(state.image, state.node_configs)
    for topic_request in request.topics:
        results = []
        topic = state.image.topics_by_name.get(topic_request.name)
        for target in topic_request.partitions:
            code, message = 0, None
            try:
                if topic is None:
                    raise ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                   f"Unable to find a topic named {topic_request.name}.")
                record = _change(state, topic, target.partition_index, target.replicas, allow_rf_change, lookups)
                if record is not None:
                    records.append(record)
            except ApiError as exc:
                code, message = exc.code, exc.message
            except BoundedListTooLong:
                code = int(Errors.UNKNOWN_SERVER_ERROR)
            results.append(ReassignablePartitionResponse(partition_index=target.partition_index, error_code=code,
                                                         error_message=message))
        responses.append(ReassignableTopicResponse(name=topic_request.name, partitions=results))
    return records, AlterPartitionReassignmentsResponse(allow_replication_factor_change=allow_rf_change,
                                                        error_message=None, responses=responses)


def list_partition_reassignments(state: ControllerState, request) -> ListPartitionReassignmentsResponse:
    image = state.image
    if request.topics is None:
        wanted = [(topic, sorted(topic.partitions)) for topic in image.topics_by_id.values()]
    else:
        wanted = [(image.topics_by_name[t.name], list(t.partition_indexes)) for t in request.topics
                  if t.name in image.topics_by_name]
    topics = []
    for topic, partition_ids in wanted:
        ongoing = []
        for pid in partition_ids:
            partition = topic.partitions.get(pid)
            if partition is not None and in_progress(partition):
                ongoing.append(OngoingPartitionReassignment(
                    partition_index=pid, replicas=list(partition.replicas),
                    adding_replicas=list(partition.adding_replicas),
                    removing_replicas=list(partition.removing_replicas)))
        if ongoing:
            topics.append(OngoingTopicReassignment(name=topic.name, partitions=ongoing))
    return ListPartitionReassignmentsResponse(error_message=None, topics=topics)
