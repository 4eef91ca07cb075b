"""Safety invariants, checked after every simulated event.

Each check is fed by what the nodes did (Readys applied, states entered) and keeps the
cluster-wide history it needs. A broken invariant raises InvariantViolation naming the rule,
the nodes and the offsets or epochs involved.
"""
from __future__ import annotations

import functools
import hashlib

from kafkawire.records import ControlRecordType, iter_batches

from kafkawire.raft.states import Leader
from kafkawire.raft.io import Append
from kafkawire.raft.types import ReplicaKey


class InvariantViolation(AssertionError):
    """A broken safety rule of the simulation: ``rule`` is its name, ``detail`` what happened."""
    def __init__(self, rule: str, detail: str):
        super().__init__(f"{rule}: {detail}")
        self.rule, self.detail = rule, detail


def _record_identities(data: bytes):
    """(offset, identity) of each record: its batch epoch, control flag, key and value."""
    for batch in iter_batches(data):
        for record in batch:
            key = b"" if record.key is None else bytes(record.key)
            value = b"" if record.value is None else bytes(record.value)
            yield record.offset, (batch.partition_leader_epoch, batch.is_control,
                                  hashlib.blake2b(key + b"\0" + value, digest_size=8).digest())


class Invariants:
    """The safety rules a simulation checks at every step (one leader per epoch, one vote per epoch,
    log matching, committed records never lost, ...); each is a constant naming the rule, and
    ``enabled`` chooses which are checked.
    """
    ONE_LEADER_PER_EPOCH = "at most one leader per epoch"
    ONE_VOTE_PER_EPOCH = "at most one vote per replica per epoch"
    LOG_MATCHING = "logs that agree on (offset, epoch) agree on everything before"
    COMMITTED_NEVER_LOST = "every committed record stays committed, with the same content"
    LEADER_COMPLETENESS = "every committed record is in the log of every leader of a later epoch"
    HW_MONOTONIC = "the high watermark a node reports never decreases"
    SAME_APPLIED_PREFIX = "all state machines apply the same committed records"
    ACKED_NEVER_LOST = "an append acknowledged as committed is never lost"
    ONE_VOTER_CHANGE = "at most one uncommitted voter change, and each changes one voter"
    TRUNCATED_VOTERS_REVERTED = "a truncated VotersRecord stops counting: the voter set before it is back"
    MONOTONIC_EPOCH = "the epoch a replica persists never goes back, and its in-memory epoch is the persisted one"
    MAJORITY_REACHED_HW = "when a leader's high watermark moves, a majority of its voters' logs reach it"
    SNAPSHOT_AT_LOG_START = "a log starts at its earliest snapshot, and its epoch cache agrees with that snapshot"
    LEADER_NEVER_LOADS_SNAPSHOT = "a leader's state machine never loads a snapshot"
    CONSISTENT_SNAPSHOT_DATA = "a snapshot a node loads holds exactly the committed data below its end offset"
    GAP_FREE_COMMITS = "a node's state machine is handed every committed offset once, in order, without a gap"
    HW_WITHIN_LOG = "a node's high watermark lies within its log: log start <= high watermark <= log end"
    APPEND_EPOCH_BOUND = "no replica appends a batch above its epoch, and a leader appends only batches of its epoch"

    ALL_RULES = (ONE_LEADER_PER_EPOCH, ONE_VOTE_PER_EPOCH, LOG_MATCHING, COMMITTED_NEVER_LOST, LEADER_COMPLETENESS,
                 HW_MONOTONIC, SAME_APPLIED_PREFIX, ACKED_NEVER_LOST, ONE_VOTER_CHANGE, TRUNCATED_VOTERS_REVERTED,
                 MONOTONIC_EPOCH, MAJORITY_REACHED_HW, SNAPSHOT_AT_LOG_START, LEADER_NEVER_LOADS_SNAPSHOT,
                 CONSISTENT_SNAPSHOT_DATA, GAP_FREE_COMMITS, HW_WITHIN_LOG, APPEND_EPOCH_BOUND)

    def __init__(self, enabled=None):
        # The mutant tests enable one rule at a time, to show each catches a bug on its own.
        self.enabled = frozenset(self.ALL_RULES if enabled is None else enabled)
        self.leaders: dict[int, int] = {}                  # epoch -> leader id
        self.votes: dict[tuple, ReplicaKey] = {}               # (replica key, epoch) -> voted key
        self.committed: dict[int, tuple] = {}              # offset -> record identity
        self.committed_in_epoch: dict[int, int] = {}       # offset -> epoch of the first node seeing it committed
        self.committed_end = 0
        self.reported_hw: dict[object, int] = {}           # replica key -> highest reported HW
        self.applied: dict[int, bytes] = {}                # offset -> value applied first
        self.acked: dict[object, int] = {}                 # token -> offset acknowledged
        self.persisted_epoch: dict[object, int] = {}       # replica key -> highest epoch in its quorum-state
        self._matched_logs: dict[tuple[int, int], tuple] = {}   # node pair -> the logs it last passed with

    def _violate(self, rule: str, detail: str) -> None:
        if rule in self.enabled:
            raise InvariantViolation(rule, detail)

    # --- fed by the simulation -----------------------------------------------------------------
    def on_state(self, node) -> None:
        """After a Ready is applied: Kafka's MonotonicEpoch compares the in-memory epoch with
        the persisted one; then at most one leader per epoch."""
        state = node.core.state
        persisted = node.store.election
        if persisted is not None and persisted.epoch != state.epoch:
            self._violate(self.MONOTONIC_EPOCH, f"node {node.node_id} is in epoch {state.epoch} "
                                                f"but its quorum-state holds epoch {persisted.epoch}")
        if isinstance(state, Leader):
            other = self.leaders.setdefault(state.epoch, node.node_id)
            if other != node.node_id:
                self._violate(self.ONE_LEADER_PER_EPOCH,
                              f"nodes {other} and {node.node_id} both led epoch {state.epoch}")

    def on_election_persisted(self, node, election) -> None:
        key = node.core.quorum.local_key
        highest = self.persisted_epoch.get(key, -1)
        if election.epoch < highest:
            self._violate(self.MONOTONIC_EPOCH, f"replica {key} wrote epoch {election.epoch} to its "
                                                f"quorum-state after epoch {highest} (restarts included)")
        self.persisted_epoch[key] = max(highest, election.epoch)
        if election.voted_key is None:
            return
        key = (node.core.quorum.local_key, election.epoch)
        previous = self.votes.setdefault(key, election.voted_key)
        if previous.id != election.voted_key.id:
            self._violate(self.ONE_VOTE_PER_EPOCH,
                          f"replica {key[0]} voted for {previous} and {election.voted_key} "
                          f"in epoch {election.epoch}")

    def on_high_watermark(self, node, hw: int) -> None:
        key = node.core.quorum.local_key
        previous = self.reported_hw.get(key)
        if previous is not None and hw < previous:
            self._violate(self.HW_MONOTONIC, f"node {node.node_id} reported {hw} after {previous}")
        self.reported_hw[key] = hw
        start = max(node.store.start, previous or 0)
        data = node.store.read(start, 1 << 30) if start < node.store.end_offset() else b""
        for offset, identity in _record_identities(data):
            if offset < start or offset >= hw:
                continue
            known = self.committed.get(offset)
            if known is None:
                self.committed[offset] = identity
                self.committed_in_epoch[offset] = node.core.epoch
            elif known != identity:
                self._violate(self.COMMITTED_NEVER_LOST,
                              f"offset {offset} was committed as {known} and node {node.node_id} "
                              f"commits {identity}")
        self.committed_end = max(self.committed_end, hw)

    def check_majority_reached(self, leader, hw: int, nodes: dict) -> None:
        """Kafka's MajorityReachedHighWatermark, at the moment a leader's high watermark moves:
        a majority of its voters hold offsets below ``hw``, stopped voters included (their
        durable log). The voters are those the leader counts (its latest set) or those of the
        offset before ``hw`` (a VotersRecord appended in the same step as the move counts only
        for later offsets). Skipped while a voter's disk was replaced (its id now has another
        directory id): Kafka skips the check in its data-loss runs too."""
        seen = []
        for voters in (list(leader.core.voters()), list(leader.core.control.voter_set_at(hw - 1))):
            logs = []
            for voter in voters:
                node = nodes.get(voter.key.id)
                if node is None or voter.key.directory_id not in (None, node.config.directory_id):
                    return
                # What is durable: a record written but not fsynced does not count (async_flush).
                logs.append(node.store.durable_end_offset())
            reached = sum(end >= hw for end in logs)
            if reached > len(voters) // 2:
                return
            seen.append(f"{reached} of voters {sorted(v.key.id for v in voters)} (log ends {logs})")
        self._violate(self.MAJORITY_REACHED_HW,
                      f"leader {leader.node_id} moved its high watermark to {hw} but only " + " / ".join(seen)
                      + " reach it")

    def forget_high_watermark(self, key) -> None:
        self.reported_hw.pop(key, None)

    def on_became_leader(self, node) -> None:
        """A new leader's log holds every record committed in an earlier epoch (beyond its
        snapshot): Raft's leader completeness. A candidate can still win an epoch older than
        one that has committed, with votes cast before the voters moved on (seed 2002962: node
        5 led epoch 1 after epoch 2 committed); such a leader commits nothing, since a majority
        is past its epoch, which COMMITTED_NEVER_LOST checks."""
        start = node.store.start
        if self.committed_end <= start:
            return
        data = node.store.read(start, 1 << 30)
        have = dict(_record_identities(data))
        for offset in range(start, self.committed_end):
            want = self.committed.get(offset)
            if want is None or self.committed_in_epoch[offset] >= node.core.epoch:
                continue
            if have.get(offset) != want:
                self._violate(self.LEADER_COMPLETENESS,
                              f"node {node.node_id} leads epoch {node.core.epoch} without committed "
                              f"offset {offset} (has {have.get(offset)}, committed {want})")

    def on_applied(self, node, items) -> None:
        for offset, value in items:
            known = self.applied.setdefault(offset, value)
            if known != value:
                self._violate(self.SAME_APPLIED_PREFIX,
                              f"node {node.node_id} applied {value!r} at offset {offset}, "
                              f"another applied {known!r}")

    def on_acked(self, node, token, offset: int, value: bytes) -> None:
        self.acked[token] = offset
        known = self.applied.get(offset)
        if known is not None and known != value:
            self._violate(self.ACKED_NEVER_LOST,
                          f"append {token} was acknowledged at offset {offset} but {known!r} is there")

    def check_acked(self, values: dict) -> None:
        for token, offset in self.acked.items():
            known = self.applied.get(offset)
            if known is not None and known != values[token]:
                self._violate(self.ACKED_NEVER_LOST,
                              f"append {token} acknowledged at offset {offset}, but {known!r} was applied there")

    def on_voters_records_truncated(self, node, cut: int, removed: list[int]) -> None:
        """``node`` truncated its log to ``cut``, which removed the VotersRecords at
        ``removed``: none may still be in force, and the voter set must be the one the log
        (or the snapshot, or controller.quorum.voters) holds below ``cut``."""
        control = node.core.control
        kept = [o for o in control.voters.offsets if o >= cut]
        if kept:
            self._violate(self.TRUNCATED_VOTERS_REVERTED,
                          f"node {node.node_id} truncated to {cut}, removing VotersRecords at {removed}, but its "
                          f"control state still holds VotersRecords at {kept}")
            return
        in_log = _last_voters_below(node.store.batches, cut)
        current = frozenset(node.core.voters().ids)
        if in_log is not None and in_log[1] != current:
            self._violate(self.TRUNCATED_VOTERS_REVERTED,
                          f"node {node.node_id} truncated to {cut}: its log's last VotersRecord (offset {in_log[0]}) "
                          f"names voters {sorted(in_log[1])}, but the node counts {sorted(current)}")

    # --- Kafka's log and state machine checks (MockLog, ReplicatedCounter, SnapshotAtLogStart) ------
    def check_log_start(self, node) -> None:
        """Kafka's SnapshotAtLogStart: a log that starts past 0 starts exactly at its earliest
        snapshot (never past it), and the epoch cache says that snapshot's (offset, epoch) is
        valid; the core's idea of the log start is the store's."""
        store, log = node.store, node.core.log
        earliest = min(store.snapshots, key=lambda s: (s.offset, s.epoch), default=None)
        where = f"node {node.node_id} (log [{store.start}, {store.end_offset()}))"
        if log.start_offset != store.start:
            return self._violate(self.SNAPSHOT_AT_LOG_START, f"{where}: the core says the log starts at "
                                                             f"{log.start_offset}")
        if earliest is None:
            if store.start > 0:
                self._violate(self.SNAPSHOT_AT_LOG_START, f"{where} starts past 0 with no snapshot")
            return
        if store.start > earliest.offset or (store.start > 0 and store.start != earliest.offset):
            return self._violate(self.SNAPSHOT_AT_LOG_START, f"{where}: the earliest snapshot is {earliest}")
        valid = log.validate_offset_and_epoch(earliest.offset, earliest.epoch)
        if valid.kind != "valid":
            self._violate(self.SNAPSHOT_AT_LOG_START, f"{where}: the epoch cache {log.epochs.entries()} finds the "
                                                      f"earliest snapshot {earliest} {valid.kind} "
                                                      f"({valid.offset_and_epoch})")

    def check_high_watermark_within_log(self, node) -> None:
        hw = node.core.high_watermark()
        if hw is not None and not node.store.start <= hw <= node.store.end_offset():
            self._violate(self.HW_WITHIN_LOG, f"node {node.node_id} has high watermark {hw} outside its log "
                                              f"[{node.store.start}, {node.store.end_offset()})")

    def check_appends(self, node, ops) -> None:
        """Kafka's MockLog: a leader appends batches of exactly its epoch, a follower never one
        above its own; the epoch recorded for a batch is the one in its header."""
        epoch = node.core.epoch
        for op in ops:
            if not isinstance(op, Append):
                continue
            header_epoch = int.from_bytes(op.batch[12:16], "big", signed=True)
            if header_epoch != op.epoch or op.epoch > epoch or (isinstance(node.core.state, Leader)
                                                                and op.epoch != epoch):
                role = "leader" if isinstance(node.core.state, Leader) else "replica"
                self._violate(self.APPEND_EPOCH_BOUND,
                              f"{role} {node.node_id} in epoch {epoch} appended offsets {op.base_offset}.."
                              f"{op.last_offset} as epoch {op.epoch} (batch header: epoch {header_epoch})")

    def on_snapshot_loaded(self, node, snapshot_id, *, at_boot: bool = False) -> None:
        """Kafka's ConsistentCommittedData for what a node loads (at boot or a fetched snapshot):
        the snapshot is committed, and holds every committed data record below its end offset,
        each with the committed value. A leader never loads a fetched snapshot; the one loaded
        at boot was loaded before the replica started (an only voter leads from its start)."""
        if not at_boot and node.core is not None and isinstance(node.core.state, Leader):
            self._violate(self.LEADER_NEVER_LOADS_SNAPSHOT,
                          f"leader {node.node_id} of epoch {node.core.epoch} loaded snapshot {snapshot_id}")
        loaded = node.machine.applied
        if snapshot_id.offset > self.committed_end and snapshot_id.offset > 0:
            self._violate(self.CONSISTENT_SNAPSHOT_DATA, f"node {node.node_id} loaded snapshot {snapshot_id}, "
                                                         f"past everything committed ({self.committed_end})")
        for offset, value in loaded.items():
            if offset >= snapshot_id.offset:
                self._violate(self.CONSISTENT_SNAPSHOT_DATA, f"node {node.node_id} loaded snapshot {snapshot_id} "
                                                             f"holding offset {offset}, past its end")
            known = self.applied.setdefault(offset, value)
            if known != value:
                self._violate(self.CONSISTENT_SNAPSHOT_DATA, f"node {node.node_id} loaded {value!r} at offset "
                                                             f"{offset} from snapshot {snapshot_id}; {known!r} "
                                                             f"was committed there")
        missing = sorted(o for o in self.applied if o < snapshot_id.offset and o not in loaded)
        if missing:
            self._violate(self.CONSISTENT_SNAPSHOT_DATA, f"node {node.node_id} loaded snapshot {snapshot_id} "
                                                         f"without the committed offsets {missing[:5]}")

    def on_committed_stream(self, node, start: int, through: int, offsets: list[int]) -> None:
        """Kafka's ReplicatedCounter.handleCommit: the state machine's position moved from
        ``start`` to ``through`` and it was handed the records at ``offsets`` (data and
        control): exactly each offset in between, in order."""
        if offsets != list(range(start, through)):
            have = set(offsets)
            gaps = [o for o in range(start, through) if o not in have][:5]
            self._violate(self.GAP_FREE_COMMITS,
                          f"node {node.node_id} committed [{start}, {through}) but its state machine was handed "
                          f"{len(offsets)} records (missing {gaps}, first {offsets[:3]})")

    # --- whole-cluster checks --------------------------------------------------------------------
    def check_log_matching(self, nodes) -> None:
        logs = [(n.node_id, tuple(n.store.batches)) for n in nodes]
        for i in range(len(logs)):
            for j in range(i + 1, len(logs)):
                (ida, a_batches), (idb, b_batches) = logs[i], logs[j]
                # The check is a function of the two logs alone: a pair whose logs are the ones
                # it last passed with (the same batches, compared by identity first) passes again.
                if self._matched_logs.get((ida, idb)) == (a_batches, b_batches):
                    continue
                self._check_pair_matches(ida, {b.base: b for b in a_batches}, idb, {b.base: b for b in b_batches})
                self._matched_logs[(ida, idb)] = (a_batches, b_batches)

    def _check_pair_matches(self, ida: int, a: dict, idb: int, b: dict) -> None:
        """Log matching between two logs ({base offset: stored batch}): where they agree on a
        batch's epoch, they hold the same batches up to there."""
        common = sorted(a.keys() & b.keys())
        last_match = None
        for base in common:
            if a[base].epoch == b[base].epoch:
                last_match = base
        if last_match is None:
            return
        for base in common:
            if base > last_match:
                break
            if a[base].data != b[base].data:
                self._violate(self.LOG_MATCHING,
                              f"nodes {ida} and {idb} agree on the epoch at offset {last_match} but "
                              f"differ at offset {base} (epochs {a[base].epoch}/{b[base].epoch})")

    def check_voter_changes(self, node) -> None:
        """In this node's log: each VotersRecord changes at most one voter from the previous,
        and at most one VotersRecord lies above the node's high watermark."""
        sets = list(_voters_records(node.store.batches))
        for (o1, s1), (o2, s2) in zip(sets, sets[1:]):
            if len(s1 ^ s2) > 1:
                self._violate(self.ONE_VOTER_CHANGE,
                              f"node {node.node_id}: voters {sorted(s1)} at {o1} became {sorted(s2)} at {o2}")
        if isinstance(node.core.state, Leader):
            # Committed as far as anyone has reported: a new leader does not know its high
            # watermark yet, but the changes its predecessors committed are not pending.
            hw = max(node.core.high_watermark() or 0, self.committed_end)
            pending = [o for o, _ in sets if o >= hw]
            if len(pending) > 1:
                self._violate(self.ONE_VOTER_CHANGE,
                              f"leader {node.node_id} has {len(pending)} uncommitted voter changes at {pending}")


def _voters_records(batches):
    """(offset, voter ids) of every VotersRecord in stored batches, in log order."""
    for stored in batches:
        if _is_control(stored.data):
            yield from _voters_in(bytes(stored.data))     # hashable even if a core stored a view


@functools.lru_cache(maxsize=4096)
def _voters_in(data: bytes) -> tuple[tuple[int, frozenset], ...]:
    """(offset, voter ids) of the VotersRecords in one stored batch. Cached by the batch's bytes:
    check_voter_changes reads every control batch of a log after every append, and decoding
    them again was 8 % of a simulation."""
    return tuple((record.offset, frozenset(v.voter_id for v in record.control_value.voters))
                 for batch in iter_batches(data) for record in batch
                 if record.control_type == ControlRecordType.KRAFT_VOTERS)


def _last_voters_below(batches, offset: int):
    last = None
    for entry in _voters_records(batches):
        if entry[0] < offset:
            last = entry
    return last


def _is_control(data: bytes) -> bool:
    # attributes (int16) sit at byte 21; bit 5 is the control flag
    return len(data) > 22 and bool(data[22] & 0x20)
