"""Where a read's files are: the local disk, or a remote filesystem through pyarrow.

A path is either local (``/data/kafka-logs``, ``file:///data/kafka-logs``, Hadoop's
``file:/data/kafka-logs``), read with ``os`` calls exactly as before (``pread`` in whole
batches: routing local files through another layer would only cost time), or a URI of a
remote filesystem, read through pyarrow's filesystems:

=========================  ==============================================================
``s3://`` ``s3a://``       S3 and S3-compatible stores (pyarrow's S3FileSystem)
``s3n://``
``gs://`` ``gcs://``       Google Cloud Storage (GcsFileSystem)
``abfs://`` ``abfss://``   Azure Data Lake / Blob storage (AzureFileSystem),
                           ``abfs[s]://<container>@<account>.dfs.core.windows.net/<path>``
``hdfs://`` ``viewfs://``  HDFS (HadoopFileSystem: needs libhdfs, a JVM and Hadoop's
                           CLASSPATH on every machine, as pyarrow documents)
=========================  ==============================================================

Remote paths stay URIs all the way to the tasks, so an error names the file as the user
would (``s3a://bucket/logs/orders-0/00000000000000000000.log``). Nothing is read whole
but index files (bounded by Kafka's ``segment.index.bytes``): segments are read in byte
ranges (a ranged GET per chunk of whole batches), directories are listed once each, and a
missing file is the same ``FileNotFoundError`` a local read raises, naming the path.

How a remote filesystem is reached (credentials, endpoint, timeouts, retries) comes from
the read's options, named as Spark users name them for Hadoop (``fs.s3a.*``); see
``remote_options.py``. A :class:`Files` holds those settings, is small and picklable, and
travels with each task to the executors; each worker process builds one pyarrow
filesystem per (scheme, bucket, settings) and reuses it.
"""
from __future__ import annotations

import errno
import fnmatch
import functools
import glob
import os
import posixpath
import re
from dataclasses import dataclass

from .remote_options import RemoteSettings, filesystem_for

__all__ = ["Files", "LOCAL", "is_remote", "local_path"]

_URI_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://([^/]*)(/.*)?$")
_FILE_RE = re.compile(r"^file:(//[^/]*)?(/.*)$")


def local_path(path: str) -> str | None:
    """The local path a ``file:`` URI (or a plain path) names; None for a remote URI."""
    m = _FILE_RE.match(path)
    if m:
        return m.group(2)
    return None if _URI_RE.match(path) else path


def is_remote(path: str) -> bool:
    return local_path(path) is None


def _not_found(path: str) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)


def _remote_call(path: str, doing: str, fn, *args):
    """``fn(*args)``, with pyarrow's errors turned into ours, naming the URI: a missing
    file is FileNotFoundError as locally, anything else an OSError saying what failed."""
    try:
        return fn(*args)
    except FileNotFoundError:
        raise _not_found(path) from None
    except OSError as e:
        raise OSError(f"{doing} {path}: {e}") from None


class _LocalFile:
    __slots__ = ("fd",)

    def __init__(self, path: str):
        self.fd = os.open(path, os.O_RDONLY)

    def pread(self, n: int, position: int) -> bytes:
        return os.pread(self.fd, n, position)

    def size(self) -> int:
        return os.fstat(self.fd).st_size

    def close(self) -> None:
        os.close(self.fd)


class _RemoteFile:
    """A remote file read in byte ranges; ``pread`` answers as ``os.pread`` does (short at
    the end of the file, empty past it), which pyarrow's read_at does not."""

    __slots__ = ("path", "_file", "_size")

    def __init__(self, path: str, filesystem, fs_path: str):
        self.path = path
        self._file = _remote_call(path, "opening", filesystem.open_input_file, fs_path)
        self._size = _remote_call(path, "reading the size of", self._file.size)

    def pread(self, n: int, position: int) -> bytes:
        n = min(n, self._size - position)
        if n <= 0:
            return b""
        return _remote_call(self.path, f"reading {n} bytes at byte {position} of", self._file.read_at, n, position)

    def size(self) -> int:
        return self._size

    def close(self) -> None:
        self._file.close()


@dataclass(frozen=True)
class Entry:
    """A directory entry: its name, whether it is a directory, its size (files)."""

    name: str
    is_dir: bool
    size: int


@dataclass(frozen=True)
class Files:
    """File access for one read: local paths through ``os``, URIs through pyarrow with
    ``remote``'s settings."""

    remote: RemoteSettings = RemoteSettings()

    # -- paths --

    @staticmethod
    def normalize(path: str) -> str:
        """An absolute local path, or the URI without trailing slashes."""
        local = local_path(path)
        if local is not None:
            return os.path.abspath(local)
        m = _URI_RE.match(path)
        return f"{m.group(1)}://{m.group(2)}{(m.group(3) or '').rstrip('/')}"

    @staticmethod
    def join(directory: str, name: str) -> str:
        return os.path.join(directory, name) if not is_remote(directory) else f"{directory.rstrip('/')}/{name}"

    @staticmethod
    def basename(path: str) -> str:
        return os.path.basename(path.rstrip("/") if is_remote(path) else os.path.normpath(path))

    @staticmethod
    def dirname(path: str) -> str:
        return posixpath.dirname(path.rstrip("/")) if is_remote(path) else os.path.dirname(path)

    def _remote(self, path: str):
        m = _URI_RE.match(path)
        filesystem, prefix = _filesystem(m.group(1).lower(), m.group(2), self.remote)
        return filesystem, (prefix + (m.group(3) or "").rstrip("/")) or "/"

    # -- questions --

    def kind(self, path: str) -> str | None:
        """"file", "dir" or None (nothing there)."""
        local = local_path(path)
        if local is not None:
            return "dir" if os.path.isdir(local) else "file" if os.path.exists(local) else None
        from pyarrow.fs import FileType
        filesystem, fs_path = self._remote(path)
        info = _remote_call(path, "looking up", filesystem.get_file_info, fs_path)
        return {FileType.File: "file", FileType.Directory: "dir"}.get(info.type)

    def size(self, path: str) -> int:
        local = local_path(path)
        if local is not None:
            return os.path.getsize(local)
        filesystem, fs_path = self._remote(path)
        info = _remote_call(path, "looking up", filesystem.get_file_info, fs_path)
        if info.size is None:
            raise _not_found(path)
        return info.size

    def listdir(self, path: str) -> list[Entry] | None:
        """The entries of a directory (one LIST remotely), None when it does not exist."""
        local = local_path(path)
        if local is None:
            return self._list_remote(path)
        out = []
        try:
            with os.scandir(local) as it:
                for e in it:
                    try:
                        is_dir = e.is_dir()
                        out.append(Entry(e.name, is_dir, 0 if is_dir else e.stat().st_size))
                    except FileNotFoundError:
                        continue   # deleted (retention) between listing and stat
        except (FileNotFoundError, NotADirectoryError):
            return None
        return out

    def _list_remote(self, path: str) -> list[Entry] | None:
        import pyarrow.fs as pafs
        filesystem, fs_path = self._remote(path)
        selector = pafs.FileSelector(fs_path, allow_not_found=True, recursive=False)
        infos = _remote_call(path, "listing", filesystem.get_file_info, selector)
        if not infos and self.kind(path) != "dir":
            return None
        return [Entry(i.base_name, i.type == pafs.FileType.Directory, i.size or 0) for i in infos]

    # -- reading --

    def open(self, path: str):
        """A file to ``pread``/``size``/``close``; FileNotFoundError names a missing one."""
        local = local_path(path)
        if local is not None:
            return _LocalFile(local)
        return _RemoteFile(path, *self._remote(path))

    def read_small(self, path: str) -> bytes | None:
        """A whole small file (an index), None when it does not exist."""
        try:
            f = self.open(path)
        except FileNotFoundError:
            return None
        try:
            size = f.size()
            return f.pread(size, 0) if size else b""
        finally:
            f.close()

    def glob(self, pattern: str) -> list[str]:
        """What a glob pattern matches (``*``, ``?``, ``[...]`` in any path component;
        ``**`` only locally: Hadoop's globs, which Spark users know, have no ``**`` either)."""
        local = local_path(pattern)
        if local is not None:
            return sorted(glob.glob(local, recursive=True))
        if "**" in pattern:
            raise ValueError(f"{pattern}: ** is not supported in remote paths (each * matches "
                             f"within one directory level, as in Hadoop's globs)")
        m = _URI_RE.match(pattern)
        matches = [f"{m.group(1)}://{m.group(2)}"]
        for part in (m.group(3) or "").split("/"):
            if not part:
                continue
            if not glob.has_magic(part):
                matches = [self.join(d, part) for d in matches]
                continue
            found = []
            for d in matches:
                entries = self.listdir(d) or []
                found += [self.join(d, e.name) for e in entries if fnmatch.fnmatchcase(e.name, part)]
            matches = found
        return sorted(p for p in matches if self.kind(p) is not None)


LOCAL = Files()


@functools.lru_cache(maxsize=32)
def _filesystem(scheme: str, authority: str, settings: RemoteSettings):
    """One pyarrow filesystem per (scheme, bucket or host, settings) in a process, reused
    by every task it runs; and the prefix that turns a URI's path into the filesystem's."""
    return filesystem_for(scheme, authority, settings)
