"""KIP-890 at the transaction coordinator: AddPartitionsToTxn's handling of one transaction
(``add_or_verify``), as the coordinator answers a client's request (v0-v3) or a broker's
verification (v4+, kafkawire.broker.txn_verify_routing sends them), and which operation a
client's request version allows.

How a partition is checked depends on what the client's request version supports (Kafka's
TransactionSupportedOperation): Produce v12+ (TxnOffsetCommit v5+) is transaction.version 2, and
the partition is added to the transaction (AddPartitionsToTxn with verifyOnly false); older
versions only check that the partition was added (verifyOnly), a missing one being
TRANSACTION_ABORTABLE (Produce v11, TxnOffsetCommit v4) or INVALID_TXN_STATE (older; the
verifying broker maps it, kafkawire.broker.txn_verify_routing).

    result = add_or_verify(coordinator, image, transaction, api_version)   # an AddPartitionsToTxnResult
"""
from __future__ import annotations

from kafkawire.messages.add_partitions_to_txn_response import (AddPartitionsToTxnPartitionResult,
                                                               AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult)
from kafkawire.protocol.error_codes import Errors

__all__ = ["DEFAULT_ERROR", "GENERIC_ERROR_SUPPORTED", "ADD_PARTITION", "produce_operation",
           "txn_offset_commit_operation", "add_or_verify"]

DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED, ADD_PARTITION = "defaultError", "genericErrorSupported", "addPartition"


def produce_operation(version: int) -> str:
    return ADD_PARTITION if version > 11 else GENERIC_ERROR_SUPPORTED if version > 10 else DEFAULT_ERROR


def txn_offset_commit_operation(version: int) -> str:
    return ADD_PARTITION if version > 4 else GENERIC_ERROR_SUPPORTED if version > 3 else DEFAULT_ERROR


def add_or_verify(coordinator, image, transaction, version: int) -> AddPartitionsToTxnResult:
    """One transaction of an AddPartitionsToTxn request (``transaction``: transactional_id,
    producer_id, producer_epoch, verify_only, topics) answered by ``coordinator`` (a
    kafkawire.broker.txn_coordinator.TransactionCoordinator); v4+ adds under transaction.version 2."""
    transactional_id, producer_id, epoch = transaction.transactional_id, transaction.producer_id, \
        transaction.producer_epoch
    wanted = [(t.name, p) for t in transaction.topics for p in t.partitions]
    unknown = {tp for tp in wanted if not _exists(image, *tp)}
    if unknown:
        codes = {tp: Errors.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else Errors.OPERATION_NOT_ATTEMPTED
                 for tp in wanted}
    elif transaction.verify_only:
        codes = coordinator.verify_partitions(transactional_id, producer_id, epoch, wanted)
    else:
        code = coordinator.add_partitions(transactional_id, producer_id, epoch, set(wanted), 2 if version > 3 else 0)
        if version < 2 and code == Errors.PRODUCER_FENCED:
            code = Errors.INVALID_PRODUCER_EPOCH
        codes = dict.fromkeys(wanted, code)
    return _result(transactional_id, codes)


def _exists(image, topic: str, partition: int) -> bool:
    found = None if image is None else image.topics_by_name.get(topic)
    return found is not None and partition in found.partitions


def _result(transactional_id: str, codes: dict) -> AddPartitionsToTxnResult:
    by_topic: dict[str, list] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(AddPartitionsToTxnPartitionResult(
            partition_index=partition, partition_error_code=code))
    return AddPartitionsToTxnResult(transactional_id=transactional_id, topic_results=[
        AddPartitionsToTxnTopicResult(name=t, results_by_partition=r) for t, r in by_topic.items()])
