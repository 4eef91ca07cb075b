"""The transaction coordinator's state machine without I/O (kafkawire.broker.txn_coordinator), in
the cases of Kafka's TransactionCoordinatorTest and TransactionMetadataTest, and the records of
__transaction_state in Kafka's format (kafkawire.broker.txn_records)."""
import asyncio
from types import SimpleNamespace

import pytest

from kafkawire.broker.txn_coordinator import TransactionCoordinator, TxnSettings
from kafkawire.broker.txn_records import decode_txn_record, partition_for, txn_key, txn_value
from kafkawire.broker.txn_state import (COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY, ONGOING, PREPARE_ABORT,
                                        PREPARE_COMMIT, SHORT_MAX, TransactionMetadata, TxnTransit)
from kafkawire.protocol.error_codes import Errors

TX = "tx"
# What the verification reads of the metadata: topic t's partitions, and node 1 leading the
# one __transaction_state partition (so TX's coordinator is this node)
IMAGE = SimpleNamespace(topics_by_name={
    "t": SimpleNamespace(partitions={0: SimpleNamespace(leader=1), 1: SimpleNamespace(leader=2)}),
    "__transaction_state": SimpleNamespace(partitions={0: SimpleNamespace(leader=1)})})


class Markers:
    """Records what would be sent; ``finish()`` writes CompleteX as the marker sender does."""

    def __init__(self):
        self.sent = []
        self.coordinator = None

    def send(self, metadata, epoch, committed, complete):
        self.sent.append((metadata.transactional_id, metadata.producer_id, metadata.producer_epoch, committed,
                          sorted(metadata.partitions)))
        self.pending = (metadata, epoch, complete)

    def finish(self):
        metadata, epoch, complete = self.pending
        metadata.partitions.clear()
        return self.coordinator.complete(metadata, epoch, complete)


def coordinator(tv=0, **settings):
    clock = [1000]
    ids = iter(range(100, 200))
    written = []
    markers = Markers()
    c = TransactionCoordinator(
        TxnSettings(**settings), owner=lambda txn_id: (Errors.NONE, 0),
        persist=lambda txn_id, records: written.extend(records) or Errors.NONE,
        generate_producer_id=lambda: next(ids), markers=markers, now_ms=lambda: clock[0], tv_level=lambda: tv)
    markers.coordinator = c
    return c, clock, written, markers


def test_init_producer_id_creates_the_id_with_epoch_0_then_bumps_it():
    """A new transactional id gets a new producer id with epoch 0; the next InitProducerId bumps the epoch."""
    c, _, written, _ = coordinator()
    assert c.init_producer_id(TX, 60000, None) == (Errors.NONE, 100, 0)
    assert c.init_producer_id(TX, 60000, None) == (Errors.NONE, 100, 1)
    assert c.txns[TX].state == EMPTY and len(written) == 2


@pytest.mark.parametrize("txn_id, timeout, code", [
    ("", 1000, Errors.INVALID_REQUEST), (TX, 0, Errors.INVALID_TRANSACTION_TIMEOUT),
    (TX, 900_001, Errors.INVALID_TRANSACTION_TIMEOUT)])
def test_init_producer_id_refusals(txn_id, timeout, code):
    """An empty id is INVALID_REQUEST; a timeout outside (0, transaction.max.timeout.ms] INVALID_TRANSACTION_TIMEOUT."""
    c, *_ = coordinator()
    assert c.init_producer_id(txn_id, timeout, None)[0] == code


def test_coordinator_errors_pass_through():
    """Before the partition is loaded every request is COORDINATOR_LOAD_IN_PROGRESS."""
    c, *_ = coordinator()
    c.owner = lambda txn_id: (Errors.COORDINATOR_LOAD_IN_PROGRESS, -1)
    assert c.init_producer_id(TX, 1000, None)[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert c.add_partitions(TX, 1, 0, {("t", 0)}, 0) == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert c.end_transaction(TX, 1, 0, True)[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS


def test_commit_writes_prepare_then_markers_then_complete():
    """AddPartitions -> Ongoing; EndTxn(commit) -> PrepareCommit written, markers for every
    partition with the producer's id and epoch, CompleteCommit after them; a retried commit is NONE."""
    c, _, written, markers = coordinator()
    c.init_producer_id(TX, 60000, None)
    assert c.add_partitions(TX, 100, 0, {("t", 0), ("t", 1)}, 0) == Errors.NONE
    assert c.txns[TX].state == ONGOING
    assert c.add_partitions(TX, 100, 0, {("t", 1)}, 0) == Errors.NONE        # already in: nothing written
    assert len(written) == 2
    assert c.end_transaction(TX, 100, 0, True) == (Errors.NONE, -1, -1)
    assert c.txns[TX].state == PREPARE_COMMIT and markers.sent == [(TX, 100, 0, True, [("t", 0), ("t", 1)])]
    assert c.add_partitions(TX, 100, 0, {("t", 2)}, 0) == Errors.CONCURRENT_TRANSACTIONS
    assert c.init_producer_id(TX, 60000, None)[0] == Errors.CONCURRENT_TRANSACTIONS
    assert markers.finish() == Errors.NONE
    assert c.txns[TX].state == COMPLETE_COMMIT and c.txns[TX].partitions == set()
    assert c.end_transaction(TX, 100, 0, True)[0] == Errors.NONE
    assert c.end_transaction(TX, 100, 0, False)[0] == Errors.INVALID_TXN_STATE


@pytest.mark.parametrize("request_, code", [
    ((TX, 999, 0, True), Errors.INVALID_PRODUCER_ID_MAPPING),
    ((TX, 100, 1, True), Errors.PRODUCER_FENCED),
    (("nope", 100, 0, True), Errors.INVALID_PRODUCER_ID_MAPPING),
])
def test_end_txn_refusals_v1(request_, code):
    """EndTxn of another producer id, a wrong epoch, an unknown transactional id."""
    c, *_ = coordinator()
    c.init_producer_id(TX, 60000, None)
    c.add_partitions(TX, 100, 0, {("t", 0)}, 0)
    assert c.end_transaction(*request_)[0] == code


def test_end_txn_of_an_empty_transaction_is_invalid_txn_state_v1():
    c, *_ = coordinator()
    c.init_producer_id(TX, 60000, None)
    assert c.end_transaction(TX, 100, 0, True)[0] == Errors.INVALID_TXN_STATE


def test_fencing_an_ongoing_transaction_aborts_it_first():
    """InitProducerId while a transaction is Ongoing: it is aborted with a bumped epoch
    (PrepareAbort), the client gets CONCURRENT_TRANSACTIONS, and once it completes its retry
    gets the epoch after that one."""
    c, _, _, markers = coordinator()
    c.init_producer_id(TX, 60000, None)
    c.add_partitions(TX, 100, 0, {("t", 0)}, 0)
    assert c.init_producer_id(TX, 60000, None)[0] == Errors.CONCURRENT_TRANSACTIONS
    assert c.txns[TX].state == PREPARE_ABORT and markers.sent == [(TX, 100, 1, False, [("t", 0)])]
    assert c.init_producer_id(TX, 60000, None)[0] == Errors.CONCURRENT_TRANSACTIONS
    markers.finish()
    assert c.init_producer_id(TX, 60000, None) == (Errors.NONE, 100, 2)
    assert c.add_partitions(TX, 100, 1, {("t", 0)}, 0) == Errors.PRODUCER_FENCED


def test_epoch_exhaustion_rotates_the_producer_id():
    """At epoch Short.MAX_VALUE - 1 the next InitProducerId hands out a new producer id with epoch 0."""
    c, *_ = coordinator()
    c.init_producer_id(TX, 60000, None)
    c.txns[TX].producer_epoch = SHORT_MAX - 1
    assert c.init_producer_id(TX, 60000, None) == (Errors.NONE, 101, 0)
    assert c.txns[TX].prev_producer_id == 100


@pytest.mark.parametrize("expected, answer", [
    ((100, 0), (Errors.NONE, 100, 1)),            # KIP-360: the producer recovers with its id and epoch
    ((100, 5), (Errors.PRODUCER_FENCED, -1, -1)),  # an epoch that is neither the current nor the last
    ((42, 0), (Errors.PRODUCER_FENCED, -1, -1)),   # another producer id
])
def test_init_producer_id_with_the_producers_id_and_epoch(expected, answer):
    c, *_ = coordinator()
    c.init_producer_id(TX, 60000, None)
    assert c.init_producer_id(TX, 60000, expected) == answer


def test_kip360_retry_of_a_successful_bump_keeps_the_epoch():
    """The same recovery request twice (its answer lost): the second returns the same epoch."""
    c, *_ = coordinator()
    c.init_producer_id(TX, 60000, None)
    assert c.init_producer_id(TX, 60000, (100, 0)) == (Errors.NONE, 100, 1)
    assert c.init_producer_id(TX, 60000, (100, 0)) == (Errors.NONE, 100, 1)


def test_tv2_every_end_txn_bumps_the_epoch_and_a_retry_is_answered():
    """transaction.version 2 (EndTxn v5+): PrepareCommit carries epoch + 1, the answer names it,
    a retry with the old epoch after completion is NONE with the new epoch, and an abort of an
    Empty transaction is allowed (and bumps again)."""
    c, _, _, markers = coordinator(tv=2)
    c.init_producer_id(TX, 60000, None)
    c.add_partitions(TX, 100, 0, {("t", 0)}, 2)
    assert c.end_transaction(TX, 100, 0, True, tv=2) == (Errors.NONE, 100, 1)
    assert markers.sent[-1] == (TX, 100, 1, True, [("t", 0)])
    markers.finish()
    assert c.end_transaction(TX, 100, 0, True, tv=2) == (Errors.NONE, 100, 1)
    assert c.end_transaction(TX, 100, 1, True, tv=2)[0] == Errors.INVALID_TXN_STATE
    assert c.end_transaction(TX, 100, 1, False, tv=2) == (Errors.NONE, 100, 2)


def test_tv2_epoch_overflow_moves_to_the_next_producer_id():
    """A TV2 commit at epoch Short.MAX_VALUE - 1 completes with a new producer id at epoch 0."""
    c, _, _, markers = coordinator(tv=2)
    c.init_producer_id(TX, 60000, None)
    c.txns[TX].producer_epoch = SHORT_MAX - 1
    c.add_partitions(TX, 100, SHORT_MAX - 1, {("t", 0)}, 2)
    assert c.end_transaction(TX, 100, SHORT_MAX - 1, True, tv=2) == (Errors.NONE, 101, 0)
    markers.finish()
    assert (c.txns[TX].producer_id, c.txns[TX].producer_epoch, c.txns[TX].state) == (101, 0, COMPLETE_COMMIT)


def test_verify_only_answers_per_partition():
    """KIP-890's verification: a partition in the transaction is NONE, another TRANSACTION_ABORTABLE;
    a wrong epoch PRODUCER_FENCED for all."""
    c, *_ = coordinator()
    c.init_producer_id(TX, 60000, None)
    c.add_partitions(TX, 100, 0, {("t", 0)}, 0)
    assert c.verify_partitions(TX, 100, 0, [("t", 0), ("t", 1)]) == {
        ("t", 0): Errors.NONE, ("t", 1): Errors.TRANSACTION_ABORTABLE}
    assert c.verify_partitions(TX, 100, 3, [("t", 0)]) == {("t", 0): Errors.PRODUCER_FENCED}


def test_timed_out_transaction_is_aborted_with_a_bumped_epoch():
    """An Ongoing transaction older than its timeout is aborted by the periodic task; the old
    producer is fenced."""
    c, clock, _, markers = coordinator()
    c.init_producer_id(TX, 1000, None)
    c.add_partitions(TX, 100, 0, {("t", 0)}, 0)
    clock[0] += 1000
    assert c.abort_timed_out() == 0
    clock[0] += 1
    assert c.abort_timed_out() == 1
    assert c.txns[TX].state == PREPARE_ABORT and markers.sent == [(TX, 100, 1, False, [("t", 0)])]
    markers.finish()
    assert c.txns[TX].state == COMPLETE_ABORT
    assert c.end_transaction(TX, 100, 0, True)[0] == Errors.PRODUCER_FENCED


def test_idle_transactional_ids_expire_with_a_tombstone():
    c, clock, written, _ = coordinator(transactional_id_expiration_ms=5000)
    c.init_producer_id(TX, 60000, None)
    clock[0] += 4999
    assert c.expire_transactional_ids() == 0
    clock[0] += 1
    assert c.expire_transactional_ids() == 1
    assert TX not in c.txns and written[-1] == (txn_key(TX), None)


def test_list_and_describe():
    """ListTransactions filters by state (unknown names reported), producer id and duration;
    DescribeTransactions names an unknown id TRANSACTIONAL_ID_NOT_FOUND."""
    c, clock, _, _ = coordinator()
    c.init_producer_id(TX, 60000, None)
    c.init_producer_id("other", 60000, None)
    c.add_partitions(TX, 100, 0, {("t", 0)}, 0)
    clock[0] += 500
    listed = c.list_transactions(["Ongoing", "Bogus"], [], -1, None, loading=False)
    assert [(s.transactional_id, s.transaction_state) for s in listed.transaction_states] == [(TX, "Ongoing")]
    assert listed.unknown_state_filters == ["Bogus"]
    assert [s.transactional_id for s in c.list_transactions([], [101], -1, None, False).transaction_states] == ["other"]
    # Kafka's duration filter: running for longer than it (an Empty one's start, -1, is long ago)
    assert [s.transactional_id for s in c.list_transactions([], [], 499, None, False).transaction_states] == [
        TX, "other"]
    assert [s.transactional_id for s in c.list_transactions([], [], 500, None, False).transaction_states] == ["other"]
    assert c.list_transactions([], [], -1, None, loading=True).error_code == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert c.describe("missing")[0] == Errors.TRANSACTIONAL_ID_NOT_FOUND
    assert c.describe(TX)[1].partitions == {("t", 0)}


def test_transaction_log_record_bytes_in_kafkas_format():
    """Key: int16 0 + TransactionLogKey v0; value v1 (transaction.version >= 1): producer id,
    epoch, timeout, state id, partitions by topic, timestamps, and the tagged previous/next
    producer ids and client transaction version; v0 without tagged fields."""
    assert txn_key("tx") == b"\x00\x00\x00\x02tx"
    transit = TxnTransit(producer_id=5, prev_producer_id=4, next_producer_id=-1, producer_epoch=2,
                         last_producer_epoch=-1, txn_timeout_ms=60000, state=ONGOING,
                         partitions=frozenset({("t", 0)}), txn_start_ms=10, txn_last_update_ms=11, client_tv=2)
    v0 = (b"\x00\x00" + (5).to_bytes(8, "big") + b"\x00\x02" + (60000).to_bytes(4, "big") + b"\x01"
          + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x01\x00\x00\x00\x00"
          + (11).to_bytes(8, "big") + (10).to_bytes(8, "big"))
    assert txn_value(transit, 0) == v0
    v1 = txn_value(transit, 2)
    assert v1[:2] == b"\x00\x01"
    txn_id, loaded = decode_txn_record(txn_key("tx"), v1)
    assert txn_id == "tx" and (loaded.producer_id, loaded.prev_producer_id, loaded.producer_epoch, loaded.state,
                               loaded.partitions, loaded.client_tv) == (5, 4, 2, ONGOING, {("t", 0)}, 2)
    assert decode_txn_record(txn_key("tx"), None) == ("tx", None)


def test_partition_is_javas_hash():
    """abs(String.hashCode) % partitions, Kafka's partitionFor ("hello".hashCode() is 99162322;
    "polygenelubricants".hashCode() is Integer.MIN_VALUE, which Utils.abs makes 0)."""
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("polygenelubricants", 50) == 0


def test_metadata_refuses_an_illegal_transition():
    m = TransactionMetadata(TX, 1, producer_epoch=0, state=EMPTY)
    with pytest.raises(RuntimeError):
        m.prepare_abort_or_commit(PREPARE_COMMIT, 0, -1, 0, False)


def verified(c, produce_version, partitions=(("t", 0), ("t", 1)), epoch=0):
    """The verifier's answer when this node coordinates TX: through the AddPartitionsToTxn of
    the broker versions, answered by ``c`` in process."""
    from kafkawire.broker.txn_verify_routing import VerificationRouter
    broker = SimpleNamespace(image=lambda: IMAGE, node_id=1, replica_roles=None)
    router = VerificationRouter(broker, local=lambda ctx, request: answered(c, ctx, request),
                                coordinator_of=lambda transactional_id: 1)
    return asyncio.run(router.verify(TX, 100, epoch, list(partitions), produce_version=produce_version))


async def answered(c, ctx, request):
    from kafkawire.broker.txn_verify import add_or_verify
    from kafkawire.messages.add_partitions_to_txn_response import AddPartitionsToTxnResponse
    return AddPartitionsToTxnResponse(results_by_transaction=[
        add_or_verify(c, IMAGE, t, ctx.api_version) for t in request.transactions])


@pytest.mark.parametrize("version, missing", [(9, Errors.INVALID_TXN_STATE), (11, Errors.TRANSACTION_ABORTABLE)])
def test_produce_verification_before_transaction_version_2(version, missing):
    """Produce v11 and older only check (KIP-890 part 1): a partition not added is
    TRANSACTION_ABORTABLE from v11, INVALID_TXN_STATE before; a fenced epoch INVALID_PRODUCER_EPOCH."""
    c, *_ = coordinator()
    c.init_producer_id(TX, 60000, None)
    c.add_partitions(TX, 100, 0, {("t", 0)}, 0)
    assert verified(c, version) == {("t", 0): Errors.NONE, ("t", 1): missing}
    assert verified(c, version, epoch=7) == {("t", 0): Errors.INVALID_PRODUCER_EPOCH,
                                             ("t", 1): Errors.INVALID_PRODUCER_EPOCH}
    assert c.txns[TX].partitions == {("t", 0)}


def test_produce_v12_adds_the_partition_to_the_transaction():
    """Produce v12+ (transaction.version 2): the partition is added to the transaction by the
    produce itself; while the transaction completes the answer is CONCURRENT_TRANSACTIONS, and a
    loading coordinator's error passes through (the produce path translates both as
    ReplicaManager does)."""
    c, _, _, markers = coordinator(tv=2)
    c.init_producer_id(TX, 60000, None)
    assert verified(c, 12) == {("t", 0): Errors.NONE, ("t", 1): Errors.NONE}
    assert c.txns[TX].state == ONGOING and c.txns[TX].partitions == {("t", 0), ("t", 1)}
    c.end_transaction(TX, 100, 0, True, tv=2)
    assert verified(c, 12, [("t", 0)], epoch=1) == {("t", 0): Errors.CONCURRENT_TRANSACTIONS}
    c.owner = lambda txn_id: (Errors.COORDINATOR_LOAD_IN_PROGRESS, -1)
    assert verified(c, 12, [("t", 0)]) == {("t", 0): Errors.COORDINATOR_LOAD_IN_PROGRESS}


def test_a_verifier_call_without_version_only_checks():
    """Called as broker.txn_verifier(id, producer id, epoch, partitions): Produce v11's rules, no implicit add."""
    c, *_ = coordinator(tv=2)
    c.init_producer_id(TX, 60000, None)
    assert verified(c, None, [("t", 0)]) == {("t", 0): Errors.TRANSACTION_ABORTABLE}
    assert c.txns[TX].partitions == set()


def test_two_phase_commit_is_refused_unless_enabled_and_keeping_a_prepared_transaction_always():
    """KIP-939's fields (InitProducerId v6), in Kafka 4.3.1's order: enable2Pc without
    transaction.two.phase.commit.enable is TRANSACTIONAL_ID_AUTHORIZATION_FAILED (before the
    timeout is looked at), keepPreparedTxn UNSUPPORTED_VERSION (not implemented in 4.3.1); neither
    is ever taken as a plain init."""
    off, *_ = coordinator()
    assert off.init_producer_id(TX, 0, None, two_phase=True)[0] == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert off.init_producer_id(TX, 1000, None, two_phase=True, keep_prepared=True)[0] == \
        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert off.init_producer_id(TX, 1000, None, keep_prepared=True)[0] == Errors.UNSUPPORTED_VERSION
    on, *_ = coordinator(two_phase_commit_enable=True)
    assert on.init_producer_id(TX, 1000, None, two_phase=True, keep_prepared=True)[0] == Errors.UNSUPPORTED_VERSION
    assert TX not in off.txns and TX not in on.txns


def test_a_two_phase_commit_transaction_never_times_out():
    """With transaction.two.phase.commit.enable, enable2Pc's transaction has Integer.MAX_VALUE as
    its timeout whatever was asked (even beyond transaction.max.timeout.ms), and the periodic abort
    of timed-out transactions leaves it alone; the producer commits it whenever it likes."""
    from kafkawire.broker.txn_coordinator import TWO_PHASE_TIMEOUT_MS
    c, clock, _, markers = coordinator(two_phase_commit_enable=True, transaction_max_timeout_ms=60_000)
    assert c.init_producer_id(TX, 10**9, None, two_phase=True) == (Errors.NONE, 100, 0)
    assert c.init_producer_id("plain", 1000, None) == (Errors.NONE, 101, 0)
    assert c.txns[TX].txn_timeout_ms == TWO_PHASE_TIMEOUT_MS == 2**31 - 1
    assert c.add_partitions(TX, 100, 0, {("t", 0)}, 0) == Errors.NONE
    assert c.add_partitions("plain", 101, 0, {("t", 0)}, 0) == Errors.NONE
    clock[0] += 30 * 24 * 3600 * 1000               # a month: past Integer.MAX_VALUE ms from the start, too
    assert c.abort_timed_out() == 1                 # the plain one only
    assert c.txns[TX].state == ONGOING and c.txns["plain"].state == PREPARE_ABORT
    markers.finish()
    assert c.end_transaction(TX, 100, 0, True)[0] == Errors.NONE
    assert c.txns[TX].state == PREPARE_COMMIT


def test_init_producer_id_v6_is_served_only_with_unstable_api_versions():
    """unstable.api.versions.enable: InitProducerId's latest version (6, unstable in Kafka 4.3.1's
    schema) is advertised and served only with it, as by Kafka's broker."""
    from kafkawire.net.server import KafkaServer

    async def handler(ctx, request):
        return None
    for unstable, high in ((False, 5), (True, 6)):
        server = KafkaServer({22: handler}, unstable_api_versions=unstable)
        assert [(low, top) for key, low, top in server.api_versions() if key == 22] == [(0, high)]
