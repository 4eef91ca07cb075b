"""KRaft snapshot files (``%020d-%010d.checkpoint``: end offset, epoch) and
``bootstrap.checkpoint``, in the format Kafka's RecordsSnapshotWriter/Reader use.

A snapshot is record batches back to back, like a log segment:

1. a control batch whose first record is SNAPSHOT_HEADER (SnapshotHeaderRecord: version,
   lastContainedLogTimestamp); since KIP-853 the same batch may also hold KRAFT_VERSION
   and KRAFT_VOTERS records;
2. data batches (metadata records), offsets counting from 1 after the header;
3. a last control batch holding one SNAPSHOT_FOOTER record (SnapshotFooterRecord).

Every batch carries the snapshot's epoch as partition leader epoch. The writer writes
``<name>.checkpoint.part`` and ``freeze()`` appends the footer, fsyncs, renames it to
``<name>.checkpoint`` and fsyncs the directory (FileRawSnapshotWriter). The reader checks
the framing and names the file and byte position of what is missing or misplaced.

The bootstrap snapshot id is (0, 0), file ``00000000000000000000-0000000000.checkpoint``;
``bootstrap.checkpoint`` (in the metadata directory, written by the storage tool) has
the same format.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

from kafkawire.protocol.errors import BadBytesError
from kafkawire.records import ControlRecordType, RecordBatchBuilder, iter_batches
from kafkawire.records.control import encode_control_key, parse_control_key
from kafkawire import messages

__all__ = ["SnapshotId", "SnapshotBuilder", "SnapshotWriter", "SnapshotReader", "SnapshotFormatError",
           "snapshot_file_name", "parse_snapshot_file_name", "list_snapshots",
           "BOOTSTRAP_SNAPSHOT_ID", "BOOTSTRAP_FILE_NAME", "is_bootstrap_file", "stream_snapshot_data"]

SUFFIX = ".checkpoint"
PART_SUFFIX = ".part"
DELETE_SUFFIX = ".deleted"
BOOTSTRAP_FILE_NAME = "bootstrap.checkpoint"
_NAME_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint(\.part|\.deleted)?$")


@dataclass(frozen=True, order=True)
class SnapshotId:
    """A KRaft snapshot's id: the end offset (the offset after its last record) and the epoch of
    that record; the file name is ``%020d-%010d.checkpoint`` of the two.
    """
    end_offset: int
    epoch: int

    def __str__(self):
        return f"{self.end_offset:020d}-{self.epoch:010d}"


BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)


def snapshot_file_name(snapshot_id: SnapshotId, suffix: str = SUFFIX) -> str:
    """The file name of a snapshot: ``<20-digit end offset>-<10-digit epoch>`` and ``suffix``
    (``.checkpoint``; ``.checkpoint.part`` while written, ``.checkpoint.deleted`` when removed).
    """
    return f"{snapshot_id}{suffix}"


def parse_snapshot_file_name(name) -> tuple[SnapshotId, str] | None:
    """``(SnapshotId, kind)`` with kind "checkpoint", "part" or "deleted"; None otherwise."""
    m = _NAME_RE.match(os.path.basename(os.fspath(name)))
    if not m:
        return None
    kind = {None: "checkpoint", ".part": "part", ".deleted": "deleted"}[m.group(3)]
    return SnapshotId(int(m.group(1)), int(m.group(2))), kind


def is_bootstrap_file(name) -> bool:
    base = os.path.basename(os.fspath(name))
    if base == BOOTSTRAP_FILE_NAME:
        return True
    parsed = parse_snapshot_file_name(base)
    return parsed is not None and parsed[0] == BOOTSTRAP_SNAPSHOT_ID and parsed[1] == "checkpoint"


def list_snapshots(directory) -> list[SnapshotId]:
    """Ids of the frozen snapshots in a partition directory, oldest first."""
    out = []
    for name in os.listdir(directory):
        parsed = parse_snapshot_file_name(name)
        if parsed and parsed[1] == "checkpoint":
            out.append(parsed[0])
    return sorted(out)


class SnapshotFormatError(BadBytesError):
    """A snapshot file Kafka would refuse (no header or footer, a record out of place, a torn batch),
    with the byte position and file. A BadBytesError.
    """
    def __init__(self, reason: str, position: int | None = None, file=None):
        self.reason, self.position, self.file = reason, position, file
        where = []
        if position is not None:
            where.append(f"at byte {position}")
        if file is not None:
            where.append(f"in {os.fspath(file)}")
        super().__init__(f"{reason} ({' '.join(where)})" if where else reason)


def _msg(name):
    return messages.by_name(name)


class SnapshotBuilder:
    """The bytes of a snapshot, built in memory: header batch, data batches, footer batch.

    ``SnapshotWriter`` streams the same bytes to a ``.part`` file; the raft simulator and
    tests keep them in memory.
    """

    def __init__(self, snapshot_id: SnapshotId, *, last_contained_log_timestamp: int,
                 header_version: int = 0, control_records=(), time_ms=None, sink=None):
        self.snapshot_id = snapshot_id
        self._now = time_ms or (lambda: int(time.time() * 1000))
        self._chunks: list[bytes] = []
        self._sink = sink if sink is not None else self._chunks.append
        self._next_offset = 0
        header = _msg("SnapshotHeaderRecord")()
        header.version = header_version
        header.last_contained_log_timestamp = last_contained_log_timestamp
        # (type, value bytes) pairs that share the header's control batch (KRaft version,
        # voters), as RecordsSnapshotWriter does for kraft.version >= 1.
        self._control_batch([(ControlRecordType.SNAPSHOT_HEADER, header.encode(0))]
                            + list(control_records))

    def _control_batch(self, records) -> None:
        b = RecordBatchBuilder(base_offset=self._next_offset, is_control=True,
                               partition_leader_epoch=self.snapshot_id.epoch)
        ts = self._now()
        for type_id, value in records:
            b.append(encode_control_key(type_id), value, (), ts)
        self._sink(b.build())
        self._next_offset += len(records)

    def append(self, values, *, timestamp: int | None = None) -> None:
        """One data batch of records with null keys and the given values (metadata
        records as Kafka's serde writes them)."""
        values = list(values)
        if not values:
            return
        b = RecordBatchBuilder(base_offset=self._next_offset,
                               partition_leader_epoch=self.snapshot_id.epoch)
        ts = self._now() if timestamp is None else timestamp
        for v in values:
            b.append(None, v, (), ts)
        self._sink(b.build())
        self._next_offset += len(values)

    def append_batch(self, batch: bytes) -> None:
        """A pre-built batch; its offsets must continue the snapshot's."""
        for parsed in iter_batches(batch):
            if parsed.base_offset != self._next_offset:
                raise ValueError(f"batch base offset {parsed.base_offset} != {self._next_offset}")
            self._next_offset = parsed.next_offset
        self._sink(bytes(batch))

    def finish(self) -> bytes:
        """Append the footer; the whole snapshot (in memory) or b"" (streamed to a sink)."""
        footer = _msg("SnapshotFooterRecord")()
        footer.version = 0
        self._control_batch([(ControlRecordType.SNAPSHOT_FOOTER, footer.encode(0))])
        return b"".join(self._chunks)


class SnapshotWriter(SnapshotBuilder):
    """Write a snapshot through ``<name>.checkpoint.part``; ``freeze()`` publishes it."""

    def __init__(self, directory, snapshot_id: SnapshotId, *, last_contained_log_timestamp: int,
                 header_version: int = 0, control_records=(), time_ms=None,
                 file_name: str | None = None):
        self.directory = os.fspath(directory)
        name = file_name or snapshot_file_name(snapshot_id)
        self.path = os.path.join(self.directory, name)
        self.part_path = self.path + PART_SUFFIX
        self._file = open(self.part_path, "xb")
        self.frozen = False
        super().__init__(snapshot_id, last_contained_log_timestamp=last_contained_log_timestamp,
                         header_version=header_version, control_records=control_records,
                         time_ms=time_ms, sink=self._file.write)

    def freeze(self) -> str:
        """Write the footer, fsync, rename to the final name, fsync the directory."""
        self.finish()
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        os.replace(self.part_path, self.path)
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.frozen = True
        return self.path

    def abort(self) -> None:
        if not self.frozen:
            self._file.close()
            if os.path.exists(self.part_path):
                os.remove(self.part_path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is not None:
            self.abort()
        elif not self.frozen:
            self.freeze()


class SnapshotReader:
    """Read and validate a snapshot file (or bootstrap.checkpoint).

    Attributes: ``header`` (SnapshotHeaderRecord), ``footer`` (SnapshotFooterRecord),
    ``control_records`` (every control record as ``(type, value)``), ``batches``,
    ``snapshot_id`` (None for bootstrap.checkpoint). ``records()`` yields the data records.
    """

    def __init__(self, path, *, verify_crc: bool = True):
        self.path = os.fspath(path)
        parsed = parse_snapshot_file_name(self.path)
        self.snapshot_id = parsed[0] if parsed else None
        with open(self.path, "rb") as f:
            self.data = f.read()
        it = iter_batches(self.data, verify_crc=verify_crc, file=self.path)
        self.batches = list(it)
        if it.tail is not None:
            raise SnapshotFormatError(
                f"snapshot ends inside a batch ({it.tail.available} of {it.tail.needed} bytes)",
                it.tail.position, self.path)
        if not self.batches:
            raise SnapshotFormatError("empty snapshot: no SnapshotHeader", 0, self.path)
        self.header = self.footer = None
        self.control_records: list[tuple[int, object]] = []
        header_cls, footer_cls = _msg("SnapshotHeaderRecord"), _msg("SnapshotFooterRecord")
        last = len(self.batches) - 1
        for i, batch in enumerate(self.batches):
            if not batch.is_control:
                if i == 0:
                    raise SnapshotFormatError(
                        "first batch is not a control batch: the SnapshotHeader is missing",
                        batch.position, self.path)
                if i == last:
                    raise SnapshotFormatError(
                        "last batch is not a control batch: the SnapshotFooter is missing",
                        batch.position, self.path)
                continue
            for j, record in enumerate(batch):
                key = parse_control_key(record.key)
                where = batch.position
                if key.type == ControlRecordType.SNAPSHOT_HEADER:
                    if i != 0 or j != 0:
                        raise SnapshotFormatError("SnapshotHeader is not the first record",
                                                  where, self.path)
                    self.header = header_cls.decode(bytes(record.value), 0)
                    value = self.header
                elif key.type == ControlRecordType.SNAPSHOT_FOOTER:
                    if i != last or j != len(batch) - 1:
                        raise SnapshotFormatError("SnapshotFooter is not the last record",
                                                  where, self.path)
                    self.footer = footer_cls.decode(bytes(record.value), 0)
                    value = self.footer
                else:
                    value = bytes(record.value) if record.value is not None else None
                if i == 0 and j == 0 and key.type != ControlRecordType.SNAPSHOT_HEADER:
                    raise SnapshotFormatError(
                        f"first record is control type {key.type}, not SnapshotHeader",
                        where, self.path)
                self.control_records.append((key.type, value))
        if self.footer is None:
            raise SnapshotFormatError("no SnapshotFooter at the end of the snapshot",
                                      self.batches[-1].position, self.path)

    @property
    def last_contained_log_timestamp(self) -> int:
        return self.header.last_contained_log_timestamp

    def records(self):
        """The data records (not the control records), in order."""
        for batch in self.batches:
            if not batch.is_control:
                yield from batch

    def __len__(self):
        return sum(len(b) for b in self.batches if not b.is_control)



def stream_snapshot_data(data, path: str):
    """A snapshot file's data batches, one at a time, with SnapshotReader's framing checks made
    as they pass (a SnapshotHeader first, a SnapshotFooter last, nothing after it, no partial
    batch): what a load in steps reads, so that no step checks or decodes the whole file.
    Raises SnapshotFormatError when the framing is wrong, at the batch where it shows."""
    footer_at = None
    it = iter_batches(data, verify_crc=True, file=path)
    for i, batch in enumerate(it):
        if footer_at is not None:
            raise SnapshotFormatError("a batch follows the SnapshotFooter", batch.position, path)
        if not batch.is_control:
            if i == 0:
                raise SnapshotFormatError("first batch is not a control batch: the SnapshotHeader is missing",
                                          batch.position, path)
            yield batch
            continue
        for j, record in enumerate(batch):
            kind = parse_control_key(record.key).type
            if (i == 0 and j == 0) != (kind == ControlRecordType.SNAPSHOT_HEADER):
                raise SnapshotFormatError("SnapshotHeader is not the first record" if kind == ControlRecordType.SNAPSHOT_HEADER
                                          else f"first record is control type {kind}, not SnapshotHeader",
                                          batch.position, path)
            if footer_at is not None:
                raise SnapshotFormatError("SnapshotFooter is not the last record", batch.position, path)
            if kind == ControlRecordType.SNAPSHOT_FOOTER:
                footer_at = batch.position
    if it.tail is not None:
        raise SnapshotFormatError(f"snapshot ends inside a batch ({it.tail.available} of {it.tail.needed} bytes)",
                                  it.tail.position, path)
    if footer_at is None:
        raise SnapshotFormatError("no SnapshotFooter at the end of the snapshot", len(data), path)
