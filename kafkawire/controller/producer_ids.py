"""AllocateProducerIds (API 67) on the active controller: Kafka's ProducerIdControlManager.

Brokers hand out producer ids to idempotent and transactional producers from blocks the
controller allocates: each request takes the next 1000 ids (ProducerIdsBlock.
PRODUCER_ID_BLOCK_SIZE) and writes one ProducerIdsRecord v0 naming the first id of the block
after it, the asking broker and its epoch. The block starts where the last record said the
next one starts (0 before any record). The asking broker's epoch must be its registered one
(ClusterControlManager.checkBrokerEpoch: STALE_BROKER_EPOCH otherwise).
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors

from .errors import ApiError
from .frames import frame
from .state import ControllerState

PRODUCER_ID_BLOCK_SIZE = 1000
_LONG_MAX = (1 << 63) - 1


def check_broker_epoch(state: ControllerState, broker_id: int, broker_epoch: int) -> None:
    """ClusterControlManager.checkBrokerEpoch, with Kafka's messages."""
    broker = state.image.brokers.get(broker_id)
    if broker is None:
        raise ApiError(Errors.STALE_BROKER_EPOCH, f"No broker registration found for broker id {broker_id}")
    if broker.epoch != broker_epoch:
        raise ApiError(Errors.STALE_BROKER_EPOCH, f"Expected broker epoch {broker.epoch}, but got broker epoch "
                                                  f"{broker_epoch}")


def next_block_start(state: ControllerState) -> int:
    """The first id of the next block: the last ProducerIdsRecord's nextProducerId, else 0
    (ProducerIdsBlock.EMPTY starts at 0; the image says -1 before any record)."""
    return max(state.image.next_producer_id, 0)


def allocate_producer_ids(state: ControllerState, broker_id: int, broker_epoch: int) -> tuple[list[bytes], tuple[int, int]]:
    """generateNextProducerId: the ProducerIdsRecord to append and (first id, length) of the block."""
    check_broker_epoch(state, broker_id, broker_epoch)
    first = next_block_start(state)
    if first > _LONG_MAX - PRODUCER_ID_BLOCK_SIZE:
        raise ApiError(Errors.UNKNOWN_SERVER_ERROR, "Exhausted all producerIds as the next block's end producerId "
                                                    "has exceeded the int64 type limit")
    record = frame("ProducerIdsRecord", 0, broker_id=broker_id, broker_epoch=broker_epoch,
                   next_producer_id=first + PRODUCER_ID_BLOCK_SIZE)
    return [record], (first, PRODUCER_ID_BLOCK_SIZE)
