"""What a partition leader knows of its followers and its ISR, and the rules built on them:
Kafka's Replica/ReplicaState (kafka-server) and the leader half of kafka.cluster.Partition.
Sans-I/O: times are passed in (milliseconds), the metadata is asked through ``broker_epoch``.

    replicas = LeaderReplicas(local_id=1, max_lag_ms=30_000, broker_epoch=lambda b: image_epoch_or_none)
    replicas.make_leader(replicas=[1, 2, 3], isr=[1, 2, 3], leader_epoch=4, partition_epoch=7,
                         log_end_offset=leo, now_ms=now, is_new_leader=True)
    replicas.follower_fetched(2, fetch_offset=..., log_start_offset=..., now_ms=..., leader_end_offset=leo,
                              broker_epoch=12)                  # StaleBrokerEpoch
    change = replicas.expand_for(2, high_watermark=hw)          # a PendingChange to send, or None
    hw = replicas.high_watermark_candidate(leo, now_ms)         # None: under min ISR

Per follower (FollowerState, Kafka's ReplicaState): its log end offset is the offset it last
fetched from, unknown (-1) until it fetches in this leadership; ``last_caught_up_ms`` moves when a
fetch reached the leader's log end of that time, or the log end of the fetch before it
(Replica.updateFetchStateOrThrow). A follower is caught up while its log end is the leader's or it
caught up within ``replica.lag.time.max.ms`` (ReplicaState.isCaughtUp).

The ISR: committed (from the metadata image or an AlterPartition answer), or pending while an
AlterPartition is in flight (PendingExpandIsr, PendingShrinkIsr). The "maximal ISR" counts a
replica being added as already in (an expansion only makes the high watermark stricter) and a
replica being removed as still in (the shrink may fail): the high watermark and acks=all use it,
the produce check of ``min.insync.replicas`` uses the committed ISR. Only one change is in flight.

Rules (each in Partition):
- expand (maybeExpandIsr): a follower out of the ISR whose log end reached the high watermark and
  the start of the current leader epoch, not fenced nor shutting down, whose fetches carried the
  broker epoch the metadata has (or -1), joins.
- shrink (maybeShrinkIsr / getOutOfSyncReplicas): a follower of the ISR not caught up leaves.
- high watermark (maybeIncrementLeaderHW): nothing moves while the committed ISR is smaller than
  the effective min ISR (``min.insync.replicas``, at most the number of replicas); else the least
  log end offset of the leader and the followers in the maximal ISR, or out of it but caught up
  and eligible (they would join soon), never backwards.
- acks=all (checkEnoughReplicasReachOffset): done when the high watermark reaches the batch's
  end; NOT_ENOUGH_REPLICAS_AFTER_APPEND when the maximal ISR is then below the effective min ISR.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kafkawire.protocol.error_codes import Errors

__all__ = ["FollowerState", "IsrState", "LeaderReplicas", "PendingChange", "StaleBrokerEpoch", "UNKNOWN_OFFSET"]

UNKNOWN_OFFSET = -1
EXPAND, SHRINK = "expand", "shrink"


class StaleBrokerEpoch(Exception):
    """A follower fetched with an older broker epoch than the metadata's (NOT_LEADER_OR_FOLLOWER)."""


@dataclass(slots=True)
class FollowerState:
    """Kafka's ReplicaState: one follower as its fetches showed it."""
    log_start_offset: int = UNKNOWN_OFFSET
    log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_time_ms: int = 0
    last_caught_up_time_ms: int = 0
    broker_epoch: int | None = None          # None: no fetch in this leadership

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        return leader_end_offset == self.log_end_offset or now_ms - self.last_caught_up_time_ms <= max_lag_ms

    def fetched(self, fetch_offset: int, log_start_offset: int, now_ms: int, leader_end_offset: int,
                broker_epoch: int) -> None:
        """Replica.updateFetchStateOrThrow, after its broker epoch check."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_start_offset = log_start_offset
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = max(leader_end_offset, self.last_fetch_leader_log_end_offset)
        self.last_fetch_time_ms = now_ms
        self.broker_epoch = broker_epoch

    def reset(self, now_ms: int, leader_end_offset: int, *, is_new_leader: bool, in_sync: bool) -> None:
        """Replica.resetReplicaState, at a new leader epoch: a new leader knows nothing of its followers."""
        self.last_caught_up_time_ms = now_ms if in_sync else 0
        if is_new_leader:
            self.log_start_offset = self.log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_time_ms = 0
            self.broker_epoch = None
        else:
            self.last_fetch_leader_log_end_offset = leader_end_offset
            self.last_fetch_time_ms = now_ms if in_sync else 0


@dataclass(frozen=True, slots=True)
class IsrState:
    """CommittedPartitionState (``pending`` None) or a PendingExpandIsr / PendingShrinkIsr."""
    isr: frozenset                      # the committed ISR
    maximal: frozenset
    pending: str | None = None

    @property
    def in_flight(self) -> bool:
        return self.pending is not None


@dataclass(frozen=True, slots=True)
class PendingChange:
    """An ISR change being sent (Kafka's sentLeaderAndIsr): the ISR with each member's broker epoch."""
    state: IsrState                     # the pending state it put the partition in
    committed: IsrState                 # the state before it (lastCommittedState)
    leader_epoch: int
    partition_epoch: int
    isr_with_epochs: tuple = field(default=())    # ((broker id, broker epoch), ...)


class LeaderReplicas:
    """The leader side of one partition's replication (kafka.cluster.Partition, as leader)."""

    def __init__(self, local_id: int, *, max_lag_ms: int, broker_epoch: Callable[[int], int | None],
                 eligible: Callable[[int], bool] = lambda broker_id: True,
                 local_broker_epoch: Callable[[], int] = lambda: -1, min_isr: int = 1):
        self.local_id = local_id
        self.max_lag_ms = max_lag_ms
        self.broker_epoch = broker_epoch          # the metadata's epoch of a live (unfenced) broker, else None
        self.eligible = eligible                  # not fenced, not in controlled shutdown
        self.local_broker_epoch = local_broker_epoch
        self.min_isr = min_isr                    # the topic's min.insync.replicas
        self.followers: dict[int, FollowerState] = {}
        self.state = IsrState(frozenset({local_id}), frozenset({local_id}))
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.epoch_start_offset: int | None = None

    # -- the metadata --

    def make_leader(self, *, replicas, isr, leader_epoch: int, partition_epoch: int, log_end_offset: int,
                    now_ms: int, is_new_leader: bool) -> bool:
        """Partition.makeLeader: the assignment and the committed ISR from the metadata; at a new
        leader epoch the followers' states reset. False (nothing changed) for an older partition epoch."""
        if partition_epoch < self.partition_epoch:
            return False
        followers = [r for r in replicas if r != self.local_id]
        for r in followers:
            self.followers.setdefault(r, FollowerState())
        for r in set(self.followers) - set(followers):
            del self.followers[r]
        committed = frozenset(isr)
        self.state = IsrState(committed, committed)
        if leader_epoch > self.leader_epoch:
            for r, follower in self.followers.items():
                follower.reset(now_ms, log_end_offset, is_new_leader=is_new_leader, in_sync=r in committed)
            self.leader_epoch = leader_epoch
            self.epoch_start_offset = log_end_offset
        self.partition_epoch = partition_epoch
        return True

    @property
    def effective_min_isr(self) -> int:
        """Partition.effectiveMinIsr: min.insync.replicas, at most the replication factor."""
        return min(self.min_isr, len(self.followers) + 1)

    @property
    def under_min_isr(self) -> bool:
        return len(self.state.isr) < self.effective_min_isr

    # -- follower fetches --

    def follower_fetched(self, replica_id: int, *, fetch_offset: int, log_start_offset: int, now_ms: int,
                         leader_end_offset: int, broker_epoch: int) -> None:
        """Record a follower's fetch; StaleBrokerEpoch when the metadata knows a newer epoch of it."""
        cached = self.broker_epoch(replica_id)
        if broker_epoch != -1 and cached is not None and cached > broker_epoch:
            follower = self.followers[replica_id]
            raise StaleBrokerEpoch(f"Received stale fetch state update. broker epoch={broker_epoch} "
                                   f"vs expected={-2 if follower.broker_epoch is None else follower.broker_epoch}")
        self.followers[replica_id].fetched(fetch_offset, log_start_offset, now_ms, leader_end_offset, broker_epoch)

    def _isr_eligible(self, replica_id: int) -> bool:
        """Partition.isReplicaIsrEligible: not fenced nor shutting down, its fetch epoch the metadata's (or -1)."""
        follower = self.followers.get(replica_id)
        if follower is None or not self.eligible(replica_id):
            return False
        cached = self.broker_epoch(replica_id)
        stored = follower.broker_epoch
        return stored is not None and cached is not None and stored in (-1, cached)

    def expand_for(self, replica_id: int, *, high_watermark: int) -> PendingChange | None:
        """maybeExpandIsr: the PendingExpandIsr to send when the follower is in sync and may join."""
        state = self.state
        if state.in_flight or replica_id in state.isr or not self._isr_eligible(replica_id):
            return None
        end = self.followers[replica_id].log_end_offset
        if end < high_watermark or self.epoch_start_offset is None or end < self.epoch_start_offset:
            return None
        return self._prepare(state.isr | {replica_id}, IsrState(state.isr, state.isr | {replica_id}, EXPAND))

    def out_of_sync(self, leader_end_offset: int, now_ms: int) -> set[int]:
        """getOutOfSyncReplicas: followers of the ISR not caught up (none while a change is in flight)."""
        if self.state.in_flight:
            return set()
        out = set()
        for r in self.state.isr:
            if r == self.local_id:
                continue
            follower = self.followers.get(r)
            if follower is None or not follower.is_caught_up(leader_end_offset, now_ms, self.max_lag_ms):
                out.add(r)
        return out

    def shrink(self, leader_end_offset: int, now_ms: int) -> PendingChange | None:
        """maybeShrinkIsr: the PendingShrinkIsr to send when followers of the ISR fell behind."""
        out = self.out_of_sync(leader_end_offset, now_ms)
        if not out:
            return None
        state = self.state
        return self._prepare(state.isr - out, IsrState(state.isr, state.isr, SHRINK))

    def _prepare(self, isr: frozenset, pending: IsrState) -> PendingChange:
        """addBrokerEpochToIsr: the leader's own epoch, each follower's from its fetches (-1 unknown)."""
        with_epochs = []
        for r in sorted(isr):
            if r == self.local_id:
                with_epochs.append((r, self.local_broker_epoch()))
            else:
                follower = self.followers.get(r)
                epoch = None if follower is None else follower.broker_epoch
                with_epochs.append((r, -1 if epoch is None else epoch))
        change = PendingChange(pending, self.state, self.leader_epoch, self.partition_epoch, tuple(with_epochs))
        self.state = pending
        return change

    # -- the answer to an AlterPartition --

    def altered(self, change: PendingChange, *, leader_epoch: int, isr, partition_epoch: int) -> bool:
        """handleAlterPartitionUpdate: whether the committed ISR became the controller's answer."""
        if self.state is not change.state:          # a newer metadata state came first: the answer is stale
            return False
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            return False
        committed = frozenset(isr)
        self.state = IsrState(committed, committed)
        self.partition_epoch = partition_epoch
        return True

    def alter_failed(self, change: PendingChange, error: Errors) -> bool:
        """handleAlterPartitionError: whether to send the change again. OPERATION_NOT_ATTEMPTED and
        INELIGIBLE_REPLICA return to the committed state; the errors that mean the metadata will
        tell (stale epochs, unknown partition, invalid request, new leader) stay pending until it does."""
        if self.state is not change.state:
            return False
        if error in (Errors.OPERATION_NOT_ATTEMPTED, Errors.INELIGIBLE_REPLICA):
            self.state = change.committed
            return False
        return error not in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_ID, Errors.FENCED_LEADER_EPOCH,
                             Errors.INVALID_UPDATE_VERSION, Errors.INVALID_REQUEST, Errors.NEW_LEADER_ELECTED)

    # -- the high watermark and acks=all --

    def high_watermark_candidate(self, leader_end_offset: int, now_ms: int) -> int | None:
        """maybeIncrementLeaderHW's new high watermark (the caller keeps it only if larger);
        None while the committed ISR is under the effective min ISR."""
        if self.under_min_isr:
            return None
        candidate = leader_end_offset
        maximal = self.state.maximal
        for r, follower in self.followers.items():
            end = follower.log_end_offset
            if end < candidate and (r in maximal or (
                    follower.is_caught_up(leader_end_offset, now_ms, self.max_lag_ms) and self._isr_eligible(r))):
                candidate = end
        return candidate

    def enough_replicas(self, high_watermark: int, required_offset: int) -> tuple[bool, Errors]:
        """checkEnoughReplicasReachOffset (as leader)."""
        if high_watermark < required_offset:
            return False, Errors.NONE
        if self.effective_min_isr <= len(self.state.maximal):
            return True, Errors.NONE
        return True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
