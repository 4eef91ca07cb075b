"""Options, filter pushdown, schemas and failures through a real SparkSession."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[dev]'")

from tests.spark.logdata import T0, numbered_batches, segment_files, write_partition
from tests.spark.test_spark_plan import TXN_LOG


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    """Two topics, three partitions of 600 records, several segments each, real index files;
    record n of a partition made with ``start`` s has timestamp T0 + 10 * (s + n)."""
    root = tmp_path_factory.mktemp("kafka-logs")
    for topic, partition, start in (("orders", 0, 0), ("orders", 1, 1000), ("payments", 0, 2000)):
        write_partition(root / f"{topic}-{partition}", numbered_batches(60, 10, start=start),
                        segment_bytes=8000, index_interval_bytes=512, leader_epoch=partition + 1)
    write_partition(root / "txn-0", TXN_LOG)
    return root


def _offsets(df):
    return sorted((r["topic"], r["partition"], r["offset"]) for r in df.select("topic", "partition", "offset").collect())


def test_arrow_batches_have_the_schema_spark_derives_from_the_ddl(spark):
    from pyspark.sql.pandas.types import to_arrow_schema
    from kafkawire.spark.columns import arrow_schema, column_names, ddl
    names = column_names(decode_metadata=True, corruption=True)
    schema = spark.createDataFrame([], ddl(names)).schema
    assert to_arrow_schema(schema, timezone="UTC").equals(arrow_schema(names))


def test_filters_are_pushed_down_and_answer_as_spark_would(spark, logdir):
    df = spark.read.format("kafkawire").load(str(logdir))
    query = ("topic = 'orders' and partition = 1 and offset >= 105 and offset < 230 "
             "and timestamp >= timestamp_millis({}) ".format(T0 + 10 * (1000 + 110)))
    pushed = df.where(query)
    plan = pushed._jdf.queryExecution().executedPlan().toString()
    spark_filter = next(line for line in plan.splitlines() if "Filter" in line)
    assert "105" not in spark_filter and "230" not in spark_filter and "= orders" not in spark_filter, plan
    got = _offsets(pushed)
    assert got == [("orders", 1, o) for o in range(110, 230)]
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        assert _offsets(spark.read.format("kafkawire").load(str(logdir)).where(query)) == got
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    assert _offsets(df.where("offset in (5, 7) and topic <> 'orders'")) == [
        ("payments", 0, 5), ("payments", 0, 7), ("txn", 0, 5)]   # 7 of txn is a marker


def test_offsets_options_use_sparks_json(spark, logdir):
    df = (spark.read.format("kafkawire").option("subscribe", "orders")
          .option("startingOffsets", '{"orders": {"0": 590, "1": -2}}')
          .option("endingOffsets", '{"orders": {"1": 3}}').load(str(logdir)))
    assert _offsets(df) == [("orders", 0, o) for o in range(590, 600)] + [("orders", 1, o) for o in range(3)]
    ts = spark.read.format("kafkawire").option("assign", '{"payments": [0]}') \
        .option("startingTimestamp", str(T0 + 10 * 2590 + 5)).load(str(logdir))
    assert _offsets(ts) == [("payments", 0, o) for o in range(591, 600)]


def test_read_committed_through_spark(spark, logdir):
    committed = spark.read.format("kafkawire").option("kafka.isolation.level", "read_committed") \
        .load(str(logdir / "txn-0"))
    assert [r["offset"] for r in committed.orderBy("offset").collect()] == [0, 1, 2, 3, 4, 10, 12]
    everything = spark.read.format("kafkawire").option("includeControl", "true").load(str(logdir / "txn-0"))
    assert everything.where("isControl").select("controlType").collect()[0][0] == "COMMIT"
    assert everything.count() == 19


def test_a_schema_may_name_fewer_columns_but_not_other_types(spark, logdir):
    df = spark.read.format("kafkawire").schema("offset bigint, value binary").load(str(logdir / "orders-0"))
    assert df.columns == ["offset", "value"] and df.count() == 600
    with pytest.raises(Exception, match="schema column 'offset' must be bigint, not int"):
        spark.read.format("kafkawire").schema("offset int").load(str(logdir / "orders-0")).count()
    with pytest.raises(Exception, match="schema column 'record': it needs decode=metadata"):
        spark.read.format("kafkawire").schema("record string").load(str(logdir / "orders-0")).count()


def test_a_corrupt_batch_fails_the_job_or_is_counted(spark, tmp_path):
    path = write_partition(tmp_path / "bad-0", numbered_batches(10, 5))
    (log,) = segment_files(path)
    data = bytearray(open(log, "rb").read())
    data[400] ^= 0xFF          # inside the third batch's records
    open(log, "wb").write(bytes(data))
    with pytest.raises(Exception, match=rf"CRC-32C mismatch.*at byte \d+ in {log}"):
        spark.read.format("kafkawire").load(str(path)).count()
    df = spark.read.format("kafkawire").option("failOnCorruption", "false").load(str(path))
    assert df.where("corruption is not null").count() == 1
    assert df.where("corruption is null").count() == 45


def test_bad_options_fail_with_their_name(spark, logdir):
    with pytest.raises(Exception, match="unknown option 'startingoffset'"):
        spark.read.format("kafkawire").option("startingOffset", "earliest").load(str(logdir)).count()
    with pytest.raises(Exception, match="no such file or directory"):
        spark.read.format("kafkawire").load(str(logdir / "nope-0")).count()
