"""The record-level checks of Kafka's LogValidator.validateRecord for one produced v2 batch, and
the answer Kafka gives when records fail them (RecordValidationException: the partition's error,
its ``error_message`` and one ``record_errors`` entry per failed record).

Per record, the first rule it breaks is its error (Kafka's order):

* a compacted topic (``cleanup.policy`` containing ``compact``) and a record without a key:
  INVALID_RECORD, "Compacted topic cannot accept message without key in topic partition ...";
* a CreateTime topic, a record with a timestamp (not -1) more than ``message.timestamp.before.max.ms``
  before the broker's clock or more than ``message.timestamp.after.max.ms`` after it:
  INVALID_TIMESTAMP, "Timestamp ... of message with offset ... is out of range. ...";
* otherwise a batch whose timestamp type the producer set to LogAppendTime: INVALID_TIMESTAMP,
  "Invalid timestamp type in message ...".

Any INVALID_TIMESTAMP makes the partition's error INVALID_TIMESTAMP, else INVALID_RECORD; no
record of the batch is appended. The arithmetic is Java's (64-bit, wrapping), so that hostile
timestamps get Kafka's verdict and Kafka's text.

``RecordRules.all_pass`` is the fast test for the C record parser's columns (no Python object
per record): when it cannot vouch for every record, ``record_errors`` (the oracle, record by
record) decides.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass

from kafkawire import _native
from kafkawire.protocol.error_codes import Errors

__all__ = ["RecordRules", "RecordErrors", "record_errors", "raise_record_errors"]

NO_TIMESTAMP = -1
LONG_MAX, LONG_MIN = (1 << 63) - 1, -(1 << 63)
_INVALID_TIMESTAMP_TEXT = "One or more records have been rejected due to invalid timestamp"


def java_long(value: int) -> int:
    """``value`` as Java's long arithmetic leaves it (two's complement, 64 bits)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


class RecordErrors(Exception):
    """Records of the batch broke LogValidator's record rules: ``code`` is the partition's error,
    ``errors`` the ``(batch_index, message)`` pairs of ProduceResponse's ``record_errors``."""

    def __init__(self, code: int, message: str, errors: list[tuple[int, str]]):
        super().__init__(message)
        self.code = code
        self.errors = errors


@dataclass(frozen=True)
class RecordRules:
    """What the topic asks of each record: ``create_time`` unless ``message.timestamp.type`` is
    LogAppendTime; the bounds ``before_max_ms``/``after_max_ms``; ``compacted`` for a
    ``cleanup.policy`` with compact; ``now_ms`` the broker's clock."""
    now_ms: int
    create_time: bool = True
    before_max_ms: int = LONG_MAX
    after_max_ms: int = 3600000
    compacted: bool = False

    def all_pass(self, log_append_batch: bool, timestamps, keys_missing: int) -> bool:
        """True when no record can fail: from the C parser's timestamp column (int64, with
        saturation at the int64 ends; any buffer) and its count of null keys. False means "ask the oracle"."""
        if log_append_batch or (self.compacted and keys_missing):
            return False
        if not self.create_time or not memoryview(timestamps).nbytes:
            return True
        low, high = _int64_bounds(timestamps)
        if low == LONG_MIN or high == LONG_MAX:      # saturated: Java's sum wrapped
            return False
        now = self.now_ms
        return (now - high >= -self.after_max_ms and now - low <= self.before_max_ms
                and now - low <= LONG_MAX and high - now <= LONG_MAX)

    def error_of(self, record, log_append_batch: bool, topic_partition: str):
        """The first rule ``record`` breaks, as ``(code, message)``, or None."""
        if self.compacted and record.key is None:
            return Errors.INVALID_RECORD, f"Compacted topic cannot accept message without key in topic partition " \
                                          f"{topic_partition}"
        timestamp = java_long(record.timestamp)
        if self.create_time and timestamp != NO_TIMESTAMP:
            difference = java_long(self.now_ms - timestamp)
            if difference > self.before_max_ms or java_long(-difference) > self.after_max_ms:
                return Errors.INVALID_TIMESTAMP, (
                    f"Timestamp {timestamp} of message with offset {record.offset} is out of range. The timestamp "
                    f"should be within [{java_long(self.now_ms - self.before_max_ms)}, "
                    f"{java_long(self.now_ms + self.after_max_ms)}]")
        elif log_append_batch:
            return Errors.INVALID_TIMESTAMP, (f"Invalid timestamp type in message {_java_record_text(record)}. "
                                              "Producer should not set timestamp type to LogAppendTime.")
        return None


def _int64_bounds_in_python(column) -> tuple[int, int]:
    """(min, max) of a non-empty column of native int64s, without the extension."""
    values = array("q")
    values.frombytes(column)
    return min(values), max(values)


# (min, max) of a non-empty column of native int64s: in C when the extension runs (min and max
# here would make an int of each value: a tenth of a produce request's CPU). Chosen once: the
# extension loads only when built from the sources beside it (kafkawire._native), which have it.
_int64_bounds = _int64_bounds_in_python if _native.records is None else _native.records.int64_bounds


def _java_record_text(record) -> str:
    """DefaultRecord.toString."""
    key = 0 if record.key is None else len(record.key)
    value = 0 if record.value is None else len(record.value)
    return (f"DefaultRecord(offset={record.offset}, timestamp={java_long(record.timestamp)}, key={key} bytes, "
            f"value={value} bytes)")


def record_errors(records, rules: RecordRules, log_append_batch: bool, topic_partition: str) -> list[tuple[int, int, str]]:
    """Every record's error, as ``(code, batch_index, message)``: the oracle, record by record."""
    errors = []
    for index, record in enumerate(records):
        error = rules.error_of(record, log_append_batch, topic_partition)
        if error is not None:
            errors.append((error[0], index, error[1]))
    return errors


def raise_record_errors(errors: list[tuple[int, int, str]]) -> None:
    """LogValidator.processRecordErrors: nothing when ``errors`` is empty, else RecordErrors with
    Kafka's exception text."""
    if not errors:
        return
    pairs = [(index, message) for _, index, message in errors]
    if any(code == Errors.INVALID_TIMESTAMP for code, _, _ in errors):
        raise RecordErrors(Errors.INVALID_TIMESTAMP, _INVALID_TIMESTAMP_TEXT, pairs)
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{message}')" for index, message in pairs[:3])
    raise RecordErrors(Errors.INVALID_RECORD, f"One or more records have been rejected due to {len(pairs)} record "
                                              f"errors in total, and only showing the first three errors at most: "
                                              f"[{shown}]", pairs)
