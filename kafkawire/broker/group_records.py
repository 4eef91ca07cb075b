"""The records of ``__consumer_offsets`` in Kafka 4.3.1's formats (GroupCoordinatorRecordHelpers
and GroupCoordinatorRecordSerde): a key is ``int16 record type`` + the key message (OffsetCommitKey
is type 1, GroupMetadataKey type 2, both version 0), a value ``int16 version`` + the value message,
a tombstone a null value. OffsetCommitValue is written at version 4 (version 1 only with an expire
timestamp, which no current client sends), GroupMetadataValue at version 3, as Kafka writes them.

A group's records go to partition ``abs(groupId.hashCode()) % offsets.topic.num.partitions``
(Java's String.hashCode, Kafka's Utils.abs), so a kafkawire node reading a Kafka broker's
``__consumer_offsets`` finds each group where Kafka put it.
"""
from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from kafkawire.messages.group_metadata_key import GroupMetadataKey
from kafkawire.messages.group_metadata_value import GroupMetadataValue, MemberMetadata
from kafkawire.messages.offset_commit_key import OffsetCommitKey
from kafkawire.messages.offset_commit_value import OffsetCommitValue
from kafkawire.protocol.errors import DecodeError

__all__ = ["OFFSETS_TOPIC", "OffsetAndMetadata", "offset_record", "offset_tombstone", "group_record",
           "group_tombstone", "decode_record", "partition_for", "java_string_hash",
           "record_key", "record_value", "encode_typed", "decode_typed"]

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_COMMIT_TYPE, GROUP_METADATA_TYPE = 1, 2
OFFSET_COMMIT_VALUE_VERSION, GROUP_METADATA_VALUE_VERSION = 4, 3
ZERO_UUID = uuid.UUID(int=0)
_INT16 = struct.Struct(">h")


@dataclass(frozen=True)
class OffsetAndMetadata:
    """A committed offset as the coordinator keeps it (Kafka's OffsetAndMetadata)."""
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    topic_id: uuid.UUID = ZERO_UUID


def java_string_hash(text: str) -> int:
    """String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    data = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int) -> int:
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def record_key(record_type: int, message) -> bytes:
    """A coordinator record's key: its int16 type, then the key message at version 0."""
    return _INT16.pack(record_type) + message.encode(0)


def record_value(version: int, message) -> bytes:
    """A coordinator record's value: its int16 version, then the value message."""
    return _INT16.pack(version) + message.encode(version)


def encode_typed(record) -> tuple[bytes, bytes | None]:
    """A KIP-848-era record (type, key message, value message or None for a tombstone) as
    __consumer_offsets holds it: the typed key, and the value at version 0 (the only version
    the consumer, share and streams group records have)."""
    record_type, key, value = record
    return record_key(record_type, key), None if value is None else record_value(0, value)


def decode_typed(classes: dict, record_type: int, key: bytes, value: bytes | None):
    """The record of ``key`` (its type already read) and ``value``: (type, key, value | None),
    ``classes`` giving each type's (key class, value class). Raises DecodeError on bytes that
    do not decode."""
    key_cls, value_cls = classes[record_type]
    decoded_key = key_cls.decode(key[2:], 0)
    if value is None:
        return record_type, decoded_key, None
    if len(value) < 2:
        raise DecodeError(value_cls.NAME, -1, None, 0, "no version")
    return record_type, decoded_key, value_cls.decode(value[2:], int.from_bytes(value[:2], "big", signed=True))


def offset_record(group_id: str, topic: str, partition: int, committed: OffsetAndMetadata) -> tuple[bytes, bytes]:
    value = OffsetCommitValue(offset=committed.offset, leader_epoch=committed.leader_epoch,
                              metadata=committed.metadata, commit_timestamp=committed.commit_timestamp_ms)
    value.topic_id = committed.topic_id
    return (record_key(OFFSET_COMMIT_TYPE, OffsetCommitKey(group=group_id, topic=topic, partition=partition)),
            record_value(OFFSET_COMMIT_VALUE_VERSION, value))


def offset_tombstone(group_id: str, topic: str, partition: int) -> tuple[bytes, None]:
    return record_key(OFFSET_COMMIT_TYPE, OffsetCommitKey(group=group_id, topic=topic, partition=partition)), None


def group_record(group, assignment: dict) -> tuple[bytes, bytes]:
    """A classic group's GroupMetadataValue: its generation, protocol, leader and each member with
    its subscription (its metadata for the chosen protocol) and ``assignment[member id]``."""
    members = [MemberMetadata(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                              client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
                              session_timeout=m.session_timeout_ms, subscription=m.metadata(group.protocol_name),
                              assignment=assignment.get(m.member_id, b""))
               for m in group.members.values()]
    value = GroupMetadataValue(protocol_type=group.protocol_type or "", generation=group.generation_id,
                               protocol=group.protocol_name, leader=group.leader_id,
                               current_state_timestamp=group.state_timestamp_ms, members=members)
    return record_key(GROUP_METADATA_TYPE, GroupMetadataKey(group=group.group_id)), record_value(GROUP_METADATA_VALUE_VERSION, value)


def group_tombstone(group_id: str) -> tuple[bytes, None]:
    return record_key(GROUP_METADATA_TYPE, GroupMetadataKey(group=group_id)), None


def decode_record(key: bytes | None, value: bytes | None):
    """``("offset", OffsetCommitKey, OffsetCommitValue | None)`` or ``("group", GroupMetadataKey,
    GroupMetadataValue | None)``; None for the record types this coordinator does not keep
    (KIP-848's consumer groups, share and streams groups). Raises DecodeError (or ValueError)
    on bytes that do not decode."""
    if key is None or len(key) < 2:
        raise ValueError("a __consumer_offsets record without a key type")
    record_type, = _INT16.unpack_from(key)
    if record_type in (0, OFFSET_COMMIT_TYPE):             # 0: LegacyOffsetCommitKey, the same layout
        kind, key_cls, value_cls = "offset", OffsetCommitKey, OffsetCommitValue
    elif record_type == GROUP_METADATA_TYPE:
        kind, key_cls, value_cls = "group", GroupMetadataKey, GroupMetadataValue
    else:
        return None
    decoded_key = key_cls.decode(key[2:], 0)
    if value is None:
        return kind, decoded_key, None
    if len(value) < 2:
        raise DecodeError(value_cls.NAME, -1, None, 0, "no version")
    version, = _INT16.unpack_from(value)
    return kind, decoded_key, value_cls.decode(value[2:], version)
