"""Logs on Google Cloud Storage and Azure Blob storage read as logs on disk (issue 27), as
tests/spark/test_spark_remote.py checks for S3: copies of log directories uploaded, one
object per file and no directory markers (as ``gcloud storage cp -r`` and ``azcopy`` leave
them), to gcp-storage-emulator and Azurite started here on 127.0.0.1, read through
``gs://`` and ``abfs://`` URIs with the gcs-connector's ``fs.gs.*`` and hadoop-azure's
``fs.azure.*`` options, give the same rows as the local copies; a deleted or truncated
segment gives the same per-file error as on disk; a server that never answers fails the
read in bounded time naming the file (pyarrow's clients for these stores take no request
timeout: the reader bounds each call itself)."""
from __future__ import annotations

import pytest

pytest.importorskip("pyarrow", reason="kafkawire.spark builds Arrow batches: pip install -e '.[dev]'")

from kafkawire.spark.files import Files  # noqa: E402
from kafkawire.spark.layout import LayoutError, discover  # noqa: E402
from kafkawire.spark.remote_options import remote_settings  # noqa: E402
from tests.spark.logdata import read_direct  # noqa: E402
from tests.spark.remote_stores import (AZURITE_ACCOUNT, AZURITE_KEY, GCS, SAME_ROWS_IDS,  # noqa: E402
                                       SAME_ROWS_OPTIONS, Azure, broken_copies, check_a_deleted_segment_is_the_same_file_not_found,
                                       check_a_truncated_segment_is_the_same_corruption_error,
                                       read_from_a_silent_server, running, same_on_both, write_logdir)


@pytest.fixture(scope="module", params=[GCS, Azure], ids=["gcs", "azure"])
def store(request):
    yield from running(request.param)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return write_logdir(tmp_path_factory.mktemp("stores") / "kafka-logs")


@pytest.fixture(scope="module")
def remote(store, logdir):
    return store.upload(logdir, "copy")


@pytest.mark.parametrize("options", SAME_ROWS_OPTIONS, ids=SAME_ROWS_IDS)
def test_a_log_directory_in_the_store_reads_the_same_rows_as_on_disk(store, logdir, remote, options):
    """Partition directories that exist only as prefixes of their files are found (GCS
    lists no such directory through pyarrow unless everything below is listed)."""
    same_on_both(logdir, remote, store, **options)


def test_a_glob_matches_in_the_store_as_on_disk(store, logdir, remote):
    same_on_both(str(logdir / "*-0"), f"{remote}/*-0", store)


def test_the_schemes_other_name_reads_the_same(store, logdir, remote):
    """gcs:// as gs://; wasb://container@account.blob.core.windows.net as abfs:// (the
    account's key option may name either service)."""
    same_on_both(logdir / "orders-0", remote.replace(store.root, store.other_root) + "/orders-0", store)


def test_a_segment_deleted_after_planning_is_the_same_file_not_found(store, tmp_path):
    check_a_deleted_segment_is_the_same_file_not_found(store, *broken_copies(store, tmp_path))


def test_a_truncated_segment_is_the_same_corruption_error(store, tmp_path):
    check_a_truncated_segment_is_the_same_corruption_error(store, *broken_copies(store, tmp_path))


def test_a_path_missing_in_the_store_is_named(store):
    missing = f"{store.root}/nothing-here"
    with pytest.raises(LayoutError, match=f"{missing}: no such file or directory"):
        discover(missing, files=Files(remote_settings(store.options)))


def test_storage_emulator_host_reaches_the_gcs_emulator_without_options(logdir, tmp_path, monkeypatch):
    """STORAGE_EMULATOR_HOST, as Google's client libraries take it: that endpoint, no credentials."""
    gcs = GCS()
    try:
        uri = gcs.upload(logdir / "orders-0", f"{tmp_path.name}/orders-0")
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs.options["fs.gs.storage.root.url"])
        assert read_direct(uri) == read_direct(logdir / "orders-0")
    finally:
        gcs.stop()


_SILENT = {
    "gcs": (lambda port: "gs://stalled/logs/orders-0",
            lambda port: {"fs.gs.storage.root.url": f"http://127.0.0.1:{port}", "fs.gs.auth.type": "UNAUTHENTICATED",
                          "fs.gs.http.read-timeout": "500ms", "fs.gs.http.max.retry": "1"}),
    "azure": (lambda port: f"abfs://stalled@{AZURITE_ACCOUNT}.dfs.core.windows.net/logs/orders-0",
              lambda port: {"fs.azure.abfs.endpoint": f"127.0.0.1:{port}", "fs.azure.always.use.https": "false",
                            f"fs.azure.account.key.{AZURITE_ACCOUNT}.dfs.core.windows.net": AZURITE_KEY,
                            "fs.azure.http.read.timeout": "250ms"}),
}


@pytest.mark.parametrize("kind", sorted(_SILENT))
def test_a_server_that_never_answers_fails_the_read_in_bounded_time(kind):
    """A connection accepted and never answered (GCS's client would wait 120 s, Azure's for
    ever): the call is given up after the read timeout times the attempts (1 s here), and the
    read fails with a TimeoutError naming the file."""
    uri_of, options_of = _SILENT[kind]
    error, took = read_from_a_silent_server(uri_of, options_of)
    assert isinstance(error, TimeoutError) and uri_of(0) in str(error) and "no answer within 1 s" in str(error)
    assert took < 30, took


# --- options ------------------------------------------------------------------------------

def test_gcs_and_azure_options_are_the_hadoop_connectors_names(monkeypatch):
    monkeypatch.delenv("STORAGE_EMULATOR_HOST", raising=False)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT", "envaccount")
    monkeypatch.setenv("AZURE_STORAGE_KEY", "env-secret-key")
    default = remote_settings({})
    assert (default.gcs_endpoint, default.gcs_anonymous, default.gcs_deadline) == (None, False, 220.0)
    assert (default.azure_endpoint, default.azure_https, default.azure_deadline) == (None, True, 120.0)
    assert dict(default.azure_keys) == {"envaccount": "env-secret-key"}
    settings = remote_settings({"spark.hadoop.fs.gs.storage.root.url": "http://emulator:4443/",
                                "fs.gs.auth.type": "unauthenticated", "fs.gs.project.id": "p",
                                "fs.gs.http.read-timeout": "5000", "fs.gs.http.max.retry": "2",
                                "fs.azure.abfs.endpoint": "azurite:10000", "fs.azure.always.use.https": "false",
                                "fs.azure.account.key.acct.blob.core.windows.net": "secret-blob-key",
                                "fs.azure.http.read.timeout": "2s"})
    assert (settings.gcs_endpoint, settings.gcs_scheme, settings.gcs_anonymous, settings.gcs_project,
            settings.gcs_deadline) == ("emulator:4443", "http", True, "p", 15.0)
    assert (settings.azure_endpoint, settings.azure_https, settings.azure_deadline) == ("azurite:10000", False, 8.0)
    assert dict(settings.azure_keys) == {"acct": "secret-blob-key", "envaccount": "env-secret-key"}
    assert "secret" not in repr(settings)


def test_storage_emulator_host_means_that_endpoint_and_no_credentials(monkeypatch):
    for value, endpoint, scheme in [("localhost:9023", "localhost:9023", "http"),
                                    ("https://emulator:9023", "emulator:9023", "https")]:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", value)
        settings = remote_settings({})
        assert (settings.gcs_endpoint, settings.gcs_scheme, settings.gcs_anonymous) == (endpoint, scheme, True)
    # the option wins over the environment, with the credentials chain unless told otherwise
    settings = remote_settings({"fs.gs.storage.root.url": "https://storage.googleapis.com/"})
    assert (settings.gcs_endpoint, settings.gcs_anonymous) == (None, False)


def test_an_abfs_uri_without_a_container_is_named():
    with pytest.raises(OSError, match="abfs://account.dfs.core.windows.net: expected abfs://<container>@"):
        Files(remote_settings({})).kind("abfs://account.dfs.core.windows.net/logs")


def test_a_ranged_read_that_stalls_fails_naming_the_file_and_leaves_the_file_to_its_call():
    """A read_at that never returns (a server that stops answering mid-segment) fails after
    the deadline; closing the file then leaves the native file alone, as its abandoned call
    still uses it (closing under it could crash the native client)."""
    import threading

    from kafkawire.spark.files import _RemoteFile
    release, calls = threading.Event(), []

    class StallingFile:
        def size(self):
            return 1000

        def read_at(self, n, position):
            release.wait(30)
            return b"x" * n

        def close(self):
            calls.append("close")

    class Store:
        def open_input_file(self, path):
            return StallingFile()

    remote = _RemoteFile("gs://b/logs/orders-0/00000000000000000000.log", Store(), "b/logs", deadline=0.2)
    with pytest.raises(TimeoutError, match=r"reading 100 bytes at byte 0 of gs://b/logs/orders-0/0{20}\.log: "
                                           r"no answer within 0\.2 s"):
        remote.pread(100, 0)
    remote.close()
    release.set()
    assert calls == []
