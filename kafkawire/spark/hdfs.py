"""HDFS without libhdfs: ``hdfs://`` and ``viewfs://`` read through hdfs-native, a Rust
client that speaks the namenode's and the datanodes' RPC itself (no JVM, no libhdfs, no
Hadoop install), shaped as the small part of a pyarrow filesystem that ``files.py`` uses:
``get_file_info`` (a path, or a FileSelector for a listing) and ``open_input_file`` (a file
with ``size``, ``read_at``, ``close``).

Which client reads HDFS: hdfs-native where it is installed (``pip install
'kafkawire[hdfs]'``), else pyarrow's HadoopFileSystem (libhdfs, a JVM and Hadoop's CLASSPATH
on every machine). One rule, decided by what is installed, not by trying to load libhdfs
(that starts a JVM inside the Python process): hdfs-native is the client tested here end to
end, and its every call is bounded by the reader (``files._within``), like libhdfs'.

Hadoop's configuration reaches hdfs-native as Hadoop keys: the read's ``dfs.*``,
``fs.defaultFS``, ``fs.viewfs.mounttable.*`` and ``hadoop.security.authentication``
options (see ``remote_options.py``) over the ``core-site.xml`` and ``hdfs-site.xml`` of
``$HADOOP_CONF_DIR`` (or ``$HADOOP_HOME/etc/hadoop``), which hdfs-native reads itself.
"""
from __future__ import annotations

import functools

__all__ = ["hdfs_native_installed", "HdfsNativeFileSystem"]

_MESSAGE_LIMIT = 300


@functools.lru_cache(maxsize=1)
def hdfs_native_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("hdfs_native") is not None


def _failure(e: BaseException) -> BaseException:
    """hdfs-native's error as ours: a missing file stays FileNotFoundError (``files.py``
    names the URI), anything else an OSError with the first line of what the client said
    (a namenode's error carries its Java stack trace; a client bug is a Rust panic, a
    BaseException)."""
    if isinstance(e, FileNotFoundError):
        return e
    said = (str(e).strip().splitlines() or [type(e).__name__])[0][:_MESSAGE_LIMIT]
    return OSError(f"HDFS: {said}")


def _call(fn, *args):
    try:
        return fn(*args)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:   # noqa: BLE001 - pyo3's PanicException is a BaseException
        raise _failure(e) from None


class _File:
    """An open HDFS file; ``read_at`` as pyarrow's (the caller keeps within the size)."""

    __slots__ = ("_reader",)

    def __init__(self, reader):
        self._reader = reader

    def size(self) -> int:
        return _call(len, self._reader)

    def read_at(self, n: int, position: int) -> bytes:
        return _call(self._reader.read_range, position, n)

    def close(self) -> None:
        _call(self._reader.close)


class HdfsNativeFileSystem:
    """One hdfs-native client for ``scheme://authority``; paths are the URI's (``/a/b``)."""

    def __init__(self, scheme: str, authority: str, config: dict):
        from hdfs_native import Client
        # an empty authority (hdfs:///path) is fs.defaultFS's filesystem, as in Hadoop
        url = f"{scheme}://{authority}" if authority else config.get("fs.defaultFS")
        self._client = _call(Client, url, dict(config))

    def get_file_info(self, what):
        import pyarrow.fs as pafs
        if isinstance(what, pafs.FileSelector):
            return self._listing(what)
        try:
            status = _call(self._client.get_file_info, what)
        except FileNotFoundError:
            return pafs.FileInfo(what, pafs.FileType.NotFound)
        return _info(what, status)

    def _listing(self, selector) -> list:
        try:
            statuses = _call(lambda: list(self._client.list_status(selector.base_dir, selector.recursive)))
        except FileNotFoundError:
            if selector.allow_not_found:
                return []
            raise
        base = selector.base_dir.rstrip("/") or "/"
        if len(statuses) == 1 and not statuses[0].isdir and statuses[0].path.rstrip("/") == base:
            return []       # HDFS lists a file as itself; pyarrow's stores list no entries in it
        return [_info(status.path, status) for status in statuses]

    def open_input_file(self, path: str) -> _File:
        return _File(_call(self._client.read, path))


def _info(path: str, status):
    import pyarrow.fs as pafs
    if status.isdir:
        return pafs.FileInfo(path, pafs.FileType.Directory)
    return pafs.FileInfo(path, pafs.FileType.File, size=status.length)
