"""Logs on HDFS read as logs on disk (issue 27): copies of log directories written to Hadoop
3.4.1's MiniDFSCluster (a namenode and a datanode in one JVM, started once for this module on
127.0.0.1; blocks of 1 MiB, so ranged reads cross block boundaries), read through
``hdfs://`` and ``viewfs://`` URIs with hdfs-native (no libhdfs, no JVM in Python), give the
same rows as the local copies, with and without Spark; a deleted or truncated segment gives
the same per-file error as on disk, missing indexes the same fallback; a namenode that
accepts a connection and never answers fails the read in bounded time naming the file."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("pyarrow", reason="kafkawire.spark builds Arrow batches: pip install -e '.[dev]'")

from kafkawire.spark.files import Files  # noqa: E402
from kafkawire.spark.layout import LayoutError, discover  # noqa: E402
from kafkawire.spark.options import OptionError, parse_options  # noqa: E402
from kafkawire.spark.remote_options import _hdfs_config, remote_settings  # noqa: E402
from tests.spark.logdata import read_direct  # noqa: E402
from tests.spark.remote_stores import (HDFS, SAME_ROWS_IDS, SAME_ROWS_OPTIONS, broken_copies,  # noqa: E402
                                       check_missing_indexes_fall_back_to_byte_0,
                                       check_a_deleted_segment_is_the_same_file_not_found,
                                       check_a_truncated_segment_is_the_same_corruption_error,
                                       read_from_a_silent_server, running, same_on_both, write_logdir)


@pytest.fixture(scope="module")
def hdfs():
    yield from running(HDFS)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return write_logdir(tmp_path_factory.mktemp("hdfs") / "kafka-logs")


@pytest.fixture(scope="module")
def remote(hdfs, logdir):
    return hdfs.upload(logdir, "copy")


@pytest.mark.parametrize("options", SAME_ROWS_OPTIONS, ids=SAME_ROWS_IDS)
def test_a_log_directory_on_hdfs_reads_the_same_rows_as_on_disk(hdfs, logdir, remote, options):
    same_on_both(logdir, remote, hdfs, **options)


def test_a_glob_and_viewfs_read_the_same_as_on_disk(hdfs, logdir, remote):
    """A glob lists directories on the namenode; viewfs://cluster/ resolves through the mount
    table of the options (its linkFallback given in lower case, as Spark passes it)."""
    same_on_both(str(logdir / "*-0"), f"{remote}/*-0", hdfs)
    same_on_both(logdir / "orders-0", remote.replace(hdfs.root, hdfs.other_root) + "/orders-0", hdfs)


def test_hdfs_uris_without_a_namenode_read_fs_default_fs(hdfs, logdir, remote):
    """hdfs:///path is fs.defaultFS's filesystem, as in Hadoop (the key in lower case, as
    Spark passes it)."""
    namenode = hdfs.root.rsplit("/", 1)[0]
    same_on_both(logdir / "orders-0", remote.replace(namenode, "hdfs://") + "/orders-0", hdfs,
                 **{"fs.defaultfs": namenode})


def test_spark_reads_the_hdfs_copy_as_the_reader_reads_the_disk(spark, hdfs, logdir, remote):
    """Through Spark: the options reach the planner and the executors' tasks."""
    columns = ("topic", "partition", "offset", "key", "value", "timestamp")
    want = sorted((tuple(r[c] for c in columns) for r in read_direct(logdir)), key=repr)
    reader = spark.read.format("kafkawire")
    for key, value in hdfs.options.items():
        reader = reader.option(key, value)
    got = sorted((tuple(r[c] for c in columns) for r in reader.load(remote).select(*columns).toArrow().to_pylist()),
                 key=repr)
    assert len(want) > 1000 and got == want


# --- bad input, remotely as locally ------------------------------------------------------

def test_a_segment_deleted_after_planning_is_the_same_file_not_found(hdfs, tmp_path):
    check_a_deleted_segment_is_the_same_file_not_found(hdfs, *broken_copies(hdfs, tmp_path))


def test_a_truncated_segment_is_the_same_corruption_error(hdfs, tmp_path):
    check_a_truncated_segment_is_the_same_corruption_error(hdfs, *broken_copies(hdfs, tmp_path))


def test_missing_indexes_fall_back_to_reading_from_byte_0_as_on_disk(hdfs, tmp_path):
    check_missing_indexes_fall_back_to_byte_0(hdfs, *broken_copies(hdfs, tmp_path))


def test_a_path_missing_on_hdfs_is_named(hdfs):
    from kafkawire.spark import load
    missing = f"{hdfs.root}/nothing-here"
    with pytest.raises(FileNotFoundError, match=f"no such file or directory: {missing}"):
        load(None, missing, **hdfs.options)     # checked before Spark is asked
    with pytest.raises(LayoutError, match=f"{missing}: no such file or directory"):
        discover(missing, files=Files(remote_settings(hdfs.options)))


def test_a_namenode_that_never_answers_fails_the_read_in_bounded_time():
    """hdfs-native waits for ever on a namenode that accepts the connection and says nothing;
    the reader cancels the call after dfs.client.socket-timeout (1 s here), naming the file,
    and leaves no thread behind waiting on it."""
    waiting = lambda: sum(t.name == "kafkawire-remote-call" for t in threading.enumerate())  # noqa: E731
    before = waiting()
    error, took = read_from_a_silent_server(lambda port: f"hdfs://127.0.0.1:{port}/logs/orders-0",
                                            lambda port: {"dfs.client.socket-timeout": "1000"})
    assert isinstance(error, TimeoutError) and "/logs/orders-0" in str(error), error
    assert "no answer within 1 s" in str(error) and took < 30, (error, took)
    assert waiting() == before


# --- options ------------------------------------------------------------------------------

def test_hadoop_hdfs_keys_are_options_with_their_capitals_back():
    """Spark lowercases a data source's option names; hdfs-native matches Hadoop's keys
    exactly, so fs.defaultFS, linkFallback, useFQDN and the URI's nameservice are respelled."""
    options = {"spark.hadoop.fs.defaultfs": "hdfs://MyCluster", "dfs.nameservices": "MyCluster",
               "dfs.ha.namenodes.mycluster": "nn1,nn2", "dfs.namenode.rpc-address.mycluster.nn1": "a:8020",
               "dfs.client.failover.resolver.usefqdn": "false", "fs.viewfs.mounttable.c.linkfallback": "hdfs://x/",
               "hadoop.security.authentication": "kerberos", "dfs.client.socket-timeout": "2500",
               "fs.s3a.endpoint": "not-hdfs:9000"}
    settings = parse_options({"path": "hdfs://MyCluster/logs", **options}, streaming=False).files.remote
    assert settings.hdfs_deadline == 2.5
    assert _hdfs_config(settings, "MyCluster") == {
        "fs.defaultFS": "hdfs://MyCluster", "dfs.nameservices": "MyCluster", "dfs.ha.namenodes.MyCluster": "nn1,nn2",
        "dfs.namenode.rpc-address.MyCluster.nn1": "a:8020", "dfs.client.failover.resolver.useFQDN": "false",
        "fs.viewfs.mounttable.c.linkFallback": "hdfs://x/", "hadoop.security.authentication": "kerberos",
        "dfs.client.socket-timeout": "2500"}
    with pytest.raises(OptionError, match="dfs.client.socket-timeout='never': expected a time"):
        parse_options({"path": "hdfs://nn/logs", "dfs.client.socket-timeout": "never"}, streaming=False)


def test_without_hdfs_native_pyarrows_libhdfs_client_is_used(monkeypatch):
    """The other client stays reachable: without hdfs-native, pyarrow's HadoopFileSystem is
    asked (it needs libhdfs, absent here: the error says so and names both ways)."""
    from kafkawire.spark import hdfs as hdfs_module
    monkeypatch.setattr(hdfs_module, "hdfs_native_installed", lambda: False)
    with pytest.raises(OSError) as info:
        Files(remote_settings({"dfs.client.socket-timeout": "1234"})).kind("hdfs://no-libhdfs-here:8020/logs")
    said = str(info.value)
    assert said.startswith("hdfs://no-libhdfs-here:8020: cannot reach HDFS through pyarrow's HadoopFileSystem")
    assert "kafkawire[hdfs]" in said
