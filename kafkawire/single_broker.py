"""The settings a one-broker cluster needs besides Kafka's defaults, shared by the embedded broker
for tests (kafkawire.testing) and the main job's combined node (kafkawire.tools.main_broker).

A single broker cannot hold Kafka's default 3 replicas of __consumer_offsets,
__transaction_state or __share_group_state (FindCoordinator would answer
COORDINATOR_NOT_AVAILABLE for ever), and a test or a demonstration wants its group at once rather
than after the 3 s initial rebalance delay: the settings Kafka's own single-broker setups use.
A leaf of the import layers (tests/test_layering.py), standard library only: kafkawire.testing
is imported in every pytest run of its users.
"""
from __future__ import annotations

SINGLE_BROKER_PROPERTIES: dict[str, str] = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.num.partitions": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "share.coordinator.state.topic.min.isr": "1",
}
