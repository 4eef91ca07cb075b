"""Object stores started here on 127.0.0.1, each in its own process killed by pid at
teardown, holding copies of log directories; and the checks every remote test makes of
them: the same rows as from the local copy, the same per-file errors when a file is deleted
or cut short, and a bounded failure naming the file when the server never answers.

S3 is moto's server (a package of the [dev] extra); Google Cloud Storage is
gcp-storage-emulator and Azure Blob storage is Azurite, which .ci/install-emulators installs
under .tools/ (without them their tests skip, and fail under CI=true); HDFS is Hadoop's
MiniDFSCluster (a namenode and a datanode in one JVM, tests/spark/hdfs/MiniHdfs.java), whose
jars .ci/install-emulators brings with Maven into .tools/hdfs/, read with hdfs-native."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from kafkawire.raft.node.local_quorum import free_ports
from kafkawire.records import CorruptRecordError
from kafkawire.spark.filters import PushedFilters
from kafkawire.spark.options import parse_options
from kafkawire.spark.plan import plan_batch
from kafkawire.spark.reader import default_names, read_task, settings_for
from tests.conftest import unavailable
from tests.spark.logdata import numbered_batches, read_direct, segment_files, write_partition

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / ".tools"
AZURITE = TOOLS / "azurite" / "node_modules" / ".bin" / "azurite-blob"
GCS_EMULATOR = TOOLS / "gcs" / "bin" / "gcp-storage-emulator"
BUCKET = "kafka-logs"
# Azurite's well-known development account (public: Microsoft documents it for the emulator)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def free_port() -> int:
    """One port reserved as free_ports reserves them: a port probed free and closed is handed
    out again by another process's bind(0) (a test file beside this one under pytest-xdist)."""
    port, = free_ports(1)
    return port


class LocalStore:
    """A store's server process, the options a read needs to reach it, a pyarrow filesystem
    to fill it with (``fs``, whose paths start with the bucket), and ``root``: the URI of the
    bucket as a read names it."""

    name = "store"
    root = ""
    other_root = ""       # the same bucket through the scheme's other name
    options: dict = {}

    def _start(self, argv: list[str], port: int, env: dict | None = None) -> None:
        self.output = tempfile.TemporaryFile()     # what the server says, for the error if it exits
        self.process = subprocess.Popen(argv, stdout=self.output, stderr=subprocess.STDOUT,
                                        env=env, cwd=TOOLS if TOOLS.is_dir() else None)
        deadline = time.monotonic() + 60.0
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.output.seek(0)
                said = self.output.read().decode(errors="replace")[-1500:]
                raise RuntimeError(f"{self.name}'s server exited with status {self.process.returncode}:\n{said}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name}'s server did not listen on 127.0.0.1:{port} within 60 s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        self.output.close()

    def upload(self, local_dir, name: str) -> str:
        """A copy of ``local_dir``'s files under ``<root>/<name>``, one object each and no
        directory markers (as the stores' own copy tools upload a tree); its URI."""
        for directory, _, files in os.walk(local_dir):
            relative = os.path.relpath(directory, local_dir)
            for file_name in files:
                key = "/".join(p for p in (BUCKET, name, relative, file_name) if p not in ("", "."))
                with open(os.path.join(directory, file_name), "rb") as source, self.fs.open_output_stream(key) as out:
                    out.write(source.read())
        return f"{self.root}/{name}"

    def key(self, uri: str) -> str:
        """The path of a read's URI in ``fs``."""
        return BUCKET + uri[len(self.root):]


class S3(LocalStore):
    """moto's S3 server (its own process: moto imports a ``responses`` module that
    tests/responses.py would shadow here)."""

    name, root = "moto", f"s3a://{BUCKET}"

    def __init__(self):
        if importlib.util.find_spec("moto") is None:
            unavailable("moto is not installed (the S3 server of these tests): pip install -e '.[dev]'")
        import pyarrow.fs as pafs
        port = free_port()
        self._start([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], port,
                    env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        endpoint = f"127.0.0.1:{port}"
        self.options = {"fs.s3a.endpoint": f"http://{endpoint}", "fs.s3a.access.key": "test-key",
                        "fs.s3a.secret.key": "test-secret", "fs.s3a.endpoint.region": "us-east-1",
                        "fs.s3a.connection.timeout": "10s", "fs.s3a.attempts.maximum": "2"}
        self.fs = pafs.S3FileSystem(access_key="test-key", secret_key="test-secret", scheme="http",
                                    endpoint_override=endpoint, region="us-east-1",
                                    allow_bucket_creation=True)
        self.fs.create_dir(BUCKET)


def _installed(program: Path, how: str) -> str:
    if not program.exists():
        unavailable(f"{program.relative_to(REPO)} is missing ({how}): run .ci/install-emulators")
    return str(program)


class GCS(LocalStore):
    """gcp-storage-emulator, Google Cloud Storage's JSON API in memory, reached as the
    gcs-connector would reach it: fs.gs.storage.root.url, no credentials."""

    name, root, other_root = "gcp-storage-emulator", f"gs://{BUCKET}", f"gcs://{BUCKET}"

    def __init__(self):
        program = _installed(GCS_EMULATOR, "Google Cloud Storage's emulator")
        import pyarrow.fs as pafs
        port = free_port()
        self._start([program, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory"], port)
        self.options = {"fs.gs.storage.root.url": f"http://127.0.0.1:{port}", "fs.gs.auth.type": "UNAUTHENTICATED",
                        "fs.gs.http.read-timeout": "10s", "fs.gs.http.max.retry": "1"}
        self.fs = pafs.GcsFileSystem(anonymous=True, scheme="http", endpoint_override=f"127.0.0.1:{port}",
                                     project_id="kafkawire-tests")
        self.fs.create_dir(BUCKET)


class Azure(LocalStore):
    """Azurite's Blob service in memory (no telemetry), reached as hadoop-azure's ABFS
    client would reach it: fs.azure.abfs.endpoint, http, the account's key."""

    name, root = "azurite", f"abfs://{BUCKET}@{AZURITE_ACCOUNT}.dfs.core.windows.net"
    other_root = f"wasb://{BUCKET}@{AZURITE_ACCOUNT}.blob.core.windows.net"

    def __init__(self):
        program = _installed(AZURITE, "Azure storage's emulator, from npm")
        import pyarrow.fs as pafs
        port = free_port()
        # pyarrow's Azure SDK speaks a newer service version than Azurite 3.37 knows of
        self._start([program, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
                     "--disableTelemetry", "--skipApiVersionCheck", "--silent"], port)
        self.options = {"fs.azure.abfs.endpoint": f"127.0.0.1:{port}", "fs.azure.always.use.https": "false",
                        f"fs.azure.account.key.{AZURITE_ACCOUNT}.dfs.core.windows.net": AZURITE_KEY,
                        "fs.azure.http.read.timeout": "10s"}
        self.fs = pafs.AzureFileSystem(AZURITE_ACCOUNT, account_key=AZURITE_KEY,
                                       blob_storage_authority=f"127.0.0.1:{port}",
                                       dfs_storage_authority=f"127.0.0.1:{port}",
                                       blob_storage_scheme="http", dfs_storage_scheme="http")
        self.fs.create_dir(BUCKET)


HDFS_SOURCES = REPO / "tests" / "spark" / "hdfs"
HDFS_TOOLS = TOOLS / "hdfs"


def _hdfs_launcher() -> str:
    """The classpath of MiniHdfs: its class, compiled once per version of its source into
    .tools/hdfs/, and the jars .ci/install-emulators fetched for the pom's version."""
    pom_pin = hashlib.sha256((HDFS_SOURCES / "pom.xml").read_bytes()).hexdigest()[:16]
    stamp = HDFS_TOOLS / ".installed"
    if not stamp.exists() or stamp.read_text().strip() != pom_pin:
        unavailable(f"{stamp.relative_to(REPO)} does not name tests/spark/hdfs/pom.xml's jars "
                    f"(Hadoop's MiniDFSCluster): run .ci/install-emulators")
    if shutil.which("java") is None or shutil.which("javac") is None:
        unavailable("java and javac are not on PATH (a JDK 17 runs Hadoop's MiniDFSCluster)")
    source = HDFS_SOURCES / "MiniHdfs.java"
    classes = HDFS_TOOLS / f"classes-{hashlib.sha256(source.read_bytes()).hexdigest()[:16]}"
    libs = f"{HDFS_TOOLS / 'libs'}/*"
    if not classes.exists():
        building = Path(tempfile.mkdtemp(dir=HDFS_TOOLS))
        result = subprocess.run(["javac", "-nowarn", "-d", str(building), "-cp", libs, str(source)],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"javac MiniHdfs.java failed:\n{(result.stdout + result.stderr)[-3000:]}")
        try:
            building.rename(classes)
        except OSError:
            shutil.rmtree(building)      # another run compiled it first
    return f"{classes}:{libs}"


class _HdfsWriter:
    """What the checks write and delete with, as pyarrow's filesystems of the other stores:
    paths start with the "bucket" (a top directory here)."""

    def __init__(self, url: str):
        from hdfs_native import Client
        self.client = Client(url)

    def open_output_stream(self, key: str):
        from hdfs_native import WriteOptions
        return self.client.create(f"/{key}", WriteOptions(overwrite=True, create_parent=True))

    def delete_file(self, key: str) -> None:
        assert self.client.delete(f"/{key}")


class HDFS(LocalStore):
    """Hadoop 3.4.1's MiniDFSCluster on 127.0.0.1 (its namenode's RPC on a free port, one
    datanode), read with hdfs-native as a Spark user names it: hdfs://namenode:port/path, or
    viewfs://cluster/path through a mount table given as Hadoop's fs.viewfs.* options (in
    lower case, as Spark hands options to a data source)."""

    name = "MiniDFSCluster"

    def __init__(self):
        if importlib.util.find_spec("hdfs_native") is None:
            unavailable("hdfs-native is not installed (kafkawire's HDFS client): pip install -e '.[dev]'")
        classpath = _hdfs_launcher()
        self.base = tempfile.mkdtemp(prefix="mini-hdfs-")
        self.output = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            # C1 only and the serial collector: the cluster starts in about 60% of the time
            # (5.4-7.9 s against 11.4-14.0 s at load 7), and its work here is small
            ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
             f"-Dlog4j.configuration=file:{HDFS_SOURCES / 'log4j.properties'}",
             "-cp", classpath, "MiniHdfs", self.base],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.output)
        port = self._namenode_port()
        namenode = f"hdfs://127.0.0.1:{port}"
        self.root, self.other_root = f"{namenode}/{BUCKET}", f"viewfs://cluster/{BUCKET}"
        self.options = {"dfs.client.socket-timeout": "10000",
                        f"fs.viewfs.mounttable.cluster.link./{BUCKET}": self.root,
                        "fs.viewfs.mounttable.cluster.linkfallback": f"{namenode}/"}
        self.fs = _HdfsWriter(namenode)

    def upload(self, local_dir, name: str) -> str:
        """As the other stores', a file at a time in 16 threads: closing an HDFS file waits
        for the namenode to learn that the datanode has its block (hdfs-native asks again
        after 500 ms), so one after another a directory of segments takes seconds."""
        from concurrent.futures import ThreadPoolExecutor
        files = [(directory, file_name) for directory, _, names in os.walk(local_dir) for file_name in names]

        def put(found):
            directory, file_name = found
            relative = os.path.relpath(os.path.join(directory, file_name), local_dir)
            with open(os.path.join(directory, file_name), "rb") as source, \
                    self.fs.open_output_stream(f"{BUCKET}/{name}/{relative}") as out:
                out.write(source.read())

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(put, files))
        return f"{self.root}/{name}"

    def _namenode_port(self) -> int:
        """The port MiniHdfs prints once its datanode has registered (bounded: 90 s)."""
        said: list = []
        reader = threading.Thread(target=lambda: said.append(self.process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=90)
        line = said[0].decode(errors="replace").split() if said else []
        if len(line) == 2 and line[0] == "namenode":
            return int(line[1])
        self.stop()
        self.output.seek(0)
        raise RuntimeError(f"MiniDFSCluster did not start within 90 s (status {self.process.returncode}):\n"
                           f"{self.output.read().decode(errors='replace')[-3000:]}")

    def stop(self) -> None:
        try:
            self.process.stdin.close()      # MiniHdfs shuts its cluster down at the end of its input
            self.process.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.process.poll() is None:
            super().stop()
        else:
            self.output.close()
        self.process.stdout.close()
        shutil.rmtree(self.base, ignore_errors=True)


def running(store_class):
    """A module fixture's body: the store, stopped at the end."""
    store = store_class()
    try:
        yield store
    finally:
        store.stop()


def write_logdir(root: Path) -> Path:
    """orders-0 (rolled segments, an index entry per KiB) and payments-0 (committed, aborted
    and open transactions)."""
    from tests.spark.test_spark_plan import TXN_LOG
    write_partition(root / "orders-0", numbered_batches(120, 10), segment_bytes=20_000,
                    index_interval_bytes=1024, leader_epoch=3)
    write_partition(root / "payments-0", TXN_LOG, index_interval_bytes=1)
    return root


# --- the checks ---------------------------------------------------------------------------

# The reads every store's test compares with the same read from disk: all records, read_committed
# in input partitions split at index entries, and a start found through the time index.
SAME_ROWS_OPTIONS = [
    {"includeControl": "true"},
    {"kafka.isolation.level": "read_committed", "maxPartitionBytes": "4096"},
    {"startingTimestamp": str(1_700_000_000_000 + 10 * 555), "subscribe": "orders"},
]
SAME_ROWS_IDS = ["all", "read_committed_splits", "timestamp"]


def same_on_both(local, uri, store, **options) -> None:
    here = read_direct(local, **options)
    there = read_direct(uri, **store.options, **options)
    assert here, f"nothing read from {local} with {options}"
    assert there == here


def planned(path, options):
    opts = parse_options({"path": str(path), **options}, streaming=False)
    return plan_batch(opts, PushedFilters()), settings_for(default_names(opts), opts, PushedFilters())


def error_of(tasks, settings, local_root: str, remote_root: str) -> tuple:
    """The error a read of ``tasks`` raises, with the remote root written as the local one."""
    with pytest.raises((OSError, CorruptRecordError)) as info:
        for task in tasks:
            for _ in read_task(task, settings):
                pass
    return type(info.value), str(info.value).replace(remote_root, local_root)


def broken_copies(store, tmp_path):
    """A fresh orders-0 on disk and in the store, for a test to break both the same way."""
    local = write_partition(tmp_path / "orders-0", numbered_batches(60, 10), segment_bytes=8_000,
                            index_interval_bytes=1024)
    return local, store.upload(local, f"broken-{tmp_path.name}/orders-0")


def check_a_deleted_segment_is_the_same_file_not_found(store, local, uri) -> None:
    plans = {"local": planned(local, {}), "remote": planned(uri, store.options)}
    victim = os.path.basename(segment_files(local)[1])
    os.remove(local / victim)
    store.fs.delete_file(f"{store.key(uri)}/{victim}")
    here = error_of(*plans["local"], str(local), uri)
    there = error_of(*plans["remote"], str(local), uri)
    assert here[0] is FileNotFoundError and victim in here[1]
    assert there == here


def check_a_truncated_segment_is_the_same_corruption_error(store, local, uri) -> None:
    victim = segment_files(local)[1]                     # a rolled segment: complete by construction
    data = open(victim, "rb").read()[:-25]               # its last batch cut short
    with open(victim, "wb") as f:
        f.write(data)
    with store.fs.open_output_stream(f"{store.key(uri)}/{os.path.basename(victim)}") as f:
        f.write(data)
    here = error_of(*planned(local, {}), str(local), uri)
    there = error_of(*planned(uri, store.options), str(local), uri)
    assert here[0] is CorruptRecordError and "only" in here[1] and os.path.basename(victim) in here[1]
    assert there == here


def check_missing_indexes_fall_back_to_byte_0(store, local, uri) -> None:
    """Without their offset and time indexes a read that starts mid-log scans from byte 0, the
    same rows from the store as from disk."""
    options = {"startingOffsets": '{"orders": {"0": 333}}'}
    whole = read_direct(local, **options)
    for name in os.listdir(local):
        if name.endswith((".index", ".timeindex")):
            os.remove(local / name)
            store.fs.delete_file(f"{store.key(uri)}/{name}")
    assert read_direct(local, **options) == whole
    assert read_direct(uri, **store.options, **options) == whole and whole[0]["offset"] == 333


def read_from_a_silent_server(uri_of, options_of, *, bound: float = 60.0) -> tuple[Exception, float]:
    """The error of a read from a server that accepts connections and never answers, and how
    long it took: ``uri_of(port)`` and ``options_of(port)`` name the path and the options."""
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    held: list = []

    def hold():
        try:
            while len(held) < 16:
                held.append(silent.accept()[0])
        except OSError:
            pass    # closed at the end of the test

    threading.Thread(target=hold, daemon=True).start()
    outcome: list = []

    def read():
        try:
            read_direct(uri_of(port), **options_of(port))
        except Exception as e:   # noqa: BLE001 - the outcome is checked by the caller
            outcome.append(e)

    worker = threading.Thread(target=read, daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(timeout=bound)
    took = time.monotonic() - started
    silent.close()
    for connection in held:      # so that a call abandoned on them ends now
        connection.close()
    assert not worker.is_alive(), f"the read of a silent server did not give up within {bound} s"
    (error,) = outcome
    return error, took
