"""A log directory holding the metadata log next to ordinary partitions (issue 12, item 2):
decode=metadata over all of it."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[dev]'")

from kafkawire import messages  # noqa: E402
from kafkawire.metadata import encode_metadata_record  # noqa: E402
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
