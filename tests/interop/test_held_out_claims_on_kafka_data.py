"""The checks the ../shared corpus of real KRaft data makes (tests/metadata, tests/records,
tests/storage, tests/node, tests/tools: each skips without ../shared), made again on the data
directory a Kafka 4.3.1 node writes during this run (the session fixture ``kafka_written``,
tests/interop/kafka_written.py), so that a fresh clone tests the same claims. Each test names the
held-out test whose check it reuses; docs/testing.md maps every claim to both.
"""
from __future__ import annotations

from pathlib import Path

from kafkawire.records import iter_batches
from tests.interop.kafka_written import COMPACTED_TOPIC, snapshots
from tests.spark.conftest import spark_session  # noqa: F401  (the shared SparkSession fixture)


def _data_partitions(kafka_written) -> list[Path]:
    return sorted(d for d in kafka_written.data_dir.iterdir()
                  if d.is_dir() and d.name != "__cluster_metadata-0" and any(d.glob("*.log")))


def test_every_metadata_record_has_the_same_json_both_ways(kafka_written):
    """tests/metadata/test_fast_json.py::test_every_sample_record: the compiled JSON forms equal
    to_json and Jackson's text on every metadata record Kafka wrote (log and snapshots)."""
    from tests.metadata.test_fast_json import both_forms_agree_on_every_metadata_record
    assert both_forms_agree_on_every_metadata_record(kafka_written.data_dir) > 100


def test_every_kraft_control_record_value_reencodes(kafka_written):
    """tests/records/test_kraft_control_values.py::test_real_control_values_round_trip: the
    LeaderChange, snapshot header and footer, KRaftVersion and Voters values Kafka wrote."""
    from tests.records.test_kraft_control_values import control_values_round_trip
    seen = control_values_round_trip(kafka_written.metadata_dir)
    for kind in ("SnapshotHeaderRecord", "SnapshotFooterRecord", "LeaderChangeMessage", "KRaftVersionRecord",
                 "VotersRecord"):
        assert seen[kind], f"no {kind} in {dict(seen)}"


def test_the_metadata_log_has_leader_change_markers_and_no_producer(kafka_written):
    """tests/records/test_records_reference_data.py::test_metadata_logs_have_leader_change_markers."""
    seen = set()
    for path in kafka_written.metadata_dir.glob("*.log"):
        for batch in iter_batches(path.read_bytes()):
            if batch.is_control:
                seen.update(r.control_key.name for r in batch)
            else:
                assert batch.producer_id == -1
    assert "LEADER_CHANGE" in seen, seen


def test_the_quorum_state_round_trips_through_the_election_state(kafka_written):
    """tests/node/test_disk_store.py::test_every_real_kafka_quorum_state_round_trips_byte_for_byte."""
    from tests.node.test_disk_store import quorum_states_round_trip
    files = sorted(kafka_written.directory.rglob("quorum-state"))
    assert files
    quorum_states_round_trip(files)


def test_every_partitions_leader_epochs_load_and_the_file_stays(kafka_written, tmp_path):
    """tests/storage/test_leader_epoch_cache.py::test_real_kafka_partitions_load_with_their_epochs_kept_and_the_file_unchanged,
    on every data partition (the compacted one's log starts past offset 0 after cleaning: skipped
    there, as the check wants a log copied from its first offset)."""
    from tests.storage.test_leader_epoch_cache import check_partition_epochs_load
    checked = 0
    for n, partition in enumerate(_data_partitions(kafka_written)):
        checkpoint = partition / "leader-epoch-checkpoint"
        if checkpoint.exists() and partition.name != f"{COMPACTED_TOPIC}-0":
            (tmp_path / str(n)).mkdir()
            check_partition_epochs_load(checkpoint, tmp_path / str(n))
            checked += 1
    assert checked >= 8


def test_every_partition_reads_as_the_strict_reader_reads_it(kafka_written, tmp_path):
    """tests/storage/test_reader.py::test_kraft_data_directories_read_as_the_strict_reader_reads_them."""
    from tests.storage.test_reader import check_directories_read_as_the_strict_reader_reads_them
    assert check_directories_read_as_the_strict_reader_reads_them(kafka_written.data_dir, tmp_path) >= 10


def test_every_log_directory_opens_with_nothing_cut(kafka_written, tmp_path):
    """tests/storage/test_real_kafka_files.py::test_metadata_log_directories_open."""
    from tests.storage.test_real_kafka_files import check_log_directories_open
    dirs = sorted({p.parent for p in kafka_written.data_dir.rglob("*.log")})
    assert len(dirs) >= 10
    check_log_directories_open(dirs, tmp_path)


def test_kafkas_snapshots_are_rewritten_byte_for_byte_by_our_writer(kafka_written, tmp_path):
    """tests/storage/test_snapshot.py::test_same_bytes_as_a_real_kafka_snapshot."""
    from tests.storage.test_snapshot import rewritten_byte_for_byte
    paths = sorted(p for p in snapshots(kafka_written.metadata_dir) if not p.name.startswith("00000000000000000000-"))
    assert rewritten_byte_for_byte(paths[-10:], tmp_path) == len(paths[-10:]) > 0


def test_kafkas_bootstrap_checkpoint_is_what_our_format_writes(kafka_written, tmp_path):
    """tests/tools/test_storage_format.py::test_bootstrap_checkpoint_is_byte_identical_to_kafkas, on
    the bootstrap.checkpoint Kafka 4.3.1's StorageTool wrote for this node."""
    from tests.tools.test_storage_format import assert_bootstrap_checkpoint_is_kafkas
    (bootstrap,) = kafka_written.data_dir.rglob("bootstrap.checkpoint")
    assert_bootstrap_checkpoint_is_kafkas(bootstrap, tmp_path)


def test_spark_reads_kafkas_logs_and_snapshots_as_dump_log_finds_them(kafka_written, spark_session):  # noqa: F811
    """tests/spark/test_spark_reference.py::test_every_sample_reads_as_dump_log_finds_it and
    ::test_metadata_records_decode_as_dump_log_decodes_them, on the metadata log and last snapshots
    a Kafka controller wrote and the partition Kafka's log cleaner compacted (tests/interop/
    test_spark_on_kafka_brokers.py reads Kafka brokers' topic data, transactions included)."""
    from tests.spark.test_spark_reference import (metadata_decodes_as_dump_log_decodes_it, reads_as_dump_log_finds_it,
                                                  samples_under)
    named = {"__cluster_metadata-0", f"{COMPACTED_TOPIC}-0"}
    samples = samples_under(kafka_written.data_dir, last_snapshots=2, partitions_named=named)
    assert reads_as_dump_log_finds_it(spark_session, samples) > 100
    assert metadata_decodes_as_dump_log_decodes_it(spark_session, samples) == 0


def test_the_native_and_pure_spark_readers_read_kafkas_data_the_same(kafka_written):
    """tests/spark/test_spark_native_reader.py::test_every_real_kafka_sample_reads_the_same, on
    every partition and the last snapshots Kafka wrote (no SparkSession: the readers themselves)."""
    import pytest
    pytest.importorskip("pyarrow", reason="kafkawire.spark builds Arrow batches: pip install -e '.[dev]'")
    from tests.spark.test_spark_native_reader import read_the_same_both_ways
    partitions = sorted({p.parent for p in kafka_written.data_dir.rglob("*.log")})
    read_the_same_both_ways(partitions + sorted(snapshots(kafka_written.metadata_dir))[-3:])


def test_kafka_python_reads_the_metadata_log_kafka_wrote_through_our_server(kafka_written, tmp_path):
    """tests/net/test_metadata_topic_clients.py::test_kafka_python_reads_a_real_kafka_metadata_log,
    on a copy of the metadata log the Kafka controller wrote in the run."""
    from tests.net.test_metadata_topic_clients import kafka_python_reads_a_copy_of
    assert kafka_python_reads_a_copy_of(kafka_written.metadata_dir, tmp_path) > 50
