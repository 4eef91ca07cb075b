"""Logs on S3 read as logs on disk (issue 27, "beyond one machine"): copies of log
directories (our writer's segments, indexes and read_committed data; real Kafka's metadata
log and snapshots) uploaded to an S3 server started here on 127.0.0.1 (moto's server mode),
read through ``s3a://`` URIs with the ``fs.s3a.*`` options, give the same rows as the local
copies, with and without Spark; and a missing segment, a truncated segment or a missing
index gives the same per-file error (or the same fallback) as on disk, a stalled server a
bounded error naming the file, never a hang."""
from __future__ import annotations

import os
import shutil

import pytest

pytest.importorskip("pyarrow", reason="kafkawire.spark builds Arrow batches: pip install -e '.[dev]'")

from kafkawire.spark.files import Files, local_path  # noqa: E402
from kafkawire.spark.layout import LayoutError, discover  # noqa: E402
from kafkawire.spark.options import OptionError, parse_options  # noqa: E402
from kafkawire.spark.remote_options import remote_settings  # noqa: E402
from tests.conftest import REFERENCE, require  # noqa: E402
from tests.spark.logdata import numbered_batches, read_direct, write_partition  # noqa: E402
from tests.spark.remote_stores import (BUCKET, S3, broken_copies, check_missing_indexes_fall_back_to_byte_0,  # noqa: E402
                                       check_a_deleted_segment_is_the_same_file_not_found,
                                       check_a_truncated_segment_is_the_same_corruption_error,
                                       read_from_a_silent_server, running, same_on_both, write_logdir)

REAL_KAFKA = REFERENCE / "kraft-data" / "1stapossum__otus_kafka" / "HW02" / "kafka_data"


@pytest.fixture(scope="module")
def s3():
    yield from running(S3)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    """write_logdir's, and __cluster_metadata-0 with its snapshot from a real Kafka broker
    when the reference samples are there."""
    root = write_logdir(tmp_path_factory.mktemp("remote") / "kafka-logs")
    if REAL_KAFKA.exists():
        shutil.copytree(REAL_KAFKA / "__cluster_metadata-0", root / "__cluster_metadata-0")
    return root


@pytest.fixture(scope="module")
def remote(s3, logdir):
    return s3.upload(logdir, "copy")


@pytest.mark.parametrize("options", [
    {},
    {"includeControl": "true"},
    {"kafka.isolation.level": "read_committed"},
    {"maxPartitionBytes": "4096"},                      # splits cut at offset-index entries
    {"startingOffsets": '{"orders": {"0": 777}}', "endingOffsets": '{"orders": {"0": 901}}'},
    {"startingTimestamp": str(1_700_000_000_000 + 10 * 555), "subscribe": "orders"},   # the time index
], ids=["all", "control", "read_committed", "splits", "offsets", "timestamp"])
def test_a_log_directory_on_s3_reads_the_same_rows_as_on_disk(s3, logdir, remote, options):
    same_on_both(logdir, remote, s3, **options)


def test_real_kafka_metadata_log_and_snapshots_read_the_same_from_s3(s3, logdir, remote):
    require(REAL_KAFKA)
    local, uri = logdir / "__cluster_metadata-0", f"{remote}/__cluster_metadata-0"
    same_on_both(local, uri, s3, includeControl="true", decode="metadata")
    (snapshot,) = [n for n in os.listdir(local) if n.endswith(".checkpoint")]
    same_on_both(local / snapshot, f"{uri}/{snapshot}", s3, decode="metadata")
    # a glob matches inside the bucket as on disk (one directory level per *)
    same_on_both(str(logdir / "*" / "*.checkpoint"), f"{remote}/*/*.checkpoint", s3)


def test_file_uris_are_local_paths(logdir):
    plain = read_direct(logdir / "orders-0")
    assert read_direct(f"file://{logdir}/orders-0") == plain
    assert read_direct(f"file:{logdir}/orders-0") == plain    # Hadoop's form
    assert local_path("s3a://b/k") is None and local_path("file:///x/y") == "/x/y"


def test_spark_reads_the_s3_copy_as_the_reader_reads_the_disk(spark, s3, logdir, remote):
    """Through Spark (options reach the executors' tasks): the same records, read_committed."""
    columns = ("topic", "partition", "offset", "key", "value", "timestamp", "producerId")
    want = sorted((tuple(r[c] for c in columns) for r in read_direct(
        logdir, **{"kafka.isolation.level": "read_committed"})), key=repr)
    reader = spark.read.format("kafkawire").option("kafka.isolation.level", "read_committed")
    for key, value in s3.options.items():
        reader = reader.option(key, value)
    table = reader.load(remote).select(*columns).toArrow()
    got = sorted((tuple(r[c] for c in columns) for r in table.to_pylist()), key=repr)
    assert len(want) > 1000 and {r[0] for r in want} >= {"orders", "payments"}
    assert got == want


def test_the_sessions_spark_hadoop_settings_reach_the_tasks_under_the_reads_options(spark, s3, logdir, remote):
    """Credentials and endpoint set only on the session (spark.hadoop.fs.s3a.*), as Spark
    users set them for Hadoop's S3A: register() carries them to the planner and the tasks.
    A read's own option wins over the session's (an endpoint where nothing listens), and a
    read that fails shows no secret."""
    from kafkawire.spark import load, register
    from tests.spark.remote_stores import free_port
    want = [r["offset"] for r in read_direct(logdir / "orders-0")]
    session = {f"spark.hadoop.{key}": value for key, value in s3.options.items()}
    session["spark.hadoop.fs.s3a.secret.key"] = "session-secret-never-shown"    # moto takes any
    uri = f"{remote}/orders-0"

    def offsets(reader):
        return sorted(reader.load(uri).select("offset").toArrow().column("offset").to_pylist())
    try:
        for key, value in session.items():
            spark.conf.set(key, value)
        register(spark)
        assert offsets(spark.read.format("kafkawire")) == want and len(want) == 1200
        spark.conf.set("spark.hadoop.fs.s3a.endpoint", f"http://127.0.0.1:{free_port()}")   # nothing there
        register(spark)
        assert offsets(spark.read.format("kafkawire").option("fs.s3a.endpoint", s3.options["fs.s3a.endpoint"])) == want
        with pytest.raises(OSError) as failed:
            load(spark, uri)        # the session's endpoint: checked in the driver, before Spark is asked
        assert uri in str(failed.value) and "session-secret-never-shown" not in str(failed.value)
    finally:
        for key in session:
            spark.conf.unset(key)
        register(spark)


def test_a_stream_over_s3_picks_up_appended_batches_and_new_segments(s3, tmp_path):
    pytest.importorskip("pyspark", reason="pyspark is not installed: pip install -e '.[dev]'")
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from tests.spark.test_spark_stream import _offsets_read, _stream_reader
    local = write_partition(tmp_path / "live-0", numbered_batches(10, 3), segment_bytes=300)
    uri = s3.upload(local, f"live-{tmp_path.name}/live-0")
    reader = _stream_reader(uri, startingOffsets="earliest", **s3.options)
    start = reader.initialOffset()
    first = reader.latestOffset(start, ReadAllAvailable())
    assert first == {"live": {"0": 30}} and _offsets_read(reader, start, first) == list(range(30))
    write_partition(local, numbered_batches(2, 3), segment_bytes=300)
    s3.upload(local, f"live-{tmp_path.name}/live-0")     # the broker's appends, synced to S3
    later = reader.latestOffset(first, ReadAllAvailable())
    assert later == {"live": {"0": 36}} and _offsets_read(reader, first, later) == list(range(30, 36))


# --- bad input, remotely as locally ------------------------------------------------------

@pytest.fixture
def two_copies(s3, tmp_path):
    local, uri = broken_copies(s3, tmp_path)
    yield local, uri
    s3.fs.delete_dir_contents(s3.key(uri), missing_dir_ok=True)


def test_a_segment_deleted_after_planning_is_the_same_file_not_found(s3, two_copies):
    check_a_deleted_segment_is_the_same_file_not_found(s3, *two_copies)


def test_a_truncated_segment_is_the_same_corruption_error(s3, two_copies):
    check_a_truncated_segment_is_the_same_corruption_error(s3, *two_copies)


def test_missing_indexes_fall_back_to_reading_from_byte_0_as_on_disk(s3, two_copies):
    check_missing_indexes_fall_back_to_byte_0(s3, *two_copies)


def test_a_path_missing_on_s3_is_named_as_on_disk(s3, tmp_path):
    from kafkawire.spark import load
    with pytest.raises(FileNotFoundError, match=f"no such file or directory: s3a://{BUCKET}/nothing-here"):
        load(None, f"s3a://{BUCKET}/nothing-here", **s3.options)   # checked before Spark is asked
    with pytest.raises(LayoutError, match=f"s3a://{BUCKET}/nothing-here: no such file or directory"):
        discover(f"s3a://{BUCKET}/nothing-here", files=Files(remote_settings(s3.options)))
    with pytest.raises(LayoutError, match="matches no file or directory"):
        discover(f"s3a://{BUCKET}/nothing-*/x-0", files=Files(remote_settings(s3.options)))


def test_a_server_that_never_answers_fails_the_read_in_bounded_time():
    """A connection accepted and never answered: the request times out after
    fs.s3a.connection.timeout, is tried fs.s3a.attempts.maximum times, and the read fails
    with an OSError naming the file; it never hangs."""
    error, _ = read_from_a_silent_server(lambda port: "s3a://stalled/logs/orders-0", lambda port: {
        "fs.s3a.endpoint": f"http://127.0.0.1:{port}", "fs.s3a.access.key": "k", "fs.s3a.secret.key": "s",
        "fs.s3a.endpoint.region": "us-east-1", "fs.s3a.connection.timeout": "500ms",
        "fs.s3a.attempts.maximum": "2"})
    assert isinstance(error, OSError) and "s3a://stalled/logs/orders-0" in str(error)


# --- options ------------------------------------------------------------------------------

def test_session_hadoop_settings_are_defaults_under_the_reads_options():
    from kafkawire.spark.remote_options import session_hadoop_options, with_session_defaults
    session = session_hadoop_options({"spark.hadoop.fs.s3a.endpoint": "session:9000", "spark.app.name": "x",
                                      "spark.hadoop.fs.s3a.access.key": "session-id", "fs.s3a.other": "not hadoop's",
                                      "spark.hadoop.dfs.client.socket-timeout": "5000",
                                      "spark.hadoop.yarn.resourcemanager.address": "rm:8032"})
    assert session == {"fs.s3a.endpoint": "session:9000", "fs.s3a.access.key": "session-id",
                       "dfs.client.socket-timeout": "5000"}
    merged = with_session_defaults({"spark.hadoop.FS.S3A.ENDPOINT": "read:9000", "path": "s3a://b/x"}, session)
    settings = remote_settings(merged)
    assert (settings.endpoint, settings.access_key, settings.hdfs_deadline) == ("read:9000", "session-id", 5.0)
    assert with_session_defaults({"path": "p"}, {}) == {"path": "p"}


def test_fs_options_are_hadoops_names_and_secrets_stay_out_of_messages():
    settings = remote_settings({"spark.hadoop.fs.s3a.access.key": "AKIA-secret-id",
                                "fs.s3a.secret.key": "very-secret", "fs.s3a.endpoint": "minio:9000",
                                "fs.s3a.connection.ssl.enabled": "false",
                                "fs.s3a.connection.establish.timeout": "5000",
                                "fs.s3a.connection.timeout": "2m", "fs.s3a.impl": "ignored"})
    assert (settings.access_key, settings.endpoint, settings.scheme) == ("AKIA-secret-id", "minio:9000", "http")
    assert (settings.connect_timeout, settings.request_timeout, settings.attempts) == (5.0, 120.0, 5)
    assert "secret" not in repr(settings) and "secret" not in repr(parse_options(
        {"path": "s3a://b/x", "fs.s3a.secret.key": "very-secret"}, streaming=False))


@pytest.mark.parametrize("option, value, message", [
    ("fs.s3a.connection.timeout", "soon", "fs.s3a.connection.timeout='soon': expected a time"),
    ("fs.s3a.attempts.maximum", "0", "fs.s3a.attempts.maximum='0': expected a whole number, at least 1"),
    ("fs.s3a.endpoint", "http://host/path", "fs.s3a.endpoint='http://host/path': expected host"),
    ("fs.s3a.path.style.access", "yes", "fs.s3a.path.style.access='yes': expected true or false"),
    ("fs.gs.storage.root.url", "http://host/storage/v2", "fs.gs.storage.root.url='http://host/storage/v2': expected host"),
    ("fs.gs.http.read-timeout", "never", "fs.gs.http.read-timeout='never': expected a time"),
    ("fs.gs.http.max.retry", "-1", "fs.gs.http.max.retry='-1': expected a whole number, at least 0"),
    ("fs.azure.always.use.https", "no", "fs.azure.always.use.https='no': expected true or false"),
    ("fs.azure.http.read.timeout", "0", "fs.azure.http.read.timeout='0': expected a time above zero"),
])
def test_a_bad_fs_option_is_named(option, value, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace("?", r"\?")):
        parse_options({"path": "s3a://b/x", option: value}, streaming=False)
