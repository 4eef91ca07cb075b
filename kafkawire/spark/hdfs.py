"""HDFS without libhdfs: ``hdfs://`` and ``viewfs://`` read through hdfs-native, a Rust
client that speaks the namenode's and the datanodes' RPC itself (no JVM, no libhdfs, no
Hadoop install), shaped as the small part of a pyarrow filesystem that ``files.py`` uses:
``get_file_info`` (a path, or a FileSelector for a listing) and ``open_input_file`` (a file
with ``size``, ``read_at``, ``close``).

Which client reads HDFS: hdfs-native where it is installed (``pip install
'kafkawire[hdfs]'``), else pyarrow's HadoopFileSystem (libhdfs, a JVM and Hadoop's CLASSPATH
on every machine). One rule, decided by what is installed, not by trying to load libhdfs
(that starts a JVM inside the Python process): hdfs-native is the client tested here end to
end. It bounds no call itself (a namenode that accepts a connection and never answers holds
a call for ever), so each call here is its asynchronous one with ``dfs.client.socket-timeout``
as a deadline, cancelled past it; libhdfs' calls are bounded by ``files._within`` instead.

Hadoop's configuration reaches hdfs-native as Hadoop keys: the read's ``dfs.*``,
``fs.defaultFS``, ``fs.viewfs.mounttable.*`` and ``hadoop.security.authentication``
options (see ``remote_options.py``) over the ``core-site.xml`` and ``hdfs-site.xml`` of
``$HADOOP_CONF_DIR`` (or ``$HADOOP_HOME/etc/hadoop``), which hdfs-native reads itself.
"""
from __future__ import annotations

import asyncio
import errno
import functools

__all__ = ["hdfs_native_installed", "HdfsNativeFileSystem"]

_MESSAGE_LIMIT = 300


@functools.lru_cache(maxsize=1)
def hdfs_native_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("hdfs_native") is not None


def _failure(e: BaseException) -> BaseException:
    """hdfs-native's error as ours: a missing file stays FileNotFoundError (``files.py``
    names the URI), a deadline passed a TimeoutError, anything else an OSError with the
    first line of what the client said (a namenode's error carries its Java stack trace; a
    client bug is a Rust panic, a BaseException)."""
    if isinstance(e, (FileNotFoundError, TimeoutError)):
        return e
    said = (str(e).strip().splitlines() or [type(e).__name__])[0][:_MESSAGE_LIMIT]
    return OSError(f"HDFS: {said}")


def _call(deadline: float, fn, *args):
    """``await fn(*args)`` given up after ``deadline`` seconds. The call is hdfs-native's
    asynchronous one, run in an event loop of its own: given up, it is cancelled (no thread
    is left waiting on a namenode that never answers, as a blocking call would be)."""
    async def bounded():
        async with asyncio.timeout(deadline):
            return await fn(*args)
    try:
        return asyncio.run(bounded())
    except TimeoutError:
        raise TimeoutError(errno.ETIMEDOUT, f"no answer within {deadline:g} s") from None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:   # noqa: BLE001 - pyo3's PanicException is a BaseException
        raise _failure(e) from None


class _File:
    """An open HDFS file; ``read_at`` as pyarrow's (the caller keeps within the size)."""

    __slots__ = ("_reader", "_deadline")

    def __init__(self, reader, deadline: float):
        self._reader, self._deadline = reader, deadline

    def size(self) -> int:
        return len(self._reader)        # known since the open

    def read_at(self, n: int, position: int) -> bytes:
        return _call(self._deadline, self._reader.read_range, position, n)

    def close(self) -> None:
        _call(self._deadline, self._reader.close)


class HdfsNativeFileSystem:
    """One hdfs-native client for ``scheme://authority``; paths are the URI's (``/a/b``).
    Each call is bounded by ``deadline`` here (``bounds_its_calls``: files.py adds no
    thread of its own)."""

    bounds_its_calls = True

    def __init__(self, scheme: str, authority: str, config: dict, deadline: float):
        from hdfs_native import AsyncClient
        # an empty authority (hdfs:///path) is fs.defaultFS's filesystem, as in Hadoop
        url = f"{scheme}://{authority}" if authority else config.get("fs.defaultFS")
        self._deadline = deadline
        try:
            self._client = AsyncClient(url, dict(config))
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:   # noqa: BLE001 - as in _call
            raise _failure(e) from None

    def get_file_info(self, what):
        import pyarrow.fs as pafs
        if isinstance(what, pafs.FileSelector):
            return self._listing(what)
        try:
            status = _call(self._deadline, self._client.get_file_info, what)
        except FileNotFoundError:
            return pafs.FileInfo(what, pafs.FileType.NotFound)
        return _info(what, status)

    def _listing(self, selector) -> list:
        async def listing():
            return [status async for status in self._client.list_status(selector.base_dir, selector.recursive)]
        try:
            statuses = _call(self._deadline, listing)
        except FileNotFoundError:
            if selector.allow_not_found:
                return []
            raise
        base = selector.base_dir.rstrip("/") or "/"
        if len(statuses) == 1 and not statuses[0].isdir and statuses[0].path.rstrip("/") == base:
            return []       # HDFS lists a file as itself; pyarrow's stores list no entries in it
        return [_info(status.path, status) for status in statuses]

    def open_input_file(self, path: str) -> _File:
        return _File(_call(self._deadline, self._client.read, path), self._deadline)


def _info(path: str, status):
    import pyarrow.fs as pafs
    if status.isdir:
        return pafs.FileInfo(path, pafs.FileType.Directory)
    return pafs.FileInfo(path, pafs.FileType.File, size=status.length)
