"""FetchSnapshot (KIP-630): a leader serves chunks of its snapshots; a follower whose fetch
was answered with a snapshot id fetches that snapshot chunk by chunk, then installs it.

The handlers work through the core's Effects; installing (which resets the log, the control
state and the high watermark) is the core's own state change, handed in as ``install``, and
so is refusing a damaged copy (``refuse``). The follower keeps none of the snapshot's bytes:
each chunk goes to the store (a WriteSnapshotChunk) and through the snapshot's check
(snapshot_check.py) once, so an answer costs the core work linear in its own size, never in
the snapshot's (the bytes were once appended to one buffer and all decoded again at the end:
a loop stall growing with the snapshot).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkawire.protocol.error_codes import Errors

from . import rpc
from .config import RaftConfig
from .effects import Effects, RaftInvariantError
from .io import RequestReceived, ResponseReceived
from .log import RaftLog
from .quorum_state import QuorumState
from .snapshot_check import FetchedSnapshotCheck
from .states import Follower, Leader, describe
from .types import OffsetAndEpoch, ReplicaKey

NONE = int(Errors.NONE)


@dataclass(slots=True)
class SnapshotFetch:
    snapshot_id: OffsetAndEpoch
    position: int = 0
    size: int | None = None
    check: FetchedSnapshotCheck = field(default_factory=FetchedSnapshotCheck)    # of the chunks so far


class SnapshotFetching:
    def __init__(self, effects: Effects, config: RaftConfig, quorum: QuorumState, log: RaftLog,
                 install: Callable[[Follower, SnapshotFetch], None],
                 refuse: Callable[[Follower, SnapshotFetch, str], None]):
        self.effects = effects
        self.config = config
        self.quorum = quorum
        self.log = log
        self.install = install
        self.refuse = refuse

    # --- leader side -------------------------------------------------------------------------------
    def handle_request(self, request: RequestReceived) -> None:
        body: Any = request.body
        effects = self.effects

        def reply(top: int = NONE, **kw: Any) -> None:
            effects.respond(request, rpc.fetch_snapshot_response(top, api_version=request.api_version, **kw,
                                                                 **effects.leader_fields()))
        if not effects.valid_cluster_id(body.cluster_id):
            return reply(top=int(Errors.INCONSISTENT_CLUSTER_ID))
        partition = rpc.fetch_snapshot_partition(body)
        if partition is None:
            return reply(top=int(Errors.INVALID_REQUEST))
        error = effects.validate_leader_only_request(partition.current_leader_epoch)
        if error != NONE:
            return reply(error=error)
        snapshot_id = OffsetAndEpoch(partition.snapshot_id.epoch, partition.snapshot_id.end_offset)
        if snapshot_id not in self.log.snapshots:
            return reply(error=int(Errors.SNAPSHOT_NOT_FOUND), snapshot_id=snapshot_id)
        size = self.log.store.snapshot_size(snapshot_id)
        if partition.position < 0 or partition.position >= size:
            return reply(error=int(Errors.POSITION_OUT_OF_RANGE), snapshot_id=snapshot_id, size=size)
        max_bytes = min(body.max_bytes if body.max_bytes > 0 else size, self.config.fetch_snapshot_max_bytes)
        data = self.log.store.read_snapshot(snapshot_id, partition.position, max_bytes)
        replica = ReplicaKey.of(body.replica_id, partition.replica_directory_id)
        leader = self.quorum.state
        if not isinstance(leader, Leader):
            raise RaftInvariantError(f"expected to be leader, but the state is {describe(leader)}")
        if leader.book.is_voter(replica) and replica.id != self.quorum.local_id:
            leader.book.fetched_voters.add(replica.id)
            leader.book._maybe_reset_check_quorum(effects.now_ms)
        reply(snapshot_id=snapshot_id, size=size, position=partition.position, data=data)

    # --- follower side ------------------------------------------------------------------------------
    def request_for(self, state: Follower, fetch: SnapshotFetch) -> Any:
        return rpc.fetch_snapshot_request(self.config.cluster_id, self.quorum.local_key, state.epoch,
                                          fetch.snapshot_id, fetch.position, self.config.fetch_snapshot_max_bytes)

    def handle_response(self, event: ResponseReceived, partition: Any) -> bool:
        """A FetchSnapshot answer past the shared epoch handling (core._response_prologue)."""
        state = self.quorum.state
        if not isinstance(state, Follower) or state.fetching_snapshot is None:
            return True
        fetch = state.fetching_snapshot
        if partition.error_code in (Errors.SNAPSHOT_NOT_FOUND, Errors.OFFSET_OUT_OF_RANGE, Errors.POSITION_OUT_OF_RANGE):
            state.fetching_snapshot = None
            return True
        if partition.error_code != NONE:
            return self.effects.handle_unexpected_error(partition.error_code)
        got = OffsetAndEpoch(partition.snapshot_id.epoch, partition.snapshot_id.end_offset)
        if got != fetch.snapshot_id or partition.position != fetch.position or partition.size <= 0 \
                or (fetch.size is not None and partition.size != fetch.size):
            state.fetching_snapshot = None   # an answer to another question: start over
            return False
        data = bytes(partition.unaligned_records or b"")
        if partition.position + len(data) > partition.size or not data:
            state.fetching_snapshot = None
            return False
        fetch.size = partition.size
        problem = fetch.check.feed(data)
        if problem is None:
            self.log.write_snapshot_chunk(fetch.snapshot_id, fetch.position, data)
            fetch.position += len(data)
        self.effects.on_successful_fetch(state)
        if problem is None and fetch.position == fetch.size:
            problem = fetch.check.finish()
            if problem is None:
                self.install(state, fetch)
        if problem is not None:
            # Refused as soon as the damage shows: the rest of this copy is not worth fetching.
            self.refuse(state, fetch, problem)
        return True
