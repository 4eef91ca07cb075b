"""The active controller's writes in flight (Kafka's QuorumController with its purgatory, the
DeferredEventQueue, and OffsetControlManager's rollback to the last committed offset).

A write's records are applied to the controller's state as they are appended, before they
commit, so the next write is generated from a state that already holds them, and several
writes wait for their commit at once; each is answered when the batch holding its last record
commits, in log order. When leadership is lost with writes in flight, each is answered
NOT_CONTROLLER and the state goes back to what is committed (Kafka's resetToLastCommitted).

Kafka keeps its state in timeline data structures that revert to an offset. Here the committed
image (committed.py) is kept while writes go well, and a rollback goes back to it, with what the
state keeps beside it (a Mark taken before each write), at the cost of what the writes in flight
touched (rollback.py). Only when that cannot be done (a record in flight that does not decode)
is the state rebuilt from what the raft log holds committed (its latest snapshot and the
committed batches after it, as a listener registering with the raft client gets them), which
costs what loading the node's metadata costs (16 s at 1M partitions, on the event loop).

Bounds (kafkawire's; Kafka's controller queues events without a bound and its raft client
refuses appends past its accumulator's memory): a write waits for its turn while
``MAX_UNCOMMITTED_RECORDS`` records are in flight, until some commit; its deadline applies as
in Kafka's event queue (REQUEST_TIMED_OUT), never a lost leadership.
"""
from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass, field

from .bounded import MAX_RECORDS_PER_USER_OP
from .committed import CommittedImage
from .errors import ApiError
from .rollback import try_fast_rollback
from .state import ControllerState, Mark
from .stats import ReplayStats

# The most records in flight (applied, not committed yet) before a new write waits for its
# turn: Kafka's largest operation (QuorumController.MAX_RECORDS_PER_USER_OP, bounded.py), so
# in flight are at most twice that, below the raft driver's own bounds (10,000 records queued,
# 20,000 uncommitted, kafkawire.raft.node.driver): a controller write is never refused there.
MAX_UNCOMMITTED_RECORDS = MAX_RECORDS_PER_USER_OP


@dataclass(eq=False)
class InFlight:
    """One write applied ahead of its commit; ``answer`` resolves with None once its last
    record commits, or with the ApiError it must be answered with."""
    last_offset: int
    records: int
    answer: asyncio.Future
    values: list = field(default_factory=list)     # the records, which a rollback may undo (rollback.py)
    mark: Mark | None = None                        # the state's, from before they were applied


class WritePipeline:
    def __init__(self, state: ControllerState, replay_committed, on_progress,
                 max_uncommitted_records: int = MAX_UNCOMMITTED_RECORDS, committed: CommittedImage | None = None):
        """``replay_committed(listener)``: the RaftHandle's, which a rollback reads;
        ``on_progress()``: called whenever writes leave the pipeline (room for waiting ones);
        ``committed``: the committed image of ``state`` (committed.py), told of every write
        applied ahead, committed or rolled back."""
        self.state = state
        self.committed_image = committed or CommittedImage(state)
        self.replay_committed = replay_committed
        self.on_progress = on_progress
        self.max_uncommitted_records = max_uncommitted_records
        self._in_flight: collections.deque[InFlight] = collections.deque()
        self._in_flight_records = 0

    # --- queries --------------------------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        """Writes applied and not committed yet."""
        return len(self._in_flight)

    def has_room(self) -> bool:
        return self._in_flight_records < self.max_uncommitted_records

    def last_answer(self) -> asyncio.Future | None:
        """The answer of the newest write in flight (a write without records waits for it, as
        Kafka's read-only operations wait for the purgatory's highest pending offset)."""
        return self._in_flight[-1].answer if self._in_flight else None

    def is_in_flight(self, write: InFlight) -> bool:
        return not write.answer.done()

    # --- a write goes in flight and commits ----------------------------------------------------
    def apply_ahead(self, base_offset: int, epoch: int, append_time_ms: int, records: list[bytes]) -> InFlight:
        """Apply a write's records, which the raft log gives the offsets from ``base_offset``."""
        self.committed_image.before_ahead()
        mark = self.state.mark()
        self.state.apply_batch(base_offset, epoch, append_time_ms, records)
        write = InFlight(base_offset + len(records) - 1, len(records), asyncio.get_running_loop().create_future(),
                         records, mark)
        self.committed_image.applied_ahead(write.last_offset)
        self._in_flight.append(write)
        self._in_flight_records += len(records)
        return write

    def applied_ahead(self, base_offset: int, records: list[bytes]) -> bool:
        """Whether this committed batch is writes the state already holds (applied ahead): it
        starts where the oldest write in flight starts and ends where one of them ends (the
        raft log puts whole appends in a batch, never part of one). Any other batch (one that
        another writer queued before the writes, below their offsets) is not, even when it ends
        below the state's end: taken for theirs, it would never be applied (issue 28)."""
        if not self._in_flight:
            return False
        oldest = self._in_flight[0]
        if base_offset != oldest.last_offset - oldest.records + 1:
            return False
        last = base_offset + len(records) - 1
        for write in self._in_flight:
            if write.last_offset >= last:
                return write.last_offset == last
        return False

    def committed(self, base_offset: int, records: list[bytes]) -> None:
        """A batch applied ahead committed: answer every write it ends (in order)."""
        last = base_offset + len(records) - 1
        self.committed_image.committed_through(last)
        while self._in_flight and self._in_flight[0].last_offset <= last:
            write = self._in_flight.popleft()
            self._in_flight_records -= write.records
            _answer(write, None)
        self.on_progress()

    # --- leadership lost ------------------------------------------------------------------------
    def roll_back(self, error: ApiError) -> int:
        """Answer every write in flight with ``error`` and put the state back to what is
        committed; returns how many writes were in flight."""
        if not self._in_flight:
            return 0
        failed = len(self._in_flight)
        for write in self._in_flight:
            _answer(write, error)
        committed = self.committed_image
        if try_fast_rollback(self.state, committed.view_while_ahead, committed.offset, self._in_flight[0].mark,
                             [write.values for write in self._in_flight]):
            committed.rolled_back()
        else:
            self._rebuild()
            committed.state_committed()     # its image is the state's again: not a second copy beside it
        self._in_flight.clear()
        self._in_flight_records = 0
        self.on_progress()
        return failed

    def _rebuild(self) -> None:
        """The state as the raft log's committed records make it. Built aside, with counts of
        its own, so that replaying again counts no election or replay error twice."""
        state = self.state
        rebuilt = ControllerState(state.supported_features, ReplayStats())
        self.replay_committed(_Replayer(rebuilt))
        kept = {"replay_stats": state.replay_stats, "problems": state.problems, "node_configs": state.node_configs}
        state.__dict__.update(rebuilt.__dict__)
        state.__dict__.update(kept)


class _Replayer:
    """The raft listener a rollback replays the committed records into."""

    def __init__(self, state: ControllerState):
        self.state = state

    def on_snapshot_loaded(self, snapshot_id, records: list[bytes]) -> None:
        self.state.load_snapshot(snapshot_id.offset, snapshot_id.epoch, records)

    def on_committed(self, base_offset: int, epoch: int, append_time_ms: int, records: list[bytes]) -> None:
        self.state.apply_batch(base_offset, epoch, append_time_ms, records)

    def on_leader_change(self, leader_id, epoch: int) -> None:
        pass


def _answer(write: InFlight, error: ApiError | None) -> None:
    if not write.answer.done():
        write.answer.set_result(error)
