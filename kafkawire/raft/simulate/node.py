"""One simulated replica: a RaftCore, its in-memory disk, and a state machine on top.

The state machine applies committed data records in order (each record's value is a client's
unique payload), takes snapshots of what it applied, and reloads from a snapshot the core
installed. It is deliberately simple: the invariants compare what each node applied.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkawire.records import ControlRecordType, iter_batches
from kafkawire.records.kraft_control import encode_value
from kafkawire.storage.snapshot import SnapshotBuilder, SnapshotId
from kafkawire.raft.config import RaftConfig
from kafkawire.raft.core import RaftCore
from kafkawire.raft.io import Ready
from kafkawire.raft.types import OffsetAndEpoch

from .store import MemoryLogStore
from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
from kafkawire.records import RecordBatchBuilder

LISTENER = "CONTROLLER"


def address_of(node_id: int) -> tuple[str, int]:
    return f"node{node_id}", 9093


@dataclass
class StateMachine:
    applied: dict[int, bytes] = field(default_factory=dict)   # offset -> value
    applied_offset: int = 0                                    # next offset to apply
    last_snapshot_offset: int = 0

    handed: list[int] = field(default_factory=list)           # offsets of the last apply, control too

    def apply_committed(self, store: MemoryLogStore, through: int) -> list[tuple[int, bytes]]:
        """Apply data records in [applied_offset, through); returns what was applied. Every
        record's offset in the range, control records too, lands in ``handed``, in order."""
        out: list[tuple[int, bytes]] = []
        self.handed = []
        if through <= self.applied_offset:
            return out
        data = store.read(self.applied_offset, 1 << 30)
        for batch in iter_batches(data):
            for record in batch:
                if self.applied_offset <= record.offset < through:
                    self.handed.append(record.offset)
                    if not batch.is_control:
                        value = bytes(record.value)
                        self.applied[record.offset] = value
                        out.append((record.offset, value))
        self.applied_offset = max(self.applied_offset, through)
        return out

    def load_snapshot(self, data: bytes, snapshot_id: OffsetAndEpoch) -> None:
        self.applied = {}
        for batch in iter_batches(data):
            if batch.is_control:
                continue
            for record in batch:
                offset = int(bytes(record.key))
                self.applied[offset] = bytes(record.value)
        self.applied_offset = snapshot_id.offset
        self.last_snapshot_offset = snapshot_id.offset

    def snapshot_bytes(self, snapshot_id: OffsetAndEpoch, control_records, now_ms: int) -> bytes:
        builder = SnapshotBuilder(SnapshotId(snapshot_id.offset, snapshot_id.epoch),
                                  last_contained_log_timestamp=now_ms, control_records=control_records,
                                  time_ms=lambda: now_ms)
        items = sorted((o, v) for o, v in self.applied.items() if o < snapshot_id.offset)
        # Each record's key is the log offset it was applied from, so a reloaded state machine
        # can be compared offset by offset with the others.
        for i in range(0, len(items), 500):
            chunk = items[i:i + 500]
            b = RecordBatchBuilder(base_offset=builder._next_offset, partition_leader_epoch=snapshot_id.epoch)
            for offset, value in chunk:
                b.append(str(offset).encode(), value, (), now_ms)
            builder.append_batch(b.build())
        return builder.finish()


class SimNode:
    def __init__(self, config: RaftConfig, seed: int, machine_factory=None):
        self.config = config
        self.machine_factory = machine_factory or StateMachine
        self.seed = seed
        self.store = MemoryLogStore()
        self.alive = False
        self.incarnation = 0
        self.core: RaftCore | None = None
        self.machine = self.machine_factory()
        self.loaded_at_boot: OffsetAndEpoch | None = None
        self.max_versions: dict[int, int] = {}   # api key -> highest version this node speaks
        self.reported_hw: int | None = None

    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def running(self) -> RaftCore:
        """The core of a booted node; a crashed (or never booted) node has none."""
        if self.core is None:
            raise RuntimeError(f"node {self.node_id} is not running (crashed or never booted)")
        return self.core

    def boot(self, now_ms: int, core_factory=None) -> Ready:
        self.incarnation += 1
        self.alive = True
        self.machine = self.machine_factory()
        latest = max(self.store.snapshots, key=lambda s: (s.offset, s.epoch), default=None)
        self.loaded_at_boot = latest
        if latest is not None:
            self.machine.load_snapshot(self.store.snapshots[latest], latest)
        make = core_factory or RaftCore
        core = make(self.config, self.store, self.store.election, now_ms=now_ms,
                    seed=self.seed * 1000 + self.incarnation)
        self.core = core
        return core.start()

    def crash(self) -> None:
        self.alive = False
        self.core = None
        self.store.crash()

    def persist(self, ready: Ready, *, until: str = "all") -> None:
        """Steps 1-2 of the Ready contract. ``until`` cuts it short for crash injection:
        "election" (quorum-state written, nothing else), "ops" (log written, not flushed)."""
        if ready.election is not None:
            self.store.election = ready.election
        if until == "election":
            return
        for op in ready.log_ops:
            self.store.apply(op)
        if until == "ops":
            return
        if ready.flush and self.config.async_flush:
            self.store.request_flush(ready.flush_id)   # durable when the world delivers its completion
        elif ready.flush:
            self.store.flush()

    def maybe_snapshot(self, now_ms: int, every: int):
        """Take a state machine snapshot when enough was applied since the last one."""
        core = self.running
        hw = core.high_watermark()
        if hw is None or self.machine.applied_offset - self.machine.last_snapshot_offset < every:
            return None
        offset = min(self.machine.applied_offset, hw)
        if offset <= max(self.machine.last_snapshot_offset, core.log.start_offset):
            return None
        snapshot_id = core.snapshot_id_for(offset)
        if snapshot_id in self.store.snapshots:
            return None
        version, voters = core.snapshot_control_records(snapshot_id)
        control = []
        if version > 0:
            control.append((ControlRecordType.KRAFT_VERSION, encode_value(KRaftVersionRecord(version=0, k_raft_version=version))))
            control.append((ControlRecordType.KRAFT_VOTERS, encode_value(voters)))
        self.store.add_snapshot(snapshot_id, self.machine.snapshot_bytes(snapshot_id, control, now_ms))
        self.machine.last_snapshot_offset = snapshot_id.offset
        return snapshot_id
