"""ElectLeaders on the active controller: ReplicationControlManager.electLeaders, preferred or
unclean, for the partitions named or (none named) every partition that needs one, with Kafka's
errors and messages.

A preferred election makes the first replica the leader when it may lead (in the ISR, unfenced,
its directory online); an unclean one elects any acceptable replica of a leaderless partition.
ELECTION_NOT_NEEDED when the preferred replica already leads (or, unclean, a leader exists),
PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE when the election changes
nothing. Asked for every partition, the answer leaves out those that needed no election; topics
come in the image's order (Kafka's follow a TimelineHashMap). The records are not one atomic
batch in Kafka (ControllerResult.of); here they are appended as one batch all the same. More
than MAX_RECORDS_PER_USER_OP records (bounded.py) refuse the whole request, as Kafka's.

Every partition of a large cluster is walked in steps (kafkawire.controller.elect_in_steps).
"""
from __future__ import annotations

from kafkawire.messages.elect_leaders_response import ElectLeadersResponse, PartitionResult, ReplicaElectionResult
from kafkawire.metadata.registrations import NO_LEADER
from kafkawire.protocol.error_codes import Errors

from .bounded import BoundedList
from .errors import ApiError
from .partition_change import build_change, change_record
from .replication import effective_min_isr, is_active, leader_acceptor
from .state import ControllerState
from .topics import _default_dir
from .versions import elr_enabled

PREFERRED, UNCLEAN = 0, 1


def _elect(state: ControllerState, name: str, partition_id: int, election: int, static_min_isr: int, records):
    image = state.image
    topic = image.topics_by_name.get(name)
    if topic is None:
        return ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {name}")
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {name}-{partition_id}")
    if _not_needed(partition, election):
        return ApiError(Errors.ELECTION_NOT_NEEDED, Errors.ELECTION_NOT_NEEDED.message)
    mv = image.metadata_version or 0
    change = build_change(partition, target_isr=list(partition.isr),
                          acceptable_leader=leader_acceptor(image, partition, lambda r: is_active(image, r)),
                          min_isr=effective_min_isr(image, topic, static_min_isr),
                          elr_enabled=elr_enabled(image.metadata_version, image.finalized_features),
                          unclean=election == UNCLEAN, metadata_version=mv,
                          default_dir=lambda r: _default_dir(image, r), preferred=election == PREFERRED)
    if change is None:
        error = Errors.PREFERRED_LEADER_NOT_AVAILABLE if election == PREFERRED else Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
        return ApiError(error, error.message)
    records.append(change_record(topic.id, partition_id, change, mv))
    return None


def _not_needed(partition, election: int) -> bool:
    """ELECTION_NOT_NEEDED: the preferred replica leads (preferred), a leader exists (unclean)."""
    if election == PREFERRED:
        return partition.leader == (partition.replicas[0] if partition.replicas else NO_LEADER)
    return partition.leader != NO_LEADER


def election_type(request, api_version: int) -> int:
    election = request.election_type if api_version >= 1 else PREFERRED
    if election not in (PREFERRED, UNCLEAN):
        raise ApiError(Errors.INVALID_REQUEST, f"Unknown election type {election}")
    return election


def elect_leaders(state: ControllerState, request, api_version: int, static_min_isr: int):
    """(records, ElectLeadersResponse)."""
    election = election_type(request, api_version)
    if request.topic_partitions is None:
        records, results = elect_in_topics(state, list(state.image.topics_by_name), election, static_min_isr)
        return records, ElectLeadersResponse(error_code=0, replica_election_results=results)
    records, results = BoundedList(), []
    for t in request.topic_partitions:
        results.append(ReplicaElectionResult(topic=t.topic, partition_result=[
            _result(pid, _elect(state, t.topic, pid, election, static_min_isr, records)) for pid in t.partitions]))
    return records, ElectLeadersResponse(error_code=0, replica_election_results=results)


def elect_in_topics(state: ControllerState, names: list[str], election: int, static_min_isr: int,
                    records: BoundedList | None = None) -> tuple[list, list]:
    """The "every partition" walk over the topics ``names`` (one gone meanwhile left out):
    (records, [ReplicaElectionResult]) with the partitions that needed no election left out."""
    records = BoundedList() if records is None else records
    results = []
    for name in names:
        topic = state.image.topics_by_name.get(name)
        if topic is None:
            continue
        partition_results = []
        partitions = topic.partitions
        for pid in sorted(partitions):
            # the answer leaves these out: no error object made for them (most partitions, most
            # of the time)
            if _not_needed(partitions[pid], election):
                continue
            error = _elect(state, name, pid, election, static_min_isr, records)
            partition_results.append(_result(pid, error))
        results.append(ReplicaElectionResult(topic=name, partition_result=partition_results))
    return records, results


def _result(pid: int, error: ApiError | None) -> PartitionResult:
    return PartitionResult(partition_id=pid, error_code=0 if error is None else error.code,
                           error_message=None if error is None else error.message)
