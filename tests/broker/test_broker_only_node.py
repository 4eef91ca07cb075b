"""A broker-only kafkawire node (process.roles=broker) on a kafkawire controller quorum, as Kafka
operators run brokers: one `kafkawire server-start` controller (process.roles=controller) and
one broker-only node, subprocesses on free ports of 127.0.0.1. The broker follows the metadata
log as a raft observer (never a voter), registers with the active controller over the network
and is unfenced, serves kafka-python's produce and consume, and keeps its data and metadata
across a restart. One quorum for the whole module (killed by pid at teardown).
"""
from __future__ import annotations

import os
import re

import pytest

from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum
from kafkawire.records import iter_batches
from kafkawire.storage.state_files import read_meta_properties

from .kafka_python_roundtrip import consume_in_group, create_topic, produce_records
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
    def with_the_broker_observing():
        view = cluster.quorum.describe(CONTROLLER)
        return view if [o.replica_id for o in view.observers] == [BROKER] else None
    view = cluster.quorum.wait_until(with_the_broker_observing, WAIT_S, "the broker among the observers")
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
    create_topic(cluster.bootstrap, "orders", partitions=2)
    cluster.quorum.wait_until(lambda: cluster.leaders("orders") == [BROKER, BROKER], WAIT_S, "leaders of orders")
    sent = produce_records(cluster.bootstrap, "orders", 20, partitions=2)
    assert sorted(consume_in_group(cluster.bootstrap, "orders", 20, "readers")) == sorted(sent)


def test_a_restarted_broker_only_node_keeps_its_data_and_metadata(cluster):
    """SIGTERM (controlled shutdown while the controller runs), start again: the node starts from
    the metadata log it kept, registers anew, is unfenced, and serves the records it had, from
    its own log directory."""
    create_topic(cluster.bootstrap, "kept", partitions=1)
    cluster.quorum.wait_until(lambda: cluster.leaders("kept") == [BROKER], WAIT_S, "the leader of kept")
    sent = produce_records(cluster.bootstrap, "kept", 5, partitions=1)
    assert cluster.quorum.stop(BROKER) == 0
    assert "the controller has allowed us to shut down" in cluster.quorum.log_tail(BROKER, 40)
    cluster.quorum.start(BROKER)
    cluster.wait_unfenced()
    started = re.findall(r"node 2 started: \w+, log (\d+)\.\.(\d+)", open(cluster.quorum.log_path(BROKER)).read())
    assert len(started) == 2 and int(started[1][1]) > 0, started     # the second start had the log
    cluster.quorum.wait_until(lambda: cluster.leaders("kept") == [BROKER], WAIT_S, "the leader of kept again")
    assert cluster.fetch_values("kept", 0) == sent
    assert [v.replica_id for v in cluster.quorum.describe(CONTROLLER).voters] == [CONTROLLER]
