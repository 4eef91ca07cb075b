"""Read the record batches of a byte range of a segment or snapshot file, read-only.

The file is read with ``pread`` in chunks of whole batches (bounded memory, and safe if the
file is truncated under us, where an mmap would fault); a remote file (files.py) the same
way, one ranged read per chunk. A range is ``[start, stop)`` in
batch start positions, read no further than ``limit`` bytes (the file size when the read
was planned): a batch that crosses ``limit`` was still being written when we looked, a torn
tail, and is left for a later read, never half-read.

Corruption (bad framing, bad CRC) either raises CorruptRecordError naming the file and the
absolute byte position, or, when skipping, yields a ``Skipped`` entry and carries on:
past the bad batch when its length field can be believed, else at the next offset-index
entry (an index position is always a batch start), else nowhere (the rest of the range is
skipped and reported as such).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from kafkawire.records import CorruptRecordError, iter_batches
from kafkawire.records.layout import HEADER_SIZE_UP_TO_MAGIC
from kafkawire.records.scan import believable_length

from .files import LOCAL, Files

__all__ = ["Skipped", "scan_batches", "DEFAULT_CHUNK_BYTES"]

DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Skipped:
    """A corrupt region left out: where it starts, how many bytes, why."""

    file: str
    position: int
    length: int
    reason: str

    def describe(self) -> str:
        return f"{self.reason} (at byte {self.position} in {self.file}; {self.length} bytes skipped)"


def _believable_length(file, position: int, limit: int) -> int | None:
    """The batch size at ``position`` if it is sane and inside the file, else None."""
    return believable_length(file.pread(HEADER_SIZE_UP_TO_MAGIC, position), limit - position)


def scan_batches(path: str, start: int = 0, stop: int | None = None, limit: int | None = None, *,
                 verify_crc: bool = True, skip_corrupt: bool = False, resync_positions=(),
                 torn_tail_is_corrupt: bool = False, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 files: Files = LOCAL):
    """Yield ``(position, batch)`` for every batch starting in ``[start, stop)`` of ``path``
    (and ``Skipped`` entries when ``skip_corrupt``).

    ``limit`` defaults to the file size now, ``stop`` to ``limit``. ``resync_positions``
    (sorted batch start positions, from the offset index) are where reading may resume after
    a batch whose length cannot be trusted; a "torn" batch with index entries after it is
    a corrupt length field, not a write in progress. ``torn_tail_is_corrupt`` is for files
    that are complete by construction (snapshots, rolled segments).
    """
    file = files.open(path)
    try:
        if limit is None:
            limit = file.size()
        if stop is None or stop > limit:
            stop = limit
        pos = start
        want = chunk_bytes

        def skipped(bad: int, reason: str) -> Skipped:
            length = _believable_length(file, bad, limit)
            if length is None:
                i = bisect.bisect_right(resync_positions, bad)
                length = (resync_positions[i] if i < len(resync_positions) else max(stop, bad + 1)) - bad
            return Skipped(path, bad, length, reason)

        while pos < stop:
            data = file.pread(min(want, limit - pos), pos)
            if not data:
                return   # the file shrank under us (truncation): nothing more to read
            it = iter_batches(data, verify_crc=verify_crc, file=path)
            try:
                for batch in it:
                    if pos + batch.position >= stop:
                        return
                    yield pos + batch.position, batch
            except CorruptRecordError as e:
                bad = pos + it.position
                where = None if e.position is None else pos + e.position
                if not skip_corrupt:
                    raise CorruptRecordError(e.reason, where, path) from None
                gap = skipped(bad, e.reason if where in (None, bad) else f"{e.reason} (byte {where})")
                yield gap
                pos, want = bad + gap.length, chunk_bytes
                continue
            tail = it.tail
            if tail is None:
                pos, want = pos + len(data), chunk_bytes
            elif tail.position > 0:
                pos, want = pos + tail.position, max(chunk_bytes, tail.needed)
            elif pos + tail.needed <= limit:
                want = tail.needed   # one batch bigger than the chunk: read it whole
            else:
                # The batch runs past what was there when the read was planned: a write in
                # progress, unless the file is complete or the index knows batches after it.
                later = resync_positions and resync_positions[-1] > pos
                if not (torn_tail_is_corrupt or later):
                    return
                reason = f"batch declares {tail.needed} bytes but only {limit - pos} are left in the file"
                if not skip_corrupt:
                    raise CorruptRecordError(reason, pos, path)
                gap = skipped(pos, reason)
                yield gap
                pos, want = pos + gap.length, chunk_bytes
    finally:
        file.close()
