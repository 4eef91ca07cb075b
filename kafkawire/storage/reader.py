"""Read-only access to Kafka's log directories: segments, indexes, KRaft snapshots, checkpoints.

Everything here only reads. Files are opened ``"rb"``; nothing is created, renamed, truncated,
locked or recovered; no index is trimmed or rebuilt. So a reader is safe on the log directory
of a running broker, and works on a read-only copy. (``kafkawire.storage.Log`` is the opposite:
the owner's writer, which recovers and truncates on open.)

A live broker appends while we read. A segment is read up to the size it had when it was
opened; a last batch that is torn (the file ends inside it) or still being written (its CRC
does not match yet, or its bytes are zeros of a preallocated file) is not an error but the end:
it is reported in ``SegmentFile.tail``. Anything wrong before the last entry of the active
(last) segment, or anywhere in a closed segment (its owner finished it before starting the
next), is corruption and raises CorruptRecordError. A segment that disappears between the listing and
its reading (retention deleted it) is skipped and named in ``PartitionReader.vanished``.

``upto`` says where a partition's reading stops: ``"end"`` (every complete batch),
``"high_watermark"`` (the offset in ``replication-offset-checkpoint`` of the log directory,
which a broker writes every ``replica.high.watermark.checkpoint.interval.ms``, 5 s by default:
only records every replica had, and only those, at that moment), or an offset. Batches are
whole: a batch is read only if all its offsets are below the stop offset.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from kafkawire.records import CorruptRecordError, iter_batches
from kafkawire.records.layout import LOG_OVERHEAD

from .index import OffsetIndex, TimeIndex
from .snapshot import SnapshotId, SnapshotReader, list_snapshots, snapshot_file_name
from .state_files import (EpochEntry, MetaProperties, read_leader_epoch_checkpoint,
                          read_meta_properties, read_offset_checkpoint, read_partition_metadata)

__all__ = ["read_log_directory", "read_segment", "LogDirectoryReader", "PartitionReader", "SegmentFile",
           "SegmentTail", "UPTO_END", "UPTO_HIGH_WATERMARK", "parse_partition_dir_name", "parse_retired_dir_name"]

UPTO_END = "end"
UPTO_HIGH_WATERMARK = "high_watermark"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"
_CHUNK = 1 << 20                # bytes read at a time; a bigger batch is read whole
_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
_PARTITION_RE = re.compile(r"^(.+)-(\d+)$")
# <topic>-<partition>.<32 hex uuid>-delete / -future / -stray: a partition Kafka is deleting, moving
# or found stray (LocalLog.DeleteDirSuffix, FutureDirSuffix, StrayDirSuffix); not live data
_RETIRED_RE = re.compile(r"^(.+)-(\d+)\.[0-9a-f]{32}-(delete|future|stray)$")


@dataclass(frozen=True)
class SegmentTail:
    """Where and why reading a segment stopped before the end of its file: the last batch is
    torn or still being written. ``position`` is where that batch starts, ``available`` how many
    of its bytes were there."""
    position: int
    available: int
    reason: str


class SegmentFile:
    """One ``.log`` file (or any file of batches back to back), read-only and lazily.

    ``entries()`` / ``batches()`` / ``records()`` read the file again each time they are called,
    up to its size at that moment. After a reading, ``tail`` says whether it stopped at a torn
    or in-progress last batch (None when the file ended on a batch boundary) and
    ``end_position`` where the last whole batch ends.
    """

    def __init__(self, path, *, verify_crc: bool = True, last: bool = True):
        self.path = os.fspath(path)
        self.last = last        # the active segment, whose last entry may be in progress
        match = _SEGMENT_RE.match(os.path.basename(self.path))
        self.base_offset: int | None = int(match.group(1)) if match else None
        self.verify_crc = verify_crc
        self.tail: SegmentTail | None = None
        self.end_position = 0

    def __repr__(self):
        return f"SegmentFile({self.path!r})"

    def entries(self) -> Iterator[tuple[int, object]]:
        """``(file position, batch)`` for every whole batch (RecordBatch, or LegacyRecordBatch for
        magic 0/1). Raises CorruptRecordError (with the file position) for a bad batch that is not
        the file's last entry, FileNotFoundError if the file is gone."""
        self.tail, self.end_position = None, 0
        with open(self.path, "rb") as f:
            limit = os.fstat(f.fileno()).st_size
            pos, needed = 0, 0
            while pos < limit:
                f.seek(pos)
                asked = min(max(_CHUNK, needed), limit - pos)
                window = f.read(asked)
                if len(window) < asked:             # the owner truncated the file meanwhile
                    limit = pos + len(window)
                batches = iter_batches(window, verify_crc=self.verify_crc, file=self.path)
                try:
                    for batch in batches:
                        self.end_position = pos + batch.end_position
                        yield pos + batch.position, batch
                except CorruptRecordError as exc:
                    self._corrupt_entry(f, pos, pos + batches.position, limit, exc)
                    return
                if batches.tail is None:
                    pos += batches.position
                    continue
                if pos + len(window) >= limit:
                    self._torn_tail(pos + batches.tail.position, batches.tail)
                    return
                pos, needed = pos + batches.tail.position, batches.tail.needed

    def _torn_tail(self, position: int, tail) -> None:
        """The file ends inside a batch: the end of the active segment (a write in progress), but
        corruption in a closed one, which its owner finished before it started the next."""
        reason = f"the file ends inside a batch ({tail.available} of {tail.needed} bytes)"
        if not self.last:
            raise CorruptRecordError(f"{reason}, and it is not the active (last) segment", position, self.path)
        self.tail = SegmentTail(position, tail.available, reason)

    def _corrupt_entry(self, f, window: int, start: int, limit: int, exc: CorruptRecordError) -> None:
        """A bad entry at ``start`` ends the reading quietly when it is the last one of the active
        segment (a batch still being written, or preallocated zeros); otherwise raise, located in
        the file."""
        f.seek(start)
        head = f.read(LOG_OVERHEAD)
        size = int.from_bytes(head[8:12], "big", signed=True) if len(head) == LOG_OVERHEAD else 0
        if self.last and (start + LOG_OVERHEAD + size >= limit or _zeros_to_end(f, start, limit)):
            self.tail = SegmentTail(start, limit - start, f"the last batch is not whole yet: {exc.reason}")
            return
        position = start if exc.position is None else window + exc.position
        raise CorruptRecordError(exc.reason, position, self.path) from None

    def batches(self) -> Iterator[object]:
        """Every whole batch, in file order (see ``entries``)."""
        return (batch for _, batch in self.entries())

    def records(self, *, include_control: bool = False) -> Iterator[object]:
        """Every record of every whole batch; control batches' records only with
        ``include_control``. A record that cannot be read raises CorruptRecordError located in
        the file."""
        return _records(((self.path, position, batch) for position, batch in self.entries()), include_control)


def _records(entries, include_control: bool) -> Iterator[object]:
    """The records of ``(path, file position, batch)`` entries. A batch's own positions count from
    the window it was read in, so an error inside it is moved to where it is in the file."""
    for path, position, batch in entries:
        if not include_control and getattr(batch, "is_control", False):
            continue
        try:
            yield from batch
        except CorruptRecordError as exc:
            where = None if exc.position is None else exc.position + position - batch.position
            raise CorruptRecordError(exc.reason, where, path) from None


def _zeros_to_end(f, start: int, limit: int) -> bool:
    """Whether every byte from ``start`` to ``limit`` is zero (space a preallocating owner made)."""
    f.seek(start)
    left = limit - start
    while left > 0:
        chunk = f.read(min(_CHUNK, left))
        if not chunk or chunk.count(0) != len(chunk):
            return False
        left -= len(chunk)
    return True


def read_segment(path, *, verify_crc: bool = True) -> SegmentFile:
    """A segment (``.log``) or any file of record batches, read-only: iterate ``batches()`` or
    ``records()``. A torn or in-progress last batch ends the reading (``tail`` says so);
    ``verify_crc=False`` skips the CRC check. Nothing is read until you iterate."""
    return SegmentFile(path, verify_crc=verify_crc)


def _check_upto(upto) -> None:
    if upto in (UPTO_END, UPTO_HIGH_WATERMARK) or (isinstance(upto, int) and not isinstance(upto, bool) and upto >= 0):
        return
    raise ValueError(f"upto={upto!r}: expected {UPTO_END!r}, {UPTO_HIGH_WATERMARK!r} or an offset >= 0")


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` of a partition directory's name (``orders-3``); None for any other
    name, such as a deleted, future or stray partition's (``orders-3.<id>-delete``)."""
    match = _PARTITION_RE.match(name)
    return (match.group(1), int(match.group(2))) if match else None


def parse_retired_dir_name(name: str) -> tuple[str, int, str] | None:
    """``(topic, partition, suffix)`` of a retired partition directory's name
    (``orders-3.<32 hex>-delete``: ("orders", 3, "delete"); -future, -stray alike); None for any
    other name, a live partition's (``orders-3``) included. The one reading of these names: the
    broker's stray scan and kafkawire.spark's layout both use it."""
    match = _RETIRED_RE.match(name)
    return (match.group(1), int(match.group(2)), match.group(3)) if match else None


class PartitionReader:
    """One partition directory (``<topic>-<partition>``), read-only.

    ``upto``: "end", "high_watermark" or an offset (see the module docstring). The segment list
    is taken when the reader is made; ``high_watermark`` and ``log_start_offset`` come from the
    checkpoint files of the parent log directory (None when it has none for this partition).
    Raises LookupError when ``upto="high_watermark"`` and there is no high watermark to stop at,
    ValueError for another ``upto``.
    """

    def __init__(self, directory, *, upto=UPTO_END, verify_crc: bool = True,
                 high_watermark: int | None = None, log_start_offset: int | None = None):
        _check_upto(upto)
        self.directory = os.fspath(directory)
        self.verify_crc = verify_crc
        parsed = parse_partition_dir_name(os.path.basename(os.path.normpath(self.directory)))
        self.topic, self.partition = parsed if parsed else (None, None)
        self.segment_bases = sorted(int(m.group(1)) for m in map(_SEGMENT_RE.match, os.listdir(self.directory)) if m)
        parent = os.path.dirname(os.path.normpath(self.directory))
        self.high_watermark = high_watermark if high_watermark is not None else \
            _checkpointed(parent, HIGH_WATERMARK_FILE, parsed)
        self.log_start_offset = log_start_offset if log_start_offset is not None else \
            _checkpointed(parent, LOG_START_OFFSET_FILE, parsed)
        if upto == UPTO_HIGH_WATERMARK and self.high_watermark is None:
            raise LookupError(f"{self.directory}: no high watermark for it in {os.path.join(parent, HIGH_WATERMARK_FILE)}"
                              f" (a KRaft __cluster_metadata log has none); read with upto={UPTO_END!r}")
        self.stop_offset: int | None = self.high_watermark if upto == UPTO_HIGH_WATERMARK else \
            (None if upto == UPTO_END else upto)
        self.vanished: list[str] = []          # segments the last reading found deleted (retention)
        self.tail: SegmentTail | None = None   # why the last reading stopped early, if it did

    def __repr__(self):
        return f"PartitionReader({self.directory!r}, stop_offset={self.stop_offset})"

    def segment_path(self, base_offset: int, suffix: str = ".log") -> str:
        """The path of a segment's ``.log`` (or ``.index``, ``.timeindex``, ``.snapshot``...)."""
        return os.path.join(self.directory, f"{base_offset:020d}{suffix}")

    def segments(self) -> list[SegmentFile]:
        """The segments listed when the reader was made, oldest first; the last is the active one."""
        last = len(self.segment_bases) - 1
        return [SegmentFile(self.segment_path(base), verify_crc=self.verify_crc, last=i == last)
                for i, base in enumerate(self.segment_bases)]

    def entries(self) -> Iterator[tuple[str, int, object]]:
        """``(segment path, file position, batch)`` for every whole batch of the partition, up to
        the stop offset, in offset order."""
        self.tail, self.vanished = None, []
        for segment in self.segments():
            if self.stop_offset is not None and segment.base_offset >= self.stop_offset:
                return
            try:
                for position, batch in segment.entries():
                    if self.stop_offset is not None and batch.last_offset >= self.stop_offset:
                        return
                    yield segment.path, position, batch
            except FileNotFoundError:
                self.vanished.append(segment.path)
                continue
            if segment.tail is not None:
                self.tail = segment.tail

    def batches(self) -> Iterator[object]:
        """Every whole batch of the partition, up to the stop offset, in offset order."""
        return (batch for _, _, batch in self.entries())

    def records(self, *, include_control: bool = False) -> Iterator[object]:
        """Every record up to the stop offset (control records only with ``include_control``);
        CorruptRecordError, located in its segment, for one that cannot be read."""
        return _records(self.entries(), include_control)

    def offset_index(self, base_offset: int) -> OffsetIndex:
        """A segment's ``.index``, parsed from its bytes (preallocated zeros are the end of its
        entries; the file is never trimmed). Raises CorruptIndexError, FileNotFoundError."""
        return OffsetIndex.from_bytes(_read(self.segment_path(base_offset, ".index")), base_offset,
                                      file=self.segment_path(base_offset, ".index"))

    def time_index(self, base_offset: int) -> TimeIndex:
        """A segment's ``.timeindex``, parsed from its bytes (as ``offset_index``)."""
        return TimeIndex.from_bytes(_read(self.segment_path(base_offset, ".timeindex")), base_offset,
                                    file=self.segment_path(base_offset, ".timeindex"))

    def snapshots(self) -> list[SnapshotId]:
        """The KRaft snapshots (``.checkpoint``) of the directory, oldest first."""
        return list_snapshots(self.directory)

    def read_snapshot(self, snapshot_id: SnapshotId | None = None) -> SnapshotReader:
        """A KRaft snapshot, the latest by default, read and checked whole. Raises
        SnapshotFormatError, CorruptRecordError, LookupError when there is none."""
        if snapshot_id is None:
            found = self.snapshots()
            if not found:
                raise LookupError(f"{self.directory}: no snapshot (.checkpoint)")
            snapshot_id = found[-1]
        return SnapshotReader(os.path.join(self.directory, snapshot_file_name(snapshot_id)))

    def leader_epochs(self) -> list[EpochEntry]:
        """The ``leader-epoch-checkpoint`` entries; empty when the file is absent."""
        path = os.path.join(self.directory, "leader-epoch-checkpoint")
        return read_leader_epoch_checkpoint(path) if os.path.exists(path) else []

    def topic_id(self):
        """The topic id in ``partition.metadata`` (a uuid.UUID), None when the file is absent."""
        path = os.path.join(self.directory, "partition.metadata")
        return read_partition_metadata(path) if os.path.exists(path) else None


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _checkpointed(log_dir: str, name: str, partition: tuple[str, int] | None) -> int | None:
    """A partition's offset in a checkpoint file of its log directory; None if it has none."""
    path = os.path.join(log_dir, name)
    if partition is None or not os.path.exists(path):
        return None
    try:
        return read_offset_checkpoint(path).get(partition)
    except FileNotFoundError:          # replaced by the broker between the check and the open
        return None


def _is_partition_dir(path: str) -> bool:
    if parse_partition_dir_name(os.path.basename(os.path.normpath(path))) is None:
        return False
    return not any(parse_partition_dir_name(entry.name) and entry.is_dir() for entry in os.scandir(path))


class LogDirectoryReader:
    """A log directory (``log.dirs`` / ``metadata.log.dir``), or one partition directory in it,
    read-only. ``partitions()`` lists ``(topic, partition)``; ``partition(topic, n)`` or iterating
    gives a PartitionReader each, all with the same ``upto`` (see the module docstring).
    Raises NotADirectoryError / FileNotFoundError for a path that is not a directory.
    """

    def __init__(self, path, *, upto=UPTO_END, verify_crc: bool = True):
        _check_upto(upto)
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise NotADirectoryError(f"{path}: not a directory")
        self.upto, self.verify_crc = upto, verify_crc
        if _is_partition_dir(path):
            self.log_dir, only = os.path.dirname(os.path.normpath(path)) or ".", os.path.basename(os.path.normpath(path))
            names = [only]
        else:
            self.log_dir = path
            names = [entry.name for entry in os.scandir(path)
                     if entry.is_dir() and parse_partition_dir_name(entry.name)]
        self._dirs = {parse_partition_dir_name(name): os.path.join(self.log_dir, name) for name in names}

    def partitions(self) -> list[tuple[str, int]]:
        """``(topic, partition)`` of every partition directory, sorted."""
        return sorted(self._dirs)

    def partition(self, topic: str, partition: int) -> PartitionReader:
        """The reader of one partition; KeyError when the directory has no such partition."""
        directory = self._dirs.get((topic, partition))
        if directory is None:
            raise KeyError(f"{self.log_dir}: no partition directory {topic}-{partition}")
        return PartitionReader(directory, upto=self.upto, verify_crc=self.verify_crc)

    def __iter__(self) -> Iterator[PartitionReader]:
        return (self.partition(topic, n) for topic, n in self.partitions())

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        """``replication-offset-checkpoint``: the high watermark of every partition; empty without it."""
        path = os.path.join(self.log_dir, HIGH_WATERMARK_FILE)
        return read_offset_checkpoint(path) if os.path.exists(path) else {}

    def meta_properties(self) -> MetaProperties | None:
        """``meta.properties`` (node id, cluster id, directory id), None when absent."""
        path = os.path.join(self.log_dir, "meta.properties")
        return read_meta_properties(path) if os.path.exists(path) else None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None             # nothing stays open between readings


def read_log_directory(path, *, upto=UPTO_END, verify_crc: bool = True) -> LogDirectoryReader:
    """Read a Kafka log directory, or one partition directory, without writing anything.

    ``upto``: "end" (every complete batch; a torn or in-progress last batch is the end),
    "high_watermark" (stop at each partition's offset in ``replication-offset-checkpoint``;
    LookupError for a partition without one) or an offset. ``verify_crc=False`` skips CRC
    checks. Raises NotADirectoryError for a path that is not a directory, ValueError for a bad
    ``upto``; reading raises CorruptRecordError for a corrupt batch that is not the last.
    """
    return LogDirectoryReader(path, upto=upto, verify_crc=verify_crc)
