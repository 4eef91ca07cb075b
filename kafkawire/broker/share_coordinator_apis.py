"""The share coordinator on the broker's listeners (KIP-932), as Kafka 4.3.1's KafkaApis hands
the inter-broker share-state APIs to its ShareCoordinatorService: InitializeShareGroupState
(83), ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86) and
ReadShareGroupStateSummary (87); FindCoordinator(SHARE) is answered through ``find``.

    apis = ShareCoordinatorApis(broker)
    handlers.update(apis.handlers())       # answers wait for their __share_group_state writes' ISR
    apis.on_metadata()                      # load newly led __share_group_state partitions

Each share-partition of a request is handled on its own (ShareCoordinatorService splits the
request by key): NOT_COORDINATOR when its ``__share_group_state`` partition is not led here,
COORDINATOR_LOAD_IN_PROGRESS while it loads, else the state machine's answer
(kafkawire.broker.share_coordinator). A request without topics, with a topic without
partitions, or with an empty group id is answered with no results, as the service answers it.
The ACL check (CLUSTER_ACTION on the cluster) runs before these handlers
(kafkawire.broker.share_authorization).
"""
from __future__ import annotations

import dataclasses
import logging
import time

from kafkawire.messages import delete_share_group_state_response as dsr
from kafkawire.messages import initialize_share_group_state_response as isr
from kafkawire.messages import read_share_group_state_response as rsr
from kafkawire.messages import read_share_group_state_summary_response as rssr
from kafkawire.messages import write_share_group_state_response as wsr
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.handler import ApiHandler

from .coordinator_acks import replicated_handlers
from .group_log import LoopTimer
from .share_coordinator import ShareCoordinator, ShareCoordinatorSettings
from .share_metrics import ShareCoordinatorMetrics
from .share_state_records import coordinator_key, parse_coordinator_key
from .share_state_topic import ShareStateLoader, ShareStateTopic

__all__ = ["ShareCoordinatorApis", "SHARE_KEY_TYPE"]

log = logging.getLogger(__name__)

INITIALIZE, READ, WRITE, DELETE, READ_SUMMARY = 83, 84, 85, 86, 87
SHARE_KEY_TYPE = 2
SHARE_FIND_MIN_VERSION = 6           # FindCoordinator v6 added the SHARE key type
PRUNE_KEY, COLD_KEY, DROP_KEY = "share-state-prune", "share-state-cold-snapshots", "share-state-deleted-topics"
COLD_MORE_KEY = "share-state-cold-snapshots-more"
DROP_PER_RUN = 1_000                 # tombstones of deleted topics' share-partitions in one turn
COLD_SNAPSHOTS_PER_RUN = 1_000       # snapshots written in one turn of the loop (the rest in the next turn)


class ShareCoordinatorApis:
    def __init__(self, broker):
        self.broker = broker
        c = broker.config
        self.coordinator = ShareCoordinator(
            ShareCoordinatorSettings(
                snapshot_update_records_per_snapshot=c.share_coordinator_snapshot_update_records_per_snapshot,
                cold_partition_snapshot_interval_ms=c.share_coordinator_cold_partition_snapshot_interval_ms),
            persist=self._persist, partition_count=self._partition_count, now_ms=lambda: int(time.time() * 1000),
            last_offset=lambda: self.store.last_offset)
        loader = ShareStateLoader(self.coordinator)
        self.store = ShareStateTopic(broker, None, loader)
        loader.store = self.store
        self.timer: LoopTimer | None = None           # the periodic work, from start() on
        self.metrics = ShareCoordinatorMetrics()      # share-coordinator-metrics (kafkawire.broker.share_metrics)
        self._topic_ids: set = set()                  # the topics of the last image seen

    def handlers(self) -> dict[int, ApiHandler]:
        handlers = replicated_handlers({
            INITIALIZE: ApiHandler(self.initialize_state),
            READ: ApiHandler(self.read_state),
            WRITE: ApiHandler(self.write_state),
            DELETE: ApiHandler(self.delete_state),
            READ_SUMMARY: ApiHandler(self.read_state_summary),
        }, self.broker)
        replicated_write = handlers[WRITE].handle

        async def timed_write(ctx, request):
            """write-latency: the request's handling, its records' replication included, as Kafka's."""
            started = time.monotonic()
            self.metrics.write_rate.observe(self.coordinator.write_calls)     # write-rate's window starts before
            response = await replicated_write(ctx, request)
            if request.group_id and request.topics:
                self.metrics.record_write_latency(started)
            return response
        handlers[WRITE] = dataclasses.replace(handlers[WRITE], handle=timed_write)
        return handlers

    def start(self) -> None:
        """The periodic work (ShareCoordinatorService's timers), on the running loop: called by
        Broker.start, as the log manager's."""
        self.timer = LoopTimer()
        self._schedule_prune()
        self._schedule_cold_snapshots()

    def on_metadata(self) -> None:
        self.store.on_metadata()
        image = self.broker.image()
        if image is None:
            return
        topic_ids = set(image.topics_by_id)
        if self._topic_ids - topic_ids:                 # topics deleted: their share-partitions' state goes
            self.drop_deleted_topics()
        self._topic_ids = topic_ids

    def drop_deleted_topics(self) -> None:
        """Tombstone the state of the deleted topics' share-partitions, DROP_PER_RUN at a time
        (the rest in the next turn of the loop)."""
        image = self.broker.image()
        if image is None:
            return
        left = self.coordinator.drop_deleted_topics(lambda topic_id: topic_id in image.topics_by_id, DROP_PER_RUN)
        if left and self.timer is not None:       # else (not started) the first prune takes the rest
            self.timer.schedule(DROP_KEY, 0, self.drop_deleted_topics)

    def close(self) -> None:
        if self.timer is not None:
            self.timer.close()
        self.store.close()

    # -- the periodic work, as ShareCoordinatorService's timers --

    def _schedule_prune(self) -> None:
        self.timer.schedule(PRUNE_KEY, self.broker.config.share_coordinator_state_topic_prune_interval_ms,
                            self._prune_and_reschedule)

    def _prune_and_reschedule(self) -> None:
        self._schedule_prune()
        self.drop_deleted_topics()          # also those of partitions loaded after their topic went
        self.prune()

    def prune(self) -> dict:
        """Delete each loaded ``__share_group_state`` partition's records below the oldest latest
        snapshot of its share-partitions (the partition's log start moved there, as a
        DeleteRecords does; never above the high watermark, never twice to the same offset):
        {partition: new log start} of those moved."""
        moved = {}
        redundant = self.coordinator.redundant_offsets(lambda key: self.store.partition_of(coordinator_key(*key)))
        for index, offset in sorted(redundant.items()):
            partition = self.broker.partitions.get((self.store.TOPIC, index))
            if index not in self.store.loaded or partition is None:
                continue
            offset = min(offset, partition.high_watermark())
            if partition.maybe_increment_log_start_offset(offset):
                moved[index] = offset
                self.metrics.last_pruned[index] = offset
                log.info("Pruned %s-%d below offset %d.", self.store.TOPIC, index, offset)
        return moved

    def _schedule_cold_snapshots(self) -> None:
        self.timer.schedule(COLD_KEY, self.broker.config.share_coordinator_cold_partition_snapshot_interval_ms,
                            self._cold_snapshots_and_reschedule)

    def _cold_snapshots_and_reschedule(self) -> None:
        self._schedule_cold_snapshots()
        self._cold_snapshots()

    def _cold_snapshots(self) -> None:
        """COLD_SNAPSHOTS_PER_RUN at a time, the rest in the next turn of the loop."""
        if self.coordinator.snapshot_cold_partitions(COLD_SNAPSHOTS_PER_RUN):
            self.timer.schedule(COLD_MORE_KEY, 0, self._cold_snapshots)

    # -- FindCoordinator(SHARE) --

    def find(self, key: str, version: int) -> tuple[int, int]:
        """(error, coordinator id) of a ``groupId:topicId:partition`` key: INVALID_REQUEST before
        v6 or for a key SharePartitionKey refuses; else its state partition's leader."""
        if version < SHARE_FIND_MIN_VERSION:
            return Errors.INVALID_REQUEST, -1
        try:
            share_key = parse_coordinator_key(key)
        except ValueError:
            return Errors.INVALID_REQUEST, -1
        return self.store.find(coordinator_key(*share_key))

    # -- plumbing --

    def _persist(self, group_id, topic_id, partition, records) -> int:
        return self.store.persist(coordinator_key(group_id, topic_id, partition), records)

    def _partition_count(self, topic_id) -> int | None:
        image = self.broker.image()
        topic = None if image is None else image.topics_by_id.get(topic_id)
        return None if topic is None else len(topic.partitions)

    def _each(self, request, answer, failed: str) -> dict:
        """{topic id: {partition: result}}: ``answer(topic id, partition data)`` for each
        share-partition this broker coordinates, the coordinator's error for the others (its
        message after ShareCoordinatorService's "Unable to ``failed``: "); empty for a request the
        service answers with no results."""
        if not request.group_id or not request.topics or any(not t.partitions for t in request.topics):
            return {}
        results: dict = {}
        for topic in request.topics:
            by_partition = results.setdefault(topic.topic_id, {})
            for data in topic.partitions:
                code = self.store.coordinator_error(coordinator_key(request.group_id, topic.topic_id, data.partition))
                by_partition[data.partition] = answer(topic.topic_id, data) if code == Errors.NONE else \
                    (code, f"Unable to {failed}: {Errors.for_code(code).message}", None)
        return results

    # -- the handlers --

    async def initialize_state(self, ctx, request):
        group = request.group_id
        results = self._each(request, lambda topic_id, p: (*self.coordinator.initialize(
            group, topic_id, p.partition, p.state_epoch, p.start_offset), None), "initialize share group state")
        return isr.InitializeShareGroupStateResponse(results=[isr.InitializeStateResult(topic_id=topic_id, partitions=[
            isr.PartitionResult(partition=p, error_code=code, error_message=message)
            for p, (code, message, _) in parts.items()]) for topic_id, parts in results.items()])

    async def write_state(self, ctx, request):
        group = request.group_id
        results = self._each(request, lambda topic_id, p: (*self.coordinator.write(group, topic_id, p), None),
                             "write share group state")
        return wsr.WriteShareGroupStateResponse(results=[wsr.WriteStateResult(topic_id=topic_id, partitions=[
            wsr.PartitionResult(partition=p, error_code=code, error_message=message)
            for p, (code, message, _) in parts.items()]) for topic_id, parts in results.items()])

    async def delete_state(self, ctx, request):
        group = request.group_id
        results = self._each(request, lambda topic_id, p: (*self.coordinator.delete(group, topic_id, p.partition),
                                                           None), "delete share group state")
        return dsr.DeleteShareGroupStateResponse(results=[dsr.DeleteStateResult(topic_id=topic_id, partitions=[
            dsr.PartitionResult(partition=p, error_code=code, error_message=message)
            for p, (code, message, _) in parts.items()]) for topic_id, parts in results.items()])

    async def read_state(self, ctx, request):
        group = request.group_id
        results = self._each(request, lambda topic_id, p: self.coordinator.read(
            group, topic_id, p.partition, p.leader_epoch), "read share group state")
        return rsr.ReadShareGroupStateResponse(results=[rsr.ReadStateResult(topic_id=topic_id, partitions=[
            _read_result(p, *answer) for p, answer in parts.items()]) for topic_id, parts in results.items()])

    async def read_state_summary(self, ctx, request):
        group = request.group_id
        results = self._each(request, lambda topic_id, p: self.coordinator.read_summary(group, topic_id, p.partition),
                             "read share group state summary")
        return rssr.ReadShareGroupStateSummaryResponse(results=[rssr.ReadStateSummaryResult(
            topic_id=topic_id, partitions=[_summary_result(p, *answer) for p, answer in parts.items()])
            for topic_id, parts in results.items()])


def _read_result(partition: int, code: int, message, state):
    if state is None:
        return rsr.PartitionResult(partition=partition, error_code=code, error_message=message)
    return rsr.PartitionResult(
        partition=partition, error_code=Errors.NONE, state_epoch=state.state_epoch, start_offset=state.start_offset,
        state_batches=[rsr.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                      delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                       for b in state.batches])


def _summary_result(partition: int, code: int, message, state):
    if state is None:
        return rssr.PartitionResult(partition=partition, error_code=code, error_message=message)
    return rssr.PartitionResult(partition=partition, error_code=Errors.NONE, state_epoch=state.state_epoch,
                                leader_epoch=state.leader_epoch, start_offset=state.start_offset,
                                delivery_complete_count=state.delivery_complete_count)
