"""Kafka's on-disk formats: segment indexes, log segments, partition logs, KRaft
snapshots and the small state files (quorum-state, meta.properties, checkpoints).

Reading someone else's log directory (a broker's, a controller's, a copy): use ``reader``
(``read_log_directory``, ``read_segment``), which never writes. ``Log`` and ``LogSegment`` are
the owner's writers: opening one recovers, truncates and rewrites files.

Modules: ``reader`` (read-only readers), ``index`` (.index / .timeindex), ``segment`` (one .log
with its indexes, recovery), ``log`` (a partition directory of segments, the writer),
``snapshot`` (KRaft ``.checkpoint`` files), ``state_files`` (atomic writes and the text/JSON
state files), ``swap`` (the log cleaner's ``.cleaned``/``.swap`` files and their recovery).
"""

from .index import CorruptIndexError, InvalidOffsetError, OffsetIndex, TimeIndex
from .log import Log, OffsetOutOfRangeError
from .segment import LogSegment, ReadResult, RecoveryReport
from .snapshot import (BOOTSTRAP_SNAPSHOT_ID, SnapshotFormatError, SnapshotId, SnapshotReader,
                       SnapshotWriter, list_snapshots, parse_snapshot_file_name,
                       snapshot_file_name)
from .reader import (LogDirectoryReader, PartitionReader, SegmentFile, SegmentTail, read_log_directory,
                     read_segment)
from .state_files import atomic_write

__all__ = [
    "read_log_directory", "read_segment", "LogDirectoryReader", "PartitionReader", "SegmentFile", "SegmentTail",
    "OffsetIndex", "TimeIndex", "CorruptIndexError", "InvalidOffsetError",
    "LogSegment", "RecoveryReport", "ReadResult",
    "Log", "OffsetOutOfRangeError",
    "SnapshotId", "SnapshotReader", "SnapshotWriter", "SnapshotFormatError",
    "BOOTSTRAP_SNAPSHOT_ID", "list_snapshots", "parse_snapshot_file_name", "snapshot_file_name",
    "atomic_write",
]
