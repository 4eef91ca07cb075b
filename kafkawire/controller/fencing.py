"""Moving a fenced (or shutting-down) broker's partitions in bounded events (issue 28).

Kafka's handleBrokerFenced and handleBrokerInControlledShutdown generate one record per
partition whose ISR holds the broker in one controller event, appended as non-atomic batches
of up to maxRecordsPerBatch (QuorumController.appendRecords). A broker in 300,000 ISRs (one
that leads a tenth of 1M partitions at replication factor 3) then costs that many records in
one event: in Java a fraction of a second; here some 30 us a record, so 9.5 s with the event
loop held, every other broker's heartbeat waiting, their sessions close to expiring.

So when a broker is in more than MAX_MOVES_PER_EVENT ISRs, the controller writes its change of
state first, alone (the fence record, or the controlled-shutdown one, which Kafka writes first
too), and moves the partitions in later events of at most MAX_MOVES_PER_EVENT partitions each,
the partitions it leads first; other writes (heartbeats, CreateTopics) run in between. A
deliberate difference from Kafka (docs/differences.md): its fence record comes after the
moves; here, for such a broker, before them. Fenced first, nothing can put the broker back into
an ISR or elect it while its partitions wait (AlterPartition and elections take active brokers
only), so the ISRs noted when the job starts are all there is to move; and the broker cannot be
unfenced before its job ends (``in_progress``), as in Kafka, where the unfencing heartbeat's
event comes after the fencing one. A broker in at most MAX_MOVES_PER_EVENT ISRs is handled in
one event with Kafka's records in Kafka's order, as before.

The jobs live on the active controller only. A new active controller resumes the job of every
fenced or shutting-down broker that still leads a partition (``resume``); the ISRs it is still a
follower in are left to their leaders' AlterPartition, as a fenced follower's always are.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkawire.metadata.registrations import NO_LEADER

from .partition_index import partition_of
from .replication import leader_and_isr_updates
from .state import ControllerState

# Partitions visited by one event of a job: each costs ~15 us to generate and ~15 us to apply
# here, so an event holds the loop ~8 ms (a heartbeat's answer waits at most about that long).
MAX_MOVES_PER_EVENT = 250


@dataclass
class _Job:
    broker_id: int
    epoch: int                       # the registration the job is for: a new incarnation ends it
    pending: list = field(default_factory=list)      # partition keys (partition_index), leaders first
    cursor: int = 0


class PartitionMoves:
    """The jobs in progress, by broker id, in the order they started."""

    def __init__(self, max_moves_per_event: int = MAX_MOVES_PER_EVENT):
        self.max_moves_per_event = max_moves_per_event
        self._jobs: dict[int, _Job] = {}

    def needs_job(self, state: ControllerState, broker_id: int) -> bool:
        """Whether moving ``broker_id``'s partitions takes more than one event."""
        return (broker_id in self._jobs
                or state.partition_index.isr_count(broker_id) > self.max_moves_per_event)

    def start(self, state: ControllerState, broker_id: int) -> None:
        """A job for every partition whose ISR holds ``broker_id`` now, the ones it leads first
        (so leadership moves in a third of the time at replication factor 3). Costs a copy of
        the broker's index entries, no partition."""
        if broker_id in self._jobs:
            return
        self._jobs[broker_id] = _Job(broker_id, state.image.brokers[broker_id].epoch,
                                     state.partition_index.isr_keys_leaders_first(broker_id))

    def resume(self, state: ControllerState) -> None:
        """On activation: a job for each fenced or shutting-down broker that still leads."""
        for broker in state.image.brokers.values():
            if (broker.fenced or broker.in_controlled_shutdown) and state.partition_index.has_leaderships(broker.id):
                self.start(state, broker.id)

    def in_progress(self, broker_id: int) -> bool:
        return broker_id in self._jobs

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def clear(self) -> None:
        """Leadership lost: the next active controller resumes what is left."""
        self._jobs.clear()

    def next_records(self, state: ControllerState, static_min_isr: int) -> list[bytes]:
        """One event of the oldest job: the records of its next MAX_MOVES_PER_EVENT partitions
        that still hold the broker in their ISR (possibly none); the job ends with its last
        partition, or when its broker's registration is gone or another incarnation's."""
        broker_id = next(iter(self._jobs))
        job = self._jobs[broker_id]
        broker = state.image.brokers.get(broker_id)
        if broker is None or broker.epoch != job.epoch:
            del self._jobs[broker_id]
            return []
        image = state.image
        chosen = []
        end = min(job.cursor + self.max_moves_per_event, len(job.pending))
        for key in job.pending[job.cursor:end]:
            topic_id, partition_id = partition_of(key)
            topic = image.topics_by_id.get(topic_id)
            partition = topic.partitions[partition_id] if topic is not None and partition_id in topic.partitions \
                else None
            if partition is not None and broker_id in partition.isr:
                chosen.append((topic, partition_id, partition))
        job.cursor = end
        if job.cursor >= len(job.pending):
            del self._jobs[broker_id]
        return leader_and_isr_updates(image, broker_to_remove=broker_id, broker_to_add=NO_LEADER, chosen=chosen,
                                      static_min_isr=static_min_isr)
