"""What a path names on disk: topic-partition directories, their segments, snapshots.

Kafka's log directory holds one directory per topic-partition, named ``<topic>-<partition>``
(Kafka's ``UnifiedLog.parseTopicPartitionName``); inside, segments are ``%020d.log`` named by
their base offset, next to ``.index`` and ``.timeindex``. KRaft snapshots are
``%020d-%010d.checkpoint`` (end offset, epoch) in ``__cluster_metadata-0``, plus
``bootstrap.checkpoint`` in the log directory.

A path given to the reader (or each of several, or each match of a glob pattern) is one of:

* a topic-partition directory: its segments (a retired one too, when named itself);
* a log directory: every topic-partition directory in it (directories of partitions Kafka
  is deleting, moving or has found stray, ``<topic>-<partition>.<id>-delete|-future|-stray``,
  are not live data and are left out, as a broker leaves them out of its logs);
* one ``.log`` segment: just that segment;
* a snapshot (``.checkpoint``): its records.

Paths may be local or remote (``s3a://bucket/kafka-logs``, see files.py): a directory is
listed once, with its files' sizes. Nothing here writes: Kafka's files are read as they are
(no index trimming, no recovery).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from kafkawire.storage.reader import parse_retired_dir_name

from .files import LOCAL, Files

__all__ = ["LayoutError", "Segment", "PartitionLog", "SnapshotFile", "Layout", "discover",
           "parse_partition_dir_name", "list_segments", "METADATA_TOPIC"]

METADATA_TOPIC = "__cluster_metadata"
_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
_PARTITION_RE = re.compile(r"^(.+)-(\d+)$")
_SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_BOOTSTRAP = "bootstrap.checkpoint"
_INT32_MAX = 0x7FFFFFFF


class LayoutError(ValueError):
    """A path that does not name Kafka log data, with the path and the reason."""


@dataclass(frozen=True)
class Segment:
    base_offset: int
    path: str
    size: int          # bytes when the layout was read; a live segment may have grown since


@dataclass(frozen=True)
class PartitionLog:
    """One topic-partition directory; ``only_base`` restricts it to one segment."""

    path: str
    topic: str
    partition: int
    only_base: int | None = None
    files: Files = field(default=LOCAL, compare=False)

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    def segments(self) -> list[Segment]:
        segments = list_segments(self.path, self.files)
        if self.only_base is not None:
            segments = [s for s in segments if s.base_offset == self.only_base]
        return segments


@dataclass(frozen=True)
class SnapshotFile:
    path: str
    topic: str
    partition: int

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition


@dataclass(frozen=True)
class Layout:
    partitions: tuple[PartitionLog, ...]
    snapshots: tuple[SnapshotFile, ...]


def parse_partition_dir_name(name: str, *, retired: bool = False) -> tuple[str, int] | None:
    """``orders-3`` -> ("orders", 3); None when the name is not ``<topic>-<partition>``.
    ``retired`` also reads ``orders-3.<id>-delete`` (-future, -stray) as orders-3."""
    found = parse_retired_dir_name(name)       # kafkawire.storage's reading of retired names
    if found is not None:
        if not retired:
            return None
        topic, partition, _ = found
    else:
        m = _PARTITION_RE.match(name)
        if not m:
            return None
        topic, partition = m.group(1), int(m.group(2))
    if partition > _INT32_MAX:
        return None
    return topic, partition


def list_segments(directory: str, files: Files = LOCAL) -> list[Segment]:
    """The ``%020d.log`` segments of a partition directory, by base offset (a segment
    deleted by retention while the directory is listed is left out)."""
    entries = files.listdir(directory)
    if entries is None:
        return []   # a partition deleted while we look: no segments
    out = []
    for e in entries:
        m = _SEGMENT_RE.match(e.name)
        if m and not e.is_dir:
            out.append(Segment(int(m.group(1)), files.join(directory, e.name), e.size))
    out.sort(key=lambda s: s.base_offset)
    return out


def _partition_of(directory: str, what: str) -> tuple[str, int]:
    # Named explicitly, a retired directory is read too: the user asked for it.
    name = Files.basename(directory)
    parsed = parse_partition_dir_name(name, retired=True)
    if parsed is None:
        raise LayoutError(f"{what}: directory name {name!r} is not <topic>-<partition>, so the "
                          f"topic and partition of its records are unknown")
    return parsed


def _snapshot(path: str) -> SnapshotFile:
    # Snapshots only exist for the metadata log. bootstrap.checkpoint sits in the log dir
    # root, whose name says nothing of its records even when it reads as <topic>-<partition>
    # (kafka-logs-1): it is always __cluster_metadata-0's.
    if Files.basename(path) == _BOOTSTRAP:
        return SnapshotFile(path, METADATA_TOPIC, 0)
    parent = Files.basename(Files.dirname(path))
    parsed = parse_partition_dir_name(parent)
    topic, partition = parsed if parsed else (METADATA_TOPIC, 0)
    return SnapshotFile(path, topic, partition)


def _child_partitions(path: str, entries, files: Files) -> list[PartitionLog]:
    out = []
    for e in entries:
        parsed = parse_partition_dir_name(e.name)
        if parsed and e.is_dir:
            out.append(PartitionLog(files.join(path, e.name), *parsed, files=files))
    out.sort(key=lambda p: p.key)
    return out


def _has_magic(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def discover(paths, *, allow_empty: bool = False, files: Files = LOCAL) -> Layout:
    """What ``paths`` hold, together (one path or several; glob patterns such as
    ``/data/*/__cluster_metadata-0`` expand to what they match)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    partitions, snapshots = {}, {}
    for pattern in paths:
        pattern = os.fspath(pattern)
        try:
            matches = files.glob(pattern) if _has_magic(pattern) else [pattern]
        except ValueError as e:
            raise LayoutError(str(e)) from None
        if not matches and not allow_empty:
            raise LayoutError(f"{pattern}: matches no file or directory")
        for path in matches:
            layout = _discover_one(path, allow_empty=allow_empty, files=files)
            for p in layout.partitions:
                partitions.setdefault((p.path, p.only_base), p)
            for s in layout.snapshots:
                snapshots.setdefault(s.path, s)
    return Layout(tuple(sorted(partitions.values(), key=lambda p: (p.key, p.path))),
                  tuple(sorted(snapshots.values(), key=lambda s: (s.key, s.path))))


def _discover_one(path: str, *, allow_empty: bool, files: Files) -> Layout:
    path = files.normalize(os.fspath(path))
    kind = files.kind(path)
    if kind is None:
        raise LayoutError(f"{path}: no such file or directory")
    if kind == "file":
        name = Files.basename(path)
        m = _SEGMENT_RE.match(name)
        if m:
            directory = Files.dirname(path)
            topic, partition = _partition_of(directory, f"segment {path}")
            return Layout((PartitionLog(directory, topic, partition, int(m.group(1)), files),), ())
        if _SNAPSHOT_RE.match(name) or name == _BOOTSTRAP:
            return Layout((), (_snapshot(path),))
        raise LayoutError(f"{path}: not a log segment (<20 digits>.log) or a KRaft snapshot "
                          f"(<20 digits>-<10 digits>.checkpoint, bootstrap.checkpoint)")
    # Segments make a partition directory. A log directory's own name may look like one
    # (kafka-logs-1), so without segments its <topic>-<partition> children decide.
    entries = files.listdir(path) or []
    has_segments = any(_SEGMENT_RE.match(e.name) for e in entries)
    children = [] if has_segments else _child_partitions(path, entries, files)
    if has_segments or (not children and parse_partition_dir_name(Files.basename(path))):
        topic, partition = _partition_of(path, f"partition directory {path}")
        return Layout((PartitionLog(path, topic, partition, files=files),), ())
    if not children and not allow_empty:
        raise LayoutError(f"{path}: no <topic>-<partition> directories or log segments in it "
                          f"(a log directory, a partition directory, a segment or a snapshot "
                          f"file is expected)")
    return Layout(tuple(children), ())
