"""Every reader of ours on data Apache Kafka 4.3.1 writes during this run, so that the claims
the ../shared corpora check (tests/storage/test_real_kafka_files.py,
tests/records/test_records_reference_data.py, tests/metadata/test_frame.py) are tested on a
fresh clone too.

One JVM (process.roles=broker,controller, 256 MB heap) is formatted --standalone, with a
snapshot after every new metadata record (metadata.log.max.record.bytes.between.snapshots=1);
kafka-python creates one topic per compression.type (the broker recompresses with Java's
codecs), produces to each, commits and aborts a transaction, and the node is stopped with
SIGTERM (a clean shutdown writes producer snapshots). Then: every batch of every segment and
snapshot verifies and re-encodes (byte for byte where uncompressed or LZ4), every metadata record
re-encodes to its bytes, segments recover with nothing cut, Kafka's .index and .timeindex load,
snapshots read between header and footer and the controller writes each back byte for byte,
state files round-trip to their bytes, producer snapshots read, and the public readers see
every record produced.

The clients' traffic with the broker (kafka-python's admin, producer and transactions,
confluent-kafka's producer, kcat's metadata listing and consumer) is captured on loopback with
dumpcap meanwhile, and `kafkawire pcap --check` must decode and re-encode every frame of it to the
identical bytes, Kafka 4.3.1's responses included.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import kafkawire
from kafkawire.records import GZIP, LZ4, NONE, SNAPPY, ZSTD
from kafkawire.storage import OffsetIndex, TimeIndex
from kafkawire.storage.producer_snapshot import read_producer_snapshot
from tests.conftest import REPO, unavailable
from tests.interop.kafka_procs import KafkaNode
from tests.kafka_data_checks import (check_batches_reencode, check_index_against_log, check_segment_recovers,
                                     check_snapshot, metadata_records_round_trip)
from tests.peers import kcat, loopback_capture
from tests.storage.test_real_kafka_files import STATE_FILES

CLUSTER_ID = "S2Fma2FXcml0dGVuRGF0YQ"
CODECS = ("uncompressed", "gzip", "snappy", "lz4", "zstd")
RECORDS = 300
TXN_TOPIC = "txn"
CLIENTS_TOPIC = "clients"


def _wait_for(what: str, condition, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _create_and_produce(bootstrap: str) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(f"codec-{codec}", 1, 1, topic_configs={"compression.type": codec})
                             for codec in CODECS] + [NewTopic(TXN_TOPIC, 1, 1), NewTopic(CLIENTS_TOPIC, 1, 1)], timeout_ms=30000)
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, batch_size=4096,
                             request_timeout_ms=30000, max_block_ms=30000)
    try:
        for codec in CODECS:
            futures = [producer.send(f"codec-{codec}", key=b"k%d" % (n % 7), value=b"value %06d " % n + b"z" * 50)
                       for n in range(RECORDS)]
            producer.flush(timeout=30)
            for future in futures:
                future.get(timeout=30)
    finally:
        producer.close(timeout=10)
    txn = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kafkawire-evidence",
                        request_timeout_ms=30000, max_block_ms=30000)
    try:
        txn.init_transactions()
        for commit in (True, False):
            txn.begin_transaction()
            for n in range(10):
                txn.send(TXN_TOPIC, value=b"txn %d" % n)
            txn.flush(timeout=30)           # so that the aborted records reach the log too
            txn.commit_transaction() if commit else txn.abort_transaction()
    finally:
        txn.close(timeout=10)


def _other_clients(bootstrap: str) -> None:
    """confluent-kafka produces (zstd, idempotent), kcat lists the metadata and consumes a topic."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "zstd", "enable.idempotence": True})
    for n in range(50):
        producer.produce(CLIENTS_TOPIC, value=b"confluent %d" % n)
    assert producer.flush(30) == 0, "confluent-kafka did not deliver within 30 s"
    for args in (["-L"], ["-C", "-t", "codec-gzip", "-o", "beginning", "-c", "20", "-e"]):
        result = subprocess.run([kcat(), "-b", bootstrap, *args], capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr


MARKER_CLIENT = "capture-marker"


def _marker_captured(node: KafkaNode, capture: Path) -> None:
    """One last ApiVersions exchange, then wait (bounded) until the capture file holds its
    response: dumpcap hands packets over in blocks, and stopping it at once could lose the last
    clients' frames."""
    import socket
    from kafkawire.capture import read_capture
    from kafkawire.messages.api_versions_request import ApiVersionsRequest
    from kafkawire.protocol import framing
    with socket.create_connection(("127.0.0.1", node.broker_port), timeout=30) as conn:
        conn.sendall(framing.encode_request(ApiVersionsRequest(client_software_name="marker",
                                                               client_software_version="1"), 3, 1, MARKER_CLIENT))
        assert conn.recv(4), "no ApiVersions response"

    def marker_answered():
        try:
            frames = read_capture(capture, ports=[node.broker_port]).frames
        except Exception:       # a block dumpcap is still writing
            return False
        streams = {f.stream for f in frames if f.role == "request" and f.client_id == MARKER_CLIENT}
        return any(f.stream in streams and f.role == "response" for f in frames)
    _wait_for("the capture to hold the last exchange", marker_answered, 30)


def _clients_captured(node: KafkaNode) -> str | None:
    """Run every client with dumpcap capturing the broker's port; why there is no capture, or None."""
    try:
        with loopback_capture(node.broker_port, node.directory / "clients.pcapng"):
            _create_and_produce(node.broker_address)
            _other_clients(node.broker_address)
            _marker_captured(node, node.directory / "clients.pcapng")
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:
        _create_and_produce(node.broker_address)    # the data directory's checks still need the data
        return str(exc)
    return None


def _snapshots(metadata_dir: Path) -> list[Path]:
    return [p for p in metadata_dir.glob("*.checkpoint") if p.name != "bootstrap.checkpoint"]


@pytest.fixture(scope="module")
def kafka_written(kafka_libs, tmp_path_factory):
    """The data directory of a Kafka 4.3.1 node after the work above and a clean shutdown."""
    node = KafkaNode(tmp_path_factory.mktemp("kafka-written"), 1, "broker,controller", properties={
        "metadata.log.max.record.bytes.between.snapshots": "1",
        "num.partitions": "1", "offsets.topic.num.partitions": "1",
        "transaction.state.log.num.partitions": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1"})
    try:
        node.format(CLUSTER_ID, "--standalone")
        node.start()
        node.wait_ready()
        node.capture_problem = _clients_captured(node)
        _wait_for("a metadata snapshot", lambda: _snapshots(node.metadata_dir), 60)
        code = node.stop(timeout_s=60)
        assert code in (0, 143), f"Kafka exited with {code} after SIGTERM:\n{node.log_tail(60)}"
    except BaseException:
        print(f"\n--- Kafka log tail: {node.log_path}\n{node.log_tail(80)}")
        raise
    finally:
        node.kill()
    return node


def _files(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if p.is_file())


def test_every_batch_of_every_segment_and_snapshot_verifies_and_reencodes(kafka_written):
    seen = Counter()
    files = [p for p in _files(kafka_written.data_dir, "*.log") + _files(kafka_written.data_dir, "*.checkpoint")
             if p.stat().st_size > 0 and not p.name.endswith("-checkpoint")]
    for path in files:
        seen += check_batches_reencode(path)
    print(f"{len(files)} files, batches by compression type {dict(seen)}")
    assert {NONE, GZIP, SNAPPY, LZ4, ZSTD} <= set(seen), seen


def test_every_metadata_record_reencodes_to_kafkas_bytes(kafka_written):
    paths = _files(kafka_written.metadata_dir, "*.log") + _files(kafka_written.metadata_dir, "*.checkpoint")
    seen, refused = metadata_records_round_trip(paths)
    assert not refused, refused
    for kind in ("TopicRecord", "PartitionRecord", "FeatureLevelRecord", "RegisterBrokerRecord", "ProducerIdsRecord"):
        assert seen[kind], f"no {kind} in {dict(seen)}"


def test_segments_recover_and_kafkas_indexes_load(kafka_written, tmp_path):
    segments = _files(kafka_written.data_dir, "*.log")
    for n, path in enumerate(segments):
        scratch = tmp_path / str(n)
        scratch.mkdir()
        check_segment_recovers(path, scratch)
    indexes = _files(kafka_written.data_dir, "*.index")
    time_indexes = _files(kafka_written.data_dir, "*.timeindex")
    for path in indexes:
        check_index_against_log(path, OffsetIndex)
    for path in time_indexes:
        check_index_against_log(path, TimeIndex)
    assert len(segments) >= len(CODECS) + 1 and indexes and time_indexes


def test_snapshots_read_between_header_and_footer(kafka_written):
    snapshots = _snapshots(kafka_written.metadata_dir)
    for path in snapshots + _files(kafka_written.data_dir, "bootstrap.checkpoint"):
        check_snapshot(path)
    assert any(not p.name.startswith("00000000000000000000-") for p in snapshots), snapshots


def test_every_snapshot_is_written_back_byte_for_byte_by_the_controller(kafka_written):
    """tests/controller/test_snapshot_golden.py's check on the ../shared snapshots, on these: the
    controller's state loaded from each snapshot Kafka wrote and written back gives its records."""
    from tests.controller.test_snapshot_golden import assert_written_back_byte_for_byte
    snapshots = [p for p in _snapshots(kafka_written.metadata_dir) if not p.name.startswith("00000000000000000000-")]
    for path in snapshots:
        assert_written_back_byte_for_byte(path)
    assert snapshots


def test_state_files_round_trip_to_kafkas_bytes(kafka_written):
    checked = Counter()
    for name, (parse, fmt) in STATE_FILES.items():
        for path in _files(kafka_written.directory, name):
            raw = path.read_bytes()
            value = parse(raw.decode("utf-8"))
            assert (value == [] if raw == b"" else fmt(value).encode("utf-8") == raw), path
            checked[name] += 1
    assert checked["quorum-state"] and checked["meta.properties"] and checked["partition.metadata"], checked


def test_producer_snapshots_read(kafka_written):
    snapshots = _files(kafka_written.data_dir, "*.snapshot")
    entries = [entry for path in snapshots for entry in read_producer_snapshot(path.read_bytes())]
    assert snapshots and entries, snapshots


def test_kafkawire_pcap_check_reencodes_every_captured_frame(kafka_written):
    """`kafkawire pcap --check` on the clients' traffic with Kafka 4.3.1: every frame identical."""
    if kafka_written.capture_problem:
        unavailable(kafka_written.capture_problem)
    capture, port = kafka_written.directory / "clients.pcapng", str(kafka_written.broker_port)
    command = [sys.executable, "-m", "kafkawire.tools.cli", "pcap", "--port", port]
    checked = subprocess.run(command + ["--check", str(capture)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    listed = subprocess.run(command + ["--json", str(capture)], cwd=REPO, capture_output=True, text=True, timeout=300)
    frames = [json.loads(line) for line in listed.stdout.splitlines()]
    clients = {f["clientId"].split("-")[0] for f in frames if f["role"] == "request" and f["clientId"]}
    apis = {f["apiName"] for f in frames if f["role"] == "request"}
    print(checked.stdout.splitlines()[-1], f"clients {sorted(clients)}, APIs {sorted(apis)}")
    assert {"Produce", "Fetch", "Metadata", "ApiVersions", "CreateTopics", "InitProducerId", "EndTxn"} <= apis, apis
    assert {"kafka", "rdkafka"} <= clients, clients


def test_public_readers_see_every_record(kafka_written):
    reader = kafkawire.read_log_directory(kafka_written.data_dir)
    for codec in CODECS:
        values = [bytes(r.value) for r in reader.partition(f"codec-{codec}", 0).records()]
        assert [int(v[6:12]) for v in values] == list(range(RECORDS)), codec
    txn = [bytes(r.value) for r in reader.partition(TXN_TOPIC, 0).records()]
    assert len(txn) == 20          # committed and aborted data both sit in the log
    markers = [batch.records()[0].control_key.name for batch in reader.partition(TXN_TOPIC, 0).batches()
               if batch.is_control]
    assert markers == ["COMMIT", "ABORT"], markers
    image = kafkawire.read_metadata_image(kafka_written.metadata_dir).image
    assert {f"codec-{codec}" for codec in CODECS} | {TXN_TOPIC, CLIENTS_TOPIC} <= set(image.topics_by_name)
