"""Fetch, both sides: the leader answers a fetch at once or parks it as a long poll until
records arrive, the high watermark moves or its wait ends (ParkedFetches); a follower appends
what it fetched, truncates where its log diverges from the leader's, or starts fetching a
snapshot (FollowerFetching, a part of RaftCore; see parts.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkawire.protocol.error_codes import Errors

from . import rpc
from .config import RaftConfig
from .effects import Effects, RaftInvariantError
from .io import RequestReceived, ResponseReceived
from .log import RaftLog, check_fetched_batches
from .parts import CoreParts
from .quorum_state import QuorumState
from .snapshot_fetch import SnapshotFetch
from .states import Follower, Leader, describe
from .types import OffsetAndEpoch, ReplicaKey

NONE = int(Errors.NONE)


@dataclass(slots=True)
class ParkedFetch:
    """A long-poll Fetch waiting for new records, a high watermark change or its deadline."""
    request_id: object
    api_version: int
    replica: ReplicaKey
    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int
    deadline_ms: int
    high_watermark_at_park: int | None


class ParkedFetches:
    """The leader's side of Fetch."""

    def __init__(self, effects: Effects, config: RaftConfig, quorum: QuorumState, log: RaftLog):
        self.effects = effects
        self.config = config
        self.quorum = quorum
        self.log = log
        self.parked: list[ParkedFetch] = []

    def deadlines(self) -> list[int]:
        return [p.deadline_ms for p in self.parked]

    def handle_request(self, request: RequestReceived) -> None:
        body: Any = request.body
        effects = self.effects
        if not effects.valid_cluster_id(body.cluster_id):
            return effects.respond(request, rpc.fetch_response(int(Errors.INCONSISTENT_CLUSTER_ID)))
        partition = rpc.fetch_partition(body)
        if partition is None:
            return effects.respond(request, rpc.fetch_response(int(Errors.INVALID_REQUEST)))
        if body.max_wait_ms < 0 or partition.fetch_offset < 0 or partition.last_fetched_epoch < 0 \
                or partition.last_fetched_epoch > partition.current_leader_epoch:
            return effects.respond(request, rpc.fetch_response(NONE, error=int(Errors.INVALID_REQUEST),
                                                             api_version=request.api_version, **self.effects.leader_fields()))
        parked = ParkedFetch(request.request_id, request.api_version,
                             ReplicaKey.of(rpc.fetch_replica_id(body), partition.replica_directory_id),
                             partition.fetch_offset, partition.last_fetched_epoch, partition.current_leader_epoch,
                             effects.now_ms + body.max_wait_ms, self.quorum.high_watermark())
        response = self.try_complete(parked)
        p = response.responses[0].partitions[0] if response.responses else None
        # As Kafka's handleFetchRequest, a fetcher that does not know our high watermark yet
        # (its Fetch v18 HighWatermark is lower; older versions carry the int64 maximum) is
        # answered at once: parked, it would learn of the commit only at the next append.
        if (p is None or p.error_code != NONE or len(p.records or b"") > 0 or body.max_wait_ms == 0
                or p.diverging_epoch.epoch >= 0 or p.snapshot_id.epoch >= 0
                or partition.high_watermark < p.high_watermark):
            effects.respond(request, response)
        else:
            self.parked.append(parked)

    def try_complete(self, fetch: ParkedFetch, *, counts_as_fetch: bool = True) -> Any:
        error = self.effects.validate_leader_only_request(fetch.current_leader_epoch)
        fields = dict(api_version=fetch.api_version, **self.effects.leader_fields())
        if error != NONE:
            return rpc.fetch_response(NONE, error=error, high_watermark=self.hw_or_minus_one(), **fields)
        leader = self.quorum.state
        if not isinstance(leader, Leader):
            raise RaftInvariantError(f"expected to be leader, but the state is {describe(leader)}")
        valid = self.log.validate_offset_and_epoch(fetch.fetch_offset, fetch.last_fetched_epoch)
        records, diverging, snapshot_id = b"", None, None
        if valid.kind == "valid" and fetch.replica.id == self.quorum.local_id:
            # Kafka's LeaderState.updateReplicaState throws for a fetch naming the leader itself,
            # which KafkaRaftClient answers with an empty UNKNOWN_SERVER_ERROR partition.
            self.effects.warn(f"refused a fetch at offset {fetch.fetch_offset} from replica {fetch.replica.id}: "
                              "the leader's own id")
            return rpc.fetch_response(NONE, error=int(Errors.UNKNOWN_SERVER_ERROR), high_watermark=-1,
                                      log_start_offset=self.log.start_offset, **fields)
        if valid.kind == "valid":
            records = self.log.read(fetch.fetch_offset, self.config.fetch_max_bytes)
            if counts_as_fetch and fetch.replica.id >= 0:
                if leader.book.update_replica(fetch.replica, fetch.fetch_offset, self.log.end_offset,
                                            self.effects.now_ms):
                    self.effects.on_leader_high_watermark_update()
        elif valid.kind == "diverging":
            diverging = valid.offset_and_epoch
        else:
            snapshot_id = valid.offset_and_epoch
        return rpc.fetch_response(NONE, high_watermark=self.hw_or_minus_one(), log_start_offset=self.log.start_offset,
                                  records=records, diverging=diverging, snapshot_id=snapshot_id, **fields)

    def hw_or_minus_one(self) -> int:
        hw = self.quorum.high_watermark()
        return -1 if hw is None else hw

    def complete(self, parked: ParkedFetch) -> None:
        self.effects.respond(parked, self.try_complete(parked))

    def complete_all(self) -> None:
        """A leader no more: every parked fetch is answered (with the error saying so)."""
        for parked in self.parked:
            self.complete(parked)
        self.parked.clear()

    def complete_ready(self, *, all_of_them: bool = False) -> None:
        """Answer parked fetches that have new records, expired, or (``all_of_them``) learn a
        new high watermark."""
        keep = []
        for parked in self.parked:
            new_records = self.log.end_offset > parked.fetch_offset
            if all_of_them or new_records:
                self.complete(parked)
            elif self.effects.now_ms >= parked.deadline_ms:
                # As Kafka's FetchPurgatory: a fetch whose wait ran out is answered as it was
                # when it arrived; it counted then (check-quorum, DescribeQuorum), not again.
                self.effects.respond(parked, self.try_complete(parked, counts_as_fetch=False))
            else:
                keep.append(parked)
        self.parked = keep


class FollowerFetching(CoreParts):
    """The follower's side of Fetch (a part of RaftCore)."""

    def _handle_fetch_response(self, event: ResponseReceived) -> bool:
        partition = rpc.fetch_response_partition(event.body)
        before = self.quorum.leader_and_epoch()
        handled = self._response_prologue(event.body, partition, nested_leader=True)
        if handled is not None:
            if handled and partition.error_code != NONE and self.quorum.leader_and_epoch() == before:
                # A replica that is not the leader (an unattached voter, a resigned leader)
                # answers at once; asking again at once would spin until an election ends.
                # Nothing was learnt, so the next fetch waits out the retry backoff.
                return False
            return handled
        state = self.quorum.state
        if not isinstance(state, Follower):
            return False   # a bootstrap fetch that taught us nothing new: back off likewise
        if partition.error_code != NONE:
            return self._handle_unexpected_error(partition.error_code)
        # Only the leader of our epoch answers a fetch without an error, whichever address
        # (a bootstrap server, for an observer) the request went to.
        if partition.diverging_epoch.epoch >= 0:
            self._truncate_to_diverging(OffsetAndEpoch(partition.diverging_epoch.epoch,
                                                       partition.diverging_epoch.end_offset))
        elif partition.snapshot_id.epoch >= 0 or partition.snapshot_id.end_offset >= 0:
            if partition.snapshot_id.epoch < 0 or partition.snapshot_id.end_offset < 0:
                return self._handle_unexpected_error(int(Errors.INVALID_REQUEST))
            if partition.snapshot_id.end_offset <= self.log.start_offset:
                # The answer to a fetch sent before we installed this snapshot (or a later one):
                # an observer can have a bootstrap fetch and a leader fetch in flight at once.
                return True
            state.fetching_snapshot = SnapshotFetch(OffsetAndEpoch(partition.snapshot_id.epoch,
                                                                   partition.snapshot_id.end_offset))
        else:
            records = partition.records
            if records is not None and len(records) > 0 and not self._append_as_follower(bytes(records)):
                return False   # refused: nothing appended, no progress; fetch again after a backoff
            self._update_follower_high_watermark(state, partition.high_watermark)
        self._on_successful_fetch(state)
        return True

    def _on_successful_fetch(self, state: Follower) -> None:
        if not state.leader_resigned:
            state.has_fetched_from_leader = True
            state.fetch_deadline_ms = self.now_ms + self.config.fetch_timeout_ms

    def _truncate_to_diverging(self, diverging: OffsetAndEpoch) -> None:
        """Truncate to where our log agrees with the leader's (Kafka's truncateToEndOffset)."""
        self._check_truncation_keeps_committed(diverging.offset)
        if diverging.epoch == 0:
            offset = min(diverging.offset, self.log.end_offset)
        else:
            local = self.log.end_offset_for_epoch(diverging.epoch)
            offset = min(local.offset, diverging.offset) if local.epoch == diverging.epoch else local.offset
        offset = max(offset, self.log.start_offset)
        self._check_truncation_keeps_committed(offset)
        if offset < self.log.end_offset:
            self.counters["truncations"] += 1
        self.log.truncate_to(offset)
        self.control.truncate_from(offset)

    def _check_truncation_keeps_committed(self, offset: int) -> None:
        hw = self.quorum.high_watermark()
        if hw is not None and offset < hw:
            raise RaftInvariantError(f"truncation to {offset} would cut committed records (high watermark {hw})")

    def _append_as_follower(self, data: bytes) -> bool:
        """Append a fetched response's batches; False (and nothing appended) if it breaks the
        log's rules: a leader's corrupt or hostile answer must not stop a follower."""
        batches, problem = check_fetched_batches(data, self.log.end_offset, self.log.last_fetched_epoch,
                                                 self.quorum.epoch)
        if problem is None:
            problem = self.control.problem_with(batches)
        if problem is not None:
            self.counters["fetch_responses_refused"] = self.counters.get("fetch_responses_refused", 0) + 1
            self._warn(f"refused the records fetched from leader {self.quorum.leader_id()} in epoch "
                       f"{self.quorum.epoch}: {problem}; the log end offset stays {self.log.end_offset}")
            return False
        appended = 0
        for batch in batches:
            self.log.append(bytes(batch.raw), batch.base_offset, batch.last_offset, batch.partition_leader_epoch,
                            flush=self.quorum.is_voter() or self.config.can_become_voter)
            self.control.apply_batch(batch)
            appended += batch.last_offset - batch.base_offset + 1
        self.counters["fetch_records"] += appended
        return True

    def _update_follower_high_watermark(self, state: Follower, leader_hw: int) -> None:
        if leader_hw < 0:
            return   # a new leader does not know the high watermark until its epoch commits
        new_hw = min(self.log.end_offset, leader_hw)
        if state.high_watermark is not None and new_hw < state.high_watermark:
            return   # an old response; the high watermark never goes back
        state.high_watermark = new_hw
