"""A Kafka Streams 4.3.1 application with ``group.protocol=streams`` (KIP-1071) on the session's
kafkawire broker (tests/interop/java/streams/StreamsCopy.java): it joins a streams group through
StreamsGroupHeartbeat, the broker creates the changelog topic its count store needs (the
heartbeat's MISSING_INTERNAL_TOPICS), assigns it the tasks, and the application copies every
record of one topic to another and counts them by key into a third, committing offsets with its
member epoch. About 15 s (one JVM). The group's ``streams.initial.rebalance.delay.ms`` is set to 0
first; with Kafka's default (3 s) the same application copies its records about 5 s later, as on a
Kafka 4.3.1 broker.

kafka-streams-4.3.1.jar and its rocksdbjni come from the local Maven repository (``mvn
dependency:get`` when missing), beside the Kafka distribution's libs (tests/interop/kafka_dist.py).
"""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)
from kafkawire.messages.streams_group_describe_request import StreamsGroupDescribeRequest
from kafkawire.protocol.error_codes import Errors
from tests.broker.test_leader_epoch_apis import call
from tests.interop import kafka_dist

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")

pytestmark = pytest.mark.kafka

SOURCE = Path(__file__).parent / "java" / "streams" / "StreamsCopy.java"
REPOSITORY = Path.home() / ".m2" / "repository"
ARTIFACTS = ("org.apache.kafka:kafka-streams:4.3.1", "org.rocksdb:rocksdbjni:10.1.3")
WAIT_S = 90
GROUP_RESOURCE = 32
APP, IN, COPY, COUNTS = "streams-app", "streams-in", "streams-copy", "streams-counts"


def maven_jar(coordinates: str) -> Path:
    group, artifact, version = coordinates.split(":")
    jar = REPOSITORY / Path(*group.split(".")) / artifact / version / f"{artifact}-{version}.jar"
    if not jar.exists():
        subprocess.run(["mvn", "-B", "-q", "dependency:get", f"-Dartifact={coordinates}", "-Dtransitive=false"],
                       check=True, capture_output=True, timeout=300)
    return jar


@pytest.fixture(scope="module")
def streams_classpath(kafka_libs, tmp_path_factory) -> str:
    try:
        jars = [str(maven_jar(c)) for c in ARTIFACTS]
    except (subprocess.SubprocessError, OSError) as exc:
        from tests.conftest import unavailable
        unavailable(f"kafka-streams 4.3.1 is not available from Maven: {exc}")
    classes = tmp_path_factory.mktemp("streams-classes")
    classpath = ":".join([*jars, kafka_dist.classpath()])
    subprocess.run(["javac", "-cp", classpath, "-d", str(classes), str(SOURCE)], check=True, capture_output=True,
                   timeout=120)
    return f"{classes}:{classpath}"


def consume(node, topic: str, done, decode) -> list:
    """Read ``topic`` from the start until ``done(records)``: [(key, value)] in the order read."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": node.bootstrap_servers, "group.id": f"check-{topic}",
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    records: list = []
    deadline = time.monotonic() + WAIT_S
    try:
        while not done(records):
            assert time.monotonic() < deadline, f"{topic}: {records}"
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                records.append((message.key().decode(), decode(message.value())))
    finally:
        consumer.close()
    return records


def test_a_streams_application_copies_and_counts_through_a_streams_group(kafkawire_broker, streams_classpath,
                                                                          tmp_path):
    node = kafkawire_broker
    admin = confluent_admin.AdminClient({"bootstrap.servers": node.bootstrap_servers})
    for future in admin.create_topics([confluent_admin.NewTopic(t, 2, 1) for t in (IN, COPY, COUNTS)]).values():
        future.result(WAIT_S)
    # no initial rebalance delay for this group (Kafka's default 3 s would cost a heartbeat interval)
    altered = call(node, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=GROUP_RESOURCE, resource_name=APP, configs=[AlterableConfig(
            name="streams.initial.rebalance.delay.ms", config_operation=0, value="0")])]), 1)
    assert [r.error_code for r in altered.responses] == [Errors.NONE]
    app = subprocess.Popen(
        ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
         f"-Dlog4j2.configurationFile={kafka_dist.LOG4J_TOOLS}", "-cp", streams_classpath, "StreamsCopy",
         node.bootstrap_servers, APP, IN, COPY, COUNTS, str(tmp_path / "state")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap_servers})
        sent = [(f"k{i % 3}-{i}" if i >= 27 else f"k{i % 3}", f"v{i}") for i in range(30)]
        for key, value in sent:
            producer.produce(IN, key=key, value=value)
        assert producer.flush(WAIT_S) == 0
        copied = consume(node, COPY, lambda records: len(records) >= 30, bytes.decode)
        assert sorted(copied) == sorted(sent)
        final = {"k0": 9, "k1": 9, "k2": 9, "k0-27": 1, "k1-28": 1, "k2-29": 1}
        counts = consume(node, COUNTS, lambda records: dict(records) == final, lambda value: int.from_bytes(value, "big"))
        assert all(count <= final[key] for key, count in counts)     # counts only grow
        changelog = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog"
        topics = admin.list_topics(timeout=WAIT_S).topics
        assert len(topics[changelog].partitions) == 2              # created by the broker, one per task
        group = call(node, StreamsGroupDescribeRequest(group_ids=[APP]), 0).groups[0]
        assert (group.error_code, group.group_state, len(group.members)) == (Errors.NONE, "Stable", 1)
        assigned = {(t.subtopology_id, p) for t in group.members[0].assignment.active_tasks for p in t.partitions}
        assert assigned == {("0", 0), ("0", 1)}
    finally:
        try:
            output = app.communicate(input="", timeout=60)[0]
        except subprocess.TimeoutExpired:
            app.kill()
            output = app.communicate()[0]
    assert "RUNNING" in output and "CLOSED" in output and "ERROR" not in output, output[-3000:]
