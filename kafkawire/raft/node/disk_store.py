"""The raft core's LogStore on disk: Kafka's `__cluster_metadata-0` directory.

    store = DiskLogStore("/data/__cluster_metadata-0", segment_bytes=...)
    core = RaftCore(config, store, store.read_election(), ...)
    for op in ready.log_ops: store.apply(op)
    if ready.flush: store.flush()

The directory holds what Kafka's KafkaMetadataLog holds: segments (`%020d.log` with their
indexes), `leader-epoch-checkpoint`, `partition.metadata`, snapshots
(`%020d-%010d.checkpoint`, partial ones as `.checkpoint.part`) and `quorum-state`. Opening it
runs the segment recovery of kafkawire.storage.log (a torn tail is cut and reported), drops
partial snapshots a crash left behind, and rebuilds the epoch cache from the batches
themselves: every batch carries its leader epoch, so the checkpoint file is written for
Kafka's tools but never trusted over the log.
"""
from __future__ import annotations

import logging
import os
import uuid
from typing import BinaryIO

from kafkawire.records import iter_batches
from kafkawire.storage.log import Log, fsync_dir
from kafkawire.storage.snapshot import (PART_SUFFIX, SnapshotId, list_snapshots, parse_snapshot_file_name,
                                        snapshot_file_name)
from kafkawire.storage.state_files import (StateFileError, read_quorum_state, write_leader_epoch_checkpoint,
                                           write_partition_metadata, write_quorum_state)
from kafkawire.raft.io import (Append, DeleteBefore, InstallSnapshot, LogOp, TruncateFully, TruncateTo, WriteSnapshotChunk,
                              unknown_log_op)
from kafkawire.raft.types import ElectionState, OffsetAndEpoch

from .quorum_state_file import election_from_quorum_state, election_to_quorum_state
from .tail_cache import DEFAULT_TAIL_CACHE_BYTES, TailCache

log = logging.getLogger(__name__)

# Kafka's Topic.METADATA_TOPIC_ID (AAAAAAAAAAAAAAAAAAAAAQ).
METADATA_TOPIC_ID = uuid.UUID(int=1)
QUORUM_STATE_FILE = "quorum-state"
EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"


class StoreError(RuntimeError):
    """The log directory is not in a state the node can run from."""


def _to_id(snapshot_id: SnapshotId) -> OffsetAndEpoch:
    return OffsetAndEpoch(snapshot_id.epoch, snapshot_id.end_offset)


def _to_file_id(snapshot_id: OffsetAndEpoch) -> SnapshotId:
    return SnapshotId(snapshot_id.offset, snapshot_id.epoch)


class DiskLogStore:
    def __init__(self, directory, *, segment_bytes: int = 1 << 30, fsync: bool = True,
                 segment_ms: int | None = None, tail_cache_bytes: int = DEFAULT_TAIL_CACHE_BYTES):
        self.directory = os.fspath(directory)
        self.fsync = fsync
        os.makedirs(self.directory, exist_ok=True)
        self._remove_partial_snapshots()
        self._snapshots = sorted((_to_id(s) for s in list_snapshots(self.directory)),
                                 key=lambda s: (s.offset, s.epoch))
        # The appends' bytes are written on the driver's disk thread, before the fsync that
        # covers them (prepare_flush): written on the loop, one waited for the pages that fsync
        # was writing back (benchmarks/README.md, "Raft log writes on the disk thread").
        self.log = Log(self.directory, segment_bytes=segment_bytes, contiguous_offsets=True,
                       segment_ms=segment_ms, deferred_writes=True)
        for report in self.log.recovery_reports:
            if report.truncated:
                log.warning("log recovery cut %d bytes of %s: %s", report.truncated_bytes, report.file,
                            report.reason)
        self._epochs = self._scan_epochs()
        # The newest batches as written, for the reads of the log's tail (tail_cache.py): filled
        # by apply's appends, so it starts empty and every read below what it holds goes to the file.
        self._tail = TailCache(tail_cache_bytes)
        self._written_epochs: list[tuple[int, int]] | None = None   # None: not written since the store opened
        if not os.path.exists(os.path.join(self.directory, PARTITION_METADATA_FILE)):
            write_partition_metadata(os.path.join(self.directory, PARTITION_METADATA_FILE), METADATA_TOPIC_ID,
                                     fsync=fsync)
        self._partial: dict[OffsetAndEpoch, BinaryIO] = {}
        self._partial_sizes: dict[OffsetAndEpoch, int] = {}   # the bytes its chunks brought
        self._installing: tuple[OffsetAndEpoch, BinaryIO, int] | None = None   # prepare_install ran, finish_install not yet

    def _remove_partial_snapshots(self) -> None:
        for name in os.listdir(self.directory):
            parsed = parse_snapshot_file_name(name)
            if parsed is not None and parsed[1] in ("part", "deleted"):
                log.info("removing %s left by an earlier run", name)
                os.remove(os.path.join(self.directory, name))

    def _scan_epochs(self) -> list[tuple[int, int]]:
        """The epoch cache from the batches. The base offset and the leader epoch are outside
        the CRC: a batch whose offset does not follow the one before, or whose epoch goes back,
        is corrupt (also in a segment recovery did not scan), and the log is cut there, as for
        a bad CRC, with a warning."""
        entries: list[tuple[int, int]] = []
        start = self.log.log_start_offset
        expected = None
        for batch in self.log.batches():
            epoch = batch.partition_leader_epoch
            if expected is not None and batch.base_offset != expected:
                return self._cut_corrupt_tail(entries, expected, f"a batch starts at offset {batch.base_offset}, "
                                                                  f"not at the next offset {expected}")
            if entries and epoch < entries[-1][0]:
                return self._cut_corrupt_tail(entries, batch.base_offset, f"the batch at offset {batch.base_offset} "
                                              f"has leader epoch {epoch}, below the epoch {entries[-1][0]} before it")
            if not entries or entries[-1][0] != epoch:
                entries.append((epoch, max(batch.base_offset, start)))
            expected = batch.next_offset
        return entries

    def _cut_corrupt_tail(self, entries: list[tuple[int, int]], offset: int, reason: str) -> list[tuple[int, int]]:
        log.warning("log recovery cut %s at offset %d (log end offset was %d): %s", self.directory, offset,
                    self.log.log_end_offset, reason)
        self.log.truncate_to(offset)
        if self.fsync:
            self.log.flush()
        return entries

    # --- LogStore ------------------------------------------------------------------------------
    def start_offset(self) -> int:
        if self._installing is not None:
            return self._installing[0].offset
        return self.log.log_start_offset

    def end_offset(self) -> int:
        if self._installing is not None:
            return self._installing[0].offset
        return self.log.log_end_offset

    def epoch_entries(self) -> list[tuple[int, int]]:
        return list(self._epochs)

    def read(self, offset: int, max_bytes: int) -> bytes:
        return self._read(offset, max_bytes)

    def _read(self, offset: int, max_bytes: int, stop_offset: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset`` (Log.read), from the tail cache when it
        holds that batch; ``stop_offset``: the cache may leave out batches from there on."""
        if self._installing is not None or offset >= self.log.log_end_offset:
            return b""
        offset = max(offset, self.log.log_start_offset)
        if self._tail.end_offset() == self.log.log_end_offset:
            cached = self._tail.read(offset, max_bytes, stop_offset)
            if cached is not None:
                return cached
        return self.log.read(offset, max_bytes).data

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        return list(self._snapshots)

    def snapshot_path(self, snapshot_id: OffsetAndEpoch) -> str:
        return os.path.join(self.directory, snapshot_file_name(_to_file_id(snapshot_id)))

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int:
        if self._installing is not None and self._installing[0] == snapshot_id:
            return self._installing[2]      # maybe not renamed yet
        return os.path.getsize(self.snapshot_path(snapshot_id))

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        if self._installing is not None and self._installing[0] == snapshot_id:
            return os.pread(self._installing[1].fileno(), max_bytes, position)    # maybe not renamed yet
        with open(self.snapshot_path(snapshot_id), "rb") as f:
            f.seek(position)
            return f.read(max_bytes)

    # --- quorum-state ------------------------------------------------------------------------------
    def read_election(self) -> ElectionState | None:
        path = os.path.join(self.directory, QUORUM_STATE_FILE)
        if not os.path.exists(path):
            return None
        try:
            data, _version = read_quorum_state(path)
        except StateFileError as exc:
            raise StoreError(str(exc)) from None
        return election_from_quorum_state(data)

    def write_election(self, election: ElectionState, kraft_version: int) -> None:
        data, version = election_to_quorum_state(election, kraft_version)
        write_quorum_state(os.path.join(self.directory, QUORUM_STATE_FILE), data, version, fsync=self.fsync)

    # --- applying a Ready's log operations ------------------------------------------------------
    def apply(self, op: LogOp) -> None:
        if self._installing is not None:
            raise StoreError(f"log operation {type(op).__name__} while the install of snapshot "
                             f"{self._installing[0]} is not finished (finish_install first)")
        match op:
            case Append():
                if op.base_offset != self.log.log_end_offset:
                    raise StoreError(f"append at offset {op.base_offset} but the log ends at "
                                     f"{self.log.log_end_offset}")
                self.log.append(op.batch)
                self._tail.append(op.batch, op.base_offset, op.last_offset, self.log.active_segment.base_offset)
                if not self._epochs or self._epochs[-1][0] != op.epoch:
                    self._epochs.append((op.epoch, op.base_offset))
            case TruncateTo():
                self.log.truncate_to(op.offset)
                self._tail.truncate_from(op.offset)
                self._epochs = [(e, s) for e, s in self._epochs if s < op.offset]
            case WriteSnapshotChunk():
                self.prepare_chunk(op)()
            case InstallSnapshot():
                self.prepare_install(op.snapshot_id)()
                self.finish_install()
            case TruncateFully():
                self._truncate_fully(op.offset)
            case DeleteBefore():
                self.log.delete_segments_before(op.offset)
                self._tail.drop_before(self.log.log_start_offset)
                self._epochs = _epochs_from(self._epochs, op.offset)
                self._delete_snapshots_before(op.keep_snapshot.offset)
            case _:
                unknown_log_op(op)

    def _truncate_fully(self, offset: int) -> None:
        self._tail.clear()
        self.log.truncate_fully_and_start_at(offset)
        self._epochs = []
        self._delete_snapshots_before(offset)
        self.log.flush()
        if self.fsync:
            fsync_dir(self.directory)

    def prepare_chunk(self, op: WriteSnapshotChunk):
        """A fetched snapshot's chunk split for the driver's disk thread: this half, on the loop,
        opens the file and checks the chunk's position against the bytes the chunks before it
        brought (a wrong one stops the node in the core's step, as before); the function it
        returns writes it, after the chunks before it (one disk thread: in order)."""
        f = self._partial.get(op.snapshot_id)
        if f is None:
            path = self.snapshot_path(op.snapshot_id) + PART_SUFFIX
            f = self._partial[op.snapshot_id] = open(path, "w+b", buffering=0)   # read while installed, before its rename
        size = self._partial_sizes.get(op.snapshot_id, 0)
        restart = op.position == 0 and size > 0     # the core starts over (it refused the copy it fetched)
        if restart:
            size = 0
        if size != op.position:
            raise StoreError(f"snapshot {op.snapshot_id} chunk at byte {op.position}, but {size} bytes are written")
        self._partial_sizes[op.snapshot_id] = size + len(op.data)
        data = memoryview(op.data)

        def write() -> None:
            if restart:
                f.seek(0)
                f.truncate()
            rest = data
            while rest:
                rest = rest[f.write(rest):]
        return write

    def prepare_install(self, snapshot_id: OffsetAndEpoch):
        """A fetched snapshot's install split for the driver's disk thread, as prepare_flush is.
        This half, on the event loop, makes the store say "installed" to its readers (the
        snapshot listed, the log empty from its offset, no epochs) without touching the disk;
        the function it returns does the disk work in the order a crash needs (the snapshot
        fsynced, renamed and its directory fsynced: durable; only then the log it replaces
        emptied, older snapshots removed, and that made durable) and may run on another thread.
        Until finish_install (on the loop, once that function returned) the log is not the
        loop's: apply refuses log operations and prepare_flush leaves the log to the install."""
        f = self._partial.pop(snapshot_id)
        size = self._partial_sizes.pop(snapshot_id, 0)
        offset, directory, fsync = snapshot_id.offset, self.directory, self.fsync
        final = self.snapshot_path(snapshot_id)
        older = [self.snapshot_path(s) for s in self._snapshots if s.offset < offset]
        self._snapshots = [s for s in self._snapshots if s.offset >= offset]
        self.add_snapshot(snapshot_id)
        self._epochs = []
        self._tail.clear()
        self._installing = (snapshot_id, f, size)

        def install() -> None:
            if fsync:
                os.fsync(f.fileno())
            os.replace(final + PART_SUFFIX, final)
            if fsync:
                fsync_dir(directory)     # the snapshot durable before the log it replaces goes
            self.log.truncate_fully_and_start_at(offset)
            for path in older:
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass
            self.log.flush()
            if fsync:
                fsync_dir(directory)
        return install

    def finish_install(self) -> None:
        """On the loop, once the function prepare_install returned has run: the log is the loop's again."""
        if self._installing is not None:
            self._installing[1].close()
            self._installing = None

    def install_pending(self) -> bool:
        return self._installing is not None

    def installing_at(self) -> int | None:
        """The offset the log restarts at while an install's disk half may be cutting it, else
        None: what readers of ``self.log`` beside the core (MetadataTopic) must show meanwhile."""
        return None if self._installing is None else self._installing[0].offset

    def _delete_snapshots_before(self, offset: int) -> None:
        for sid in [s for s in self._snapshots if s.offset < offset]:
            self._snapshots.remove(sid)
            try:
                os.remove(self.snapshot_path(sid))
            except FileNotFoundError:
                pass

    def add_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """A snapshot file that is now complete and durable."""
        if snapshot_id not in self._snapshots:
            self._snapshots.append(snapshot_id)
            self._snapshots.sort(key=lambda s: (s.offset, s.epoch))

    def flush(self) -> None:
        self.prepare_flush()()

    def prepare_flush(self):
        """The flush split for the driver's disk thread: this half, on the event loop, takes
        what the Readys applied so far wrote; the function it returns makes that durable (the
        log's writes and fsyncs, then the epoch checkpoint as it stood here) and may run on another
        thread while later Readys write on. One such function runs at a time, in order."""
        # While an install runs on the disk thread the log is its own, and it flushes it.
        sync_log = None
        if self._installing is None:
            sync_log = self.log.prepare_flush() if self.fsync else self.log.prepare_writes()
        epochs = None
        if self._epochs != self._written_epochs:
            epochs = self._written_epochs = list(self._epochs)
        path, fsync = os.path.join(self.directory, EPOCH_CHECKPOINT_FILE), self.fsync

        def sync() -> None:
            if sync_log is not None:
                sync_log()
            if epochs is not None:
                write_leader_epoch_checkpoint(path, epochs, fsync=fsync)
        return sync

    def close(self) -> None:
        if self._installing is not None:
            self._installing[1].close()
            self._installing = None
        for f in self._partial.values():
            f.close()
        self._partial.clear()
        self._partial_sizes.clear()
        self.log.close()

    # --- for the state machine and the tools -------------------------------------------------
    def data_batches(self, from_offset: int, to_offset: int):
        """Committed batches holding offsets in [from_offset, to_offset), in order."""
        offset = max(from_offset, self.log.log_start_offset)
        if offset < to_offset and self._installing is None and self._tail.end_offset() == self.log.log_end_offset:
            cached = self._tail.batches_from(offset, to_offset)
            if cached is not None:
                for data in cached:
                    yield from iter_batches(data)
                return
        while offset < to_offset:
            data = self._read(offset, 1 << 20, to_offset)
            if not data:
                return
            for batch in iter_batches(data):
                if batch.last_offset < offset:
                    continue
                if batch.base_offset >= to_offset:
                    return
                yield batch
                offset = batch.last_offset + 1


def _epochs_from(entries: list[tuple[int, int]], start: int) -> list[tuple[int, int]]:
    """Kafka's truncateFromStart: epochs wholly before ``start`` go; the one holding it starts there."""
    kept = [(e, s) for e, s in entries if s >= start]
    before = [(e, s) for e, s in entries if s < start]
    if before and (not kept or kept[0][1] > start):
        kept.insert(0, (before[-1][0], start))
    return kept
