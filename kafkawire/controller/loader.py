"""The committed metadata image of a node that does not run the controller: Kafka's
MetadataLoader as a broker runs it (metadata/src/main/java/org/apache/kafka/image/loader).

    loader = MetadataLoader()
    driver.state_machine = loader        # or driver.register(loader): any RaftListener slot
    loader.image                         # the MetadataImage of every COMMITTED record so far
    loader.applied_offset                # the offset of the last record it holds (-1: none)

It replays what the raft driver hands it (``on_snapshot_loaded``, ``on_committed``: committed
batches only, in order) with the controller's own replay (ControllerState: metadata
transactions, feature checks, the problems logged), and never writes: no handlers, no
registration, nothing to lead. As the driver's state machine it also gives the records of
a metadata snapshot (Kafka's broker writes snapshots of the log it follows, too).

Why a second replay here and none on a controller node: a node running the controller already
applies every record to its ControllerState, and its broker reads frozen views of that state at
the commit (controller/committed.py) instead of replaying the records again; a broker-only node
has no controller state to take views of, so this loader is its only replay.
"""
from __future__ import annotations

from typing import Callable

from kafkawire.metadata.image import MetadataImage
from kafkawire.raft.contract import SnapshotLoadInSteps

from .snapshot import image_records, iter_image_records
from .state import ControllerState, SnapshotLoad
from .state_release import release_in_steps
from .versions import SUPPORTED_FEATURES

__all__ = ["MetadataLoader"]


class MetadataLoader:
    """A read-only replay of the committed __cluster_metadata log into a MetadataImage."""

    def __init__(self, supported_features: dict[str, tuple[int, int]] | None = None):
        self.supported_features = dict(supported_features or SUPPORTED_FEATURES)
        self.state = ControllerState(self.supported_features)
        self.published: list[Callable[[], None]] = []     # told after each batch or snapshot applied

    @property
    def image(self) -> MetadataImage:
        return self.state.image

    @property
    def applied_offset(self) -> int:
        """The offset of the last data record applied (-1 before any): Kafka's lastAppliedOffset,
        the broker's currentMetadataOffset in its heartbeats."""
        return self.state.next_offset - 1

    @property
    def in_transaction(self) -> bool:
        return self.state.in_transaction

    # --- RaftListener -------------------------------------------------------------------------
    def on_committed(self, base_offset: int, epoch: int, append_time_ms: int, records: list[bytes]) -> None:
        self.state.apply_batch(base_offset, epoch, append_time_ms, records)
        self._publish()

    def on_snapshot_loaded(self, snapshot_id, records: list[bytes]) -> None:
        self.state.load_snapshot(snapshot_id.offset, snapshot_id.epoch, records)
        self._publish()

    def begin_snapshot_load(self, snapshot_id) -> SnapshotLoadInSteps:
        """The driver's load in steps (contract.py): the image readers see stays the old one
        until ``finish`` swaps the new one in whole, then publishes it."""
        load = SnapshotLoad(self.state.supported_features, snapshot_id.offset, snapshot_id.epoch)

        def finish():
            old = self.state.adopt(load.result())
            self._publish()
            return release_in_steps(old)    # the old state, as large as the new: freed at once it held the loop
        return SnapshotLoadInSteps(load.add, finish, load.prepare)

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None:
        pass                 # who leads the quorum does not change the image

    def _publish(self) -> None:
        for publish in self.published:
            publish()

    # --- the rest of a StateMachine (a broker-only node's driver snapshots the log with it) --------
    def snapshot_records(self) -> list[bytes]:
        return image_records(self.state.image, self.state.feature_order)

    def frozen_snapshot(self):
        view, feature_order = self.state.image.frozen(), list(self.state.feature_order)
        return lambda: iter_image_records(view, feature_order)

    def handlers(self) -> dict:
        return {}

    async def run(self) -> None:
        return None
