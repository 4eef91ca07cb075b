"""acks=all answers waiting for the high watermark: Kafka's DelayedProduce in its purgatory.

    acks = AcksPurgatory()
    await acks.wait([(key, partition, response, required_offset), ...], timeout_ms)   # the responses set
    acks.check(key, partition)          # after the partition's high watermark moved
    acks.step_down(broker.partitions)   # partitions no longer led here: NOT_LEADER_OR_FOLLOWER

Each waiting partition answer starts as REQUEST_TIMED_OUT (what it stays if the request's
``timeout_ms`` passes) and is decided by Partition.checkEnoughReplicasReachOffset once the high
watermark reaches the end of its batch (NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR
is then below min.insync.replicas), or NOT_LEADER_OR_FOLLOWER when the partition is no longer
led here. The waiting itself is kafkawire.broker.purgatory's.
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors

from .purgatory import Purgatory

__all__ = ["AcksPurgatory", "enough_replicas"]


def enough_replicas(partition, required: int) -> tuple[bool, Errors]:
    hw = partition.high_watermark()
    if partition.replicas is None:
        return hw >= required, Errors.NONE
    return partition.replicas.enough_replicas(hw, required)


def _decide(response, partition, required: int, _hw: int) -> None:
    response.error_code = enough_replicas(partition, required)[1]


def _lost(response) -> None:
    response.error_code = Errors.NOT_LEADER_OR_FOLLOWER


class AcksPurgatory(Purgatory):
    """The acks=all answers waiting, per partition (topic, index)."""

    def __init__(self):
        super().__init__(lambda partition: partition.high_watermark(), _decide, _lost)
