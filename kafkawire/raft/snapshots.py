"""Snapshots as the core sees them: the id and control records a state machine snapshot
gets, the voters and kraft.version read back from one at start-up, a fetched snapshot
installed, a frozen one recorded, and the log cleaned below it. A part of RaftCore (see
parts.py); the FetchSnapshot exchange itself is snapshot_fetch.py.
"""
from __future__ import annotations

from typing import cast

from kafkawire.records import ControlRecordType, iter_batches

from . import rpc
from .effects import RaftInvariantError
from .io import ResponseReceived
from .parts import CoreParts
from .snapshot_fetch import SnapshotFetch
from .states import Follower
from .types import OffsetAndEpoch


class SnapshotHandling(CoreParts):
    # --- for the state machine's snapshots ---------------------------------------------------------
    def snapshot_id_for(self, committed_offset: int) -> OffsetAndEpoch:
        """The id a state machine snapshot at ``committed_offset`` (records below it) gets."""
        hw = self.high_watermark()
        if hw is None or committed_offset > hw:
            raise ValueError(f"cannot snapshot at {committed_offset}: it is not committed (high watermark {hw})")
        if committed_offset <= self.log.start_offset:
            snapshot = self.log.latest_snapshot()
            if snapshot is None or committed_offset != snapshot.offset:
                raise ValueError(f"cannot snapshot at {committed_offset}: before the log start {self.log.start_offset}")
            return snapshot
        epoch = self.log.epochs.epoch_for_offset(committed_offset - 1)
        return OffsetAndEpoch(cast(int, epoch), committed_offset)   # committed, so its epoch is known

    def snapshot_control_records(self, snapshot_id: OffsetAndEpoch) -> tuple[int, object | None]:
        """(kraft.version, VotersRecord or None) in force at the end of a snapshot: what a
        snapshot must carry after its header when kraft.version > 0 (KIP-853)."""
        version = self.control.kraft_version_at(snapshot_id.offset - 1)
        if version == 0:
            return 0, None
        return version, self.control.voter_set_at(snapshot_id.offset - 1).to_voters_record()


    # --- start-up --------------------------------------------------------------------------------
    def _load_control_state(self) -> None:
        """Voters and kraft.version from the latest snapshot, then from the log after it."""
        self.control.clear()
        snapshot = self.log.latest_snapshot()
        if snapshot is not None:
            self._apply_snapshot_control(snapshot, self.log.store.read_snapshot(
                snapshot, 0, self.log.store.snapshot_size(snapshot)))
        # The log before the snapshot's end is summarised by the snapshot's records.
        offset = max(self.log.start_offset, snapshot.offset if snapshot is not None else 0)
        while offset < self.log.end_offset:
            data = self.log.store.read(offset, self.config.fetch_max_bytes)
            if not data:
                break
            for batch in iter_batches(data):
                if batch.last_offset >= offset:
                    self.control.apply_batch(batch)
                offset = max(offset, batch.last_offset + 1)

    def _apply_snapshot_control(self, snapshot_id: OffsetAndEpoch, data: bytes) -> None:
        """The KRaftVersion and Voters records of a snapshot's bytes (at start-up)."""
        records = [(record.control_type, record.control_value)
                   for batch in iter_batches(data) if batch.is_control for record in batch
                   if record.control_type in (ControlRecordType.KRAFT_VOTERS, ControlRecordType.KRAFT_VERSION)]
        self._apply_control_records(snapshot_id, records)

    def _apply_control_records(self, snapshot_id: OffsetAndEpoch, records: list[tuple[int, object]]) -> None:
        """Control records in a snapshot take effect at the snapshot's last contained offset."""
        at = snapshot_id.offset - 1
        for control_type, value in records:
            self.control.apply_control_record(at, control_type, value)

    # --- installing, freezing, cleaning --------------------------------------------------------------
    def _handle_fetch_snapshot_response(self, event: ResponseReceived) -> bool:
        partition = rpc.fetch_snapshot_response_partition(event.body)
        handled = self._response_prologue(event.body, partition, nested_leader=True)
        if handled is not None:
            return handled
        return self.snapshot_fetching.handle_response(event, partition)

    def _refuse_fetched_snapshot(self, state: Follower, fetch: SnapshotFetch, problem: str) -> None:
        """A damaged or hostile answer must not replace the log (nor stop the node): the log
        stays as it was and the next fetch starts the snapshot over."""
        state.fetching_snapshot = None
        self.counters["fetched_snapshots_refused"] = self.counters.get("fetched_snapshots_refused", 0) + 1
        self._warn(f"refused snapshot {fetch.snapshot_id} fetched from leader {self.quorum.leader_id()}: {problem}; "
                   f"the log stays [{self.log.start_offset}, {self.log.end_offset})")

    def _install_fetched_snapshot(self, state: Follower, fetch: SnapshotFetch) -> None:
        """A fetched snapshot whose every chunk passed its check: the control state is set from
        the KRaftVersion and Voters records the check kept, not from the snapshot read again."""
        snapshot_id = fetch.snapshot_id
        hw = state.high_watermark
        if hw is not None and snapshot_id.offset < hw:
            raise RaftInvariantError(f"snapshot {snapshot_id} ends before the high watermark {hw}")
        self.log.install_snapshot(snapshot_id)
        self.control.clear()
        self._apply_control_records(snapshot_id, fetch.check.control_records)
        state.fetching_snapshot = None
        state.high_watermark = snapshot_id.offset
        self._pending_load_snapshot = snapshot_id
        self.counters["snapshot_installs"] += 1

    def _handle_snapshot_frozen(self, snapshot_id: OffsetAndEpoch) -> None:
        self.log.snapshot_frozen(snapshot_id)
        if self.config.clean_log_on_snapshot:
            self._clean_log()

    def _clean_log(self) -> None:
        """Drop the log below the latest snapshot that is committed (records a lagging replica
        then gets through FetchSnapshot)."""
        hw = self.quorum.high_watermark()
        snapshot = self.log.latest_snapshot()
        if hw is not None and snapshot is not None and snapshot.offset <= hw:
            self.log.delete_before(snapshot.offset)
            self.control.prune_before(snapshot.offset)
