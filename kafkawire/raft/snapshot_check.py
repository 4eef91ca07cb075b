"""A fetched snapshot checked chunk by chunk as its FetchSnapshot answers arrive (KIP-630).

The follower's core steps on the event loop, so the work a FetchSnapshot answer costs there
must be bounded by the answer's size, never by the snapshot's: the check keeps none of the
snapshot's bytes (the store has them), only the start of a batch that the next chunk
completes, and it reads each batch once, as its chunk arrives. What it checks:

* every batch decodes as a v2 record batch and its CRC holds (the CRC covers every byte of a
  batch past it, records included, so damage on the wire or on the leader's disk shows);
* no batch larger than ``MAX_SNAPSHOT_BATCH_BYTES`` (so the carried start of a batch stays
  bounded), and no bytes left after the last whole batch;
* a SnapshotHeader is the first record and a SnapshotFooter the last.

Only control batches' records are decoded (a snapshot has a few: the header, the footer, the
kraft.version and voters); the KRaftVersion and Voters records are kept, for the install to
set the control state from without reading the snapshot again. The data records are left to
the state machine's load, as Kafka's follower leaves them: KafkaRaftClient's
handleFetchSnapshotResponse appends the chunks and freezes the file without reading its
records, and its KRaftControlRecordStateMachine then reads the installed snapshot (CRCs
checked) on the raft thread. Checking the CRCs as the chunks come lets a damaged copy be
refused before the log is replaced (and before the rest of it is fetched), which Kafka does
not do.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from kafkawire.records import ControlRecordType, RecordBatch, iter_batches
from kafkawire.records.errors import CorruptRecordError
from kafkawire.records.record import ControlRecord

# Kafka's KafkaRaftClient.MAX_BATCH_SIZE_BYTES: no raft batch, nor a snapshot's, is larger.
MAX_SNAPSHOT_BATCH_BYTES = 8 * 1024 * 1024

_CONTROL_STATE = (ControlRecordType.KRAFT_VOTERS, ControlRecordType.KRAFT_VERSION)


class FetchedSnapshotCheck:
    """Feed it the chunks in order (``feed``), then ``finish``: each returns why the snapshot
    cannot be installed, or None. A refusal is final: later feeds return it again."""

    __slots__ = ("_carried", "_needed", "_carried_at", "_fed", "_first", "_last", "control_records", "problem")

    def __init__(self) -> None:
        # The start of a batch the next chunks complete, grown in place (a leader may send small
        # chunks: each appended once, never the whole copied again).
        self._carried = bytearray()
        self._needed = 0            # the bytes that batch declares (or a header needs)
        self._carried_at = 0        # where it starts in the snapshot
        self._fed = 0               # the snapshot's bytes fed so far
        self._first: tuple[bool, int | None] | None = None     # (control?, control type) of the first record
        self._last: tuple[bool, int | None] | None = None      # ... and of the last so far
        self.control_records: list[tuple[int, object]] = []    # (type, value) of KRaftVersion and Voters records
        self.problem: str | None = None

    @property
    def held_bytes(self) -> int:
        """What the check holds of the snapshot: the start of one batch at most."""
        return len(self._carried)

    def feed(self, chunk: bytes) -> str | None:
        """Check the batches ``chunk`` completes: the carried batch first, from the chunk's head
        (copying only what it lacks), then the chunk's own batches where they lie; each byte is
        read once, and none of the chunk is copied but the start of a batch it leaves."""
        if self.problem is not None:
            return self.problem
        origin, self._fed = self._fed, self._fed + len(chunk)
        used = 0
        while self._carried:
            take = min(self._needed - len(self._carried), len(chunk) - used)
            self._carried += chunk[used:used + take]
            used += take
            if len(self._carried) < self._needed:
                return None     # the chunk ends inside the carried batch still
            carried, self._carried = self._carried, bytearray()
            problem = self._check(carried, 0, self._carried_at)     # a batch, or a header whose batch is longer
            if problem is not None:
                return problem
        return self._check(chunk, used, origin) if used < len(chunk) else None

    def _check(self, buffer: bytes | bytearray, start: int, origin: int) -> str | None:
        """The whole batches of ``buffer`` from ``start`` (at byte ``origin`` of the snapshot),
        and the start of the one it ends inside carried over."""
        batches = iter_batches(buffer, start)
        try:
            for batch in batches:
                if not isinstance(batch, RecordBatch):
                    return self._refuse(f"the batch at byte {origin + batch.position} is not a v2 record batch")
                self._note(batch)
        except (CorruptRecordError, ValueError, IndexError) as e:
            return self._refuse(f"corrupt records in the batches from byte {origin + start}: {e}")
        tail = batches.tail
        if tail is None:
            return None
        if tail.needed > MAX_SNAPSHOT_BATCH_BYTES:
            return self._refuse(f"the batch at byte {origin + tail.position} declares {tail.needed} bytes, "
                                f"over the {MAX_SNAPSHOT_BATCH_BYTES} a snapshot's batch may have")
        self._carried = bytearray(memoryview(buffer)[tail.position:])
        self._needed, self._carried_at = tail.needed, origin + tail.position
        return None

    def finish(self) -> str | None:
        """After the last chunk: why the snapshot as a whole cannot be installed, or None."""
        if self.problem is not None:
            return self.problem
        if self._carried:
            return self._refuse(f"it ends inside a batch ({len(self._carried)} of {self._needed} bytes)")
        if self._first != (True, ControlRecordType.SNAPSHOT_HEADER):
            return self._refuse("its first record is not a SnapshotHeader")
        if self._last != (True, ControlRecordType.SNAPSHOT_FOOTER):
            return self._refuse("its last record is not a SnapshotFooter")
        return None

    def _note(self, batch: RecordBatch) -> None:
        if not batch.is_control:
            if batch.records_count > 0:      # the CRC covers the count: the records are there
                self._first = self._first or (False, None)
                self._last = (False, None)
            return
        for record in cast(Iterable[ControlRecord], batch):     # a control batch's are ControlRecords
            kind = record.control_type
            self._first = self._first or (True, kind)
            self._last = (True, kind)
            if kind in _CONTROL_STATE:
                self.control_records.append((kind, record.control_value))

    def _refuse(self, problem: str) -> str:
        self.problem = problem
        self._carried = bytearray()
        return problem


def check_fetched_snapshot(data: bytes) -> str | None:
    """Why the bytes of a whole fetched snapshot cannot be installed, or None (one chunk)."""
    check = FetchedSnapshotCheck()
    return check.feed(data) or check.finish()
