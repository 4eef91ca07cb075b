"""KIP-890 verification as Kafka 4.3.1's AddPartitionsToTxnManager and ReplicaManager send it
(kafkawire.broker.txn_verify_routing, txn_verification, txn_verify_setting), in process with a
stand-in coordinator: the verifications bound for one coordinator go in one AddPartitionsToTxn
request, one in flight per node, the next built from what queued meanwhile; an older queued
verification of the same transactional id gives way to a newer one; Produce v12+ asks again
while the coordinator answers CONCURRENT_TRANSACTIONS, for a bounded time; and
``transaction.partition.verification.enable`` false sends no check-only request at all.
"""
from __future__ import annotations

import asyncio
import itertools
import struct
from types import SimpleNamespace

from kafkawire.broker.producer_state import VERIFICATION_OFF, ProducerState
from kafkawire.broker.txn_verification import transaction_checks
from kafkawire.broker.txn_verify_routing import VerificationRouter
from kafkawire.messages.add_partitions_to_txn_response import (AddPartitionsToTxnPartitionResult,
                                                               AddPartitionsToTxnResponse, AddPartitionsToTxnResult,
                                                               AddPartitionsToTxnTopicResult)
from kafkawire.metadata.image import BROKER_RESOURCE
from kafkawire.protocol.error_codes import Errors

T0 = ("t", 0)


class StandInCoordinator:
    """This node's AddPartitionsToTxn handler as the router calls it: records each request and
    answers it once ``release`` is set, with ``codes[transactional id]`` (NONE by default) for
    every partition of that transaction."""

    def __init__(self, *, held: bool = False, codes: dict | None = None):
        self.requests: list = []
        self.release = asyncio.Event()
        if not held:
            self.release.set()
        self.codes = codes or {}

    async def __call__(self, ctx, request):
        self.requests.append(request)
        await self.release.wait()
        return AddPartitionsToTxnResponse(results_by_transaction=[AddPartitionsToTxnResult(
            transactional_id=t.transactional_id, topic_results=[AddPartitionsToTxnTopicResult(
                name=topic.name, results_by_partition=[AddPartitionsToTxnPartitionResult(
                    partition_index=i, partition_error_code=self.codes.get(t.transactional_id, Errors.NONE))
                    for i in topic.partitions]) for topic in t.topics]) for t in request.transactions])

    def sent(self) -> list[list[tuple[str, int]]]:
        """Per request: (transactional id, epoch) of each transaction it carried."""
        return [[(t.transactional_id, t.producer_epoch) for t in r.transactions] for r in self.requests]


def broker(configs: dict | None = None, **config):
    """A node without peers (this node coordinates every transactional id); ``configs``: the
    image's dynamic broker configs by broker resource name ("" for the cluster default)."""
    image = SimpleNamespace(configs={(BROKER_RESOURCE, name): c for name, c in (configs or {}).items()})
    return SimpleNamespace(node_id=1, replica_roles=None, image=lambda: image, config=SimpleNamespace(**config))


def router(coordinator, **kwargs) -> VerificationRouter:
    return VerificationRouter(broker(**kwargs), local=coordinator, coordinator_of=lambda txn_id: 1)


async def settle():
    for _ in range(20):
        await asyncio.sleep(0)


def test_verifications_queued_together_go_in_one_request():
    async def go():
        coordinator = StandInCoordinator()
        r = router(coordinator)
        answers = await asyncio.gather(*(r.verify(f"tx-{i}", 100 + i, 0, [T0, ("t", i)], produce_version=11)
                                         for i in range(1, 6)))
        assert all(a == {T0: Errors.NONE, ("t", i): Errors.NONE} for i, a in enumerate(answers, 1))
        assert coordinator.sent() == [[(f"tx-{i}", 0) for i in range(1, 6)]]
        assert all(t.verify_only for t in coordinator.requests[0].transactions)
        assert r._nodes == {}                     # nothing left behind once answered
    asyncio.run(go())


def test_one_request_in_flight_per_node_and_the_next_carries_what_queued_meanwhile():
    async def go():
        coordinator = StandInCoordinator(held=True, codes={"tx-c": Errors.TRANSACTION_ABORTABLE})
        r = router(coordinator)
        first = asyncio.ensure_future(r.verify("tx-a", 1, 0, [T0], produce_version=12))
        await settle()
        later = [asyncio.ensure_future(r.verify(txn_id, 2, 0, [T0], produce_version=v))
                 for txn_id, v in (("tx-b", 12), ("tx-c", 9), ("tx-d", 11))]
        await settle()
        assert coordinator.sent() == [[("tx-a", 0)]] and not first.done()     # the others wait
        coordinator.release.set()
        assert await first == {T0: Errors.NONE}
        # each transaction's answer is mapped by its own client's version (v9: INVALID_TXN_STATE)
        assert [await f for f in later] == [{T0: Errors.NONE}, {T0: Errors.INVALID_TXN_STATE}, {T0: Errors.NONE}]
        assert coordinator.sent() == [[("tx-a", 0)], [("tx-b", 0), ("tx-c", 0), ("tx-d", 0)]]
        assert [t.verify_only for t in coordinator.requests[1].transactions] == [False, True, True]
    asyncio.run(go())


def test_an_older_queued_verification_of_the_same_transactional_id_gives_way():
    """addTxnData's three cases: a newer epoch fences the queued one (INVALID_PRODUCER_EPOCH), the
    same epoch replaces it (NETWORK_EXCEPTION: the client is likely retrying), an older epoch is
    itself INVALID_PRODUCER_EPOCH at once. One in flight is not touched."""
    async def go():
        coordinator = StandInCoordinator(held=True)
        r = router(coordinator)
        in_flight = asyncio.ensure_future(r.verify("tx", 1, 3, [T0], produce_version=12))
        await settle()
        same = asyncio.ensure_future(r.verify("tx", 1, 3, [T0], produce_version=12))
        await settle()
        retried = asyncio.ensure_future(r.verify("tx", 1, 3, [T0, ("t", 1)], produce_version=12))
        await settle()
        assert same.result() == {T0: Errors.NETWORK_EXCEPTION}
        newer = asyncio.ensure_future(r.verify("tx", 1, 4, [T0], produce_version=12))
        await settle()
        assert retried.result() == {T0: Errors.INVALID_PRODUCER_EPOCH, ("t", 1): Errors.INVALID_PRODUCER_EPOCH}
        assert await r.verify("tx", 1, 2, [T0], produce_version=12) == {T0: Errors.INVALID_PRODUCER_EPOCH}
        assert not in_flight.done() and not newer.done()
        coordinator.release.set()
        assert await in_flight == {T0: Errors.NONE} and await newer == {T0: Errors.NONE}
        assert coordinator.sent() == [[("tx", 3)], [("tx", 4)]]
    asyncio.run(go())


def test_a_verification_cancelled_while_queued_is_not_sent():
    async def go():
        coordinator = StandInCoordinator(held=True)
        r = router(coordinator)
        first = asyncio.ensure_future(r.verify("tx-a", 1, 0, [T0], produce_version=12))
        await settle()
        gone = asyncio.ensure_future(r.verify("tx-b", 2, 0, [T0], produce_version=12))
        kept = asyncio.ensure_future(r.verify("tx-c", 3, 0, [T0], produce_version=12))
        await settle()
        gone.cancel()
        await settle()
        coordinator.release.set()
        await asyncio.gather(first, kept)
        assert coordinator.sent() == [[("tx-a", 0)], [("tx-c", 0)]]
    asyncio.run(go())


def test_with_verification_off_no_check_only_request_is_sent():
    """transaction.partition.verification.enable: false (here as the cluster default, then in
    server.properties) sends nothing for Produce v11 and older or TxnOffsetCommit v4 and older;
    Produce v12+ still adds its partitions (ReplicaManager's rule); this broker's own dynamic
    value wins over the cluster default."""
    async def go():
        off = StandInCoordinator()
        r = router(off, configs={"": {"transaction.partition.verification.enable": "false"}})
        assert await r.verify("tx", 1, 0, [T0], produce_version=11) == {T0: Errors.NONE}
        assert await r.verify("tx", 1, 0, [T0], operation="genericErrorSupported") == {T0: Errors.NONE}
        assert off.requests == []
        assert await r.verify("tx", 1, 0, [T0], produce_version=12) == {T0: Errors.NONE}
        assert off.sent() == [[("tx", 0)]] and off.requests[0].transactions[0].verify_only is False
        static_off = StandInCoordinator()
        await router(static_off, transaction_partition_verification_enable=False).verify(
            "tx", 1, 0, [T0], produce_version=9)
        assert static_off.requests == []
        on_here = StandInCoordinator()
        await router(on_here, configs={"": {"transaction.partition.verification.enable": "false"},
                                       "1": {"transaction.partition.verification.enable": "true"}},
                     transaction_partition_verification_enable=False).verify("tx", 1, 0, [T0], produce_version=9)
        assert len(on_here.requests) == 1
    asyncio.run(go())


def test_the_setting_is_read_again_when_the_image_changes():
    images = [SimpleNamespace(configs={}, provenance=SimpleNamespace(offset=1))]
    b = SimpleNamespace(node_id=1, replica_roles=None, image=lambda: images[-1], config=SimpleNamespace())
    r = VerificationRouter(b, local=None, coordinator_of=lambda txn_id: 1)
    assert r.enabled() is True
    images.append(SimpleNamespace(configs={(BROKER_RESOURCE, "1"): {
        "transaction.partition.verification.enable": "false"}}, provenance=SimpleNamespace(offset=2)))
    assert r.enabled() is False
    images.append(SimpleNamespace(configs={(BROKER_RESOURCE, "1"): {
        "transaction.partition.verification.enable": "maybe"}}, provenance=SimpleNamespace(offset=3)))
    assert r.enabled() is True                    # not a boolean: the value below it (the default)


# -- the produce path (kafkawire.broker.txn_verification) --

def transactional_batch(producer_id: int, epoch: int, sequence: int = 0) -> bytes:
    """The first 61 bytes of a v2 transactional batch: what the produce path reads of it."""
    header = bytearray(61)
    header[16] = 2                                         # magic
    header[21:23] = (0x10).to_bytes(2, "big")              # attributes: transactional
    struct.pack_into(">qhi", header, 43, producer_id, epoch, sequence)
    return bytes(header)


class ProduceBroker:
    """What transaction_checks reads of a broker: one led partition and a stand-in verifier that
    answers ``answers`` in turn (the last one again when they run out)."""

    def __init__(self, answers, enabled=True, **config):
        self.partitions = {T0: SimpleNamespace(producers=ProducerState("t-0"))}
        self.answers, self.calls = list(answers), []
        self.config = SimpleNamespace(**config)
        self.txn_verification_enabled = lambda: enabled

    async def txn_verifier(self, transactional_id, producer_id, epoch, partitions, *, produce_version):
        self.calls.append((transactional_id, producer_id, epoch, partitions, produce_version))
        code = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return dict.fromkeys(partitions, code)


def checks(b: ProduceBroker, version: int):
    request = SimpleNamespace(transactional_id="tx", topic_data=[SimpleNamespace(
        name="t", partition_data=[SimpleNamespace(index=0, records=transactional_batch(7, 0))])])
    return asyncio.run(transaction_checks(b, request, version, lambda t: t.name, now_ms=0))


def test_produce_v12_asks_again_while_the_coordinator_answers_concurrent_transactions():
    b = ProduceBroker([Errors.CONCURRENT_TRANSACTIONS, Errors.CONCURRENT_TRANSACTIONS, Errors.NONE],
                      add_partitions_to_txn_retry_backoff_ms=1, add_partitions_to_txn_retry_backoff_max_ms=10_000)
    result = checks(b, 12)
    assert len(b.calls) == 3 and result.refusal("t", 0) is None
    assert result.guard("t", 0) is b.partitions[T0].producers.verifications[7].guard    # one guard throughout


def test_the_retry_is_bounded_and_then_the_produce_answers_concurrent_transactions():
    b = ProduceBroker([Errors.CONCURRENT_TRANSACTIONS], add_partitions_to_txn_retry_backoff_ms=5,
                      add_partitions_to_txn_retry_backoff_max_ms=30)
    result = checks(b, 12)
    assert 2 <= len(b.calls) <= 30 // 5 + 2         # each wait at least 5 ms, asking stops after 30 ms
    assert result.refusal("t", 0)[0] == Errors.CONCURRENT_TRANSACTIONS
    capped = ProduceBroker([Errors.CONCURRENT_TRANSACTIONS], add_partitions_to_txn_retry_backoff_ms=5,
                           add_partitions_to_txn_retry_backoff_max_ms=10_000, request_timeout_ms=0)
    checks(capped, 12)
    assert len(capped.calls) == 1                    # request.timeout.ms caps the retry time


def test_before_produce_v12_concurrent_transactions_is_not_retried():
    b = ProduceBroker([Errors.CONCURRENT_TRANSACTIONS], add_partitions_to_txn_retry_backoff_ms=1)
    result = checks(b, 11)
    assert len(b.calls) == 1 and result.refusal("t", 0)[0] == Errors.NOT_ENOUGH_REPLICAS


def test_the_produce_path_with_verification_off():
    """Produce v11: no guard, no verifier call, the batch appends unguarded; Produce v12: the
    partition is still added at the coordinator, and the append needs no guard."""
    b = ProduceBroker([Errors.NONE], enabled=False)
    result = checks(b, 11)
    assert b.calls == [] and result.guard("t", 0) is VERIFICATION_OFF
    assert b.partitions[T0].producers.verifications == {}
    result = checks(b, 12)
    assert len(b.calls) == 1 and result.refusal("t", 0) is None and result.guard("t", 0) is VERIFICATION_OFF


def test_txn_offset_commit_answers_a_replaced_verification_as_kafkas_group_coordinator(tmp_path):
    """A TxnOffsetCommit whose verification was replaced by a newer one of its transactional id
    (NETWORK_EXCEPTION) is COORDINATOR_LOAD_IN_PROGRESS, which producers retry (Kafka's
    CoordinatorOperationExceptionHelper); NETWORK_EXCEPTION would be fatal to a Java producer."""
    from .test_txn_state_topic import StandInBroker, init, txn_offset_commit

    async def replaced(transactional_id, producer_id, epoch, partitions, **kwargs):
        return dict.fromkeys(partitions, Errors.NETWORK_EXCEPTION)

    async def go():
        b = StandInBroker(tmp_path, itertools.count(1000))
        try:
            await b.load()
            code, pid, epoch = await init(b)
            assert code == Errors.NONE
            b.txn_apis.txn_offset_commit_api.verifier = SimpleNamespace(verify=replaced)
            assert await txn_offset_commit(b, pid, epoch, 5) == Errors.COORDINATOR_LOAD_IN_PROGRESS
        finally:
            b.close()
    asyncio.run(go())
