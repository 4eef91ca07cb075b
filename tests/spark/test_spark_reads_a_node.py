"""The data pipeline end to end: a three-voter quorum of `kafkawire server-start` processes
writes its metadata log (controller registrations, a broker, a topic), and Spark reads the
nodes' directories directly, finding what dump-log finds and the same records on every node."""
import asyncio
import json

import pytest

from kafkawire.raft.node.demo_client import create_topic, register_broker
from kafkawire.raft.node.local_quorum import LocalQuorum
from tests.spark.logdata import dump_log_json, dump_log_metadata, segment_files
from kafkawire.tools.storage import LATEST_PRODUCTION, metadata_version


@pytest.fixture(scope="module")
def stopped_quorum(tmp_path_factory):
    q = LocalQuorum(tmp_path_factory.mktemp("node-for-spark"), voters=3)
    with q.started():
        leader = q.wait_for_leader(60).leader_id

        async def work():
            await register_broker(q.address(leader), q.cluster_id, broker_id=7,
                                  metadata_version=metadata_version(LATEST_PRODUCTION)[1])
            await create_topic(q.address(leader), "spark-orders", partitions=4)
        asyncio.run(work())
        hw = q.wait_for_leader(120).high_watermark
        # every voter has the records up to the high watermark before they stop
        q.wait_until(lambda: all(r.log_end_offset >= hw for r in q.wait_for_leader(120).voters), 30,
                     "every voter to replicate the topic")
    return q


def test_spark_reads_the_metadata_log_a_quorum_wrote(spark, stopped_quorum):
    q = stopped_quorum
    directory = q.metadata_partition_dir(1)
    df = spark.read.format("kafkawire").option("decode", "metadata").load(directory)
    rows = df.select("offset", "recordType", "recordVersion", "record").toArrow().to_pylist()
    got = [(r["offset"], r["recordType"], r["recordVersion"], json.loads(r["record"])) for r in rows]
    want = [m for m in dump_log_metadata(dump_log_json(segment_files(directory), metadata=True))
            if m[1] not in ("LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS")]
    assert got == want
    types = {t for _, t, _, _ in got}
    assert {"FEATURE_LEVEL_RECORD", "REGISTER_CONTROLLER_RECORD", "REGISTER_BROKER_RECORD", "TOPIC_RECORD",
            "PARTITION_RECORD"} <= types
    topics = [rec for _, t, _, rec in got if t == "TOPIC_RECORD"]
    assert [t["name"] for t in topics] == ["spark-orders"]
    assert sum(1 for _, t, _, _ in got if t == "PARTITION_RECORD") == 4


def test_every_voter_holds_the_same_records(spark, stopped_quorum):
    q = stopped_quorum
    per_node = []
    for i in q.node_ids:
        df = spark.read.format("kafkawire").load(q.metadata_partition_dir(i))
        per_node.append(sorted((r["offset"], r["value"]) for r in df.select("offset", "value").toArrow().to_pylist()))
    shortest = min(len(rows) for rows in per_node)
    assert shortest > 10
    assert per_node[0][:shortest] == per_node[1][:shortest] == per_node[2][:shortest]


def test_the_readmes_spark_example_runs_on_a_nodes_data_directory(spark, stopped_quorum):
    """examples/spark_metadata.py, which the README shows, on what a quorum left (as after
    `kafkawire main --data-dir demo`); a wrong path is one line naming it."""
    import importlib.util
    import os
    from kafkawire.spark import load
    spec = importlib.util.spec_from_file_location("spark_metadata", os.path.join(
        os.path.dirname(__file__), "..", "..", "examples", "spark_metadata.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    counts, leaders = example.report(spark, stopped_quorum.data_dir(1))
    by_type = {r["recordType"]: r["count"] for r in counts.collect()}
    assert by_type["TOPIC_RECORD"] == 1 and by_type["PARTITION_RECORD"] == 4
    assert by_type["LEADER_CHANGE"] >= 1 and by_type["REGISTER_BROKER_RECORD"] == 1
    rows = leaders.collect()
    assert rows and all(r["leaderId"] in stopped_quorum.voter_ids for r in rows)
    with pytest.raises(FileNotFoundError, match="no such file or directory: /no/such/dir"):
        load(spark, "/no/such/dir")
    assert example.main("/no/such/dir") == 1
