"""KIP-890's verification asked of the transaction's coordinator wherever it runs (Kafka's
AddPartitionsToTxnManager; kafkawire.broker.txn_verify_routing), without a node: the stand-in
broker of test_txn_state_topic, its coordinator in process or a peer played by a stand-in client.

The bug these guard: each broker asked its own in-process coordinator, which is NOT_COORDINATOR
on every broker but the leader of the transactional id's ``__transaction_state`` partition, and
a transactional produce to a partition led elsewhere was answered NOT_ENOUGH_REPLICAS until the
client's delivery timeout (the replication nemesis's transactions stopped committing once
failovers had moved a leader away from the coordinator).
"""
from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace

from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.broker.txn_verify_routing import FIRST_BROKER_VERSION
from kafkawire.messages.add_partitions_to_txn_response import (AddPartitionsToTxnPartitionResult,
                                                               AddPartitionsToTxnResponse, AddPartitionsToTxnResult,
                                                               AddPartitionsToTxnTopicResult)
from kafkawire.net.client import Disconnected
from kafkawire.protocol.error_codes import Errors

from .test_coordinator_replication import follower_fetches, replicated_broker
from .test_coordinator_replication import handler
from .test_txn_state_topic import TX, StandInBroker, ctx

PEER = ("broker-2", 9192)


class StandInPeer:
    """The coordinator's broker as the router's client sees it: its AddPartitionsToTxn versions
    and one answer (a response, or an exception to raise)."""

    def __init__(self, answer, versions=(0, 5)):
        self.answer, self.versions, self.sent = answer, versions, []

    async def connect(self, address, timeout_ms=None):
        return {24: self.versions}

    async def send(self, address, request, api_version=None, timeout_ms=None):
        self.sent.append((address, api_version, request))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer

    async def close(self):
        pass


def answer(codes: dict, error_code=Errors.NONE) -> AddPartitionsToTxnResponse:
    return AddPartitionsToTxnResponse(error_code=error_code, results_by_transaction=[AddPartitionsToTxnResult(
        transactional_id=TX, topic_results=[AddPartitionsToTxnTopicResult(name="t", results_by_partition=[
            AddPartitionsToTxnPartitionResult(partition_index=i, partition_error_code=c)
            for i, c in codes.items()])])])


def coordinated_elsewhere(tmp_path, peer, *, endpoint=PEER):
    """The stand-in broker (node 1) whose __transaction_state partition node 2 leads."""
    broker = StandInBroker(tmp_path, itertools.count(1000))
    broker.image().topics_by_name["__transaction_state"].partitions[0].leader = 2
    broker.replica_roles = SimpleNamespace(endpoint_of=lambda b: endpoint if b == 2 else None)
    broker.txn_apis.verifier.peers._client = peer
    return broker


def verify(broker, produce_version, partitions=(("t", 0),)):
    return asyncio.run(broker.txn_verifier(TX, 7, 0, list(partitions), produce_version=produce_version))


def test_the_coordinator_is_the_leader_of_the_transactional_ids_partition(tmp_path):
    broker = StandInBroker(tmp_path, itertools.count(1000))
    state = broker.image().topics_by_name["__transaction_state"]
    state.partitions = {i: SimpleNamespace(leader=10 + i) for i in range(50)}
    store = broker.txn_apis.store
    assert store.leader_of("hello", broker.image()) == 10 + 99162322 % 50      # Utils.abs(hashCode) % partitions
    state.partitions = {}
    assert store.leader_of("hello", broker.image()) == -1
    assert store.leader_of("hello", SimpleNamespace(topics_by_name={})) == -1
    broker.close()


def test_a_partition_led_here_is_verified_by_the_coordinator_on_another_broker(tmp_path):
    """Produce v11 only checks (verify_only); v12+ adds the partition (transaction.version 2);
    the request is AddPartitionsToTxn of the broker versions, to the coordinator's endpoint."""
    peer = StandInPeer(answer({0: Errors.NONE, 1: Errors.NONE}))
    broker = coordinated_elsewhere(tmp_path, peer)
    assert verify(broker, 11, [("t", 0), ("t", 1)]) == {("t", 0): Errors.NONE, ("t", 1): Errors.NONE}
    assert verify(broker, 12) == {("t", 0): Errors.NONE}
    (address, version, request), (_, _, added) = peer.sent
    assert address == PEER and version == 5
    txn, = request.transactions
    assert (txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.verify_only) == (TX, 7, 0, True)
    assert [(t.name, t.partitions) for t in txn.topics] == [("t", [0, 1])]
    assert added.transactions[0].verify_only is False
    assert broker.txn_apis.coordinator.txns == {}            # this node's coordinator was not asked
    broker.close()


def test_the_coordinators_answers_are_mapped_as_kafka_maps_them(tmp_path):
    """AddPartitionsToTxnManager: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE
    is INVALID_TXN_STATE for a client older than Produce v11; a top-level error is every
    partition's, CLUSTER_AUTHORIZATION_FAILED shown as INVALID_TXN_STATE."""
    broker = coordinated_elsewhere(tmp_path, StandInPeer(answer({0: Errors.PRODUCER_FENCED})))
    assert verify(broker, 12) == {("t", 0): Errors.INVALID_PRODUCER_EPOCH}
    broker.txn_apis.verifier.peers._client = StandInPeer(answer({0: Errors.TRANSACTION_ABORTABLE}))
    assert verify(broker, 9) == {("t", 0): Errors.INVALID_TXN_STATE}
    assert verify(broker, 11) == {("t", 0): Errors.TRANSACTION_ABORTABLE}
    broker.txn_apis.verifier.peers._client = StandInPeer(answer({}, Errors.CLUSTER_AUTHORIZATION_FAILED))
    assert verify(broker, 12, [("t", 0), ("t", 1)]) == {("t", 0): Errors.INVALID_TXN_STATE,
                                                       ("t", 1): Errors.INVALID_TXN_STATE}
    broker.txn_apis.verifier.peers._client = StandInPeer(answer({}, Errors.NOT_COORDINATOR))
    assert verify(broker, 12) == {("t", 0): Errors.NOT_COORDINATOR}
    broker.close()


def test_no_coordinator_a_lost_connection_and_a_peer_without_verification(tmp_path):
    """No leader or no endpoint for it: COORDINATOR_NOT_AVAILABLE; the request lost on the way:
    NETWORK_EXCEPTION (both retriable: the produce path answers NOT_ENOUGH_REPLICAS); a peer
    whose AddPartitionsToTxn stops below v4 cannot verify, and the produce goes on unverified."""
    broker = coordinated_elsewhere(tmp_path, StandInPeer(Disconnected(PEER, "reset")))
    assert verify(broker, 12) == {("t", 0): Errors.NETWORK_EXCEPTION}
    old = broker.txn_apis.verifier.peers._client = StandInPeer(answer({}), versions=(0, FIRST_BROKER_VERSION - 1))
    assert verify(broker, 12) == {("t", 0): Errors.NONE} and old.sent == []
    broker.replica_roles = SimpleNamespace(endpoint_of=lambda b: None)
    assert verify(broker, 12) == {("t", 0): Errors.COORDINATOR_NOT_AVAILABLE}
    broker.image().topics_by_name["__transaction_state"].partitions[0].leader = -1
    assert verify(broker, 12) == {("t", 0): Errors.COORDINATOR_NOT_AVAILABLE}
    broker.close()


def test_a_partition_added_by_a_produce_is_verified_once_the_isr_has_the_transactions_state(tmp_path):
    """This node coordinates: the verification goes through its own AddPartitionsToTxn handler,
    which answers once the ``__transaction_state`` write reached the in-sync replicas, as Kafka's
    coordinator does (before, the in-process check answered at the append, so a coordinator
    failover could lose the partition from the transaction after its data was written)."""
    async def go():
        broker = replicated_broker(tmp_path, request_timeout_ms=10_000)
        await broker.load()
        follower_fetches(broker, "__transaction_state")
        code, pid, epoch = await _init_replicated(broker)
        assert code == Errors.NONE
        state = broker.partitions[("__transaction_state", 0)]
        end_before = state.log.log_end_offset
        verified = asyncio.ensure_future(broker.txn_verifier(TX, pid, epoch, [("t", 0)], produce_version=12))
        for _ in range(50):
            await asyncio.sleep(0)
        assert state.log.log_end_offset > end_before and not verified.done()      # appended, not yet in the ISR
        follower_fetches(broker, "__transaction_state")
        assert await asyncio.wait_for(verified, 5) == {("t", 0): Errors.NONE}
        assert broker.txn_apis.coordinator.txns[TX].partitions == {("t", 0)}
        broker.close()
    asyncio.run(go())


async def _init_replicated(broker):
    """InitProducerId through the replicated handler, the follower fetching until it is answered."""
    pending = asyncio.ensure_future(handler(broker.txn_apis, 22)(ctx(4), InitProducerIdRequest(
        transactional_id=TX, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)))
    for _ in range(2000):
        if pending.done():
            break
        follower_fetches(broker, "__transaction_state")
        await asyncio.sleep(0.001)
    r = pending.result()
    return r.error_code, r.producer_id, r.producer_epoch

