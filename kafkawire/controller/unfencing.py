"""The two other walks of many partitions a heartbeat can start, in bounded events (issue 28):
unfencing and a heartbeat's OfflineLogDirs. PartitionMoves (fencing.py) runs them after the
fence-kind jobs, one event of at most MAX_MOVES_PER_EVENT partitions at a time.

**Unfencing** (handleBrokerUnfenced): Kafka writes the unfence record, then walks every
partition without a leader (BrokersToIsrs.partitionsWithNoLeader) and elects where it now can,
in one event. After a whole-cluster outage, or when a broker that was the last ISR member of
100k partitions comes back, that is 100k+ records with the loop held. So when more partitions
than one event visits have no leader, the unfence record is written alone (Kafka's order: it
comes first there too) and a *sweep* of the partitions leaderless then elects in later events.
Written first, the unfence makes the broker an active one in the image, so each step elects
among the active brokers as the image has them at that step (``broker_to_add`` is not needed),
visiting only the partitions that still have no leader: a partition that got a leader meanwhile
(AlterPartition, ElectLeaders, another broker's unfencing) is left alone, and a broker fenced or
shutting down meanwhile is simply no longer acceptable. Between the steps the broker is
unfenced with some partitions it could lead still leaderless: the state Kafka's event passes
through too, only longer; nothing else is unsafe in it, since every election in between takes
active brokers and every partition that loses its leader in between is elected by the event
that made it leaderless, with the broker already active. A partition that becomes leaderless
after the sweep started is therefore not its business; one leaderless at the start is visited
once. Another unfencing of a sweep's worth during a sweep replaces it with the partitions
leaderless then (a superset of what the old one had left that still needs it), so there is at
most one sweep and its memory is one list of the leaderless partitions' keys (sorted in steps:
SortedInSteps).

A new active controller starts a sweep when a partition without a leader holds an active broker
in its ISR or ELR (a set intersection per active broker, no partition visited): that happens
when a sweep was cut short (after Kafka's one event, and every later event that makes a
partition leaderless, the only such partitions left are those where that broker cannot lead,
its replica's directory offline; for them the sweep visits and writes nothing), or when a
partition without a leader, of a topic that allows unclean elections, has an active replica
(unclean_elections.has_unclean_candidate): the unclean elections the sweep had left. Any other
leaderless partition such a topic holds is elected by the controller's electUnclean task, as in
Kafka (unclean_elections.py).

**OfflineLogDirs** (handleDirectoriesOffline): Kafka walks its index of the partitions by
directory and removes the broker from the ISR and leadership of each replica it has in a
directory newly offline, then writes the BrokerRegistrationChangeRecord v2 naming the
directories left online. Here, when the broker is in more ISRs and ELRs than one event visits,
the registration change comes first, alone, and a *directory job* walks the broker's ISR and ELR
partitions in later events, moving those whose replica of the broker is in one of the offline
directories (as the image has it at that step: a replica reassigned to an online directory
meanwhile by AssignReplicasToDirs stays). Written first, the registration makes those replicas
offline in the image: no election can choose them (ReplicationControlManager.LeaderAcceptor
checks the directory). AlterPartition does not check directories, in Kafka either: a leader
could put such a replica back into an ISR between two steps as it could after Kafka's event
(it adds only a follower that fetches, which a replica in a failed directory does not); a step
visiting the partition later takes it out again, as it reads the partition then. So the
partitions noted at the start are all there is to move.
No index by directory is needed: the broker's ISR and ELR keys are already indexed, and a
replica's directory is read from the partition when the step visits it.

A directory job lives on the active controller only. The broker repeats its offline directories
in every heartbeat (BrokerLifecycleManager sends them all, every time), so a new active
controller that sees a broker report directories its registration no longer lists checks that
broker's ISR and ELR partitions once (``dirs_checked``): in the heartbeat's own event when they
are at most one event's worth, else as a directory job. What is left of a job cut short is
found that way; a job that had finished writes nothing.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from kafkawire.metadata.registrations import NO_LEADER

from .partition_index import partition_of
from .replication import leader_and_isr_updates, replica_directory
from .state import ControllerState


# Keys sorted by one step before the visits begin: sorting 16k index keys takes ~3 ms here, where
# sorting a broker's 300,000 at once held the loop ~60 ms (1M: ~200 ms).
SORT_RUN = 16384


class SortedInSteps:
    """Index keys to visit in order (topic by topic, by partition id, so that a step touches few
    topics: each topic a write touches costs a copy of its partitions' map), sorted a run of
    SORT_RUN keys per step and then merged as they are taken. The keys in ``skip`` (a set the
    caller no longer changes) are left out as each run is sorted: ``left`` counts them until then.
    The keys and the sorted runs are kept as tuples: a tuple of ints is untracked by the first
    collection that sees it, where a list of a fence's 300,000 keys at 1M partitions was visited
    key by key by every collection until frozen (full collections of ~40 ms of CPU that left
    2,800 objects alive; benchmarks/README.md "Paced full collections")."""

    def __init__(self, keys: list, skip: set | None = None):
        self._raw, self._runs, self._merged, self._skip = tuple(keys), [], None, skip
        self.left = len(keys)

    def take(self, limit: int) -> list | None:
        """The next ``limit`` keys at most, or None for a step spent sorting a run with more runs
        to sort (the last run sorted, the keys are taken in the same step: a job of at most one
        run's keys takes them as if sorted at its start)."""
        if self._merged is None:
            start = len(self._runs) * SORT_RUN
            if start < len(self._raw):
                run = self._raw[start:start + SORT_RUN]
                if self._skip:
                    kept = [key for key in run if key not in self._skip]
                    self.left -= len(run) - len(kept)
                    run = kept
                self._runs.append(tuple(sorted(run)))
                if start + SORT_RUN < len(self._raw):
                    return None
            self._merged, self._raw = heapq.merge(*self._runs), None
        keys = list(itertools.islice(self._merged, limit))
        self.left -= len(keys)
        return keys


@dataclass
class Sweep:
    """The partitions leaderless when the last big unfencing began, to elect in steps."""
    pending: SortedInSteps
    visited: int = 0

    def done(self) -> bool:
        return self.pending.left <= 0

    def next_records(self, state: ControllerState, limit: int) -> list[bytes]:
        """The next ``limit`` partitions' elections among the active brokers, for those still
        without a leader."""
        image = state.image
        keys = self.pending.take(limit)
        if keys is None:
            return []
        self.visited += len(keys)
        chosen = [found for found in _partitions(image, keys) if found[2].leader == NO_LEADER]
        return leader_and_isr_updates(image, broker_to_remove=NO_LEADER, broker_to_add=NO_LEADER, chosen=chosen,
                                      node_configs=state.node_configs)


@dataclass
class DirectoryJob:
    """A broker's ISR and ELR partitions, to take it out of those whose replica is in ``dirs``."""
    broker_id: int
    epoch: int                       # the registration the job is for: a new incarnation ends it
    dirs: frozenset
    pending: SortedInSteps
    visited: int = 0

    def done(self) -> bool:
        return self.pending.left <= 0

    def next_records(self, state: ControllerState, limit: int) -> list[bytes]:
        """The next ``limit`` partitions' records (handleDirectoriesOffline's, for those whose ISR
        or ELR still holds the broker with its replica in an offline directory); the job ends
        when the broker's registration is gone or another incarnation's."""
        image = state.image
        broker = image.brokers.get(self.broker_id)
        if broker is None or broker.epoch != self.epoch:
            self.pending.left = 0
            return []
        keys = self.pending.take(limit)
        if keys is None:
            return []
        self.visited += len(keys)
        return offline_replica_updates(state, self.broker_id, self.dirs, _partitions(image, keys))


def offline_replica_updates(state: ControllerState, broker_id: int, dirs, partitions) -> list[bytes]:
    """generateLeaderAndIsrUpdates removing ``broker_id`` from the ``partitions`` (as (topic,
    partition id, registration)) whose ISR or ELR holds it with its replica in one of ``dirs``."""
    chosen = [(topic, pid, p) for topic, pid, p in partitions
              if (broker_id in p.isr or broker_id in p.elr) and replica_directory(p, broker_id) in dirs]
    return leader_and_isr_updates(state.image, broker_to_remove=broker_id, broker_to_add=NO_LEADER, chosen=chosen,
                                  node_configs=state.node_configs)


def _partitions(image, keys):
    """(topic, partition id, registration) of the ``keys`` that still exist."""
    for key in keys:
        topic_id, partition_id = partition_of(key)
        topic = image.topics_by_id.get(topic_id)
        partition = topic.partitions.get(partition_id) if topic is not None else None
        if partition is not None:
            yield topic, partition_id, partition
