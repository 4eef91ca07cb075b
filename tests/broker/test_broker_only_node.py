"""Broker-only kafkawire nodes (process.roles=broker) on a kafkawire controller quorum, as Kafka
operators run brokers: one `kafkawire server-start` controller (process.roles=controller) and
two broker-only nodes, subprocesses on free ports of 127.0.0.1. Each broker follows the metadata
log as a raft observer (never a voter), registers with the active controller over the network
and is unfenced; together they serve kafka-python's produce (a topic of two replicas, in sync on
both) and group consume; a restarted broker keeps its data and its metadata log; each writes
its raft metrics file, and node 3, started with --max-api-versions, advertises no more than it was
told. One quorum for the whole module (killed by pid at teardown).
"""
from __future__ import annotations

import json
import os
import re
import urllib.request

import pytest

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from kafkawire.records import iter_batches
from kafkawire.storage.state_files import read_meta_properties

from .kafka_python_roundtrip import consume_in_group, create_topic, produce_records
from .wire import call

kafka = pytest.importorskip("kafka")

WAIT_S = 60
CONTROLLER, BROKERS = 1, [2, 3]
PROMETHEUS_REPORTER = "kafkawire.metrics.PrometheusReporter"
LIST_GROUPS, CAPPED_LIST_GROUPS = 16, 3
# node 3's server-start flags (kept for its restart): ListGroups advertised up to v3 only
START_ARGS = {2: (), 3: ("--max-api-versions", f"{LIST_GROUPS}:{CAPPED_LIST_GROUPS}")}


class Cluster:
    """The controller (node 1) and the broker-only nodes (2 and 3, each listening on its port)."""

    def __init__(self, quorum: LocalQuorum, metrics_ports: dict[int, int]):
        self.quorum = quorum
        self.metrics_ports = metrics_ports
        self.bootstrap = ",".join(f"127.0.0.1:{quorum.ports[i]}" for i in BROKERS)

    def call(self, broker: int, request, api_version=None, timeout_ms=10_000):
        return call(self.quorum.address(broker), request, api_version, timeout_ms=timeout_ms)

    def unfenced_brokers(self, asked: int) -> list[int]:
        """DescribeCluster lists a broker once it is registered and unfenced."""
        self.quorum._check_alive([CONTROLLER, *BROKERS])
        try:
            response = self.call(asked, DescribeClusterRequest(include_cluster_authorized_operations=False),
                                 timeout_ms=2000)
        except Exception:                      # not listening yet, or the connection reset
            return []
        return [b.broker_id for b in response.brokers]

    def wait_unfenced(self, asked: int) -> None:
        self.quorum.wait_until(lambda: self.unfenced_brokers(asked) == BROKERS, WAIT_S,
                               f"broker {asked} to list both broker-only nodes unfenced")

    def partitions(self, topic: str, asked: int = BROKERS[0]):
        response = self.call(asked, MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                                    allow_auto_topic_creation=False), api_version=12)
        return sorted((p for t in response.topics for p in t.partitions), key=lambda p: p.partition_index)

    def fetch_values(self, broker: int, topic: str, partition: int) -> list[bytes]:
        response = self.call(broker, FetchRequest(
            replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
            session_epoch=-1, topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                partition=partition, fetch_offset=0, current_leader_epoch=-1, log_start_offset=-1,
                partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id=""), api_version=12)
        data = response.responses[0].partitions[0]
        assert data.error_code == Errors.NONE
        return [bytes(r.value) for batch in iter_batches(bytes(data.records or b"")) for r in batch]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    quorum = LocalQuorum(tmp_path_factory.mktemp("broker-only"), voters=1, extra_nodes=2, properties={
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        # A restarted broker waits for its previous session to end: keep it short here.
        "broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300",
        "controller.quorum.election.timeout.ms": "200",     # one voter: no need to wait for others
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
        # what an auto-created topic gets (test_a_topic_a_metadata_request_creates_...): not Kafka's 1 and 1
        "num.partitions": "2", "default.replication.factor": "2",
    })
    metrics_ports = dict(zip(BROKERS, free_ports(len(BROKERS))))
    for broker in BROKERS:
        quorum.node_properties[broker] = {
            "process.roles": "broker", "listeners": f"PLAINTEXT://127.0.0.1:{quorum.ports[broker]}",
            "metric.reporters": PROMETHEUS_REPORTER,
            "kafkawire.metrics.prometheus.listener": f"http://127.0.0.1:{metrics_ports[broker]}"}
    quorum.format(mode="standalone")      # node 1 the one voter; the brokers --no-initial-controllers
    quorum.start(CONTROLLER)
    for broker in BROKERS:
        quorum.start(broker, *START_ARGS[broker])
    try:
        c = Cluster(quorum, metrics_ports)
        c.wait_unfenced(BROKERS[0])
        yield c
    finally:
        for node_id in (*BROKERS, CONTROLLER):
            quorum.kill(node_id)


def test_broker_only_nodes_are_observers_of_the_quorum_never_voters(cluster):
    """DescribeQuorum at the controller: each broker fetches the metadata log as an observer with
    its metadata directory's id; the voters are the controller alone."""
    def with_the_brokers_observing():
        view = cluster.quorum.describe(CONTROLLER)
        return view if sorted(o.replica_id for o in view.observers) == BROKERS else None
    view = cluster.quorum.wait_until(with_the_brokers_observing, WAIT_S, "the brokers among the observers")
    assert [v.replica_id for v in view.voters] == [CONTROLLER]
    assert view.leader_id == CONTROLLER
    assert [n.node_id for n in view.nodes] == [CONTROLLER]      # the brokers have no controller endpoint
    for observer in view.observers:
        meta = read_meta_properties(os.path.join(cluster.quorum.data_dir(observer.replica_id), "meta.properties"))
        assert observer.replica_directory_id == meta.directory_id


def test_kafka_python_creates_replicates_produces_and_consumes_through_broker_only_nodes(cluster):
    """CreateTopics is forwarded to the active controller; the committed topic reaches both
    brokers' images, which lead and follow its partitions; acks=all records come back to a
    consumer group (its __consumer_offsets created through the controller too, its coordinator
    found whichever broker the client asks)."""
    create_topic(cluster.bootstrap, "orders", partitions=2, replication_factor=2)

    def led_and_in_sync():
        partitions = cluster.partitions("orders")
        return len(partitions) == 2 and all(p.leader_id in BROKERS and sorted(p.isr_nodes) == BROKERS
                                            for p in partitions)
    cluster.quorum.wait_until(led_and_in_sync, WAIT_S, "orders led, with both replicas in sync")
    sent = produce_records(cluster.bootstrap, "orders", 20, partitions=2)
    assert sorted(consume_in_group(cluster.bootstrap, "orders", 20, "readers")) == sorted(sent)


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value, parsed by prometheus_client's own text parser."""
    parser = pytest.importorskip("prometheus_client.parser")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text) for s in family.samples}


def test_each_broker_only_node_serves_its_raft_and_broker_metrics(cluster):
    """After the produce and consume above: each broker's endpoint gives its observer raft
    metrics and Kafka's ReplicaManager and BrokerTopicMetrics, which agree with the metadata (the
    partitions led and held, all in sync) and with the traffic (the 20 records in, on the
    leaders; bytes out to the consumer; bytes replicated to the followers)."""
    def settled():
        scraped = {b: scrape(cluster.metrics_ports[b]) for b in BROKERS}
        led = sum(m[("kafka_server_replicamanager_leadercount", ())] for m in scraped.values())
        return scraped if led == 3 else None       # orders' two partitions and __consumer_offsets' one
    scraped = cluster.quorum.wait_until(settled, WAIT_S, "the brokers' metrics to show the partitions they lead")
    def total(name, labels=()):
        return sum(m.get((name, labels), 0) for m in scraped.values())
    orders = (("topic", "orders"),)
    for m in scraped.values():
        assert m[("kafka_server_raftmetrics_current_state", (("current_state", "observer"),))] == 1
        assert m[("kafka_server_raftmetrics_current_leader", ())] == CONTROLLER
        assert m[("kafka_server_kafkaserver_brokerstate", ())] == 3                       # RUNNING
        assert m[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0
    assert total("kafka_server_replicamanager_partitioncount") == 5      # orders: 2 x 2 replicas; offsets: 1
    assert total("kafka_server_brokertopicmetrics_messagesin_total", orders) == 20, sorted(k for m in scraped.values() for k in m if "topicmetrics" in k[0])
    assert total("kafka_server_brokertopicmetrics_messagesin_total") >= 20      # and the group's commits
    assert total("kafka_server_brokertopicmetrics_bytesout_total", orders) > 0
    assert total("kafka_server_brokertopicmetrics_replicationbytesin_total") > 0
    assert total("kafka_server_brokertopicmetrics_replicationbytesout_total") > 0
    assert total("kafka_server_brokertopicmetrics_totalproducerequests_total", orders) >= 2
    assert total("kafka_server_brokertopicmetrics_failedproducerequests_total", orders) == 0
    assert total("kafka_server_replicamanager_failedisrupdates_total") == 0      # a family of every broker
    assert all(("kafka_server_replicamanager_isrshrinks_total", ()) in m for m in scraped.values())
    # The per-partition gauges: on both replicas (Kafka's Partition reads 0 on a follower), the
    # leader's with its ISR; the leaders' log end offsets add up to the 20 records sent.
    leaders_end = 0
    for index in ("0", "1"):
        labels = (("partition", index), ("topic", "orders"))
        assert total("kafka_cluster_partition_replicascount", labels) == 2
        assert total("kafka_cluster_partition_insyncreplicascount", labels) == 2
        assert total("kafka_cluster_partition_underreplicated", labels) == 0
        assert sum(("kafka_log_log_numlogsegments", labels) in m for m in scraped.values()) == 2
        leaders_end += sum(m[("kafka_log_log_logendoffset", labels)] for m in scraped.values()
                           if m.get(("kafka_cluster_partition_replicascount", labels)) == 2)
    assert leaders_end == 20
    # kafka.network's request metrics of the clients' and the followers' requests
    produced = [v for m in scraped.values() for (name, labels), v in m.items()
                if name == "kafka_network_requestmetrics_requests_total" and ("request", "Produce") in labels]
    assert sum(produced) >= 2           # kafka-python's produce requests, counted by their version
    assert total("kafka_network_requestmetrics_totaltimems_count", (("request", "Fetch"),)) > 0
    assert total("kafka_network_requestmetrics_errors_total", (("error", "NONE"), ("request", "Produce"))) >= 2
    assert all(("kafka_log_logflushstats_logflushrateandtimems_count", ()) in m for m in scraped.values())


def test_a_topic_a_metadata_request_creates_has_num_partitions_and_default_replication_factor(cluster):
    """auto.create.topics.enable (Kafka's default): a Metadata request naming an unknown topic makes
    the broker ask the controller for it with its num.partitions and default.replication.factor
    (2 and 2 in this module's settings), as Kafka's AutoTopicCreationManager does."""
    cluster.call(BROKERS[0], MetadataRequest(topics=[MetadataRequestTopic(name="auto-wide")],
                                             allow_auto_topic_creation=True), api_version=12)
    cluster.quorum.wait_until(lambda: len(cluster.partitions("auto-wide")) == 2, WAIT_S, "auto-wide to be created")
    assert [sorted(p.replica_nodes) for p in cluster.partitions("auto-wide")] == [BROKERS, BROKERS]


def test_a_restarted_broker_only_node_keeps_its_data_and_metadata(cluster):
    """SIGTERM (controlled shutdown while the controller runs), start again: the node starts from
    the metadata log it kept, registers anew, is unfenced, and serves the records it had, from
    its own log directory."""
    create_topic(cluster.bootstrap, "kept", partitions=1)
    cluster.quorum.wait_until(lambda: [p.leader_id for p in cluster.partitions("kept")][0] in BROKERS, WAIT_S,
                              "the leader of kept")
    leader = cluster.partitions("kept")[0].leader_id
    sent = produce_records(cluster.bootstrap, "kept", 5, partitions=1)
    assert cluster.quorum.stop(leader) == 0
    assert "the controller has allowed us to shut down" in cluster.quorum.log_tail(leader, 40)
    cluster.quorum.start(leader, *START_ARGS[leader])
    cluster.wait_unfenced(leader)
    with open(cluster.quorum.log_path(leader)) as f:
        started = re.findall(rf"node {leader} started: \w+, log (\d+)\.\.(\d+)", f.read())
    assert len(started) == 2 and int(started[1][1]) > 0, started     # the second start had the log
    cluster.quorum.wait_until(lambda: cluster.partitions("kept", asked=leader)[0].leader_id == leader, WAIT_S,
                              "the restarted broker leading kept again")
    assert cluster.fetch_values(leader, "kept", 0) == sent
    assert [v.replica_id for v in cluster.quorum.describe(CONTROLLER).voters] == [CONTROLLER]


def test_each_broker_only_node_writes_its_raft_metrics_file(cluster):
    """METADATA_LOG_DIR/kafkawire-raft-metrics.json, as a combined node writes it (every second):
    the observer's raft metrics, its node id, the controller as the leader and the one voter,
    no vote of its own."""
    def written(broker):
        path = os.path.join(cluster.quorum.data_dir(broker), "kafkawire-raft-metrics.json")
        try:
            with open(path) as f:
                content = json.load(f)
        except (OSError, ValueError):        # not written yet (it is replaced whole, never partial)
            return None
        return content if content["metrics"].get("current-leader") == CONTROLLER else None
    for broker in BROKERS:
        content = cluster.quorum.wait_until(lambda: written(broker), WAIT_S, f"broker {broker}'s raft metrics file")
        assert content["node-id"] == broker and content["group"] == "raft-metrics"
        assert content["metrics"]["current-vote"] == -1 and content["metrics"]["number-of-voters"] == 1
        assert content["metrics"]["high-watermark"] > 0


def test_max_api_versions_caps_what_a_broker_only_node_advertises(cluster):
    """server-start --max-api-versions 16:3 on node 3: its ApiVersions lists ListGroups up to v3
    (a packet dissector's versions), node 2, started without it, the highest it serves."""
    def advertised(broker):
        response = cluster.call(broker, ApiVersionsRequest(client_software_name="kafkawire-tests",
                                                           client_software_version="1"))
        assert response.error_code == Errors.NONE
        return {k.api_key: k.max_version for k in response.api_keys}
    capped, uncapped = advertised(3), advertised(2)
    assert capped[LIST_GROUPS] == CAPPED_LIST_GROUPS < uncapped[LIST_GROUPS]
    assert {k: v for k, v in capped.items() if k != LIST_GROUPS} == \
        {k: v for k, v in uncapped.items() if k != LIST_GROUPS}
