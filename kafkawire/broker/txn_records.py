"""The records of ``__transaction_state`` in Kafka 4.3.1's format (TransactionLog): the key is
``int16 0`` (CoordinatorRecordType.TRANSACTION_LOG) + TransactionLogKey v0 (the transactional id),
the value ``int16 version`` + TransactionLogValue, a tombstone (a null value) for an expired id.

The value version follows the cluster's finalized ``transaction.version`` (TransactionVersion.
transactionLogValueVersion): 0 at level 0, 1 (flexible, with the previous and next producer ids
as tagged fields) from level 1. An Empty state has no partitions (none are written). As in Kafka,
the last producer epoch is not kept in the log (a reloaded state has -1).

A transactional id's records go to partition ``abs(transactionalId.hashCode()) %
transaction.state.log.num.partitions`` (Java's String.hashCode), where Kafka puts them.
"""
from __future__ import annotations

import struct

from kafkawire.messages.transaction_log_key import TransactionLogKey
from kafkawire.messages.transaction_log_value import PartitionsSchema, TransactionLogValue
from kafkawire.protocol.errors import DecodeError

from .group_records import partition_for
from .txn_state import EMPTY, STATE_BY_ID, STATE_IDS, TransactionMetadata, TxnTransit

__all__ = ["TRANSACTION_STATE_TOPIC", "txn_key", "txn_value", "decode_txn_record", "partition_for",
           "log_value_version"]

TRANSACTION_STATE_TOPIC = "__transaction_state"
TRANSACTION_LOG_TYPE = 0
_INT16 = struct.Struct(">h")


def log_value_version(transaction_version_level: int) -> int:
    return 1 if transaction_version_level >= 1 else 0


def txn_key(transactional_id: str) -> bytes:
    return _INT16.pack(TRANSACTION_LOG_TYPE) + TransactionLogKey(transactional_id=transactional_id).encode(0)


def txn_value(transit: TxnTransit, transaction_version_level: int) -> bytes:
    """TransactionLog.valueToBytes: partitions grouped by topic (none for Empty)."""
    if transit.state == EMPTY and transit.partitions:
        raise ValueError(f"an Empty transaction state with partitions: {transit}")
    by_topic: dict[str, list[int]] = {}
    if transit.state != EMPTY:
        for topic, partition in sorted(transit.partitions):
            by_topic.setdefault(topic, []).append(partition)
    version = log_value_version(transaction_version_level)
    value = TransactionLogValue(
        producer_id=transit.producer_id, producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.txn_timeout_ms, transaction_status=STATE_IDS[transit.state],
        transaction_last_update_timestamp_ms=transit.txn_last_update_ms,
        transaction_start_timestamp_ms=transit.txn_start_ms,
        transaction_partitions=[PartitionsSchema(topic=t, partition_ids=p) for t, p in by_topic.items()])
    if version >= 1:
        value.previous_producer_id = transit.prev_producer_id
        value.next_producer_id = transit.next_producer_id
        value.client_transaction_version = transit.client_tv      # a tagged field: v0 cannot hold it
    return _INT16.pack(version) + value.encode(version)


def decode_txn_record(key: bytes | None, value: bytes | None) -> tuple[str, TransactionMetadata | None] | None:
    """(transactional id, its state or None for a tombstone); None for a key of another type.
    Raises DecodeError/ValueError on bytes that do not decode."""
    if key is None or len(key) < 2:
        raise ValueError("a __transaction_state record without a key type")
    record_type, = _INT16.unpack_from(key)
    if record_type != TRANSACTION_LOG_TYPE:
        return None
    transactional_id = TransactionLogKey.decode(key[2:], 0).transactional_id
    if value is None:
        return transactional_id, None
    if len(value) < 2:
        raise DecodeError(TransactionLogValue.NAME, -1, None, 0, "no version")
    version, = _INT16.unpack_from(value)
    if version not in (0, 1):
        raise ValueError(f"unknown TransactionLogValue version {version}")
    v = TransactionLogValue.decode(value[2:], version)
    state = STATE_BY_ID.get(v.transaction_status)
    if state is None:
        raise ValueError(f"Unknown transaction state id {v.transaction_status} from the transaction status message")
    partitions = set() if state == EMPTY else {(p.topic, i) for p in v.transaction_partitions for i in p.partition_ids}
    return transactional_id, TransactionMetadata(
        transactional_id, v.producer_id, prev_producer_id=v.previous_producer_id,
        next_producer_id=v.next_producer_id, producer_epoch=v.producer_epoch,
        txn_timeout_ms=v.transaction_timeout_ms, state=state, partitions=partitions,
        txn_start_ms=v.transaction_start_timestamp_ms, txn_last_update_ms=v.transaction_last_update_timestamp_ms,
        client_tv=v.client_transaction_version)
