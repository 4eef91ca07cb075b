"""AlterPartition (API 56) on the active controller: ReplicationControlManager.alterPartition.

A partition leader asks for a new ISR (after a follower caught up or fell behind) and, after an
unclean election, for its leader recovery state to become RECOVERED. The asking broker's epoch
must be its registered one; then each partition is checked in Kafka's order (validateAlter-
PartitionData) and answered with the first broken rule's error, or changed through the
PartitionChangeBuilder (partition_change.build_change), whose PartitionChangeRecord is written
and whose result the answer carries. The epochs of a leader whose request is newer than what
this controller knows get NOT_CONTROLLER (it is likely no longer the active one); an older
leader epoch FENCED_LEADER_EPOCH; a broker not the leader INVALID_REQUEST; an older partition
epoch INVALID_UPDATE_VERSION; an ISR outside the replicas, repeating one or leaving out the
leader INVALID_REQUEST; an ISR member not registered, shutting down, fenced or of another epoch
INELIGIBLE_REPLICA. A change that moves leadership away from the asker (only a completed
reassignment can) is written and answered NEW_LEADER_ELECTED.

Requests before v3 carry bare broker ids (NewIsr): their epochs are not checked (-1).
"""
from __future__ import annotations

import logging

from kafkawire.messages.alter_partition_response import AlterPartitionResponse, PartitionData, TopicData
from kafkawire.metadata.image import MetadataImage
from kafkawire.metadata.registrations import NO_LEADER_CHANGE
from kafkawire.protocol.error_codes import Errors

from .partition_change import RECOVERED, RECOVERING, build_change, change_record
from .producer_ids import check_broker_epoch
from .replication import effective_min_isr, is_active, leader_acceptor, unclean_election_enabled
from .state import ControllerState
from .versions import elr_enabled

log = logging.getLogger(__name__)

NEW_ISR_WITH_EPOCHS_SINCE = 3


def _requested_isr(partition_data, request_version: int) -> list[tuple[int, int]]:
    """(broker id, broker epoch) of the ISR asked for; -1 epochs before v3 (newIsrToSimpleNewIsrWithBrokerEpochs)."""
    if request_version < NEW_ISR_WITH_EPOCHS_SINCE:
        return [(b, -1) for b in partition_data.new_isr]
    return [(s.broker_id, s.broker_epoch) for s in partition_data.new_isr_with_epochs]


def _valid_isr(replicas, isr: list[int]) -> bool:
    """Replicas.validateIsr: no negative id, no repeats, every member a replica."""
    return all(r >= 0 for r in isr) and len(set(isr)) == len(isr) and set(isr) <= set(replicas)


def _ineligible(image: MetadataImage, isr: list[tuple[int, int]]) -> list[str]:
    """ineligibleReplicasForIsr, as Kafka describes each one."""
    out = []
    for broker_id, epoch in isr:
        broker = image.brokers.get(broker_id)
        if broker is None:
            out.append(f"{broker_id} (not registered)")
        elif broker.in_controlled_shutdown:
            out.append(f"{broker_id} (shutting down)")
        elif broker.fenced:
            out.append(f"{broker_id} (fenced)")
        elif epoch != -1 and broker.epoch != epoch:
            out.append(f"{broker_id} (broker epoch mismatch: requested={epoch} VS expected={broker.epoch})")
    return out


def validation_error(image: MetadataImage, broker_id: int, partition, data, isr) -> Errors:
    """validateAlterPartitionData: Errors.NONE or the first rule the request breaks."""
    if partition is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION
    if data.leader_epoch > partition.leader_epoch or data.partition_epoch > partition.partition_epoch:
        return Errors.NOT_CONTROLLER
    if data.leader_epoch < partition.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH
    if broker_id != partition.leader:
        return Errors.INVALID_REQUEST
    if data.partition_epoch < partition.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION
    ids = [b for b, _ in isr]
    if not _valid_isr(partition.replicas, ids) or partition.leader not in ids:
        return Errors.INVALID_REQUEST
    recovery = data.leader_recovery_state
    if recovery == RECOVERING and len(ids) > 1:
        return Errors.INVALID_REQUEST
    if partition.leader_recovery_state == RECOVERED and recovery == RECOVERING:
        return Errors.INVALID_REQUEST
    ineligible = _ineligible(image, isr)
    if ineligible:
        log.info("Rejecting AlterPartition request from node %d: ineligible replicas %s in the new ISR",
                 broker_id, ", ".join(ineligible))
        return Errors.INELIGIBLE_REPLICA
    return Errors.NONE


def alter_partition(state: ControllerState, request,
                    request_version: int) -> tuple[list[bytes], AlterPartitionResponse]:
    """The PartitionChangeRecords to append and the answer; ApiError (STALE_BROKER_EPOCH) for the whole request."""
    check_broker_epoch(state, request.broker_id, request.broker_epoch)
    image = state.image
    mv = image.metadata_version or 0
    elr = elr_enabled(image.metadata_version, image.finalized_features)
    records: list[bytes] = []
    response = AlterPartitionResponse()
    for topic_data in request.topics:
        answer = TopicData(topic_name=topic_data.topic_name, topic_id=topic_data.topic_id)
        response.topics.append(answer)
        topic = image.topics_by_id.get(topic_data.topic_id)
        if topic is None:
            answer.partitions = [PartitionData(partition_index=p.partition_index,
                                               error_code=int(Errors.UNKNOWN_TOPIC_ID))
                                 for p in topic_data.partitions]
            continue
        for data in topic_data.partitions:
            answer.partitions.append(_one_partition(image, topic, data, request, request_version, records,
                                                    mv=mv, elr=elr,
                                                    node_configs=state.node_configs))
    return records, response


def _one_partition(image, topic, data, request, request_version, records, *, mv, elr, node_configs):
    pid = data.partition_index
    partition = topic.partitions.get(pid)
    isr = _requested_isr(data, request_version)
    error = validation_error(image, request.broker_id, partition, data, isr)
    if error is not Errors.NONE:
        return PartitionData(partition_index=pid, error_code=int(error))
    change = build_change(partition, target_isr=[b for b, _ in isr],
                          acceptable_leader=leader_acceptor(image, partition, lambda r: is_active(image, r)),
                          min_isr=effective_min_isr(image, topic, node_configs), elr_enabled=elr,
                          unclean=unclean_election_enabled(image, topic, node_configs), metadata_version=mv,
                          target_recovery_state=data.leader_recovery_state)
    if change is not None:
        records.append(change_record(topic.id, pid, change, mv))
        partition = partition.merge(_ChangeRecord(pid, change))
        if change.leader not in (request.broker_id, NO_LEADER_CHANGE):
            return PartitionData(partition_index=pid, error_code=int(Errors.NEW_LEADER_ELECTED))
    return PartitionData(partition_index=pid, error_code=0, leader_id=partition.leader, isr=list(partition.isr),
                         leader_recovery_state=partition.leader_recovery_state,
                         leader_epoch=partition.leader_epoch, partition_epoch=partition.partition_epoch)


class _ChangeRecord:
    """The PartitionChangeRecord fields PartitionRegistration.merge reads."""

    def __init__(self, pid, change):
        self.partition_id = pid
        self.replicas = change.replicas                    # a reassignment the new ISR completes
        self.removing_replicas = change.removing_replicas
        self.adding_replicas = change.adding_replicas
        self.directories = change.directories
        self.leader = change.leader
        self.isr = change.isr
        self.leader_recovery_state = change.leader_recovery_state
        self.eligible_leader_replicas = change.eligible_leader_replicas
        self.last_known_elr = change.last_known_elr

