"""A one-node combined kafkawire (process.roles=broker,controller, `kafkawire server-start` as a
subprocess on free ports) used as a Kafka broker: kafka-python produces with acks=1 and
acks=all and a consumer with manual assignment reads every record back in order; the
refusals come back with Kafka's error codes; idempotent producers (kafka-python's default,
confluent-kafka's enable.idempotence) get producer ids and their retries are answered as
duplicates; the log directory has Kafka's layout and survives kill -9; its Prometheus endpoint
counts the broker listener's and the controller listener's requests in one RequestMetrics. One node for the whole module (started once, killed by pid at teardown).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import struct
import subprocess
import threading
import time
import urllib.request

import pytest
from crc32c import crc32c

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic
from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.client import NetworkClient
from kafkawire.net.config import PROMETHEUS_REPORTER
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch, build_control_batch
from kafkawire.storage.state_files import read_offset_checkpoint
from kafkawire.tools import cli

from .wire import call

kafka = pytest.importorskip("kafka")

WAIT_S = 60


class Node:
    """The combined node: its quorum handle, broker address and a raw client."""

    def __init__(self, quorum: LocalQuorum, broker_port: int):
        self.quorum = quorum
        self.broker = ("127.0.0.1", broker_port)
        self.bootstrap = f"127.0.0.1:{broker_port}"
        self.data_dir = quorum.data_dir(1)

    def call(self, request, api_version=None, timeout_ms=10_000):
        return call(self.broker, request, api_version, timeout_ms=timeout_ms)

    def brokers(self) -> list[int]:
        try:
            return [b.node_id for b in self.call(MetadataRequest(topics=[]), api_version=12, timeout_ms=2000).brokers]
        except (OSError, Exception):            # not listening yet, or the connection reset
            return []

    def wait_unfenced(self) -> None:
        """The broker lists itself in Metadata only once registered and unfenced."""
        self.quorum.wait_until(lambda: self.quorum._check_alive([1]) or self.brokers() == [1], WAIT_S,
                               "the broker to register and be unfenced")

    def create_topic(self, name: str, partitions: int = 1, **configs) -> None:
        response = self.call(CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1, assignments=[],
            configs=[CreatableTopicConfig(name=k.replace("_", "."), value=str(v)) for k, v in configs.items()])]))
        assert [(t.name, t.error_code) for t in response.topics] == [(name, Errors.NONE)]
        self.quorum.wait_until(lambda: self.leaders(name) == [1] * partitions, WAIT_S, f"leaders of {name}")

    def leaders(self, name: str) -> list[int]:
        response = self.call(MetadataRequest(topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False),
                             api_version=12)
        return [p.leader_id for t in response.topics for p in sorted(t.partitions, key=lambda p: p.partition_index)]

    def produce(self, topic: str, records: bytes, partition: int = 0, acks: int = 1):
        response = self.call(ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[TopicProduceData(
            name=topic, partition_data=[PartitionProduceData(index=partition, records=records)])]), api_version=12)
        return response.responses[0].partition_responses[0]

    def init_producer_id(self, version: int = 4):
        """InitProducerId for an idempotent producer, asked again while the broker fetches its
        first id block (COORDINATOR_LOAD_IN_PROGRESS, as Kafka answers then)."""
        def answered():
            response = self.call(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000),
                                 api_version=version)
            return response if response.error_code != Errors.COORDINATOR_LOAD_IN_PROGRESS else None
        return self.quorum.wait_until(answered, WAIT_S, "InitProducerId to hand out a producer id")

    def fetch(self, topic: str, offset: int, partition: int = 0, *, max_wait_ms: int = 0, min_bytes: int = 0,
              partition_max_bytes: int = 1 << 20):
        response = self.call(FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=1 << 24,
                                          isolation_level=0, session_id=0, session_epoch=-1, topics=[FetchTopic(
                                              topic=topic, partitions=[FetchPartition(
                                                  partition=partition, fetch_offset=offset, current_leader_epoch=-1,
                                                  log_start_offset=-1, partition_max_bytes=partition_max_bytes)])],
                                          forgotten_topics_data=[], rack_id=""),
                             api_version=12, timeout_ms=max_wait_ms + 10_000)
        return response.responses[0].partitions[0]

    def list_offset(self, topic: str, timestamp: int, partition: int = 0):
        response = self.call(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1,
                                                         timestamp=timestamp)])]))
        return response.topics[0].partitions[0]


@contextlib.contextmanager
def combined_node(base, **properties):
    """A one-node combined kafkawire on free ports under ``base`` (``properties`` added to its
    server.properties, dots written as underscores), killed by pid at the end."""
    broker_port, = free_ports(1)
    quorum = LocalQuorum(base, voters=1, properties={
        "process.roles": "broker,controller",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        # A restarted node waits for its previous incarnation's session to end (as Kafka's
        # controller refuses a second registration until then): keep it short here.
        "broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300",
        "controller.quorum.election.timeout.ms": "200",     # one voter: no need to wait for others
        **{k.replace("_", "."): str(v) for k, v in properties.items()},
    })
    quorum.node_properties[1] = {"listeners": f"PLAINTEXT://127.0.0.1:{broker_port},"
                                              f"CONTROLLER://127.0.0.1:{quorum.ports[1]}"}
    quorum.format(mode="standalone")
    quorum.start(1)
    try:
        n = Node(quorum, broker_port)
        n.wait_unfenced()
        yield n
    finally:
        proc = quorum.processes.get(1)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def _metrics_endpoint() -> dict:
    """The Prometheus endpoint's settings on a free port, when prometheus_client is installed."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return {}
    port, = free_ports(1)
    return {"metric_reporters": PROMETHEUS_REPORTER, "kafkawire_metrics_prometheus_listener": f"http://127.0.0.1:{port}"}


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    # The log manager's checkpoints at once and often (Kafka's: after 30 s, then every 60 s / 5 s)
    metrics = _metrics_endpoint()
    with combined_node(tmp_path_factory.mktemp("combined"), log_initial_task_delay_ms=0,
                       log_flush_offset_checkpoint_interval_ms=500, log_flush_start_offset_checkpoint_interval_ms=500,
                       replica_high_watermark_checkpoint_interval_ms=500, log_retention_check_interval_ms=500,
                       log_cleaner_backoff_ms=200, **metrics) as n:
        n.metrics_url = metrics.get("kafkawire_metrics_prometheus_listener")
        yield n


def test_kafka_python_produces_with_acks_1_and_all_and_a_consumer_reads_every_record_in_order(node):
    """The first usable slice: a Python producer and consumer against kafkawire alone (acks=1,
    acks=all with gzip, acks=0 with lz4)."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    node.create_topic("orders", partitions=2)
    sent = {0: [], 1: []}
    for acks, compression in ((1, None), ("all", "gzip"), (0, "lz4")):
        producer = KafkaProducer(bootstrap_servers=node.bootstrap, acks=acks, enable_idempotence=False,
                                 compression_type=compression, linger_ms=5)
        futures = []
        for i in range(150):
            value = f"{acks}-{i}".encode()
            futures.append(producer.send("orders", key=b"k%d" % i, value=value, partition=i % 2))
            sent[i % 2].append(value)
        metadata = [f.get(timeout=30) for f in futures]
        producer.close(timeout=10)
        assert all(m.offset >= 0 for m in metadata) or acks == 0      # acks=0: no answer, offset -1
    consumer = KafkaConsumer(bootstrap_servers=node.bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             group_id=None, consumer_timeout_ms=5000)
    consumer.assign([TopicPartition("orders", 0), TopicPartition("orders", 1)])
    got = {0: [], 1: []}
    offsets = {0: [], 1: []}
    deadline = time.monotonic() + WAIT_S
    while sum(map(len, got.values())) < 450 and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=1000).values():
            for message in batch:
                got[message.partition].append(message.value)
                offsets[message.partition].append(message.offset)
    consumer.close()
    assert got == sent
    assert offsets == {0: list(range(225)), 1: list(range(225))}


def test_the_partition_directory_has_kafkas_layout(node):
    node.create_topic("layout")
    assert node.produce("layout", build_batch([(b"k", b"v")])).error_code == Errors.NONE
    directory = os.path.join(node.data_dir, "layout-0")
    names = set(os.listdir(directory))
    assert {"00000000000000000000.log", "partition.metadata"} <= names


def test_produce_to_an_unknown_topic_is_unknown_topic_or_partition(node):
    response = node.produce("no-such-topic", build_batch([(b"k", b"v")]))
    assert (response.error_code, response.base_offset) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1)


def test_produce_to_a_partition_the_topic_lacks_is_unknown_topic_or_partition(node):
    node.create_topic("one-partition")
    assert node.produce("one-partition", build_batch([(b"k", b"v")]), partition=5).error_code == \
        Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_a_batch_over_the_topics_max_message_bytes_is_message_too_large(node):
    node.create_topic("small", max_message_bytes=200)
    big = build_batch([(b"k", b"x" * 300)])
    response = node.produce("small", big, acks=-1)
    # Kafka's answer carries no message nor log start offset for a RecordTooLargeException
    assert (response.error_code, response.error_message, response.log_start_offset) == \
        (Errors.MESSAGE_TOO_LARGE, None, -1)
    assert node.produce("small", build_batch([(b"k", b"x")]), acks=-1).error_code == Errors.NONE


def test_refused_records_are_answered_as_kafkas_replica_manager_answers_them(node):
    """Kafka 4.3.1's answers (tests/interop/test_produce_refusals_vs_kafka.py asks a live one): no
    error message but for record errors; the partition's log start offset for what the log refused,
    -1 for a CRC, a size, or records KafkaApis refused before the log; a transactional batch (any
    producer id) without a transactional id refuses the whole request."""
    node.create_topic("refused")
    good = build_batch([(b"k", b"v")])
    assert node.produce("refused", good).error_code == Errors.NONE

    def answer(records):
        r = node.produce("refused", records)
        return r.error_code, r.error_message, r.log_start_offset
    flipped = bytearray(good)
    flipped[-1] ^= 0x01
    assert answer(build_batch([(b"k", b"v")], base_offset=7)) == (Errors.INVALID_RECORD, None, 0)
    assert answer(build_batch([(b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=-1)) == \
        (Errors.INVALID_RECORD, None, 0)
    assert answer(bytes(flipped)) == (Errors.CORRUPT_MESSAGE, None, -1)
    garbled = bytearray(good)                                   # a key length past the record, CRC made right
    garbled[65] = 0x7E
    struct.pack_into(">I", garbled, 17, crc32c(bytes(garbled[21:])))
    assert answer(bytes(garbled)) == (Errors.INVALID_RECORD, None, 0)
    gzipped = bytearray(build_batch([(b"k", b"v" * 50)], compression_type=1))
    gzipped[61:] = b"\x00" * (len(gzipped) - 61)                 # not gzip, CRC made right
    struct.pack_into(">I", gzipped, 17, crc32c(bytes(gzipped[21:])))
    assert answer(bytes(gzipped)) == (Errors.UNKNOWN_SERVER_ERROR, None, 0)
    assert answer(good + good) == (Errors.INVALID_RECORD, None, -1)
    assert answer(good[:-3]) == (Errors.INVALID_RECORD, None, -1)
    for transactional in (build_batch([(b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=0,
                                      is_transactional=True), build_control_batch(0, b"\x00" * 6)):
        assert answer(transactional) == (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None, -1)
    assert node.list_offset("refused", -1).offset == 1


def test_a_batch_with_a_bad_crc_sent_raw_is_corrupt_message_and_not_stored(node):
    node.create_topic("crc")
    data = bytearray(build_batch([(b"k", b"v")]))
    data[-1] ^= 0x01
    assert node.produce("crc", bytes(data)).error_code == Errors.CORRUPT_MESSAGE
    assert node.list_offset("crc", -1).offset == 0


def test_offsets_are_assigned_and_fetch_serves_the_stored_batches(node):
    node.create_topic("offsets")
    first = node.produce("offsets", build_batch([(b"a", b"1"), (b"b", b"2")]))
    second = node.produce("offsets", build_batch([(b"c", b"3")]), acks=-1)
    assert (first.base_offset, second.base_offset) == (0, 2)
    assert (node.list_offset("offsets", -2).offset, node.list_offset("offsets", -1).offset) == (0, 3)
    data = node.fetch("offsets", 0)
    assert (data.error_code, data.high_watermark) == (Errors.NONE, 3)
    batches = list(iter_batches(data.records))
    assert [(b.base_offset, b.last_offset) for b in batches] == [(0, 1), (2, 2)]
    assert [r.value for b in batches for r in b] == [b"1", b"2", b"3"]


def test_list_offsets_by_timestamp_finds_the_first_record_at_or_after_it(node):
    # Timestamps of 1970 are past any time retention: this module's node runs retention every
    # 500 ms and would delete them, as Kafka would, before the lookups
    node.create_topic("timed", retention_ms=-1)
    node.produce("timed", build_batch([(b"a", b"1", [], 1000), (b"b", b"2", [], 2000)]))
    node.produce("timed", build_batch([(b"c", b"3", [], 3000)]))
    found = node.list_offset("timed", 1500)
    assert (found.error_code, found.offset, found.timestamp) == (Errors.NONE, 1, 2000)
    assert node.list_offset("timed", 9999).offset == -1
    assert (node.list_offset("timed", -3).offset, node.list_offset("timed", -3).timestamp) == (2, 3000)


def test_fetch_returns_at_least_one_whole_batch_beyond_partition_max_bytes(node):
    node.create_topic("one-batch")
    node.produce("one-batch", build_batch([(b"k", b"x" * 500)]))
    node.produce("one-batch", build_batch([(b"k", b"y" * 500)]))
    data = node.fetch("one-batch", 0, partition_max_bytes=10)
    assert [b.base_offset for b in iter_batches(data.records)] == [0]


def test_a_fetchs_max_bytes_bounds_the_whole_answer_after_the_first_whole_batch(node):
    """KIP-74: the request's max_bytes bounds the answer over all its partitions, in their order;
    the first partition with records returns one whole batch even when it is larger, the next ones
    only what is left (a batch larger than that: none, and no error)."""
    node.create_topic("budget", partitions=3)
    for p in range(3):
        node.produce("budget", build_batch([(b"k", b"x" * 500)]), partition=p)

    def fetch_all(max_bytes: int) -> list[int]:
        response = node.call(FetchRequest(
            replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0, session_id=0,
            session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[FetchTopic(topic="budget", partitions=[
                FetchPartition(partition=p, fetch_offset=0, current_leader_epoch=-1, log_start_offset=-1,
                               partition_max_bytes=1 << 20) for p in range(3)])]), api_version=12)
        parts = sorted(response.responses[0].partitions, key=lambda d: d.partition_index)
        assert [(d.error_code, d.high_watermark) for d in parts] == [(Errors.NONE, 1)] * 3
        return [len(d.records or b"") for d in parts]

    whole = fetch_all(1 << 20)
    batch = whole[0]
    assert whole == [batch] * 3 and batch > 500
    assert fetch_all(2 * batch + batch // 2) == [batch, batch, 0]
    assert fetch_all(10) == [batch, 0, 0]


def test_acks_other_than_0_1_and_all_are_invalid_required_acks_for_the_partitions_that_exist(node):
    """Kafka's order: KafkaApis answers the unknown topics and partitions and the records
    ProduceRequest.validateRecords refuses first (here no batch: INVALID_RECORD), then
    ReplicaManager.appendRecords refuses every other partition with INVALID_REQUIRED_ACKS and
    appends nothing."""
    node.create_topic("bad-acks", partitions=2)
    record = build_batch([(b"k", b"v")])
    response = node.call(ProduceRequest(acks=2, timeout_ms=5000, topic_data=[
        TopicProduceData(name="bad-acks", partition_data=[PartitionProduceData(index=0, records=record),
                                                          PartitionProduceData(index=1, records=b""),
                                                          PartitionProduceData(index=7, records=record)]),
        TopicProduceData(name="bad-acks-unknown", partition_data=[PartitionProduceData(index=0, records=record)])]),
        api_version=12)
    assert {(t.name, p.index): p.error_code for t in response.responses for p in t.partition_responses} == {
        ("bad-acks", 0): Errors.INVALID_REQUIRED_ACKS, ("bad-acks", 1): Errors.INVALID_RECORD,
        ("bad-acks", 7): Errors.UNKNOWN_TOPIC_OR_PARTITION, ("bad-acks-unknown", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert node.list_offset("bad-acks", -1).offset == 0


def test_fetch_outside_the_log_is_offset_out_of_range(node):
    node.create_topic("range")
    node.produce("range", build_batch([(b"k", b"v")]))
    assert node.fetch("range", 5).error_code == Errors.OFFSET_OUT_OF_RANGE
    assert node.fetch("range", 1).error_code == Errors.NONE          # the log end: nothing yet


def test_a_long_poll_returns_as_soon_as_a_batch_arrives(node):
    """min_bytes=1 at the log end with a 30 s wait: the fetch is answered with the batch that a
    produce appends meanwhile, not empty at the end of its wait."""
    node.create_topic("poll")
    result = {}
    waiting = threading.Thread(target=lambda: result.update(data=node.fetch("poll", 0, max_wait_ms=30_000,
                                                                            min_bytes=1)))
    waiting.start()
    node.produce("poll", build_batch([(b"k", b"late")]))
    waiting.join(timeout=WAIT_S)
    assert not waiting.is_alive()
    assert [r.value for b in iter_batches(result["data"].records) for r in b] == [b"late"]


def test_log_append_time_topics_get_the_brokers_time(node):
    node.create_topic("appended", message_timestamp_type="LogAppendTime")
    before = int(time.time() * 1000)
    response = node.produce("appended", build_batch([(b"k", b"v", [], 1)]))
    assert response.log_append_time_ms >= before
    batch = next(iter(iter_batches(node.fetch("appended", 0).records)))
    assert (batch.timestamp_type, batch.max_timestamp) == (1, response.log_append_time_ms)


def test_metadata_auto_creates_a_topic_as_kafka_does_by_default(node):
    request = MetadataRequest(topics=[MetadataRequestTopic(name="auto-made")], allow_auto_topic_creation=True)
    first = node.call(request, api_version=12).topics[0]
    assert first.error_code in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.NONE)
    node.quorum.wait_until(lambda: node.leaders("auto-made") == [1], WAIT_S, "auto-made to be created")


def test_metadata_without_auto_creation_leaves_an_unknown_topic_unknown(node):
    request = MetadataRequest(topics=[MetadataRequestTopic(name="not-made")], allow_auto_topic_creation=False)
    assert node.call(request, api_version=12).topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert node.leaders("not-made") == []


def test_confluent_kafka_produces_with_acks_all_and_zstd_and_reads_back(node):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    node.create_topic("librdkafka")
    producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap, "acks": "all",
                                         "compression.type": "zstd"})
    failures = []
    for i in range(50):
        producer.produce("librdkafka", value=b"%d" % i, partition=0,
                         on_delivery=lambda error, message: failures.append(error) if error else None)
    assert producer.flush(WAIT_S) == 0 and failures == []
    consumer = confluent_kafka.Consumer({"bootstrap.servers": node.bootstrap, "group.id": "never-joined",
                                         "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition("librdkafka", 0, 0)])
    got = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < 50 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.close()
    assert got == [b"%d" % i for i in range(50)]


def test_kafka_pythons_default_idempotent_producer_is_served_and_its_records_stored_once(node):
    """kafka-python's default (enable_idempotence=True): InitProducerId gives it a producer id,
    its batches carry it with sequences from 0, and every record is stored exactly once."""
    from kafka import KafkaProducer
    node.create_topic("idempotent")
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, linger_ms=5)
    assert producer.config["enable_idempotence"]
    metadata = [f.get(timeout=30) for f in [producer.send("idempotent", b"%d" % i, partition=0) for i in range(40)]]
    producer.close(timeout=10)
    assert [m.offset for m in metadata] == list(range(40))
    batches = list(iter_batches(node.fetch("idempotent", 0).records))
    assert [r.value for b in batches for r in b] == [b"%d" % i for i in range(40)]
    assert {b.producer_id for b in batches} != {-1} and batches[0].base_sequence == 0


def test_confluent_kafka_with_enable_idempotence_stores_every_record_once(node):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    node.create_topic("librdkafka-idempotent")
    producer = confluent_kafka.Producer({"bootstrap.servers": node.bootstrap, "enable.idempotence": True,
                                         "linger.ms": 5})
    failures = []
    for i in range(30):
        producer.produce("librdkafka-idempotent", value=b"%d" % i, partition=0,
                         on_delivery=lambda error, message: failures.append(error) if error else None)
    assert producer.flush(WAIT_S) == 0 and failures == []
    batches = list(iter_batches(node.fetch("librdkafka-idempotent", 0).records))
    assert [r.value for b in batches for r in b] == [b"%d" % i for i in range(30)]
    assert {b.producer_id for b in batches} != {-1}


def test_a_retried_idempotent_batch_is_answered_with_its_first_offset_and_not_stored_twice(node):
    node.create_topic("retried")
    pid = node.init_producer_id().producer_id
    first = build_batch([(b"k", b"a"), (b"k", b"b")], producer_id=pid, producer_epoch=0, base_sequence=0)
    assert node.produce("retried", first).base_offset == 0
    assert node.produce("retried", first).base_offset == 0          # the retry: same offset, no append
    gap = build_batch([(b"k", b"c")], producer_id=pid, producer_epoch=0, base_sequence=5)
    assert node.produce("retried", gap).error_code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert [r.value for b in iter_batches(node.fetch("retried", 0).records) for r in b] == [b"a", b"b"]


def test_kcat_produces_and_consumes(node):
    if shutil.which("kcat") is None:
        from tests.conftest import unavailable
        unavailable("kcat is not installed")
    node.create_topic("kcat")
    lines = "".join(f"line {i}\n" for i in range(20))
    produced = subprocess.run(["kcat", "-P", "-b", node.bootstrap, "-t", "kcat", "-p", "0", "-z", "lz4"],
                              input=lines, text=True, capture_output=True, timeout=WAIT_S)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(["kcat", "-C", "-b", node.bootstrap, "-t", "kcat", "-p", "0", "-o", "beginning", "-e",
                               "-q", "-f", "%o %s\n"], text=True, capture_output=True, timeout=WAIT_S)
    assert consumed.stdout == "".join(f"{i} line {i}\n" for i in range(20)), consumed.stderr


def test_a_compacted_topic_is_cleaned_by_the_running_broker(node):
    """cleanup.policy=compact with segment.ms=1 (a segment per batch): the log cleaner (its backoff 200 ms
    here) leaves the latest record of each key below the active segment, at its offset, however its
    rounds fall between the appends."""
    # Any dirty share is cleanable: the cleaner may run between the appends, and with Kafka's 0.5 a
    # log cleaned after four of them would keep a dirty ratio of 2/4, not above it, for ever.
    node.create_topic("compacted", cleanup_policy="compact", segment_ms=1, min_cleanable_dirty_ratio=0.01)
    now = int(time.time() * 1000)
    for i, key in enumerate(b"ababab"):      # timestamps 10 ms apart: each batch rolls (segment.ms)
        node.produce("compacted", build_batch([(bytes([key]), str(i).encode(), [], now + 10 * i)]))
    directory = os.path.join(node.data_dir, "compacted-0")
    active = max(int(name[:-4]) for name in os.listdir(directory) if name.endswith(".log"))
    assert active == 5                   # every batch after the first rolled a segment
    latest = {b"ababab"[offset]: offset for offset in range(active)}
    expected = sorted(latest.values()) + list(range(active, 6))       # [3, 4, 5]

    def cleaned():
        offsets, position = [], 0
        while position < 6:         # a fetch reads one segment: the cleaned one, then the active one
            batches = list(iter_batches(node.fetch("compacted", position).records))
            offsets += [r.offset for b in batches for r in b]
            position = batches[-1].next_offset
        return offsets == expected or None
    node.quorum.wait_until(cleaned, WAIT_S, "the log cleaner to clean the compacted topic")
    names = os.listdir(directory)
    assert "00000000000000000000.log" in names and "00000000000000000005.log" in names


def test_dump_log_reads_the_brokers_segment(node, capsys):
    node.create_topic("dumped")
    node.produce("dumped", build_batch([(b"k", b"v1"), (b"k", b"v2")]))
    segment = os.path.join(node.data_dir, "dumped-0", "00000000000000000000.log")
    assert cli.main(["dump-log", "--files", segment, "--print-data-log"]) == 0
    out = capsys.readouterr().out
    assert "baseOffset: 0 lastOffset: 1 count: 2" in out and "isvalid: true" in out
    assert "payload: v1" in out and "payload: v2" in out


def versioned_requests(topic: str, topic_id, version_tag: str) -> dict:
    """A request of each broker API, aimed at ``topic`` (by name and by id, whichever the version reads)."""
    return {
        0: ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name=topic, topic_id=topic_id, partition_data=[PartitionProduceData(
                index=0, records=build_batch([(b"k", version_tag.encode())]))])]),
        1: FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                        session_epoch=-1, forgotten_topics_data=[], rack_id="", topics=[FetchTopic(
                            topic=topic, topic_id=topic_id, partitions=[FetchPartition(
                                partition=0, fetch_offset=0, current_leader_epoch=-1, log_start_offset=-1,
                                partition_max_bytes=1 << 20)])]),
        2: ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])]),
        3: MetadataRequest(topics=[MetadataRequestTopic(name=topic)]),
        19: CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name=f"made-{version_tag}", num_partitions=1, replication_factor=1, assignments=[], configs=[])]),
        22: InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000),
        21: DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsTopic(name=topic, partitions=[
            DeleteRecordsPartition(partition_index=0, offset=-1)])]),
        60: DescribeClusterRequest(),
    }


def errors_of(response) -> list[int]:
    """Every error code in a response of the broker APIs (top level, topics, partitions)."""
    codes = [getattr(response, "error_code", 0)]
    for topic in getattr(response, "responses", None) or getattr(response, "topics", None) or []:
        codes.append(getattr(topic, "error_code", 0))
        for partition in (getattr(topic, "partitions", None) or getattr(topic, "partition_responses", None) or []):
            codes.append(partition.error_code)
    return codes


def test_one_request_metrics_counts_the_broker_and_controller_listeners_requests(node):
    """kafka.network RequestMetrics on the endpoint once: the broker listener's Metadata and the
    controller listener's BrokerHeartbeat (the node's broker heartbeats its controller over it)."""
    parser = pytest.importorskip("prometheus_client.parser")
    node.call(MetadataRequest(topics=[]), api_version=12)
    with urllib.request.urlopen(node.metrics_url + "/metrics", timeout=10) as answer:
        text = answer.read().decode()
    families = [f.name for f in parser.text_string_to_metric_families(text)]
    assert len(families) == len(set(families)), "a family exported twice"
    counts = {s.labels["request"]: s.value for f in parser.text_string_to_metric_families(text)
              for s in f.samples if s.name == "kafka_network_requestmetrics_totaltimems_count"}
    assert counts.get("Metadata", 0) >= 1 and counts.get("BrokerHeartbeat", 0) >= 1, counts


def test_every_advertised_version_of_every_broker_api_is_answered_without_an_error(node):
    node.create_topic("versions")
    topic_id = node.call(MetadataRequest(topics=[MetadataRequestTopic(name="versions")]), api_version=12).topics[0].topic_id
    advertised = {k.api_key: (k.min_version, k.max_version) for k in node.call(ApiVersionsRequest(
        client_software_name="kafkawire-tests", client_software_version="1")).api_keys}
    assert {0, 1, 2, 3, 18, 19, 21, 60} <= set(advertised) and advertised[22] == (0, 5)
    assert advertised[21] == (0, 2)                     # DeleteRecords: Kafka 4.3.1's range
    node.init_producer_id()                 # the broker has its first producer id block
    for key in (0, 1, 2, 3, 19, 21, 22, 60):
        low, high = advertised[key]
        if key == 0:            # Produce v0-2 are advertised (as Kafka does, KAFKA-18659) but refused
            low = 3
        for version in range(low, high + 1):
            request = versioned_requests("versions", topic_id, f"{key}-{version}")[key]
            assert set(errors_of(node.call(request, api_version=version))) == {Errors.NONE}, (key, version)


def test_delete_records_through_kafka_pythons_admin_moves_the_log_start_and_the_checkpoints_say_so(node):
    """kafka-python's KafkaAdminClient.delete_records answers the new low watermark; fetches below
    it are OFFSET_OUT_OF_RANGE; the next retention pass deletes the segments wholly below it (one
    a batch here: segment.ms=1 and timestamps 10 ms apart; the third batch holds offsets 2 and 3),
    their files gone after file.delete.delay.ms=0; the log directory's checkpoint files, in
    Kafka's format, give the partition's high watermark, recovery point (the active segment's base)
    and log start offset (listed as it is past the first segment's base)."""
    from kafka import KafkaAdminClient, TopicPartition
    node.create_topic("trimmed", segment_ms=1, file_delete_delay_ms=0)
    start = int(time.time() * 1000)
    for i, values in enumerate(([b"0"], [b"1"], [b"2", b"3"], [b"4"])):
        batch = build_batch([(b"k", v, [], start + 10 * i) for v in values])
        assert node.produce("trimmed", batch).error_code == Errors.NONE
    admin = KafkaAdminClient(bootstrap_servers=node.bootstrap, request_timeout_ms=10_000)
    try:
        result = admin.delete_records({TopicPartition("trimmed", 0): 3})
    finally:
        admin.close()
    assert result[TopicPartition("trimmed", 0)]["low_watermark"] == 3
    assert node.fetch("trimmed", 2).error_code == Errors.OFFSET_OUT_OF_RANGE
    assert node.list_offset("trimmed", -2).offset == 3
    directory = os.path.join(node.data_dir, "trimmed-0")
    node.quorum.wait_until(lambda: sorted(n for n in os.listdir(directory) if n.endswith((".log", ".deleted"))) == [
        "00000000000000000002.log", "00000000000000000004.log"], WAIT_S, "retention to delete the segments below 2")
    checkpoints = {name: os.path.join(node.data_dir, name) for name in (
        "replication-offset-checkpoint", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint")}

    def written() -> dict:
        try:
            return {name: read_offset_checkpoint(path).get(("trimmed", 0)) for name, path in checkpoints.items()}
        except (OSError, ValueError):           # not yet written
            return {}
    expected = {"replication-offset-checkpoint": 5, "recovery-point-offset-checkpoint": 4,
                "log-start-offset-checkpoint": 3}
    node.quorum.wait_until(lambda: written() == expected, WAIT_S, "the checkpoints to name trimmed-0")
    with open(checkpoints["replication-offset-checkpoint"]) as f:
        lines = f.read().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2 and "trimmed 0 5" in lines


def test_acknowledged_records_survive_kill_9_and_a_torn_tail_is_cut_at_restart(node):
    """Last in the module: it restarts the node. The log is recovered on open (a torn batch at
    the end of the segment, as a crash mid-write leaves, is cut) and the broker leads its
    partitions again once re-registered and unfenced; the next produce continues the offsets, and
    a retry of the idempotent batch sent before the crash is still a duplicate (the producer
    state replayed from the log)."""
    node.create_topic("durable")
    for i in range(4):
        assert node.produce("durable", build_batch([(b"k", b"%d" % i)])).error_code == Errors.NONE
    pid = node.init_producer_id().producer_id
    idempotent = build_batch([(b"k", b"4")], producer_id=pid, producer_epoch=0, base_sequence=0)
    assert node.produce("durable", idempotent).base_offset == 4
    node.quorum.kill(1)
    segment = os.path.join(node.data_dir, "durable-0", "00000000000000000000.log")
    with open(segment, "ab") as f:
        f.write(build_batch([(b"k", b"torn")])[:-7])
    node.quorum.start(1)
    node.wait_unfenced()
    node.quorum.wait_until(lambda: node.leaders("durable") == [1], WAIT_S, "durable to have its leader back")
    node.quorum.wait_until(lambda: node.fetch("durable", 0).error_code == Errors.NONE, WAIT_S, "the log to open")
    records = node.fetch("durable", 0).records
    assert [r.value for b in iter_batches(records) for r in b] == [b"0", b"1", b"2", b"3", b"4"]
    assert node.produce("durable", idempotent).base_offset == 4      # the producer state was rebuilt from the log
    assert node.produce("durable", build_batch([(b"k", b"5")])).base_offset == 5
