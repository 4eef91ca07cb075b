"""One transactional id's state, as Kafka 4.3.1's TransactionMetadata keeps it: its producer id
and epoch, the partitions of the ongoing transaction, its state (TransactionState) and the
transition being written to ``__transaction_state`` (the pending state).

    metadata = TransactionMetadata("tx", producer_id=7, txn_timeout_ms=60000, ...)
    transit = metadata.prepare_add_partitions({("orders", 0)}, now_ms, tv=0)   # pending: Ongoing
    ...append the transit's record...
    metadata.complete_transition(transit)                                    # or abort_transition()

A transition is prepared (the pending state set, which makes concurrent requests answer
CONCURRENT_TRANSACTIONS), written, and then completed; a failed write drops the pending state.
The rules of which state may follow which (VALID_PREVIOUS) and how each transition moves the
producer epoch are Kafka's (TransactionMetadata.prepare*, TransactionState).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from kafkawire.protocol.error_codes import Errors

__all__ = ["TransactionMetadata", "TxnTransit", "TxnError", "EMPTY", "ONGOING", "PREPARE_COMMIT", "PREPARE_ABORT",
           "COMPLETE_COMMIT", "COMPLETE_ABORT", "DEAD", "PREPARE_EPOCH_FENCE", "STATE_IDS", "STATE_BY_ID",
           "EXPIRABLE", "epoch_exhausted", "NO_PRODUCER_ID", "NO_PRODUCER_EPOCH", "SHORT_MAX"]

# Kafka's state names (what DescribeTransactions/ListTransactions report) and their ids in the log.
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT = "Empty", "Ongoing", "PrepareCommit", "PrepareAbort"
COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, PREPARE_EPOCH_FENCE = "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"
STATE_IDS = {EMPTY: 0, ONGOING: 1, PREPARE_COMMIT: 2, PREPARE_ABORT: 3, COMPLETE_COMMIT: 4, COMPLETE_ABORT: 5,
             DEAD: 6, PREPARE_EPOCH_FENCE: 7}
STATE_BY_ID = {v: k for k, v in STATE_IDS.items()}
EXPIRABLE = frozenset((EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT))
VALID_PREVIOUS = {
    EMPTY: {EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    ONGOING: {ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    PREPARE_COMMIT: {ONGOING},
    PREPARE_ABORT: {ONGOING, PREPARE_EPOCH_FENCE, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT},
    COMPLETE_COMMIT: {PREPARE_COMMIT},
    COMPLETE_ABORT: {PREPARE_ABORT},
    DEAD: {EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT},
    PREPARE_EPOCH_FENCE: {ONGOING},
}
NO_PRODUCER_ID, NO_PRODUCER_EPOCH = -1, -1
SHORT_MAX = 32767


def epoch_exhausted(epoch: int) -> bool:
    """No epoch may be handed out after Short.MAX_VALUE - 1 (one is kept for fencing)."""
    return epoch >= SHORT_MAX - 1


class TxnError(Exception):
    """A request refused with a Kafka error code."""

    def __init__(self, code: int):
        super().__init__(Errors.for_code(code).name)
        self.code = code


@dataclass(frozen=True)
class TxnTransit:
    """The state a transition leads to (Kafka's TxnTransitMetadata): what is written to the log."""
    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: str
    partitions: frozenset
    txn_start_ms: int
    txn_last_update_ms: int
    client_tv: int


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60_000
    state: str = EMPTY
    partitions: set = field(default_factory=set)
    txn_start_ms: int = -1
    txn_last_update_ms: int = -1
    client_tv: int = 0
    pending_state: str | None = None
    has_failed_epoch_fence: bool = False

    @property
    def pending(self) -> bool:
        return self.pending_state is not None

    def _current(self) -> TxnTransit:
        return TxnTransit(self.producer_id, self.prev_producer_id, self.next_producer_id, self.producer_epoch,
                          self.last_producer_epoch, self.txn_timeout_ms, self.state, frozenset(self.partitions),
                          self.txn_start_ms, self.txn_last_update_ms, self.client_tv)

    def _transit(self, state: str, **changes) -> TxnTransit:
        """prepareTransitionTo: check the move, set the pending state; the transit keeps this
        producer id as its previous one."""
        if self.pending_state is not None:
            raise RuntimeError(f"{self.transactional_id}: preparing {state} while {self.pending_state} is pending")
        transit = replace(self._current(), state=state, prev_producer_id=self.producer_id, **changes)
        if transit.producer_id < 0 or (state != DEAD and transit.producer_epoch < 0):
            raise RuntimeError(f"{self.transactional_id}: illegal producer id/epoch in {transit}")
        if self.state not in VALID_PREVIOUS[state]:
            raise RuntimeError(f"{self.transactional_id}: {self.state} cannot move to {state}")
        self.pending_state = state
        return transit

    # -- the transitions (Kafka's prepare* methods) --

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """An older producer is fenced: the epoch moves on (once, even if writing it failed before)."""
        keep = self.has_failed_epoch_fence or self.producer_epoch == SHORT_MAX
        return self._transit(PREPARE_EPOCH_FENCE, producer_epoch=self.producer_epoch if keep else self.producer_epoch + 1)

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None, now_ms: int) -> TxnTransit:
        """InitProducerId on the same producer id; a retry of a bump that succeeded keeps the epoch."""
        if epoch_exhausted(self.producer_epoch):
            raise RuntimeError(f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise TxnError(Errors.PRODUCER_FENCED)
        return self._transit(EMPTY, producer_epoch=epoch, last_producer_epoch=last, txn_timeout_ms=timeout_ms,
                             partitions=frozenset(), txn_start_ms=-1, txn_last_update_ms=now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        return self._transit(EMPTY, producer_id=new_producer_id, producer_epoch=0,
                             last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
                             txn_timeout_ms=timeout_ms, partitions=frozenset(), txn_start_ms=-1,
                             txn_last_update_ms=now_ms)

    def prepare_add_partitions(self, added, now_ms: int, tv: int) -> TxnTransit:
        start = now_ms if self.state in (EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT) else self.txn_start_ms
        return self._transit(ONGOING, partitions=frozenset(self.partitions) | frozenset(added), txn_start_ms=start,
                             txn_last_update_ms=now_ms, client_tv=tv)

    def prepare_abort_or_commit(self, state: str, tv: int, next_producer_id: int, now_ms: int,
                                no_partition_added: bool) -> TxnTransit:
        """PrepareCommit/PrepareAbort; with transaction.version 2 the epoch moves on here (KIP-890)."""
        epoch, last = self.producer_epoch, self.last_producer_epoch
        if tv >= 2:
            if not (self.producer_epoch == SHORT_MAX and state == PREPARE_ABORT):
                epoch = self.producer_epoch + 1
            last = self.producer_epoch
        return self._transit(state, producer_epoch=epoch, last_producer_epoch=last,
                             txn_start_ms=now_ms if no_partition_added else self.txn_start_ms,
                             next_producer_id=next_producer_id, txn_last_update_ms=now_ms, client_tv=tv)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        self.has_failed_epoch_fence = False
        state = COMPLETE_COMMIT if self.state == PREPARE_COMMIT else COMPLETE_ABORT
        producer_id, epoch = self.producer_id, self.producer_epoch
        if self.client_tv >= 2 and self.next_producer_id != NO_PRODUCER_ID:     # the epoch overflowed
            producer_id, epoch = self.next_producer_id, 0
        return self._transit(state, producer_id=producer_id, producer_epoch=epoch, next_producer_id=NO_PRODUCER_ID,
                             partitions=frozenset(), txn_last_update_ms=now_ms)

    def prepare_dead(self) -> TxnTransit:
        return self._transit(DEAD, partitions=frozenset())

    # -- after the write --

    def complete_transition(self, transit: TxnTransit) -> None:
        """The transit is in the log: it becomes the state (completeTransitionTo)."""
        if self.pending_state != transit.state:
            raise RuntimeError(f"{self.transactional_id}: completing {transit.state}, pending {self.pending_state}")
        self.producer_id, self.prev_producer_id = transit.producer_id, transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch, self.last_producer_epoch = transit.producer_epoch, transit.last_producer_epoch
        self.txn_timeout_ms, self.partitions = transit.txn_timeout_ms, set(transit.partitions)
        self.txn_start_ms, self.txn_last_update_ms = transit.txn_start_ms, transit.txn_last_update_ms
        self.client_tv, self.state, self.pending_state = transit.client_tv, transit.state, None

    def abort_transition(self) -> None:
        self.pending_state = None
