"""The group coordinator's I/O on a combined node: its timers on the event loop, its
``__consumer_offsets`` topic (created through the active controller on first use, as Kafka's
broker creates it when a FindCoordinator first needs it), the appends of its records, and the
loading of each partition's records when this broker starts leading it.

    store = OffsetsTopic(broker, coordinator, offsets)
    store.on_metadata(image)              # after each metadata change: load newly led partitions
    error = store.coordinator_error(group_id)
    store.persist(group_id, records)      # the coordinator's ``persist``

Loading reads the partition's whole log when the broker opens it, a chunk at a time with the
event loop free in between (there is no compaction yet, so it is every record ever written; the
partition's groups are COORDINATOR_LOAD_IN_PROGRESS meanwhile, as in Kafka).
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import time

from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.net import background
from kafkawire.net.client import TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.errors import DecodeError
from kafkawire.raft.contract import NoLeader, NotLeader
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch

from .coordinator_acks import note_append
from .log_dir_failure import append_step, storage_failure
from .group_records import OFFSETS_TOPIC, partition_for
from .producer_state import BatchInfo

__all__ = ["LoopTimer", "OffsetsTopic"]

log = logging.getLogger(__name__)
LOAD_READ_BYTES = 1 << 20


def _in_partition(key: str, *, count: int, index: int) -> bool:
    return count == 0 or partition_for(key, count) == index      # the topic gone: every group goes


class LoopTimer:
    """The coordinator's timers on the running event loop: one per key, a new schedule of a key
    replacing the old one (Kafka's CoordinatorTimer)."""

    def __init__(self):
        self._handles: dict[str, asyncio.TimerHandle] = {}

    def schedule(self, key: str, delay_ms: int, callback) -> None:
        self.cancel(key)
        # a fresh context: a timer is no part of the request that scheduled it (coordinator_acks)
        self._handles[key] = asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, self._run, key, callback,
                                                                   context=contextvars.Context())

    def _run(self, key: str, callback) -> None:
        self._handles.pop(key, None)
        try:
            callback()
        except Exception:                      # a timer must never take the loop down
            log.exception("group coordinator timer %s failed", key)

    def cancel(self, key: str) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def close(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()


class OffsetsTopic:
    """``__consumer_offsets`` for ``broker`` (its image, partitions and controller channel).
    kafkawire.broker.txn_state_topic.TransactionStateTopic is the same for ``__transaction_state``: it
    names its topic (TOPIC) and how it is created (creatable_topic)."""
    TOPIC = OFFSETS_TOPIC

    def __init__(self, broker, coordinator, offsets):
        self.broker = broker
        self.coordinator = coordinator
        self.offsets = offsets
        self.loaded: set[int] = set()          # partitions whose records are replayed
        self.loading: dict[int, asyncio.Task] = {}
        self.sources: dict[int, object] = {}   # the partition each loading or loaded one was read from
        self.failed: set[int] = set()          # partitions whose last load failed (the runtime's FAILED)
        self._creating: asyncio.Task | None = None
        self._last_failure: str | None = None
        self.txn_offsets = None                # TxnOffsetCommit's pending offsets (kafkawire.broker.group_txn_offsets)
        self.replay_offset = -1                # the offset of the record being replayed at load

    # -- where a group lives --

    def partitions(self, image) -> int:
        topic = None if image is None else image.topics_by_name.get(self.TOPIC)
        return 0 if topic is None else len(topic.partitions)

    def leader_of(self, key: str, image) -> int:
        """The leader of ``key``'s partition of the topic in ``image`` (-1: no topic, no leader)."""
        count = self.partitions(image)
        registration = image.topics_by_name[self.TOPIC].partitions.get(partition_for(key, count)) if count else None
        return -1 if registration is None else registration.leader

    def coordinator_error(self, group_id: str) -> int:
        """NONE when this broker coordinates ``group_id`` and has loaded its partition."""
        image = self.broker.image()
        count = self.partitions(image)
        if count == 0:
            return Errors.COORDINATOR_NOT_AVAILABLE
        index = partition_for(group_id, count)
        registration = image.topics_by_name[self.TOPIC].partitions.get(index)
        if registration is None or registration.leader != self.broker.node_id:
            return Errors.NOT_COORDINATOR
        if index in self.failed:                 # the runtime answers a FAILED coordinator so
            return Errors.NOT_COORDINATOR
        if index not in self.loaded:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        return Errors.NONE

    def still_loading(self) -> bool:
        """Whether a partition led here is not loaded yet, for the listings (ListGroups,
        ListTransactions: COORDINATOR_LOAD_IN_PROGRESS); one whose load failed is not loading, it
        is skipped as Kafka's listings skip a FAILED coordinator's NOT_COORDINATOR."""
        return any(index not in self.loaded and index not in self.failed
                   for (topic, index) in self.broker.partitions if topic == self.TOPIC)

    def find(self, group_id: str) -> tuple[int, int]:
        """FindCoordinator's answer for a group as (error, coordinator id): NONE and the leader of
        its partition (this broker, unfenced, or another: KafkaApis.getCoordinator names the
        partition's leader, whichever broker is asked), else COORDINATOR_NOT_AVAILABLE and -1,
        asking the controller to create the topic when it is missing."""
        image = self.broker.image()
        count = self.partitions(image)
        if count == 0:
            self.create()
            return Errors.COORDINATOR_NOT_AVAILABLE, -1
        leader = self.leader_of(group_id, image)
        if leader < 0 or (leader == self.broker.node_id and not self.broker.unfenced):
            return Errors.COORDINATOR_NOT_AVAILABLE, -1
        return Errors.NONE, leader

    def led_partition(self, key: str):
        """``key``'s partition when it is led here, else None."""
        count = self.partitions(self.broker.image())
        return self.broker.partitions.get((self.TOPIC, partition_for(key, count))) if count else None

    def log_position(self, key: str) -> tuple[int, int] | None:
        """(log end, high watermark) of ``key``'s partition when it is led here, else None."""
        partition = self.led_partition(key)
        return None if partition is None else (partition.log.log_end_offset, partition.high_watermark())

    # -- creating the topic --

    def creatable_topic(self, c) -> CreatableTopic:
        return CreatableTopic(
            name=self.TOPIC, num_partitions=c.offsets_topic_num_partitions,
            replication_factor=c.offsets_topic_replication_factor, assignments=[], configs=[
                CreatableTopicConfig(name="cleanup.policy", value="compact"),
                CreatableTopicConfig(name="compression.type", value="producer"),
                CreatableTopicConfig(name="segment.bytes", value=str(c.offsets_topic_segment_bytes))])

    def create(self) -> None:
        if self._creating is not None and not self._creating.done():
            return
        request = CreateTopicsRequest(timeout_ms=30_000, validate_only=False,
                                      topics=[self.creatable_topic(self.broker.config)])
        self._creating = background.start(self._create(request), f"Creating {self.TOPIC}", logger=log)

    async def _create(self, request) -> None:
        try:
            response = await self.broker.send_to_controller(request, request.timeout_ms)
            for result in response.topics:
                if result.error_code not in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
                    self._failed(f"error '{Errors.for_code(result.error_code).name}': {result.error_message}")
        except (NoLeader, NotLeader, TransportError, TimeoutError, OSError) as exc:
            self._failed(str(exc))

    def _failed(self, why: str) -> None:
        """Clients ask again every few hundred ms: a reason is logged as a warning the first time only."""
        if why != self._last_failure:
            log.warning("Creating %s failed with %s", self.TOPIC, why)
            self._last_failure = why
        else:
            log.debug("Creating %s failed with %s", self.TOPIC, why)

    # -- loading --

    def on_metadata(self) -> None:
        """Start loading the partitions this broker has started leading; unload those it no
        longer leads (``unload``), a load under way cancelled first (as Kafka's runtime and
        removeLoadingPartitionWithEpoch cancel it: what it replayed so far goes too). A partition
        led here whose log is another than the one its state was (or is being) read from, as
        when its topic was deleted and created again between two metadata updates (Broker._lead
        opens the new log), is unloaded and loaded again, as Kafka's resignation and election
        for a deleted topic; a load is never left stopped with its partition led here."""
        led = {index: partition for (topic, index), partition in self.broker.partitions.items() if topic == self.TOPIC}
        gone = {index for index, source in self.sources.items() if led.get(index) is not source}
        for index in sorted(gone & set(self.loading)):
            self.loading.pop(index).cancel()
            self.unload(index)
        for index in sorted(gone & self.loaded):
            self.unload(index)
        self.loaded -= gone
        self.failed -= gone
        for index in gone:
            del self.sources[index]
        for index in sorted(led.keys() - self.loaded - set(self.loading)):
            self.sources[index] = led[index]
            self.failed.discard(index)              # a failed load is tried again (see _load)
            task = background.start(self._load(index, led[index]), f"Loading {self.TOPIC}-{index}", logger=log)
            self.loading[index] = task
            task.add_done_callback(functools.partial(self._load_ended, index))

    def _load_ended(self, index: int, task: asyncio.Task) -> None:
        if self.loading.get(index) is task:      # not a load cancelled and started again since
            del self.loading[index]
            if not task.cancelled() and task.exception() is not None:
                # a bug in the replay (logged by background.start): FAILED as a load that could not
                # read, not COORDINATOR_LOAD_IN_PROGRESS for ever with no load under way
                self.unload(index)
                self.failed.add(index)

    async def _load(self, index: int, partition) -> None:
        """Replay the partition's records up to its log end, as Kafka's loaders do
        (TransactionStateManager, CoordinatorLoaderImpl), not its high watermark: a follower made
        leader may not know the high watermark yet (0 after a restart) although its log holds the
        records the ISR had. A read of LOAD_READ_BYTES at a time with the event loop free in between
        (the groups of this partition are COORDINATOR_LOAD_IN_PROGRESS meanwhile). A load that
        fails drops what it replayed and leaves the partition failed, answered NOT_COORDINATOR, as
        the runtime's FAILED coordinator (an I/O error takes the log directory offline, as Kafka's
        read does); the next metadata update loads it again (Kafka: the next leader epoch)."""
        started = time.monotonic()
        self.unload(index)
        offset, records, bad = partition.log.log_start_offset, 0, 0
        try:
            while offset < partition.log.log_end_offset:
                if self.broker.partitions.get((self.TOPIC, index)) is not partition:
                    self.unload(index)                      # closed meanwhile: what was replayed goes
                    self.failed.add(index)                  # not hosted here: NOT_COORDINATOR
                    return
                data = partition.log.read(offset, LOAD_READ_BYTES, min_one_batch=True).data
                if not data:
                    break
                offset, read, skipped = self._replay(index, data, offset)
                records, bad = records + read, bad + skipped
                await asyncio.sleep(0)
        except (OSError, ValueError) as exc:            # ValueError: OffsetOutOfRange, a torn batch
            log.error("Loading %s-%d failed at offset %d: %s", self.TOPIC, index, offset, exc)
            self.unload(index)
            self.failed.add(index)
            if isinstance(exc, OSError):
                storage_failure(self.broker, partition, "read", exc)
            return
        self.loaded.add(index)
        count = self.partitions(self.broker.image())
        self.offsets.after_load(lambda group_id: partition_for(group_id, count) == index)
        log.info("Finished loading of %s-%d: %d records (%d skipped) in %.0f ms", self.TOPIC, index, records, bad,
                 (time.monotonic() - started) * 1000)

    def unload(self, index: int) -> None:
        """Kafka's runtime drops a coordinator partition's state when this broker stops leading it
        and rebuilds it from the log when it leads it again. kafkawire drops, then and again
        before a load (a load cut short leaves part of the state), what the replay rebuilds: the
        committed and pending offsets of the partition's groups, its classic groups (their parked
        JoinGroup and SyncGroup answered NOT_COORDINATOR), its consumer, share and streams groups
        with their timers. So a write the new leader never had (answered NOT_COORDINATOR, its
        record truncated here) is not found when the partition comes back."""
        in_partition = self.keys_of(index)
        self.offsets.unload(in_partition)
        if self.txn_offsets is not None:
            self.txn_offsets.unload(in_partition)

    def keys_of(self, index: int):
        """Whether a key (a group id, transactional id or share-partition's coordinator key) is in
        partition ``index``, for an unload: every key when the topic is gone."""
        return functools.partial(_in_partition, count=self.partitions(self.broker.image()), index=index)

    def _replay(self, index: int, data: bytes, offset: int) -> tuple[int, int, int]:
        """Replay the records of ``data`` from ``offset`` on: (next offset, records, skipped)."""
        records = bad = 0
        for batch in iter_batches(data):
            if batch.next_offset <= offset:
                continue
            offset = batch.next_offset
            if batch.is_control:
                if batch.is_transactional and self.txn_offsets is not None:
                    self.txn_offsets.replay_marker(batch, index)
                continue
            replay = self.offsets.replay
            if batch.is_transactional and self.txn_offsets is not None:     # offsets of a transaction
                replay = functools.partial(self.txn_offsets.replay_pending, batch.producer_id, index)
            for record in batch:
                records += 1
                self.replay_offset = record.offset        # the share coordinator keeps its snapshots' offsets
                try:
                    replay(record.key, record.value)
                except (DecodeError, ValueError) as exc:
                    bad += 1
                    log.warning("%s-%d: a record at offset %d does not decode, skipped: %s", self.TOPIC, index,
                                batch.base_offset, exc)
        return offset, records, bad

    # -- writing --

    def persist(self, group_id: str, records: list, *, producer: tuple[int, int] | None = None) -> int:
        """Append the group's records in one batch to its partition: an error code, as Kafka's
        coordinator maps append errors for its answers. ``producer`` (id, epoch): a transactional
        batch of that producer (TxnOffsetCommit), which the partition's producer state records
        as the producer's ongoing transaction, as if read back from the log."""
        image = self.broker.image()
        count = self.partitions(image)
        partition = self.broker.partitions.get((self.TOPIC, partition_for(group_id, count))) if count else None
        if partition is None:
            return Errors.NOT_COORDINATOR
        now = int(time.time() * 1000)
        fields = {} if producer is None else dict(producer_id=producer[0], producer_epoch=producer[1],
                                                  is_transactional=True)
        data = build_batch([(key, value, (), now) for key, value in records], **fields)
        if partition.state_writes is not None:     # a new epoch's checkpoint is on disk first (state_writes)
            partition.state_writes.wait(partition.log.directory)
        info = None if producer is None else BatchInfo(producer[0], producer[1], -1, len(records) - 1, now, True)
        try:
            partition.append_as_coordinator(data, now_ms=now, producer=info)
        except ValueError:                    # larger than a segment
            return Errors.UNKNOWN_SERVER_ERROR
        except OSError as exc:              # KAFKA_STORAGE_ERROR, which the coordinator answers NOT_COORDINATOR
            storage_failure(self.broker, partition, append_step(exc), exc)
            return Errors.NOT_COORDINATOR
        note_append(partition)                # the request's answer waits for the ISR (coordinator_acks)
        self.broker.data_appended()
        return Errors.NONE

    def close(self) -> None:
        if self._creating is not None:
            self._creating.cancel()
        for task in list(self.loading.values()):
            task.cancel()
