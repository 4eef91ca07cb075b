"""Kafka record batches in, Arrow record batches (the columns of ``columns.py``) out.

Why it is shaped like this: everything per record is done by C loops where CPython has
them. Records come out of the batch decoder once; ``map(attrgetter)`` pulls each wanted
field into a list; a binary column is one ``bytes.join`` of the (zero-copy) slices plus offsets
from ``accumulate``, handed to Arrow as buffers; values every record of a batch shares
(epoch, producer, flags) are stored once per batch and expanded by Arrow's run-end decoding.
Filters on offset and timestamp are applied to the finished columns by Arrow compute.
"""
from __future__ import annotations

import operator
from array import array
from itertools import accumulate, repeat
from operator import attrgetter

from kafkawire._extras import require

require("pyarrow", "spark", "reading Kafka logs into Arrow batches (kafkawire.spark)")
import pyarrow as pa
import pyarrow.compute as pc

from kafkawire.metadata.fast_json import json_text
from kafkawire.metadata.java_text import jackson_json, java_utf8
from kafkawire.metadata.record_json import PayloadDecoder, record_type_name
from kafkawire.records import CorruptRecordError
from kafkawire.records.control import (ControlRecordType, control_type_name, decode_control_value,
                                       parse_control_key)
from kafkawire.records.kraft_control import value_json

from .columns import HEADERS_TYPE, arrow_schema
from .record_columns import NativeColumns
from .run_columns import BatchRuns

__all__ = ["RowsBuilder", "RowFilter", "MetadataDecoder"]

# One C-level pass per column over the records (measured: five single-field passes cost
# a seventh of one five-field attrgetter pass followed by zip(*...)).
_KEY, _VALUE, _OFFSET, _TIMESTAMP, _HEADERS = map(attrgetter, ("key", "value", "offset", "timestamp", "headers"))
_HEADER_STRUCT = HEADERS_TYPE.value_type
_TS_TYPE = pa.timestamp("us", tz="UTC")
_MAX_MS = (2 ** 63 - 1) // 1000   # the largest millisecond count whose microseconds fit a long
_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1
# An offset delta is a varint of at most 5 bytes (35 bits): from a base offset inside these
# bounds no record's offset can pass int64, so only a batch outside them is checked record by record.
_SAFE_LOW, _SAFE_HIGH = _INT64_MIN + 2 ** 35, _INT64_MAX - 2 ** 35


class RowFilter:
    """Row conditions pushed down by Spark (see filters.py), applied to built columns.

    Timestamp bounds are in microseconds, Spark's unit, so a bound between two
    milliseconds compares exactly as Spark would."""

    def __init__(self, offset_min=None, offset_end=None, offset_in=None, timestamp_bounds=()):
        self.offset_min = offset_min
        self.offset_end = offset_end          # exclusive
        self.offset_in = offset_in            # frozenset or None
        self.timestamp_bounds = tuple(timestamp_bounds)   # (Arrow compute function, us)

    @property
    def active(self) -> bool:
        return (self.offset_min is not None or self.offset_end is not None
                or self.offset_in is not None or bool(self.timestamp_bounds))

    def batch_may_match(self, base_offset: int, last_offset: int, max_timestamp: int | None) -> bool:
        """False only when no record of the batch can pass: a cheap check of the header
        (``max_timestamp`` is a v2 batch's, None when unknown)."""
        if self.offset_min is not None and last_offset < self.offset_min:
            return False
        if self.offset_end is not None and base_offset >= self.offset_end:
            return False
        if self.offset_in is not None and not any(base_offset <= o <= last_offset for o in self.offset_in):
            return False
        if max_timestamp is not None:
            top = max_timestamp * 1000
            for op, us in self.timestamp_bounds:
                if (op == "greater_equal" and top < us) or (op == "greater" and top <= us):
                    return False
        return True

    def mask(self, offsets: pa.Array, timestamps_us: pa.Array):
        conditions = []
        if self.offset_min is not None:
            conditions.append(pc.greater_equal(offsets, self.offset_min))
        if self.offset_end is not None:
            conditions.append(pc.less(offsets, self.offset_end))
        if self.offset_in is not None:
            conditions.append(pc.is_in(offsets, pa.array(sorted(self.offset_in), pa.int64())))
        for op, us in self.timestamp_bounds:
            conditions.append(getattr(pc, op)(timestamps_us, us))
        result = conditions[0]
        for c in conditions[1:]:
            result = pc.and_(result, c)
        return result


def _binary_array(items: list) -> pa.Array:
    n = len(items)
    nulls = n - sum(map(operator.is_not, items, repeat(None)))
    if nulls == n:
        return pa.nulls(n, pa.binary())
    validity = None
    if nulls:
        validity = pa.array(list(map(operator.is_not, items, repeat(None))), pa.bool_()).buffers()[1]
        items = [b"" if x is None else x for x in items]
    data = b"".join(items)
    if len(data) > 0x7FFFFFFF:
        raise ValueError("one Arrow batch would hold more than 2 GiB of keys or values")
    offsets = array("i", [0])
    offsets.extend(accumulate(map(len, items)))
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)])


def _header_key(key: str) -> str:
    # Keys are decoded with surrogateescape so bad UTF-8 round-trips; Arrow strings must be
    # valid UTF-8, and Java's new String(bytes, UTF_8) shows bad bytes as U+FFFD (by its rule).
    try:
        key.encode("utf-8")
        return key
    except UnicodeEncodeError:
        return java_utf8(key.encode("utf-8", "surrogateescape"))


def _headers_array(headers: list) -> pa.Array:
    n = len(headers)
    if not any(headers):
        return pa.nulls(n, HEADERS_TYPE)
    keys = [_header_key(k) for hs in headers for k, _ in hs]
    values = [v for hs in headers for _, v in hs]
    struct = pa.StructArray.from_arrays([pa.array(keys, pa.string()), _binary_array(values)],
                                        fields=list(_HEADER_STRUCT))
    offsets = array("i", [0])
    offsets.extend(accumulate(map(len, headers)))
    empty = pa.array([not h for h in headers], pa.bool_())   # Spark's source: null, not []
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct, type=HEADERS_TYPE,
                                    mask=empty)


def _check_offsets(batch, records) -> None:
    """A hostile base offset can put a record's offset past int64 (which no column holds)."""
    if any(not _INT64_MIN <= r.offset <= _INT64_MAX for r in records):
        raise CorruptRecordError("a record's offset passes int64 (hostile batch header)", batch.position,
                                 batch.file)


def _control_types(batch, records) -> list:
    try:
        return [control_type_name(parse_control_key(r.key).type) for r in records]
    except CorruptRecordError as e:
        raise CorruptRecordError(f"control record key: {e.reason}", batch.position, batch.file) from None


def _control_json(type_id: int, value) -> tuple:
    """(version, JSON text) of a control record value, as kafka-dump-log prints it."""
    decoded = decode_control_value(type_id, value)
    if type_id in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return decoded.version, jackson_json({"coordinatorEpoch": decoded.coordinator_epoch})
    if hasattr(decoded, "to_json"):
        return decoded.version, jackson_json(value_json(decoded))
    return None, None   # a control type nobody knows: its raw value is in the value column


class MetadataDecoder:
    """(recordType, recordVersion, record JSON) for each record of a metadata-log batch:
    the type and data kafka-dump-log --cluster-metadata-decoder prints (MetadataRecordType
    name, JsonConverter form in Jackson's text); control records by their control type.
    A record that does not decode gets an error text instead, as dump-log reports it and
    goes on."""

    def __init__(self):
        self._payload = PayloadDecoder()

    def __call__(self, batch, records) -> list:
        """One entry per record: the three values, or a str saying why it does not decode."""
        out = []
        for r in records:
            if batch.is_control:
                try:
                    key = parse_control_key(r.key)
                    out.append((control_type_name(key.type), *_control_json(key.type, r.value)))
                except CorruptRecordError as e:
                    out.append(f"control record at offset {r.offset}: {e.reason}")
                continue
            payload = self._payload(r.value)
            if payload.error is not None:
                out.append(f"the record at offset {r.offset} is not a metadata record: {payload.error}")
                continue
            m = payload.record
            out.append((record_type_name(type(m.message).NAME), m.version,
                        json_text(m.message, m.version)))
        return out


class RowsBuilder:
    """Accumulates the records of one topic-partition; ``take()`` returns an Arrow batch."""

    def __init__(self, names, topic: str, partition: int, *, decode_metadata: bool = False,
                 row_filter: RowFilter | None = None, native: bool = False):
        self.names = list(names)
        self.schema = arrow_schema(self.names)
        self.topic = topic
        self.partition = partition
        self.decode_metadata = decode_metadata and "recordType" in self.names
        self.row_filter = row_filter if row_filter is not None and row_filter.active else None
        self._want = set(self.names)
        # The record-level columns: the C extension's buffers (native), or Record objects
        # whose fields are pulled out per column at take() (the pure path, its oracle).
        self._record_names = [n for n in ("key", "value", "headers") if n in self._want]
        self._native = NativeColumns(self._record_names) if native else None
        self._runs = BatchRuns(topic, partition)
        self._reset()

    def _reset(self):
        self._records = []        # the pure path's Record objects
        self._runs.reset()
        self._control = []        # (row, type name) for control records
        self._meta = []           # (row, type, version, json), when decoding metadata
        self._meta_failed = []    # (row, reason): undecodable metadata values
        self.rows = 0
        self.bytes = 0
        self.native_rows = False  # the rows are in the native columns (v2 batches read natively)

    def takes_natively(self, batch) -> bool:
        """Whether ``add`` reads this batch natively: a v2 batch, with the C extension. A
        take holds rows of one kind, so the reader takes the rows before the kind changes."""
        return self._native is not None and batch.magic == 2

    def add(self, batch, records: list | None, *, metadata=None, where: str = "") -> None:
        """Add one batch's records: ``records`` are its decoded Record objects, which the
        native builder needs only for a control batch (None: it decodes them when needed).
        A batch goes in whole or raises (CorruptRecordError) with nothing added.
        ``metadata``: MetadataDecoder output, whose error texts go to the corruption column
        (with ``where``, the batch's place)."""
        if not _SAFE_LOW <= batch.base_offset <= _SAFE_HIGH:
            _check_offsets(batch, list(batch) if records is None else records)
        native = self._native is not None and batch.magic == 2
        if self.rows and native != self.native_rows:
            raise AssertionError("take() the rows before adding a batch of the other kind")
        if not native:
            records = list(batch) if records is None else records   # a legacy message set
            n = len(records)
            if not n:
                return
            control = _control_types(batch, records) if batch.is_control else None
            self._records += records
        else:
            control = None
            if batch.is_control:   # the control types first: a bad key must leave nothing added
                control = _control_types(batch, list(batch) if records is None else records)
            n = self._native.add(batch)
            if not n:
                return
        first = self.rows
        self.native_rows = native
        self.rows += n
        # Decompressed bytes for a compressed batch (cached by the decoding), so that one
        # take's binary columns stay far under Arrow's 2 GiB (32 MiB plus one batch's cap).
        self.bytes += len(batch.decompressed_records()) if batch.magic == 2 and batch.compression_type \
            else batch.size_in_bytes
        self._runs.add(batch, n)
        if control is not None:
            self._control += zip(range(first, first + n), control)
        if metadata is not None:
            for row, entry in enumerate(metadata, first):
                if isinstance(entry, str):
                    self._meta_failed.append((row, f"{entry} ({where})"))
                else:
                    self._meta.append((row, *entry))

    def _sparse(self, entries, pos: int, type_) -> pa.Array:
        if not entries:
            return pa.nulls(self.rows, type_)
        column = [None] * self.rows
        for entry in entries:
            column[entry[0]] = entry[pos]
        return pa.array(column, type_)

    def take(self) -> pa.RecordBatch | None:
        """The rows added since the last take, filtered; None if there were none."""
        if not self.rows:
            return None
        want = self._want
        if not self.native_rows:
            columns = self._record_arrays()
        else:
            columns = self._native.take(["offset", "timestamp", *self._record_names])
        offsets = columns["offset"]
        ts_us = self._timestamps_us(offsets, columns["timestamp"])
        columns["timestamp"] = ts_us.cast(_TS_TYPE)
        columns.update(self._runs.columns(self.names, self.rows))
        if "controlType" in want:
            columns["controlType"] = self._sparse(self._control, 1, pa.string())
        if "recordType" in want:
            # Only the metadata log's records are decoded (self._meta stays empty on any
            # other partition), but the schema has these columns for every row: null there.
            columns["recordType"] = self._sparse(self._meta, 1, pa.string())
            columns["recordVersion"] = self._sparse(self._meta, 2, pa.int32())
            columns["record"] = self._sparse(self._meta, 3, pa.string())
        if "corruption" in want:
            columns["corruption"] = self._sparse(self._meta_failed, 1, pa.string())
        batch = pa.RecordBatch.from_arrays([columns[n] for n in self.names], schema=self.schema)
        if self.row_filter is not None:
            batch = batch.filter(self.row_filter.mask(offsets, ts_us))
        self._reset()
        return batch if batch.num_rows else None

    def _record_arrays(self) -> dict:
        """The record-level columns of the Record objects added (the pure path)."""
        records = self._records
        timestamps = list(map(_TIMESTAMP, records))
        try:
            timestamps = pa.array(timestamps, pa.int64())
        except OverflowError:   # kept at int64's ends, as the native path keeps them: out of range
            timestamps = pa.array([max(_INT64_MIN, min(t, _INT64_MAX)) for t in timestamps], pa.int64())
        columns = {"offset": pa.array(list(map(_OFFSET, records)), pa.int64()), "timestamp": timestamps}
        if "key" in self._want:
            columns["key"] = _binary_array(list(map(_KEY, records)))
        if "value" in self._want:
            columns["value"] = _binary_array(list(map(_VALUE, records)))
        if "headers" in self._want:
            columns["headers"] = _headers_array(list(map(_HEADERS, records)))
        return columns

    def _timestamps_us(self, offsets: pa.Array, timestamps_ms: pa.Array) -> pa.Array:
        """Spark's microseconds, or the error naming the first record whose timestamp has none."""
        try:
            return pc.multiply_checked(timestamps_ms, 1000)
        except pa.ArrowInvalid:
            bad = pc.or_(pc.greater(timestamps_ms, _MAX_MS), pc.less(timestamps_ms, -_MAX_MS))
            at = pc.index(bad, True).as_py()
            raise CorruptRecordError(f"timestamp out of range at offset {offsets[at].as_py()} of "
                                     f"{self.topic}-{self.partition}") from None

    def skipped_row(self, skipped) -> pa.RecordBatch:
        """One row standing for a skipped corrupt region (failOnCorruption=false)."""
        row = {n: None for n in self.names}
        row.update(topic=self.topic, partition=self.partition, corruption=skipped.describe())
        return pa.RecordBatch.from_pylist([{n: row[n] for n in self.names}], schema=self.schema)
