"""How a read reaches a remote filesystem: the ``fs.*`` options, named as Spark users name
them for Hadoop, and the pyarrow filesystem they build.

Spark jobs set these as Hadoop configuration (``spark.hadoop.fs.s3a.access.key`` in the
session, or as an option of a file source); a Python data source cannot see the session's
Hadoop configuration, so they are given as options of the read, with or without the
``spark.hadoop.`` prefix:

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
fs.azure.account.key.<account>.dfs.core.windows.net   an Azure storage account's key
                                        (else Azure's default credential chain)
======================================  ==================================================

Times are milliseconds, or a number with ``ms``, ``s``, ``m`` or ``h`` (Hadoop 3.4's
forms). Other ``fs.*`` options (``fs.s3a.impl``, ...) configure Hadoop's own clients and are
accepted and ignored, as ``kafka.*`` options are. GCS takes its credentials from Google's
usual chain (GOOGLE_APPLICATION_CREDENTIALS, the metadata server) and gives up retrying a
request after 120 s; HDFS reads with libhdfs' settings (Kerberos from the ticket cache).

Secrets are kept out of ``repr`` (an error message or a log line never shows them).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

__all__ = ["RemoteSettings", "remote_settings", "filesystem_for", "FS_OPTION_PREFIXES"]

FS_OPTION_PREFIXES = ("fs.", "spark.hadoop.fs.")
_S3_SCHEMES = {"s3", "s3a", "s3n"}
_GCS_SCHEMES = {"gs", "gcs"}
_ANONYMOUS = "org.apache.hadoop.fs.s3a.anonymousawscredentialsprovider"
_AZURE_KEY_RE = re.compile(r"^fs\.azure\.account\.key\.([a-z0-9]+)\.(?:dfs|blob)\.core\.windows\.net$")
_TIME_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$")
_UNITS = {None: 0.001, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
GCS_RETRY_SECONDS = 120.0


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
    azure_keys: tuple = field(default=(), repr=False)   # ((account, key), ...)


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


def _endpoint(raw: str, ssl: bool) -> tuple[str, str]:
    """(host[:port], scheme) of fs.s3a.endpoint, which Hadoop takes as a host or a URL."""
    m = re.match(r"^(https?)://([^/]+)/?$", raw.strip(), re.IGNORECASE)
    if m:
        return m.group(2), m.group(1).lower()
    if "/" in raw.strip() or not raw.strip():
        raise RemoteOptionError(f"option fs.s3a.endpoint={raw!r}: expected host[:port] or http(s)://host[:port]")
    return raw.strip(), "https" if ssl else "http"


def remote_settings(options: dict) -> RemoteSettings:
    """The settings the options give (checked: a bad value names its option)."""
    fs = _fs_options(options)
    ssl = _flag("fs.s3a.connection.ssl.enabled", fs.get("fs.s3a.connection.ssl.enabled", "true"))
    endpoint, scheme = (None, "https" if ssl else "http")
    if fs.get("fs.s3a.endpoint"):
        endpoint, scheme = _endpoint(fs["fs.s3a.endpoint"], ssl)
    attempts = fs.get("fs.s3a.attempts.maximum", "5")
    if not re.fullmatch(r"\s*\d+\s*", attempts) or int(attempts) < 1:
        raise RemoteOptionError(f"option fs.s3a.attempts.maximum={attempts!r}: expected a whole number, at least 1")
    provider = fs.get("fs.s3a.aws.credentials.provider", "").strip().lower()
    path_style = fs.get("fs.s3a.path.style.access")
    return RemoteSettings(
        access_key=fs.get("fs.s3a.access.key"), secret_key=fs.get("fs.s3a.secret.key"),
        session_token=fs.get("fs.s3a.session.token"), role_arn=fs.get("fs.s3a.assumed.role.arn"),
        anonymous=_ANONYMOUS in provider.split(","),
        endpoint=endpoint, scheme=scheme, region=fs.get("fs.s3a.endpoint.region"),
        virtual_addressing=path_style is not None and not _flag("fs.s3a.path.style.access", path_style),
        connect_timeout=_seconds("fs.s3a.connection.establish.timeout",
                                 fs.get("fs.s3a.connection.establish.timeout", "30s")),
        request_timeout=_seconds("fs.s3a.connection.timeout", fs.get("fs.s3a.connection.timeout", "60s")),
        attempts=int(attempts),
        azure_keys=tuple(sorted((m.group(1), v) for k, v in fs.items() if (m := _AZURE_KEY_RE.match(k)))),
    )


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


def filesystem_for(scheme: str, authority: str, settings: RemoteSettings):
    """(pyarrow filesystem, prefix of its paths) for URIs ``scheme://authority/...``."""
    import pyarrow.fs as pafs
    if scheme in _S3_SCHEMES:
        return _s3(authority, settings), authority
    if scheme in _GCS_SCHEMES:
        from datetime import timedelta
        return pafs.GcsFileSystem(retry_time_limit=timedelta(seconds=GCS_RETRY_SECONDS)), authority
    if scheme in ("abfs", "abfss"):
        container, _, host = authority.partition("@")
        account = host.split(".")[0]
        key = dict(settings.azure_keys).get(account)
        if key is not None:
            return pafs.AzureFileSystem(account, account_key=key), container
    try:
        filesystem, root = pafs.FileSystem.from_uri(f"{scheme}://{authority}/")
    except (OSError, ValueError) as e:
        raise OSError(f"{scheme}://{authority}: cannot reach this filesystem through pyarrow: {e}") from None
    return filesystem, root.rstrip("/")
