"""Where a read's files are: the local disk, or a remote filesystem through pyarrow.

A path is either local (``/data/kafka-logs``, ``file:///data/kafka-logs``, Hadoop's
``file:/data/kafka-logs``), read with ``os`` calls exactly as before (``pread`` in whole
batches: routing local files through another layer would only cost time), or a URI of a
remote filesystem, read through pyarrow's filesystems (or, for HDFS, a client shaped as one):

=========================  ==============================================================
``s3://`` ``s3a://``       S3 and S3-compatible stores (pyarrow's S3FileSystem)
``s3n://``
``gs://`` ``gcs://``       Google Cloud Storage (GcsFileSystem)
``abfs://`` ``abfss://``   Azure Data Lake / Blob storage (AzureFileSystem),
``wasb://`` ``wasbs://``   ``abfs[s]://<container>@<account>.dfs.core.windows.net/<path>``
``hdfs://`` ``viewfs://``  HDFS: hdfs-native (``kafkawire[hdfs]``, no JVM, no libhdfs;
                           ``hdfs.py``) where installed, else pyarrow's HadoopFileSystem
                           (libhdfs, a JVM and Hadoop's CLASSPATH on every machine)
=========================  ==============================================================

Remote paths stay URIs all the way to the tasks, so an error names the file as the user
would (``s3a://bucket/logs/orders-0/00000000000000000000.log``). Nothing is read whole
but index files (bounded by Kafka's ``segment.index.bytes``): segments are read in byte
ranges (a ranged GET per chunk of whole batches), directories are listed once each, and a
missing file is the same ``FileNotFoundError`` a local read raises, naming the path.

How a remote filesystem is reached (credentials, endpoint, timeouts, retries) comes from
the read's options, named as Spark users name them for Hadoop (``fs.s3a.*``, ``dfs.*``),
over the session's ``spark.hadoop.*`` settings captured by ``register``; see
``remote_options.py``. Every call to a client that bounds no request itself (GCS's, Azure's,
HDFS's) is given up after the read's deadline for it, with a TimeoutError naming the file. A :class:`Files` holds those settings, is small and picklable, and
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
import threading
from dataclasses import dataclass

from .remote_options import RemoteSettings, call_deadline, filesystem_for

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


def _remote_call(path: str, doing: str, fn, *args, deadline: float | None = None):
    """``fn(*args)``, with pyarrow's errors turned into ours, naming the URI: a missing
    file is FileNotFoundError as locally, anything else an OSError saying what failed; a
    call still running after ``deadline`` seconds a TimeoutError."""
    try:
        return fn(*args) if deadline is None else _within(deadline, fn, *args)
    except FileNotFoundError:
        raise _not_found(path) from None
    except TimeoutError as e:
        raise TimeoutError(errno.ETIMEDOUT, f"{doing} {path}: {e.strerror or e}") from None
    except OSError as e:
        raise OSError(f"{doing} {path}: {e}") from None


def _within(deadline: float, fn, *args):
    """``fn(*args)`` in a thread waited for at most ``deadline`` seconds: pyarrow's GCS and
    Azure clients take no request timeout, and a blocked native call cannot be interrupted,
    only abandoned (it ends when its client gives up, or when its connection closes)."""
    outcome: list = []
    done = threading.Event()

    def run():
        try:
            outcome.append((True, fn(*args)))
        except BaseException as e:   # noqa: BLE001 - handed to the waiting thread
            outcome.append((False, e))
        finally:
            done.set()

    threading.Thread(target=run, name="kafkawire-remote-call", daemon=True).start()
    if not done.wait(deadline):
        raise TimeoutError(errno.ETIMEDOUT, f"no answer within {deadline:g} s")
    ok, value = outcome[0]
    if ok:
        return value
    raise value


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

    __slots__ = ("path", "_file", "_size", "_deadline", "_abandoned")

    def __init__(self, path: str, filesystem, fs_path: str, deadline: float | None):
        self.path, self._deadline, self._abandoned = path, deadline, False
        self._file = _remote_call(path, "opening", filesystem.open_input_file, fs_path, deadline=deadline)
        self._size = self._call("reading the size of", self._file.size)

    def _call(self, doing: str, fn, *args):
        try:
            return _remote_call(self.path, doing, fn, *args, deadline=self._deadline)
        except TimeoutError:
            self._abandoned = True      # its thread may still use the file
            raise

    def pread(self, n: int, position: int) -> bytes:
        n = min(n, self._size - position)
        if n <= 0:
            return b""
        return self._call(f"reading {n} bytes at byte {position} of", self._file.read_at, n, position)

    def size(self) -> int:
        return self._size

    def close(self) -> None:
        if not self._abandoned:     # else the abandoned call still uses it: it closes when freed
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
        """(pyarrow filesystem, its path for ``path``, the deadline of a call to it)."""
        m = _URI_RE.match(path)
        scheme = m.group(1).lower()
        filesystem, prefix = _filesystem(scheme, m.group(2), self.remote)
        # a client that bounds each call itself (hdfs.py's) needs no waiting thread around it
        deadline = None if getattr(filesystem, "bounds_its_calls", False) else call_deadline(scheme, self.remote)
        return filesystem, (prefix + (m.group(3) or "").rstrip("/")) or "/", deadline

    def _info(self, path: str):
        filesystem, fs_path, deadline = self._remote(path)
        return _remote_call(path, "looking up", filesystem.get_file_info, fs_path, deadline=deadline)

    # -- questions --

    def kind(self, path: str) -> str | None:
        """"file", "dir" or None (nothing there)."""
        local = local_path(path)
        if local is not None:
            return "dir" if os.path.isdir(local) else "file" if os.path.exists(local) else None
        from pyarrow.fs import FileType
        info = self._info(path)
        return {FileType.File: "file", FileType.Directory: "dir"}.get(info.type)

    def size(self, path: str) -> int:
        local = local_path(path)
        if local is not None:
            return os.path.getsize(local)
        info = self._info(path)
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
        filesystem, fs_path, deadline = self._remote(path)
        # pyarrow lists GCS with a delimiter but keeps only objects, so a directory that is
        # only a prefix of deeper objects (as gcloud and gsutil upload them: no marker
        # objects) would be missing: everything below is listed, and read as entries
        flat = isinstance(filesystem, getattr(pafs, "GcsFileSystem", ()))
        selector = pafs.FileSelector(fs_path, allow_not_found=True, recursive=flat)
        infos = _remote_call(path, "listing", filesystem.get_file_info, selector, deadline=deadline)
        if not infos and self.kind(path) != "dir":
            return None
        if flat:
            return _entries_below(fs_path, infos)
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


def _entries_below(fs_path: str, infos) -> list[Entry]:
    """The entries directly in ``fs_path``, from a listing of everything below it: its
    files, and a directory for each first path part of a deeper object."""
    from pyarrow.fs import FileType
    base = fs_path.rstrip("/") + "/"
    entries: dict[str, Entry] = {}
    for info in infos:
        name, deeper, _ = info.path[len(base):].partition("/")
        if deeper or info.type == FileType.Directory:
            entries[name] = Entry(name, True, 0)
        elif name:
            entries.setdefault(name, Entry(name, False, info.size or 0))
    return list(entries.values())


@functools.lru_cache(maxsize=32)
def _filesystem(scheme: str, authority: str, settings: RemoteSettings):
    """One pyarrow filesystem per (scheme, bucket or host, settings) in a process, reused
    by every task it runs; and the prefix that turns a URI's path into the filesystem's."""
    return filesystem_for(scheme, authority, settings)
