"""SASL between kafkawire brokers, process level: three combined nodes (`kafkawire server-start`
subprocesses) whose inter-broker listener BROKER is SASL_PLAINTEXT with SCRAM-SHA-256
(`sasl.mechanism.inter.broker.protocol`, the credentials of user broker from `storage format
--add-scram`, each node's client username and password in
`listener.name.broker.scram-sha-256.sasl.jaas.config`), under the StandardAuthorizer (super user:
User:ANONYMOUS, the PLAINTEXT controller listener and the test's own listener CLIENT). Node 3 starts
with a wrong password in that JAAS entry.

- A replication-factor-2 topic on nodes 1 and 2 (one partition led by each, min.insync.replicas=2):
  while User:broker has no ACL, each leader refuses the other's follower fetch (no CLUSTER_ACTION
  on the cluster: TOPIC_AUTHORIZATION_FAILED for each partition, as Kafka's KafkaApis answers a
  follower), the followers leave the ISR and acks=all is NOT_ENOUGH_REPLICAS. Once CLUSTER_ACTION on the cluster is granted to User:broker,
  both rejoin the ISR, acks=all produces are acknowledged and both replicas hold the leader's bytes.
- A replication-factor-3 topic (min.insync.replicas=2): node 3 cannot authenticate to its leader,
  leaves the ISR (an acks=all produce is acknowledged by nodes 1 and 2 once it has) and stays out,
  logging the refusal at each attempt and backing off between them (its attempts and its CPU are
  counted: a retry loop without backoff would show in both); the leader logs each refusal.

The in-process tests of the configuration are test_inter_broker_sasl.py."""
from __future__ import annotations

import contextlib
import os
import time

from kafkawire.messages.create_acls_request import AclCreation, CreateAclsRequest
from kafkawire.messages.create_topics_request import (CreatableReplicaAssignment, CreatableTopic,
                                                      CreatableTopicConfig, CreateTopicsRequest)
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.authorizer import CLUSTER_NAME, STANDARD_AUTHORIZER, Op
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from kafkawire.records.builder import build_batch

from .wire import call, serving_brokers

WAIT_S = 60
NODES = (1, 2, 3)
JAAS_KEY = "listener.name.broker.scram-sha-256.sasl.jaas.config"
REFUSED = "failed authentication due to"
CLUSTER, LITERAL, ALLOW = 4, 3, 3          # AclCreation's resource, pattern and permission types


def scram_jaas(password: str) -> str:
    return f'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="{password}";'


@contextlib.contextmanager
def sasl_cluster(base):
    """Three combined nodes, node 3 with the wrong inter-broker password; killed by pid at the end.
    Yields the quorum and node id -> its CLIENT listener (host, port)."""
    broker_ports, client_ports = free_ports(3), free_ports(3)
    quorum = LocalQuorum(base, voters=3, properties={
        "process.roles": "broker,controller",
        "listener.security.protocol.map": "BROKER:SASL_PLAINTEXT,CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "BROKER",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
        JAAS_KEY: scram_jaas("broker-secret"),
        "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS",
        "broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300",
        "replica.fetch.backoff.ms": "100", "replica.lag.time.max.ms": "2000",
        "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
    })
    for n, i in enumerate(NODES):
        quorum.node_properties[i] = {"listeners": f"BROKER://127.0.0.1:{broker_ports[n]},"
                                                  f"CLIENT://127.0.0.1:{client_ports[n]},"
                                                  f"CONTROLLER://127.0.0.1:{quorum.ports[i]}"}
    quorum.node_properties[3][JAAS_KEY] = scram_jaas("wrong-secret")
    quorum.format(extra_args=["--add-scram", "SCRAM-SHA-256=[name=broker,password=broker-secret]"])
    quorum.start_all()
    clients = {i: ("127.0.0.1", client_ports[n]) for n, i in enumerate(NODES)}
    with serving_brokers(quorum, clients, WAIT_S):
        yield quorum, clients


def create(client, topic: str, assignments: list[list[int]]) -> None:
    response = call(client, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=topic, num_partitions=-1, replication_factor=-1,
        assignments=[CreatableReplicaAssignment(partition_index=i, broker_ids=ids) for i, ids in enumerate(assignments)],
        configs=[CreatableTopicConfig(name="min.insync.replicas", value="2")])]))
    assert [t.error_code for t in response.topics] == [Errors.NONE]


def partitions(client, topic: str) -> dict:
    response = call(client, MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                            allow_auto_topic_creation=False), 12)
    return {p.partition_index: p for p in response.topics[0].partitions}


def leader_of(client, topic: str, index: int) -> int:
    p = partitions(client, topic).get(index)
    return -1 if p is None or p.error_code != Errors.NONE else p.leader_id


def isr(client, topic: str, index: int) -> list[int]:
    p = partitions(client, topic).get(index)
    return [] if p is None or p.error_code != Errors.NONE else sorted(p.isr_nodes)


def produce(client, topic: str, index: int, value: bytes, acks: int = -1) -> int:
    """One produce to the partition's leader; its error code."""
    records = build_batch([(b"k", value)])
    response = call(client, ProduceRequest(acks=acks, timeout_ms=20_000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=index, records=records)])]), 9)
    return response.responses[0].partition_responses[0].error_code


def grant_cluster_action(quorum, principal: str) -> None:
    """CLUSTER_ACTION on the cluster for ``principal``, through the active controller."""
    creation = AclCreation(resource_type=CLUSTER, resource_name=CLUSTER_NAME, resource_pattern_type=LITERAL,
                           principal=principal, host="*", operation=Op.CLUSTER_ACTION, permission_type=ALLOW)

    def granted():
        leader = quorum.wait_for_leader(WAIT_S).leader_id
        response = call(quorum.address(leader), CreateAclsRequest(creations=[creation]), 3)
        return response.results[0].error_code == Errors.NONE
    quorum.wait_until(granted, WAIT_S, f"CLUSTER_ACTION granted to {principal}")


def segment(quorum, node_id: int, topic: str, index: int) -> bytes:
    try:
        with open(os.path.join(quorum.data_dir(node_id), f"{topic}-{index}", f"{0:020d}.log"), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time (/proc/<pid>/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def refusals(quorum, node_id: int) -> int:
    with open(quorum.log_path(node_id)) as f:
        return f.read().count(REFUSED)


def test_brokers_replicate_over_sasl_scram_and_a_wrong_password_keeps_the_follower_out(tmp_path):
    with sasl_cluster(tmp_path) as (quorum, clients):
        client = clients[1]
        create(client, "paired", [[1, 2], [2, 1]])          # one partition led by each of nodes 1 and 2
        leaders = {0: 1, 1: 2}
        for index, leader in leaders.items():
            quorum.wait_until(lambda: leader_of(client, "paired", index) == leader, WAIT_S, "a leader")
            assert produce(clients[leader], "paired", index, f"unreplicated-{index}".encode(), acks=1) == Errors.NONE
        # User:broker authenticates but has no CLUSTER_ACTION: the followers are refused and leave the ISR.
        quorum.wait_until(lambda: [isr(client, "paired", i) for i in leaders] == [[1], [2]], WAIT_S,
                          "the refused followers out of the ISR")
        for index, leader in leaders.items():        # Kafka's answer: TOPIC_AUTHORIZATION_FAILED per partition
            follower = 3 - leader
            assert f"answered paired-{index} with error TOPIC_AUTHORIZATION_FAILED" in open(quorum.log_path(follower)).read()
            assert "Principal = User:broker is Denied operation = CLUSTER_ACTION from host = 127.0.0.1 on resource = " \
                   "Cluster:LITERAL:kafka-cluster for request = Fetch" in open(quorum.log_path(leader)).read()
        assert produce(clients[1], "paired", 0, b"refused") == Errors.NOT_ENOUGH_REPLICAS

        grant_cluster_action(quorum, "User:broker")
        quorum.wait_until(lambda: [isr(client, "paired", i) for i in leaders] == [[1, 2], [1, 2]], WAIT_S,
                          "the followers back in the ISR")
        for index, leader in leaders.items():
            assert produce(clients[leader], "paired", index, f"paired-{index}".encode()) == Errors.NONE
            assert f"paired-{index}".encode() in segment(quorum, leader, "paired", index)
            follower = 3 - leader
            quorum.wait_until(lambda: segment(quorum, follower, "paired", index) ==
                              segment(quorum, leader, "paired", index), WAIT_S, "the follower to hold the batch")
            assert isr(client, "paired", index) == [1, 2]

        create(client, "triple", [[1, 2, 3]])
        quorum.wait_until(lambda: leader_of(client, "triple", 0) == 1, WAIT_S, "node 1 to lead")
        assert produce(clients[1], "triple", 0, b"without-3") == Errors.NONE     # once node 3 has left the ISR
        quorum.wait_until(lambda: isr(client, "triple", 0) == [1, 2], WAIT_S, "node 3 out of the ISR in the metadata")
        assert segment(quorum, 3, "triple", 0) == b""
        text = open(quorum.log_path(3)).read()
        assert REFUSED in text and "SASL_AUTHENTICATION_FAILED" in text and "Traceback" not in text
        assert "Failed authentication with /127.0.0.1" in open(quorum.log_path(1)).read()

        # Backing off, not spinning: two more refused attempts, their rate and the CPU meanwhile.
        pid, start_count = quorum.processes[3].pid, refusals(quorum, 3)
        start_cpu, start = cpu_seconds(pid), time.monotonic()
        quorum.wait_until(lambda: refusals(quorum, 3) >= start_count + 2, WAIT_S, "two more refused attempts")
        elapsed = time.monotonic() - start
        attempts = refusals(quorum, 3) - start_count
        assert attempts / elapsed < 20, f"{attempts} attempts in {elapsed:.2f} s"
        assert (cpu_seconds(pid) - start_cpu) / elapsed < 0.6, "node 3 spins while it cannot authenticate"
        assert isr(client, "triple", 0) == [1, 2]
