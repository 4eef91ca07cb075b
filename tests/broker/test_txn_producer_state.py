"""The transaction rules of a partition's producer state (kafkawire.broker.producer_state), as
Kafka 4.3.1's ProducerAppendInfo (appendDataBatch, appendEndTxnMarker), ProducerStateManager
(ongoing and unreplicated transactions, lastStableOffset) and
UnifiedLog.analyzeAndValidateProducerState / maybeStartTransactionVerification decide them: a
table of steps, sans-I/O."""
from __future__ import annotations

import pytest

from kafkawire.broker.producer_state import VERIFICATION_OFF, BatchInfo, CompletedTxn, ProducerState
from kafkawire.broker.validation import ProduceRefused
from kafkawire.protocol.error_codes import Errors

PID, OTHER = 1000, 2000
OK = "ok"


class Run:
    """Feeds steps to one state at increasing offsets; each step's outcome."""

    def __init__(self, verification: bool = False):
        self.state = ProducerState("t-0")
        self.offset = 0
        self.verification = verification

    def data(self, epoch: int, seq: int, *, txn: bool = True, pid: int = PID, verify: bool = False):
        info = BatchInfo(pid, epoch, seq, 0, 100, txn)
        guard = VERIFICATION_OFF
        try:
            if self.verification:
                guard = self.state.start_verification(pid, epoch, seq, now_ms=0) if verify else None
            self.state.check(info, first_offset=self.offset, guard=guard)
        except ProduceRefused as exc:
            return Errors.for_code(exc.code).name
        self.state.apply(info, first_offset=self.offset)
        self.offset += 1
        return OK

    def marker(self, epoch: int, *, commit: bool = True, coordinator_epoch: int = 0, pid: int = PID, tv: int = 0):
        try:
            self.state.check_marker(pid, epoch, coordinator_epoch, self.offset, transaction_version=tv)
        except ProduceRefused as exc:
            return Errors.for_code(exc.code).name
        completed = self.state.apply_marker(pid, epoch, coordinator_epoch, self.offset, 100, aborted=not commit)
        if completed is not None:
            self.state.complete(completed)
        self.offset += 1
        self.state.on_high_watermark(self.offset)          # one replica: the marker is replicated at once
        return completed


# (rule, verification on, steps: ("data", epoch, seq, {kw}) / ("marker", epoch, {kw}), outcomes)
CASES = [
    ("without verification a transactional batch opens the producer's transaction", False,
     [("data", 0, 0, {}), ("data", 0, 1, {})], [OK, OK]),
    ("with verification, a batch opening a transaction without the guard is INVALID_TXN_STATE", True,
     [("data", 0, 0, {})], ["INVALID_TXN_STATE"]),
    ("with verification, the guard of start_verification lets it open the transaction, then no guard is needed",
     True, [("data", 0, 0, {"verify": True}), ("data", 0, 1, {})], [OK, OK]),
    ("the guard is spent by the append: the next transaction needs a new verification", True,
     [("data", 0, 0, {"verify": True}), ("marker", 0, {}), ("data", 0, 1, {})],
     [OK, CompletedTxn(PID, 0, 1, False), "INVALID_TXN_STATE"]),
    ("a transactional batch of an older epoch is INVALID_PRODUCER_EPOCH", False,
     [("data", 2, 0, {"txn": False}), ("data", 1, 0, {})], [OK, "INVALID_PRODUCER_EPOCH"]),
    ("a plain batch while the producer's transaction is open is INVALID_TXN_STATE", False,
     [("data", 0, 0, {}), ("data", 0, 1, {"txn": False})], [OK, "INVALID_TXN_STATE"]),
    ("a commit ends the transaction with its first offset and the marker's", False,
     [("data", 0, 0, {}), ("data", 0, 1, {}), ("marker", 0, {})], [OK, OK, CompletedTxn(PID, 0, 2, False)]),
    ("an abort likewise, marked aborted", False,
     [("data", 0, 0, {}), ("marker", 0, {"commit": False})], [OK, CompletedTxn(PID, 0, 1, True)]),
    ("a marker without an open transaction completes nothing", False, [("marker", 0, {})], [None]),
    ("a marker of an older producer epoch is INVALID_PRODUCER_EPOCH", False,
     [("data", 1, 0, {}), ("marker", 0, {})], [OK, "INVALID_PRODUCER_EPOCH"]),
    ("a marker of a newer producer epoch is written (the coordinator bumped it)", False,
     [("data", 0, 0, {}), ("marker", 1, {})], [OK, CompletedTxn(PID, 0, 1, False)]),
    ("with transaction version 2 a marker of the same epoch over an open transaction is INVALID_PRODUCER_EPOCH",
     False, [("data", 0, 0, {}), ("marker", 0, {"tv": 2})], [OK, "INVALID_PRODUCER_EPOCH"]),
    ("with transaction version 2 a retried marker of the same epoch after the end is written again", False,
     [("data", 0, 0, {}), ("marker", 1, {"tv": 2}), ("marker", 1, {"tv": 2})],
     [OK, CompletedTxn(PID, 0, 1, False), None]),
    ("a marker of an older coordinator epoch is TRANSACTION_COORDINATOR_FENCED", False,
     [("data", 0, 0, {}), ("marker", 0, {"coordinator_epoch": 5}), ("data", 0, 1, {}),
      ("marker", 0, {"coordinator_epoch": 4})],
     [OK, CompletedTxn(PID, 0, 1, False), OK, "TRANSACTION_COORDINATOR_FENCED"]),
]


@pytest.mark.parametrize("rule, verification, steps, outcomes", CASES, ids=[c[0] for c in CASES])
def test_kafkas_transaction_rules(rule, verification, steps, outcomes):
    run = Run(verification)
    got = [run.data(s[1], s[2], **s[3]) if s[0] == "data" else run.marker(s[1], **s[2]) for s in steps]
    assert got == outcomes


def test_the_error_messages_are_kafkas():
    run = Run()
    run.data(0, 0)
    with pytest.raises(ProduceRefused) as plain:
        run.state.check(BatchInfo(PID, 0, 1, 0, 100, False), first_offset=7)
    assert str(plain.value) == ("Expected transactional write from producer 1000 at offset "
                                "(offset=7, segment=[-1:-1]) in partition t-0")
    run.marker(0, coordinator_epoch=3)
    with pytest.raises(ProduceRefused) as fenced:
        run.state.check_marker(PID, 0, 2, 9)
    assert str(fenced.value) == ("Invalid coordinator epoch for producerId 1000 at offset 9 in partition t-0: "
                                 "2 (zombie), 3 (current)")
    run.state.check_marker(PID, 0, 3, 9, transaction_version=2)      # a TV2 retry after the end: allowed
    run.data(0, 1)
    with pytest.raises(ProduceRefused) as same:
        run.state.check_marker(PID, 0, 3, 9, transaction_version=2)
    assert str(same.value) == "Epoch of producer 1000 at offset 9 in t-0 is 0, which is <= the last seen epoch 0 (TV2)"
    with pytest.raises(ProduceRefused) as stale:
        Run().state.check(BatchInfo(PID, 0, 0, 0, 100, True), first_offset=0, guard=None)
    assert str(stale.value) == "Record was not part of an ongoing transaction"


def test_the_first_unstable_offset_and_the_index_lso_follow_kafka():
    """ProducerStateManager: the first unstable offset is the oldest open transaction's first
    offset; an aborted transaction's index entry carries the next other producer's open
    transaction as its LSO, else its marker's offset + 1."""
    run = Run()
    assert run.state.first_unstable_offset() is None
    run.data(0, 0)                              # PID's transaction at 0
    run.data(0, 0, pid=OTHER)                   # OTHER's at 1
    assert run.state.first_unstable_offset() == 0
    aborted = run.marker(0, commit=False)       # PID's abort at 2
    assert aborted == CompletedTxn(PID, 0, 2, True)
    assert run.state.last_stable_offset_after(aborted) == 1      # OTHER's transaction is still open
    assert run.state.first_unstable_offset() == 1
    done = run.marker(0, pid=OTHER)
    assert run.state.last_stable_offset_after(done) == 4
    assert run.state.first_unstable_offset() is None


def test_a_completed_transaction_stays_unstable_until_the_high_watermark_passes_its_marker():
    state = ProducerState("t-0")
    state.apply(BatchInfo(PID, 0, 0, 0, 100, True), first_offset=10)
    state.complete(state.apply_marker(PID, 0, 0, 11, 100, aborted=False))
    assert state.first_unstable_offset() == 10
    state.on_high_watermark(11)
    assert state.first_unstable_offset() == 10
    state.on_high_watermark(12)
    assert state.first_unstable_offset() is None


def test_verification_keeps_the_lowest_sequence_and_refuses_a_later_one():
    """VerificationStateEntry: while verifying, a batch above the lowest sequence seen is out of
    order ("earliest seen sequence"); an older epoch is refused before any verification."""
    state = ProducerState("t-0")
    state.start_verification(PID, 0, 5, now_ms=0)
    guard = state.start_verification(PID, 0, 3, now_ms=0)
    with pytest.raises(ProduceRefused) as later:
        state.check(BatchInfo(PID, 0, 5, 0, 100, True), first_offset=0, guard=guard)
    assert str(later.value) == ("Out of order sequence number for producer 1000 at offset 0 in partition t-0: 5 "
                                "(incoming seq. number), 3 (earliest seen sequence)")
    state.apply(BatchInfo(PID, 2, 0, 0, 100, False), first_offset=0)
    with pytest.raises(ProduceRefused) as epoch:
        state.start_verification(PID, 1, 0, now_ms=0)
    assert str(epoch.value) == "Epoch of producer 1000 is 1, which is smaller than the last seen epoch 2"


def test_a_snapshot_brings_back_the_open_transactions_in_offset_order():
    from kafkawire.storage.producer_snapshot import ProducerSnapshotEntry
    state = ProducerState("t-0")
    state.load_snapshot([ProducerSnapshotEntry(OTHER, 0, 4, 30, 100, 0, 0, 30, 0),
                         ProducerSnapshotEntry(PID, 0, 2, 20, 100, 0, 0, 25, 0)], now_ms=100)
    assert state.first_unstable_offset() == 20
    assert state.producers[OTHER].coordinator_epoch == 4
    assert state.has_ongoing_transaction(PID, 0)


def test_describe_producers_shows_the_open_transaction_and_the_last_coordinator_epoch():
    """UnifiedLog.activeProducers: currentTxnStartOffset and coordinatorEpoch from the state."""
    from kafkawire.broker.describe_producers import active_producers
    run = Run()
    run.data(0, 0)
    run.marker(0, coordinator_epoch=6)
    run.data(0, 1)                                   # a new transaction at offset 2
    [producer] = active_producers(run.state)
    assert (producer.current_txn_start_offset, producer.coordinator_epoch) == (2, 6)
