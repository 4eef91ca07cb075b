"""The transaction coordinator's state machine, without I/O: InitProducerId for a transactional
id, AddPartitionsToTxn (and its verify-only form of KIP-890), EndTxn under transaction.version
0/1 and 2, DescribeTransactions, ListTransactions, the abort of timed-out transactions and the
expiry of idle transactional ids, as Kafka 4.3.1's TransactionCoordinator and
TransactionStateManager decide them.

    coordinator = TransactionCoordinator(settings, owner=..., persist=..., generate_producer_id=...,
                                         markers=sender, now_ms=clock, tv_level=lambda: 2)
    code, producer_id, epoch = coordinator.init_producer_id("tx", 60000, None)

The caller provides: ``owner(transactional_id) -> (error code, coordinator epoch)`` (NONE when
this broker leads the id's ``__transaction_state`` partition and has loaded it),
``persist(transactional_id, records) -> error code`` (appends (key, value) records to that
partition), ``generate_producer_id()`` (raises ProducerIdsUnavailable when no id is at hand),
``markers.send(transactional_id, coordinator_epoch, committed, metadata)`` (writes the markers
of a PrepareCommit/PrepareAbort, then calls ``complete(...)``) and ``tv_level()``, the
cluster's finalized transaction.version.

Every appended state is written before it is taken: a transition is prepared (pending), written,
then completed, as Kafka's appendTransactionToLog does with replication factor 1.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Callable

from kafkawire.messages.list_transactions_response import ListTransactionsResponse, TransactionState
from kafkawire.protocol.error_codes import Errors

from .producer_ids import ProducerIdsUnavailable
from .txn_records import txn_key, txn_value
from .txn_state import (COMPLETE_ABORT, COMPLETE_COMMIT, DEAD, EMPTY, EXPIRABLE, NO_PRODUCER_EPOCH, NO_PRODUCER_ID,
                        ONGOING, PREPARE_ABORT, PREPARE_COMMIT, PREPARE_EPOCH_FENCE, SHORT_MAX, STATE_IDS,
                        TransactionMetadata, TxnError, epoch_exhausted)

__all__ = ["TransactionCoordinator", "TxnSettings"]

log = logging.getLogger(__name__)
_NO_IDS = (Errors.NONE, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)    # a TV1 EndTxn answers no producer id and epoch


# A two-phase commit transaction (KIP-939) has Java's Integer.MAX_VALUE as its timeout, which is
# how Kafka's TransactionMetadata.isDistributedTwoPhaseCommitTxn tells it: it never times out.
TWO_PHASE_TIMEOUT_MS = 2**31 - 1


@dataclass(frozen=True)
class TxnSettings:
    """Kafka's names and defaults (TransactionStateManagerConfig)."""
    transaction_max_timeout_ms: int = 900_000              # transaction.max.timeout.ms
    transactional_id_expiration_ms: int = 604_800_000      # transactional.id.expiration.ms
    two_phase_commit_enable: bool = False                  # transaction.two.phase.commit.enable


class TransactionCoordinator:
    def __init__(self, settings: TxnSettings, *, owner: Callable, persist: Callable, generate_producer_id: Callable,
                 markers, now_ms: Callable[[], int], tv_level: Callable[[], int]):
        self.settings = settings
        self.owner = owner
        self.persist = persist
        self.generate_producer_id = generate_producer_id
        self.markers = markers
        self.now_ms = now_ms
        self.tv_level = tv_level
        self.txns: dict[str, TransactionMetadata] = {}

    # -- the cache --

    def state_of(self, transactional_id: str) -> tuple[int, int, TransactionMetadata | None]:
        """(error, coordinator epoch, metadata or None) as getTransactionState answers."""
        code, epoch = self.owner(transactional_id)
        if code != Errors.NONE:
            return code, -1, None
        return Errors.NONE, epoch, self.txns.get(transactional_id)

    def _append(self, metadata: TransactionMetadata, coordinator_epoch: int, transit, *, retriable=()) -> int:
        """Write the transit and take it (or drop the pending state, unless the error is one of
        ``retriable``: the caller writes it again): an error code."""
        code = self.persist(metadata.transactional_id, [(txn_key(metadata.transactional_id),
                                                         txn_value(transit, self.tv_level()))])
        if code == Errors.NONE:
            owner_code, epoch = self.owner(metadata.transactional_id)
            if owner_code != Errors.NONE or epoch != coordinator_epoch \
                    or self.txns.get(metadata.transactional_id) is not metadata:
                code = Errors.NOT_COORDINATOR
        if code == Errors.NONE:
            metadata.complete_transition(transit)
        elif code not in retriable:
            metadata.abort_transition()
        return code

    def _new_producer_id(self) -> int:
        try:
            return self.generate_producer_id()
        except ProducerIdsUnavailable:
            raise TxnError(Errors.COORDINATOR_LOAD_IN_PROGRESS) from None

    # -- InitProducerId --

    def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None, *,
                         two_phase: bool = False, keep_prepared: bool = False) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional id; ``expected``: KIP-360's (id, epoch).
        ``two_phase``: InitProducerId v6's enable2Pc (KIP-939), refused unless
        transaction.two.phase.commit.enable (as Kafka, with TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        its transaction never times out (its timeout is TWO_PHASE_TIMEOUT_MS, whatever was asked).
        ``keep_prepared`` is UNSUPPORTED_VERSION, as in Kafka 4.3.1 (not implemented there yet)."""
        if transactional_id == "":
            return Errors.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if two_phase and not self.settings.two_phase_commit_enable:
            return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if keep_prepared:
            return Errors.UNSUPPORTED_VERSION, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if two_phase:
            timeout_ms = TWO_PHASE_TIMEOUT_MS
        elif not 0 < timeout_ms <= self.settings.transaction_max_timeout_ms:
            return Errors.INVALID_TRANSACTION_TIMEOUT, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        code, coordinator_epoch, metadata = self.state_of(transactional_id)
        try:
            if code != Errors.NONE:
                raise TxnError(code)
            if metadata is None:
                metadata = TransactionMetadata(transactional_id, self._new_producer_id(), txn_timeout_ms=timeout_ms,
                                               txn_last_update_ms=self.now_ms())
                self.txns[transactional_id] = metadata
            transit = self._prepare_init(metadata, timeout_ms, expected)
        except TxnError as exc:
            return exc.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if transit.state == PREPARE_EPOCH_FENCE:
            # The ongoing transaction of the fenced producer is aborted first; the client retries.
            code, _, _ = self.end_transaction(transactional_id, transit.producer_id, transit.producer_epoch, False,
                                              from_client=False, tv=self.tv_level())
            return (code if code != Errors.NONE else Errors.CONCURRENT_TRANSACTIONS), NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        code = self._append(metadata, coordinator_epoch, transit)
        if code != Errors.NONE:
            return code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        log.info("Initialized transactionalId %s with producerId %d and producer epoch %d", transactional_id,
                 transit.producer_id, transit.producer_epoch)
        return Errors.NONE, transit.producer_id, transit.producer_epoch

    def _prepare_init(self, metadata: TransactionMetadata, timeout_ms: int, expected):
        if metadata.pending:
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS)
        if expected is not None and not (
                metadata.producer_epoch == NO_PRODUCER_EPOCH or expected[0] == metadata.producer_id
                or (expected[0] == metadata.prev_producer_id and epoch_exhausted(expected[1]))):
            raise TxnError(Errors.PRODUCER_FENCED)
        state = metadata.state
        if state in (PREPARE_ABORT, PREPARE_COMMIT):
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS)
        if state == ONGOING:
            return metadata.prepare_fence_producer_epoch()
        if state not in (COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY):
            raise TxnError(Errors.UNKNOWN_SERVER_ERROR)
        now = self.now_ms()
        if epoch_exhausted(metadata.producer_epoch) and (expected is None or expected[1] == metadata.producer_epoch):
            return metadata.prepare_producer_id_rotation(self._new_producer_id(), timeout_ms, now, expected is not None)
        return metadata.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected[1], now)

    # -- AddPartitionsToTxn, AddOffsetsToTxn --

    def add_partitions(self, transactional_id: str, producer_id: int, epoch: int, partitions: set, tv: int) -> int:
        if not transactional_id:
            return Errors.INVALID_REQUEST
        code, coordinator_epoch, metadata = self.state_of(transactional_id)
        if code != Errors.NONE:
            return code
        if metadata is None:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        if metadata.pending:
            return Errors.CONCURRENT_TRANSACTIONS
        if metadata.producer_id != producer_id:
            return Errors.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != epoch:
            return Errors.PRODUCER_FENCED
        if metadata.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return Errors.CONCURRENT_TRANSACTIONS
        if metadata.state == ONGOING and partitions <= metadata.partitions:
            return Errors.NONE
        return self._append(metadata, coordinator_epoch, metadata.prepare_add_partitions(partitions, self.now_ms(), tv))

    def verify_partitions(self, transactional_id: str, producer_id: int, epoch: int, partitions) -> dict:
        """handleVerifyPartitionsInTransaction: each partition NONE if in the transaction, else
        TRANSACTION_ABORTABLE; or one error for all."""
        partitions = list(partitions)
        if not transactional_id:
            return dict.fromkeys(partitions, Errors.INVALID_REQUEST)
        code, _, metadata = self.state_of(transactional_id)
        if code == Errors.NONE:
            if metadata is None or metadata.producer_id != producer_id:
                code = Errors.INVALID_PRODUCER_ID_MAPPING
            elif metadata.producer_epoch != epoch:
                code = Errors.PRODUCER_FENCED
            elif metadata.state in (PREPARE_COMMIT, PREPARE_ABORT):
                code = Errors.CONCURRENT_TRANSACTIONS
        if code != Errors.NONE:
            return dict.fromkeys(partitions, code)
        return {p: Errors.NONE if p in metadata.partitions else Errors.TRANSACTION_ABORTABLE for p in partitions}

    # -- EndTxn --

    def end_transaction(self, transactional_id: str, producer_id: int, epoch: int, committed: bool, *,
                        from_client: bool = True, tv: int = 0) -> tuple[int, int, int]:
        """(error, producer id, epoch): the id and epoch are the ones the client continues with
        under transaction.version 2 (-1, -1 otherwise)."""
        if not transactional_id:
            return Errors.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        code, coordinator_epoch, metadata = self.state_of(transactional_id)
        if code == Errors.NONE and metadata is None:
            code = Errors.INVALID_PRODUCER_ID_MAPPING
        if code != Errors.NONE:
            return code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        prepare = self._prepare_end_v2 if tv >= 2 else self._prepare_end_v1
        was_fence = metadata.pending_state == PREPARE_EPOCH_FENCE
        try:
            transit = prepare(metadata, producer_id, epoch, committed, from_client, tv)
        except TxnError as exc:
            if was_fence and metadata.pending_state == PREPARE_EPOCH_FENCE:
                metadata.abort_transition()          # never leave a fence pending for ever
            if exc.code == Errors.NONE:              # a retry of a completed EndTxn
                return Errors.NONE, *((metadata.producer_id, metadata.producer_epoch) if tv >= 2 else _NO_IDS[1:])
            return exc.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        code = self._append(metadata, coordinator_epoch, transit)
        if code != Errors.NONE:
            if was_fence and tv < 2:
                metadata.has_failed_epoch_fence = True
            return code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        return self._start_markers(metadata, coordinator_epoch, producer_id, epoch, committed, tv)

    def _start_markers(self, metadata, coordinator_epoch: int, producer_id: int, epoch: int, committed: bool,
                       tv: int) -> tuple[int, int, int]:
        """The PrepareX state is written: check it is still ours, prepare CompleteX, send the markers."""
        if metadata.producer_id != producer_id:
            return Errors.INVALID_PRODUCER_ID_MAPPING, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if metadata.producer_epoch != epoch and not (tv >= 2 and metadata.producer_epoch == epoch + 1):
            return Errors.PRODUCER_FENCED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if metadata.pending:
            return Errors.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        complete = metadata.prepare_complete(self.now_ms())
        self.markers.send(metadata, coordinator_epoch, committed, complete)
        if tv >= 2:
            return Errors.NONE, complete.producer_id, complete.producer_epoch
        return _NO_IDS

    @staticmethod
    def _invalid(metadata, committed: bool):
        log.warning("TransactionalId: %s's state is %s, but received transaction marker result to send: %s",
                    metadata.transactional_id, metadata.state, "COMMIT" if committed else "ABORT")
        return TxnError(Errors.INVALID_TXN_STATE)

    def _prepare_end_v1(self, metadata, producer_id, epoch, committed, from_client, tv):
        if metadata.producer_id != producer_id:
            raise TxnError(Errors.INVALID_PRODUCER_ID_MAPPING)
        if (from_client and epoch != metadata.producer_epoch) or epoch < metadata.producer_epoch:
            raise TxnError(Errors.PRODUCER_FENCED)
        if metadata.pending and metadata.pending_state != PREPARE_EPOCH_FENCE:
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS)
        state = metadata.state
        if state == ONGOING:
            next_state = PREPARE_COMMIT if committed else PREPARE_ABORT
            if next_state == PREPARE_ABORT and metadata.pending_state == PREPARE_EPOCH_FENCE:
                metadata.abort_transition()
                metadata.producer_epoch, metadata.last_producer_epoch = epoch, NO_PRODUCER_EPOCH
            return metadata.prepare_abort_or_commit(next_state, 0, NO_PRODUCER_ID, self.now_ms(), False)
        if state in (COMPLETE_COMMIT, COMPLETE_ABORT):
            raise TxnError(Errors.NONE) if committed == (state == COMPLETE_COMMIT) else self._invalid(metadata, committed)
        if state in (PREPARE_COMMIT, PREPARE_ABORT):
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS) if committed == (state == PREPARE_COMMIT) \
                else self._invalid(metadata, committed)
        raise self._invalid(metadata, committed)

    def _prepare_end_v2(self, metadata, producer_id, epoch, committed, from_client, tv):
        fence = metadata.pending_state == PREPARE_EPOCH_FENCE
        retry_on_overflow = (not fence and metadata.prev_producer_id == producer_id and epoch == SHORT_MAX - 1
                             and metadata.producer_epoch == 0)
        retry_on_bump = not fence and metadata.producer_epoch == epoch + 1
        state = metadata.state
        if fence:
            valid = (not from_client or epoch == metadata.producer_epoch) and epoch >= metadata.producer_epoch
        elif state in (PREPARE_COMMIT, PREPARE_ABORT):
            valid = retry_on_bump
        elif state in (COMPLETE_COMMIT, COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or epoch == metadata.producer_epoch
        else:
            valid = epoch == metadata.producer_epoch
        retry = retry_on_bump or retry_on_overflow
        if metadata.pending and not fence:
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS)
        if metadata.producer_id != producer_id and not retry_on_overflow:
            raise TxnError(Errors.INVALID_PRODUCER_ID_MAPPING)
        if not valid:
            raise TxnError(Errors.PRODUCER_FENCED)
        if state == ONGOING:
            return self._prepare_completion_v2(metadata, PREPARE_COMMIT if committed else PREPARE_ABORT, fence, tv, False)
        if state == COMPLETE_COMMIT:
            if committed:
                raise TxnError(Errors.NONE) if retry else self._invalid(metadata, committed)
            if retry:
                raise self._invalid(metadata, committed)
            return self._prepare_completion_v2(metadata, PREPARE_ABORT, fence, tv, True)
        if state == COMPLETE_ABORT:
            if committed:
                raise self._invalid(metadata, committed)
            if retry:
                raise TxnError(Errors.NONE)
            return self._prepare_completion_v2(metadata, PREPARE_ABORT, fence, tv, True)
        if state in (PREPARE_COMMIT, PREPARE_ABORT):
            raise TxnError(Errors.CONCURRENT_TRANSACTIONS) if committed == (state == PREPARE_COMMIT) \
                else self._invalid(metadata, committed)
        if state == EMPTY and not committed:
            return self._prepare_completion_v2(metadata, PREPARE_ABORT, fence, tv, True)
        raise self._invalid(metadata, committed)

    def _prepare_completion_v2(self, metadata, next_state: str, fence: bool, tv: int, no_partition_added: bool):
        next_producer_id = self._new_producer_id() if epoch_exhausted(metadata.producer_epoch) else NO_PRODUCER_ID
        if next_state == PREPARE_ABORT and fence:
            metadata.abort_transition()
        return metadata.prepare_abort_or_commit(next_state, tv, next_producer_id, self.now_ms(), no_partition_added)

    def resume_markers(self, metadata: TransactionMetadata) -> None:
        """A PrepareCommit/PrepareAbort found at load: write its markers, then complete it."""
        code, coordinator_epoch = self.owner(metadata.transactional_id)
        if code == Errors.NONE and not metadata.pending:
            complete = metadata.prepare_complete(self.now_ms())
            self.markers.send(metadata, coordinator_epoch, metadata.state == PREPARE_COMMIT, complete)

    def unload(self, here) -> None:
        """removeTransactionsForTxnTopicPartition and removeMarkersForTxnTopicPartition for the
        transactional ids ``here(id)`` names (their partition no longer led here, or about to be
        loaded again): their state dropped and their pending markers no longer sent; a load
        rebuilds the state from the log and completes a PrepareX found there."""
        for transactional_id in [t for t in self.txns if here(t)]:
            self.markers.cancel(transactional_id)
            del self.txns[transactional_id]

    # -- the markers are written --

    def complete(self, metadata: TransactionMetadata, coordinator_epoch: int, complete) -> int:
        """Every marker is written (or its partition gone): write CompleteCommit/CompleteAbort
        (COORDINATOR_NOT_AVAILABLE keeps it pending: the marker sender writes it again)."""
        return self._append(metadata, coordinator_epoch, complete, retriable=(Errors.COORDINATOR_NOT_AVAILABLE,))

    # -- DescribeTransactions, ListTransactions --

    def describe(self, transactional_id: str):
        """(error, metadata or None) for DescribeTransactions."""
        if transactional_id == "":
            return Errors.INVALID_REQUEST, None
        code, _, metadata = self.state_of(transactional_id)
        if code != Errors.NONE:
            return code, None
        if metadata is None or metadata.state == DEAD:
            return Errors.TRANSACTIONAL_ID_NOT_FOUND, None
        return Errors.NONE, metadata

    def list_transactions(self, states: list, producer_ids: list, duration_ms: int, pattern: str | None,
                          loading: bool) -> ListTransactionsResponse:
        if loading:
            return ListTransactionsResponse(error_code=Errors.COORDINATOR_LOAD_IN_PROGRESS)
        known = {s for s in states if s in STATE_IDS}
        unknown = [s for s in states if s not in STATE_IDS]
        try:
            regex = re.compile(pattern) if pattern else None
        except re.error:
            return ListTransactionsResponse(error_code=Errors.INVALID_REGULAR_EXPRESSION, unknown_state_filters=unknown)
        wanted_ids = set(producer_ids)
        now = self.now_ms()
        found = []
        for metadata in self.txns.values():
            if metadata.state == DEAD or self.owner(metadata.transactional_id)[0] != Errors.NONE:
                continue
            if (wanted_ids and metadata.producer_id not in wanted_ids) or (states and metadata.state not in known):
                continue
            if duration_ms >= 0 and now - metadata.txn_start_ms <= duration_ms:
                continue
            if regex is not None and regex.fullmatch(metadata.transactional_id) is None:
                continue
            found.append(TransactionState(transactional_id=metadata.transactional_id,
                                          producer_id=metadata.producer_id, transaction_state=metadata.state))
        return ListTransactionsResponse(error_code=Errors.NONE, unknown_state_filters=unknown, transaction_states=found)

    # -- the periodic tasks --

    def abort_timed_out(self) -> int:
        """Abort every Ongoing transaction older than its timeout (abortTimedOutTransactions): how many."""
        now = self.now_ms()
        timed_out = [m for m in self.txns.values()
                     if m.state == ONGOING and not m.pending and m.txn_timeout_ms != TWO_PHASE_TIMEOUT_MS
                     and m.txn_start_ms + m.txn_timeout_ms < now
                     and self.owner(m.transactional_id)[0] == Errors.NONE]
        for metadata in timed_out:
            transit = metadata.prepare_fence_producer_epoch()
            code, _, _ = self.end_transaction(metadata.transactional_id, transit.producer_id, transit.producer_epoch,
                                              False, from_client=False, tv=self.tv_level())
            if code == Errors.NONE:
                log.info("Completed rollback of ongoing transaction for transactionalId %s due to timeout",
                         metadata.transactional_id)
            else:
                log.debug("Rollback of %s due to timeout: %s", metadata.transactional_id, Errors.for_code(code).name)
        return len(timed_out)

    def expire_transactional_ids(self) -> int:
        """Remove the ids idle for transactional.id.expiration.ms in a completed state, writing
        their tombstones (removeExpiredTransactionalIds): how many."""
        cutoff = self.now_ms() - self.settings.transactional_id_expiration_ms
        expired = [m for m in self.txns.values()
                   if m.state in EXPIRABLE and not m.pending and m.txn_last_update_ms <= cutoff
                   and self.owner(m.transactional_id)[0] == Errors.NONE]
        removed = 0
        for metadata in expired:
            metadata.prepare_dead()
            code = self.persist(metadata.transactional_id, [(txn_key(metadata.transactional_id), None)])
            if code == Errors.NONE and self.txns.get(metadata.transactional_id) is metadata:
                del self.txns[metadata.transactional_id]
                removed += 1
            else:
                metadata.abort_transition()
        return removed
