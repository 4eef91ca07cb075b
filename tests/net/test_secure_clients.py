"""kafka-python and confluent-kafka read a __cluster_metadata log over SSL (mutual TLS) and
SASL_PLAINTEXT (PLAIN and SCRAM-SHA-512), served by KafkaServer + MetadataTopic on 127.0.0.1; wrong
credentials and a missing client certificate are refused (issue 18, item 4)."""
import logging
import os
import time

import pytest

from kafkawire.net.config import parse_server_config
from kafkawire.net.sasl import scram_credential
from tests.kafka_python_refusal import kafka_python_refusal, logging_to

from .metadata_log import CLUSTER_ID, write_metadata_log
from .served import ServedLog
from .tls_certs import make_pki

TOPIC = "__cluster_metadata"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_alice="alice-secret";')
SALT = os.urandom(16)


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    base = tmp_path_factory.mktemp("secure-clients")
    log_dir, written = write_metadata_log(base / "log", epochs=2, batches_per_epoch=5, records_per_batch=5,
                                          segment_bytes=4096)
    return log_dir, [(w.offset, w.value) for w in written if not w.is_control], make_pki(base / "pki")


def security(protocol, pki):
    text = ("process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
            "listeners=CONTROLLER://127.0.0.1:0\ncontroller.listener.names=CONTROLLER\n"
            f"listener.security.protocol.map=CONTROLLER:{protocol}\n")
    if protocol == "SSL":
        text += (f"ssl.keystore.type=PEM\nssl.keystore.location={pki.server_pem}\nssl.client.auth=required\n"
                 f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca_pem}\n")
    else:
        text += ("sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\nsasl.mechanism.controller.protocol=PLAIN\n"
                 f"listener.name.controller.plain.sasl.jaas.config={JAAS}\n"
                 "listener.name.controller.scram-sha-512.sasl.jaas.config="
                 "org.apache.kafka.common.security.scram.ScramLoginModule required;\n")
    return parse_server_config(text).security_of("CONTROLLER")


def serve(log_dir, protocol, pki):
    credential = scram_credential("SCRAM-SHA-512", "alice-secret", SALT, 4096)
    return ServedLog(log_dir, server_options={
        "security": security(protocol, pki),
        "scram_lookup": lambda mechanism, user: credential if (mechanism, user) == ("SCRAM-SHA-512", "alice") else None})


def kafka_python_read(port, count, **security_options):
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", enable_auto_commit=False,
                             request_timeout_ms=10000, **security_options)
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got, deadline = [], time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [(m.offset, m.value) for m in records]
        return got
    finally:
        consumer.close()


@pytest.mark.parametrize("protocol, options", [
    ("SSL", "mtls"),
    ("SASL_PLAINTEXT", ("PLAIN", "alice", "alice-secret")),
    ("SASL_PLAINTEXT", ("SCRAM-SHA-512", "alice", "alice-secret")),
])
def test_kafka_python_reads_every_record(setting, protocol, options):
    log_dir, want, pki = setting
    if options == "mtls":
        kwargs = dict(security_protocol="SSL", ssl_cafile=str(pki.ca_pem), ssl_certfile=str(pki.client_pem),
                      ssl_keyfile=str(pki.client_pem))
    else:
        kwargs = dict(security_protocol=protocol, sasl_mechanism=options[0], sasl_plain_username=options[1],
                      sasl_plain_password=options[2])
    with serve(log_dir, protocol, pki) as served:
        assert kafka_python_read(served.port, len(want), **kwargs) == want


class _ServerAuthentications(logging.Handler):
    """The server's refusals of alice and its successful authentications (any thread)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.refusals = self.authenticated = 0

    def emit(self, record):
        message = record.getMessage()
        self.refusals += message.startswith("Failed authentication") and "'alice'" in message
        self.authenticated += " authenticated as " in message


def test_kafka_python_is_refused_with_a_wrong_password(setting):
    """The server refuses alice's SCRAM proof and closes the connection, kafka-python loses the
    connection to that refusal, and reads nothing. kafka-python never raises the refusal (it
    retries until its bootstrap timeout; tests/kafka_python_refusal.py says why), so the test
    waits for the refusal itself, at most 20 s: a server that hung would fail it."""
    log_dir, want, pki = setting
    with serve(log_dir, "SASL_PLAINTEXT", pki) as served, \
            logging_to(_ServerAuthentications(), "kafkawire.net.authentication") as server:
        refusal = kafka_python_refusal(f"127.0.0.1:{served.port}", lambda: server.refusals > 0,
                                       security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                                       sasl_plain_username="alice", sasl_plain_password="wrong")
    assert server.refusals >= 1, "the server did not refuse alice's authentication"
    assert refusal.closed_by_the_refusal, refusal.lost or "kafka-python lost no connection to the refusal in 20 s"
    assert server.authenticated == 0 and refusal.records == []


def confluent_read(port, count, config, *, refused=None):
    """Read up to ``count`` records with confluent-kafka, for at most 20 s; with ``refused`` (the
    server says it refused the client), stop as soon as it has and the client has reported an
    error too (its error_cb's errors count then). Returns (records, errors, cluster metadata if
    any record was read)."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    errors = []
    reported = {"error_cb": errors.append} if refused else {}
    consumer = confluent_kafka.Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "reader",
                                         "enable.auto.commit": False, "log_level": 0, **reported, **config})
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, confluent_kafka.OFFSET_BEGINNING)])
        got, deadline = [], time.monotonic() + 20
        while len(got) < count and time.monotonic() < deadline and not (refused and refused() and errors):
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                errors.append(m.error())
                continue
            got.append((m.offset(), m.value()))
        metadata = consumer.list_topics(timeout=10) if got else None
        return got, errors, metadata
    finally:
        consumer.close()


@pytest.mark.parametrize("protocol, config", [
    ("SSL", "mtls"),
    ("SASL_PLAINTEXT", {"sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}),
    ("SASL_PLAINTEXT", {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": "alice-secret"}),
])
def test_confluent_kafka_reads_every_record(setting, protocol, config):
    log_dir, want, pki = setting
    if config == "mtls":
        config = {"ssl.ca.location": str(pki.ca_pem), "ssl.certificate.location": str(pki.client_pem),
                  "ssl.key.location": str(pki.client_pem)}
    with serve(log_dir, protocol, pki) as served:
        got, errors, metadata = confluent_read(served.port, len(want), {"security.protocol": protocol, **config})
    assert errors == [] and got == want
    assert metadata.cluster_id == CLUSTER_ID


class _HandshakeRefusals(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.count = 0

    def emit(self, record):
        self.count += "SSL handshake failed" in record.getMessage()


def test_confluent_kafka_without_a_client_certificate_reads_nothing(setting):
    """ssl.client.auth=required: the server refuses the handshake, confluent-kafka reports the
    broker down and reads nothing. The test stops once both happened (at most 20 s)."""
    log_dir, want, pki = setting
    with serve(log_dir, "SSL", pki) as served, logging_to(_HandshakeRefusals(), "kafkawire.net.acceptor") as server:
        got, errors, _ = confluent_read(served.port, len(want), {"security.protocol": "SSL",
                                                                "ssl.ca.location": str(pki.ca_pem)},
                                        refused=lambda: server.count > 0)
    assert server.count >= 1, "the server did not refuse the handshake"
    assert errors, "confluent-kafka reported no error"
    assert got == []
