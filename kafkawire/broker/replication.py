"""The leader side of replication on the broker: Kafka's ReplicaManager and Partition as leader.

    replication = Replication(broker)
    replication.on_metadata(image)       # after each metadata change: the ISR and epochs of led partitions
    data = replication.read_for_follower(partition, fetch_partition, replica_id, replica_epoch, ...)
    await replication.wait_for_acks(entries, timeout_ms)     # acks=all
    await replication.wait_for_low_watermark(entries, timeout_ms)     # DeleteRecords
    replication.start(); replication.close()

Each partition led here gets a kafkawire.broker.replica_state.LeaderReplicas holding what its
followers' fetches showed, the ISR and the rules on them; this module joins them to the log, the
metadata image, the controller and the waiting requests:

- on_metadata (Partition.makeLeader, on every metadata change of a led partition): the replicas,
  the committed ISR and the partition epoch of the image (ignored when older than the partition
  epoch an AlterPartition answer gave); a new leader epoch resets the followers (their log end
  unknown until they fetch, on a broker that just became the leader); then the high watermark
  may move. Answers waiting for partitions no longer led here fail with NOT_LEADER_OR_FOLLOWER.
- a follower's Fetch (Partition.fetchRecords as ReplicaManager calls it for a follower): the
  fetcher must be a replica (else UNKNOWN_LEADER_EPOCH when the request names a leader epoch,
  NOT_LEADER_OR_FOLLOWER without); a last fetched epoch (v12+) is checked against the leader
  epoch cache and a diverging one answered with the epoch and its end offset
  (``diverging_epoch``, no records, the follower's state not updated); the read goes to the log
  end; the fetch offset becomes the follower's log end (a stale broker epoch:
  NOT_LEADER_OR_FOLLOWER); the follower may join the ISR; the high watermark may move, which
  completes acks=all answers and wakes the consumers' long polls; the follower's log start offset
  may complete DeleteRecords answers (kafkawire.broker.delayed_delete_records).
- every ``replica.lag.time.max.ms`` / 2 (ReplicaManager's isr-expiration task) each led partition
  drops the followers of its ISR that have not caught up within ``replica.lag.time.max.ms``.
- ISR changes go to the active controller (kafkawire.broker.alter_partition); the answer commits
  the new ISR and partition epoch (then the image carries them too), or an error puts the
  partition back (OPERATION_NOT_ATTEMPTED, INELIGIBLE_REPLICA), leaves it pending until the
  metadata says more (stale epochs, unknown partition, NEW_LEADER_ELECTED) or sends it again.
"""
from __future__ import annotations

import asyncio
import logging
import time

from kafkawire.messages.fetch_response import EpochEndOffset, PartitionData
from kafkawire.protocol.error_codes import Errors
from kafkawire.storage.log import OffsetOutOfRangeError

from .alter_partition import AlterPartitionSender
from .delayed_delete_records import DeletePurgatory, low_watermark
from .delayed_produce import AcksPurgatory
from .metrics import IsrUpdateMeters
from .replica_state import LeaderReplicas, StaleBrokerEpoch

__all__ = ["Replication"]

log = logging.getLogger(__name__)


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class Replication:
    """Replication, leader side, for ``broker`` (its ``partitions``, ``image()``, ``config``, ``lifecycle``)."""

    def __init__(self, broker, *, clock=_wall_clock_ms):
        self.broker = broker
        self.clock = clock
        self.max_lag_ms = broker.config.replica_lag_time_max_ms
        self.acks = AcksPurgatory()
        self.deletes = DeletePurgatory(self._alive)
        self.sender = AlterPartitionSender(broker.node_id, send=broker.send_to_controller,
                                           broker_epoch=self._local_broker_epoch)
        self._shrink_handle: asyncio.TimerHandle | None = None
        self.isr_meters = IsrUpdateMeters()     # ReplicaManager's IsrExpands/IsrShrinks/FailedIsrUpdates

    def _local_broker_epoch(self) -> int:
        lifecycle = self.broker.lifecycle
        return -1 if lifecycle is None else lifecycle.broker_epoch

    # -- what the metadata says of other brokers --

    def _alive_broker_epoch(self, broker_id: int) -> int | None:
        """MetadataCache.getAliveBrokerEpoch: the epoch of a registered, unfenced broker."""
        image = self.broker.image()
        b = None if image is None else image.brokers.get(broker_id)
        return None if b is None or b.fenced else b.epoch

    def _eligible(self, broker_id: int) -> bool:
        image = self.broker.image()
        b = None if image is None else image.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_controlled_shutdown

    # -- the metadata --

    def on_metadata(self, image) -> None:
        """makeLeader for every partition led here; the others (kept open as followers, or closed)
        forget their followers and fail their waiting acks=all answers."""
        now_ms = self.clock()
        led = {}
        for key, partition in self.broker.partitions.items():
            topic = image.topics_by_id.get(partition.topic_id)
            registration = None if topic is None else topic.partitions.get(partition.partition)
            if registration is None or registration.leader != self.broker.node_id:
                partition.replicas = None          # makeFollower: a later leadership starts afresh
                continue
            led[key] = partition
            self._make_leader(partition, image, registration, now_ms)
        self.acks.step_down(led)
        self.deletes.step_down(led)

    def _make_leader(self, partition, image, registration, now_ms: int) -> None:
        replicas = partition.replicas
        is_new_leader = replicas is None
        if is_new_leader:
            replicas = partition.replicas = LeaderReplicas(
                self.broker.node_id, max_lag_ms=self.max_lag_ms, broker_epoch=self._alive_broker_epoch,
                eligible=self._eligible, local_broker_epoch=self._local_broker_epoch)
        replicas.min_isr = self.broker.topic_configs.produce_settings(image, partition.topic).min_insync_replicas
        replicas.make_leader(replicas=registration.replicas, isr=registration.isr,
                             leader_epoch=registration.leader_epoch, partition_epoch=registration.partition_epoch,
                             log_end_offset=partition.log.log_end_offset, now_ms=now_ms, is_new_leader=is_new_leader)
        self._maybe_increment_hw(partition, now_ms)

    def _maybe_increment_hw(self, partition, now_ms: int) -> None:
        """After the high watermark moved: acks=all answers it reached, consumers' long polls."""
        if partition.maybe_increment_high_watermark(now_ms):
            self.acks.check((partition.topic, partition.partition), partition)
            self.broker.data_appended()

    # -- acks=all --

    async def wait_for_acks(self, entries: list, timeout_ms: int) -> None:
        """``entries``: (partition, response, required offset) of the batches appended with acks=all."""
        await self.acks.wait([((p.topic, p.partition), p, r, required) for p, r, required in entries], timeout_ms)

    # -- DeleteRecords --

    def _alive(self, broker_id: int) -> bool:
        return self._alive_broker_epoch(broker_id) is not None

    def low_watermark(self, partition) -> int:
        """Partition.lowWatermarkIfLeader: the least log start offset of the replicas on live brokers."""
        return low_watermark(partition, self._alive)

    async def wait_for_low_watermark(self, entries: list, timeout_ms: int) -> None:
        """``entries``: (partition, result, required offset) of DeleteRecords (DelayedDeleteRecords)."""
        await self.deletes.wait([((p.topic, p.partition), p, r, required) for p, r, required in entries],
                                timeout_ms)

    # -- follower fetches --

    def read_for_follower(self, partition, p, replica_id: int, replica_epoch: int, *, limit: int, min_one: bool,
                          update_state: bool, in_file: bool = False) -> PartitionData:
        """Partition.fetchRecords for a follower (after the leader and leader epoch checks);
        ``in_file``: the records may stay in the log's files (Partition.read)."""
        # FetchIsolation.LOG_END collects no aborted transactions: the list is null, as Kafka's
        data = PartitionData(partition_index=p.partition, high_watermark=-1, records=b"", aborted_transactions=None)
        replicas = partition.replicas
        if replicas is None or replica_id not in replicas.followers:
            data.error_code = Errors.UNKNOWN_LEADER_EPOCH if p.current_leader_epoch >= 0 \
                else Errors.NOT_LEADER_OR_FOLLOWER
            return data
        log_ = partition.log
        hw, start, end, lso = partition.high_watermark(), log_.log_start_offset, log_.log_end_offset, \
            partition.last_stable_offset()
        try:
            diverging = partition.diverging_epoch(p.fetch_offset, p.last_fetched_epoch)
        except OffsetOutOfRangeError:
            data.error_code = Errors.OFFSET_OUT_OF_RANGE
            return data
        if diverging is not None:
            data.high_watermark, data.last_stable_offset, data.log_start_offset = hw, lso, start
            data.diverging_epoch = EpochEndOffset(epoch=diverging[0], end_offset=diverging[1])
            return data
        if p.fetch_offset < start or p.fetch_offset > end:
            data.error_code = Errors.OFFSET_OUT_OF_RANGE
            return data
        try:
            if p.fetch_offset < end and (limit > 0 or min_one):
                data.records = partition.read(p.fetch_offset, max(limit, 0), min_one_batch=min_one, upper=end,
                                              in_file=in_file)
        except OffsetOutOfRangeError:
            data.error_code = Errors.OFFSET_OUT_OF_RANGE
            return data
        if update_state:
            try:
                self.follower_fetched(partition, replica_id, replica_epoch, p.fetch_offset, p.log_start_offset, end)
            except StaleBrokerEpoch as exc:
                log.info("%s: %s", partition.name, exc)
                data.records = b""
                data.error_code = Errors.NOT_LEADER_OR_FOLLOWER
                return data
        data.high_watermark, data.last_stable_offset, data.log_start_offset = hw, lso, start
        return data

    def follower_fetched(self, partition, replica_id: int, replica_epoch: int, fetch_offset: int,
                         log_start_offset: int, leader_end_offset: int) -> None:
        """Partition.updateFollowerFetchState: the follower's state, the ISR, the high watermark."""
        now_ms = self.clock()
        replicas = partition.replicas
        before = replicas.followers[replica_id].log_end_offset
        replicas.follower_fetched(replica_id, fetch_offset=fetch_offset, log_start_offset=log_start_offset,
                                  now_ms=now_ms, leader_end_offset=leader_end_offset, broker_epoch=replica_epoch)
        self.deletes.check((partition.topic, partition.partition), partition)
        change = replicas.expand_for(replica_id, high_watermark=partition.high_watermark())
        if change is not None:
            log.info("%s: expanding the ISR from %s to %s", partition.name, sorted(change.committed.isr),
                     sorted(change.state.maximal))
            self._submit(partition, change)
        if before != fetch_offset:
            self._maybe_increment_hw(partition, now_ms)

    # -- the ISR --

    def start(self) -> None:
        self._schedule_shrink()

    def _schedule_shrink(self) -> None:
        self._shrink_handle = asyncio.get_running_loop().call_later(max(self.max_lag_ms / 2, 1) / 1000,
                                                                    self._shrink_all)

    def _shrink_all(self) -> None:
        try:
            self.maybe_shrink_isr()
        finally:
            self._schedule_shrink()

    def maybe_shrink_isr(self) -> None:
        """ReplicaManager.maybeShrinkIsr: each led partition drops its followers out of sync."""
        now_ms = self.clock()
        for partition in list(self.broker.partitions.values()):
            replicas = partition.replicas
            if replicas is None or not replicas.followers:
                continue
            change = replicas.shrink(partition.log.log_end_offset, now_ms)
            if change is not None:
                log.info("%s: shrinking the ISR from %s to %s (high watermark %d, log end %d)", partition.name,
                         sorted(change.committed.isr), [b for b, _ in change.isr_with_epochs],
                         partition.high_watermark(), partition.log.log_end_offset)
                self._submit(partition, change)

    def _submit(self, partition, change) -> None:
        self.sender.submit(partition.topic_id, partition.partition, change,
                           lambda sent, result: self._altered(partition, sent, result))

    def _altered(self, partition, change, result) -> None:
        """submitAlterPartition's completion: commit the answer, or handle its error. As Kafka's
        Partition counts them: an answer to a state already replaced (by the metadata) counts
        nothing; a commit is an expand or a shrink; a refused answer or an error is a failed update."""
        replicas = partition.replicas
        if replicas is None or replicas.state is not change.state:
            return
        if isinstance(result, tuple):
            leader_epoch, isr, partition_epoch = result
            if replicas.altered(change, leader_epoch=leader_epoch, isr=isr, partition_epoch=partition_epoch):
                self.isr_meters.committed(change.state.pending)
                log.info("%s: ISR updated to %s and version updated to %d", partition.name, sorted(isr),
                         partition_epoch)
                self._maybe_increment_hw(partition, self.clock())
            else:
                self.isr_meters.failed += 1
            return
        self.isr_meters.failed += 1
        if replicas.alter_failed(change, result):
            log.warning("%s: failed to update the ISR to %s due to unexpected %s. Retrying.", partition.name,
                        [b for b, _ in change.isr_with_epochs], result.name)
            self._submit(partition, change)
        else:
            log.info("%s: the controller refused the ISR change with %s", partition.name, result.name)

    def close(self) -> None:
        if self._shrink_handle is not None:
            self._shrink_handle.cancel()
        self.sender.close()
        self.acks.close()
        self.deletes.close()
