"""Kafka 4.3.1's kafka-delegation-tokens tool and Java clients judge kafkawire's delegation tokens
(issue 29): one combined kafkawire node with a SASL_PLAINTEXT/SCRAM listener beside its PLAINTEXT
one, the user alice formatted in (``--add-scram``) and ``delegation.token.secret.key`` set.
DelegationTokenCommand, logged in as alice, creates a token (renewer bob), describes it, renews
it and expires it; a Kafka Java client logs in with the token (ScramLoginModule, tokenauth=true)
and is served, but may not create a token with it (UnsupportedByAuthenticationException, Kafka's
DELEGATION_TOKEN_REQUEST_NOT_ALLOWED), and neither may a client on the PLAINTEXT listener.

The SASL listener's SCRAM-SHA-256 sessions last 2 s
(``listener.name.sasl.scram-sha-256.connections.max.reauth.ms``, KIP-368): a Java consumer logged
in with a token and a librdkafka producer logged in as bob re-authenticate their connections on
their own (the node logs each re-authentication) and keep working; none of their connections is
closed for an ended session.
The tools run in the shared tool JVM; one kafkawire node for the module."""
from __future__ import annotations

import os
import re
import subprocess
import threading

import pytest

from kafkawire.raft.node.local_quorum import free_ports
from kafkawire.testing import EmbeddedBroker, EmbeddedBrokerError
from kafkawire.testing import DEFAULT_PROPERTIES
from tests.interop.broker_judges import kafka_tool, run_tool, wait_until

TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
API_VERSIONS = "org.apache.kafka.tools.BrokerApiVersionsCommand"
SCRAM_SERVER_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
REAUTH_MS = 2000
REAUTHENTICATED = "re-authenticated as User:{} with SCRAM-SHA-256"
SESSION_ENDED = "its SASL session expired"


class SaslBroker(EmbeddedBroker):
    """An EmbeddedBroker with a third listener, SASL (SASL_PLAINTEXT, SCRAM-SHA-256), and alice's
    and bob's SCRAM credentials formatted in."""

    def format(self) -> None:
        from kafkawire.storage.state_files import random_uuid, uuid_to_kafka
        self.broker_port, self.controller_port, self.sasl_port = free_ports(3)
        props = dict(DEFAULT_PROPERTIES, **{
            "listeners": f"PLAINTEXT://127.0.0.1:{self.broker_port},CONTROLLER://127.0.0.1:{self.controller_port},"
                         f"SASL://127.0.0.1:{self.sasl_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL:SASL_PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-256",
            "listener.name.sasl.scram-sha-256.sasl.jaas.config": SCRAM_SERVER_JAAS,
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "log.dirs": self.log_dir,
            "delegation.token.secret.key": "judge-secret-key",
            "listener.name.sasl.scram-sha-256.connections.max.reauth.ms": str(REAUTH_MS),
        })
        with open(self.config_path, "w", encoding="utf-8") as f:
            f.write("".join(f"{k}={v}\n" for k, v in props.items()))
        result = subprocess.run([self.python, "-m", "kafkawire.tools.cli", "storage", "format", "--standalone",
                                 "--cluster-id", uuid_to_kafka(random_uuid()), "--config", self.config_path,
                                 "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
                                 "--add-scram", "SCRAM-SHA-256=[name=bob,password=bob-secret]"],
                                capture_output=True, text=True, timeout=self.start_timeout_s)
        if result.returncode != 0:
            raise EmbeddedBrokerError(f"kafkawire storage format failed: {(result.stderr or result.stdout).strip()}")


@pytest.fixture(scope="module")
def broker(kafka_libs, tmp_path_factory):
    node = SaslBroker(tmp_path_factory.mktemp("kafkawire-tokens") / "node")
    with node:
        yield node
    print(f"\n--- kafkawire node log tail:\n{node.log_tail(40)}")


def client_config(path, username, password, *, token=False) -> str:
    extension = ' tokenauth="true"' if token else ""
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                    f'username="{username}" password="{password}"{extension};\n')
    return str(path)


def tokens(broker, config, *args) -> subprocess.CompletedProcess:
    return run_tool(TOKENS, "--bootstrap-server", f"127.0.0.1:{broker.sasl_port}", "--command-config", config, *args)


def token_rows(stdout: str) -> dict[str, list[str]]:
    """tokenId -> the row's other cells, from the tool's table (TOKENID HMAC OWNER ...)."""
    rows = {}
    for line in stdout.splitlines():
        cells = line.split()
        if len(cells) >= 6 and cells[0] != "TOKENID" and re.fullmatch(r"[A-Za-z0-9_-]{22}", cells[0]):
            rows[cells[0]] = cells[1:]
    return rows


def test_the_kafka_tool_creates_describes_renews_and_expires_a_token_and_a_java_client_logs_in_with_it(
        broker, tmp_path):
    alice = client_config(tmp_path / "alice.properties", "alice", "alice-secret")
    created = tokens(broker, alice, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
    assert created.returncode == 0, created.stderr[-3000:] + created.stdout[-2000:]
    ((token_id, cells),) = token_rows(created.stdout).items()
    token_hmac, owner = cells[0], cells[1]
    assert owner == "User:alice" and "User:bob" in " ".join(cells), created.stdout

    def described():
        out = tokens(broker, alice, "--describe", "--owner-principal", "User:alice")
        return out.stdout if out.returncode == 0 and token_id in out.stdout else None
    rows = token_rows(wait_until(described, "the token described from the broker's image"))
    assert rows[token_id][:2] == [token_hmac, "User:alice"]
    # Without --owner-principal the 4.3.1 tool sends an empty owner list, which Kafka's broker
    # answers with no tokens (DescribeDelegationTokenRequest.ownersListEmpty); so does ours.
    current_user = tokens(broker, alice, "--describe")
    assert current_user.returncode == 0 and "Total number of tokens : 0" in current_user.stdout, current_user.stdout

    renewed = tokens(broker, alice, "--renew", "--renew-time-period", "60000", "--hmac", token_hmac)
    assert renewed.returncode == 0 and "Completed renew operation" in renewed.stdout, \
        renewed.stderr[-3000:] + renewed.stdout

    as_token = client_config(tmp_path / "token.properties", token_id, token_hmac, token=True)
    served = run_tool(API_VERSIONS, "--bootstrap-server", f"127.0.0.1:{broker.sasl_port}", "--command-config",
                      as_token)
    assert served.returncode == 0 and "CreateDelegationToken(38)" in served.stdout, served.stderr[-3000:]
    refused = tokens(broker, as_token, "--create", "--max-life-time-period", "-1")
    assert refused.returncode != 0 and "UnsupportedByAuthenticationException" in refused.stdout + refused.stderr, \
        refused.stdout[-2000:] + refused.stderr[-3000:]
    wrong = client_config(tmp_path / "wrong.properties", token_id, "not-the-hmac", token=True)
    failed = tokens(broker, wrong, "--describe", "--owner-principal", "User:alice")
    assert failed.returncode != 0 and "SaslAuthenticationException" in failed.stdout + failed.stderr, \
        failed.stdout[-2000:] + failed.stderr[-3000:]

    expired = tokens(broker, alice, "--expire", "--expiry-time-period", "-1", "--hmac", token_hmac)
    assert expired.returncode == 0 and "Completed expire operation" in expired.stdout, \
        expired.stderr[-3000:] + expired.stdout
    wait_until(lambda: (lambda out: out.returncode == 0 and token_id not in out.stdout)(
        tokens(broker, alice, "--describe", "--owner-principal", "User:alice")) or None, "the expired token gone")


def test_a_plaintext_client_may_not_create_a_token(broker, tmp_path):
    plaintext = tmp_path / "plain.properties"
    plaintext.write_text("security.protocol=PLAINTEXT\n")
    refused = run_tool(TOKENS, "--bootstrap-server", broker.bootstrap_servers, "--command-config", str(plaintext),
                       "--create", "--max-life-time-period", "-1")
    assert refused.returncode != 0 and "UnsupportedByAuthenticationException" in refused.stdout + refused.stderr, \
        refused.stdout[-2000:] + refused.stderr[-3000:]


def test_a_java_consumer_with_a_token_and_a_librdkafka_producer_re_authenticate_each_session_and_keep_working(
        broker, tmp_path):
    import confluent_kafka
    alice = client_config(tmp_path / "alice.properties", "alice", "alice-secret")
    created = tokens(broker, alice, "--create", "--max-life-time-period", "-1")
    assert created.returncode == 0, created.stderr[-3000:] + created.stdout[-2000:]
    ((token_id, cells),) = token_rows(created.stdout).items()
    wait_until(lambda: token_id in tokens(broker, alice, "--describe", "--owner-principal", "User:alice").stdout,
               "the token in the broker's image")
    # The re-authentications are logged at DEBUG: the node's logger level, changed as Kafka's are.
    kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server", broker.bootstrap_servers, "--alter",
               "--entity-type", "broker-loggers", "--entity-name", "1",
               "--add-config", "kafkawire.net.authentication=DEBUG")
    kafka_tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", broker.bootstrap_servers, "--create",
               "--topic", "reauth", "--partitions", "1", "--replication-factor", "1")
    log_start = os.path.getsize(broker.node_log)

    def node_log_since_start() -> str:
        with open(broker.node_log, encoding="utf-8", errors="replace") as f:
            f.seek(log_start)
            return f.read()

    producer = confluent_kafka.Producer({
        "bootstrap.servers": f"127.0.0.1:{broker.sasl_port}", "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "bob", "sasl.password": "bob-secret"})
    producer.produce("reauth", b"before")
    assert producer.flush(30) == 0
    as_token = client_config(tmp_path / "consumer.properties", token_id, cells[0], token=True)
    consumed = {}
    consumer = threading.Thread(target=lambda: consumed.update(result=run_tool(
        CONSOLE_CONSUMER, "--bootstrap-server", f"127.0.0.1:{broker.sasl_port}", "--consumer.config", as_token,
        "--topic", "reauth", "--from-beginning", "--max-messages", "2", "--timeout-ms", "60000")))
    consumer.start()
    try:
        # Several sessions of 2 s ended in a re-authentication, on each client's connections.
        wait_until(lambda: (lambda log: log.count(REAUTHENTICATED.format("alice")) >= 3
                            and log.count(REAUTHENTICATED.format("bob")) >= 2)(node_log_since_start()),
                   "3 re-authentications of the Java consumer and 2 of the librdkafka producer")
        producer.produce("reauth", b"after-re-authentications")
        assert producer.flush(30) == 0
    finally:
        consumer.join(120)
    result = consumed["result"]
    assert result.returncode == 0 and result.stdout.splitlines()[-2:] == ["before", "after-re-authentications"], \
        result.stderr[-3000:] + result.stdout[-2000:]
    log = node_log_since_start()
    assert SESSION_ENDED not in log, [line for line in log.splitlines() if SESSION_ENDED in line]
    assert f"session lifetime {REAUTH_MS} ms" in log
