"""Kafka 4.3.1's Java admin client (BrokerApiVersionsCommand) logs in with a Krb5LoginModule JAAS
entry against a throwaway MIT KDC and authenticates to a kafkawire SASL_PLAINTEXT listener with
GSSAPI; asking for another service's ticket is refused with Kafka's message (issue 29)."""
from __future__ import annotations

import subprocess

import pytest

from tests.conftest import unavailable
from tests.interop import kafka_dist
from tests.net.kdc import REALM, Kdc, kdc_binaries_missing, running_kdc
from tests.net.metadata_log import write_metadata_log
from tests.net.served import ServedLog
from tests.net.test_sasl_gssapi import GENERIC, Realm


@pytest.fixture(scope="module")
def realm(tmp_path_factory):
    with running_kdc(tmp_path_factory.mktemp("kdc")) as kdc:
        yield Realm(kdc)


def api_versions(realm, port: int, service: str, tmp_path) -> subprocess.CompletedProcess:
    config = tmp_path / f"client-{service}.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\n"
                      f"sasl.kerberos.service.name={service}\n"
                      "sasl.jaas.config=com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                      f'storeKey=true keyTab="{realm.alice}" principal="alice@{REALM}";\n')
    # Java reads its Kerberos configuration from this property, not from KRB5_CONFIG.
    command = kafka_dist.java_command("org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server",
                                      f"127.0.0.1:{port}", "--command-config", str(config),
                                      system_properties={"java.security.krb5.conf": realm.kdc.krb5_conf})
    return subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_kafkas_admin_client_authenticates_with_gssapi_and_another_service_is_refused(kafka_libs, realm, tmp_path):
    log_dir, _ = write_metadata_log(tmp_path / "log", epochs=1, batches_per_epoch=1, records_per_batch=1,
                                    segment_bytes=4096)
    with ServedLog(log_dir, server_options={"security": realm.security()}) as served:
        good = api_versions(realm, served.port, "kafka", tmp_path)
        refused = api_versions(realm, served.port, "other", tmp_path)
    assert good.returncode == 0, good.stderr[-3000:]
    assert f"127.0.0.1:{served.port} (id: 1" in good.stdout and "SaslHandshake(17)" in good.stdout
    assert refused.returncode != 0 and GENERIC in refused.stdout + refused.stderr, \
        (refused.stdout[-2000:], refused.stderr[-3000:])


def test_kafkawires_gssapi_client_authenticates_to_a_kafka_controller(kafka_controller, realm, monkeypatch):
    """The other way round: a Kafka 4.3.1 controller's GSSAPI listener (the JDK's server, Kafka's
    Krb5LoginModule login) takes kafkawire's client, logged in as alice from her keytab; the
    client asking for another service is refused with Kafka's message."""
    import asyncio

    from kafkawire.messages.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
    from kafkawire.net.client import AuthenticationFailed, NetworkClient
    from kafkawire.net.security import client_options_from_properties
    # Kafka's JVM reads its Kerberos configuration from this property; the tool JVMs ignore it.
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", f"-Djava.security.krb5.conf={realm.kdc.krb5_conf}")
    controller = kafka_controller(1, "TLzTcTRqQLWMRmt0hKa_Gw", "--standalone", properties={
        "listener.security.protocol.map": "CONTROLLER:SASL_PLAINTEXT", "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.mechanism.controller.protocol": "GSSAPI", "sasl.kerberos.service.name": "kafka",
        "listener.name.controller.gssapi.sasl.jaas.config":
            "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
            f'keyTab="{realm.server}" principal="kafka/localhost@{REALM}";'})
    host, port = controller.controller_address.rsplit(":", 1)
    request = DescribeQuorumRequest(topics=[TopicData(topic_name="__cluster_metadata",
                                                      partitions=[PartitionData(partition_index=0)])])

    def describe(service: str):
        options = client_options_from_properties({
            "security.protocol": "SASL_PLAINTEXT", "sasl.kerberos.service.name": service,
            "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                                f'keyTab="{realm.alice}" principal="alice@{REALM}";'})

        async def send():
            async with NetworkClient(request_timeout_ms=20000, **options) as client:
                return await client.send((host, int(port)), request)
        return asyncio.run(send())

    answer = describe("kafka")
    assert answer.error_code == 0 and answer.topics[0].partitions[0].leader_id == 1
    with pytest.raises(AuthenticationFailed, match=GENERIC):
        describe("other")
