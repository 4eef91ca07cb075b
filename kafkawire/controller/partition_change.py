"""Leader and ISR changes for one partition: Kafka's PartitionChangeBuilder (4.x), for what the
controller here does with it: removing a broker from the ISR (fencing, controlled shutdown)
and electing leaders for partitions without one (unfencing).

It follows Kafka's build(): the ELR bookkeeping of KIP-966 when eligible.leader.replicas is
enabled (a shrinking ISR below min.insync.replicas moves members to the ELR; an empty ISR
records the last leader in lastKnownElr; a leader elected from the ELR becomes the whole ISR),
the KIP-841 rule without it (the last ISR member stays in the ISR of a leaderless partition),
an online or unclean election, the leader epoch bump metadata.version < 3.6 needs on an ISR
shrink, and no record when nothing changes. Reassignments and directory changes are not
handled: the controller does not reassign.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkawire.metadata.registrations import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration

RECOVERING = 1
LEADER_EPOCH_BUMP_ON_SHRINK_BEFORE = 12      # IBP_3_6_IV0 (KAFKA-15021)


@dataclass
class PartitionChange:
    """The non-null fields of a PartitionChangeRecord (None: unchanged)."""
    leader: int = NO_LEADER_CHANGE
    isr: list | None = None
    eligible_leader_replicas: list | None = None
    last_known_elr: list | None = None
    leader_recovery_state: int = -1

    def is_no_op(self) -> bool:
        return (self.leader == NO_LEADER_CHANGE and self.isr is None and self.eligible_leader_replicas is None
                and self.last_known_elr is None and self.leader_recovery_state == -1)


def _java_int_set(values) -> list[int]:
    """A HashSet<Integer>'s iteration order for small non-negative ids: ascending."""
    return sorted(set(values))


def build_change(partition: PartitionRegistration, *, target_isr: list[int], acceptable_leader, min_isr: int,
                 elr_enabled: bool, unclean: bool, metadata_version: int) -> PartitionChange | None:
    """PartitionChangeBuilder.build with ``target_isr`` set; ``acceptable_leader(broker)`` is
    the LeaderAcceptor. Returns None when the record would change nothing."""
    record = PartitionChange()
    target_isr = list(target_isr)
    target_elr = list(partition.elr)

    # maybePopulateTargetElr. (Kafka also computes a target lastKnownElr here, but with the last
    # known leader kept in lastKnownElr, the default, only maybeUpdateLastKnownLeader sets it.)
    if elr_enabled:
        if len(target_isr) >= min_isr:
            target_elr = []
        else:
            candidates = set(target_elr) | set(partition.isr)
            target_elr = [r for r in _java_int_set(candidates) if r not in target_isr]

    # tryElection (Election.ONLINE, or UNCLEAN when the topic allows it)
    def valid_new_leader(replica: int) -> bool:
        in_isr = replica in target_isr or (not target_isr and replica in target_elr)
        return in_isr and acceptable_leader(replica)

    node, was_unclean = NO_LEADER, False
    if valid_new_leader(partition.leader):
        node = partition.leader
    else:
        online = next((r for r in partition.replicas if valid_new_leader(r)), None)
        if online is not None:
            node = online
        elif (elr_enabled and not target_elr and not target_isr and len(partition.last_known_elr) == 1):
            node, was_unclean = partition.last_known_elr[0], True       # the last known leader
        elif unclean:
            candidate = next((r for r in partition.replicas if acceptable_leader(r)), None)
            if candidate is not None:
                node, was_unclean = candidate, True
    if node != partition.leader:
        if node in target_elr:
            target_isr = [node]
            target_elr = [r for r in target_elr if r != node]
        record.leader = node
        if was_unclean:
            record.isr = [node]
            if partition.leader_recovery_state != RECOVERING:
                record.leader_recovery_state = RECOVERING

    # maybeUpdateRecordElr
    if record.isr is not None or not elr_enabled:
        target_elr = []
    if target_elr != list(partition.elr):
        record.eligible_leader_replicas = target_elr

    if record.isr is None and (target_isr or elr_enabled) and target_isr != list(partition.isr):
        record.isr = target_isr

    # triggerLeaderEpochBumpForIsrShrinkIfNeeded
    if (metadata_version < LEADER_EPOCH_BUMP_ON_SHRINK_BEFORE and record.leader == NO_LEADER_CHANGE
            and record.isr is not None and not set(partition.isr) <= set(record.isr)):
        record.leader = partition.leader

    # maybeUpdateLastKnownLeader
    if elr_enabled:
        if record.isr is not None and not record.isr and (len(partition.last_known_elr) != 1
                                                          or partition.last_known_elr[0] != partition.leader):
            record.last_known_elr = [partition.leader]
        elif ((record.leader >= 0 or (partition.leader != NO_LEADER and record.leader != NO_LEADER))
              and partition.last_known_elr):
            record.last_known_elr = []
    return None if record.is_no_op() else record
