"""Unclean elections of leaderless partitions by the active controller, as Kafka 4.3.1's
QuorumController runs them: its "electUnclean" periodic task
(ReplicationControlManager.maybeElectUncleanLeaders), every ``unclean.leader.election.interval.ms``
(5 minutes), the first one period after the controller became active. Each run walks the
partitions without a leader and, where the topic allows unclean elections
(``unclean.leader.election.enable``, resolved as the other elections here resolve it:
replication.unclean_election_enabled), makes the election ElectLeaders(UNCLEAN) makes
(electLeader: any acceptable replica when no ISR or ELR member can lead). A run stops once it
has MAX_ELECTIONS_PER_IMBALANCE records, and the next comes IMMEDIATE_PERIOD_MS later instead of
a period later (PeriodicTask's immediate reschedule; the schedule is election_tasks.py's).

This is what elects a leaderless partition whose topic is given
``unclean.leader.election.enable=true`` after it lost its leader (no event touches the partition
then), and what finishes the unclean elections of an unfencing cut short by a change of active
controller. For the latter a new active controller need not wait the period:
``has_unclean_candidate`` tells PartitionMoves.resume (fencing.py) to start the unfencing's sweep
again (unfencing.py) when a leaderless partition of such a topic has an active replica.

The partitions are walked topic by topic in the image's order and by partition id; Kafka walks
its BrokersToIsrs index, whose order depends on history. Kafka logs each election and each
refusal; here the refusals of one run are one warning.
"""
from __future__ import annotations

import logging
import uuid

from .election_tasks import MAX_ELECTIONS_PER_IMBALANCE, PeriodicElectionTask
from .java_order import uuid_tree_order
from .partition_index import PID_BITS, partition_id_of
from .replication import UNCLEAN_LEADER_ELECTION, topic_unclean_election, unclean_election_default
from .state import ControllerState

log = logging.getLogger(__name__)

UNCLEAN_ELECTION_INTERVAL_MS = 300_000      # ReplicationConfigs.UNCLEAN_LEADER_ELECTION_INTERVAL_MS_DEFAULT


def _any_topic_may_allow(state: ControllerState) -> bool:
    """Whether the controller's server.properties or some config resource sets
    unclean.leader.election.enable to true: when none does, no topic allows it and no partition
    need be looked at (the default is false)."""
    return state.node_configs.static_unclean_election or any((values.get(UNCLEAN_LEADER_ELECTION) or "").strip().lower() == "true"
               for values in state.image.configs.values())


def _leaderless_of_unclean_topics(state: ControllerState):
    """(topic, partition id, registration) of each partition without a leader whose topic allows
    unclean elections, topic by topic in the image's order, then by partition id."""
    image = state.image
    if not state.partition_index.leaderless_count() or not _any_topic_may_allow(state):
        return
    by_topic: dict[int, list[int]] = {}
    for key in state.partition_index.leaderless_keys():
        by_topic.setdefault(key >> PID_BITS, []).append(partition_id_of(key))
    topics = [image.topics_by_id.get(uuid.UUID(int=topic_int)) for topic_int in by_topic]
    default = unclean_election_default(image, state.node_configs)
    allowed = [t for t in topics if t is not None and topic_unclean_election(image, t, default)]
    for topic in uuid_tree_order([t.id for t in allowed]):
        topic = image.topics_by_id[topic]
        for pid in sorted(by_topic[topic.id.int]):
            partition = topic.partitions.get(pid)
            if partition is not None:
                yield topic, pid, partition


def unclean_election_records(state: ControllerState,
                             limit: int = MAX_ELECTIONS_PER_IMBALANCE) -> list[bytes]:
    """One run of the electUnclean task: the PartitionChangeRecords of at most ``limit``
    elections (maybeTriggerUncleanLeaderElectionForLeaderlessPartitions)."""
    # Imported here: fencing.py imports this module, and leader_election's imports lead back to fencing.py.
    from .leader_election import UNCLEAN, _Election
    records: list[bytes] = []
    election = None
    refused = []
    for topic, pid, partition in _leaderless_of_unclean_topics(state):
        if len(records) >= limit:
            break
        election = election or _Election(state, UNCLEAN)
        if election.elect(topic, pid, partition, records) is None:
            log.info("Triggering unclean leader election for offline partition %s-%d (isr: %s, replicas: %s, "
                     "partition epoch: %d, leader epoch: %d)", topic.name, pid, list(partition.isr),
                     list(partition.replicas), partition.partition_epoch, partition.leader_epoch)
        else:
            refused.append(f"{topic.name}-{pid}")
    if refused:
        log.warning("Cannot trigger unclean leader election for %d offline partitions (%s%s): no replica can lead",
                    len(refused), ", ".join(refused[:10]), ", ..." if len(refused) > 10 else "")
    return records


def has_unclean_candidate(state: ControllerState, active: set[int]) -> bool:
    """Whether a partition without a leader, of a topic that allows unclean elections, has a
    replica among the ``active`` brokers: one an unfencing would have elected (uncleanly when
    out of the ISR and ELR; the sweep it starts decides, and writes nothing for a replica whose
    directory is offline)."""
    return any(not active.isdisjoint(partition.replicas) for _, _, partition in _leaderless_of_unclean_topics(state))


class UncleanElectionTask(PeriodicElectionTask):
    """The electUnclean task (its schedule: election_tasks.py)."""

    def __init__(self, interval_ms: int = UNCLEAN_ELECTION_INTERVAL_MS):
        super().__init__(interval_ms)

    def records(self, state: ControllerState, limit: int) -> list[bytes]:
        return unclean_election_records(state, limit)

    def pending(self, state: ControllerState) -> bool:
        return bool(state.partition_index.leaderless_count())
