"""A broker-only kafkawire node (process.roles=broker) on a kafkawire controller quorum, as Kafka
operators run brokers: one `kafkawire server-start` controller (process.roles=controller) and
one broker-only node, subprocesses on free ports of 127.0.0.1. The broker follows the metadata
log as a raft observer (never a voter), registers with the active controller over the network
and is unfenced, serves kafka-python's produce and consume, and keeps its data and metadata
across a restart. One quorum for the whole module (killed by pid at teardown).
"""
from __future__ import annotations

import os
import time

import pytest

from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum
from kafkawire.records import iter_batches
from kafkawire.storage.state_files import read_meta_properties

from .wire import call

kafka = pytest.importorskip("kafka")

WAIT_S = 60
CONTROLLER, BROKER = 1, 2


class Cluster:
    """The controller (node 1) and the broker-only node (node 2, its listener on its port)."""

    def __init__(self, quorum: LocalQuorum):
        self.quorum = quorum
        self.broker = ("127.0.0.1", quorum.ports[BROKER])
        self.bootstrap = f"127.0.0.1:{quorum.ports[BROKER]}"

    def call(self, request, api_version=None, timeout_ms=10_000):
        return call(self.broker, request, api_version, timeout_ms=timeout_ms)

    def unfenced_brokers(self) -> list[int]:
        """DescribeCluster lists a broker once it is registered and unfenced."""
        self.quorum._check_alive([CONTROLLER, BROKER])
        try:
            response = self.call(DescribeClusterRequest(include_cluster_authorized_operations=False), timeout_ms=2000)
        except Exception:                      # not listening yet, or the connection reset
            return []
        return [b.broker_id for b in response.brokers]

    def wait_unfenced(self) -> None:
        self.quorum.wait_until(lambda: self.unfenced_brokers() == [BROKER], WAIT_S,
                               "the broker-only node to register and be unfenced")

    def leaders(self, topic: str) -> list[int]:
        response = self.call(MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                             allow_auto_topic_creation=False), api_version=12)
        return [p.leader_id for t in response.topics for p in sorted(t.partitions, key=lambda p: p.partition_index)]

    def fetch_values(self, topic: str, partition: int) -> list[bytes]:
        response = self.call(FetchRequest(
            replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
            session_epoch=-1, topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                partition=partition, fetch_offset=0, current_leader_epoch=-1, log_start_offset=-1,
                partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id=""), api_version=12)
        data = response.responses[0].partitions[0]
        assert data.error_code == Errors.NONE
        return [bytes(r.value) for batch in iter_batches(bytes(data.records or b"")) for r in batch]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    quorum = LocalQuorum(tmp_path_factory.mktemp("broker-only"), voters=1, extra_nodes=1, properties={
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        # A restarted broker waits for its previous session to end: keep it short here.
        "broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300",
        "controller.quorum.election.timeout.ms": "200",     # one voter: no need to wait for others
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
    })
    quorum.node_properties[BROKER] = {"process.roles": "broker",
                                      "listeners": f"PLAINTEXT://127.0.0.1:{quorum.ports[BROKER]}"}
    quorum.format(mode="standalone")      # node 1 the one voter; node 2 --no-initial-controllers
    quorum.start(CONTROLLER)
    quorum.start(BROKER)
    try:
        c = Cluster(quorum)
        c.wait_unfenced()
        yield c
    finally:
        for node_id in (BROKER, CONTROLLER):
            quorum.kill(node_id)


def test_the_broker_only_node_is_an_observer_of_the_quorum_never_a_voter(cluster):
    """DescribeQuorum at the controller: the broker fetches the metadata log as an observer with
    its metadata directory's id; the voters are the controller alone."""
    view = cluster.quorum.wait_until(
        lambda: (lambda v: v if [o.replica_id for o in v.observers] == [BROKER] else None)(
            cluster.quorum.describe(CONTROLLER)), WAIT_S, "the broker among the observers")
    assert [v.replica_id for v in view.voters] == [CONTROLLER]
    assert view.leader_id == CONTROLLER
    assert [n.node_id for n in view.nodes] == [CONTROLLER]      # the broker has no controller endpoint
    observer, = view.observers
    meta = read_meta_properties(os.path.join(cluster.quorum.data_dir(BROKER), "meta.properties"))
    assert observer.replica_directory_id == meta.directory_id


def test_kafka_python_creates_produces_and_consumes_through_the_broker_only_node(cluster):
    """CreateTopics is forwarded to the active controller; the committed topic reaches the
    broker's image, which leads its partitions; a producer's records come back to a consumer
    group (its __consumer_offsets created through the controller too)."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic("orders", num_partitions=2, replication_factor=1)])
    finally:
        admin.close()
    cluster.quorum.wait_until(lambda: cluster.leaders("orders") == [BROKER, BROKER], WAIT_S, "leaders of orders")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", linger_ms=5)
    sent = [producer.send("orders", value=b"v%d" % i, partition=i % 2) for i in range(20)]
    assert all(f.get(timeout=30).offset >= 0 for f in sent)
    producer.close(timeout=10)
    consumer = KafkaConsumer("orders", bootstrap_servers=cluster.bootstrap, group_id="readers",
                             auto_offset_reset="earliest", consumer_timeout_ms=1000)
    got: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < 20 and time.monotonic() < deadline:
        got += [m.value for m in consumer]
    consumer.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(20))


def test_a_restarted_broker_only_node_keeps_its_data_and_metadata(cluster):
    """SIGTERM (controlled shutdown while the controller runs), start again: the node registers
    anew, is unfenced, and serves the records it had, from its own log directory."""
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic("kept", num_partitions=1, replication_factor=1)])
    finally:
        admin.close()
    cluster.quorum.wait_until(lambda: cluster.leaders("kept") == [BROKER], WAIT_S, "the leader of kept")
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks=1)
    for i in range(5):
        producer.send("kept", value=b"k%d" % i).get(timeout=30)
    producer.close(timeout=10)
    assert cluster.quorum.stop(BROKER) == 0
    assert "the controller has allowed us to shut down" in cluster.quorum.log_tail(BROKER, 40)
    cluster.quorum.start(BROKER)
    cluster.wait_unfenced()
    cluster.quorum.wait_until(lambda: cluster.leaders("kept") == [BROKER], WAIT_S, "the leader of kept again")
    assert cluster.fetch_values("kept", 0) == [b"k%d" % i for i in range(5)]
    assert [v.replica_id for v in cluster.quorum.describe(CONTROLLER).voters] == [CONTROLLER]
