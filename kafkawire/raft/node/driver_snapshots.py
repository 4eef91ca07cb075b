"""The raft driver's snapshot duties (RaftDriver's part, kafkawire.raft.node.driver): when a
snapshot is due, freezing the state machine's image and writing it off the loop, publishing it
to the core, freezing what survives for the garbage collector (gc_pauses.freeze_after_load), and
cleaning the log and old snapshots behind it."""
from __future__ import annotations

import asyncio
import logging
import os
import time

from kafkawire.raft.io import CleanLog, SnapshotFrozen
from kafkawire.raft.types import OffsetAndEpoch

from . import gc_pauses
from .driver_state import DriverState
from .snapshot_writer import FrozenImage, discard, freeze_image, write_image

log = logging.getLogger(__name__)

def _frozen_records(machine):
    """The state machine's records as of now: a function of a frozen view, to run on the
    worker thread, when it can freeze one (``frozen_snapshot``); else the records themselves."""
    freeze = getattr(machine, "frozen_snapshot", None)
    return freeze() if freeze is not None else machine.snapshot_records()


def snapshot_due(bytes_since: int, max_bytes: int, ms_since: int, max_interval_ms: int) -> bool:
    """Kafka's SnapshotGenerator: metadata.log.max.record.bytes.between.snapshots replayed, or
    metadata.log.max.snapshot.interval.ms elapsed, where an interval of 0 turns the time rule
    off (it used to mean a snapshot on every tick here)."""
    if bytes_since >= max_bytes:
        return True
    return max_interval_ms != 0 and ms_since >= max_interval_ms


class SnapshotDuties(DriverState):
    """RaftDriver's snapshots (a mixin: it uses the driver's core, store, state machine and _step)."""

    def _schedule_snapshot_check(self) -> None:
        """After a Ready that committed records: whether to snapshot is decided in a loop step
        of its own, never inside _apply (writing one steps the core: SnapshotFrozen, CleanLog)."""
        if self._snapshot_check_scheduled or self._snapshot_task is not None:
            return
        self._snapshot_check_scheduled = True
        asyncio.get_running_loop().call_soon(self._maybe_snapshot)

    def _maybe_snapshot(self) -> None:
        """Kafka's SnapshotGenerator: after enough bytes or enough time since the last one."""
        self._snapshot_check_scheduled = False
        if self.failure is not None or self._closing or self._snapshot_task is not None:
            return
        now = self.clock()
        if self.state_machine is None or self.applied_offset <= self.store.start_offset() or self._load is not None:
            return
        if self.state_machine.in_transaction:
            return      # an open metadata transaction is not in the image yet: snapshot after it
        if not snapshot_due(self._bytes_since_snapshot, self.snapshot_min_bytes,
                            now - self._last_snapshot_ms, self.snapshot_interval_ms):
            return
        snapshots = self.store.snapshot_ids()
        if snapshots and snapshots[-1].offset >= self.applied_offset:
            return
        self._snapshot_task = asyncio.ensure_future(self.write_snapshot(now))

    async def write_snapshot(self, now: int | None = None) -> OffsetAndEpoch | None:
        """Snapshot the state machine at the applied offset; returns its id once it is durable
        and the core knows it. The image is frozen here, on the loop (in O(1) per partition when
        the state machine has ``frozen_snapshot``); a worker thread encodes and writes it."""
        now = self.clock() if now is None else now
        core, machine = self.running, self.state_machine
        if machine is None:
            raise RuntimeError(f"node {self.node_id} has no state machine to snapshot")
        if self._load is not None:
            return None         # the state machine holds the state before the snapshot loading
        try:
            snapshot_id = core.snapshot_id_for(self.applied_offset)
            if snapshot_id in self.store.snapshot_ids():
                return None
            version, voters = core.snapshot_control_records(snapshot_id)
            image = freeze_image(snapshot_id, version, voters, _frozen_records(machine), now)
            self._bytes_since_snapshot = 0
            self._last_snapshot_ms = now
            path = await asyncio.get_running_loop().run_in_executor(None, write_image, self.store.directory, image)
        except Exception as exc:     # the disk refused the snapshot: stop, as a failed write in a step did
            self._stop_on_failure(exc)
            return None
        finally:
            self._snapshot_task = None
        return self._publish_snapshot(image, path)

    def _publish_snapshot(self, image: FrozenImage, path: str) -> OffsetAndEpoch | None:
        """Back on the loop: the store and the core learn of the written snapshot, then
        retention may clean the log below it."""
        snapshot_id = image.snapshot_id
        if self.failure is not None or self._closing:
            return None
        if snapshot_id.offset < self.store.start_offset():
            discard(path)     # a newer snapshot was installed while this one was written
            return None
        self.store.add_snapshot(snapshot_id)
        log.info("node %d: wrote snapshot %s (%d records)", self.config.node_id, snapshot_id, image.count)
        # What the snapshot holds is the state machine's long-lived image: frozen now (as after a
        # load), the next full collections walk only what is made after it, at most a snapshot
        # interval's records, not the million objects a cluster's growth left since the last
        # freeze (a fencing at 1M partitions right after the build had a full collection of
        # 0.5-0.8 s on each voter, walking ~1.06M objects; benchmarks/README.md, "The fence end to end").
        gc_pauses.freeze_after_load(image.count or 0, what="a snapshot's write")
        self._step(SnapshotFrozen(self.clock(), snapshot_id))
        self._maybe_clean()
        self._schedule_snapshot_check()     # commits that came while it was written may call for the next
        return snapshot_id

    def _maybe_clean(self) -> None:
        """Kafka's metadata log retention: once the log is over metadata.max.retention.bytes, or
        its oldest segment over metadata.max.retention.ms, what the latest snapshot covers goes."""
        if self.store.install_pending():
            return      # the install empties the log anyway; it is the disk thread's meanwhile
        log_ = self.store.log
        over_size = self.retention_bytes >= 0 and log_.size > self.retention_bytes
        oldest = log_.segments[0]
        try:
            age_ms = (time.time() - os.path.getmtime(oldest.log_path)) * 1000
        except OSError:
            age_ms = 0
        over_age = self.retention_ms >= 0 and age_ms > self.retention_ms and len(log_.segments) > 1
        if over_size or over_age:
            before = self.store.start_offset()
            self._step(CleanLog(self.clock()))
            if self.store.start_offset() != before:
                log.info("node %d: log start moved from %d to %d (retention: %d bytes, oldest segment %d ms)",
                         self.config.node_id, before, self.store.start_offset(), log_.size, age_ms)
