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

from dataclasses import dataclass

from kafkawire.messages.elect_leaders_response import ElectLeadersResponse, PartitionResult, ReplicaElectionResult
from kafkawire.metadata.registrations import NO_LEADER
from kafkawire.protocol.error_codes import Errors

from .bounded import BoundedList
from .errors import ApiError
from .partition_change import build_change, change_record
from .image_lookups import ImageLookups
from .state import ControllerState

PREFERRED, UNCLEAN = 0, 1


class _Election(ImageLookups):
    """One ElectLeaders walk's lookups (ImageLookups), made once against the image of its moment
    (the write's generate, so the image does not change under it), and the refusals' errors."""

    def __init__(self, state: ControllerState, election: int):
        super().__init__(state.image, state.node_configs)
        self.election = election
        self.not_needed = ApiError(Errors.ELECTION_NOT_NEEDED, Errors.ELECTION_NOT_NEEDED.message)
        error = Errors.PREFERRED_LEADER_NOT_AVAILABLE if election == PREFERRED else Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE
        self.not_available = ApiError(error, error.message)

    def elect(self, topic, partition_id: int, partition, records) -> ApiError | None:
        """The election of one partition that may need one: its record appended to ``records``,
        or the refusal."""
        if self.election == PREFERRED and preferred_stays_unavailable(partition, self.acceptable(partition)):
            return self.not_available
        change = build_change(partition, target_isr=list(partition.isr), acceptable_leader=self.acceptable(partition),
                              min_isr=self.min_isr(topic), elr_enabled=self.elr, unclean=self.election == UNCLEAN,
                              metadata_version=self.mv, default_dir=self.default_dir,
                              preferred=self.election == PREFERRED)
        if change is None:
            return self.not_available
        records.append(change_record(topic.id, partition_id, change, self.mv))
        return None


def preferred_stays_unavailable(partition, acceptable) -> bool:
    """True when build_change(partition, target_isr=partition's ISR, preferred=True, nothing else
    asked) is None for sure: no reassignment to complete, no ELR to clear or fill, the preferred
    replica cannot lead (out of the ISR, or not ``acceptable``) and the leader may stay, so the
    builder keeps everything. The common refusal (a preferred replica that left the ISR), told
    without the builder; False says nothing (the builder decides).
    tests/controller/test_leader_election.py compares the two on random partitions."""
    p = partition
    if p.removing_replicas or p.adding_replicas or p.elr or not p.isr or not p.replicas:
        return False
    isr, preferred = p.isr, p.replicas[0]
    if preferred in isr and acceptable(preferred):
        return False
    return p.leader in isr and acceptable(p.leader)


def _elect(election: _Election, name: str, partition_id: int, records):
    """A named partition's election (ElectLeaders with TopicPartitions)."""
    topic = election.image.topics_by_name.get(name)
    if topic is None:
        return ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {name}")
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {name}-{partition_id}")
    if _not_needed(partition, election.election):
        return election.not_needed
    return election.elect(topic, partition_id, partition, records)


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


def elect_leaders(state: ControllerState, request, api_version: int):
    """(records, ElectLeadersResponse)."""
    election = election_type(request, api_version)
    if request.topic_partitions is None:
        records, results = elect_in_topics(state, list(state.image.topics_by_name), election)
        return records, ElectLeadersResponse(error_code=0, replica_election_results=results)
    records, results, lookups = BoundedList(), [], _Election(state, election)
    for t in request.topic_partitions:
        results.append(ReplicaElectionResult(topic=t.topic, partition_result=[
            _result(pid, _elect(lookups, t.topic, pid, records)) for pid in t.partitions]))
    return records, ElectLeadersResponse(error_code=0, replica_election_results=results)


@dataclass
class StepBudget:
    """Where a walk in steps (elect_in_steps) is in its topics, and how much one step may do: it
    ends after the topic that takes it to ``partitions`` looked at or ``elections`` tried (the
    partitions that needed one)."""
    partitions: int
    elections: int
    position: int = 0         # the next topic of the walk's names
    visited: int = 0
    tried: int = 0

    def next_step(self) -> None:
        self.visited = self.tried = 0

    def spent(self) -> bool:
        return self.visited >= self.partitions or self.tried >= self.elections


def elect_in_topics(state: ControllerState, names: list[str], election: int,
                    records: BoundedList | None = None, budget: StepBudget | None = None) -> tuple[list, list]:
    """The "every partition" walk over the topics ``names`` (one gone meanwhile left out):
    (records, [ReplicaElectionResult]) with the partitions that needed no election left out.
    With ``budget``: from its position on, until the step's budget is spent (the position moved
    past the topics walked)."""
    records = BoundedList() if records is None else records
    results, lookups = [], _Election(state, election)
    start = 0 if budget is None else budget.position
    for index in range(start, len(names)):
        if budget is not None:
            if budget.spent():
                break
            budget.position = index + 1
        name = names[index]
        topic = state.image.topics_by_name.get(name)
        if topic is None:
            continue
        partitions = topic.partitions
        # the answer leaves out the partitions that need no election (most of them, most of the
        # time): _not_needed's test inline, the one thing done for every partition
        if election == PREFERRED:
            wanted = [pid for pid, p in partitions.items() if p.leader != (p.replicas[0] if p.replicas else NO_LEADER)]
        else:
            wanted = [pid for pid, p in partitions.items() if p.leader == NO_LEADER]
        wanted.sort()
        results.append(ReplicaElectionResult(topic=name, partition_result=[
            _result(pid, lookups.elect(topic, pid, partitions[pid], records)) for pid in wanted]))
        if budget is not None:
            budget.visited += len(partitions)
            budget.tried += len(wanted)
    return records, results


def _result(pid: int, error: ApiError | None) -> PartitionResult:
    return PartitionResult(partition_id=pid, error_code=0 if error is None else error.code,
                           error_message=None if error is None else error.message)
