"""A kafkawire broker-only node (process.roles=broker) on an Apache Kafka 4.3.1 controller (issue
29): it follows Kafka's metadata log as a raft observer, registers with Kafka's active controller
and is unfenced; kafka-python creates a topic through it (forwarded to Kafka's controller),
produces and consumes in a group; DescribeQuorum at Kafka's controller lists it as an observer,
never a voter. One Kafka JVM (the controller), one kafkawire process; every wait bounded."""
from __future__ import annotations

import asyncio
import time

import pytest

from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.raft.node.local_quorum import LocalQuorum, describe_quorum
from kafkawire.storage.state_files import random_uuid, uuid_to_kafka
from tests.broker.wire import call

kafka = pytest.importorskip("kafka")

KAFKA_CONTROLLER, BROKER = 9, 1
WAIT_S = 90


def test_a_kafkawire_broker_only_node_serves_clients_on_a_kafka_controller(kafka_controller, tmp_path):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    cluster_id = uuid_to_kafka(random_uuid())
    controller = kafka_controller(KAFKA_CONTROLLER, cluster_id, "--standalone", properties={
        "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"})
    # voters=0: LocalQuorum's one node is the broker (node 1), formatted --no-initial-controllers.
    quorum = LocalQuorum(tmp_path / "kafkawire", voters=0, extra_nodes=1, cluster_id=cluster_id, properties={
        "process.roles": "broker", "listeners": "PLAINTEXT://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.quorum.bootstrap.servers": controller.controller_address,
        "broker.heartbeat.interval.ms": "500", "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"})
    quorum.properties["listeners"] = f"PLAINTEXT://127.0.0.1:{quorum.ports[BROKER]}"
    bootstrap = f"127.0.0.1:{quorum.ports[BROKER]}"
    began = time.monotonic()
    quorum.format()
    quorum.start(BROKER)
    try:
        def unfenced():
            quorum._check_alive([BROKER])
            try:
                response = call(bootstrap, DescribeClusterRequest(include_cluster_authorized_operations=False),
                                timeout_ms=2000)
            except Exception:              # not listening yet
                return False
            return [b.broker_id for b in response.brokers] == [BROKER]
        quorum.wait_until(unfenced, WAIT_S, "the kafkawire broker to be unfenced by Kafka's controller")
        print(f"\nkafkawire broker unfenced by Kafka's controller {time.monotonic() - began:.1f} s after format")

        view = asyncio.run(describe_quorum(("127.0.0.1", controller.controller_port)))
        assert [v.replica_id for v in view.voters] == [KAFKA_CONTROLLER]
        assert [o.replica_id for o in view.observers] == [BROKER]

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
        try:
            admin.create_topics([NewTopic("orders", num_partitions=2, replication_factor=1)])
        finally:
            admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        sent = [producer.send("orders", value=b"v%d" % i, partition=i % 2) for i in range(20)]
        assert all(f.get(timeout=60).offset >= 0 for f in sent)
        producer.close(timeout=10)
        consumer = KafkaConsumer("orders", bootstrap_servers=bootstrap, group_id="readers",
                                 auto_offset_reset="earliest", consumer_timeout_ms=1000)
        got: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < 20 and time.monotonic() < deadline:
            got += [m.value for m in consumer]
        consumer.close()
        assert sorted(got) == sorted(b"v%d" % i for i in range(20))
        assert quorum.stop(BROKER) == 0          # controlled shutdown, answered by Kafka's controller
        assert "the controller has allowed us to shut down" in quorum.log_tail(BROKER, 40)
    except BaseException:
        print(f"--- kafkawire broker log tail\n{quorum.log_tail(BROKER, 40)}")
        raise
    finally:
        quorum.kill(BROKER)
