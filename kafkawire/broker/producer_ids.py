"""InitProducerId (22) on the broker, and the producer id blocks it hands ids out of: Kafka's
KafkaApis.handleInitProducerIdRequest, TransactionCoordinator.handleInitProducerId for a
producer without a transactional id, and RPCProducerIdManager.

    blocks = ProducerIdBlocks(broker_id, broker_epoch=lambda: lifecycle.broker_epoch, send=send_to_controller)
    api = InitProducerIdApi(blocks, transaction_max_timeout_ms=900000)
    handlers[22] = ApiHandler(api.init_producer_id)

An idempotent producer (transactional id null) gets the next id of the current block with
epoch 0. Blocks of 1000 ids come from the active controller (AllocateProducerIds, which
writes a ProducerIdsRecord, so ids are never handed out twice, across restarts too); the next
block is asked for when 90% of the current one is used. With no id left and no next block
yet (the broker's first InitProducerId, typically) the answer is COORDINATOR_LOAD_IN_PROGRESS
while the block is fetched, as Kafka's broker answers (clients retry it); a failed
AllocateProducerIds is tried again after 50 ms at the next InitProducerId.

With a transactional id the broker's InitProducerId is the transaction coordinator's
(kafkawire.broker.txn_apis, which hands the other requests to this class and takes its ids from
these blocks). This class alone answers one with Kafka's checks (an empty id is INVALID_REQUEST,
a transaction timeout outside (0, ``transaction.max.timeout.ms``] INVALID_TRANSACTION_TIMEOUT),
then NOT_COORDINATOR, what Kafka answers on a broker that does not own the id's
``__transaction_state`` partition.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from kafkawire.messages.allocate_producer_ids_request import AllocateProducerIdsRequest
from kafkawire.messages.init_producer_id_response import InitProducerIdResponse
from kafkawire.net import background
from kafkawire.net.client import TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.contract import NoLeader, NotLeader

__all__ = ["InitProducerIdApi", "ProducerIdBlocks", "ProducerIdsUnavailable"]

log = logging.getLogger(__name__)
RETRY_BACKOFF_MS = 50
PREFETCH_THRESHOLD = 0.90
REQUEST_TIMEOUT_MS = 5000
_LONG_MAX = (1 << 63) - 1


class ProducerIdsUnavailable(Exception):
    """No producer id to hand out yet (Kafka's COORDINATOR_LOAD_IN_PROGRESS)."""


class ProducerIdBlocks:
    """The broker's current producer id block and the next one, fetched from the controller
    through ``send(request, timeout_ms)``; ``clock`` is in seconds (tests pass a fake one)."""

    def __init__(self, broker_id: int, *, broker_epoch: Callable[[], int], send, clock=time.monotonic):
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.send = send
        self.clock = clock
        self.first, self.size, self.next_id = -1, 0, -1        # ProducerIdsBlock.EMPTY
        self.next_block: tuple[int, int] | None = None
        self.in_flight = False
        self.backoff_until: float | None = None
        self.tasks: set[asyncio.Task] = set()

    @property
    def last(self) -> int:
        return self.first + self.size - 1

    def generate(self) -> int:
        """The next producer id (RPCProducerIdManager.generateProducerId), or ProducerIdsUnavailable."""
        for _ in range(4):
            if self.next_id <= self.last:
                claimed = self.next_id
                self.next_id += 1
                if claimed == self.first + int(self.size * PREFETCH_THRESHOLD):
                    self._maybe_request_next_block()
                return claimed
            if self.next_block is None:
                self._maybe_request_next_block()
                raise ProducerIdsUnavailable("Producer ID block is full. Waiting for next block")
            (self.first, self.size), self.next_block = self.next_block, None
            self.next_id = self.first
            self.in_flight = False
        raise ProducerIdsUnavailable("Producer ID block is full. Waiting for next block")

    def _maybe_request_next_block(self) -> None:
        if self.backoff_until is not None and self.clock() < self.backoff_until:
            return
        if self.next_block is None and not self.in_flight:
            self.in_flight = True
            background.start(self._request(), "Requesting a producer id block from the controller",
                             keep=self.tasks, logger=log)

    async def _request(self) -> None:
        try:
            await self._request_once()
        except asyncio.CancelledError:
            raise
        except Exception:
            self._failed()          # asked again after the backoff, not never again (in_flight stays set)
            raise                   # logged by background.start

    async def _request_once(self) -> None:
        request = AllocateProducerIdsRequest(broker_id=self.broker_id, broker_epoch=self.broker_epoch())
        try:
            async with asyncio.timeout(REQUEST_TIMEOUT_MS / 1000 + 1):
                response = await self.send(request, REQUEST_TIMEOUT_MS)
        except TimeoutError:
            log.warning("Timed out when requesting AllocateProducerIds from the controller.")
            self.backoff_until, self.in_flight = None, False
            return
        except (NoLeader, NotLeader, TransportError, OSError) as exc:
            log.warning("AllocateProducerIds could not reach the controller: %s", exc)
            self._failed()
            return
        self.on_response(response)

    def on_response(self, response) -> None:
        """handleAllocateProducerIdsResponse: keep a sane block as the next one, else back off."""
        if response.error_code != Errors.NONE:
            log.warning("AllocateProducerIds: the controller answered %s", Errors.for_code(response.error_code).name)
            self._failed()
            return
        start, length = response.producer_id_start, response.producer_id_len
        if start <= self.last or start < 0 or length < 0 or start > _LONG_MAX - length:
            log.error("Producer ID block [%d, +%d) from the controller is not usable after the current block "
                      "(last id %d)", start, length, self.last)
            self._failed()
            return
        self.next_block = (start, length)
        self.backoff_until = None

    def _failed(self) -> None:
        self.backoff_until = self.clock() + RETRY_BACKOFF_MS / 1000
        self.in_flight = False

    def close(self) -> None:
        for task in self.tasks:
            task.cancel()


class InitProducerIdApi:
    """InitProducerId for the broker's listeners."""

    def __init__(self, blocks: ProducerIdBlocks, *, transaction_max_timeout_ms: int):
        self.blocks = blocks
        self.transaction_max_timeout_ms = transaction_max_timeout_ms

    async def init_producer_id(self, ctx, request):
        code, producer_id = self.answer(request)
        if code != Errors.NONE:
            return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)
        return InitProducerIdResponse(error_code=Errors.NONE, producer_id=producer_id, producer_epoch=0)

    def answer(self, request) -> tuple[int, int]:
        """(error code, producer id) as Kafka's KafkaApis and TransactionCoordinator decide it."""
        if (request.producer_id == -1) != (request.producer_epoch == -1):
            return Errors.INVALID_REQUEST, -1
        transactional_id = request.transactional_id
        if transactional_id is None:
            try:
                return Errors.NONE, self.blocks.generate()
            except ProducerIdsUnavailable:
                return Errors.COORDINATOR_LOAD_IN_PROGRESS, -1
        if transactional_id == "":
            return Errors.INVALID_REQUEST, -1
        if not 0 < request.transaction_timeout_ms <= self.transaction_max_timeout_ms:
            return Errors.INVALID_TRANSACTION_TIMEOUT, -1
        return Errors.NOT_COORDINATOR, -1
