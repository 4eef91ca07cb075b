"""Transactional offset commits (TxnOffsetCommit, 28) in the group coordinator, as Kafka 4.3.1's
OffsetMetadataManager keeps them: the offsets are written to ``__consumer_offsets`` in a
transactional batch of the producer (its id and epoch), held as pending offsets of that producer,
and become the group's committed offsets when the transaction's COMMIT marker is written to the
group's partition (dropped on ABORT). OffsetFetch with ``require_stable`` answers
UNSTABLE_OFFSET_COMMIT for a partition with a pending offset.

    txn = TxnOffsets(offsets, persist=store.persist, partition_of=...)
    codes = txn.commit(group_id, producer_id, epoch, partitions)
    txn.on_marker(offsets_partition, producer_id, committed)   # a marker was appended there (at its append)

Loading replays a transactional batch's records as pending and its marker as above
(``replay_pending``, ``replay_marker``), so a restart keeps what the log says.

A pending offset that becomes committed replaces the committed one; Kafka keeps a newer
non-transactional commit written after the transactional one (it compares the records' log
offsets), which kafkawire does not track: documented difference.
"""
from __future__ import annotations

import logging

from kafkawire.protocol.error_codes import Errors
from kafkawire.records.control import ControlRecordType, parse_control_key
from kafkawire.records.errors import CorruptRecordError

from .group_offsets import CommitRefused
from .group_records import ZERO_UUID, OffsetAndMetadata, decode_record, offset_record
from .group_state import ClassicGroup

__all__ = ["TxnOffsets"]

log = logging.getLogger(__name__)


class TxnOffsets:
    """Pending transactional offsets: by producer id, then group, then (topic, partition)."""

    def __init__(self, offsets, *, persist, partition_of):
        self.offsets = offsets                  # kafkawire.broker.group_offsets.GroupOffsets
        self.persist = persist                  # (group id, records, producer=(id, epoch)) -> error code
        self.partition_of = partition_of        # group id -> its __consumer_offsets partition
        self.pending: dict[int, dict[str, dict[tuple[str, int], OffsetAndMetadata]]] = {}
        self._pending_count: dict[tuple[str, str, int], int] = {}     # (group, topic, partition) -> producers

    # -- TxnOffsetCommit --

    def validate(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                 partitions: list) -> None:
        """OffsetMetadataManager.validateTransactionalOffsetCommit and its per-partition check of a
        consumer group member's older epoch (``partitions``: (topic id, partition)); raises
        CommitRefused. A stale member epoch is ILLEGAL_GENERATION here, for the whole request."""
        try:
            check = self.offsets.validate_commit(group_id, generation, member_id, instance_id, 0, transactional=True)
        except CommitRefused as exc:
            if exc.code == Errors.STALE_MEMBER_EPOCH:
                raise CommitRefused(Errors.ILLEGAL_GENERATION) from None
            raise
        if check is not None and any(check(topic_id, p) != Errors.NONE for topic_id, p in partitions):
            raise CommitRefused(Errors.ILLEGAL_GENERATION)

    def commit(self, group_id: str, producer_id: int, epoch: int, partitions: list) -> dict:
        """``partitions``: (topic, partition, offset, leader epoch, metadata); (topic, partition) -> code."""
        c = self.offsets.coordinator
        now = c.now_ms()
        limit = c.settings.offset_metadata_max_bytes
        codes, records, values = {}, [], {}
        for topic, partition, offset, leader_epoch, metadata in partitions:
            if metadata is not None and len(metadata) > limit:
                codes[(topic, partition)] = Errors.OFFSET_METADATA_TOO_LARGE
                continue
            value = OffsetAndMetadata(offset, leader_epoch, metadata or "", now, ZERO_UUID)
            records.append(offset_record(group_id, topic, partition, value))
            values[(topic, partition)] = value
            codes[(topic, partition)] = Errors.NONE
        if records:
            error = self.persist(group_id, records, producer=(producer_id, epoch))
            if error != Errors.NONE:
                return {key: (error if code == Errors.NONE else code) for key, code in codes.items()}
            for (topic, partition), value in values.items():
                self._add_pending(producer_id, group_id, topic, partition, value)
        return codes

    def _add_pending(self, producer_id: int, group_id: str, topic: str, partition: int, value) -> None:
        by_group = self.pending.setdefault(producer_id, {}).setdefault(group_id, {})
        if (topic, partition) not in by_group:
            key = (group_id, topic, partition)
            self._pending_count[key] = self._pending_count.get(key, 0) + 1
        by_group[(topic, partition)] = value

    def is_pending(self, group_id: str, topic: str, partition: int) -> bool:
        return (group_id, topic, partition) in self._pending_count

    # -- the end of the transaction --

    def on_marker(self, offsets_partition: int, producer_id: int, committed: bool, *, appended: bool = True) -> None:
        """A COMMIT/ABORT marker of ``producer_id`` is in ``__consumer_offsets-<offsets_partition>``:
        its pending offsets of the groups there are committed or dropped, as Kafka's
        replayEndTransactionMarker does at the marker's append. An offset so committed by a marker
        just ``appended`` is read at the high watermark only once the marker is replicated
        (UncommittedOffsets); one replayed from the log (loading) at once."""
        by_group = self.pending.get(producer_id)
        if not by_group:
            return
        for group_id in [g for g in by_group if self.partition_of(g) == offsets_partition]:
            replaced = {}
            for (topic, partition), value in by_group.pop(group_id).items():
                self._no_longer_pending(group_id, topic, partition)
                if committed and group_id in self.offsets.coordinator.groups:   # else deleted meanwhile
                    current = self.offsets.offsets.setdefault(group_id, {})
                    replaced[(topic, partition)] = current.get((topic, partition))
                    current[(topic, partition)] = value
            if appended:
                self.offsets.uncommitted.replaced(group_id, replaced)
            else:
                self.offsets.uncommitted.forget(group_id, list(replaced))
        if not by_group:
            del self.pending[producer_id]

    def _no_longer_pending(self, group_id: str, topic: str, partition: int) -> None:
        key = (group_id, topic, partition)
        left = self._pending_count.pop(key) - 1
        if left:
            self._pending_count[key] = left

    # -- loading --

    def unload(self, here) -> None:
        """Forget the pending offsets of the groups ``here(group id)`` names, before their partition
        is loaded again from the log (OffsetsTopic.unload): its transactional batches without a
        marker make them pending again."""
        for producer_id, by_group in list(self.pending.items()):
            for group_id in [g for g in by_group if here(g)]:
                for topic, partition in by_group.pop(group_id):
                    self._no_longer_pending(group_id, topic, partition)
            if not by_group:
                del self.pending[producer_id]

    def replay_pending(self, producer_id: int, offsets_partition: int, key, value) -> None:
        """A record of a transactional batch read back from the log."""
        decoded = decode_record(key, value)
        if decoded is None or decoded[0] != "offset" or decoded[2] is None:
            return
        _, k, v = decoded
        if k.group not in self.offsets.coordinator.groups:
            c = self.offsets.coordinator
            c.groups[k.group] = ClassicGroup(k.group, now_ms=c.now_ms())
        self._add_pending(producer_id, k.group, k.topic, k.partition, OffsetAndMetadata(
            v.offset, v.leader_epoch, v.metadata or "", v.commit_timestamp, v.topic_id or ZERO_UUID))

    def replay_marker(self, batch, offsets_partition: int) -> None:
        for record in batch:
            try:
                control = parse_control_key(record.key)
            except CorruptRecordError:
                continue
            if control.type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                self.on_marker(offsets_partition, batch.producer_id, control.type == ControlRecordType.COMMIT,
                               appended=False)
