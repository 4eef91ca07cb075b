"""Transactions across three kafkawire brokers, on the wire: a transaction writing to partitions
led by every broker commits, and a read_committed consumer reads it. Each leader verifies its
partition with the transaction's coordinator (KIP-890) wherever that coordinator runs: before
kafkawire.broker.txn_verify_routing a leader asked its own in-process coordinator, and every
partition not led by the coordinator's broker was refused until the producer's delivery timeout.
"""
from __future__ import annotations

import pytest

from kafkawire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.protocol.error_codes import Errors

from .test_replication_follower_wire import NODES, WAIT_S, three_combined_nodes
from .wire import call

confluent_kafka = pytest.importorskip("confluent_kafka")
QUIET = {"log_level": 3}


def _leaders(broker, topic: str) -> dict[int, int]:
    response = call(broker, MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                            allow_auto_topic_creation=False), 12)
    return {p.partition_index: p.leader_id for p in response.topics[0].partitions
            if p.error_code == Errors.NONE and p.leader_id > 0}


def test_a_transaction_over_partitions_led_by_every_broker_commits(tmp_path):
    with three_combined_nodes(tmp_path) as (quorum, brokers):
        # partition i's replicas start with broker i + 1: each broker leads one
        response = call(brokers[1], CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name="spread", num_partitions=-1, replication_factor=-1, configs=[], assignments=[
                CreatableReplicaAssignment(partition_index=i, broker_ids=[NODES[(i + k) % 3] for k in range(3)])
                for i in range(3)])]))
        assert [t.error_code for t in response.topics] == [Errors.NONE]
        leaders = quorum.wait_until(lambda: (lambda m: m if len(m) == 3 else None)(_leaders(brokers[1], "spread")),
                                    WAIT_S, "a leader for every partition")
        assert len(set(leaders.values())) > 1          # so at least one is led away from the coordinator
        bootstrap = ",".join(f"{h}:{p}" for h, p in brokers.values())
        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": "spread-txn",
                                             "message.timeout.ms": 15_000, **QUIET})
        producer.init_transactions(30)
        producer.begin_transaction()
        for partition in range(3):
            producer.produce("spread", f"v{partition}".encode(), partition=partition)
        producer.commit_transaction(30)            # raises (a message timed out) when a leader cannot verify

        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "spread-reader",
                                             "isolation.level": "read_committed", "auto.offset.reset": "earliest",
                                             "enable.auto.commit": False, **QUIET})
        consumer.assign([confluent_kafka.TopicPartition("spread", i, 0) for i in range(3)])
        read: dict[int, bytes] = {}

        def all_read() -> bool:
            for message in consumer.consume(10, 0.5):
                if message.error() is None:
                    read.setdefault(message.partition(), message.value())
            return len(read) == 3
        try:
            quorum.wait_until(all_read, WAIT_S, "the committed values to be read")
        finally:
            consumer.close()
        assert read == {i: f"v{i}".encode() for i in range(3)}
