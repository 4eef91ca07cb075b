"""``__transaction_state`` on a combined node: created through the active controller when a
FindCoordinator(TRANSACTION) first needs it (as Kafka's AutoTopicCreationManager creates it),
with Kafka's topic configs (TransactionStateManager.transactionTopicConfigs); each partition's
records replayed when the broker starts leading it (its transactional ids are
COORDINATOR_LOAD_IN_PROGRESS meanwhile), and the coordinator's records appended to it.

    store = TransactionStateTopic(broker, loader)       # the machinery of kafkawire.broker.group_log
    loader = TxnLoader(coordinator, resume=...)         # replays records; after a partition's load,
                                                        # completes the transactions in PrepareX

The replication factor is ``transaction.state.log.replication.factor`` as configured (Kafka
does not lower it to the number of brokers: a single node needs it set to 1, and until then
FindCoordinator answers COORDINATOR_NOT_AVAILABLE and the broker logs the controller's
INVALID_REPLICATION_FACTOR).
"""
from __future__ import annotations

import logging

from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig

from kafkawire.protocol.error_codes import Errors

from .coordinator_acks import not_enough_replicas
from .group_log import OffsetsTopic
from .group_records import partition_for
from .txn_records import TRANSACTION_STATE_TOPIC, decode_txn_record
from .txn_state import PREPARE_ABORT, PREPARE_COMMIT

__all__ = ["TransactionStateTopic", "TxnLoader"]

log = logging.getLogger(__name__)


class TransactionStateTopic(OffsetsTopic):
    TOPIC = TRANSACTION_STATE_TOPIC

    def creatable_topic(self, c) -> CreatableTopic:
        return CreatableTopic(
            name=self.TOPIC, num_partitions=c.transaction_state_log_num_partitions,
            replication_factor=c.transaction_state_log_replication_factor, assignments=[], configs=[
                CreatableTopicConfig(name="unclean.leader.election.enable", value="false"),
                CreatableTopicConfig(name="compression.type", value="uncompressed"),
                CreatableTopicConfig(name="cleanup.policy", value="compact"),
                CreatableTopicConfig(name="min.insync.replicas", value=str(c.transaction_state_log_min_isr)),
                CreatableTopicConfig(name="segment.bytes", value=str(c.transaction_state_log_segment_bytes))])

    def unload(self, index: int) -> None:
        """TransactionCoordinator.onResignation: the partition's transactions are dropped (their
        pending markers no longer sent) when this broker stops leading it, and before it is
        loaded again (records staged by a load cut short included), so a write the new leader
        never had is not found when the partition comes back (OffsetsTopic.unload)."""
        self.offsets.unload(self.keys_of(index))

    def append(self, transactional_id: str, records: list) -> int:
        """appendTransactionToLog (acks=-1): refused before the append when the partition's ISR is
        under its effective min ISR (NOT_ENOUGH_REPLICAS, answered COORDINATOR_NOT_AVAILABLE)."""
        image = self.broker.image()
        count = self.partitions(image)
        partition = self.broker.partitions.get((self.TOPIC, partition_for(transactional_id, count))) if count else None
        if partition is not None and partition.replicas is not None and not_enough_replicas(
                partition, self.broker.topic_configs.produce_settings(image, self.TOPIC).min_insync_replicas):
            return Errors.COORDINATOR_NOT_AVAILABLE
        return self.persist(transactional_id, records)


class TxnLoader:
    """What OffsetsTopic's loading calls (``replay``, ``after_load``), for the transaction
    coordinator: the records are staged and take effect when their partition is loaded;
    transactions found in PrepareCommit/PrepareAbort get their markers written (``resume``),
    as Kafka's loadTransactionsForTxnTopicPartition does."""

    def __init__(self, coordinator, *, resume):
        self.coordinator = coordinator
        self.resume = resume               # (metadata) -> None
        self.staged: dict = {}

    def replay(self, key, value) -> None:
        decoded = decode_txn_record(key, value)
        if decoded is None:
            return
        transactional_id, metadata = decoded
        self.staged[transactional_id] = metadata          # None: a tombstone (the id expired)

    def unload(self, here) -> None:
        """Drop the staged records and the transactions of the ids ``here(id)`` names."""
        self.staged = {t: m for t, m in self.staged.items() if not here(t)}
        self.coordinator.unload(here)

    def after_load(self, loaded_here) -> None:
        ids = [t for t in self.staged if loaded_here(t)]
        for transactional_id in ids:
            metadata = self.staged.pop(transactional_id)
            if metadata is None:
                self.coordinator.txns.pop(transactional_id, None)
            else:
                self.coordinator.txns[transactional_id] = metadata
        for transactional_id in ids:
            metadata = self.coordinator.txns.get(transactional_id)
            if metadata is not None and metadata.state in (PREPARE_COMMIT, PREPARE_ABORT):
                log.info("Completing %s's transaction in %s after loading", transactional_id, metadata.state)
                self.resume(metadata)
