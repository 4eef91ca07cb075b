"""read_committed from the transaction markers in the log itself.

A broker answers a read_committed fetch with records below the last stable offset (LSO)
and a list of aborted transactions (from its ``.txnindex``); the consumer drops the
records of those. We have the log, so both come from its markers:

* A transactional data batch belongs to the transaction its producer ends with its next
  control batch (an ABORT or COMMIT marker; a marker from a newer epoch of the same
  producer id ends it too, as a fenced producer's transaction is aborted). Its records are
  shown only when that marker is a COMMIT.
* The LSO is the first offset of the earliest transaction with no marker yet (the log end
  offset when there is none). A read_committed read ends there, exactly as a consumer's
  fetch does: records after it, even committed or non-transactional ones, wait until the
  open transaction ends (a stream picks them up then; a batch read leaves them out).

Deviation, stated: the LSO is computed from where the read starts. A transaction that
began before the starting offset and is still open is not seen beginning, so the LSO is
taken as the first offset where its batches are seen instead: its own records are still
dropped (it has no marker), but records between the start and that point are shown,
where a consumer positioned there would wait.

Markers may lie past the end of a split, or past the read's end offset (a transaction
committed after the LSO was taken); a task looks ahead in the partition's later bytes and
segments, reading batch headers only, until every transaction it holds is resolved.
"""
from __future__ import annotations

import bisect

from kafkawire.records import CorruptRecordError
from kafkawire.records.control import ControlRecordType, parse_control_key

__all__ = ["TransactionOutcomes", "OpenTransactions", "marker_commits"]


def marker_commits(batch) -> bool:
    """Whether a transactional control batch is a COMMIT (else an ABORT)."""
    for record in batch:
        try:
            return parse_control_key(record.key).type == ControlRecordType.COMMIT
        except CorruptRecordError as e:
            raise CorruptRecordError(f"transaction marker key: {e.reason}", batch.position, batch.file) from None
    raise CorruptRecordError("transaction marker batch has no record", batch.position, batch.file)


class TransactionOutcomes:
    """Markers seen, per producer id, to answer whether a data batch was committed."""

    def __init__(self):
        self._offsets: dict[int, list[int]] = {}
        self._commits: dict[int, list[bool]] = {}
        self._last_data: dict[int, int] = {}

    def note(self, batch) -> None:
        if not batch.is_transactional:
            return
        pid = batch.producer_id
        if batch.is_control:
            offsets = self._offsets.setdefault(pid, [])
            if offsets and offsets[-1] >= batch.base_offset:
                return   # seen already (a look-ahead overlapping the split)
            offsets.append(batch.base_offset)
            self._commits.setdefault(pid, []).append(marker_commits(batch))
        else:
            self._last_data[pid] = max(self._last_data.get(pid, -1), batch.last_offset)

    def unresolved(self) -> set[int]:
        """Producers with data batches and no marker after the last of them yet."""
        return {pid for pid, last in self._last_data.items()
                if not self._offsets.get(pid) or self._offsets[pid][-1] < last}

    def committed(self, producer_id: int, last_offset: int) -> bool:
        """Whether the transaction holding a data batch ending at ``last_offset`` committed
        (False when it was aborted or has no marker: still open)."""
        offsets = self._offsets.get(producer_id)
        if not offsets:
            return False
        i = bisect.bisect_right(offsets, last_offset)
        return i < len(offsets) and self._commits[producer_id][i]


class OpenTransactions:
    """Transactions begun and not yet ended, fed batch headers in log order; gives the LSO."""

    def __init__(self):
        self.first_offsets: dict[int, int] = {}   # producer id -> first offset of its open transaction

    def note(self, batch) -> None:
        if batch.is_transactional:
            if batch.is_control:
                self.first_offsets.pop(batch.producer_id, None)
            else:
                self.first_offsets.setdefault(batch.producer_id, batch.base_offset)

    def last_stable_offset(self, log_end_offset: int) -> int:
        return min(self.first_offsets.values(), default=log_end_offset)
