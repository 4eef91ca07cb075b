"""The leader's appends: client records wait in the accumulator until a batch fills or the
linger time passes (Kafka's BatchAccumulator), then go into the log as one batch of the
leader's epoch; control records (LeaderChange, KIP-853's voters and kraft.version) go as
one control batch. A part of RaftCore (see parts.py).
"""
from __future__ import annotations

from kafkawire.messages.k_raft_version_record import KRaftVersionRecord
from kafkawire.messages.leader_change_message import LeaderChangeMessage, Voter as LeaderChangeVoter
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import ControlRecordType, RecordBatchBuilder, iter_batches
from kafkawire.records.control import encode_control_key
from kafkawire.records.kraft_control import encode_value

from .io import Propose
from .parts import CoreParts
from .states import Leader
from .voters import VoterNode


class LocalAppends(CoreParts):
    def _handle_propose(self, event: Propose) -> None:
        state = self.quorum.state
        if not isinstance(state, Leader) or self.shutdown_deadline_ms is not None or state.book.resign_requested:
            self._out.appends_failed.append((event.token, int(Errors.NOT_LEADER_OR_FOLLOWER)))
            return
        if not event.records:
            self._out.appends_failed.append((event.token, int(Errors.INVALID_REQUEST)))
            return
        pending = sum(len(r) for _, r in self.accumulator)
        last = self.log.end_offset + pending + len(event.records) - 1
        self.accumulator.append((event.token, event.records))
        self._out.appended.append((event.token, last))
        if self.linger_deadline_ms is None:
            self.linger_deadline_ms = self.now_ms + self.config.append_linger_ms

    def _flush_accumulator(self) -> None:
        leader = self._leader()
        while self.accumulator:
            builder = RecordBatchBuilder(base_offset=self.log.end_offset, partition_leader_epoch=self._batch_epoch())
            tokens = []
            while self.accumulator and len(builder) + len(self.accumulator[0][1]) <= self.config.max_batch_records \
                    or self.accumulator and len(builder) == 0:
                token, records = self.accumulator.pop(0)
                # One call for the Propose's records (in C: one resize, no call per record):
                # a leader appends ~100k records/s here.
                builder.append_values(records, self.now_ms)
                tokens.append((token, self.log.end_offset + len(builder) - 1))
            self._append_as_leader(builder.build(), len(builder))
            for token, last in tokens:
                leader.book.waiting_appends.append((last, token))
        self.linger_deadline_ms = None

    def _append_as_leader(self, batch: bytes, count: int) -> None:
        leader = self._leader()
        base = self.log.end_offset
        # A leader's own records may leave before their fsync (async_flush): it counts them
        # toward the high watermark only once durable (_own_durable_end).
        self.log.append(batch, base, base + count - 1, self._batch_epoch(), flush=True, hold=False)
        for parsed in iter_batches(batch):
            self.control.apply_batch(parsed)
            if parsed.is_control:
                leader.book.update_voters(self.voters(), self.now_ms)
        self.counters["append_records"] += count
        if leader.book.update_local_end(self._own_durable_end(), self.now_ms):
            self._on_leader_high_watermark_update()
        self.parked.complete_ready()

    def _own_durable_end(self) -> int:
        """The log end a leader counts for itself toward the high watermark: with async_flush,
        only what its fsyncs made durable (etcd-raft's leader counts its own entries once its
        storage acknowledges them), so a leader that crashes before its fsync cannot have
        counted records that only a minority holds; else the log end, fsynced before the
        Ready's messages leave."""
        if self.config.async_flush:
            return min(self.log.end_offset, self.log.durable_end)
        return self.log.end_offset

    def _handle_log_flushed(self, flush_id: int) -> None:
        """The driver's fsync is done: a leader's durable end may now move its high watermark."""
        if not self.log.flushed(flush_id):
            return
        state = self.quorum.state
        if isinstance(state, Leader) and state.book.update_local_end(self._own_durable_end(), self.now_ms):
            self._on_leader_high_watermark_update()

    def _batch_epoch(self) -> int:
        """Every batch a leader writes carries its epoch (KIP-595: records are identified by
        offset and epoch)."""
        return self._leader().epoch

    def append_control_records(self, records: list[tuple[int, object]]) -> int:
        """Append one control batch holding ``records`` ((control type, message) pairs) as the
        leader; returns the offset of its first record. Used for LeaderChange and KIP-853."""
        self._leader()   # only a leader appends (it raises otherwise)
        if self.accumulator:
            self._flush_accumulator()
        base = self.log.end_offset
        builder = RecordBatchBuilder(base_offset=base, partition_leader_epoch=self._batch_epoch(), is_control=True)
        for control_type, message in records:
            builder.append(encode_control_key(control_type), encode_value(message), (), self.now_ms)
        self._append_as_leader(builder.build(), len(records))
        return base

    def _append_start_of_epoch_records(self) -> None:
        leader = self._leader()
        voters = self.voters()
        change = LeaderChangeMessage(
            version=0, leader_id=self.quorum.local_id,
            voters=[LeaderChangeVoter(voter_id=i) for i in sorted(voters.ids)],
            granting_voters=[LeaderChangeVoter(voter_id=i) for i in sorted(leader.book.granting_voters)])
        records: list[tuple[int, object]] = [(ControlRecordType.LEADER_CHANGE, change)]
        kraft_version = self.control.last_kraft_version()
        if kraft_version >= 1:
            # As Kafka's LeaderState.appendStartOfEpochControlRecords, in the same batch: the
            # first leader writes the bootstrap snapshot's voters into the log, and a leader
            # whose own listeners or kraft.version range differ from its entry writes the set
            # with its entry updated (a voter tells a leader so with UpdateRaftVoter; the
            # leader has nobody to tell).
            local = VoterNode(self.quorum.local_key, self.config.endpoints, self.config.kraft_version_min,
                              self.config.kraft_version_max)
            entry = voters.node(local.key.id)
            own_entry_stale = entry is not None and voters.is_voter(local.key) and entry != local
            if own_entry_stale or self.control.last_voter_set_offset() == -1:
                if own_entry_stale and entry is not None:
                    voters = voters.update(VoterNode(entry.key if entry.key.directory_id is not None else local.key,
                                                     local.endpoints, local.min_kraft_version, local.max_kraft_version))
                records.append((ControlRecordType.KRAFT_VERSION,
                                KRaftVersionRecord(version=0, k_raft_version=kraft_version)))
                records.append((ControlRecordType.KRAFT_VOTERS, voters.to_voters_record()))
        self.append_control_records(records)
