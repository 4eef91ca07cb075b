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
partitions come topic by topic in the index's order, which also depends on history only.
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


def _imbalanced_by_topic(state: ControllerState) -> dict[int, list[int]]:
    """topic id bits -> the ids of its partitions that their first replica does not lead."""
    by_topic: dict[int, list[int]] = {}
    for key in state.partition_index.imbalanced_keys():
        by_topic.setdefault(key >> PID_BITS, []).append(partition_id_of(key))
    return by_topic


def balance_records(state: ControllerState, static_min_isr: int,
                    limit: int = MAX_ELECTIONS_PER_IMBALANCE) -> list[bytes]:
    """One run of the electPreferred task: the PartitionChangeRecords of the preferred elections
    of the imbalanced partitions, at most ``limit``
    (maybeTriggerLeaderChangeForPartitionsWithoutPreferredLeader)."""
    started = time.perf_counter()
    records: list[bytes] = []
    if state.partition_index.has_imbalanced():
        election = _Election(state, PREFERRED, static_min_isr)
        image = state.image
        for topic_bits, partition_ids in _imbalanced_by_topic(state).items():
            topic = image.topics_by_id.get(uuid.UUID(int=topic_bits))
            if topic is None:       # cannot be: the index follows the image; Kafka logs it and goes on
                log.error("Skipping unknown imbalanced topic %s", uuid.UUID(int=topic_bits))
                continue
            for pid in partition_ids:
                if len(records) >= limit:
                    break
                partition = topic.partitions.get(pid)
                if partition is None:
                    log.error("Skipping unknown imbalanced partition %s-%d", topic.name, pid)
                    continue
                election.elect(topic, pid, partition, records)
            if len(records) >= limit:
                break
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
