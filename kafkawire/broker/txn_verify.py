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
PRODUCER_FENCED is answered INVALID_PRODUCER_EPOCH. For Produce, the coordinator errors a client
may not retry become NOT_ENOUGH_REPLICAS (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR, and CONCURRENT_TRANSACTIONS before transaction.version 2), as ReplicaManager
translates them; Kafka's messages for these: ``verification_message(code)``.

Without ``produce_version`` or ``operation`` the coordinator's answer is returned as is (the
verifyOnly AddPartitionsToTxn answer).
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors

__all__ = ["VerifyApi", "DEFAULT_ERROR", "GENERIC_ERROR_SUPPORTED", "ADD_PARTITION", "produce_operation",
           "txn_offset_commit_operation", "verification_message"]

DEFAULT_ERROR, GENERIC_ERROR_SUPPORTED, ADD_PARTITION = "defaultError", "genericErrorSupported", "addPartition"
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset((Errors.NETWORK_EXCEPTION, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                                           Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR))


def produce_operation(version: int) -> str:
    return ADD_PARTITION if version > 11 else GENERIC_ERROR_SUPPORTED if version > 10 else DEFAULT_ERROR


def txn_offset_commit_operation(version: int) -> str:
    return ADD_PARTITION if version > 4 else GENERIC_ERROR_SUPPORTED if version > 3 else DEFAULT_ERROR


def verification_message(code: int, underlying: int | None = None) -> str | None:
    """The exception message Kafka's produce answer carries for a verification failure."""
    if code == Errors.INVALID_TXN_STATE:
        return "Partition was not added to the transaction"
    if code == Errors.NOT_ENOUGH_REPLICAS and underlying is not None:
        return ("Unable to verify the partition has been added to the transaction. Underlying error: "
                f"{Errors.for_code(underlying).name}")
    return None


class VerifyApi:
    def __init__(self, coordinator):
        self.coordinator = coordinator        # kafkawire.broker.txn_coordinator.TransactionCoordinator

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions, *,
                     produce_version: int | None = None, operation: str | None = None) -> dict:
        """(topic, partition) -> error code (NONE: verified)."""
        if operation is None and produce_version is not None:
            operation = produce_operation(produce_version)
        partitions = list(partitions)
        if operation == ADD_PARTITION:
            code = self.coordinator.add_partitions(transactional_id, producer_id, producer_epoch, set(partitions), 2)
            codes = dict.fromkeys(partitions, code)
        else:
            codes = self.coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
        if operation is None:
            return codes
        return {tp: self._client_code(code, operation, produce_version is not None) for tp, code in codes.items()}

    @staticmethod
    def _client_code(code: int, operation: str, for_produce: bool) -> int:
        if code == Errors.PRODUCER_FENCED:
            return Errors.INVALID_PRODUCER_EPOCH
        if code == Errors.TRANSACTION_ABORTABLE and operation == DEFAULT_ERROR:
            return Errors.INVALID_TXN_STATE
        if for_produce and (code in _RETRY_AS_NOT_ENOUGH_REPLICAS or
                            (code == Errors.CONCURRENT_TRANSACTIONS and operation != ADD_PARTITION)):
            return Errors.NOT_ENOUGH_REPLICAS
        return code
