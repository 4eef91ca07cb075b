"""How far a live log may be read: the high watermark a broker recorded on disk.

A running broker appends past its high watermark (HW) all the time: records only the leader
has, which a new leader may truncate. Kafka's ReplicaManager writes every partition's HW to
``replication-offset-checkpoint`` in each log directory, every
``replica.high.watermark.checkpoint.interval.ms`` (5 s by default), through a temporary file
renamed over the old one; the format is Kafka's CheckpointFile (``0``, the entry count, then
``topic partition offset`` lines). Records below that offset were committed when it was
written, and stay (only an unclean leader election can take them back).

``highWatermark`` modes (options.py):

* ``checkpoint``: each partition is read no further than its checkpointed HW. A log
  directory without the file, or a partition without a line in it (created since the last
  checkpoint), has no committed record known: it reads nothing, as Kafka's broker itself
  starts such a partition at HW 0 (Partition.createLog, bounded below by the log start).
* ``required``: the same, but a missing file or line is an error naming both.
* ``logEnd``: every whole batch (the HW of a single-replica broker, kafkawire's own, is its
  log end; Kafka's metadata log ``__cluster_metadata`` has no line: KRaft keeps its HW in
  memory only).

On a live log, the log start offset is Kafka's too: ``log-start-offset-checkpoint`` (the
same format, written every ``log.flush.start.offset.checkpoint.interval.ms``, 60 s) holds a
partition's log start where it is above its first segment's base offset (DeleteRecords, or
retention that has not renamed the segment yet); records below it are gone for consumers.
Without the file or a line, the first segment's base offset is the log start.

Each file is read whole through one open file (a rename replaces it at once, so one open
sees one version). A file cut short (a copy taken while it was written, a filesystem
without atomic renames) keeps its complete lines: a line without its newline, and lines the
count promises but the file lacks, are left out, so their partitions count as absent
(``required``: an error). Anything else that does not parse is an error naming the file
and line, as it stops Kafka's broker.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkawire.storage.state_files import StateFileError, parse_checkpoint

from .files import LOCAL, Files

__all__ = ["HIGH_WATERMARK_FILE", "LOG_START_FILE", "HW_MODES", "HighWatermarkError", "HighWatermarks",
           "parse_high_watermarks"]

HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
HW_MODES = ("checkpoint", "required", "logend")


class HighWatermarkError(ValueError):
    """No usable high watermark where the read requires one; names the file."""


@dataclass(frozen=True)
class CheckpointContents:
    offsets: dict                 # (topic, partition) -> offset
    cut_short: bool = False       # the file ended before its last promised line


def parse_high_watermarks(text: str, path: str) -> CheckpointContents:
    """``replication-offset-checkpoint``'s entries, tolerating a file cut short (see above:
    state_files.parse_checkpoint's ``partial`` mode)."""
    entries = parse_checkpoint(text, fields=3, file=path, partial=True)
    offsets = {}
    for n, (topic, partition, offset) in enumerate(entries, start=3):
        try:
            index, value = int(partition), int(offset)
        except ValueError:
            index = value = -1
        if index < 0 or value < 0:
            raise StateFileError(f"malformed entry {' '.join((topic, partition, offset))!r}: topic partition "
                                 f"offset expected", path, n)
        offsets[(topic, index)] = value
    return CheckpointContents(offsets, cut_short=entries.cut_short)


@dataclass
class HighWatermarks:
    """The checkpointed high watermarks (and, with ``log_starts``, log start offsets) of
    the log directories one read touches, each file read once (before the segments are
    listed, so that every batch below a HW is inside the sizes listed: the broker wrote it
    before it wrote the checkpoint)."""

    mode: str = "logend"
    files: Files = LOCAL
    log_starts: bool = False
    _read: dict = field(default_factory=dict)   # (log dir, file name) -> contents or None

    @property
    def bounded(self) -> bool:
        return self.mode != "logend"

    def _contents(self, log_dir: str, name: str = HIGH_WATERMARK_FILE) -> CheckpointContents | None:
        if (log_dir, name) not in self._read:
            path = self.files.join(log_dir, name)
            data = self.files.read_small(path)
            self._read[(log_dir, name)] = None if data is None else \
                parse_high_watermarks(data.decode("utf-8", "replace"), path)
        return self._read[(log_dir, name)]

    def load(self, partition_dirs) -> None:
        """Read the checkpoints of each partition directory's log directory now."""
        for directory in partition_dirs:
            if self.bounded:
                self._contents(Files.dirname(directory))
            if self.log_starts:
                self._contents(Files.dirname(directory), LOG_START_FILE)

    def log_start(self, partition_dir: str, topic: str, partition: int) -> int | None:
        """The checkpointed log start offset, None without one (or without ``log_starts``)."""
        if not self.log_starts:
            return None
        contents = self._contents(Files.dirname(partition_dir), LOG_START_FILE)
        return None if contents is None else contents.offsets.get((topic, partition))

    def bound(self, partition_dir: str, topic: str, partition: int) -> int | None:
        """The offset a read of the partition stops at, None for no bound (``logEnd``);
        0 when nothing is known committed (bounded below by the log start by the caller)."""
        if not self.bounded:
            return None
        log_dir = Files.dirname(partition_dir)
        contents = self._contents(log_dir)
        path = self.files.join(log_dir, HIGH_WATERMARK_FILE)
        if contents is None:
            if self.mode == "required":
                raise HighWatermarkError(
                    f"{path}: no such file, so the high watermark of {topic}-{partition} is unknown "
                    f"(highWatermark=required; a broker writes it every "
                    f"replica.high.watermark.checkpoint.interval.ms, 5 s by default; "
                    f"highWatermark=logEnd reads every whole batch instead)")
            return 0
        offset = contents.offsets.get((topic, partition))
        if offset is None:
            if self.mode == "required":
                cut = " (the file is cut short)" if contents.cut_short else ""
                raise HighWatermarkError(
                    f"{path}: no high watermark for {topic}-{partition}{cut} (highWatermark=required; "
                    f"a partition created since the last checkpoint has none yet)")
            return 0
        return offset
