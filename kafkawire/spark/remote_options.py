"""How a read reaches a remote filesystem: the ``fs.*`` options, named as Spark users name
them for Hadoop, and the pyarrow filesystem they build.

Spark jobs set these as Hadoop configuration (``spark.hadoop.fs.s3a.access.key`` in the
session, or as an option of a file source). A Python data source's planner and tasks cannot
see the session, so ``kafkawire.spark.register(spark)`` copies the session's
``spark.hadoop.*`` settings among these keys when it is called, and carries them with the
registered data source as defaults under each read's own options (the read's win; a
session setting changed after ``register`` is seen once ``register`` is called again).
A read's options take them with or without the ``spark.hadoop.`` prefix:

======================================  ==================================================
fs.s3a.access.key / fs.s3a.secret.key   credentials (else the usual AWS chain: the
fs.s3a.session.token                    AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
                                        AWS_SESSION_TOKEN variables, ~/.aws, instance role)
fs.s3a.assumed.role.arn                 a role to assume (STS) with those credentials
fs.s3a.aws.credentials.provider         ...AnonymousAWSCredentialsProvider: no credentials
fs.s3a.endpoint                         host[:port] or URL of an S3-compatible store
fs.s3a.endpoint.region                  the region (else AWS_REGION / AWS_DEFAULT_REGION,
                                        else asked of S3 for the bucket)
fs.s3a.path.style.access                false: virtual-host addressing even with an endpoint
fs.s3a.connection.ssl.enabled           default true (an endpoint URL's scheme wins)
fs.s3a.connection.establish.timeout     connect timeout, default 30s
fs.s3a.connection.timeout               a request that moves no byte this long fails,
                                        default 60s (Hadoop's is 200s)
fs.s3a.attempts.maximum                 attempts per request, default 5
fs.gs.storage.root.url                  the GCS endpoint URL (an emulator's); else
                                        STORAGE_EMULATOR_HOST, which also means anonymous
fs.gs.auth.type                         UNAUTHENTICATED: no credentials (else Google's
                                        chain: GOOGLE_APPLICATION_CREDENTIALS, metadata)
fs.gs.project.id                        the project (else GOOGLE_CLOUD_PROJECT)
fs.gs.http.read-timeout                 default 20s, and fs.gs.http.max.retry, default 10:
                                        a call fails after read-timeout x (max.retry + 1)
fs.azure.account.key.<account>.dfs.core.windows.net   an Azure storage account's key
  (or .blob.core.windows.net)           (else AZURE_STORAGE_KEY when AZURE_STORAGE_ACCOUNT
                                        names the account, else Azure's credential chain)
fs.azure.abfs.endpoint                  host[:port] of the storage service (an emulator's,
                                        serving the account at http(s)://host[:port]/account)
fs.azure.always.use.https               default true; false: abfs:// and wasb:// use http
fs.azure.http.read.timeout              default 30s: a call fails after 4x this (the
                                        Azure SDK's try and its 3 retries)
fs.defaultFS                            HDFS: the filesystem of hdfs:///path (no authority)
dfs.nameservices, dfs.ha.namenodes.*,   HDFS high availability: a nameservice's namenodes
dfs.namenode.rpc-address.*              (hdfs://<nameservice>/path)
dfs.client.failover.*                   (random.order, resolve-needed, resolver.useFQDN)
fs.viewfs.mounttable.<name>.link.*      viewfs:// mount points; hdfs-native needs a
fs.viewfs.mounttable.<name>.linkFallback  linkFallback too
dfs.client.use.datanode.hostname        reach datanodes by hostname (default false)
dfs.data.transfer.protection            SASL on the datanodes' data transfer
hadoop.security.authentication          kerberos: from the ticket cache (KRB5CCNAME), or
                                        a delegation token file (HADOOP_TOKEN_FILE_LOCATION)
dfs.client.socket-timeout               default 60s: one HDFS call (a namenode RPC, opening
                                        a file, a ranged read) fails after this
======================================  ==================================================

Times are milliseconds, or a number with ``ms``, ``s``, ``m`` or ``h`` (Hadoop 3.4's
forms). Other ``fs.*`` options (``fs.s3a.impl``, ...) configure Hadoop's own clients and are
accepted and ignored, as ``kafka.*`` options are.

HDFS is read with hdfs-native (``kafkawire[hdfs]``; see ``hdfs.py``), which takes every
``dfs.*``, ``fs.viewfs.*``, ``fs.defaultFS`` and ``hadoop.security.authentication`` option as
Hadoop configuration over ``$HADOOP_CONF_DIR``'s ``core-site.xml`` and ``hdfs-site.xml``; the
keys above are the ones it acts on, any other (``dfs.client.read.shortcircuit``,
``dfs.encryption.key.provider.uri``, ``hadoop.rpc.protection``, ...) is passed and not read.
Spark hands a data source its options in lower case: ``fs.defaultFS``, ``linkFallback``,
``useFQDN`` and a nameservice spelled as in the URI get their capitals back, but a mount
table's link paths stay lower case (give those in ``$HADOOP_CONF_DIR``). Where hdfs-native is
not installed, pyarrow's HadoopFileSystem reads HDFS with libhdfs' own settings (Hadoop's
configuration files on its CLASSPATH, Kerberos from the ticket cache) and takes none of these.

pyarrow's GCS and Azure clients and hdfs-native take no request timeout (a server that
accepts a connection and never answers holds a GCS request 120 s, an Azure or HDFS one for
ever), so a call to GCS or Azure runs in a thread that the reading thread waits for at
most the deadline above; past it the read fails with a TimeoutError naming the file, and the
abandoned call ends when its client does. A call to HDFS is hdfs-native's asynchronous one,
cancelled at its deadline (hdfs.py), with the same TimeoutError.

Secrets are kept out of ``repr`` (an error message or a log line never shows them).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

__all__ = ["RemoteSettings", "remote_settings", "filesystem_for", "call_deadline", "FS_OPTION_PREFIXES",
           "session_hadoop_options", "with_session_defaults"]

# the Hadoop keys a read takes as options: fs.* for every store, and HDFS client keys
_HADOOP_PREFIXES = ("fs.", "dfs.", "hadoop.security.authentication")
FS_OPTION_PREFIXES = _HADOOP_PREFIXES + tuple(f"spark.hadoop.{p}" for p in _HADOOP_PREFIXES)
_S3_SCHEMES = {"s3", "s3a", "s3n"}
_GCS_SCHEMES = {"gs", "gcs"}
_AZURE_SCHEMES = {"abfs", "abfss", "wasb", "wasbs"}
_HDFS_SCHEMES = {"hdfs", "viewfs"}
# The HDFS keys hdfs-native reads; Spark hands a data source its options in lower case, so
# the few that Hadoop spells with capitals get them back (and a nameservice's name the URI's).
_HDFS_KEYS = ("dfs.", "fs.viewfs.", "fs.defaultfs", "hadoop.security.authentication")
_HADOOP_CAPITALS = (("fs.defaultfs", "fs.defaultFS"), (".linkfallback", ".linkFallback"),
                    (".usefqdn", ".useFQDN"))
_ANONYMOUS = "org.apache.hadoop.fs.s3a.anonymousawscredentialsprovider"
_AZURE_KEY_RE = re.compile(r"^fs\.azure\.account\.key\.([a-z0-9]+)\.(?:dfs|blob)\.core\.windows\.net$")
_TIME_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$")
_UNITS = {None: 0.001, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
AZURE_SDK_ATTEMPTS = 4    # the Azure SDK's default: a try and 3 retries (pyarrow cannot set them)


class RemoteOptionError(ValueError):
    """An ``fs.*`` option with a value that cannot be used."""


@dataclass(frozen=True)
class RemoteSettings:
    """What the ``fs.*`` options of one read say; hashable (filesystems are cached by it)."""

    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    role_arn: str | None = None
    anonymous: bool = False
    endpoint: str | None = None          # host[:port]
    scheme: str = "https"
    region: str | None = None
    virtual_addressing: bool = False      # fs.s3a.path.style.access=false with an endpoint
    connect_timeout: float = 30.0
    request_timeout: float = 60.0
    attempts: int = 5
    gcs_endpoint: str | None = None       # host[:port] of fs.gs.storage.root.url
    gcs_scheme: str = "https"
    gcs_anonymous: bool = False
    gcs_project: str | None = None
    gcs_deadline: float = 20.0 * 11       # fs.gs.http.read-timeout x (fs.gs.http.max.retry + 1)
    azure_keys: tuple = field(default=(), repr=False)   # ((account, key), ...)
    azure_endpoint: str | None = None     # host[:port] of fs.azure.abfs.endpoint
    azure_https: bool = True              # fs.azure.always.use.https
    azure_deadline: float = 30.0 * AZURE_SDK_ATTEMPTS
    hdfs_config: tuple = field(default=(), repr=False)   # ((Hadoop key, value), ...) for hdfs-native
    hdfs_deadline: float = 60.0           # dfs.client.socket-timeout


def _seconds(name: str, raw) -> float:
    m = _TIME_RE.match(str(raw).strip().lower())
    if not m or float(m.group(1)) <= 0:
        raise RemoteOptionError(f"option {name}={raw!r}: expected a time above zero, in "
                                f"milliseconds or with a unit (200ms, 30s, 5m)")
    return float(m.group(1)) * _UNITS[m.group(2)]


def _flag(name: str, raw) -> bool:
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise RemoteOptionError(f"option {name}={raw!r}: expected true or false")
    return text == "true"


def _count(name: str, raw, least: int) -> int:
    if not re.fullmatch(r"\s*\d+\s*", raw) or int(raw) < least:
        raise RemoteOptionError(f"option {name}={raw!r}: expected a whole number, at least {least}")
    return int(raw)


def _fs_options(options: dict) -> dict:
    """The ``fs.*`` options, lower-case, without a ``spark.hadoop.`` prefix."""
    out = {}
    for key, value in options.items():
        key = str(key).lower()
        if key.startswith("spark.hadoop.fs."):
            key = key[len("spark.hadoop."):]
        if key.startswith("fs.") and value is not None:
            out[key] = str(value)
    return out


def _endpoint(name: str, raw: str, ssl: bool) -> tuple[str, str]:
    """(host[:port], scheme) of an endpoint option, which Hadoop takes as a host or a URL."""
    m = re.match(r"^(https?)://([^/]+)/?$", raw.strip(), re.IGNORECASE)
    if m:
        return m.group(2), m.group(1).lower()
    if "/" in raw.strip() or not raw.strip():
        raise RemoteOptionError(f"option {name}={raw!r}: expected host[:port] or http(s)://host[:port]")
    return raw.strip(), "https" if ssl else "http"


def _s3_settings(fs: dict) -> dict:
    ssl = _flag("fs.s3a.connection.ssl.enabled", fs.get("fs.s3a.connection.ssl.enabled", "true"))
    endpoint, scheme = (None, "https" if ssl else "http")
    if fs.get("fs.s3a.endpoint"):
        endpoint, scheme = _endpoint("fs.s3a.endpoint", fs["fs.s3a.endpoint"], ssl)
    provider = fs.get("fs.s3a.aws.credentials.provider", "").strip().lower()
    path_style = fs.get("fs.s3a.path.style.access")
    return dict(
        access_key=fs.get("fs.s3a.access.key"), secret_key=fs.get("fs.s3a.secret.key"),
        session_token=fs.get("fs.s3a.session.token"), role_arn=fs.get("fs.s3a.assumed.role.arn"),
        anonymous=_ANONYMOUS in provider.split(","),
        endpoint=endpoint, scheme=scheme, region=fs.get("fs.s3a.endpoint.region"),
        virtual_addressing=path_style is not None and not _flag("fs.s3a.path.style.access", path_style),
        connect_timeout=_seconds("fs.s3a.connection.establish.timeout",
                                 fs.get("fs.s3a.connection.establish.timeout", "30s")),
        request_timeout=_seconds("fs.s3a.connection.timeout", fs.get("fs.s3a.connection.timeout", "60s")),
        attempts=_count("fs.s3a.attempts.maximum", fs.get("fs.s3a.attempts.maximum", "5"), 1))


def _gcs_settings(fs: dict) -> dict:
    """The gcs-connector's options; an emulator named by STORAGE_EMULATOR_HOST (as Google's
    client libraries take it) when fs.gs.storage.root.url is not set."""
    root = fs.get("fs.gs.storage.root.url")
    emulator = os.environ.get("STORAGE_EMULATOR_HOST", "").strip() if root is None else ""
    endpoint, scheme = (None, "https")
    if root is not None or emulator:
        endpoint, scheme = _endpoint("fs.gs.storage.root.url" if root is not None else "STORAGE_EMULATOR_HOST",
                                     root if root is not None else emulator, ssl=not emulator)
        if endpoint == "storage.googleapis.com":
            endpoint = None
    auth = fs.get("fs.gs.auth.type", "").strip().upper()
    read_timeout = _seconds("fs.gs.http.read-timeout", fs.get("fs.gs.http.read-timeout", "20000"))
    retries = _count("fs.gs.http.max.retry", fs.get("fs.gs.http.max.retry", "10"), 0)
    return dict(gcs_endpoint=endpoint, gcs_scheme=scheme, gcs_anonymous=auth == "UNAUTHENTICATED" or bool(emulator),
                gcs_project=fs.get("fs.gs.project.id"), gcs_deadline=read_timeout * (retries + 1))


def _azure_settings(fs: dict) -> dict:
    keys = {m.group(1): v for k, v in fs.items() if (m := _AZURE_KEY_RE.match(k))}
    account, key = os.environ.get("AZURE_STORAGE_ACCOUNT"), os.environ.get("AZURE_STORAGE_KEY")
    if account and key:
        keys.setdefault(account.lower(), key)
    https = _flag("fs.azure.always.use.https", fs.get("fs.azure.always.use.https", "true"))
    endpoint = None
    if fs.get("fs.azure.abfs.endpoint"):
        endpoint, scheme = _endpoint("fs.azure.abfs.endpoint", fs["fs.azure.abfs.endpoint"], https)
        https = scheme == "https"
    read_timeout = _seconds("fs.azure.http.read.timeout", fs.get("fs.azure.http.read.timeout", "30000"))
    return dict(azure_keys=tuple(sorted(keys.items())), azure_endpoint=endpoint, azure_https=https,
                azure_deadline=read_timeout * AZURE_SDK_ATTEMPTS)


def _hdfs_settings(options: dict) -> dict:
    """The HDFS client's Hadoop keys among the options (without ``spark.hadoop.``, with
    Hadoop's capitals), and the deadline of one call: ``dfs.client.socket-timeout``."""
    config = {}
    for key, value in options.items():
        key = str(key)
        if key.lower().startswith("spark.hadoop."):
            key = key[len("spark.hadoop."):]
        lower = key.lower()
        if value is None or not lower.startswith(_HDFS_KEYS):
            continue
        if key == lower:
            for spelled, capitalised in _HADOOP_CAPITALS:
                key = key.replace(spelled, capitalised)
        config[key] = str(value)
    timeout = next((v for k, v in config.items() if k.lower() == "dfs.client.socket-timeout"), "60000")
    return dict(hdfs_config=tuple(sorted(config.items())),
                hdfs_deadline=_seconds("dfs.client.socket-timeout", timeout))


def _hadoop_key(name) -> str | None:
    """The Hadoop key an option names (without ``spark.hadoop.``), None for another option."""
    key = str(name)
    if key.lower().startswith("spark.hadoop."):
        key = key[len("spark.hadoop."):]
    return key if key.lower().startswith(_HADOOP_PREFIXES) else None


def session_hadoop_options(conf: dict) -> dict:
    """The session's ``spark.hadoop.*`` settings that a read takes as options (the ``fs.*``,
    ``dfs.*`` and ``hadoop.security.authentication`` keys above), without the prefix: what
    ``register`` carries with the data source to the planner and the tasks."""
    return {key: str(value) for name, value in conf.items()
            if str(name).lower().startswith("spark.hadoop.") and (key := _hadoop_key(name)) and value is not None}


def with_session_defaults(options, session: dict):
    """The read's options over the session's Hadoop settings: a key the read gives (with or
    without ``spark.hadoop.``, in any case) wins over the session's."""
    if not session:
        return options
    given = {key.lower() for name in options if (key := _hadoop_key(name))}
    merged = {key: value for key, value in session.items() if key.lower() not in given}
    merged.update(options)
    return merged


def remote_settings(options: dict) -> RemoteSettings:
    """The settings the options give (checked: a bad value names its option)."""
    fs = _fs_options(options)
    return RemoteSettings(**_s3_settings(fs), **_gcs_settings(fs), **_azure_settings(fs), **_hdfs_settings(options))


def call_deadline(scheme: str, settings: RemoteSettings) -> float | None:
    """How long one call to ``scheme``'s pyarrow client may take before the read gives up on
    it; None where the client bounds its requests itself (S3). For HDFS, hdfs.py's client
    applies it to each call itself; libhdfs' calls get it from files.py."""
    if scheme in _HDFS_SCHEMES:
        return settings.hdfs_deadline
    if scheme in _GCS_SCHEMES:
        return settings.gcs_deadline
    if scheme in _AZURE_SCHEMES:
        return settings.azure_deadline
    return None


def _s3_region(bucket: str, settings: RemoteSettings) -> str | None:
    if settings.region or settings.endpoint:
        return settings.region
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        return region
    from pyarrow.fs import resolve_s3_region
    try:
        return resolve_s3_region(bucket)
    except OSError:
        return None   # the SDK's default; a wrong one shows in the first request's error


def _s3(bucket: str, settings: RemoteSettings):
    from pyarrow.fs import AwsStandardS3RetryStrategy, S3FileSystem
    return S3FileSystem(
        access_key=settings.access_key, secret_key=settings.secret_key,
        session_token=settings.session_token, role_arn=settings.role_arn,
        anonymous=settings.anonymous, region=_s3_region(bucket, settings),
        endpoint_override=settings.endpoint, scheme=settings.scheme,
        force_virtual_addressing=settings.virtual_addressing,
        connect_timeout=settings.connect_timeout, request_timeout=settings.request_timeout,
        retry_strategy=AwsStandardS3RetryStrategy(max_attempts=settings.attempts))


def _gcs(settings: RemoteSettings):
    from datetime import timedelta

    from pyarrow.fs import GcsFileSystem
    return GcsFileSystem(anonymous=settings.gcs_anonymous, scheme=settings.gcs_scheme,
                         endpoint_override=settings.gcs_endpoint, project_id=settings.gcs_project,
                         retry_time_limit=timedelta(seconds=max(1.0, settings.gcs_deadline)))


def _azure(scheme: str, authority: str, settings: RemoteSettings):
    """``container@account.dfs.core.windows.net`` (or ``.blob.``); with an endpoint the
    service is there, at ``http(s)://endpoint/account`` as Azurite serves it."""
    from pyarrow.fs import AzureFileSystem
    container, _, host = authority.partition("@")
    if not container or not host:
        raise OSError(f"{scheme}://{authority}: expected {scheme}://<container>@<account>.dfs.core.windows.net/<path>")
    account = host.split(".")[0].lower()
    http = "https" if settings.azure_https or scheme in ("abfss", "wasbs") else "http"
    endpoint = {}
    if settings.azure_endpoint:
        endpoint = dict(blob_storage_authority=settings.azure_endpoint,
                        dfs_storage_authority=settings.azure_endpoint)
    return AzureFileSystem(account, account_key=dict(settings.azure_keys).get(account), **endpoint,
                           blob_storage_scheme=http, dfs_storage_scheme=http), container


def _hdfs_config(settings: RemoteSettings, authority: str) -> dict:
    """The Hadoop keys for ``authority``: a nameservice (or mount table) named in a key in
    lower case, as Spark hands options over, is renamed as the URI spells it."""
    host = authority.rpartition("@")[2].partition(":")[0]
    config = {}
    for key, value in settings.hdfs_config:
        if host and host != host.lower():
            parts = key.split(".")
            key = ".".join(host if part == host.lower() else part for part in parts)
        config[key] = value
    return config


def _hdfs(scheme: str, authority: str, settings: RemoteSettings):
    """hdfs-native where it is installed, else pyarrow's HadoopFileSystem (libhdfs): see hdfs.py."""
    from .hdfs import HdfsNativeFileSystem, hdfs_native_installed
    if hdfs_native_installed():
        try:
            return HdfsNativeFileSystem(scheme, authority, _hdfs_config(settings, authority), settings.hdfs_deadline), ""
        except OSError as e:
            raise OSError(f"{scheme}://{authority}: {e}") from None
    import pyarrow.fs as pafs
    try:
        filesystem, root = pafs.FileSystem.from_uri(f"{scheme}://{authority}/")
    except (OSError, ValueError) as e:
        raise OSError(f"{scheme}://{authority}: cannot reach HDFS through pyarrow's HadoopFileSystem "
                      f"(libhdfs), nor through hdfs-native, which is not installed "
                      f"(pip install 'kafkawire[hdfs]'): {e}") from None
    return filesystem, root.rstrip("/")


def filesystem_for(scheme: str, authority: str, settings: RemoteSettings):
    """(pyarrow filesystem, prefix of its paths) for URIs ``scheme://authority/...``."""
    import pyarrow.fs as pafs
    if scheme in _HDFS_SCHEMES:
        return _hdfs(scheme, authority, settings)
    if scheme in _S3_SCHEMES:
        return _s3(authority, settings), authority
    if scheme in _GCS_SCHEMES:
        return _gcs(settings), authority
    if scheme in _AZURE_SCHEMES:
        return _azure(scheme, authority, settings)
    try:
        filesystem, root = pafs.FileSystem.from_uri(f"{scheme}://{authority}/")
    except (OSError, ValueError) as e:
        raise OSError(f"{scheme}://{authority}: cannot reach this filesystem through pyarrow: {e}") from None
    return filesystem, root.rstrip("/")
