"""CreatePartitions on the active controller: ControllerApis.createPartitions (duplicate names)
and ReplicationControlManager.createPartitions (a PartitionRecord per new partition, placed
like a new topic's or as the request assigns them), with Kafka's errors and messages. One
request's records are one atomic batch; validate-only writes nothing.

Duplicate names are answered first, then each topic in request order (Kafka walks a HashSet of
the names there).

The partitions a request adds, all topics together, are bounded by MAX_RECORDS_PER_USER_OP
(bounded.py; one PartitionRecord each). Kafka refuses per topic there: a topic whose new
partitions do not fit gets UNKNOWN_SERVER_ERROR without a message (its catch-all turns
BoundedListTooLongException into that). Here the topic is refused once its request is known to
be valid and before any placement, so ``count`` = 2^31-1 costs nothing and writes nothing (Kafka
commits those of that topic's partitions that fit, and runs out of memory placing 2^31-1).
"""
from __future__ import annotations

import random
from collections import Counter

from kafkawire.messages.create_partitions_response import CreatePartitionsResponse, CreatePartitionsTopicResult
from kafkawire.protocol.error_codes import Errors

from .bounded import BoundedList, BoundedListTooLong
from .cluster import has_uncordoned_dirs
from .errors import ApiError
from .frames import frame
from .placement import InvalidReplicationFactor, check_placeable, place
from .replication import is_active
from .state import ControllerState
from .topics import _default_dir
from .versions import directory_assignment_supported, partition_record_version


def partition_record(state: ControllerState, topic_id, partition_id: int, replicas: list[int],
                     isr: list[int]) -> bytes:
    """PartitionRegistration.toRecord for a new partition led by its first in-sync replica."""
    mv = state.image.metadata_version or 0
    fields = dict(partition_id=partition_id, topic_id=topic_id, replicas=replicas, isr=isr, removing_replicas=[],
                  adding_replicas=[], leader=isr[0], leader_recovery_state=0, leader_epoch=0, partition_epoch=0)
    if directory_assignment_supported(mv):
        fields["directories"] = [_default_dir(state.image, r) for r in replicas]
    return frame("PartitionRecord", partition_record_version(mv), **fields)


def check_assignment(state: ControllerState, replicas: list[int], replication_factor: int | None) -> None:
    """validateManualPartitionAssignment (``replication_factor`` None: any)."""
    if not replicas:
        raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty "
                                                          "replica list.")
    previous = None
    for broker_id in sorted(replicas):
        if broker_id not in state.image.brokers:
            raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker "
                                                              f"{broker_id}, but no such broker is registered.")
        if broker_id == previous:
            raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes the broker "
                                                              f"{previous} more than once.")
        previous = broker_id
    if replication_factor is not None and len(replicas) != replication_factor:
        raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT,
                       f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but "
                       f"this is not consistent with previous partitions, which have {replication_factor} "
                       "replica(s).")


def _new_assignments(state: ControllerState, topic, start: int, additional: int, replication_factor: int, rng,
                     records: BoundedList):
    """[(replicas, isr)] for the new partitions, once ``records`` has room for them."""
    image = state.image
    if topic.assignments is not None:
        out = []
        for i, assignment in enumerate(topic.assignments):
            replicas = list(assignment.broker_ids)
            check_assignment(state, replicas, replication_factor)
            isr = [r for r in replicas if is_active(image, r)]
            if not isr:
                raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT,
                               f"All brokers specified in the manual partition assignment for partition "
                               f"{start + i} are fenced or in controlled shutdown.")
            out.append((replicas, isr))
        records.check_room(additional)
        return out
    usable = [b for b in image.brokers.values() if not b.in_controlled_shutdown and has_uncordoned_dirs(b)]
    unfenced, fenced = [b.id for b in usable if not b.fenced], [b.id for b in usable if b.fenced]
    try:
        check_placeable(replication_factor, unfenced, fenced)
        records.check_room(additional)              # before placing: the count is the request's
        placements = place(additional, replication_factor, unfenced, fenced, rng)
    except InvalidReplicationFactor as exc:
        raise ApiError(Errors.INVALID_REPLICATION_FACTOR,
                       f"Unable to replicate the partition {replication_factor} time(s): {exc}") from None
    return [(replicas, list(replicas)) for replicas in placements]


def _topic_records(state: ControllerState, topic, rng, records: BoundedList, quota=None) -> list[bytes]:
    """The topic's PartitionRecords; ``records``: the request's so far, which they must fit beside."""
    image = state.image
    existing = image.topics_by_name.get(topic.name)
    if existing is None:
        raise ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION)      # Kafka's exception has no message
    count = len(existing.partitions)
    if topic.count == count:
        raise ApiError(Errors.INVALID_PARTITIONS, f"Topic already has {count} partition(s).")
    if topic.count < count:
        raise ApiError(Errors.INVALID_PARTITIONS, f"The topic {topic.name} currently has {count} partition(s); "
                                                  f"{topic.count} would not be an increase.")
    additional = topic.count - count
    if topic.assignments is not None and len(topic.assignments) != additional:
        raise ApiError(Errors.INVALID_REPLICA_ASSIGNMENT,
                       f"Attempted to add {additional} additional partition(s), but only {len(topic.assignments)} "
                       "assignment(s) were specified.")
    if quota is not None:
        quota(additional)
    if not existing.partitions:
        raise ApiError(Errors.UNKNOWN_SERVER_ERROR)             # Kafka hides the message of this one
    replication_factor = len(next(iter(existing.partitions.values())).replicas)
    new_records = []
    for offset, (replicas, isr) in enumerate(_new_assignments(state, topic, count, additional, replication_factor,
                                                              rng, records)):
        isr = [r for r in isr if is_active(image, r)]
        if not isr:
            raise ApiError(Errors.INVALID_REPLICATION_FACTOR,
                           f"Unable to replicate the partition {replication_factor} time(s): All brokers are "
                           "currently fenced or in controlled shutdown.")
        new_records.append(partition_record(state, existing.id, count + offset, replicas, isr))
    return new_records


def create_partitions(state: ControllerState, request, rng: random.Random | None = None, quota=None):
    """(records, CreatePartitionsResponse); ``quota``: called with each topic's added partition
    count once they are checked (the controller mutation quota, mutation_quota.py), raising
    ApiError to refuse the topic."""
    rng = rng or random.Random()
    counts = Counter(t.name for t in request.topics)
    results = [CreatePartitionsTopicResult(name=name, error_code=int(Errors.INVALID_REQUEST),
                                           error_message="Duplicate topic name.")
               for name in dict.fromkeys(t.name for t in request.topics) if counts[name] > 1]
    records = BoundedList()
    for topic in request.topics:
        if counts[topic.name] > 1:
            continue
        try:
            topic_records = _topic_records(state, topic, rng, records, quota)
        except ApiError as exc:
            results.append(CreatePartitionsTopicResult(name=topic.name, error_code=exc.code,
                                                       error_message=exc.message))
            continue
        except BoundedListTooLong:                  # Kafka's catch-all: no message
            results.append(CreatePartitionsTopicResult(name=topic.name, error_code=int(Errors.UNKNOWN_SERVER_ERROR),
                                                       error_message=None))
            continue
        records += topic_records
        results.append(CreatePartitionsTopicResult(name=topic.name, error_code=0, error_message=None))
    return ([] if request.validate_only else records), CreatePartitionsResponse(results=results)
