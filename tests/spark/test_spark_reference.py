"""Spark reads every real Kafka data sample in ../shared/reference/kraft-data and finds
exactly the records ``kafkawire dump-log --json`` finds: same offsets, keys, values,
timestamps, headers, epochs, producer fields, control flags; and with decode=metadata the
same record types, versions and JSON as dump-log's --cluster-metadata-decoder."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REFERENCE, require
from tests.spark.logdata import (DISCOVERY, dump_log_json, dump_log_metadata, dump_log_rows, segment_files,
                                 spark_rows, without_control_bytes)

KRAFT_DATA = REFERENCE / "kraft-data"


def _is_metadata(path: Path) -> bool:
    return path.name.startswith("__cluster_metadata-") or path.suffix == ".checkpoint"


@pytest.fixture(scope="module")
def samples():
    """Every partition directory with segments and every snapshot, and what dump-log finds
    in them (one run with the metadata decoder over the metadata log and snapshots, one
    plain run over the other topics)."""
    return samples_under(require(KRAFT_DATA))


def samples_under(root: Path, *, last_snapshots: int | None = None, partitions_named=None) -> dict:
    """The samples fixture's work on any directory (tests/interop/test_held_out_claims_on_kafka_data.py
    gives it the one a Kafka node wrote in the run, with some of its partitions, its last snapshots
    and its bootstrap file)."""
    partitions = sorted({p.parent for p in root.rglob("*.log") if re.match(r"^\d{20}\.log$", p.name)
                         and (partitions_named is None or p.parent.name in partitions_named)})
    snapshots = sorted(p for p in root.rglob("*.checkpoint")
                       if re.match(r"^(\d{20}-\d{10}|bootstrap)\.checkpoint$", p.name))
    if last_snapshots is not None:
        snapshots = snapshots[-last_snapshots - 1:]     # "bootstrap" sorts after the digits
    assert partitions and snapshots, f"no log segments or snapshots under {root}"
    metadata = [f for d in partitions if _is_metadata(d) for f in segment_files(d)] + [str(s) for s in snapshots]
    topics = [f for d in partitions if not _is_metadata(d) for f in segment_files(d)]
    # apache/kafka's own test data holds PartitionRecords of a pre-release schema that neither
    # dump-log nor the reader can decode: both must say so for the same records.
    metadata_dump = dump_log_json(metadata, metadata=True, allow_errors=True)
    return {"partitions": partitions, "snapshots": snapshots,
            "rows": dump_log_rows(metadata_dump) + dump_log_rows(dump_log_json(topics)),
            "metadata": dump_log_metadata(metadata_dump)}


def _diff(got, want) -> str:
    extra, missing = Counter(got) - Counter(want), Counter(want) - Counter(got)
    return (f"{sum(extra.values())} rows only in Spark, e.g. {list(extra)[:3]}; "
            f"{sum(missing.values())} rows only in dump-log, e.g. {list(missing)[:3]}")


def test_every_sample_reads_as_dump_log_finds_it(spark, samples):
    assert reads_as_dump_log_finds_it(spark, samples) > 100_000


def reads_as_dump_log_finds_it(spark, samples) -> int:
    """Spark's rows of every partition and snapshot are dump-log's; returns how many."""
    paths = [str(p) for p in samples["partitions"] + samples["snapshots"]]
    got = without_control_bytes(spark_rows(spark.read.format("kafkawire")
                                           .option("includeControl", "true").load(paths)))
    want = samples["rows"]
    same = Counter(got) == Counter(want)   # not in the assert: pytest would diff 100k rows
    assert same, _diff(got, want)
    return len(want)


def test_metadata_records_decode_as_dump_log_decodes_them(spark, samples):
    undecodable = metadata_decodes_as_dump_log_decodes_it(spark, samples)
    assert undecodable > 0      # apache/kafka's pre-release PartitionRecords, refused by both


def metadata_decodes_as_dump_log_decodes_it(spark, samples) -> int:
    """decode=metadata gives dump-log's record types, versions and JSON; returns how many
    records neither could decode (each a "not a metadata record" corruption in Spark)."""
    paths = [str(p) for p in samples["partitions"] + samples["snapshots"] if _is_metadata(p)]
    df = (spark.read.format("kafkawire").option("includeControl", "true").option("decode", "metadata")
          .option("failOnCorruption", "false").load(paths))
    rows = df.select("offset", "recordType", "recordVersion", "record", "corruption").toArrow().to_pylist()
    undecodable = [r for r in rows if r["corruption"] is not None]
    assert all(r["recordType"] is None and "not a metadata record" in r["corruption"] for r in undecodable)
    got = [(r["offset"], r["recordType"], r["recordVersion"], None if r["record"] is None else json.loads(r["record"]))
           for r in rows]
    key = lambda t: json.dumps(t, sort_keys=True)  # noqa: E731 - dicts are not hashable
    got, want = Counter(map(key, got)), Counter(map(key, samples["metadata"]))
    same = got == want
    assert same, _diff(got.elements(), want.elements())
    types = Counter(json.loads(t)[1] for t in got.elements())
    assert types["LEADER_CHANGE"] and types["SNAPSHOT_HEADER"] and types["TOPIC_RECORD"], types
    assert len(undecodable) == types[None]
    return len(undecodable)


def test_a_log_directory_reads_every_partition_in_it(spark):
    root = require(KRAFT_DATA / "TienHien4__PetManagement" / "kafka-data")
    df = spark.read.format("kafkawire").load(str(root))
    by_topic = {r["topic"]: r["count"] for r in df.groupBy("topic").count().collect()}
    assert set(by_topic) == {"__cluster_metadata", "appointment-email-events"}
    data = [r for r in dump_log_rows(dump_log_json(segment_files(root / "appointment-email-events-0")))
            if not r[14]]
    assert by_topic["appointment-email-events"] == len(data)
    with_headers = df.where("topic = 'appointment-email-events' and headers is not null").count()
    assert with_headers == sum(1 for r in data if r[7]) > 0


def test_discovered_by_name(spark):
    """Spark 4 registers the DefaultSource of pyspark_* modules on its own: format
    kafkawire worked before kafkawire.spark.register was called (see conftest)."""
    assert DISCOVERY.get("found"), DISCOVERY.get("error")


def test_a_snapshot_file_alone(spark, samples):
    snap = next(s for s in samples["snapshots"] if re.match(r"^\d{20}-\d{10}\.checkpoint$", s.name))
    rows = spark_rows(spark.read.format("kafkawire").option("includeControl", "true").load(str(snap)))
    assert Counter(without_control_bytes(rows)) == Counter(dump_log_rows(dump_log_json([snap], metadata=True)))
    assert rows[0][15] == "SNAPSHOT_HEADER" and rows[-1][15] == "SNAPSHOT_FOOTER"
    assert {r[8] for r in rows} == {int(snap.name[21:31])}   # every batch carries the epoch
