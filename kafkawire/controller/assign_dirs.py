"""AssignReplicasToDirs (API 73) on the active controller: ReplicationControlManager.
handleAssignReplicasToDirs (KIP-858).

A broker with several log directories tells the controller which directory holds each of its
replicas. The broker's epoch must be its registered one; then every partition named gets the
PartitionChangeRecord the PartitionChangeBuilder writes with that replica's directory set (none
when it is already there), or UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, or
NOT_LEADER_OR_FOLLOWER for a partition the broker holds no replica of. Replicas assigned to a
directory the broker does not list as online then leave the ISR and leadership as a fenced
broker's do (generateLeaderAndIsrUpdates over those partitions, computed, as in Kafka, from
the state before this request).
"""
from __future__ import annotations

from kafkawire.messages.assign_replicas_to_dirs_response import (AssignReplicasToDirsResponse, DirectoryData,
                                                                 PartitionData, TopicData)
from kafkawire.metadata.registrations import NO_LEADER
from kafkawire.protocol.error_codes import Errors

from .errors import ApiError
from .partition_change import build_change, change_record
from .producer_ids import check_broker_epoch
from .replication import (effective_min_isr, has_online_dir, is_active, leader_acceptor, leader_and_isr_updates,
                          unclean_election_enabled)
from .state import ControllerState
from .versions import directory_assignment_supported, elr_enabled


def assign_replicas_to_dirs(state: ControllerState, request) -> tuple[list[bytes], AssignReplicasToDirsResponse]:
    image = state.image
    mv = image.metadata_version or 0
    if not directory_assignment_supported(mv):
        raise ApiError(Errors.UNSUPPORTED_VERSION, "Directory assignment is not supported yet.")
    broker_id = request.broker_id
    check_broker_epoch(state, broker_id, request.broker_epoch)
    elr = elr_enabled(image.metadata_version, image.finalized_features)
    records: list[bytes] = []
    offline: list = []                 # (topic, partition id, registration) assigned to an offline directory
    response = AssignReplicasToDirsResponse()
    for directory_data in request.directories:
        directory = directory_data.id
        directory_offline = not has_online_dir(image, broker_id, directory)
        answer = DirectoryData(id=directory)
        for topic_data in directory_data.topics:
            topic = image.topics_by_id.get(topic_data.topic_id)
            topic_answer = TopicData(topic_id=topic_data.topic_id)
            for partition_data in topic_data.partitions:
                pid = partition_data.partition_index
                partition = topic.partitions.get(pid) if topic is not None else None
                if topic is None:
                    error = Errors.UNKNOWN_TOPIC_ID
                elif partition is None:
                    error = Errors.UNKNOWN_TOPIC_OR_PARTITION
                elif broker_id not in partition.replicas:
                    error = Errors.NOT_LEADER_OR_FOLLOWER
                else:
                    error = Errors.NONE
                    change = build_change(
                        partition, target_isr=list(partition.isr),
                        acceptable_leader=leader_acceptor(image, partition, lambda r: is_active(image, r)),
                        min_isr=effective_min_isr(image, topic, state.node_configs), elr_enabled=elr,
                        unclean=unclean_election_enabled(image, topic, state.node_configs), metadata_version=mv,
                        target_directories={broker_id: directory})
                    if change is not None:
                        records.append(change_record(topic.id, pid, change, mv))
                    if directory_offline:
                        offline.append((topic, pid, partition))
                topic_answer.partitions.append(PartitionData(partition_index=pid, error_code=int(error)))
            answer.topics.append(topic_answer)
        response.directories.append(answer)
    if offline:
        unique = list({(t.id, pid): (t, pid, p) for t, pid, p in offline}.values())
        records += leader_and_isr_updates(image, broker_to_remove=broker_id, broker_to_add=NO_LEADER, chosen=unique,
                                          node_configs=state.node_configs)
    return records, response
