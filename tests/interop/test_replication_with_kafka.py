"""Replication between a kafkawire broker and a real Apache Kafka 4.3.1 broker (issue 29, slice 4,
follower side): one combined kafkawire node (id 1, process.roles=broker,controller, the only
controller) and one Kafka broker (id 2) on it. Partition ``kafka-leads`` (replicas [2, 1]) is led by
Kafka and followed by kafkawire's replica fetcher; ``kafkawire-leads`` (replicas [1, 2]) the other
way round. After three produces to each leader, each follower's first segment holds the leader's
bytes, byte for byte: kafkawire's Fetch (ReplicaState, session-less) is one Kafka's leader serves,
and kafkawire's answers are ones Kafka's ReplicaFetcherThread appends. One JVM; the timings are
printed."""
from __future__ import annotations

import glob
import time

from kafkawire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import free_ports
from kafkawire.records.builder import build_batch

from tests.broker.wire import call
from tests.interop.kafka_on_kafkawire import KafkaOnKafkawire

WAIT_S = 60


def _segment(root, topic: str) -> bytes | None:
    found = glob.glob(f"{root}/**/{topic}-0/{0:020d}.log", recursive=True)
    if not found:
        return None
    with open(found[0], "rb") as f:
        return f.read()


def _produce(target, topic: str) -> None:
    for n in range(3):
        records = build_batch([(b"k%d-%d" % (n, i), b"v" * (40 + i)) for i in range(4)])
        response = call(target, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name=topic, partition_data=[PartitionProduceData(index=0, records=records)])]), 9)
        assert response.responses[0].partition_responses[0].error_code == Errors.NONE


def test_kafkawire_and_kafka_follow_each_other_byte_for_byte(kafka_libs, tmp_path):
    port, = free_ports(1)
    cluster = KafkaOnKafkawire(tmp_path, controllers=1, brokers=1, controller_properties={
        "process.roles": "broker,controller", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "replica.fetch.backoff.ms": "200", "offsets.topic.replication.factor": "1"})
    cluster.quorum.node_properties[1] = {"listeners": f"PLAINTEXT://127.0.0.1:{port},"
                                                      f"CONTROLLER://127.0.0.1:{cluster.quorum.ports[1]}"}
    ours = ("127.0.0.1", port)
    began = time.monotonic()
    try:
        cluster.start(timeout_s=120)
        cluster.wait_until(lambda: set(cluster.describe_cluster()) == {1, 2}, WAIT_S, "both brokers unfenced")
        response = call(ours, CreateTopicsRequest(timeout_ms=10_000, topics=[
            CreatableTopic(name=name, num_partitions=-1, replication_factor=-1,
                           assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=replicas)])
            for name, replicas in (("kafka-leads", [2, 1]), ("kafkawire-leads", [1, 2]))]))
        assert [t.error_code for t in response.topics] == [Errors.NONE, Errors.NONE]
        host, kafka_port = cluster.brokers[2].broker_address.rsplit(":", 1)
        kafka_root, ours_root = tmp_path / "broker-2", tmp_path / "kafkawire"
        cluster.wait_until(lambda: _segment(kafka_root, "kafka-leads") is not None
                           and _segment(ours_root, "kafkawire-leads") is not None, WAIT_S, "both leaders' logs")
        cluster.wait_until(lambda: _try_produce((host, int(kafka_port)), "kafka-leads"), WAIT_S, "Kafka to lead")
        cluster.wait_until(lambda: _try_produce(ours, "kafkawire-leads"), WAIT_S, "kafkawire to lead")
        for topic in ("kafka-leads", "kafkawire-leads"):
            cluster.wait_until(lambda: _segment(kafka_root, topic) == _segment(ours_root, topic), WAIT_S,
                               f"the follower of {topic} to hold the leader's bytes")
            assert len(_segment(kafka_root, topic)) > 0
        print(f"replication with Kafka: {time.monotonic() - began:.1f} s ({cluster.timings})")
    finally:
        cluster.stop()


def _try_produce(target, topic: str) -> bool:
    """The three produces, once the leader accepts them (its metadata may lag the creation)."""
    try:
        _produce(target, topic)
        return True
    except AssertionError:
        return False
