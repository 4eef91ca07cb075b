"""Real Kafka clients read a __cluster_metadata log we wrote, served by KafkaServer + MetadataTopic:
kafka-python, aiokafka, confluent-kafka (librdkafka), kcat; tshark's Kafka dissector reads the
traffic."""
import asyncio
import os
import shutil
import subprocess
import sys
import time

import pytest

from kafkawire.records import iter_batches

from .metadata_log import CLUSTER_ID, NODE_ID, write_metadata_log
from .pcap import Recorder, write_pcap
from .served import ServedLog
from tests.conftest import REFERENCE, require
from tests.peers import kcat, loopback_capture, until_captured

TOPIC = "__cluster_metadata"
CLIENT_TIMEOUT_S = 20


@pytest.fixture(scope="module")
def metadata_log(tmp_path_factory):
    """3 epochs x (LeaderChange + 10 batches of 10 records) = offsets 0..302, in 4 KiB segments."""
    return write_metadata_log(tmp_path_factory.mktemp("clients"), epochs=3, batches_per_epoch=10,
                              records_per_batch=10, segment_bytes=4096)


def expected(written, below=None):
    return [(w.offset, w.value, w.timestamp) for w in written
            if not w.is_control and (below is None or w.offset < below)]


def kafka_python_consume(port, count, *, start=None):
    from kafka import KafkaConsumer, TopicPartition
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", enable_auto_commit=False,
                             consumer_timeout_ms=5000, request_timeout_ms=10000)
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        if start is None:
            consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, start)
        got = []
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        while len(got) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                got += [(m.offset, m.value, m.timestamp) for m in records]
        offsets = (consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp])
        return got, offsets, consumer
    except BaseException:
        consumer.close()
        raise


# --- kafka-python ------------------------------------------------------------------------------

def test_kafka_python_consumer_reads_every_record(metadata_log):
    log_dir, written = metadata_log
    want = expected(written)
    with ServedLog(log_dir) as served:
        got, offsets, consumer = kafka_python_consume(served.port, len(want))
        try:
            from kafka import TopicPartition
            tp = TopicPartition(TOPIC, 0)
            middle = written[150]
            by_time = consumer.offsets_for_times({tp: middle.timestamp})[tp]
        finally:
            consumer.close()
    assert got == want
    assert offsets == (0, written[-1].offset + 1)
    assert (by_time.offset, by_time.timestamp) == (middle.offset, middle.timestamp)


def test_kafka_python_falls_back_from_an_api_versions_version_we_refuse(metadata_log):
    log_dir, written = metadata_log
    with ServedLog(log_dir, api_versions_max=2) as served:     # kafka-python opens with a newer one
        got, _, consumer = kafka_python_consume(served.port, len(expected(written)))
        consumer.close()
    assert got == expected(written)


def test_kafka_python_sees_the_high_watermark_and_is_woken_when_it_moves(metadata_log):
    log_dir, written = metadata_log
    hw = 101                      # batches are 1-10, 11-20, ...: 101 is a batch boundary of epoch 1
    with ServedLog(log_dir, high_watermark=hw) as served:
        first, offsets, consumer = kafka_python_consume(served.port, len(expected(written, hw)))
        try:
            served.set_high_watermark(written[-1].offset + 1)
            rest = []
            deadline = time.monotonic() + CLIENT_TIMEOUT_S
            while len(first) + len(rest) < len(expected(written)) and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    rest += [(m.offset, m.value, m.timestamp) for m in records]
        finally:
            consumer.close()
    assert first == expected(written, hw) and offsets == (0, hw)
    assert first + rest == expected(written)


def test_kafka_python_admin_client(metadata_log):
    from kafka import KafkaAdminClient
    log_dir, _ = metadata_log
    with ServedLog(log_dir) as served:
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{served.port}", request_timeout_ms=10000)
        try:
            cluster = admin.describe_cluster()
            topics = admin.list_topics()
            described = admin.describe_topics([TOPIC])
        finally:
            admin.close()
    assert cluster["cluster_id"] == CLUSTER_ID and cluster["controller_id"] == NODE_ID
    assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == [(NODE_ID, "127.0.0.1", served.port)]
    assert topics == [TOPIC]
    assert [(t["name"], t["error_code"], [(p["partition_index"], p["leader_id"]) for p in t["partitions"]])
            for t in described] == [(TOPIC, 0, [(0, NODE_ID)])]


def test_kafka_python_producer_fails_at_once(metadata_log):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    log_dir, _ = metadata_log
    with ServedLog(log_dir) as served:
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{served.port}", acks=1, retries=5,
                                 request_timeout_ms=10000, max_block_ms=10000)
        try:
            future = producer.send(TOPIC, b"not allowed")
            with pytest.raises(KafkaError) as info:
                future.get(timeout=CLIENT_TIMEOUT_S)
        finally:
            producer.close(timeout=5)
    assert type(info.value).__name__ == "InvalidTopicError"


# --- aiokafka ----------------------------------------------------------------------------------

def test_aiokafka_consumer_reads_every_record(metadata_log):
    from aiokafka import AIOKafkaConsumer, TopicPartition
    log_dir, written = metadata_log
    want = expected(written)

    async def consume(port):
        consumer = AIOKafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition(TOPIC, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got = []
            while len(got) < len(want):
                batches = await consumer.getmany(timeout_ms=500)
                got += [(m.offset, m.value, m.timestamp) for ms in batches.values() for m in ms]
            return got, await consumer.end_offsets([tp])
        finally:
            await consumer.stop()

    with ServedLog(log_dir) as served:
        got, ends = asyncio.run(asyncio.wait_for(consume(served.port), CLIENT_TIMEOUT_S))
    assert got == want
    assert list(ends.values()) == [written[-1].offset + 1]


# --- confluent-kafka (librdkafka) ---------------------------------------------------------------

def test_confluent_kafka_consumer_reads_every_record(metadata_log):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    log_dir, written = metadata_log
    want = expected(written)
    with ServedLog(log_dir) as served:
        consumer = confluent_kafka.Consumer({"bootstrap.servers": f"127.0.0.1:{served.port}", "group.id": "reader",
                                             "enable.auto.commit": False, "log_level": 0})
        try:
            consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, confluent_kafka.OFFSET_BEGINNING)])
            got, errors = [], []
            deadline = time.monotonic() + CLIENT_TIMEOUT_S
            while len(got) < len(want) and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    errors.append(m.error())
                    continue
                got.append((m.offset(), m.value(), m.timestamp()[1]))
            low, high = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(TOPIC, 0), timeout=10)
            metadata = consumer.list_topics(timeout=10)
        finally:
            consumer.close()
    assert errors == [] and got == want
    assert (low, high) == (0, written[-1].offset + 1)
    assert metadata.cluster_id == CLUSTER_ID and list(metadata.topics) == [TOPIC]


# --- kcat --------------------------------------------------------------------------------------



def test_kcat_lists_metadata_and_consumes_every_record(metadata_log):
    binary = kcat()
    log_dir, written = metadata_log
    want = expected(written)
    with ServedLog(log_dir) as served:
        broker = f"127.0.0.1:{served.port}"
        listing = subprocess.run([binary, "-b", broker, "-L"], capture_output=True, text=True, timeout=30)
        # Each record as "<offset> <timestamp> <value size>\n<value bytes>\n": binary-safe to parse back.
        consumed = subprocess.run([binary, "-b", broker, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-q",
                                   "-f", "%o %T %S\n%s\n"], capture_output=True, timeout=60)
    assert listing.returncode == 0, listing.stderr
    assert f"broker {NODE_ID} at {broker}" in listing.stdout
    assert f'topic "{TOPIC}" with 1 partitions:' in listing.stdout
    assert f"partition 0, leader {NODE_ID}, replicas: {NODE_ID}, isrs: {NODE_ID}" in listing.stdout
    assert consumed.returncode == 0, consumed.stderr
    got, out, pos = [], consumed.stdout, 0
    while pos < len(out):
        line_end = out.index(b"\n", pos)
        offset, timestamp, size = map(int, out[pos:line_end].split())
        value = out[line_end + 1: line_end + 1 + size]
        got.append((offset, value, timestamp))
        pos = line_end + 1 + size + 1
    assert got == want


# --- a real Kafka metadata log -------------------------------------------------------------------

def test_kafka_python_reads_a_real_kafka_metadata_log(tmp_path):
    source = require(REFERENCE / "kraft-data" / "1stapossum__otus_kafka" / "HW02" / "kafka_data" / "__cluster_metadata-0")
    assert kafka_python_reads_a_copy_of(source, tmp_path) > 1000


def kafka_python_reads_a_copy_of(source, tmp_path) -> int:
    """kafka-python reads every record of a copy of the metadata log ``source`` served by us, at
    its offsets with its values and timestamps; returns how many (tests/interop/
    test_held_out_claims_on_kafka_data.py gives it the log a Kafka controller wrote in the run)."""
    log_dir = tmp_path / "__cluster_metadata-0"
    shutil.copytree(source, log_dir)        # the log is opened for writing (recovery rebuilds indexes)
    want = []
    for name in sorted(os.listdir(log_dir)):
        if name.endswith(".log"):
            for batch in iter_batches((log_dir / name).read_bytes()):
                if not batch.is_control:
                    want += [(r.offset, bytes(r.value), r.timestamp) for r in batch]
    with ServedLog(str(log_dir)) as served:
        got, _, consumer = kafka_python_consume(served.port, len(want))
        consumer.close()
    assert got == want
    return len(want)


# --- tshark's Kafka dissector -------------------------------------------------------------------

# What Wireshark 4.0's Kafka dissector knows (it says "Unsupported ... version. Supports v0-N"
# for newer ones and then cannot parse them): the captures cap each API there. ApiVersions is
# left at v4: the dissector warns that it does not know v4 but reads it with v3's layout, which
# is the same. (Capping it at 3 would make kafka-python's v4 request get Kafka's v0
# UNSUPPORTED_VERSION answer, which the dissector tries to read as v4 and calls malformed.)
WIRESHARK_4_0_VERSIONS = {3: 9, 1: 11, 2: 5, 0: 8, 10: 3, 22: 3}


def tshark_problems(capture, port):
    """Packets tshark calls malformed or flags at error severity, and the Kafka PDUs it decoded."""
    base = ["tshark", "-r", str(capture), "-d", f"tcp.port=={port},kafka"]
    bad = subprocess.run(base + ["-Y", "_ws.malformed || _ws.expert.severity >= error"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 0, bad.stderr
    apis = subprocess.run(base + ["-Y", "kafka", "-T", "fields", "-e", "kafka.request_key", "-e", "kafka.api_version"],
                          capture_output=True, text=True, timeout=60)
    return bad.stdout.strip(), apis.stdout.split()


def consume_with_kafka_python(served, written):
    got, _, consumer = kafka_python_consume(served.port, len(expected(written)))
    consumer.close()
    assert got == expected(written)


def test_tshark_dissects_a_recorded_session_without_errors(metadata_log, tmp_path):
    """The relay records the bytes both ways; we write them as a pcap (no capture privileges needed)."""
    if shutil.which("tshark") is None:
        from tests.conftest import unavailable
        unavailable("tshark is not installed (Debian package tshark)")
    log_dir, written = metadata_log
    recorder = Recorder()
    with ServedLog(log_dir, recorder=recorder, max_versions=WIRESHARK_4_0_VERSIONS) as served:
        consume_with_kafka_python(served, written)
    capture = tmp_path / "recorded.pcap"
    assert write_pcap(capture, recorder) > 10
    problems, fields = tshark_problems(capture, served.server_port)
    assert problems == ""
    assert {"18", "3", "2", "1"} <= set(fields)      # ApiVersions, Metadata, ListOffsets, Fetch were decoded


def test_tshark_dissects_a_loopback_capture_without_errors(metadata_log, tmp_path):
    """A real capture on lo with dumpcap and a port filter, when this machine allows capturing."""
    log_dir, written = metadata_log
    capture = tmp_path / "loopback.pcapng"
    with ServedLog(log_dir, max_versions=WIRESHARK_4_0_VERSIONS) as served:
        with loopback_capture(served.port, capture):
            consume_with_kafka_python(served, written)
            until_captured(served.port, capture)
    problems, fields = tshark_problems(capture, served.port)
    assert problems == ""
    assert {"18", "3", "2", "1"} <= set(fields)
