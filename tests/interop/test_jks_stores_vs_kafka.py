"""A kafkawire node whose SSL listener has JKS key and trust stores, Kafka's default store type
(the stores keytool wrote, tests/net/data/java_stores), reached with mutual TLS by Kafka 4.3.1's
MetadataQuorumCommand whose ``--command-config`` names JKS stores too."""
from __future__ import annotations

import re

from kafkawire.net.security import client_ssl_context, ssl_settings
from kafkawire.raft.node.local_quorum import LocalQuorum
from kafkawire.storage.state_files import JavaProperties
from tests.interop.kafka_procs import METADATA_QUORUM, run_kafka_tool
from tests.net.test_java_stores import PASSWORD, store


def test_kafka_tool_reaches_a_node_with_jks_stores_over_mutual_tls(tmp_path, kafka_libs):
    stores = {"ssl.truststore.location": store("truststore.jks"), "ssl.truststore.password": PASSWORD}
    node = {"listener.security.protocol.map": "CONTROLLER:SSL", "ssl.client.auth": "required",
            "ssl.keystore.location": store("server.jks"), "ssl.keystore.password": PASSWORD, **stores}
    client = {"ssl.keystore.location": store("client.jks"), "ssl.keystore.password": PASSWORD, **stores}
    ssl_context = client_ssl_context(ssl_settings(JavaProperties.parse(
        "".join(f"{k}={v}\n" for k, v in client.items())).items, "CONTROLLER"))
    q = LocalQuorum(tmp_path, voters=1, properties=node, client_options={"ssl_context": ssl_context})
    q.format(mode="standalone")
    q.start_all()
    try:
        q.wait_for_leader(60)
        config = tmp_path / "client.properties"
        config.write_text("security.protocol=SSL\nrequest.timeout.ms=5000\ndefault.api.timeout.ms=15000\n"
                          + "".join(f"{k}={v}\n" for k, v in client.items()))
        result = run_kafka_tool(METADATA_QUORUM, "--bootstrap-controller", f"127.0.0.1:{q.ports[1]}",
                                "--command-config", str(config), "describe", "--status", check=False, timeout=90)
        assert result.returncode == 0, result.stderr[-3000:]
        assert re.search(r"^ClusterId:\s+" + re.escape(q.cluster_id) + "$", result.stdout, re.M), result.stdout
        assert re.search(r"^LeaderId:\s+1$", result.stdout, re.M), result.stdout
    finally:
        q.stop_all()
        q.kill(1)
