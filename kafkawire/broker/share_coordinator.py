"""The share coordinator's state machine, without I/O: the state of each share-partition kept in
``__share_group_state`` and the rules of Kafka 4.3.1's ShareCoordinatorShard for
InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState
and ReadShareGroupStateSummary, one share-partition at a time.

    coordinator = ShareCoordinator(ShareCoordinatorSettings(), persist=..., partition_count=..., now_ms=...)
    code, message = coordinator.write(group_id, topic_id, partition_data)

The caller provides ``persist(group_id, topic_id, partition, records) -> error code`` (appends
the records to the share-partition's ``__share_group_state`` partition, which this broker leads
and has loaded: the caller checked) and ``partition_count(topic_id)`` (the topic's partitions in
the metadata image, None for no such topic).

A change is written, then replayed into the state (``replay``, as the loading of the topic
replays it), so what is served is what a new coordinator rebuilds from the log. Epochs: a
request's leader epoch below the one recorded is FENCED_LEADER_EPOCH, a state epoch below the
one recorded FENCED_STATE_EPOCH (-1: not checked). A write is a ShareUpdate of the request's
batches, or a ShareSnapshot of the merged state once
``share.coordinator.snapshot.update.records.per.snapshot`` updates followed the last snapshot.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from kafkawire.protocol.error_codes import Errors

from .share_state_batches import combine
from .share_state_records import (SHARE_SNAPSHOT, SHARE_UPDATE, UNINITIALIZED, ShareState, StateBatch,
                                  snapshot_record, state_tombstone, update_record)

__all__ = ["ShareCoordinator", "ShareCoordinatorSettings", "ShareKey"]

ShareKey = tuple          # (group id, topic id, partition)
NEGATIVE_PARTITION = "The partition id cannot be a negative number."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."
DEFAULT_LEADER_EPOCH = DEFAULT_STATE_EPOCH = 0       # PartitionFactory's, in a summary of no state


@dataclass(frozen=True)
class ShareCoordinatorSettings:
    """Kafka's names and defaults (ShareCoordinatorConfig)."""
    snapshot_update_records_per_snapshot: int = 500    # share.coordinator.snapshot.update.records.per.snapshot
    cold_partition_snapshot_interval_ms: int = 300_000  # share.coordinator.cold.partition.snapshot.interval.ms


class ShareCoordinator:
    def __init__(self, settings: ShareCoordinatorSettings, *, persist, partition_count, now_ms,
                 last_offset=lambda: None):
        self.settings = settings
        self.last_offset = last_offset          # the offset of the record ``persist`` appended last
        self.persist = persist
        self.partition_count = partition_count
        self.now_ms = now_ms
        self.states: dict[ShareKey, ShareState] = {}
        self.leader_epochs: dict[ShareKey, int] = {}       # the largest seen, as Kafka's leaderEpochMap
        self.state_epochs: dict[ShareKey, int] = {}
        self.updates_since_snapshot: dict[ShareKey, int] = {}
        self.snapshot_offsets: dict[ShareKey, int] = {}    # where each one's latest snapshot is in the topic
        self.write_calls = 0                               # writes and reads writing a leader epoch (write-total)

    # -- replay --

    def replay(self, record_type: int, key: ShareKey, state: ShareState | None, offset: int | None = None) -> None:
        """Apply a record (as written, or read back at load; ``offset``: where it is in the
        topic, when known): a snapshot replaces the state, an update merges into it, a snapshot
        tombstone forgets the share-partition."""
        if record_type == SHARE_SNAPSHOT and state is None:
            for table in self._tables():
                table.pop(key, None)
            return
        if record_type == SHARE_SNAPSHOT and state is not None and offset is not None:
            self.snapshot_offsets[key] = offset
        if state is None:                           # an update tombstone: Kafka never writes one
            return
        self._raise_epoch(self.leader_epochs, key, state.leader_epoch)
        if record_type == SHARE_SNAPSHOT:
            self._raise_epoch(self.state_epochs, key, state.state_epoch)
            self.states[key] = state
            if self.updates_since_snapshot.get(key, 0) >= self.settings.snapshot_update_records_per_snapshot:
                self.updates_since_snapshot[key] = 0
            return
        current = self.states.get(key)
        self.states[key] = state if current is None else _merged(current, state)
        self.updates_since_snapshot[key] = self.updates_since_snapshot.get(key, 0) + 1

    @staticmethod
    def _raise_epoch(table: dict, key, epoch: int) -> None:
        if epoch > table.get(key, epoch - 1):
            table[key] = epoch

    def _write(self, record_type: int, key: ShareKey, state: ShareState | None) -> int:
        group_id, topic_id, partition = key
        if state is None:
            record = state_tombstone(group_id, topic_id, partition)
        elif record_type == SHARE_SNAPSHOT:
            record = snapshot_record(group_id, topic_id, partition, state)
        else:
            record = update_record(group_id, topic_id, partition, state)
        code = self.persist(group_id, topic_id, partition, [record])
        if code == Errors.NONE:
            self.replay(record_type, key, state, self.last_offset())
        return code

    def _tables(self) -> tuple:
        return (self.states, self.leader_epochs, self.state_epochs, self.updates_since_snapshot,
                self.snapshot_offsets)

    # -- the periodic work (ShareCoordinatorService's timers) --

    def snapshot_cold_partitions(self, limit: int) -> int:
        """snapshotColdPartitions: a new snapshot (the same state, the next snapshot epoch, written
        now) of each share-partition whose last snapshot is older than the cold interval, so the
        prune is not held back by a share-partition nobody writes to; nothing when every
        share-partition's snapshot is such a cold one already (the coordinator is quiet). At most
        ``limit`` per call: how many are left for the next."""
        if all(s.create_timestamp != s.write_timestamp for s in self.states.values()):
            return 0
        now = self.now_ms()
        cold = [key for key, s in self.states.items()
                if now - s.write_timestamp >= self.settings.cold_partition_snapshot_interval_ms]
        for key in cold[:limit]:
            state = self.states[key]
            if self._write(SHARE_SNAPSHOT, key, replace(state, snapshot_epoch=state.snapshot_epoch + 1,
                                                        write_timestamp=now)) == Errors.NONE:
                self.updates_since_snapshot[key] = 0
        return max(len(cold) - limit, 0)

    def drop_deleted_topics(self, exists, limit: int) -> int:
        """maybeCleanupShareState: a tombstone for each share-partition of a topic that
        ``exists(topic id)`` says is gone (at most ``limit`` per call): how many are left."""
        gone = [key for key in self.states if not exists(key[1])]
        for key in gone[:limit]:
            self._write(SHARE_SNAPSHOT, key, None)
        return max(len(gone) - limit, 0)

    def redundant_offsets(self, partition_of) -> dict:
        """ShareCoordinatorOffsetsManager.lastRedundantOffset per ``__share_group_state``
        partition (``partition_of(key)``): the lowest offset of a share-partition's latest
        snapshot there, below which no record is needed to rebuild the state; a partition with a
        share-partition whose snapshot's offset is not known is left out."""
        lowest: dict[int, int] = {}
        unknown: set = set()
        for key in self.states:
            index = partition_of(key)
            offset = self.snapshot_offsets.get(key)
            if offset is None:
                unknown.add(index)
            elif offset < lowest.get(index, offset + 1):
                lowest[index] = offset
        return {index: offset for index, offset in lowest.items() if index not in unknown}

    # -- checks --

    def _unknown_partition(self, topic_id: uuid.UUID, partition: int) -> bool:
        count = self.partition_count(topic_id)
        return count is None or count <= partition

    def _fenced(self, key: ShareKey, leader_epoch: int | None, state_epoch: int | None) -> int:
        if leader_epoch is not None and leader_epoch != -1 and self.leader_epochs.get(key, leader_epoch) > leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if state_epoch is not None and state_epoch != -1 and self.state_epochs.get(key, state_epoch) > state_epoch:
            return Errors.FENCED_STATE_EPOCH
        return Errors.NONE

    # -- the five operations: (error code, error message or None) --

    def initialize(self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int,
                   start_offset: int) -> tuple[int, str | None]:
        """A fresh snapshot (the state's batches dropped), its snapshot epoch one past the last."""
        if partition < 0:
            return Errors.INVALID_REQUEST, NEGATIVE_PARTITION
        key = (group_id, topic_id, partition)
        code = self._fenced(key, None, state_epoch)
        if code == Errors.NONE and self._unknown_partition(topic_id, partition):
            code = Errors.UNKNOWN_TOPIC_OR_PARTITION
        if code != Errors.NONE:
            return code, Errors.for_code(code).message
        current = self.states.get(key)
        now = self.now_ms()
        # a start offset set (an altered group): the delivery-complete count starts from there
        complete = UNINITIALIZED if start_offset == UNINITIALIZED else 0
        state = ShareState(0 if current is None else current.snapshot_epoch + 1, state_epoch, UNINITIALIZED,
                           start_offset, complete, (), now, now)
        return self._answer(self._write(SHARE_SNAPSHOT, key, state))

    def write(self, group_id: str, topic_id: uuid.UUID, data) -> tuple[int, str | None]:
        """``data``: a WriteShareGroupState PartitionData (partition, epochs, start offset,
        delivery-complete count, batches)."""
        self.write_calls += 1                  # ShareCoordinatorShard.writeState counts each call, refused or not
        if data.partition < 0:
            return Errors.INVALID_REQUEST, NEGATIVE_PARTITION
        key = (group_id, topic_id, data.partition)
        if key not in self.states:
            return Errors.INVALID_REQUEST, WRITE_UNINITIALIZED
        code = self._fenced(key, data.leader_epoch, data.state_epoch)
        if code == Errors.NONE and self._unknown_partition(topic_id, data.partition):
            code = Errors.UNKNOWN_TOPIC_OR_PARTITION
        if code != Errors.NONE:
            return code, Errors.for_code(code).message
        batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_count, b.delivery_state)
                   for b in data.state_batches]
        record_type, state = self._next_state(key, data.start_offset, data.delivery_complete_count, None, batches)
        return self._answer(self._write(record_type, key, state))

    def _next_state(self, key: ShareKey, start_offset: int, complete: int, leader_epoch: int | None,
                    batches: list) -> tuple[int, ShareState]:
        """generateShareStateRecord: a snapshot of the merged state once enough updates followed
        the last one, else an update of the request's own batches (merged among themselves)."""
        current = self.states[key]
        epoch = current.leader_epoch if leader_epoch is None or leader_epoch == -1 else leader_epoch
        if self.updates_since_snapshot.get(key, 0) >= self.settings.snapshot_update_records_per_snapshot:
            start = current.start_offset if start_offset == -1 else start_offset
            now = self.now_ms()
            return SHARE_SNAPSHOT, ShareState(current.snapshot_epoch + 1, current.state_epoch, epoch, start, complete,
                                              combine(current.batches, batches, start), now, now)
        return SHARE_UPDATE, ShareState(current.snapshot_epoch, UNINITIALIZED, epoch, start_offset, complete,
                                        combine((), batches, start_offset))

    def read(self, group_id: str, topic_id: uuid.UUID, partition: int,
             leader_epoch: int) -> tuple[int, str | None, ShareState | None]:
        """The state (FENCED_LEADER_EPOCH below the recorded leader epoch); a new leader epoch is
        written first (a state record carrying it, no batches), as Kafka's read does."""
        if partition < 0:
            return Errors.INVALID_REQUEST, NEGATIVE_PARTITION, None
        key = (group_id, topic_id, partition)
        if key not in self.states:
            return Errors.INVALID_REQUEST, READ_UNINITIALIZED, None
        code = self._fenced(key, leader_epoch, None)
        if code == Errors.NONE and self._unknown_partition(topic_id, partition):
            code = Errors.UNKNOWN_TOPIC_OR_PARTITION
        if code != Errors.NONE:
            return code, Errors.for_code(code).message, None
        state = self.states[key]
        if leader_epoch != -1 and self.leader_epochs.get(key) != leader_epoch:
            self.write_calls += 1
            record_type, next_state = self._next_state(key, state.start_offset, state.delivery_complete_count,
                                                       leader_epoch, [])
            code, message = self._answer(self._write(record_type, key, next_state))
            return code, message, (state if code == Errors.NONE else None)
        return Errors.NONE, None, state

    def read_summary(self, group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[int, str | None, ShareState]:
        """The start offset, delivery-complete count and epochs; a share-partition without state
        answers -1 offsets and zero epochs, without an error."""
        if partition < 0:
            return Errors.INVALID_REQUEST, NEGATIVE_PARTITION, None
        if self._unknown_partition(topic_id, partition):
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION.message, None
        state = self.states.get((group_id, topic_id, partition))
        if state is None:
            state = ShareState(0, DEFAULT_STATE_EPOCH, DEFAULT_LEADER_EPOCH, UNINITIALIZED, UNINITIALIZED)
        return Errors.NONE, None, state

    def delete(self, group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[int, str | None]:
        """A tombstone; a share-partition without state is answered without one."""
        if partition < 0:
            return Errors.INVALID_REQUEST, NEGATIVE_PARTITION
        if self._unknown_partition(topic_id, partition):
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_OR_PARTITION.message
        key = (group_id, topic_id, partition)
        if key not in self.states:
            return Errors.NONE, None
        return self._answer(self._write(SHARE_SNAPSHOT, key, None))

    @staticmethod
    def _answer(code: int) -> tuple[int, str | None]:
        return code, (None if code == Errors.NONE else Errors.for_code(code).message)

    def forget(self, owned) -> None:
        """Drop the share-partitions ``owned(key)`` says were in a partition no longer led here."""
        for key in {k for table in self._tables() for k in table if owned(k)}:
            for table in self._tables():
                table.pop(key, None)


def _merged(current: ShareState, update: ShareState) -> ShareState:
    """An update replayed onto the state: its start offset and leader epoch where set, its
    delivery-complete count, its batches combined with the state's from the new start offset."""
    start = current.start_offset if update.start_offset == -1 else update.start_offset
    leader_epoch = current.leader_epoch if update.leader_epoch == -1 else update.leader_epoch
    return replace(current, start_offset=start, leader_epoch=leader_epoch,
                   delivery_complete_count=update.delivery_complete_count,
                   batches=combine(current.batches, update.batches, start))
