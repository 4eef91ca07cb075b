"""The transaction side of a partition's log, as Kafka's UnifiedLog/LocalLog/LogSegment keep it:
COMMIT/ABORT markers, the aborted transactions in each segment's ``.txnindex``, and what a
read_committed fetch is told about them.

* ``end_txn_marker_batch``: the control batch Kafka's MemoryRecords.withEndTransactionMarker
  builds (one control record, key = (version 0, ABORT 0 / COMMIT 1), value = (version 0,
  coordinator epoch)), transactional, the producer's id and epoch, no sequence; the log assigns
  its offset and stamps the leader epoch.
* ``write_aborted``: an aborted transaction's AbortedTxn entry (version 0, producer id, first
  offset, the marker's offset, the last stable offset when it was written) goes into the
  ``.txnindex`` of the segment the marker landed in (LogSegment.updateTxnIndex); a commit writes
  nothing there.
* ``collect_aborted``: LocalLog.collectAbortedTransactions: from the segment holding the fetch
  offset on, each segment's entries whose range overlaps [fetch offset, upper bound), until an
  entry's last stable offset reaches the upper bound; ``fetch_upper_bound`` is Kafka's upper bound
  for a fetch (LogSegment.fetchUpperBoundOffset: the first offset-index entry at or past the end
  of the bytes read, else the next segment's base, else the log end).
* ``rebuild_from``: log recovery (LogLoader / LogSegment.recover): the entries of transactions
  ended at or after the offset the producer state is replayed from are dropped and written
  again as the replay meets their markers.
"""
from __future__ import annotations

import bisect

from kafkawire.records.layout import CREATE_TIME, LOG_APPEND_TIME
from kafkawire.records.builder import build_end_txn_marker_batch
from kafkawire.storage.txn_index import AbortedTxn

from .producer_state import CompletedTxn

__all__ = ["end_txn_marker_batch", "write_aborted", "collect_aborted", "fetch_upper_bound", "rebuild_from",
           "segment_holding"]

ABORTED_TXN_VERSION = 0          # AbortedTxn.CURRENT_VERSION


def end_txn_marker_batch(*, commit: bool, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                         timestamp: int, log_append_time: bool = False) -> bytes:
    """The marker batch at offset 0 (the log assigns the offset, the leader epoch is stamped there);
    on a LogAppendTime topic its timestamp type says so, as LogValidator sets it."""
    return build_end_txn_marker_batch(commit, producer_id=producer_id, producer_epoch=producer_epoch,
                                      coordinator_epoch=coordinator_epoch, timestamp=timestamp,
                                      timestamp_type=LOG_APPEND_TIME if log_append_time else CREATE_TIME)


def segment_holding(log_, offset: int):
    """The segment whose base offset is the largest at or below ``offset`` (the first one else)."""
    segments = log_.segments
    i = bisect.bisect_right([s.base_offset for s in segments], offset) - 1
    return segments[max(i, 0)]


def write_aborted(log_, completed: CompletedTxn, last_stable_offset: int) -> AbortedTxn | None:
    """LogSegment.updateTxnIndex: an aborted transaction's entry in its marker's segment."""
    if not completed.is_aborted:
        return None
    entry = AbortedTxn(ABORTED_TXN_VERSION, completed.producer_id, completed.first_offset, completed.last_offset,
                       last_stable_offset)
    segment_holding(log_, completed.last_offset).txn_index.append(entry)
    return entry


def collect_aborted(log_, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
    """The aborted transactions a read_committed fetch from ``fetch_offset`` needs, across
    segments (LocalLog.collectAbortedTransactions)."""
    segments = log_.segments
    i = max(bisect.bisect_right([s.base_offset for s in segments], fetch_offset) - 1, 0)
    found: list[AbortedTxn] = []
    for segment in segments[i:]:
        entries, complete = segment.txn_index.collect(fetch_offset, upper_bound)
        found += entries
        if complete:
            break
    return found


def fetch_upper_bound(log_, segment, start_position: int, size: int) -> int:
    """LogSegment.fetchUpperBoundOffset, else the next segment's base offset, else the log end."""
    index = segment.offset_index
    target = start_position + size
    lo, hi = 0, len(index)
    while lo < hi:                     # the first entry whose position is >= target
        mid = (lo + hi) // 2
        if index.entry(mid).position < target:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(index):
        return index.entry(lo).offset
    later = [s.base_offset for s in log_.segments if s.base_offset > segment.base_offset]
    return later[0] if later else log_.log_end_offset


def rebuild_from(log_, offset: int):
    """Drop the ``.txnindex`` entries of transactions ended at or after ``offset`` (the replay
    start) and return the callback ProducerState.replay calls for each transaction it ends, which
    writes the aborted ones again."""
    first = segment_holding(log_, offset).base_offset
    for segment in log_.segments:
        if segment.base_offset >= first:
            segment.txn_index.truncate_to(offset)

    def on_completed(completed: CompletedTxn, last_stable_offset: int) -> None:
        write_aborted(log_, completed, last_stable_offset)
    return on_completed
