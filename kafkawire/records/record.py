"""One record of a v2 batch (DefaultRecord in the Java client), as the reader hands it out."""
from __future__ import annotations

from .control import ControlRecordKey, decode_control_value, parse_control_key
from .layout import INT32_MAX, NO_SEQUENCE

__all__ = ["Record", "ControlRecord", "increment_sequence"]


class Record:
    """One record of a v2 batch.

    ``timestamp`` is what Java's ``Record.timestamp()`` returns (the batch max timestamp
    for LOG_APPEND_TIME batches); ``timestamp_delta``, ``offset_delta`` and
    ``attributes`` are the raw stored fields, kept so a batch can be re-encoded byte for
    byte. ``key``/``value`` and header values are memoryviews or None; ``headers`` is a
    tuple of ``(str, memoryview | None)``, keys decoded with ``surrogateescape`` so that
    invalid UTF-8 still round-trips. ``sequence`` is the producer sequence (-1 for
    non-idempotent batches). ``batch`` is the RecordBatch the record came from.
    """

    # The batch supplies what every record shares (base offset, base sequence), so the
    # per-record object stays small: creating it is a large part of decoding cost.
    __slots__ = ("offset", "timestamp", "key", "value", "headers", "attributes",
                 "timestamp_delta", "batch")

    def __init__(self, offset, timestamp, key, value, headers, attributes,
                 timestamp_delta, batch):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.attributes = attributes
        self.timestamp_delta = timestamp_delta
        self.batch = batch

    is_control = False

    @property
    def offset_delta(self) -> int:
        return self.offset - self.batch.base_offset

    @property
    def sequence(self) -> int:
        """Producer sequence (DefaultRecord.sequence): -1 unless the batch is idempotent."""
        base_sequence = self.batch.base_sequence
        if base_sequence < 0:
            return NO_SEQUENCE
        return increment_sequence(base_sequence, self.offset - self.batch.base_offset)

    _FIELDS = ("offset", "timestamp", "key", "value", "headers", "attributes",
               "timestamp_delta", "offset_delta", "sequence")

    def _fields(self):
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other):
        # memoryview == bytes compares contents, so records compare by value.
        if not isinstance(other, Record):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # compared by value, so not hashable

    def __repr__(self):
        key = None if self.key is None else bytes(self.key)
        value = None if self.value is None else bytes(self.value)
        if value is not None and len(value) > 64:
            value = value[:64] + b"..."
        return (f"{type(self).__name__}(offset={self.offset}, timestamp={self.timestamp}, "
                f"key={key!r}, value={value!r}, headers={len(self.headers)})")


class ControlRecord(Record):
    """A record of a control batch: its key is a ControlRecordKey (version, type)."""

    __slots__ = ()
    is_control = True

    @property
    def control_key(self) -> ControlRecordKey:
        return parse_control_key(self.key)

    @property
    def control_type(self) -> int:
        return self.control_key.type

    @property
    def control_value(self):
        """The value decoded by the hook in ``control.CONTROL_VALUE_DECODERS`` (raw
        memoryview for types nobody registered yet)."""
        return decode_control_value(self.control_key.type, self.value)


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: producer sequences wrap from 2^31-1 to 0."""
    sequence += increment
    return sequence - 0x80000000 if sequence > INT32_MAX else sequence
