"""Real Kafka clients against a running node (`kafkawire test-raft-server`, so that the log
holds data records the leader keeps appending): kafka-python (admin and consumer), kcat,
aiokafka, confluent-kafka; and tshark reads the captured traffic.

What the consumers read is compared with the records in the node's own segment files below
the high watermark the node reported, read straight from disk.
"""
import asyncio
import os
import subprocess
import time

import pytest

from kafkawire.records import iter_batches
from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.peers import kcat, loopback_capture, until_captured

TOPIC = "__cluster_metadata"
CLIENT_TIMEOUT_S = 30
# What Wireshark 4.0's Kafka dissector knows (see tests/net/test_metadata_topic_clients.py):
# the node advertises no more, so the clients negotiate versions the dissector can read.
WIRESHARK_4_0_VERSIONS = "3:9,1:11,2:5,0:8,10:3,22:3,60:0"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """One standalone voter appending 20 records/s of 16 bytes: no raft traffic between nodes,
    so everything on its port is a client's."""
    q = LocalQuorum(tmp_path_factory.mktemp("clients"), voters=1,
                    server_args=lambda c: ["test-raft-server", "--config", c, "--throughput", "20",
                                           "--record-size", "16", "--max-api-versions", WIRESHARK_4_0_VERSIONS])
    q.format(mode="standalone")
    q.start_all()
    try:
        q.wait_for_leader(120)
        q.wait_until(lambda: q.describe(1).high_watermark >= 40, 30, "40 committed records")
        yield q
    finally:
        q.stop_all()
        q.kill(1)


def records_on_disk(q, below: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every data record below ``below``, from the segment files."""
    directory = q.metadata_partition_dir(1)
    out = []
    for name in sorted(f for f in os.listdir(directory) if f.endswith(".log")):
        with open(os.path.join(directory, name), "rb") as f:
            for batch in iter_batches(f.read()):
                if not batch.is_control:
                    out += [(r.offset, bytes(r.value)) for r in batch if r.offset < below]
    return out


def test_kafka_python_admin_describes_the_quorum(node):
    from kafka import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{node.ports[1]}", request_timeout_ms=10000)
    try:
        quorum = admin.describe_metadata_quorum()
    finally:
        admin.close()
    partition = quorum["topics"][0]["partitions"][0]
    assert quorum["topics"][0]["topic_name"] == TOPIC
    assert partition["leader_id"] == 1 and partition["leader_epoch"] >= 1
    assert [v["replica_id"] for v in partition["current_voters"]] == [1]
    assert partition["high_watermark"] >= 40
    assert quorum["nodes"][0]["listeners"][0]["port"] == node.ports[1]


def test_kafka_python_consumer_reads_the_committed_records(node):
    from kafka import KafkaConsumer, TopicPartition
    end = node.describe(1).high_watermark
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{node.ports[1]}", enable_auto_commit=False,
                             request_timeout_ms=10000)
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = []
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while (not got or got[-1][0] < end - 1) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [(m.offset, m.value) for m in records]
    finally:
        consumer.close()
    expected = records_on_disk(node, end)
    assert len(expected) >= 30       # the fixture waited for 40 committed offsets, control records included
    assert got[:len(expected)] == expected




def test_kcat_lists_the_topic_and_consumes_it(node):
    port = node.ports[1]
    listing = subprocess.run([kcat(), "-b", f"127.0.0.1:{port}", "-L"], capture_output=True, text=True,
                             timeout=CLIENT_TIMEOUT_S)
    assert listing.returncode == 0, listing.stderr
    assert f'topic "{TOPIC}" with 1 partitions:' in listing.stdout
    assert "partition 0, leader 1, replicas: 1, isrs: 1" in listing.stdout
    end = node.describe(1).high_watermark
    consumed = subprocess.run([kcat(), "-b", f"127.0.0.1:{port}", "-C", "-t", TOPIC, "-o", "beginning",
                               "-c", str(len(records_on_disk(node, end))), "-f", "%o %S\\n", "-e"],
                              capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
    assert consumed.returncode == 0, consumed.stderr
    got = [tuple(int(x) for x in line.split()) for line in consumed.stdout.splitlines()]
    assert got == [(offset, len(value)) for offset, value in records_on_disk(node, end)]


def test_aiokafka_and_confluent_kafka_connect_and_see_the_topic(node):
    bootstrap = f"127.0.0.1:{node.ports[1]}"
    aiokafka = pytest.importorskip("aiokafka")

    async def aio():
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=10000)
        await asyncio.wait_for(consumer.start(), CLIENT_TIMEOUT_S)
        try:
            return await asyncio.wait_for(consumer.topics(), CLIENT_TIMEOUT_S)
        finally:
            await consumer.stop()

    assert TOPIC in asyncio.run(aio())
    confluent = pytest.importorskip("confluent_kafka.admin")
    admin = confluent.AdminClient({"bootstrap.servers": bootstrap})
    metadata = admin.list_topics(timeout=CLIENT_TIMEOUT_S)
    assert TOPIC in metadata.topics
    assert list(metadata.topics[TOPIC].partitions) == [0]
    assert metadata.brokers[1].port == node.ports[1]


def test_tshark_reads_the_clients_traffic_without_malformed_packets(node, tmp_path):
    port = node.ports[1]
    capture = tmp_path / "clients.pcapng"
    with loopback_capture(port, capture):
        subprocess.run([kcat(), "-b", f"127.0.0.1:{port}", "-L"], capture_output=True, timeout=CLIENT_TIMEOUT_S)
        test_kafka_python_admin_describes_the_quorum(node)
        until_captured(port, capture)
    base = ["tshark", "-r", str(capture), "-d", f"tcp.port=={port},kafka"]

    def fields(display_filter, *names):
        out = subprocess.run(base + ["-Y", display_filter, "-T", "fields"] + [a for n in names for a in ("-e", n)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return [line.split("\t") for line in out.stdout.splitlines()]

    request_keys = {(stream, cid): key for stream, cid, key in
                    fields("kafka.request_key", "tcp.stream", "kafka.correlation_id", "kafka.request_key")}
    bad = fields("_ws.malformed || _ws.expert.severity >= error", "frame.number", "tcp.stream",
                 "kafka.correlation_id")
    # API keys above 47 (DescribeQuorum is 55) are unknown to the dissector: it cannot parse
    # their bodies and says so, which is no fault of the bytes. Everything else must be clean.
    unknown_key = [b for b in bad if int(request_keys.get((b[1], b[2]), "0") or 0) >= 48]
    assert [b for b in bad if b not in unknown_key] == []
    assert unknown_key, "the DescribeQuorum exchange was captured"
    keys = set(request_keys.values())
    assert {"18", "3"} <= keys      # ApiVersions and Metadata were decoded


def test_asked_on_a_follower_clients_are_told_which_node_is_the_active_controller(tmp_path):
    """To ordinary clients every node named itself the controller, so kafka-python's admin calls
    went to followers; Metadata and DescribeCluster now name the raft leader and list it."""
    from kafka import KafkaAdminClient
    from kafkawire.messages.metadata_request import MetadataRequest
    from kafkawire.raft.node.local_quorum import LocalQuorum
    from tests.net.netlib import RawConnection, run

    with LocalQuorum(tmp_path, voters=3).started("initial-controllers", graceful=False) as q:
        leader = q.wait_for_leader(120).leader_id
        follower = next(i for i in q.voter_ids if i != leader)
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{q.ports[follower]}", request_timeout_ms=10000)
        try:
            cluster = admin.describe_cluster()
            quorum = admin.describe_metadata_quorum()       # sent to the controller it was told of
        finally:
            admin.close()

        async def metadata():
            conn = await RawConnection.open(q.ports[follower])
            await conn.send(MetadataRequest(topics=None), 12, 1)
            _, body = await conn.read_response(3, 12)
            conn.close()
            return body
        response = run(metadata())
    assert cluster["controller_id"] == leader
    assert quorum["topics"][0]["partitions"][0]["leader_id"] == leader
    assert response.controller_id == leader
    assert {(b.node_id, b.port) for b in response.brokers} == {(follower, q.ports[follower]), (leader, q.ports[leader])}
