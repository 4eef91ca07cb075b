"""A 3-voter kafkawire quorum whose controller listener is SASL_SSL (issue 18, item 4): the
voters authenticate to each other with PLAIN over TLS (sasl.mechanism.controller.protocol), elect
a leader and commit under Kafka's StandardAuthorizer (the controllers and admin are super users);
clients authenticate with PLAIN or with SCRAM-SHA-256 against credentials `storage format
--add-scram` put in the metadata log, and alice, who has no ACL, is refused what needs one;
kafka-python and confluent-kafka talk to it; a node and clients with wrong credentials are refused."""
import asyncio
import time

import pytest

from kafkawire.messages.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from kafkawire.net.client import AuthenticationFailed, NetworkClient
from kafkawire.net.sasl import SaslClient
from kafkawire.net.security import client_ssl_context, ssl_settings
from kafkawire.protocol.error_codes import Errors
from kafkawire.storage.state_files import JavaProperties
from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.kafka_python_refusal import kafka_python_refusal
from tests.net.tls_certs import make_pki

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" '
              'password="{password}" user_controller="controller-secret" user_admin="admin-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
JAAS_KEY = "listener.name.controller.plain.sasl.jaas.config"


def secured_properties(pki, password="controller-secret") -> dict:
    return {
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "sasl.mechanism.controller.protocol": "PLAIN",
        JAAS_KEY: PLAIN_JAAS.format(password=password),
        "listener.name.controller.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_pem),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_pem),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:controller;User:admin",
    }


def tls(pki):
    return client_ssl_context(ssl_settings(JavaProperties.parse(
        f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca_pem}\n").items, "CONTROLLER"))


@pytest.fixture(scope="module")
def quorum(tmp_path_factory):
    base = tmp_path_factory.mktemp("secure")
    pki = make_pki(base / "pki")
    q = LocalQuorum(base, voters=3, extra_nodes=1, properties=secured_properties(pki),
                    client_options={"ssl_context": tls(pki),
                                    "sasl": lambda: SaslClient("PLAIN", "admin", "admin-secret")})
    q.pki = pki
    q.format(extra_args=["--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]"])
    # Node 4 (an observer) presents the wrong password to the others.
    q.write_config(4, **{JAAS_KEY: PLAIN_JAAS.format(password="wrong-secret")})
    q.start_all()
    try:
        yield q
    finally:
        q.kill_all()            # nothing is read after: a graceful stop of the whole quorum costs 5 s


def ten_more_commits_on_three_voters(quorum) -> None:
    """A leader elected, then 10 more records committed and every voter (1, 2, 3) caught up."""
    leader = quorum.wait_for_leader(60, among=quorum.voter_ids)
    start = leader.high_watermark
    view = quorum.wait_until(lambda: (v := quorum.describe(leader.leader_id)).high_watermark >= start + 10
                             and all(r.log_end_offset >= start for r in v.voters) and v, 60,
                             "10 more records committed and every voter caught up")
    assert sorted(r.replica_id for r in view.voters) == [1, 2, 3]


def test_voters_elect_a_leader_and_commit_over_sasl_ssl(quorum):
    ten_more_commits_on_three_voters(quorum)
    for node_id in quorum.voter_ids:
        text = open(quorum.log_path(node_id)).read()
        assert "Traceback" not in text


async def describe_with(pki, port, mechanism, user, password):
    request = DescribeQuorumRequest(topics=[TopicData(topic_name="__cluster_metadata",
                                                      partitions=[PartitionData(partition_index=0)])])
    async with NetworkClient(request_timeout_ms=10000, ssl_context=tls(pki),
                             sasl=lambda: SaslClient(mechanism, user, password)) as client:
        return await client.send(("127.0.0.1", port), request)


def test_scram_credentials_from_add_scram_authenticate_once_committed(quorum):
    leader = quorum.wait_for_leader(60, among=quorum.voter_ids)
    port = quorum.ports[leader.leader_id]

    def scram_works():
        try:
            return asyncio.run(describe_with(quorum.pki, port, "SCRAM-SHA-256", "alice", "alice-secret"))
        except AuthenticationFailed:
            return None          # the bootstrap records are not committed yet
    response = quorum.wait_until(scram_works, 60, "SCRAM-SHA-256 as alice")
    # authenticated, and then refused by the authorizer: alice has no DESCRIBE on the cluster
    assert response.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(AuthenticationFailed, match="SASL_AUTHENTICATION_FAILED: Authentication failed during "
                                                   "authentication due to invalid credentials with SASL mechanism "
                                                   "SCRAM-SHA-256"):
        asyncio.run(describe_with(quorum.pki, port, "SCRAM-SHA-256", "alice", "wrong"))
    with pytest.raises(AuthenticationFailed, match="Invalid username or password"):
        asyncio.run(describe_with(quorum.pki, port, "PLAIN", "admin", "wrong"))


def test_a_node_with_wrong_credentials_is_refused(quorum):
    leader = quorum.wait_for_leader(60, among=quorum.voter_ids)
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        view = quorum.describe(leader.leader_id)
        assert 4 not in [o.replica_id for o in view.observers], "node 4 fetched with a wrong password"
        time.sleep(0.5)
    refused = quorum.wait_until(
        lambda: "Failed authentication with /127.0.0.1" in open(quorum.log_path(leader.leader_id)).read(), 20,
        "the leader to log node 4's failed authentication")
    assert refused
    assert quorum.wait_until(lambda: "failed authentication due to: " in open(quorum.log_path(4)).read()
                             and "SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid username or password"
                             in open(quorum.log_path(4)).read(), 20, "node 4 to log its refusal")


def test_kafka_python_admin_over_sasl_ssl_with_scram_and_plain(quorum):
    from kafka import KafkaAdminClient
    from kafka.errors import ClusterAuthorizationFailedError
    leader = quorum.wait_for_leader(60, among=quorum.voter_ids)
    sasl_ssl = dict(security_protocol="SASL_SSL", ssl_cafile=str(quorum.pki.ca_pem), ssl_check_hostname=True)
    bootstrap = f"127.0.0.1:{quorum.ports[leader.leader_id]}"
    common = dict(bootstrap_servers=bootstrap, request_timeout_ms=10000, **sasl_ssl)
    quorum.wait_until(lambda: _scram_ready(quorum, leader), 60, "SCRAM credentials committed")
    admin = KafkaAdminClient(sasl_mechanism="PLAIN", sasl_plain_username="admin", sasl_plain_password="admin-secret",
                             **common)
    try:
        described = admin.describe_metadata_quorum()
    finally:
        admin.close()
    partition = described["topics"][0]["partitions"][0]
    assert partition["leader_id"] == leader.leader_id
    assert sorted(v["replica_id"] for v in partition["current_voters"]) == [1, 2, 3]
    admin = KafkaAdminClient(sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                             sasl_plain_password="alice-secret", **common)
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            admin.describe_metadata_quorum()
    finally:
        admin.close()
    # A wrong password: kafka-python never raises the refusal (KafkaAdminClient would wait out its
    # 30 s bootstrap timeout; tests/kafka_python_refusal.py says why), so wait for the refusal.
    log_path = quorum.log_path(leader.leader_id)
    refusal_line = "SCRAM-SHA-256 for user 'alice'"
    refused_before = _count_in(log_path, refusal_line)
    refusal = kafka_python_refusal(bootstrap, lambda: _count_in(log_path, refusal_line) > refused_before,
                                   sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                                   sasl_plain_password="nope", **sasl_ssl)
    assert refusal.closed_by_the_refusal, refusal.lost or "kafka-python lost no connection to the refusal in 20 s"
    assert refusal.records == []


def _count_in(path, text: str) -> int:
    with open(path) as f:
        return f.read().count(text)


def _scram_ready(quorum, leader):
    try:
        return asyncio.run(describe_with(quorum.pki, quorum.ports[leader.leader_id], "SCRAM-SHA-256", "alice",
                                         "alice-secret"))
    except AuthenticationFailed:
        return None


def test_confluent_kafka_over_sasl_ssl(quorum):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient
    leader = quorum.wait_for_leader(60, among=quorum.voter_ids)
    quorum.wait_until(lambda: _scram_ready(quorum, leader), 60, "SCRAM credentials committed")
    config = {"bootstrap.servers": f"127.0.0.1:{quorum.ports[leader.leader_id]}", "security.protocol": "SASL_SSL",
              "ssl.ca.location": str(quorum.pki.ca_pem), "sasl.mechanism": "SCRAM-SHA-256",
              "sasl.username": "alice", "sasl.password": "alice-secret", "socket.timeout.ms": 10000}
    metadata = AdminClient(config).list_topics(timeout=20)
    assert "__cluster_metadata" not in metadata.topics        # alice may not DESCRIBE it
    assert metadata.cluster_id == quorum.cluster_id
    admin = {**config, "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"}
    assert "__cluster_metadata" in AdminClient(admin).list_topics(timeout=20).topics
    bad = AdminClient({**config, "sasl.password": "nope"})
    with pytest.raises(confluent_kafka.KafkaException):
        bad.list_topics(timeout=8)


@pytest.mark.parametrize("properties, message", [
    ({"listener.security.protocol.map": "CONTROLLER:SSL", "ssl.keystore.type": "PEM",
      "ssl.keystore.location": "{tmp}/missing.pem"},
     "ssl.keystore.location: '{tmp}/missing.pem' cannot be read: No such file or directory"),
    ({"listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT"},       # Kafka's default mechanism
     "listener.name.controller.gssapi.sasl.jaas.config: (unset) is required"),
    ({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"},
     "authorizer.class.name: 'kafka.security.authorizer.AclAuthorizer' is not supported"),
])
def test_server_start_refuses_bad_security_in_one_line(tmp_path, properties, message):
    """storage format reads the file as Kafka's does (these are checked when listeners are built);
    server-start refuses it in one line naming the key."""
    import subprocess
    import sys
    q = LocalQuorum(tmp_path, voters=1, properties={k: v.format(tmp=tmp_path) for k, v in properties.items()})
    q.format(mode="standalone")
    result = subprocess.run([sys.executable, "-m", "kafkawire.tools.cli", "server-start", q.config_path(1)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert message.format(tmp=tmp_path) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
