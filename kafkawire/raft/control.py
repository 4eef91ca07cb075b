"""kraft.version and the voter sets, as the log and the latest snapshot say, by offset.

Kafka's KRaftControlRecordStateMachine: KRaftVersionRecord and VotersRecord control records
take effect as soon as they are in the log, committed or not (KIP-853), so a truncation must
revert them; entries older than the latest snapshot are pruned, keeping the one in force.
Without any VotersRecord (kraft.version 0), the voters are controller.quorum.voters.
"""
from __future__ import annotations

import bisect

from kafkawire.records import ControlRecordType

from .voters import VoterSet


class ControlStateError(ValueError):
    """A control record that breaks KIP-853's rules (e.g. a voter change of two members)."""


class History:
    """Values by the offset of the record that set them; the latest at or before an offset wins."""

    def __init__(self):
        self.offsets: list[int] = []
        self.values: list = []

    def add(self, offset: int, value) -> None:
        if self.offsets and offset <= self.offsets[-1]:
            if offset == self.offsets[-1]:
                self.values[-1] = value
                return
            raise ControlStateError(f"control record at offset {offset} is older than the last one at {self.offsets[-1]}")
        self.offsets.append(offset)
        self.values.append(value)

    def last(self):
        return (self.offsets[-1], self.values[-1]) if self.offsets else None

    def value_at(self, offset: int):
        i = bisect.bisect_right(self.offsets, offset) - 1
        return self.values[i] if i >= 0 else None

    def truncate_from(self, offset: int) -> None:
        i = bisect.bisect_left(self.offsets, offset)
        del self.offsets[i:]
        del self.values[i:]

    def prune_before(self, offset: int) -> None:
        """Drop entries older than ``offset`` except the last one before it (still in force)."""
        i = bisect.bisect_left(self.offsets, offset) - 1
        if i > 0:
            del self.offsets[:i]
            del self.values[:i]

    def clear(self) -> None:
        self.offsets.clear()
        self.values.clear()


class ControlState:
    def __init__(self, static_voters: VoterSet | None):
        self.static_voters = static_voters
        self.voters = History()
        self.kraft_versions = History()

    # --- queries ------------------------------------------------------------------------------
    def last_voter_set(self) -> VoterSet:
        last = self.voters.last()
        if last is not None:
            return last[1]
        return self.static_voters if self.static_voters is not None else VoterSet(())

    def last_voter_set_offset(self) -> int | None:
        last = self.voters.last()
        return last[0] if last else None

    def voter_set_at(self, offset: int) -> VoterSet:
        value = self.voters.value_at(offset)
        if value is not None:
            return value
        return self.static_voters if self.static_voters is not None else VoterSet(())

    def last_kraft_version(self) -> int:
        last = self.kraft_versions.last()
        return last[1] if last else 0

    def kraft_version_at(self, offset: int) -> int:
        value = self.kraft_versions.value_at(offset)
        return value if value is not None else 0

    def has_uncommitted_voter_change(self, high_watermark: int | None) -> bool:
        offset = self.last_voter_set_offset()
        return offset is not None and (high_watermark is None or offset >= high_watermark)

    def problem_with(self, batches) -> str | None:
        """Why appending ``batches`` (fetched, not yet in the log) would break a KIP-853 rule
        that ``apply_batch`` enforces, or None. Nothing changes: a follower refuses such a
        response instead of stopping in the middle of appending it."""
        last = self.voters.last()
        for batch in batches:
            if not batch.is_control:
                continue
            try:
                for record in batch:
                    if record.control_type == ControlRecordType.KRAFT_VOTERS:
                        new = VoterSet.from_voters_record(record.control_value)
                        if last is not None and last[0] < record.offset and not last[1].differs_by_at_most_one(new):
                            return (f"the VotersRecord at offset {record.offset} changes more than one voter: "
                                    f"{last[1]} -> {new}")
                        last = (record.offset, new)
                    elif record.control_type == ControlRecordType.KRAFT_VERSION:
                        record.control_value   # decodes, or raises
            except ValueError as e:      # bytes that do not decode (BadBytesError), a voter id twice
                return f"the control batch at offset {batch.base_offset}: {e}"
        return None

    # --- updates --------------------------------------------------------------------------------
    def apply_control_record(self, offset: int, control_type: int, value) -> None:
        """Apply a decoded KRaft control value found at ``offset`` (log or snapshot)."""
        if control_type == ControlRecordType.KRAFT_VOTERS:
            new = VoterSet.from_voters_record(value)
            last = self.voters.last()
            if last is not None and last[0] < offset and not last[1].differs_by_at_most_one(new):
                raise ControlStateError(f"VotersRecord at offset {offset} changes more than one voter: "
                                        f"{last[1]} -> {new}")
            self.voters.add(offset, new)
        elif control_type == ControlRecordType.KRAFT_VERSION:
            self.kraft_versions.add(offset, value.k_raft_version)

    def apply_batch(self, batch) -> None:
        """Read the KRaft control records of one RecordBatch (data batches are skipped)."""
        if not batch.is_control:
            return
        for record in batch:
            control_type = record.control_type
            if control_type in (ControlRecordType.KRAFT_VOTERS, ControlRecordType.KRAFT_VERSION):
                self.apply_control_record(record.offset, control_type, record.control_value)

    def truncate_from(self, offset: int) -> None:
        self.voters.truncate_from(offset)
        self.kraft_versions.truncate_from(offset)

    def prune_before(self, offset: int) -> None:
        self.voters.prune_before(offset)
        self.kraft_versions.prune_before(offset)

    def clear(self) -> None:
        self.voters.clear()
        self.kraft_versions.clear()
