"""Leader and ISR changes for one partition: Kafka 4.3.1's PartitionChangeBuilder, for what
the controller does with it: removing a broker from the ISR (fencing, controlled shutdown, a
new incarnation after an unclean shutdown), electing leaders for partitions without one
(unfencing), and the ISR a partition leader asks for (AlterPartition).

It follows Kafka's build(): the ELR bookkeeping of KIP-966 when eligible.leader.replicas is
enabled (an ISR shrinking below min.insync.replicas moves members to the ELR, minus replicas
that shut down uncleanly; a leaderless partition records its last leader in lastKnownElr and
may elect it again once it is acceptable; a leader elected from the ELR becomes the whole
ISR), the KIP-841 rule without it (the last ISR member stays in the ISR of a leaderless
partition), an online or unclean election, the leader epoch bump metadata.version < 3.6 needs
on an ISR shrink, the leader recovery state the request asks for, and no record when nothing
changes; a replica's new directory (AssignReplicasToDirs); and reassignments: target
replicas with adding and removing replicas (AlterPartitionReassignments), completed as soon as
the ISR holds every adding replica (PartitionReassignmentReplicas.maybeCompleteReassignment),
with the leader epoch bump a replica leaving the partition needs.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkawire.messages.partition_change_record import PartitionChangeRecord
from kafkawire.metadata.registrations import NO_LEADER, NO_LEADER_CHANGE, PartitionRegistration

from .frames import built_frame
from .java_order import grown_capacity, int_hashmap_order
from .versions import partition_record_version

RECOVERED, RECOVERING = 0, 1
NO_RECOVERY_CHANGE = -1
LEADER_EPOCH_BUMP_ON_SHRINK_BEFORE = 12      # IBP_3_6_IV0 (KAFKA-15021)
DIRECTORY_ASSIGNMENT_SINCE = 17              # IBP_3_7_IV2 (KIP-858)


@dataclass(slots=True)
class PartitionChange:
    """The non-null fields of a PartitionChangeRecord (None: unchanged). Slotted: a broker's
    fencing makes one per partition it was in (issue 28)."""
    leader: int = NO_LEADER_CHANGE
    isr: list | None = None
    eligible_leader_replicas: list | None = None
    last_known_elr: list | None = None
    leader_recovery_state: int = NO_RECOVERY_CHANGE
    directories: list | None = None
    replicas: list | None = None
    removing_replicas: list | None = None
    adding_replicas: list | None = None

    def is_no_op(self) -> bool:
        return (self.leader == NO_LEADER_CHANGE and self.isr is None and self.eligible_leader_replicas is None
                and self.last_known_elr is None and self.leader_recovery_state == NO_RECOVERY_CHANGE
                and self.directories is None and self.replicas is None and self.removing_replicas is None
                and self.adding_replicas is None)


def _java_int_set(values) -> list[int]:
    """A HashSet<Integer> built from ``values`` (in insertion order), as it iterates."""
    unique = list(dict.fromkeys(values))
    return int_hashmap_order(unique, grown_capacity(len(unique)))


class _Builder:
    """One build(): the targets start as the partition's and move as the rules apply."""

    def __init__(self, partition: PartitionRegistration, target_isr, acceptable_leader, min_isr: int,
                 elr_enabled: bool, unclean: bool, unclean_shutdown_replicas):
        self.partition = partition
        self.target_isr = list(target_isr)
        self.target_elr = list(partition.elr)
        self.acceptable = acceptable_leader
        self.min_isr = min_isr
        self.elr_enabled = elr_enabled
        self.unclean = unclean
        self.unclean_shutdown = set(unclean_shutdown_replicas)
        self.target_replicas = list(partition.replicas)
        self.target_removing = list(partition.removing_replicas)
        self.target_adding = list(partition.adding_replicas)

    def complete_reassignment(self) -> None:
        """completeReassignmentIfNeeded: every adding replica in the ISR (and, when the
        replication factor shrinks, every remaining replica too) ends the reassignment."""
        removing, adding = self.target_removing, self.target_adding
        if not removing and not adding:
            return
        isr, replicas = list(self.target_isr), self.target_replicas
        if removing:
            isr = [r for r in isr if r not in removing]
            replicas = [r for r in replicas if r not in removing]
            if not isr or not replicas:
                return
        if not set(adding) <= set(isr):
            return
        if len(adding) < len(removing) and not set(replicas) <= set(isr):
            return
        self.target_isr, self.target_replicas = isr, replicas
        self.target_removing, self.target_adding = [], []

    def populate_target_elr(self) -> None:
        """maybePopulateTargetElr. (Its target lastKnownElr is never written while the last
        known leader is kept there, Kafka's default, so it is not computed.)"""
        if not self.elr_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr = []
            return
        candidates = _java_int_set(self.target_elr + list(self.partition.isr))
        self.target_elr = [r for r in candidates if r not in self.target_isr and r not in self.unclean_shutdown]

    def _valid_new_leader(self, replica: int) -> bool:
        in_isr = replica in self.target_isr or (not self.target_isr and replica in self.target_elr)
        return in_isr and self.acceptable(replica)

    def _can_elect_last_known_leader(self) -> bool:
        last_known = self.partition.last_known_elr
        return (self.elr_enabled and not self.target_elr and not self.target_isr and len(last_known) == 1
                and self.acceptable(last_known[0]))

    def elect_preferred(self) -> tuple[int, bool]:
        """electPreferredLeader (Election.PREFERRED): the first target replica if it may lead, else
        the current leader if it still may, else the next valid replica: (node, unclean)."""
        p = self.partition
        if self.target_replicas and self._valid_new_leader(self.target_replicas[0]):
            return self.target_replicas[0], False
        if self._valid_new_leader(p.leader):
            return p.leader, False
        online = next((r for r in self.target_replicas[1:] if self._valid_new_leader(r)), None)
        if online is not None:
            return online, False
        if self._can_elect_last_known_leader():
            return p.last_known_elr[0], True
        return NO_LEADER, False

    def elect(self) -> tuple[int, bool]:
        """electAnyLeader (Election.ONLINE, or UNCLEAN when the topic allows it): (node, unclean)."""
        p = self.partition
        if self._valid_new_leader(p.leader):
            return p.leader, False
        online = next((r for r in self.target_replicas if self._valid_new_leader(r)), None)
        if online is not None:
            return online, False
        if self._can_elect_last_known_leader():
            return p.last_known_elr[0], True
        if self.unclean:
            candidate = next((r for r in self.target_replicas if self.acceptable(r)), None)
            if candidate is not None:
                return candidate, True
        return NO_LEADER, False

    def try_election(self, record: PartitionChange, preferred: bool = False) -> None:
        node, unclean = self.elect_preferred() if preferred else self.elect()
        if node == self.partition.leader:
            return
        if node in self.target_elr:
            self.target_isr = [node]
            self.target_elr = [r for r in self.target_elr if r != node]
        record.leader = node
        if unclean:
            record.isr = [node]
            if self.partition.leader_recovery_state != RECOVERING:
                record.leader_recovery_state = RECOVERING

    def update_record_elr(self, record: PartitionChange) -> None:
        """maybeUpdateRecordElr (the lastKnownElr half is left to update_last_known_leader)."""
        if record.isr is not None or not self.elr_enabled:
            self.target_elr = []
        if self.target_elr != list(self.partition.elr):
            record.eligible_leader_replicas = self.target_elr

    def update_last_known_leader(self, record: PartitionChange) -> None:
        """maybeUpdateLastKnownLeader."""
        if not self.elr_enabled:
            return
        if record.leader == NO_LEADER and not self.partition.last_known_elr:
            record.last_known_elr = [self.partition.leader]     # the first time it becomes leaderless
        elif record.leader >= 0 and self.partition.last_known_elr:
            record.last_known_elr = []


def build_change(partition: PartitionRegistration, *, target_isr: list[int], acceptable_leader, min_isr: int,
                 elr_enabled: bool, unclean: bool, metadata_version: int, target_recovery_state: int | None = None,
                 unclean_shutdown_replicas=(), target_directories: dict | None = None,
                 reassignment: tuple | None = None, default_dir=None,
                 preferred: bool = False) -> PartitionChange | None:
    """PartitionChangeBuilder.build with ``target_isr`` set; ``acceptable_leader(broker)`` is
    the LeaderAcceptor; ``target_recovery_state`` the leader recovery state asked for (None:
    the partition's); ``target_directories`` {replica: directory} moves (setDirectory; the
    others keep theirs); ``reassignment`` (replicas, removing, adding), None for each left as
    the partition has it; ``default_dir(broker)`` the directory of a replica new to the
    partition; ``preferred``: Election.PREFERRED (ElectLeaders). Returns None when the record
    would change nothing."""
    record = PartitionChange()
    builder = _Builder(partition, target_isr, acceptable_leader, min_isr, elr_enabled, unclean,
                       unclean_shutdown_replicas)
    if reassignment is not None:
        replicas, removing, adding = reassignment
        builder.target_replicas = builder.target_replicas if replicas is None else list(replicas)
        builder.target_removing = builder.target_removing if removing is None else list(removing)
        builder.target_adding = builder.target_adding if adding is None else list(adding)
    builder.complete_reassignment()
    builder.populate_target_elr()
    builder.try_election(record, preferred)
    # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
    if (record.leader == NO_LEADER_CHANGE and builder.target_replicas != list(partition.replicas)
            and not set(partition.replicas) <= set(builder.target_replicas)):
        record.leader = partition.leader
    builder.update_record_elr(record)
    isr = builder.target_isr
    if record.isr is None and (isr or elr_enabled) and isr != list(partition.isr):
        record.isr = isr
    # triggerLeaderEpochBumpForIsrShrinkIfNeeded
    if (metadata_version < LEADER_EPOCH_BUMP_ON_SHRINK_BEFORE and record.leader == NO_LEADER_CHANGE
            and record.isr is not None and not set(partition.isr) <= set(record.isr)):
        record.leader = partition.leader
    builder.update_last_known_leader(record)
    _assignment_changes(record, partition, builder, metadata_version, target_directories or {}, default_dir)
    if target_recovery_state is not None and target_recovery_state != partition.leader_recovery_state:
        record.leader_recovery_state = target_recovery_state
    return None if record.is_no_op() else record


def isr_removal_change(partition: PartitionRegistration, target_isr: list[int], acceptable, has_online_dir,
                       min_isr: int, elr_enabled: bool, unclean: bool, metadata_version: int,
                       unclean_shutdown_replicas=()) -> PartitionChange | None:
    """``build_change(partition, target_isr=target_isr, acceptable_leader=lambda r: acceptable(r)
    and has_online_dir(r, partition), ...)`` with nothing else asked, for a partition outside a
    reassignment (no removing or adding replicas: the caller checks), written out without the
    builder: what a broker's fencing, controlled shutdown or new incarnation does to each of up
    to 300,000 partitions at 1M (issue 28). The same rules in the same order, so the same
    record (tests/controller/test_move_cost.py compares the two on random partitions); the
    replicas, directories, removing and adding replicas never change here."""
    p = partition
    old_elr = p.elr
    if not elr_enabled:
        target_elr = list(old_elr)
    elif len(target_isr) >= min_isr:
        target_elr = []
    else:                                                       # maybePopulateTargetElr
        target_elr = _populated_elr(old_elr + p.isr, target_isr, unclean_shutdown_replicas)

    # isValidNewLeader(r): in the target ISR (or, with none, the target ELR), acceptable, its
    # directory online; written out below, with no closure or generator made per partition.
    candidates = target_isr or target_elr
    old_leader = p.leader
    leader, isr, recovery = NO_LEADER_CHANGE, None, NO_RECOVERY_CHANGE
    # (the leader stays, the common case: valid for a leader in the target ISR)
    if not (old_leader in candidates and acceptable(old_leader) and has_online_dir(old_leader, p)):
        # electAnyLeader, then tryElection
        node, was_unclean = None, False
        for r in p.replicas:
            if r in candidates and acceptable(r) and has_online_dir(r, p):
                node = r
                break
        if node is None:
            last_known = p.last_known_elr
            if (elr_enabled and not target_elr and not target_isr and len(last_known) == 1
                    and acceptable(last_known[0]) and has_online_dir(last_known[0], p)):
                node, was_unclean = last_known[0], True
            elif unclean:
                node = _first_acceptable(p, acceptable, has_online_dir)
                was_unclean = node is not None
            if node is None:
                node = NO_LEADER
        if node != old_leader:
            if node in target_elr:
                target_isr = [node]
                target_elr = without(target_elr, (node,))
            leader = node
            if was_unclean:
                isr = [node]
                if p.leader_recovery_state != RECOVERING:
                    recovery = RECOVERING
    if isr is not None or not elr_enabled:                      # maybeUpdateRecordElr
        target_elr = []
    elr = target_elr if _differs(target_elr, old_elr) else None
    if isr is None and (target_isr or elr_enabled) and _differs(target_isr, p.isr):
        isr = target_isr
    if (metadata_version < LEADER_EPOCH_BUMP_ON_SHRINK_BEFORE and leader == NO_LEADER_CHANGE
            and isr is not None and not set(p.isr) <= set(isr)):
        leader = old_leader
    last_known_elr = None
    if elr_enabled:                                             # maybeUpdateLastKnownLeader
        if leader == NO_LEADER and not p.last_known_elr:
            last_known_elr = [old_leader]
        elif leader >= 0 and p.last_known_elr:
            last_known_elr = []
    if (leader == NO_LEADER_CHANGE and isr is None and elr is None and last_known_elr is None
            and recovery == NO_RECOVERY_CHANGE):
        return None
    return PartitionChange(leader=leader, isr=isr, eligible_leader_replicas=elr, last_known_elr=last_known_elr,
                           leader_recovery_state=recovery)


# isr_removal_change's lists made by the helpers below, not by comprehensions in it: a
# comprehension would make the names it reads cells, six objects made on every call.

def _populated_elr(candidates, target_isr: list, unclean_shutdown_replicas) -> list[int]:
    """maybePopulateTargetElr: the ISR and ELR members (a Java HashSet's order) outside the
    target ISR, less the replicas that shut down uncleanly."""
    return without(_java_int_set(candidates), (*target_isr, *unclean_shutdown_replicas))


def _first_acceptable(partition: PartitionRegistration, acceptable, has_online_dir) -> int | None:
    """The first replica acceptable with its directory online (an unclean election), or None."""
    for r in partition.replicas:
        if acceptable(r) and has_online_dir(r, partition):
            return r
    return None


def without(values, gone) -> list[int]:
    """``values`` in order, less those in ``gone``."""
    kept = []
    for r in values:
        if r not in gone:
            kept.append(r)
    return kept


def _differs(target: list, current: tuple) -> bool:
    """``target != list(current)``, with no list made when the lengths say it (a broker's fencing
    shortens an ISR per partition and leaves most ELRs empty)."""
    return len(target) != len(current) or (len(target) > 0 and target != list(current))


def _assignment_changes(record: PartitionChange, partition: PartitionRegistration, builder: _Builder,
                        metadata_version: int, target_directories: dict, default_dir) -> None:
    """setAssignmentChanges: directories for the target replicas (a moved one's new directory, a
    kept one's own, a new one's default), the replicas, removing and adding when they change."""
    replicas = builder.target_replicas
    if replicas:
        # (unchanged replicas and no moves: the directories cannot change either)
        moved = bool(target_directories) or replicas != list(partition.replicas)
        if moved and metadata_version >= DIRECTORY_ASSIGNMENT_SINCE:
            # Compared as the ints the registration keeps; its UUIDs are made once, and only
            # for a record that changes them (a reassignment of 1% at 1M partitions: 10,000).
            current = dict(zip(partition.replicas, partition.directory_ids))
            ids = [target_directories[r].int if r in target_directories else
                   current[r] if r in current else default_dir(r).int for r in replicas]
            if ids != list(partition.directory_ids):
                kept = dict(zip(partition.replicas, partition.directories))
                record.directories = [target_directories[r] if r in target_directories else
                                      kept[r] if r in kept else default_dir(r) for r in replicas]
        if replicas != list(partition.replicas):
            record.replicas = replicas
    if builder.target_removing != list(partition.removing_replicas):
        record.removing_replicas = builder.target_removing
    if builder.target_adding != list(partition.adding_replicas):
        record.adding_replicas = builder.target_adding


def change_record(topic_id, partition_id: int, change: PartitionChange, metadata_version: int) -> bytes:
    """The PartitionChangeRecord frame of ``change`` at the metadata version's record version.
    The message is handed to the controller's own apply (frames.built_frame): ``change`` must
    not change afterwards."""
    return change_frame(topic_id, partition_id, change, partition_record_version(metadata_version))


def change_frame(topic_id, partition_id: int, change: PartitionChange, record_version: int) -> bytes:
    """``change_record`` at a PartitionChangeRecord version the caller looked up once
    (versions.partition_record_version) for many records."""
    return built_frame(PartitionChangeRecord(
        partition_id=partition_id, topic_id=topic_id, leader=change.leader, isr=change.isr,
        eligible_leader_replicas=change.eligible_leader_replicas, last_known_elr=change.last_known_elr,
        leader_recovery_state=change.leader_recovery_state, directories=change.directories,
        replicas=change.replicas, removing_replicas=change.removing_replicas,
        adding_replicas=change.adding_replicas), record_version)
