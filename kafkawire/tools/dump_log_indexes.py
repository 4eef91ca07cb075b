"""dump-log's index files: ``.index`` and ``.timeindex`` (each entry checked against the log, as
Kafka's DumpLogSegments does, or Kafka's start-up sanity check alone), ``.txnindex`` and
producer-state ``.snapshot`` files. The files are read by kafkawire.storage and the log by
kafkawire.records.scan_log; what is here is the checking and the printing.

``IndexDumper`` is a mixin of dump-log's Dumper (options, output, ``error``, ``_read``, and the
end-of-run reports it fills).
"""
from __future__ import annotations

import os

from kafkawire.records import CorruptRecordError, LegacyRecordBatch, RecordBatch, TruncatedTail, scan_log
from kafkawire.records.scan import SIZE_BELOW_MINIMUM, UNKNOWN_MAGIC, Corruption
from kafkawire.storage.index import read_offset_index_entries, read_time_index_entries
from kafkawire.storage.producer_snapshot import ProducerSnapshotError, read_producer_snapshot
from kafkawire.storage.txn_index import ENTRY_SIZE as TXN_ENTRY_SIZE
from kafkawire.storage.txn_index import read_txn_index

TIME_INDEX_ENTRY_SIZE = 12
JAVA_INT_MAX = 0x7FFFFFFF


def first_batch_at(data: bytes, position: int, limit: int, name: str):
    """The batch at ``position``, or None if no whole batch of at most ``limit`` bytes starts
    there; a batch whose header cannot be read is a Corruption."""
    if position < 0:
        return None
    entry = next(scan_log(data, position, min(len(data), position + limit), file=name), None)
    if entry is None or isinstance(entry, TruncatedTail):
        return None
    if isinstance(entry, Corruption) and entry.kind == SIZE_BELOW_MINIMUM:
        return None
    return entry


def find_batch(log: bytes, position: int, offset: int, name: str):
    """The first batch from ``position`` whose last offset is >= ``offset`` (None if none)."""
    for entry in scan_log(log, position, file=name):
        if not isinstance(entry, (RecordBatch, LegacyRecordBatch)):
            return None
        if entry.last_offset >= offset:
            return entry
    return None


def kafka_slice_refusal(log_path: str, log_size: int, position: int) -> str | None:
    """The IllegalArgumentException message of Kafka's FileRecords.slice(position, ...) on a log
    opened whole, or None when the position is one it accepts."""
    records = f"FileRecords(size={log_size}, file={log_path}, start=0, end={JAVA_INT_MAX})"
    if position < 0:
        return f"Invalid position: {position} in read from {records}"
    if position > log_size:
        return f"Slice from position {position} exceeds end position of {records}"
    return None


def unframeable_from(log: bytes, position: int, name: str, memo: dict) -> Corruption | None:
    """The first entry at or after ``position`` whose size is below the minimum, if any: Kafka's
    tool reads every batch from the looked-up position to the end of the log and dies on it.
    ``memo`` maps batch positions already walked to their answer, so a file is walked once."""
    walked, found = [], None
    for entry in scan_log(log, position, file=name):
        if isinstance(entry, TruncatedTail):
            break
        if entry.position in memo:
            found = memo[entry.position]
            break
        walked.append(entry.position)
        if isinstance(entry, Corruption) and entry.kind == SIZE_BELOW_MINIMUM:
            found = entry
            break
    for at in walked:
        memo[at] = found
    return found


def index_lookup(entries, offset: int, base_offset: int) -> int:
    """OffsetIndex.lookup: the position of the largest entry offset <= ``offset``, else 0."""
    position = 0
    for i, (entry_offset, entry_position) in enumerate(entries):
        if entry_offset == base_offset and i > 0:
            break
        if entry_offset > offset:
            break
        position = entry_position
    return position


def producer_state_text(e) -> str:
    txn_first = e.current_txn_first_offset
    text = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
            f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: "
            f"{'OptionalLong.empty' if txn_first < 0 else 'OptionalLong[%d]' % txn_first} "
            f"lastTimestamp: {e.timestamp}")
    if e.last_offset >= 0:
        text += (f" firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} "
                 f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
    return text


def producer_state_json(e) -> dict:
    return {"type": "producerState", "producerId": e.producer_id, "producerEpoch": e.producer_epoch,
            "coordinatorEpoch": e.coordinator_epoch, "currentTxnFirstOffset": e.current_txn_first_offset,
            "timestamp": e.timestamp, "lastSequence": e.last_sequence, "firstSequence": e.first_sequence,
            "lastOffset": e.last_offset, "offsetDelta": e.offset_delta}


class IndexDumper:
    """The index, transaction index and producer snapshot dumps (see the module docstring)."""

    def _log_for_index(self, name: str) -> tuple[int, str, bytes] | None:
        base = os.path.basename(name)
        stem = base.split(".")[0]
        if not stem.isdigit():
            self.error(name, None, f"an index name must be its segment's base offset (20 digits), not {base!r}")
            return None
        log_name = os.path.join(os.path.dirname(os.path.abspath(name)), stem + ".log")
        data = self._read(log_name)
        if data is None:
            return None
        return int(stem), log_name, data

    def dump_index(self, name: str) -> None:
        found = self._log_for_index(name)
        raw = self._read(name)
        if found is None or raw is None:
            return
        base_offset, _, log = found
        entries = read_offset_index_entries(raw, base_offset)
        if not entries:
            self.out.line(f"{name} is empty.", {"type": "indexEmpty", "file": name})
            return
        if self.opts.index_sanity_only:
            self._index_sanity(name, raw, entries, base_offset)
            return
        for i, (offset, position) in enumerate(entries):
            if offset == base_offset and i > 0:
                break  # preallocated zero entries of a sparse file
            self._check_index_entry(name, log, i, offset, position)
            if not self.opts.verify_only:
                self.out.line(f"offset: {offset} position: {position}",
                              {"type": "indexEntry", "offset": offset, "position": position})

    def _check_index_entry(self, name: str, log: bytes, i: int, offset: int, position: int) -> None:
        batch = first_batch_at(log, position, self.opts.max_message_size, name)
        if isinstance(batch, Corruption):
            # An unknown magic was always read as a legacy message here, and named so.
            reason = f"magic {batch.magic} is not a legacy message" if batch.kind == UNKNOWN_MAGIC else batch.reason
            self.error(name, i * 8, f"index entry {i} points at byte {position} of the log, where there is no "
                                    f"readable batch: {reason}")
            batch = None
        if batch is None:
            self.error(name, i * 8, f"index entry {i} (offset {offset}) points at byte {position} of the log, "
                                    f"where no whole batch of at most {self.opts.max_message_size} bytes starts")
        elif batch.last_offset != offset:
            self.index_mismatches.setdefault(os.path.abspath(name), {})[offset] = batch.last_offset

    def _index_sanity(self, name, raw, entries, base_offset) -> None:
        """OffsetIndex.sanityCheck: the check a broker runs at start-up."""
        if entries[-1][0] < base_offset:
            self.error(name, len(raw) - 8, f"Corrupt index found, index file ({os.path.abspath(name)}) has "
                                           f"non-zero size but the last offset is {entries[-1][0]} which is "
                                           f"less than the base offset {base_offset}.")
        elif len(raw) % 8:
            self.error(name, len(raw) - len(raw) % 8, f"Index file {os.path.abspath(name)} is corrupt, found "
                                                      f"{len(raw)} bytes which is neither positive nor a multiple of 8.")
        else:
            self.out.line(f"{name} passed sanity check.", {"type": "indexSanity", "file": name, "passed": True})

    def dump_time_index(self, name: str) -> None:
        found = self._log_for_index(name)
        raw = self._read(name)
        if found is None or raw is None:
            return
        base_offset, log_name, log = found
        index_name = name[: -len(".timeindex")] + ".index"
        if not os.path.exists(index_name):
            # Kafka's tool opens the offset index first in every mode, and a missing one kills it
            # (IllegalArgumentException: Invalid max index size: -1), so nothing is checked.
            self.error(name, None, f"its offset index {os.path.basename(index_name)} does not exist, so the time "
                                   f"index cannot be checked (Kafka's DumpLogSegments dies here: "
                                   f"java.lang.IllegalArgumentException: Invalid max index size: -1)")
            return
        entries = read_time_index_entries(raw, base_offset)
        if self.opts.index_sanity_only:
            self._time_index_sanity(name, raw, entries, base_offset)
            return
        offset_entries = read_offset_index_entries(self._read(index_name) or b"", base_offset)
        previous_ts = -1
        self._framing_walked: dict = {}
        for i, (timestamp, offset) in enumerate(entries):
            if offset == base_offset and i > 0:
                break
            fatal = self._check_time_index_entry(name, log_name, log, offset_entries, base_offset, timestamp,
                                                 offset, previous_ts)
            if fatal is not None:
                # Kafka's tool dies on this entry before printing it; its output ends here, and so
                # does ours for this file.
                self.error(name, i * TIME_INDEX_ENTRY_SIZE, f"time index entry {i} (timestamp {timestamp}, offset "
                                                            f"{offset}): {fatal}; the entries after it are not "
                                                            f"checked or printed")
                return
            if not self.opts.verify_only:
                self.out.line(f"timestamp: {timestamp} offset: {offset}",
                              {"type": "timeIndexEntry", "timestamp": timestamp, "offset": offset})
            previous_ts = timestamp

    def _check_time_index_entry(self, name, log_name, log, offset_entries, base_offset, timestamp, offset,
                                previous_ts) -> str | None:
        """Records what Kafka reports at the end of the run; returns why the entry cannot be checked
        at all (where Kafka's tool dies with an exception), else None."""
        key = os.path.abspath(name)
        position = index_lookup(offset_entries, offset, base_offset)
        refusal = kafka_slice_refusal(log_name, len(log), position)
        if refusal is not None:
            where = "negative" if position < 0 else f"past the end of the {len(log)}-byte log"
            return (f"its offset index gives position {position} for it, which is {where} (Kafka's DumpLogSegments "
                    f"dies here: java.lang.IllegalArgumentException: {refusal})")
        unframeable = unframeable_from(log, position, log_name, self._framing_walked)
        if unframeable is not None:
            return (f"the log from byte {position} cannot be framed: the size at byte {unframeable.position} is "
                    f"{unframeable.size} (Kafka's DumpLogSegments reads every batch from there to the end of the "
                    f"log and dies here: org.apache.kafka.common.errors.CorruptRecordException: Found record size "
                    f"{unframeable.size} smaller than minimum record overhead (14) in file {log_name}.)")
        batch = find_batch(log, position, offset, log_name)
        if batch is None:
            self.time_index_not_found.setdefault(key, []).append((offset, -1))
        elif batch.last_offset != offset:
            self.time_index_not_found.setdefault(key, []).append((offset, batch.last_offset))
        else:
            try:
                max_ts = max((r.timestamp for r in batch), default=-1)
            except CorruptRecordError as exc:
                at = exc.position if exc.position is not None else batch.position
                return (f"the records of its batch (at byte {batch.position} of {log_name}) do not decode, at byte "
                        f"{at}: {exc.reason} (Kafka's DumpLogSegments dies here with an exception)")
            if max_ts != timestamp:
                self.time_index_mismatches.setdefault(key, []).append((timestamp, max_ts))
            if previous_ts >= timestamp:
                self.time_index_out_of_order.setdefault(key, []).append((timestamp, previous_ts))
        return None

    def _time_index_sanity(self, name, raw, entries, base_offset):
        path = os.path.abspath(name)
        if entries and entries[-1][0] < entries[0][0]:
            self.error(name, len(raw) - 12, f"Corrupt time index found, time index file ({path}) has non-zero size "
                                            f"but the last timestamp is {entries[-1][0]} which is less than the "
                                            f"first timestamp {entries[0][0]}")
        elif entries and entries[-1][1] < base_offset:
            self.error(name, len(raw) - 12, f"Corrupt time index found, time index file ({path}) has non-zero size "
                                            f"but the last offset is {entries[-1][1]} which is less than the first "
                                            f"offset {base_offset}")
        elif len(raw) % 12:
            self.error(name, len(raw) - len(raw) % 12, f"Time index file {path} is corrupt, found {len(raw)} bytes "
                                                       f"which is not positive or not a multiple of 12.")
        else:
            self.out.line(f"{name} passed sanity check.", {"type": "indexSanity", "file": name, "passed": True})

    def dump_producer_snapshot(self, name: str) -> None:
        data = self._read(name)
        if data is None:
            return
        try:
            entries = read_producer_snapshot(data)
        except ProducerSnapshotError as exc:
            # Kafka prints CorruptSnapshotException's message and carries on.
            self.error(name, exc.position, str(exc))
            return
        for e in entries:
            self.out.line(producer_state_text(e), producer_state_json(e))

    def dump_txn_index(self, name: str) -> None:
        data = self._read(name)
        if data is None:
            return
        entries, partial_at = read_txn_index(data)
        if partial_at is not None:
            self.error(name, partial_at, f"transaction index size {len(data)} is not a multiple of "
                                         f"{TXN_ENTRY_SIZE} bytes")
        for t in entries:
            self.out.line(f"version: {t.version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
                          f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}",
                          {"type": "abortedTxn", "version": t.version, "producerId": t.producer_id,
                           "firstOffset": t.first_offset, "lastOffset": t.last_offset,
                           "lastStableOffset": t.last_stable_offset})
