"""The producer-state rules of an idempotent producer's batches (kafkawire.broker.producer_state),
each with what Kafka 4.3.1's ProducerAppendInfo, ProducerStateEntry and
UnifiedLog.analyzeAndValidateProducerState decide: a table of cases, sans-I/O."""
from __future__ import annotations

import pytest

from kafkawire.broker.producer_state import BatchInfo, ProducerState
from kafkawire.broker.validation import ProduceRefused
from kafkawire.protocol.error_codes import Errors

PID = 1000
OK, DUP = "appended", "duplicate"


def batch(epoch: int, first_seq: int, count: int = 1, *, pid: int = PID, ts: int = 100,
          transactional: bool = False) -> BatchInfo:
    return BatchInfo(pid, epoch, first_seq, count - 1, ts, transactional)


def feed(state: ProducerState, batches, next_offset: int = 0):
    """Check and apply each batch as the leader does; the outcome of each (OK, DUP with its
    offset, or the error code)."""
    outcomes = []
    for info in batches:
        try:
            duplicate = state.check(info, first_offset=next_offset)
        except ProduceRefused as exc:
            outcomes.append(Errors.for_code(exc.code).name)
            continue
        if duplicate is not None:
            outcomes.append((DUP, duplicate.first_offset))
            continue
        state.apply(info, first_offset=next_offset)
        next_offset += info.last_offset_delta + 1
        outcomes.append(OK)
    return outcomes


# (rule, batches (epoch, first sequence, record count), outcomes)
CASES = [
    ("a new producer's first batch starting at 0", [(0, 0, 3)], [OK]),
    ("a new producer may start at any sequence (KIP-360: no UNKNOWN_PRODUCER_ID)", [(0, 7, 1)], [OK]),
    ("the next batch follows the last sequence", [(0, 0, 3), (0, 3, 2), (0, 5, 1)], [OK, OK, OK]),
    ("a gap is OUT_OF_ORDER_SEQUENCE_NUMBER", [(0, 0, 3), (0, 4, 1)], [OK, "OUT_OF_ORDER_SEQUENCE_NUMBER"]),
    ("a sequence going back but not a known batch is out of order",
     [(0, 0, 3), (0, 3, 2), (0, 1, 2)], [OK, OK, "OUT_OF_ORDER_SEQUENCE_NUMBER"]),
    ("a retry of the last batch is a duplicate with its offsets", [(0, 0, 3), (0, 0, 3)], [OK, (DUP, 0)]),
    ("a retry of an older one of the last five is a duplicate",
     [(0, 0, 1), (0, 1, 1), (0, 2, 1), (0, 3, 1), (0, 4, 1), (0, 0, 1)], [OK, OK, OK, OK, OK, (DUP, 0)]),
    ("the sixth batch back is forgotten: out of order",
     [(0, 0, 1), (0, 1, 1), (0, 2, 1), (0, 3, 1), (0, 4, 1), (0, 5, 1), (0, 0, 1)],
     [OK] * 6 + ["OUT_OF_ORDER_SEQUENCE_NUMBER"]),
    ("a duplicate must match both the first and the last sequence",
     [(0, 0, 3), (0, 0, 2)], [OK, "OUT_OF_ORDER_SEQUENCE_NUMBER"]),
    ("an older epoch is INVALID_PRODUCER_EPOCH", [(1, 0, 1), (0, 1, 1)], [OK, "INVALID_PRODUCER_EPOCH"]),
    ("a retry in an older epoch is not a duplicate but fenced", [(0, 0, 1), (1, 0, 1), (0, 0, 1)],
     [OK, OK, "INVALID_PRODUCER_EPOCH"]),
    ("a new epoch starts at sequence 0", [(0, 0, 5), (1, 0, 1)], [OK, OK]),
    ("a new epoch not at 0 is out of order", [(0, 0, 5), (1, 5, 1)], [OK, "OUT_OF_ORDER_SEQUENCE_NUMBER"]),
    ("the sequence wraps after 2^31-1 to 0", [(0, 2**31 - 2, 2), (0, 0, 1)], [OK, OK]),
    ("without verification a transactional batch opens a transaction (the rest: test_txn_producer_state)",
     [(0, 0, 1, True)], [OK]),
    ("a transactional batch in an older epoch is INVALID_PRODUCER_EPOCH",
     [(2, 0, 1), (1, 0, 1, True)], [OK, "INVALID_PRODUCER_EPOCH"]),
]


@pytest.mark.parametrize("rule, batches, outcomes", CASES, ids=[c[0] for c in CASES])
def test_kafkas_producer_state_rules(rule, batches, outcomes):
    infos = [batch(*b[:3], transactional=len(b) > 3 and b[3]) for b in batches]
    assert feed(ProducerState("t-0"), infos) == outcomes


def test_the_error_messages_are_kafkas():
    state = ProducerState("orders-0")
    feed(state, [batch(1, 0, 3)], next_offset=10)
    with pytest.raises(ProduceRefused) as gap:
        state.check(batch(1, 7), first_offset=13)
    assert str(gap.value) == ("Out of order sequence number for producer 1000 at offset 13 in partition orders-0: "
                              "7 (incoming seq. number), 2 (current end sequence number)")
    with pytest.raises(ProduceRefused) as fenced:
        state.check(batch(0, 3), first_offset=13)
    assert str(fenced.value) == ("Epoch of producer 1000 at offset 13 in orders-0 is 0, which is < the last seen "
                                 "epoch 1 (TV-1)")


def test_producers_are_independent_and_batches_without_a_producer_id_are_not_checked():
    state = ProducerState("t-0")
    assert feed(state, [batch(0, 0, pid=1), batch(0, 0, pid=2), batch(0, 5, pid=-1), batch(0, 1, pid=1)]) == \
        [OK, OK, OK, OK]
    assert set(state.producers) == {1, 2}


def test_a_duplicate_answers_the_original_batchs_offsets_and_timestamp():
    state = ProducerState("t-0")
    feed(state, [batch(0, 0, 4, ts=555)], next_offset=40)
    duplicate = state.check(batch(0, 0, 4, ts=999), first_offset=44)
    assert (duplicate.first_offset, duplicate.last_offset, duplicate.timestamp) == (40, 43, 555)


def test_a_producer_is_forgotten_after_producer_id_expiration_ms_then_any_sequence_goes():
    state = ProducerState("t-0", expiration_ms=1000)
    feed(state, [batch(0, 0, ts=5000)])
    assert state.remove_expired(5999) == 0
    assert state.remove_expired(6000) == 1
    assert feed(state, [batch(0, 9)]) == [OK]


def test_replayed_batches_are_recorded_without_checks():
    """AppendOrigin.REPLICATION: the log's batches are taken as they are (a gap is no error)."""
    from kafkawire.records import iter_batches
    from kafkawire.records.builder import build_batch
    data = build_batch([(b"k", b"v")], base_offset=3, producer_id=PID, producer_epoch=0, base_sequence=0) + \
        build_batch([(b"k", b"v")] * 2, base_offset=4, producer_id=PID, producer_epoch=0, base_sequence=7)
    state = ProducerState("t-0")
    state.replay(iter_batches(data))
    assert feed(state, [batch(0, 7, 2), batch(0, 9)], next_offset=6) == [(DUP, 4), OK]
