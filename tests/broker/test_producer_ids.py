"""InitProducerId on the broker (kafkawire.broker.producer_ids), as Kafka 4.3.1's KafkaApis,
TransactionCoordinator and RPCProducerIdManager answer it: ids from blocks the controller
allocates (AllocateProducerIds), COORDINATOR_LOAD_IN_PROGRESS while the first block is on its
way, the next block asked for at 90%, and NOT_COORDINATOR for a transactional id (no
transaction coordinator yet). In process, with a fake controller and a fake clock."""
from __future__ import annotations

import asyncio

import pytest

from kafkawire.broker.producer_ids import InitProducerIdApi, ProducerIdBlocks, ProducerIdsUnavailable
from kafkawire.messages.allocate_producer_ids_response import AllocateProducerIdsResponse
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.protocol.error_codes import Errors


class FakeController:
    """Answers AllocateProducerIds with consecutive blocks of ``size`` (or ``error``)."""

    def __init__(self, size: int = 10):
        self.size, self.next, self.requests, self.error = size, 0, [], Errors.NONE

    async def send(self, request, timeout_ms):
        self.requests.append((request.broker_id, request.broker_epoch))
        if self.error:
            return AllocateProducerIdsResponse(error_code=self.error)
        start, self.next = self.next, self.next + self.size
        return AllocateProducerIdsResponse(producer_id_start=start, producer_id_len=self.size)


def run(coro):
    return asyncio.run(coro)


async def settle(blocks: ProducerIdBlocks):
    while blocks.tasks:
        await asyncio.gather(*blocks.tasks)


def init(api: InitProducerIdApi, **fields):
    return run(api.init_producer_id(None, InitProducerIdRequest(**{"transactional_id": None, **fields})))


def test_the_first_init_is_coordinator_load_in_progress_then_ids_come_from_the_block_with_epoch_0():
    async def go():
        controller = FakeController()
        blocks = ProducerIdBlocks(1, broker_epoch=lambda: 7, send=controller.send)
        api = InitProducerIdApi(blocks, transaction_max_timeout_ms=900_000)
        first = await api.init_producer_id(None, InitProducerIdRequest(transactional_id=None))
        await settle(blocks)
        answers = [await api.init_producer_id(None, InitProducerIdRequest(transactional_id=None)) for _ in range(3)]
        return controller, first, answers
    controller, first, answers = run(go())
    assert (first.error_code, first.producer_id, first.producer_epoch) == (Errors.COORDINATOR_LOAD_IN_PROGRESS, -1, -1)
    assert [(a.error_code, a.producer_id, a.producer_epoch) for a in answers] == [(0, 0, 0), (0, 1, 0), (0, 2, 0)]
    assert controller.requests == [(1, 7)]


def test_the_next_block_is_fetched_at_90_percent_and_used_without_a_gap_in_service():
    async def go():
        controller = FakeController(size=10)
        blocks = ProducerIdBlocks(1, broker_epoch=lambda: 1, send=controller.send)
        with pytest.raises(ProducerIdsUnavailable):
            blocks.generate()
        await settle(blocks)
        ids = []
        for _ in range(15):
            ids.append(blocks.generate())
            await settle(blocks)
        return controller, ids
    controller, ids = run(go())
    assert ids == list(range(15)) and len(controller.requests) == 2


def test_a_failed_allocation_backs_off_50_ms_before_asking_again():
    async def go():
        now = [100.0]
        controller = FakeController()
        controller.error = Errors.STALE_BROKER_EPOCH
        blocks = ProducerIdBlocks(1, broker_epoch=lambda: 1, send=controller.send, clock=lambda: now[0])
        for _ in range(3):
            with pytest.raises(ProducerIdsUnavailable):
                blocks.generate()
            await settle(blocks)
        asked_in_backoff = len(controller.requests)
        now[0] += 0.05
        controller.error = Errors.NONE
        with pytest.raises(ProducerIdsUnavailable):
            blocks.generate()
        await settle(blocks)
        return asked_in_backoff, blocks.generate()
    asked_in_backoff, producer_id = run(go())
    assert asked_in_backoff == 1 and producer_id == 0


def test_an_unexpected_failure_of_the_request_is_logged_and_asked_again_after_the_backoff(caplog):
    """Not lost in a task nobody awaits, and not left in flight for ever (no id handed out again)."""
    class Broken(FakeController):
        async def send(self, request, timeout_ms):
            if not self.requests:
                self.requests.append("broken")
                raise RuntimeError("a bug in the channel")
            return await super().send(request, timeout_ms)

    async def go():
        now = [100.0]
        controller = Broken()
        blocks = ProducerIdBlocks(1, broker_epoch=lambda: 1, send=controller.send, clock=lambda: now[0])
        with pytest.raises(ProducerIdsUnavailable):
            blocks.generate()
        while blocks.tasks:
            await asyncio.gather(*blocks.tasks, return_exceptions=True)
        now[0] += 0.05
        with pytest.raises(ProducerIdsUnavailable):
            blocks.generate()
        await settle(blocks)
        return blocks.generate()
    assert run(go()) == 0
    failures = [r for r in caplog.records if r.levelname == "ERROR"]
    assert [r.getMessage() for r in failures] == [
        "Requesting a producer id block from the controller failed: a bug in the channel"]


@pytest.mark.parametrize("fields, code", [
    ({"producer_id": 5, "producer_epoch": -1}, Errors.INVALID_REQUEST),
    ({"producer_id": -1, "producer_epoch": 3}, Errors.INVALID_REQUEST),
    ({"transactional_id": ""}, Errors.INVALID_REQUEST),
    ({"transactional_id": "tx", "transaction_timeout_ms": 0}, Errors.INVALID_TRANSACTION_TIMEOUT),
    ({"transactional_id": "tx", "transaction_timeout_ms": 900_001}, Errors.INVALID_TRANSACTION_TIMEOUT),
    ({"transactional_id": "tx", "transaction_timeout_ms": 60_000}, Errors.NOT_COORDINATOR),
])
def test_kafkas_refusals_and_not_coordinator_for_a_transactional_id(fields, code):
    api = InitProducerIdApi(ProducerIdBlocks(1, broker_epoch=lambda: 1, send=FakeController().send),
                            transaction_max_timeout_ms=900_000)
    response = init(api, **fields)
    assert (response.error_code, response.producer_id, response.producer_epoch) == (code, -1, -1)
