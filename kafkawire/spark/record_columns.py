"""Record batches straight into Arrow columns (issue 26): ``records_to_arrow``.

One call reads every v2 batch of a buffer (a segment slice, a fetch response's records) and
returns one ``pyarrow.Table`` with the columns of Spark's Kafka source for the records
themselves - ``key``, ``value`` (binary), ``offset`` (int64), ``timestamp`` (int64, ms, what
``Record.timestamp`` is), ``headers`` (list<struct<key: string, value: binary>>, null for a
record without headers; header keys that are not UTF-8 shown by Java's rule, as Spark's
source shows them) - and, when given, the partition-level ``topic`` and ``partition``
columns. Control batches are skipped (their records are markers, not data), CRCs are
checked (``verify_crc``) and compressed batches decompressed on the way.

With the C extension the records go from the bytes to the column buffers with no Python
object per record (kafkawire._native_records.Columns); without it (or ``native=False``) the
records are read as Record objects and the columns built from them: that path is the oracle
the native one is tested against (same table, same errors). A partial batch at the end is
left out, as ``iter_batches`` leaves it; legacy (magic 0/1) messages are refused.
"""
from __future__ import annotations

import struct

from kafkawire import _native
from kafkawire._extras import require

require("pyarrow", "spark", "decoding record batches into Arrow tables (kafkawire.spark.record_columns)")
import pyarrow as pa  # noqa: E402 - after the check that names the extra

from kafkawire.metadata.java_text import java_utf8
from kafkawire.records import DEFAULT_MAX_DECOMPRESSED_SIZE, RecordBatch, iter_batches
from kafkawire.records.layout import INT64_MAX, TIMESTAMP_TYPE_MASK

from .columns import HEADERS_TYPE

__all__ = ["records_to_arrow", "RECORD_COLUMNS", "NativeColumns", "arrays_from_buffers"]

RECORD_COLUMNS = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("offset", pa.int64()),
                            ("timestamp", pa.int64()), ("headers", HEADERS_TYPE)])
_HEADER_FIELDS = list(HEADERS_TYPE.value_type)


def records_to_arrow(buf, *, topic: str | None = None, partition: int | None = None, verify_crc: bool = True,
                     max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE, file: str | None = None,
                     native: bool | None = None) -> pa.Table:
    """The data records of the v2 batches in ``buf`` as one Arrow table (module docstring).

    Bad bytes raise the CorruptRecordError iterating the batches would raise; ``native``
    None uses the C extension when it is built.
    """
    def batches(start=0):
        return iter_batches(buf, start, verify_crc=verify_crc, max_decompressed_size=max_decompressed_size,
                            file=file)
    if native is None:
        native = _native.records is not None
    table = None
    if native:
        try:
            table = _native_table(buf, batches, verify_crc, max_decompressed_size)
        except BufferError:  # not one contiguous run of bytes: the record objects' path reads it
            pass
    if table is None:
        table = _table_from_records(batches())
    n = table.num_rows
    if partition is not None:
        table = table.add_column(0, "partition", _repeated(partition, pa.int32(), n, native))
    if topic is not None:
        table = table.add_column(0, "topic", _repeated(topic, pa.string(), n, native))
    return table


def _repeated(value, type_: pa.DataType, n: int, native: bool) -> pa.Array:
    """``value`` n times. An int32 is one ``bytes * n``; a str's buffers come from the C
    extension (pa.repeat took 85 and 130 us for 10,000 rows, as long as decoding a tenth of
    them); any other value (a partition past int32, a topic not ASCII - Kafka's topic names
    are -, or with native False) goes to pa.repeat, which words its errors."""
    if native and type(value) is int and type_ == pa.int32() and -(1 << 31) <= value < 1 << 31:
        return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(struct.pack("<i", value) * n)])
    if native and type(value) is str and type_ == pa.string() and value.isascii():
        offsets, data = _native.records.repeat_binary(value.encode(), n)
        return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return pa.repeat(pa.scalar(value, type_), n)


def _data_batches(batches):
    for batch in batches:
        if not isinstance(batch, RecordBatch):
            raise ValueError(f"records_to_arrow reads v2 record batches; the one at byte {batch.position} "
                             f"is a magic {batch.magic} message set (read it with iter_batches)")
        if not batch.is_control:
            yield batch


def _native_table(buf, batches, verify_crc: bool, max_decompressed_size: int) -> pa.Table:
    """Plain batches (complete, CRC right, uncompressed or compressed with a codec compiled in
    and good compressed data) go through the C loop in one pass (Columns.add_batches); each
    other one through iter_batches, which decompresses it or raises its error, then
    Columns.add; then the C loop again from the next batch."""
    assert _native.records is not None
    columns = _native.records.Columns(java_utf8)
    position = 0
    while True:
        position = columns.add_batches(buf, position, verify_crc, max_decompressed_size)
        batch = next(batches(position), None)
        if batch is None:  # the end, or a torn tail (left out, as iter_batches leaves it)
            return _table_from_buffers(columns.finish())
        for data_batch in _data_batches((batch,)):
            data, start, end, count, compressed = data_batch.records_range()
            if count:
                error = columns.add(data, start, end, count, data_batch.base_offset, data_batch.base_timestamp,
                                    data_batch.max_timestamp if data_batch.attributes & TIMESTAMP_TYPE_MASK else None)
                if error is not None:
                    raise data_batch.fail_at(compressed)(*error)
        position = batch.end_position


def _binary_column(type_, n: int, column) -> pa.Array:
    validity, offsets, data, nulls = column
    return pa.Array.from_buffers(type_, n, [pa.py_buffer(validity) if nulls else None, pa.py_buffer(offsets),
                                            pa.py_buffer(data)], null_count=nulls)


def _headers_column(b: dict) -> pa.Array:
    n_headers = memoryview(b["header_key"][1]).nbytes // 4 - 1  # from the int32 offsets
    pairs = pa.StructArray.from_arrays([_binary_column(pa.string(), n_headers, b["header_key"]),
                                        _binary_column(pa.binary(), n_headers, b["header_value"])],
                                       fields=_HEADER_FIELDS)
    validity, offsets, nulls = b["headers"]
    return pa.Array.from_buffers(HEADERS_TYPE, b["n"], [pa.py_buffer(validity) if nulls else None,
                                                        pa.py_buffer(offsets)], null_count=nulls, children=[pairs])


def arrays_from_buffers(b: dict, names=("key", "value", "offset", "timestamp", "headers")) -> dict:
    """{column: Arrow array} of Columns.finish()'s buffers, for the ``names`` asked for (a
    Columns made without a column has no buffer for it: leave it out of ``names``)."""
    n = b["n"]
    out = {}
    for name in names:
        if name in ("key", "value"):
            out[name] = _binary_column(pa.binary(), n, b[name])
        elif name == "headers":
            out[name] = _headers_column(b)
        else:
            out[name] = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(b[name])])
    return out


def _table_from_buffers(b: dict) -> pa.Table:
    arrays = arrays_from_buffers(b)
    return pa.Table.from_arrays([arrays[name] for name in RECORD_COLUMNS.names], schema=RECORD_COLUMNS)


class NativeColumns:
    """The record columns of batches added one at a time, by the C extension (the Spark
    reader's hot path): ``add(batch)`` decodes a v2 batch's records (decompressing them) or
    raises the CorruptRecordError iterating it would, with none of its records kept;
    ``take(names)`` hands over the arrays built so far. Columns left out of ``wanted`` are
    never copied. A timestamp past int64 is kept as INT64_MAX or INT64_MIN (the Spark reader
    reports every timestamp it cannot show as out of range)."""

    def __init__(self, wanted=("key", "value", "headers")):
        assert _native.records is not None
        self._columns = _native.records.Columns(java_utf8, "key" in wanted, "value" in wanted,
                                                "headers" in wanted, True)

    def add(self, batch) -> int:
        """Add the batch's records; returns how many."""
        data, start, end, count, compressed = batch.records_range()
        if count:
            error = self._columns.add(data, start, end, count, batch.base_offset, batch.base_timestamp,
                                      batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_MASK else None)
            if error is not None:
                raise batch.fail_at(compressed)(*error)
        return count

    def take(self, names) -> dict:
        return arrays_from_buffers(self._columns.finish(), names)


def _header_key(key: str) -> str:
    raw = key.encode("utf-8", "surrogateescape")  # the stored bytes
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return java_utf8(raw)


def _int64(value: int) -> int:
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise OverflowError("a record's offset or timestamp passes int64 (hostile batch header)")
    return value


def _table_from_records(batches) -> pa.Table:
    """The oracle: the same table built from Record objects."""
    keys, values, offsets, timestamps, headers = [], [], [], [], []
    for batch in _data_batches(batches):
        for r in batch:
            offsets.append(_int64(r.offset))
            timestamps.append(_int64(r.timestamp))
            keys.append(None if r.key is None else bytes(r.key))
            values.append(None if r.value is None else bytes(r.value))
            headers.append([{"key": _header_key(k), "value": None if v is None else bytes(v)}
                            for k, v in r.headers] or None)
    return pa.Table.from_arrays([pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
                                 pa.array(offsets, pa.int64()), pa.array(timestamps, pa.int64()),
                                 pa.array(headers, HEADERS_TYPE)], schema=RECORD_COLUMNS)
