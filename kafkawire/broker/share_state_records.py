"""The share coordinator's records in ``__share_group_state`` (KIP-932), in Kafka 4.3.1's formats
(ShareCoordinatorRecordHelpers), and the keys that place a share-partition's state there.

    ShareSnapshot (0)   a share-partition's whole state: start offset, state and leader epochs,
                        its in-flight batches (written at initialization, then every
                        ``share.coordinator.snapshot.update.records.per.snapshot`` updates)
    ShareUpdate (1)     the batches and start offset one WriteShareGroupState changed, merged into
                        the last snapshot when replayed

A tombstone is always a ShareSnapshot key without a value, as Kafka writes it. Keys are
``(group id, topic id, partition)``; a share-partition's state partition is the hash of its
coordinator key ``groupId:topicId:partition`` (the topic id in Kafka's base64 form), as
ShareCoordinatorService.partitionFor computes it: FindCoordinator(SHARE) names its leader.
"""
from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass

from kafkawire.messages.share_snapshot_key import ShareSnapshotKey
from kafkawire.messages.share_snapshot_value import ShareSnapshotValue, StateBatch as SnapshotBatch
from kafkawire.messages.share_update_key import ShareUpdateKey
from kafkawire.messages.share_update_value import ShareUpdateValue, StateBatch as UpdateBatch
from kafkawire.protocol.errors import DecodeError
from kafkawire.protocol.message import uuid_to_kafka_string

from .group_records import decode_typed, partition_for, record_key, record_value

__all__ = ["SHARE_STATE_TOPIC", "ShareState", "StateBatch", "coordinator_key", "parse_coordinator_key",
           "state_partition_for", "snapshot_record", "update_record", "state_tombstone", "decode_state_record"]

SHARE_STATE_TOPIC = "__share_group_state"
SHARE_SNAPSHOT, SHARE_UPDATE = 0, 1
_CLASSES = {SHARE_SNAPSHOT: (ShareSnapshotKey, ShareSnapshotValue), SHARE_UPDATE: (ShareUpdateKey, ShareUpdateValue)}
UNINITIALIZED = -1          # an epoch, start offset or delivery-complete count not yet known


@dataclass(frozen=True, order=True)
class StateBatch:
    """PersisterStateBatch: an offset range's delivery state and count (ordered as Kafka's)."""
    first_offset: int
    last_offset: int
    delivery_count: int
    delivery_state: int


@dataclass(frozen=True)
class ShareState:
    """ShareGroupOffset: what the coordinator keeps of one share-partition."""
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int = UNINITIALIZED
    batches: tuple = ()
    create_timestamp: int = UNINITIALIZED
    write_timestamp: int = UNINITIALIZED


def coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """SharePartitionKey.asCoordinatorKey: ``groupId:topicId:partition``."""
    return f"{group_id}:{uuid_to_kafka_string(topic_id)}:{partition}"


def parse_coordinator_key(key: str) -> tuple[str, uuid.UUID, int]:
    """SharePartitionKey.getInstance(key): the group (which may hold ``:``), topic id and
    partition; ValueError, saying what is wrong, for a key Kafka refuses."""
    if not key:
        raise ValueError("Share partition key cannot be empty")
    tokens = key.split(":")
    while tokens and tokens[-1] == "":       # Java's String.split drops trailing empty strings
        tokens.pop()
    if len(tokens) < 3:
        raise ValueError(f"Invalid key format: expected - groupId:topicId:partition, found - {key}")
    group_id = ":".join(tokens[:-2])
    if not group_id.strip():
        raise ValueError("GroupId must not be empty")
    try:
        raw = base64.urlsafe_b64decode(tokens[-2] + "=" * (-len(tokens[-2]) % 4))
        if len(raw) != 16:
            raise ValueError("not 16 bytes")
        topic_id = uuid.UUID(bytes=raw)
    except (ValueError, binascii.Error):
        raise ValueError(f"Invalid topic ID: {tokens[-2]}") from None
    try:
        partition = int(tokens[-1], 10)
        if not -(1 << 31) <= partition < (1 << 31):
            raise ValueError("out of range")
    except ValueError:
        raise ValueError(f"Invalid partition: {tokens[-1]}") from None
    return group_id, topic_id, partition


def state_partition_for(group_id: str, topic_id: uuid.UUID, partition: int, partitions: int) -> int:
    """The ``__share_group_state`` partition of a share-partition (hash of its coordinator key)."""
    return partition_for(coordinator_key(group_id, topic_id, partition), partitions)


def _key(record_type: int, group_id: str, topic_id: uuid.UUID, partition: int) -> bytes:
    key_cls = _CLASSES[record_type][0]
    return record_key(record_type, key_cls(group_id=group_id, topic_id=topic_id, partition=partition))


def snapshot_record(group_id: str, topic_id: uuid.UUID, partition: int, state: ShareState) -> tuple[bytes, bytes]:
    value = ShareSnapshotValue(
        snapshot_epoch=state.snapshot_epoch, state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
        start_offset=state.start_offset, delivery_complete_count=state.delivery_complete_count,
        create_timestamp=state.create_timestamp, write_timestamp=state.write_timestamp,
        state_batches=[SnapshotBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                     delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                       for b in state.batches])
    return _key(SHARE_SNAPSHOT, group_id, topic_id, partition), record_value(0, value)


def update_record(group_id: str, topic_id: uuid.UUID, partition: int, state: ShareState) -> tuple[bytes, bytes]:
    value = ShareUpdateValue(
        snapshot_epoch=state.snapshot_epoch, leader_epoch=state.leader_epoch, start_offset=state.start_offset,
        delivery_complete_count=state.delivery_complete_count,
        state_batches=[UpdateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                   delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                       for b in state.batches])
    return _key(SHARE_UPDATE, group_id, topic_id, partition), record_value(0, value)


def state_tombstone(group_id: str, topic_id: uuid.UUID, partition: int) -> tuple[bytes, None]:
    return _key(SHARE_SNAPSHOT, group_id, topic_id, partition), None


def decode_state_record(key: bytes | None, value: bytes | None):
    """(record type, (group, topic id, partition), ShareState or None) of a stored record, or
    None for a record of another type (skipped, as Kafka's replay does); DecodeError on bytes
    that do not decode."""
    if key is None or len(key) < 2:
        raise DecodeError("ShareSnapshotKey", -1, None, 0, "no record type")
    record_type = int.from_bytes(key[:2], "big", signed=True)
    if record_type not in _CLASSES:
        return None
    _, k, v = decode_typed(_CLASSES, record_type, key, value)
    where = (k.group_id, k.topic_id, k.partition)
    if v is None:
        return record_type, where, None
    batches = tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_count, b.delivery_state)
                    for b in v.state_batches)
    if record_type == SHARE_SNAPSHOT:
        return record_type, where, ShareState(v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset,
                                              v.delivery_complete_count, batches, v.create_timestamp,
                                              v.write_timestamp)
    return record_type, where, ShareState(v.snapshot_epoch, UNINITIALIZED, v.leader_epoch, v.start_offset,
                                          v.delivery_complete_count, batches)
