"""KIP-890's verification of a transactional batch before it is appended (Kafka's
AddPartitionsToTxnManager and ReplicaManager's verification callback), answered by this node's
transaction coordinator in process.

    errors = await verify_api.verify("tx", producer_id, epoch, [("orders", 0)], produce_version=12)
    # {("orders", 0): Errors.NONE}: append it; another code: answer the partition with it

How a partition is checked depends on what the client's request version supports (Kafka's
TransactionSupportedOperation): Produce v12+ (TxnOffsetCommit v5+) is transaction.version 2, and
the partition is added to the transaction (AddPartitionsToTxn with verifyOnly false); older
versions only check that the partition was added (verifyOnly), a missing one being
TRANSACTION_ABORTABLE (Produce v11, TxnOffsetCommit v4) or INVALID_TXN_STATE (older).
PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH. These are AddPartitionsToTxnManager's rules;
the produce path then translates the coordinator's retriable errors as ReplicaManager does
(kafkawire.broker.txn_verification: NOT_ENOUGH_REPLICAS and Kafka's messages).

Called without ``produce_version`` (or ``operation``) the partitions are only checked, with
Produce v11's rules (a caller that does not say which version it serves gets no implicit add).
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors

__all__ = ["VerifyApi", "DEFAULT_ERROR", "GENERIC_ERROR_SUPPORTED", "ADD_PARTITION", "produce_operation",
           "txn_offset_commit_operation"]

DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED, ADD_PARTITION = "defaultError", "genericErrorSupported", "addPartition"


def produce_operation(version: int) -> str:
    return ADD_PARTITION if version > 11 else GENERIC_ERROR_SUPPORTED if version > 10 else DEFAULT_ERROR


def txn_offset_commit_operation(version: int) -> str:
    return ADD_PARTITION if version > 4 else GENERIC_ERROR_SUPPORTED if version > 3 else DEFAULT_ERROR


class VerifyApi:
    def __init__(self, coordinator):
        self.coordinator = coordinator        # kafkawire.broker.txn_coordinator.TransactionCoordinator

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions, *,
                     produce_version: int | None = None, operation: str | None = None) -> dict:
        """(topic, partition) -> error code (NONE: verified)."""
        if operation is None:
            operation = GENERIC_ERROR_SUPPORTED if produce_version is None else produce_operation(produce_version)
        partitions = list(partitions)
        if operation == ADD_PARTITION:
            code = self.coordinator.add_partitions(transactional_id, producer_id, producer_epoch, set(partitions), 2)
            codes = dict.fromkeys(partitions, code)
        else:
            codes = self.coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
        return {tp: self._client_code(code, operation) for tp, code in codes.items()}

    @staticmethod
    def _client_code(code: int, operation: str) -> int:
        if code == Errors.PRODUCER_FENCED:
            return Errors.INVALID_PRODUCER_EPOCH
        if code == Errors.TRANSACTION_ABORTABLE and operation == DEFAULT_ERROR:
            return Errors.INVALID_TXN_STATE
        return code
