"""A broker-only kafkawire node (process.roles=broker) on a kafkawire controller whose listener is
SASL_SSL, with Kafka's StandardAuthorizer on both (issue 29): the broker follows the metadata log,
registers and heartbeats as User:broker (PLAIN over TLS, sasl.mechanism.controller.protocol), and
its own SASL_PLAINTEXT listener checks every client against the ACLs of the image it follows:
alice, with no ACL, is refused; bob is served once an admin's CreateAcls (forwarded by the broker
to the controller) reaches that image. A second broker-only node presenting a wrong password to
the controller never registers. Processes only (`kafkawire server-start`), no JVM; one quorum for
the module, killed by pid at teardown.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkawire.messages.create_acls_request import CreateAclsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.authorizer import Op
from kafkawire.net.client import NetworkClient
from kafkawire.net.sasl import SaslClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum
from kafkawire.records.builder import build_batch
from tests.net.tls_certs import make_pki

from .test_authorizer_node import creation
from .test_secure_quorum import tls

WAIT_S = 60
CONTROLLER, BROKER, WRONG = 1, 2, 3
TOPIC, TOPIC_RESOURCE, LITERAL = "secured", 2, 3
USERS = {"controller": "controller-secret", "broker": "broker-secret", "admin": "admin-secret",
         "alice": "alice-secret", "bob": "bob-secret"}


def plain_jaas(user: str, password: str) -> str:
    """A PLAIN JAAS entry: the node logs in as ``user``, and accepts every user of USERS."""
    accepted = " ".join(f'user_{name}="{secret}"' for name, secret in USERS.items())
    return ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'username="{user}" password="{password}" {accepted};')


def broker_properties(port: int, controller_password: str) -> dict:
    return {"process.roles": "broker", "listeners": f"CLIENT://127.0.0.1:{port}",
            "inter.broker.listener.name": "CLIENT", "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": plain_jaas("broker", controller_password),
            "listener.name.client.plain.sasl.jaas.config": plain_jaas("broker", USERS["broker"])}


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    base = tmp_path_factory.mktemp("secure-broker-only")
    pki = make_pki(base / "pki")
    q = LocalQuorum(base, voters=1, extra_nodes=2, properties={
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL,CLIENT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": plain_jaas("controller", USERS["controller"]),
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_pem),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_pem),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:controller;User:broker;User:admin",
        "controller.quorum.election.timeout.ms": "200", "broker.heartbeat.interval.ms": "300",
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
    }, client_options={"ssl_context": tls(pki), "sasl": lambda: SaslClient("PLAIN", "admin", USERS["admin"])})
    q.node_properties[BROKER] = broker_properties(q.ports[BROKER], USERS["broker"])
    q.node_properties[WRONG] = broker_properties(q.ports[WRONG], "wrong-secret")
    q.format(mode="standalone")           # node 1 the one voter; the brokers --no-initial-controllers
    for node_id in (CONTROLLER, BROKER, WRONG):
        q.start(node_id)
    try:
        yield q
    finally:
        for node_id in (WRONG, BROKER, CONTROLLER):
            q.kill(node_id)


def as_user(quorum, user: str, request, version: int, password: str | None = None):
    """``request`` to the broker's SASL_PLAINTEXT listener, authenticated as ``user``."""
    async def go():
        async with NetworkClient(request_timeout_ms=15_000, sasl=lambda: SaslClient(
                "PLAIN", user, USERS[user] if password is None else password)) as client:
            return await client.send(quorum.address(BROKER), request, api_version=version)
    return asyncio.run(go())


def registered_brokers(quorum) -> list[int]:
    quorum._check_alive([CONTROLLER, BROKER])
    try:
        response = as_user(quorum, "admin", DescribeClusterRequest(include_cluster_authorized_operations=False), 0)
    except Exception:                     # not serving yet (a broker opens its port once unfenced)
        return []
    return sorted(b.broker_id for b in response.brokers)


def produce(topic: str):
    return ProduceRequest(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=0, records=build_batch([(b"k", b"v")]))])])


def topic_error(quorum, user: str) -> int:
    response = as_user(quorum, user, MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)],
                                                     allow_auto_topic_creation=False), 12)
    return response.topics[0].error_code


def test_the_broker_only_node_follows_and_registers_over_sasl_ssl(quorum):
    """Its raft fetches (an observer) and its registration both reach the controller over SASL_SSL
    as User:broker; the broker with the wrong password is in neither."""
    quorum.wait_until(lambda: registered_brokers(quorum) == [BROKER], WAIT_S, "the broker registered and unfenced")
    view = quorum.wait_until(lambda: (v := quorum.describe(CONTROLLER)) and BROKER in
                             [o.replica_id for o in v.observers] and v, WAIT_S, "the broker among the observers")
    assert [v.replica_id for v in view.voters] == [CONTROLLER]
    assert WRONG not in [o.replica_id for o in view.observers]
    quorum.wait_until(lambda: "Invalid username or password" in open(quorum.log_path(WRONG)).read(), WAIT_S,
                      "the broker with the wrong password to log its refusal")
    assert registered_brokers(quorum) == [BROKER]
    with open(quorum.log_path(BROKER)) as f:
        assert "Traceback" not in f.read()


def test_the_brokers_authorizer_refuses_a_principal_without_acls_and_serves_one_with_them(quorum):
    """alice has no ACL: Metadata and Produce of the topic are TOPIC_AUTHORIZATION_FAILED, and so
    is her CreateTopics; the ACLs an admin creates through the broker (forwarded to the controller,
    committed, replayed into the broker's image) let bob produce, and still not alice."""
    quorum.wait_until(lambda: registered_brokers(quorum) == [BROKER], WAIT_S, "the broker registered and unfenced")
    topic = CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1, assignments=[], configs=[])
    refused = as_user(quorum, "alice", CreateTopicsRequest(topics=[topic], timeout_ms=10_000), 7)
    assert refused.topics[0].error_code == Errors.TOPIC_AUTHORIZATION_FAILED
    created = as_user(quorum, "admin", CreateTopicsRequest(topics=[topic], timeout_ms=10_000), 7)
    assert created.topics[0].error_code == Errors.NONE
    quorum.wait_until(lambda: topic_error(quorum, "admin") == Errors.NONE, WAIT_S, "the topic in the broker's image")
    for user in ("alice", "bob"):
        assert topic_error(quorum, user) == Errors.TOPIC_AUTHORIZATION_FAILED
        produced = as_user(quorum, user, produce(TOPIC), 9)
        assert produced.responses[0].partition_responses[0].error_code == Errors.TOPIC_AUTHORIZATION_FAILED
    acls = as_user(quorum, "admin", CreateAclsRequest(creations=[
        creation("User:bob", op, resource_type=TOPIC_RESOURCE, name=TOPIC, pattern=LITERAL)
        for op in (Op.WRITE, Op.DESCRIBE)]), 3)
    assert [r.error_code for r in acls.results] == [Errors.NONE, Errors.NONE]
    quorum.wait_until(lambda: topic_error(quorum, "bob") == Errors.NONE, WAIT_S, "bob's ACLs in the broker's image")
    produced = as_user(quorum, "bob", produce(TOPIC), 9)
    assert produced.responses[0].partition_responses[0].error_code == Errors.NONE
    assert topic_error(quorum, "alice") == Errors.TOPIC_AUTHORIZATION_FAILED
