"""Kafka's on-disk formats: segment indexes, log segments, partition logs, KRaft
snapshots and the small state files (quorum-state, meta.properties, checkpoints).

Modules: ``index`` (.index / .timeindex), ``segment`` (one .log with its indexes,
recovery), ``log`` (a partition directory of segments), ``snapshot`` (KRaft
``.checkpoint`` files), ``state_files`` (atomic writes and the text/JSON state files).
"""

from .index import CorruptIndexError, InvalidOffsetError, OffsetIndex, TimeIndex
from .log import Log, OffsetOutOfRangeError
from .segment import LogSegment, ReadResult, RecoveryReport
from .snapshot import (BOOTSTRAP_SNAPSHOT_ID, SnapshotFormatError, SnapshotId, SnapshotReader,
                       SnapshotWriter, list_snapshots, parse_snapshot_file_name,
                       snapshot_file_name)
from .state_files import atomic_write

__all__ = [
    "OffsetIndex", "TimeIndex", "CorruptIndexError", "InvalidOffsetError",
    "LogSegment", "RecoveryReport", "ReadResult",
    "Log", "OffsetOutOfRangeError",
    "SnapshotId", "SnapshotReader", "SnapshotWriter", "SnapshotFormatError",
    "BOOTSTRAP_SNAPSHOT_ID", "list_snapshots", "parse_snapshot_file_name", "snapshot_file_name",
    "atomic_write",
]
