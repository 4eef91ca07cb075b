"""Kafka record batches, byte-compatible with the Java implementation.

    from kafkawire.records import iter_batches, RecordBatchBuilder

    for batch in iter_batches(segment_bytes):       # v2 batches and legacy messages
        for record in batch:
            record.offset, record.key, record.value, record.headers

Modules: ``varint`` (zigzag varints), ``batch`` (the v2 reader; ``record``, ``record_decoding``,
``builder`` and ``layout`` are its parts), ``compression`` (Java-framed codecs), ``control``
(control record keys/values), ``legacy`` (magic 0/1, read-only), ``scan`` (``scan_log``: every
entry of a damaged buffer, for the tools that show one), ``errors`` (CorruptRecordError).

``iter_batches`` is the strict reader (the first problem raises); ``scan_log`` the tolerant one.
"""

from __future__ import annotations

import struct

from .batch import (
    ControlRecord,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    build_batch,
    build_control_batch,
    build_end_txn_marker_batch,
)
from .compression import DEFAULT_MAX_DECOMPRESSED_SIZE, GZIP, LZ4, NONE, SNAPPY, ZSTD
from .control import ControlRecordKey, ControlRecordType, EndTxnMarker
from . import kraft_control  # noqa: F401 - registers the KRaft control value decoders
from .errors import CorruptRecordError
from .layout import HEADER_SIZE_UP_TO_MAGIC as _HEADER_SIZE_UP_TO_MAGIC
from .layout import LOG_OVERHEAD as _LOG_OVERHEAD
from .legacy import LegacyRecord, LegacyRecordBatch
from .scan import MIN_ENTRY_SIZE as _MIN_SIZE
from .scan import Corruption, TruncatedTail, scan_log

__all__ = [
    "iter_batches",
    "BatchIterator",
    "TruncatedTail",
    "scan_log",
    "Corruption",
    "RecordBatch",
    "RecordBatchBuilder",
    "Record",
    "ControlRecord",
    "LegacyRecordBatch",
    "LegacyRecord",
    "ControlRecordKey",
    "ControlRecordType",
    "EndTxnMarker",
    "CorruptRecordError",
    "build_batch",
    "build_control_batch",
    "build_end_txn_marker_batch",
    "NONE",
    "GZIP",
    "SNAPPY",
    "LZ4",
    "ZSTD",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
]

_OFFSET_AND_SIZE = struct.Struct(">qi")


class BatchIterator:
    """Iterates the batches of a buffer; see ``iter_batches``.

    After iteration, ``tail`` is a TruncatedTail if the buffer ended inside a batch and
    None if it ended on a batch boundary; ``position`` is the end of the last whole batch.

    Unlike ``scan_log`` it reads the magic before it calls a batch torn, so that a log's
    recovery treats a bad magic in a partial last batch as corruption, not as a torn write.
    """

    def __init__(self, buf, start, verify_crc, max_decompressed_size, file):
        if isinstance(buf, memoryview) and (buf.format != "B" or buf.ndim != 1):
            buf = buf.cast("B")
        self._buf = buf
        self.position = start
        self.tail: TruncatedTail | None = None
        self.done = False
        self._verify = verify_crc
        self._max = max_decompressed_size
        self._file = file

    def __iter__(self):
        return self

    def __next__(self) -> RecordBatch | LegacyRecordBatch:
        if self.done:
            raise StopIteration
        buf, pos, file = self._buf, self.position, self._file
        left = len(buf) - pos
        if left == 0:
            self.done = True
            raise StopIteration
        if left < _HEADER_SIZE_UP_TO_MAGIC:
            self.tail = TruncatedTail(pos, left, _HEADER_SIZE_UP_TO_MAGIC)
            self.done = True
            raise StopIteration
        # The same order of checks as Java's FileLogInputStream.nextBatch: a size below
        # the smallest message is corruption, wherever it is; a size running past the end
        # is a torn write.
        _, size = _OFFSET_AND_SIZE.unpack_from(buf, pos)
        if size < _MIN_SIZE:
            self.done = True
            raise CorruptRecordError(f"found record size {size} smaller than minimum record "
                                     f"overhead {_MIN_SIZE}", pos + 8, file)
        magic = buf[pos + 16]
        if magic > 2:
            self.done = True
            raise CorruptRecordError(f"unknown magic {magic - 256 if magic > 127 else magic}",
                                     pos + 16, file)
        if size > left - _LOG_OVERHEAD:
            self.tail = TruncatedTail(pos, left, size + _LOG_OVERHEAD)
            self.done = True
            raise StopIteration
        try:
            cls = RecordBatch if magic == 2 else LegacyRecordBatch
            batch = cls.from_buffer(buf, pos, max_decompressed_size=self._max, file=file)
            if self._verify:
                batch.verify_crc()
        except CorruptRecordError:
            self.done = True
            raise
        self.position = batch.end_position
        return batch


def iter_batches(buf, start: int = 0, *, verify_crc: bool = True,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                 file: str | None = None) -> BatchIterator:
    """Yield the batches stored back to back in ``buf`` (a log segment, a snapshot, a
    fetch response's records), v2 batches as RecordBatch and magic 0/1 messages as
    LegacyRecordBatch.

    A partial batch at the end stops the iteration cleanly and is reported in the
    iterator's ``tail``; anything else wrong (bad size, magic or CRC) raises
    CorruptRecordError with its byte position (and ``file`` if given).
    """
    return BatchIterator(buf, start, verify_crc, max_decompressed_size, file)
