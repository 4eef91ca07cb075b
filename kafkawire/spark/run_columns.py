"""The columns whose value every record of a batch shares, and those of the whole partition.

``leaderEpoch``, ``baseOffset``, ``producerId``, ``producerEpoch``, ``baseSequence``,
``isTransactional``, ``isControl`` and ``timestampType`` are one value per batch, repeated
for its records; ``topic`` and ``partition`` one value per read. Why they are built from
bytes: Arrow's run-end decoding and ``pa.repeat`` cost 3-6 ns a row and column (measured,
pyarrow 26), a tenth of a microsecond a row over these ten columns, as much as decoding the
records natively; a fixed-width column is its little-endian values end to end, so a value
repeated is one ``bytes * n`` and a column of runs one ``bytes.join`` of a product per batch,
each a C loop over memory. A string column (the topic) is built once and sliced after.
"""
from __future__ import annotations

import operator
import struct
from array import array
from operator import attrgetter

from kafkawire._extras import require

require("pyarrow", "spark", "reading Kafka logs into Arrow batches (kafkawire.spark)")
import pyarrow as pa  # noqa: E402 - after the check that names the extra
import pyarrow.compute as pc  # noqa: E402

__all__ = ["BatchRuns", "RUN_COLUMNS", "constant_column"]

# column -> (RecordBatch attribute, Arrow type)
RUN_COLUMNS = {
    "leaderEpoch": ("partition_leader_epoch", pa.int32()), "baseOffset": ("base_offset", pa.int64()),
    "producerId": ("producer_id", pa.int64()), "producerEpoch": ("producer_epoch", pa.int16()),
    "baseSequence": ("base_sequence", pa.int32()), "isTransactional": ("is_transactional", pa.bool_()),
    "isControl": ("is_control", pa.bool_()), "timestampType": ("timestamp_type", pa.int32()),
}
_PACK = {pa.int64(): struct.Struct("<q").pack, pa.int32(): struct.Struct("<i").pack,
         pa.int16(): struct.Struct("<h").pack}


def _same(values: list) -> bool:
    first = values[0]
    return all(v == first for v in values)


def constant_column(value, type_, n: int) -> pa.Array:
    """``value`` (not None) n times, for a fixed-width or boolean type."""
    if type_ == pa.bool_():
        data = (b"\xff" if value else b"\x00") * ((n + 7) // 8)
    else:
        data = _PACK[type_](value) * n
    return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(data)])


def _run_column(values: list, counts: array, type_) -> pa.Array:
    n = sum(counts)
    if _same(values):
        return constant_column(values[0], type_, n)
    if type_ == pa.bool_():   # mixed flags within one Arrow batch: rare, Arrow's decoder does it
        ends = pa.array(list(_accumulate(counts)), pa.int32())
        return pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(ends, pa.array(values, type_)))
    data = b"".join(map(operator.mul, map(_PACK[type_], values), counts))
    return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(data)])


def _accumulate(counts):
    total = 0
    for c in counts:
        total += c
        yield total


class BatchRuns:
    """The batches (their header fields) of the rows added since the last ``take``."""

    def __init__(self, topic: str, partition: int):
        self.topic, self.partition = topic, partition
        self._topic_column = pa.array([], pa.string())
        self.reset()

    def reset(self) -> None:
        self._batches = []
        self._counts = array("q")

    def add(self, batch, n: int) -> None:
        self._batches.append(batch)
        self._counts.append(n)

    def _topic(self, n: int) -> pa.Array:
        if len(self._topic_column) < n:
            self._topic_column = pa.repeat(pa.scalar(self.topic, pa.string()), max(n, 2 * len(self._topic_column)))
        return self._topic_column.slice(0, n)

    def columns(self, names, n: int) -> dict:
        """{name: column} of ``n`` rows for those of ``names`` that are built here."""
        out = {}
        for name in names:
            if name in RUN_COLUMNS:
                attribute, type_ = RUN_COLUMNS[name]
                out[name] = _run_column(list(map(attrgetter(attribute), self._batches)), self._counts, type_)
            elif name == "topic":
                out[name] = self._topic(n)
            elif name == "partition":
                out[name] = constant_column(self.partition, pa.int32(), n)
        return out
