"""A log directory holding the metadata log next to ordinary partitions (issue 12, items 2
and 3): decode=metadata over all of it, and a bootstrap.checkpoint whose log directory's
name looks like <topic>-<partition>."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[dev]'")

from kafkawire import messages  # noqa: E402
from kafkawire.metadata import encode_metadata_record  # noqa: E402
from kafkawire.spark.layout import discover  # noqa: E402
from kafkawire.storage.snapshot import SnapshotId, SnapshotWriter  # noqa: E402
from tests.spark.logdata import numbered_batches, write_partition  # noqa: E402


@pytest.fixture(scope="module")
def mixed_logdir(tmp_path_factory):
    """__cluster_metadata-0 with two TopicRecords, and orders-0 with 20 ordinary records."""
    root = tmp_path_factory.mktemp("kafka-logs")
    topics = [(None, encode_metadata_record(messages.by_name("TopicRecord")(name=name), 0))
              for name in ("orders", "payments")]
    write_partition(root / "__cluster_metadata-0", [topics])
    write_partition(root / "orders-0", numbered_batches(2, 10))
    return root


def test_decode_metadata_leaves_the_metadata_columns_null_on_other_partitions(spark, mixed_logdir):
    df = spark.read.format("kafkawire").option("decode", "metadata").load(str(mixed_logdir))
    rows = df.select("topic", "offset", "recordType", "recordVersion", "record").collect()
    orders = [r for r in rows if r["topic"] == "orders"]
    meta = [r for r in rows if r["topic"] == "__cluster_metadata"]
    assert len(orders) == 20 and len(meta) == 2
    assert all(r["recordType"] is None and r["recordVersion"] is None and r["record"] is None
               for r in orders)
    assert [(r["recordType"], r["recordVersion"]) for r in meta] == [("TOPIC_RECORD", 0)] * 2
    assert '"name":"orders"' in meta[0]["record"]


def _bootstrap_checkpoint_in(log_dir) -> str:
    """A bootstrap.checkpoint holding one TopicRecord, in ``log_dir`` (as the storage tool
    writes it: a snapshot file at the root of the metadata log directory)."""
    log_dir.mkdir()
    with SnapshotWriter(log_dir, SnapshotId(0, 0), last_contained_log_timestamp=0,
                        file_name="bootstrap.checkpoint") as writer:
        writer.append([encode_metadata_record(messages.by_name("TopicRecord")(name="t"), 0)])
        return writer.freeze()


def test_a_bootstrap_checkpoint_belongs_to_the_metadata_log_whatever_its_directory(tmp_path):
    # a log directory whose name reads as <topic>-<partition>
    path = _bootstrap_checkpoint_in(tmp_path / "kafka-logs-1")
    (snapshot,) = discover(path).snapshots
    assert snapshot.key == ("__cluster_metadata", 0)


def test_a_bootstrap_checkpoint_read_through_spark(spark, tmp_path):
    path = _bootstrap_checkpoint_in(tmp_path / "kafka-logs-1")
    rows = spark.read.format("kafkawire").option("decode", "metadata").load(path).collect()
    assert [(r["topic"], r["partition"], r["recordType"]) for r in rows] \
        == [("__cluster_metadata", 0, "TOPIC_RECORD")]
