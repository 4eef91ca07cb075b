"""Automatic leader balancing by the active controller, as Kafka 4.3.1's QuorumController runs
it: its "electPreferred" periodic task (ReplicationControlManager.maybeBalancePartitionLeaders),
registered when ``auto.leader.rebalance.enable`` (true by default) and run every
``leader.imbalance.check.interval.seconds`` (300), the first run one period after the
controller became active (the schedule: election_tasks.py). Both settings are read from the
controller's server.properties when it starts, as Kafka's ControllerServer reads them: neither
is a dynamic config.

A run makes, in the partitions their first replica does not lead, the election
ElectLeaders(PREFERRED) makes (leader_election._Election: the first replica leads when it is in
the ISR, unfenced, not shutting down and its directory online; otherwise the builder keeps the
leader, and the partition changes only when something else of it must, such as a reassignment to
complete), one PartitionChangeRecord each. A broker that came back and rejoined the ISR of its
partitions so gets their leadership back at the next run. A run stops once it has
MAX_ELECTIONS_PER_IMBALANCE records, and the next comes IMMEDIATE_PERIOD_MS later.

The partitions are not looked for at each run: the partition index (partition_index.py) keeps
them, as Kafka's imbalancedPartitions set, updated as each partition record is applied, so that
neither a heartbeat nor the controller's loop, which asks whether a run could write anything
(``pending``), walks the cluster's partitions. Kafka walks its set in its hash order; here the
partitions come in the index's order (under each preferred replica), which also depends on
history only.

Unlike Kafka's, a run looks at MAX_LOOKS_PER_RUN partitions at most: a walk takes the imbalanced
partitions' keys when it starts, and when a run stops before their end the next run, still
IMMEDIATE_PERIOD_MS later, goes on from there (a partition balanced or deleted meanwhile is passed
over; one imbalanced meanwhile waits for the next walk, a period later). A walk of 100,000
partitions that could not be given their first replica, in one run as Kafka makes it, held the
loop 0.2-0.3 s at 1M partitions (benchmarks/README.md); the records are the ones one run would
write, in batches of its steps.
"""
from __future__ import annotations

import logging
import time
import uuid

from .election_tasks import MAX_ELECTIONS_PER_IMBALANCE, PeriodicElectionTask
from .leader_election import PREFERRED, _Election
from .partition_index import PID_BITS, partition_id_of
from .state import ControllerState

log = logging.getLogger(__name__)

LEADER_IMBALANCE_CHECK_INTERVAL_MS = 300_000      # ReplicationConfigs.LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS_DEFAULT
# The partitions one run looks at, at most (kafkawire's own bound: at 1M partitions a walk of
# 100,000 that elects nothing held the loop 0.2-0.3 s, and a run of 10,000 looks 45-55 ms;
# benchmarks/README.md)
MAX_LOOKS_PER_RUN = 2_000
_UNSEEN = object()


def balance_records(state: ControllerState, keys: list[int], start: int = 0,
                    limit: int = MAX_ELECTIONS_PER_IMBALANCE, max_looks: int = MAX_LOOKS_PER_RUN) -> tuple[list, int]:
    """One run of the electPreferred task over the imbalanced partitions' ``keys``
    (PartitionIndex.imbalanced_keys) from ``start`` on: the PartitionChangeRecords of their
    preferred elections, at most ``limit`` of them, ``max_looks`` partitions looked at at most
    (maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader, which has no such bound); and
    the position the next run of the walk starts from. A partition balanced or gone since the
    keys were taken is passed over."""
    started = time.perf_counter()
    records: list[bytes] = []
    election = _Election(state, PREFERRED)
    topics_by_id = state.image.topics_by_id
    topics: dict = {}           # topic id bits -> topic: a UUID made once a topic
    position, end = start, min(len(keys), start + max_looks)
    while position < end and len(records) < limit:
        key = keys[position]
        position += 1
        bits = key >> PID_BITS
        topic = topics.get(bits, _UNSEEN)
        if topic is _UNSEEN:
            topic = topics[bits] = topics_by_id.get(uuid.UUID(int=bits))
        partition = None if topic is None else topic.partitions.get(partition_id_of(key))
        if partition is None or not partition.replicas or partition.leader == partition.replicas[0]:
            continue
        election.elect(topic, partition_id_of(key), partition, records)
    # Kafka's electPreferred is a VERBOSE periodic task: it logs every run at INFO. Here a walk
    # may take many runs (50 at 1M partitions with a broker gone): those that write nothing log
    # at DEBUG.
    log.log(logging.INFO if records else logging.DEBUG,
            "Periodic task electPreferred generated %d records in %d microseconds.", len(records),
            (time.perf_counter() - started) * 1e6)
    return records, position


class LeaderBalanceTask(PeriodicElectionTask):
    """The electPreferred task; ``enabled``: auto.leader.rebalance.enable. A walk of the
    imbalanced partitions takes their keys when it starts and goes on over as many runs as its
    ``max_looks`` a run need."""

    def __init__(self, interval_ms: int = LEADER_IMBALANCE_CHECK_INTERVAL_MS, enabled: bool = True):
        super().__init__(interval_ms, enabled)
        self.max_looks = MAX_LOOKS_PER_RUN
        self._walk: list[int] | None = None       # the keys of the walk under way
        self._position = 0

    def activate(self, now: int) -> None:
        super().activate(now)
        self._walk = None                           # a new active controller walks afresh

    def records(self, state: ControllerState, limit: int) -> list[bytes]:
        if self._walk is None:
            self._walk, self._position = state.partition_index.imbalanced_keys(), 0
        records, self._position = balance_records(state, self._walk, self._position, limit,
                                                  self.max_looks)
        if self._position >= len(self._walk):
            self._walk = None
        return records

    def unfinished(self) -> bool:
        return self._walk is not None

    def pending(self, state: ControllerState) -> bool:
        return state.partition_index.has_imbalanced()
