"""Every reader of ours on data Apache Kafka 4.3.1 writes during this run (the session fixture
``kafka_written``, tests/interop/kafka_written.py: one node, topics of every compression.type, a
committed and an aborted transaction, a compacted topic, kafka-python's, confluent-kafka's, kcat's
and Kafka's Java clients' traffic captured on loopback), so that the claims the ../shared corpora
check (tests/storage/test_real_kafka_files.py, tests/records/test_records_reference_data.py,
tests/metadata/test_frame.py, tests/codec/test_pcaps.py) are tested on a fresh clone too.

Every batch of every segment and snapshot verifies and re-encodes (byte for byte where
uncompressed or LZ4), every metadata record re-encodes to its bytes, segments recover with nothing
cut, Kafka's .index and .timeindex load, snapshots read between header and footer and the
controller writes each back byte for byte, state files round-trip to their bytes, producer
snapshots read, the public readers see every record produced, and `kafkawire pcap --check` decodes
and re-encodes every captured frame to the identical bytes, Kafka 4.3.1's responses included.
"""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import kafkawire
from kafkawire.records import GZIP, LZ4, NONE, SNAPPY, ZSTD
from kafkawire.storage import OffsetIndex, TimeIndex
from kafkawire.storage.producer_snapshot import read_producer_snapshot
from tests.conftest import REPO, unavailable
from tests.interop.kafka_written import (CLIENTS_TOPIC, CODECS, COMPACTED_TOPIC, JAVA_RECORDS, JAVA_TOPIC, RECORDS,
                                         TXN_TOPIC, snapshots as _snapshots)
from tests.kafka_data_checks import (check_batches_reencode, check_index_against_log, check_segment_recovers,
                                     check_snapshot, metadata_records_round_trip)
from tests.storage.test_real_kafka_files import STATE_FILES


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
    # Kafka's Java consumer in a classic group, and its Admin client
    assert {"FindCoordinator", "JoinGroup", "SyncGroup", "OffsetFetch", "OffsetCommit", "LeaveGroup"} <= apis, apis
    # kafka-python, librdkafka (confluent-kafka and kcat), and Kafka's Java producer, consumer and Admin
    assert {"kafka", "rdkafka", "perf", "console", "adminclient"} <= clients, clients


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
    assert {JAVA_TOPIC, COMPACTED_TOPIC} <= set(image.topics_by_name)
    assert len(list(reader.partition(JAVA_TOPIC, 0).records())) == JAVA_RECORDS


def test_a_segment_kafkas_log_cleaner_compacted_reads_one_record_per_key(kafka_written):
    """Kafka's cleaner rewrote the compacted topic's older segments: below its checkpoint each key
    is left once, the tombstones stay (delete.retention.ms is a day) in batches stamped with their
    delete horizon, and every batch still verifies and re-encodes to Kafka's bytes."""
    checkpoint = (kafka_written.data_dir / "cleaner-offset-checkpoint").read_text().split("\n")
    cleaned_to = next(int(line.split()[2]) for line in checkpoint if line.startswith(f"{COMPACTED_TOPIC} 0 "))
    partition = kafkawire.read_log_directory(kafka_written.data_dir).partition(COMPACTED_TOPIC, 0)
    cleaned = [r for r in partition.records() if r.offset < cleaned_to]
    keys = [bytes(r.key) for r in cleaned]
    assert cleaned and len(keys) == len(set(keys)), keys
    assert any(r.value is None for r in cleaned)
    batches = [b for b in partition.batches() if b.base_offset < cleaned_to]
    assert any(b.has_delete_horizon for b in batches), "no batch with a delete horizon"
    for path in sorted((kafka_written.data_dir / f"{COMPACTED_TOPIC}-0").glob("*.log")):
        check_batches_reencode(path)
