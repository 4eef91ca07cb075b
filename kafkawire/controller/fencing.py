"""Moving a broker's partitions in bounded events (issue 28): fencing, controlled shutdown, a new
incarnation's registration, UnregisterBroker.

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

A request whose one event would also walk every partition of a broker, the registration of a
new incarnation (handleBrokerShutdown: the previous one leaves its ISRs, and after an unclean
shutdown with ELR on its ELRs too) and UnregisterBroker (handleBrokerUnregistered: every ISR and
ELR), moves them first when the broker's registration is fenced and they are more than one
event moves (``waiter``): the request's own event comes once its job has ended, and writes, as
Kafka's would, what is left (a partition in no need of a change writes nothing) and then its
own record (RegisterBrokerRecord, UnregisterBrokerRecord). So the new incarnation is registered,
and can be unfenced, only once it is out of every ISR (and ELR) it was in, as in Kafka; and an
UnregisterBroker is answered once its UnregisterBrokerRecord is committed, after everything
else. Only a fenced registration gets a job: nothing can put it back into an ISR or ELR or elect
it while its partitions wait, and it stays fenced until its job ends (``in_progress``). These
jobs are not resumed by a new active controller: the request is answered NOT_CONTROLLER and its
sender asks again (the broker's registration is retried until answered; Admin retries
NOT_CONTROLLER), which starts over from what is left. What a job has written by then is what
the request's one event would have written for those partitions, and stands alone: a fenced
broker left some ISRs and ELRs.

The same PartitionMoves runs, after these jobs, the elections of an unfencing and the moves of
a heartbeat's OfflineLogDirs in steps (unfencing.py, where why that is safe is written down).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kafkawire.metadata.registrations import NO_LEADER

from .errors import not_controller
from .partition_index import PID_BITS, partition_id_of, topic_of
from .replication import leader_and_isr_updates
from .state import ControllerState
from .unfencing import DirectoryJob, SortedInSteps, Sweep

# Partitions visited by one event of a job: each costs ~15 us to generate and ~15 us to apply
# here, so an event holds the loop ~8 ms (a heartbeat's answer waits at most about that long).
MAX_MOVES_PER_EVENT = 250


@dataclass(frozen=True)
class Pass:
    """What a job does to each partition (Kafka's generateLeaderAndIsrUpdates arguments)."""
    elr: bool             # the partitions whose ELR holds the broker too, after those of its ISRs
    unclean: bool         # brokerWithUncleanShutdown (out of the ISR and the ELR), not brokerToRemove


REMOVE = Pass(elr=False, unclean=False)              # handleBrokerFenced, ...InControlledShutdown, ...Shutdown
UNREGISTER = Pass(elr=True, unclean=False)           # handleBrokerUnregistered
UNCLEAN_SHUTDOWN = Pass(elr=True, unclean=True)      # handleBrokerShutdown after an unclean shutdown, ELR on


@dataclass
class _Job:
    broker_id: int
    epoch: int                       # the registration the job is for: a new incarnation ends it
    kind: Pass = REMOVE
    parts: list = field(default_factory=list)        # (SortedInSteps of partition keys, "isr" or "elr"), in turn
    waiters: list = field(default_factory=list)      # futures of the requests whose event comes after the job


class PartitionMoves:
    """The jobs in progress, by broker id, in the order they started."""

    def __init__(self, max_moves_per_event: int = MAX_MOVES_PER_EVENT):
        self.max_moves_per_event = max_moves_per_event
        self._jobs: dict[int, _Job] = {}
        self._dir_jobs: dict[int, DirectoryJob] = {}     # unfencing.py: OfflineLogDirs
        self.dirs_checked: set[int] = set()              # brokers whose offline directories this controller saw to
        self._sweep: Sweep | None = None                 # unfencing.py: the leaderless partitions to elect

    def needs_job(self, state: ControllerState, broker_id: int, kind: Pass = REMOVE) -> bool:
        """Whether moving ``broker_id``'s partitions takes more than one event."""
        return broker_id in self._jobs or partitions_to_visit(state, broker_id, kind) > self.max_moves_per_event

    def start(self, state: ControllerState, broker_id: int, kind: Pass = REMOVE) -> None:
        """A job for every partition whose ISR (and, for ``kind.elr``, ELR) holds ``broker_id``
        now, the ones it leads first (so leadership moves in a third of the time at replication
        factor 3). Costs a copy of the broker's index entries, no partition. A job of the broker
        in progress stays when it is of the same kind or ``kind`` is REMOVE (every kind removes
        the broker from its ISRs); otherwise it is replaced, its waiters kept."""
        current = self._jobs.get(broker_id)
        if current is not None and (current.kind == kind or kind == REMOVE):
            return
        index = state.partition_index
        led, followed = index.isr_keys_split(broker_id)
        parts = [(SortedInSteps(led), "isr"), (SortedInSteps(followed), "isr")]
        if kind.elr:
            parts.append((SortedInSteps(index.elr_key_list(broker_id)), "elr"))
        self._jobs[broker_id] = _Job(broker_id, state.image.brokers[broker_id].epoch, kind, parts,
                                     waiters=current.waiters if current is not None else [])

    def waiter(self, broker_id: int) -> asyncio.Future:
        """A future done when ``broker_id``'s job ends (NOT_CONTROLLER if leadership goes first)."""
        done = asyncio.get_running_loop().create_future()
        self._jobs[broker_id].waiters.append(done)
        return done

    def resume(self, state: ControllerState) -> None:
        """On activation: a job for each fenced or shutting-down broker that still leads, and a
        sweep when a leaderless partition holds an active broker in its ISR or ELR (unfencing.py)."""
        index = state.partition_index
        for broker in state.image.brokers.values():
            if (broker.fenced or broker.in_controlled_shutdown) and index.has_leaderships(broker.id):
                self.start(state, broker.id)
            elif (self._sweep is None and not broker.fenced and not broker.in_controlled_shutdown
                  and index.leaderless_in_isr_or_elr(broker.id)):
                self.start_sweep(state)

    # --- unfencing and offline directories (unfencing.py) ---------------------------------------
    def needs_sweep(self, state: ControllerState) -> bool:
        """Whether an unfencing's election walk takes more than one event."""
        return state.partition_index.leaderless_count() > self.max_moves_per_event

    def start_sweep(self, state: ControllerState) -> None:
        """Elect, in steps, in every partition without a leader now (replacing a sweep in progress)."""
        self._sweep = Sweep(SortedInSteps(state.partition_index.leaderless_keys()))

    def needs_dir_job(self, state: ControllerState, broker_id: int) -> bool:
        """Whether moving ``broker_id`` off offline directories visits more than one event's partitions."""
        index = state.partition_index
        return broker_id in self._dir_jobs or \
            index.isr_count(broker_id) + index.elr_count(broker_id) > self.max_moves_per_event

    def start_dir_job(self, state: ControllerState, broker_id: int, dirs) -> None:
        """Take ``broker_id`` out of the ISRs and ELRs where its replica is in one of ``dirs``, in
        steps (with the directories of a job of the broker in progress, from the start again)."""
        current = self._dir_jobs.get(broker_id)
        if current is not None and frozenset(dirs) <= current.dirs:
            return              # the same directories again (a registration left with none keeps listing them)
        dirs = frozenset(dirs) | (current.dirs if current is not None else frozenset())
        self._dir_jobs[broker_id] = DirectoryJob(broker_id, state.image.brokers[broker_id].epoch, dirs,
                                                 SortedInSteps(state.partition_index.isr_or_elr_keys(broker_id)))
        self.dirs_checked.add(broker_id)

    def in_progress(self, broker_id: int) -> bool:
        return broker_id in self._jobs

    def __bool__(self) -> bool:
        return bool(self._jobs or self._dir_jobs or self._sweep)

    def clear(self) -> None:
        """Leadership lost: the next active controller resumes what is left; the requests
        waiting for a job are answered NOT_CONTROLLER (their senders ask the next one)."""
        jobs, self._jobs = self._jobs, {}
        self._dir_jobs, self._sweep = {}, None
        self.dirs_checked = set()
        for job in jobs.values():
            _release(job, not_controller(None))

    def next_records(self, state: ControllerState, static_min_isr: int) -> list[bytes]:
        """One event of the oldest job: the records of its next MAX_MOVES_PER_EVENT partitions
        that still hold the broker in their ISR (in the ELR part, their ELR), possibly none; the
        job ends with its last partition, or when its broker's registration is gone or another
        incarnation's, and the requests waiting for it go on. With none: a step of the oldest
        directory job, else of the sweep (unfencing.py)."""
        if not self._jobs:
            return self._step_of_the_others(state, static_min_isr)
        broker_id = next(iter(self._jobs))
        job = self._jobs[broker_id]
        broker = state.image.brokers.get(broker_id)
        if broker is None or broker.epoch != job.epoch:
            _release(self._jobs.pop(broker_id))
            return []
        records, budget = [], self.max_moves_per_event
        while job.parts and budget > 0:
            keys_in_turn, field_name = job.parts[0]
            keys = keys_in_turn.take(budget)        # None: this step sorted keys instead (unfencing.py)
            if keys is None:
                break
            records += _updates(state.image, job, _present(state.image, keys, broker_id, field_name), static_min_isr)
            budget -= len(keys)
            if keys_in_turn.left <= 0:
                job.parts.pop(0)
        if not job.parts:
            _release(self._jobs.pop(broker_id))
        return records

    def _step_of_the_others(self, state: ControllerState, static_min_isr: int) -> list[bytes]:
        if self._dir_jobs:
            broker_id = next(iter(self._dir_jobs))
            job = self._dir_jobs[broker_id]
            records = job.next_records(state, self.max_moves_per_event, static_min_isr)
            if job.done():
                del self._dir_jobs[broker_id]
            return records
        if self._sweep is None:
            return []
        records = self._sweep.next_records(state, self.max_moves_per_event, static_min_isr)
        if self._sweep.done():
            self._sweep = None
        return records


def partitions_to_visit(state: ControllerState, broker_id: int, kind: Pass = REMOVE) -> int:
    """The partitions one event of ``kind`` visits: those whose ISR (and ELR) holds the broker."""
    index = state.partition_index
    return index.isr_count(broker_id) + (index.elr_count(broker_id) if kind.elr else 0)


def _present(image, keys, broker_id: int, field_name: str) -> list:
    """(topic, partition id, registration) of the ``keys`` whose ``field_name`` (isr, elr) still
    holds the broker; the others changed meanwhile (or are gone) and need nothing. The keys come
    sorted, a topic's together: its id is made and looked up once per topic, not per key (a
    UUID is made and hashed in Python)."""
    chosen = []
    topics_by_id = image.topics_by_id
    last_topic_int, partitions, topic = None, None, None
    for key in keys:
        topic_int = key >> PID_BITS
        if topic_int != last_topic_int:
            last_topic_int = topic_int
            topic = topics_by_id.get(topic_of(key))
            partitions = topic.partitions if topic is not None else None
        if partitions is None:
            continue
        partition_id = partition_id_of(key)
        if partition_id in partitions:
            partition = partitions[partition_id]
            if broker_id in getattr(partition, field_name):
                chosen.append((topic, partition_id, partition))
    return chosen


def _updates(image, job: _Job, chosen: list, static_min_isr: int) -> list[bytes]:
    if job.kind.unclean:
        return leader_and_isr_updates(image, broker_to_remove=NO_LEADER, broker_to_add=NO_LEADER, chosen=chosen,
                                      static_min_isr=static_min_isr, unclean_shutdown=job.broker_id)
    return leader_and_isr_updates(image, broker_to_remove=job.broker_id, broker_to_add=NO_LEADER, chosen=chosen,
                                  static_min_isr=static_min_isr)


def _release(job: _Job, error: Exception | None = None) -> None:
    """The requests waiting for ``job`` go on (or are refused with ``error``)."""
    for done in job.waiters:
        if not done.done():
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)
