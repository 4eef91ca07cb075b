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
(``pending``), walks the cluster's partitions; a run walks the set until it has its records, as
Kafka's does. Kafka walks its set in its hash order; here the partitions come in the index's
order (under each preferred replica), which also depends on history only.
"""
from __future__ import annotations

import logging
import time
import uuid

from .election_tasks import MAX_ELECTIONS_PER_IMBALANCE, PeriodicElectionTask
from .leader_election import PREFERRED, _Election
from .partition_index import PID_BITS, partition_id_of, partition_of
from .state import ControllerState

log = logging.getLogger(__name__)

LEADER_IMBALANCE_CHECK_INTERVAL_MS = 300_000      # ReplicationConfigs.LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS_DEFAULT
_UNSEEN = object()


def balance_records(state: ControllerState, static_min_isr: int,
                    limit: int = MAX_ELECTIONS_PER_IMBALANCE) -> list[bytes]:
    """One run of the electPreferred task: the PartitionChangeRecords of the preferred elections
    of the imbalanced partitions, at most ``limit``
    (maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader)."""
    started = time.perf_counter()
    records: list[bytes] = []
    if state.partition_index.has_imbalanced():
        election = _Election(state, PREFERRED, static_min_isr)
        topics_by_id = state.image.topics_by_id
        topics: dict = {}           # topic id bits -> topic: a UUID made once a topic
        # The index's sets walked as they are (generate runs alone: nothing is applied meanwhile)
        # and left once the run has its records: a run pays for the partitions it looks at.
        for key in state.partition_index.walk_imbalanced():
            if len(records) >= limit:
                break
            bits = key >> PID_BITS
            topic = topics.get(bits, _UNSEEN)
            if topic is _UNSEEN:
                topic = topics[bits] = topics_by_id.get(uuid.UUID(int=bits))
            partition = None if topic is None else topic.partitions.get(partition_id_of(key))
            if partition is None:   # cannot be: the index follows the image; Kafka logs it and goes on
                log.error("Skipping unknown imbalanced partition %s", partition_of(key))
                continue
            election.elect(topic, partition_id_of(key), partition, records)
    # Kafka's electPreferred is a VERBOSE periodic task: it logs every run.
    log.info("Periodic task electPreferred generated %d records in %d microseconds.", len(records),
             (time.perf_counter() - started) * 1e6)
    return records


class LeaderBalanceTask(PeriodicElectionTask):
    """The electPreferred task; ``enabled``: auto.leader.rebalance.enable."""

    def __init__(self, interval_ms: int = LEADER_IMBALANCE_CHECK_INTERVAL_MS, enabled: bool = True):
        super().__init__(interval_ms, enabled)

    def records(self, state: ControllerState, static_min_isr: int, limit: int) -> list[bytes]:
        return balance_records(state, static_min_isr, limit)

    def pending(self, state: ControllerState) -> bool:
        return state.partition_index.has_imbalanced()
