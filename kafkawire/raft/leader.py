"""What a leader keeps about its epoch: each replica's progress, the high watermark, the
check-quorum timer, who has endorsed it, and the clients waiting for commits.

Kafka's LeaderState. Voters are tracked by node id under the latest voter set (KIP-853: a
new set counts as soon as its VotersRecord is appended); anyone else who fetches is an
observer. The leader counts itself toward the high watermark only while it is a voter.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .types import ReplicaKey
from .voters import VoterSet, majority_offset

# KIP-595: a leader that hears from no majority for 1.5 fetch timeouts resigns.
CHECK_QUORUM_TIMEOUT_FACTOR = 1.5


@dataclass(slots=True)
class ReplicaState:
    key: ReplicaKey
    end_offset: int | None = None
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    last_fetch_leader_end_offset: int | None = None
    has_endorsed: bool = False      # fetched from us or answered our BeginQuorumEpoch

    def update_follower(self, now_ms: int, fetch_offset: int, leader_end_offset: int) -> None:
        # Kafka's ReplicaState.updateFollowerState: caught up now if it reached our end;
        # caught up at its previous fetch if it reached the end we had then.
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif self.last_fetch_leader_end_offset is not None and fetch_offset >= self.last_fetch_leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.last_fetch_leader_end_offset = leader_end_offset
        self.last_fetch_ms = max(self.last_fetch_ms, now_ms)
        self.end_offset = fetch_offset


@dataclass(slots=True)
class LeaderBookkeeping:
    local_key: ReplicaKey
    epoch: int
    epoch_start_offset: int
    fetch_timeout_ms: int
    granting_voters: frozenset[int]
    voter_states: dict[int, ReplicaState] = field(default_factory=dict)
    observer_states: dict[ReplicaKey, ReplicaState] = field(default_factory=dict)
    high_watermark: int | None = None
    fetched_voters: set[int] = field(default_factory=set)
    check_quorum_deadline_ms: int = 0
    begin_epoch_deadline_ms: int = 0
    # (last offset, token) of client appends, completed when the high watermark passes them.
    waiting_appends: list[tuple[int, object]] = field(default_factory=list)
    resign_requested: bool = False

    def __post_init__(self):
        self.check_quorum_deadline_ms = 0

    @property
    def check_quorum_timeout_ms(self) -> int:
        return int(self.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)

    def start(self, voters: VoterSet, now_ms: int) -> None:
        self.update_voters(voters)
        self.check_quorum_deadline_ms = now_ms + self.check_quorum_timeout_ms
        self.begin_epoch_deadline_ms = now_ms

    # --- membership -----------------------------------------------------------------------------
    def update_voters(self, voters: VoterSet, now_ms: int | None = None) -> None:
        """Re-sort replicas into voters and observers under a new voter set, keeping progress."""
        was_alone = set(self.voter_states) == {self.local_key.id}
        old = dict(self.voter_states)
        self.voter_states = {}
        for key in voters.keys:
            state = old.pop(key.id, None)
            if state is None:
                state = self.observer_states.pop(key, None)
                if state is None:
                    for observer_key in list(self.observer_states):
                        if observer_key.id == key.id and observer_key.matches(key):
                            state = self.observer_states.pop(observer_key)
                            break
            if state is None:
                state = ReplicaState(key)
            state.key = key
            self.voter_states[key.id] = state
        for state in old.values():
            if state.key.id != self.local_key.id:
                self.observer_states[state.key] = state
        self.fetched_voters &= set(self.voter_states)
        if was_alone and now_ms is not None and len(self.voter_states) > 1:
            # The first voter added to a sole leader gets a whole check-quorum period to fetch.
            self.check_quorum_deadline_ms = now_ms + self.check_quorum_timeout_ms

    def is_voter(self, key: ReplicaKey) -> bool:
        state = self.voter_states.get(key.id)
        return state is not None and state.key.matches(key)

    def replica_state(self, key: ReplicaKey) -> ReplicaState:
        if self.is_voter(key):
            return self.voter_states[key.id]
        state = self.observer_states.get(key)
        if state is None:
            state = self.observer_states[key] = ReplicaState(key)
        return state

    # --- progress -------------------------------------------------------------------------------
    def update_local_end(self, end_offset: int, now_ms: int) -> bool:
        local = self.voter_states.get(self.local_key.id)
        if local is not None:
            local.end_offset = end_offset
            local.last_fetch_ms = local.last_caught_up_ms = now_ms
        return self.maybe_update_high_watermark()

    def update_replica(self, key: ReplicaKey, fetch_offset: int, leader_end_offset: int, now_ms: int) -> bool:
        """A Fetch from ``key`` at ``fetch_offset``; returns whether the HW moved."""
        if key.id < 0:
            return False   # a consumer, not a replica
        if key.id == self.local_key.id:
            raise ValueError(f"a fetch from replica {key} has the leader's own id")
        state = self.replica_state(key)
        state.update_follower(now_ms, fetch_offset, leader_end_offset)
        state.has_endorsed = True
        if self.is_voter(key):
            self.fetched_voters.add(key.id)
            self._maybe_reset_check_quorum(now_ms)
            return self.maybe_update_high_watermark()
        return False

    def record_voter_contact(self, voter_id: int, now_ms: int) -> None:
        """A request from a voter other than a fetch that proves it follows us (UpdateRaftVoter)."""
        if voter_id in self.voter_states and voter_id != self.local_key.id:
            self.fetched_voters.add(voter_id)
            self._maybe_reset_check_quorum(now_ms)

    def _maybe_reset_check_quorum(self, now_ms: int) -> None:
        majority = len(self.voter_states) // 2 + 1
        if self.local_key.id in self.voter_states:
            majority -= 1   # the leader counts itself but never fetches
        if len(self.fetched_voters) >= majority:
            self.fetched_voters.clear()
            self.check_quorum_deadline_ms = now_ms + self.check_quorum_timeout_ms

    def check_quorum_expired(self, now_ms: int) -> bool:
        if len(self.voter_states) == 1 and self.local_key.id in self.voter_states:
            # Kafka's timeUntilCheckQuorumExpires: a sole voter keeps resetting the timer, so
            # that voters added later get a whole period to fetch (a stale deadline made the
            # leader of a standalone quorum resign as its first added voter joined).
            self.check_quorum_deadline_ms = now_ms + self.check_quorum_timeout_ms
            return False
        return now_ms >= self.check_quorum_deadline_ms

    def maybe_update_high_watermark(self) -> bool:
        """The HW is the offset a majority of voters reached, once that is past the start of
        this epoch (a record of our own epoch must commit first, KIP-595), never lower."""
        offsets = [s.end_offset if s.end_offset is not None else -1 for s in self.voter_states.values()]
        candidate = majority_offset(offsets)
        if candidate is None or candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is None or candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        # A lower majority offset happens when the voter set changes; the HW never goes back.
        return False

    def non_endorsing_voters(self) -> list[int]:
        return [i for i, s in self.voter_states.items() if i != self.local_key.id and not s.has_endorsed]

    def preferred_successors(self) -> tuple[ReplicaKey, ...]:
        """Voters other than us, most replicated first (EndQuorumEpoch's PreferredCandidates)."""
        others = [s for s in self.voter_states.values() if s.key.id != self.local_key.id]
        others.sort(key=lambda s: (-(s.end_offset if s.end_offset is not None else -1), s.key.id))
        return tuple(s.key for s in others)

    def take_committed_appends(self) -> list[tuple[object, int]]:
        if self.high_watermark is None:
            return []
        done = [(token, last) for last, token in self.waiting_appends if last < self.high_watermark]
        self.waiting_appends = [(last, token) for last, token in self.waiting_appends if last >= self.high_watermark]
        return done
