"""What RaftDriver's parts share: the state ``RaftDriver.__init__`` sets and the driver methods
each part calls, declared once for the type checker. The parts (driver_disk.DiskWork,
driver_snapshots.SnapshotDuties, driver_appends.AppendQueueing, driver_load.SnapshotLoads) are mixins of RaftDriver, split
out of kafkawire.raft.node.driver to keep each module small; this class has no behaviour."""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import itertools
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from kafkawire.raft.config import RaftConfig
    from kafkawire.raft.contract import StateMachine
    from kafkawire.raft.core import RaftCore
    from kafkawire.raft.io import Ready

    from .disk_store import DiskLogStore
    from .driver_appends import CommitRate, _QueuedAppend
    from .driver_load import SnapshotLoading
    from .metrics import RaftMetrics


class DriverState:
    config: RaftConfig
    store: DiskLogStore
    clock: Callable[[], int]
    metrics: RaftMetrics
    failure: BaseException | None
    state_machine: StateMachine | None
    applied_offset: int
    snapshot_min_bytes: int
    snapshot_interval_ms: int
    retention_bytes: int
    retention_ms: int
    append_queue_limit: int
    append_uncommitted_limit: int
    append_queue_max_ms: int
    _commit_rate: CommitRate
    _closing: bool
    _snapshot_check_scheduled: bool
    _snapshot_task: asyncio.Future | None
    _append_queue: collections.deque[_QueuedAppend]
    _appends: dict[object, list[_QueuedAppend]]
    _queued_records: int
    _uncommitted_records: int
    _tokens: itertools.count
    _drain_scheduled: bool
    _drain_after_flush: bool
    _disk_thread: concurrent.futures.ThreadPoolExecutor
    _flushing: asyncio.Future | None
    _flush_requested: int
    _flush_done: int
    _held: collections.deque[tuple[int, int, Ready]]
    _disk_writes: int
    _disk_writes_done: int
    _installing: concurrent.futures.Future | None
    _unreported_flush: int
    _load: SnapshotLoading | None

    if TYPE_CHECKING:
        @property
        def running(self) -> RaftCore: ...

        @property
        def node_id(self) -> int: ...

        def _step(self, event) -> None: ...

        def _stop_on_failure(self, exc: Exception) -> None: ...

        def _apply_effects(self, ready: Ready) -> None: ...

        def _drain_appends(self) -> None: ...

        def _all_listeners(self) -> list: ...

        def register(self, listener) -> None: ...

        def _commit_through(self, through: int) -> None: ...

        def _apply_committed(self, through: int, deadline: float | None = None) -> bool: ...

        def _complete_appends(self, group, last_offset: int, now: int) -> None: ...

        def _settled(self, token) -> list: ...

        def _schedule_snapshot_check(self) -> None: ...

        def is_leader(self) -> bool: ...

        def leader_caught_up(self) -> bool: ...

        def high_watermark(self) -> int: ...
