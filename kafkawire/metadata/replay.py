"""Replaying a snapshot and a log into a MetadataImage, as Kafka's MetadataLoader and
MetadataBatchLoader do (metadata/src/main/java/org/apache/kafka/image/loader).

* A snapshot (``<end offset>-<epoch>.checkpoint`` or ``bootstrap.checkpoint``) is loaded
  first, whole; its provenance is (end offset - 1, epoch, the header's
  lastContainedLogTimestamp), as MetadataLoader.loadSnapshot sets it.
* Log batches follow, skipping records the snapshot already holds. After each batch that
  leaves no transaction open, the provenance becomes (batch last offset, batch epoch, batch
  max timestamp); control batches count too.
* Metadata transactions (KIP-868): the records between a BeginTransactionRecord and its
  EndTransactionRecord apply only when the End is read; an AbortTransactionRecord drops them.
  A Begin inside a transaction, or an End/Abort outside one, is an error, as in
  MetadataBatchLoader. A log that ends inside a transaction leaves it unapplied (reported as
  ``pending_transaction``). Records before a Begin in the same batch apply at once: Kafka
  publishes them before the transaction starts.
* Control records set the raft state: LeaderChange (leader id, epoch, voters), KRaftVersion,
  KRaftVoters.

Nothing is skipped silently: an unknown record type or version, a record Kafka would refuse
(ImageError), a CRC mismatch or torn batch becomes a Problem naming the file, the byte
position of its batch and the record's offset. Replay goes on past a bad record; a file
stops at the first batch that cannot be framed or fails its CRC. The order of everything is
the order of the files and batches, so a replay is deterministic.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from kafkawire.records import CorruptRecordError, iter_batches
from kafkawire.records.control import ControlRecordType, decode_control_value, parse_control_key
from kafkawire.storage.snapshot import (BOOTSTRAP_FILE_NAME, SnapshotId, list_snapshots,
                                        parse_snapshot_file_name, snapshot_file_name)

from .frame import MetadataRecordError, decode_metadata_record
from .image import ImageError, MetadataImage, Provenance

__all__ = ["Problem", "RaftState", "Replay", "replay_files", "replay_snapshot", "replay_directory",
           "replay_as_metadata_shell",
           "PendingTransaction"]

_SEGMENT_SUFFIX = ".log"


@dataclass(frozen=True)
class Problem:
    file: str
    position: int | None      # byte position of the batch in the file
    offset: int | None        # offset of the record, when one is concerned
    message: str

    def __str__(self) -> str:
        where = [self.file]
        if self.position is not None:
            where.append(f"batch at byte {self.position}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{', '.join(where)}: {self.message}"


@dataclass
class RaftState:
    """What the control records of a log or snapshot say about the quorum."""
    leader_id: int | None = None
    leader_epoch: int | None = None
    leader_change: object = None      # the last LeaderChangeMessage
    kraft_version: int | None = None  # None: no KRaftVersionRecord (kraft.version 0)
    voters: object = None             # the last VotersRecord
    leader_changes: int = 0


@dataclass
class PendingTransaction:
    name: str
    offset: int
    file: str
    records: list = field(default_factory=list)


@dataclass
class Replay:
    """A replay of a snapshot and log into a MetadataImage (see the module docstring): ``image``,
    ``raft`` (leader, epoch, voters from the control records), ``problems`` (everything that could
    not be read or applied, with file, byte position and offset), ``sources`` (files read),
    ``records_applied``, ``last_offset``/``last_epoch`` and an unfinished ``transaction``.
    """
    image: MetadataImage = field(default_factory=MetadataImage)
    raft: RaftState = field(default_factory=RaftState)
    problems: list[Problem] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    records_applied: int = 0
    last_offset: int = -1          # the last offset read, whether or not it was published
    last_epoch: int = -1           # the epoch of the batch (or snapshot) that offset is in
    transaction: PendingTransaction | None = None
    aborted_transactions: int = 0
    # False: only metadata batches move the provenance (Kafka's MetadataShell reading a file)
    control_batches_publish: bool = True

    @property
    def pending_transaction(self) -> PendingTransaction | None:
        return self.transaction

    # -- feeding files --

    def load_snapshot(self, path) -> None:
        """Load a snapshot into an empty replay (Kafka replaces the image with it)."""
        path = os.fspath(path)
        name = os.path.basename(path)
        parsed = parse_snapshot_file_name(name)
        snapshot_id = parsed[0] if parsed else (SnapshotId(0, 0) if name == BOOTSTRAP_FILE_NAME else None)
        if snapshot_id is None:
            self.problems.append(Problem(path, None, None, "not a snapshot file name "
                                                           "(<20-digit end offset>-<10-digit epoch>.checkpoint)"))
        header_time = self._read_file(path, start_offset=None, snapshot=True)
        if snapshot_id is not None:
            # A snapshot's own batch offsets count from 0; what it stands for is its end offset.
            self.image.provenance = Provenance(snapshot_id.end_offset - 1, snapshot_id.epoch,
                                               -1 if header_time is None else header_time)
            self.last_offset = snapshot_id.end_offset - 1
            self.last_epoch = snapshot_id.epoch

    def load_log(self, path, start_offset: int = 0) -> None:
        """Replay a log segment, skipping records below ``start_offset``."""
        self._read_file(os.fspath(path), start_offset=start_offset, snapshot=False)

    def _read_file(self, path: str, start_offset, snapshot: bool):
        self.sources.append(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            self.problems.append(Problem(path, None, None, f"cannot read the file: {exc.strerror or exc}"))
            return None
        header_time = None
        batches = iter_batches(data, file=path)
        # A batch that fails (CRC, size, magic, or its records) is reported at its start, as
        # dump-log does: the error's own position is that of the bad field (the CRC's is 17
        # bytes in). The iterator's position is the next batch's start until it yields it.
        batch_start = batches.position
        try:
            for batch in batches:
                batch_start = batch.position
                if start_offset is not None and batch.last_offset < start_offset:
                    batch_start = batches.position
                    continue
                if batch.is_control:
                    header_time = self._control_batch(batch, path) if header_time is None else header_time
                else:
                    self._data_batch(batch, path, start_offset)
                if not snapshot:
                    if self.transaction is None and (self.control_batches_publish or not batch.is_control):
                        self.image.provenance = Provenance(batch.last_offset, batch.partition_leader_epoch,
                                                           batch.max_timestamp)
                    if batch.last_offset > self.last_offset:
                        self.last_offset, self.last_epoch = batch.last_offset, batch.partition_leader_epoch
                batch_start = batches.position
        except CorruptRecordError as exc:
            self.problems.append(Problem(path, batch_start, None, f"{exc.reason}; the rest of the file is not read"))
        if batches.tail is not None:
            tail = batches.tail
            self.problems.append(Problem(path, tail.position, None,
                                         f"the file ends inside a batch ({tail.available} of {tail.needed} bytes); "
                                         f"the torn batch is not read"))
        return header_time

    def _control_batch(self, batch, path: str):
        header_time = None
        for record in batch:
            try:
                key = parse_control_key(record.key)
                value = decode_control_value(key.type, record.value)
            except CorruptRecordError as exc:
                self.problems.append(Problem(path, batch.position, record.offset, f"control record: {exc.reason}"))
                continue
            raft = self.raft
            if key.type == ControlRecordType.LEADER_CHANGE:
                raft.leader_id, raft.leader_epoch = value.leader_id, batch.partition_leader_epoch
                raft.leader_change = value
                raft.leader_changes += 1
            elif key.type == ControlRecordType.KRAFT_VERSION:
                raft.kraft_version = value.k_raft_version
            elif key.type == ControlRecordType.KRAFT_VOTERS:
                raft.voters = value
            elif key.type == ControlRecordType.SNAPSHOT_HEADER:
                header_time = value.last_contained_log_timestamp
        return header_time

    def _data_batch(self, batch, path: str, start_offset) -> None:
        for record in batch:
            if start_offset is not None and record.offset < start_offset:
                continue
            try:
                decoded = decode_metadata_record(record.value)
            except MetadataRecordError as exc:
                self.problems.append(Problem(path, batch.position, record.offset, str(exc)))
                continue
            self._replay(decoded.message, path, batch, record.offset)

    def _replay(self, message, path, batch, offset) -> None:
        name = message.NAME
        txn = self.transaction
        if name == "BeginTransactionRecord":
            if txn is not None:
                self._problem(path, batch, offset, "Encountered BeginTransactionRecord while already in a "
                                                   f"transaction (begun at offset {txn.offset})")
                return
            if self.image.provenance.offset < offset - 1:
                # Kafka publishes what came before the transaction when the transaction starts.
                self.image.provenance = Provenance(offset - 1, batch.partition_leader_epoch, batch.max_timestamp)
            self.transaction = PendingTransaction(message.name, offset, path)
        elif name in ("EndTransactionRecord", "AbortTransactionRecord"):
            if txn is None:
                self._problem(path, batch, offset, f"Encountered {name} without having seen a "
                                                   f"BeginTransactionRecord")
                return
            self.transaction = None
            if name == "AbortTransactionRecord":
                self.aborted_transactions += 1
                return
            for pending, p_path, p_position, p_offset in txn.records:
                self._apply(pending, p_path, p_position, p_offset)
        elif txn is not None:
            txn.records.append((message, path, batch.position, offset))
        else:
            self._apply(message, path, batch.position, offset)

    def _apply(self, message, path, position, offset) -> None:
        try:
            self.image.apply(message)
            self.records_applied += 1
        except ImageError as exc:
            self.problems.append(Problem(path, position, offset, f"{message.NAME}: {exc}"))

    def _problem(self, path, batch, offset, message) -> None:
        self.problems.append(Problem(path, batch.position, offset, message))

    def finish(self) -> Replay:
        if self.transaction is not None:
            txn = self.transaction
            self.problems.append(Problem(txn.file, None, txn.offset,
                                         f"transaction {txn.name!r} begun at offset {txn.offset} never ended; "
                                         f"its {len(txn.records)} records are not applied"))
        return self


def replay_files(snapshot=None, logs=()) -> Replay:
    """Replay an optional snapshot, then log segments (records the snapshot holds are skipped)."""
    replay = Replay()
    start = 0
    if snapshot is not None:
        replay.load_snapshot(snapshot)
        start = replay.last_offset + 1
    for log in logs:
        replay.load_log(log, start)
    return replay.finish()


def replay_snapshot(path) -> Replay:
    """What ``metadata-shell --snapshot FILE`` shows: a .checkpoint is loaded as a snapshot,
    anything else (a .log segment) is replayed as a log."""
    path = os.fspath(path)
    name = os.path.basename(path)
    if name.endswith(".checkpoint"):
        return replay_files(snapshot=path)
    return replay_files(logs=[path])


def replay_as_metadata_shell(path) -> Replay:
    """What Kafka's ``kafka-metadata-shell --snapshot FILE`` shows for any file (snapshot,
    bootstrap.checkpoint or segment): its SnapshotFileReader reads the batches as a log and
    only logs the control ones, so the image's provenance is the last metadata batch's offset
    (the file's own: a snapshot's count from 0), epoch and max timestamp."""
    replay = Replay(control_batches_publish=False)
    replay.load_log(os.fspath(path))
    return replay.finish()


def replay_directory(directory) -> Replay:
    """A ``__cluster_metadata-0`` directory: the latest snapshot, then the log after it."""
    directory = os.fspath(directory)
    snapshots = list_snapshots(directory)
    snapshot = os.path.join(directory, snapshot_file_name(snapshots[-1])) if snapshots else None
    segments = sorted(name for name in os.listdir(directory)
                      if name.endswith(_SEGMENT_SUFFIX) and name[:-len(_SEGMENT_SUFFIX)].isdigit())
    replay = Replay()
    if not snapshots and not segments:
        replay.problems.append(Problem(directory, None, None, "no snapshot (.checkpoint) and no log segment "
                                                              "(.log) in this directory"))
        return replay
    start = 0
    if snapshot is not None:
        replay.load_snapshot(snapshot)
        start = replay.last_offset + 1
    bases = [int(name[:-len(_SEGMENT_SUFFIX)]) for name in segments]
    for i, name in enumerate(segments):
        next_base = bases[i + 1] if i + 1 < len(bases) else None
        if next_base is not None and next_base <= start:
            continue   # the whole segment lies before the snapshot's end
        replay.load_log(os.path.join(directory, name), start)
    if segments and bases[0] > start:
        replay.problems.append(Problem(os.path.join(directory, segments[0]), None, None,
                                       f"the log starts at offset {bases[0]}, after offset {start}: records "
                                       f"{start}-{bases[0] - 1} are missing"))
    return replay.finish()
