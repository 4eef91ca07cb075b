"""DeleteRecords answers waiting for the replicas: Kafka's DelayedDeleteRecords in its purgatory.

    deletes = DeletePurgatory(alive)
    await deletes.wait([(key, partition, result, required_offset), ...], timeout_ms)  # results set
    deletes.check(key, partition)    # after a follower's fetch (its log start offset may have moved)
    deletes.step_down(led)           # partitions no longer led here: NOT_LEADER_OR_FOLLOWER

A partition's answer is done when its low watermark reached the offset the request moved the log
start to (Partition.lowWatermarkIfLeader: the least log start offset of the leader and of every
follower on a live broker, whatever the ISR); it is the low watermark then. Until the request's
``timeout_ms`` passes it is REQUEST_TIMED_OUT, with the low watermark the leader answered at once
(ReplicaManager.deleteRecords's initial status). ``alive(broker_id)``: whether the metadata has
the broker registered and unfenced (MetadataCache.hasAliveBroker). The waiting itself is
kafkawire.broker.purgatory's.
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors

from .purgatory import Purgatory

__all__ = ["DeletePurgatory", "low_watermark"]

INVALID_LOW_WATERMARK = -1


def low_watermark(partition, alive) -> int:
    """Partition.lowWatermarkIfLeader."""
    low = partition.log.log_start_offset
    replicas = partition.replicas
    if replicas is not None:
        for broker_id, follower in replicas.followers.items():
            if alive(broker_id) and follower.log_start_offset < low:
                low = follower.log_start_offset
    return low


def _decide(result, _partition, _required: int, low: int) -> None:
    result.error_code = Errors.NONE
    result.low_watermark = low


def _lost(result) -> None:
    result.error_code = Errors.NOT_LEADER_OR_FOLLOWER
    result.low_watermark = INVALID_LOW_WATERMARK


class DeletePurgatory(Purgatory):
    """The DeleteRecords answers waiting, per partition (topic, index)."""

    def __init__(self, alive):
        super().__init__(lambda partition: low_watermark(partition, alive), _decide, _lost)
