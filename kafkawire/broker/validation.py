"""What a partition leader checks and changes in a produced batch before it appends it: Kafka's
ProduceRequest.validateRecords, UnifiedLog.analyzeAndValidateRecords and LogValidator, for the
one v2 batch per partition that Produce v3 and later carry. Sans-I/O: bytes in, bytes out.

    append = validate_produce(records, max_message_bytes=1048588, log_append_time=False, now_ms=...)
    log.append(append.data, assign_offsets=True, leader_epoch=epoch, crc_verified=True)

The checks, in Kafka's order, each with the error Kafka answers (``ProduceRefused.code``):

* no batch, more than one, a partial one, or not magic 2: INVALID_RECORD (ProduceRequest.validateRecords;
  a partial batch is CORRUPT_MESSAGE as Kafka's iterator finds it);
* the batch is larger than the topic's ``max.message.bytes``: MESSAGE_TOO_LARGE (RecordTooLargeException);
* the CRC does not match: CORRUPT_MESSAGE (CorruptRecordException);
* a base offset other than 0, a control batch, a count that does not match the offset range,
  records whose offset deltas do not run 0, 1, 2...: INVALID_RECORD (LogValidator);
* a producer id with a negative base sequence: INVALID_RECORD (LogValidator.validateBatch);
* the record rules (kafkawire.broker.record_checks: a key on a compacted topic, the timestamp
  bounds, no LogAppendTime from a producer): RecordErrors, with Kafka's ``record_errors``.

The producer's epoch and sequence are checked next, against the partition's producer state
(kafkawire.broker.producer_state), with ``ValidatedAppend.batch``.

With ``log_append_time`` (``message.timestamp.type=LogAppendTime``) the batch's timestamp type
becomes LogAppendTime and its max timestamp the append time, and the CRC is computed again, as
LogValidator does in place (the records inside keep their bytes; readers take the batch's time).
The base offset is left for ``Log.append(assign_offsets=True)`` to set (it is outside the CRC).
A batch whose codec is not the one the topic's ``compression.type`` asks for is built again in
it instead (kafkawire.broker.recompression), as LogValidator does.
"""
from __future__ import annotations

import struct
from array import array
from dataclasses import dataclass

from crc32c import crc32c

from kafkawire import _native
from kafkawire.metadata.java_text import java_utf8
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import CorruptRecordError, RecordBatch, iter_batches
from kafkawire.records.batch import LOG_APPEND_TIME, NONE

from .recompression import RecompressionRefused, recompressed, target_codec
from .record_checks import RecordRules, raise_record_errors, record_errors

__all__ = ["ProduceRefused", "ValidatedAppend", "validate_produce", "request_batch", "request_refusal",
           "MAX_DECOMPRESSED_BYTES"]

# A compressed batch is decompressed to check its records; this bounds what one batch may
# expand to (a zip bomb is CORRUPT_MESSAGE instead of an unbounded allocation).
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
_ATTRIBUTES_AT, _MAX_TIMESTAMP_AT, _CRC_AT = 21, 35, 17
_LOG_APPEND_TIME_FLAG = 0x08
_INT16, _INT64, _UINT32 = struct.Struct(">h"), struct.Struct(">q"), struct.Struct(">I")
NO_PRODUCER_ID = -1


class ProduceRefused(Exception):
    """The partition's records are refused: ``code`` is the error Kafka answers, the message its
    exception's text (logged; Kafka's answer carries none); ``in_request``: refused before the
    log is asked, as KafkaApis' ProduceRequest.validateRecords refuses (no log start offset)."""

    def __init__(self, code: int, message: str, *, in_request: bool = False):
        super().__init__(message)
        self.code = code
        self.in_request = in_request


@dataclass(frozen=True)
class ValidatedAppend:
    """The batch to append (patched when the broker sets its timestamp), its record count, the
    log append time (-1 unless the broker set it) and its parsed header (producer id, epoch,
    sequence: what the producer state checks). Its CRC is verified (or computed by the broker):
    ``Log.append(crc_verified=True)``. ``data`` may be the request's own buffer (a memoryview):
    Log.append makes the one copy."""
    data: bytes | memoryview
    records: int
    log_append_time: int
    batch: RecordBatch | None = None


def validate_produce(records: bytes | None, *, topic_partition: str, max_message_bytes: int,
                     log_append_time: bool, now_ms: int, version: int = 3,
                     rules: RecordRules | None = None, compression_type: str = "producer",
                     compression_levels: tuple = (), batch: RecordBatch | None = None) -> ValidatedAppend:
    """The batch of one partition of a Produce request, checked as Kafka's leader checks it;
    ``rules`` are the record rules (kafkawire.broker.record_checks: timestamp bounds, keys on a
    compacted topic; Kafka's defaults when None). Records that break them raise RecordErrors. A
    batch the topic's ``compression_type`` wants in another codec is written again
    (kafkawire.broker.recompression), at its level in ``compression_levels`` ((codec, level) pairs,
    the topic's ``compression.<codec>.level``; Kafka's default level when absent). ``batch``:
    ``request_batch(records, version)`` when the caller has it already."""
    if rules is None:
        rules = RecordRules(now_ms=now_ms, create_time=not log_append_time)
    records = records or b""
    if batch is None:
        batch = request_batch(records, version)
    size = batch.size_in_bytes
    if len(records) > size:     # a batch cut short after it: no batch to Kafka's iterator, and its log trims it
        records = records[:size]
    if size > max_message_bytes:
        raise ProduceRefused(Errors.MESSAGE_TOO_LARGE,
                             f"The record batch size in the append to {topic_partition} is {size} bytes which "
                             f"exceeds the maximum configured value of {max_message_bytes}).")
    if not batch.is_valid:
        raise ProduceRefused(Errors.CORRUPT_MESSAGE,
                             f"Record is corrupt (stored crc = {batch.crc}) in topic partition {topic_partition}.")
    if batch.base_offset != 0:
        raise ProduceRefused(Errors.INVALID_RECORD,
                             f"The baseOffset of the record batch in the append to {topic_partition} should be 0, "
                             f"but it is {batch.base_offset}")
    _check_batch(batch, topic_partition)
    _decompress(batch, topic_partition)
    decoded = _check_records(batch, topic_partition, rules)
    codec = target_codec(compression_type, batch.compression_type)
    if codec != batch.compression_type:
        try:
            data, rebuilt = recompressed(batch, codec, level=dict(compression_levels).get(codec),
                                         log_append_time=log_append_time, now_ms=now_ms,
                                         topic_partition=topic_partition, max_message_bytes=max_message_bytes,
                                         records=decoded)
        except RecompressionRefused as exc:
            raise ProduceRefused(exc.code, str(exc)) from None
        return ValidatedAppend(data, rebuilt.records_count, now_ms if log_append_time else -1, rebuilt)
    if not log_append_time:
        return ValidatedAppend(records, batch.records_count, -1, batch)
    return ValidatedAppend(_with_log_append_time(records, now_ms), batch.records_count, now_ms, batch)


def request_refusal(records, version: int) -> ProduceRefused | None:
    """What KafkaApis' ProduceRequest.validateRecords refuses (no batch, more than one, not magic
    2, a corrupt batch size or magic), before the log or the acks are looked at; None if nothing."""
    try:
        request_batch(records, version)
    except ProduceRefused as exc:
        return exc
    return None


def request_batch(records: bytes | None, version: int) -> RecordBatch:
    """ProduceRequest.validateRecords: exactly one batch, of magic 2, else ProduceRefused (``in_request``)."""
    try:
        iterator = iter_batches(records or b"", verify_crc=False, max_decompressed_size=MAX_DECOMPRESSED_BYTES)
        batches = []
        for batch in iterator:
            batches.append(batch)
            if len(batches) > 1:
                break
    except CorruptRecordError as exc:
        raise ProduceRefused(Errors.CORRUPT_MESSAGE, f"Record batch is corrupt: {exc}", in_request=True) from None
    if not batches:         # a batch cut short is no batch to Kafka's iterator either
        raise ProduceRefused(Errors.INVALID_RECORD, f"Produce requests with version {version} must have at least "
                                                    "one record batch per partition", in_request=True)
    if getattr(batches[0], "magic", 2) != 2 or not isinstance(batches[0], RecordBatch):
        raise ProduceRefused(Errors.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                    "contain record batches with magic version 2", in_request=True)
    if len(batches) > 1:
        raise ProduceRefused(Errors.INVALID_RECORD, f"Produce requests with version {version} are only allowed to "
                                                    "contain exactly one record batch per partition", in_request=True)
    return batches[0]


def _check_batch(batch: RecordBatch, topic_partition: str) -> None:
    """LogValidator.validateBatch for a client's batch."""
    if batch.is_control:
        raise ProduceRefused(Errors.INVALID_RECORD, "Clients are not allowed to write control records")
    if batch.producer_id > NO_PRODUCER_ID and batch.base_sequence < 0:
        raise ProduceRefused(Errors.INVALID_RECORD,
                             f"Invalid sequence number {batch.base_sequence} in record batch with producerId "
                             f"{batch.producer_id} in topic partition {topic_partition}")
    count_from_offsets = batch.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise ProduceRefused(Errors.INVALID_RECORD, f"Batch has an invalid offset range: [{batch.base_offset}, "
                                                    f"{batch.last_offset}] in topic partition {topic_partition}.")
    count = batch.records_count
    if count <= 0:
        raise ProduceRefused(Errors.INVALID_RECORD, f"Invalid reported count for record batch: {count} in topic "
                                                    f"partition {topic_partition}.")
    if count != count_from_offsets:
        raise ProduceRefused(Errors.INVALID_RECORD,
                             f"Inconsistent batch offset range [{batch.base_offset}, {batch.last_offset}] and count "
                             f"of records {count} in topic partition {topic_partition}.")


def _decompress(batch: RecordBatch, topic_partition: str) -> None:
    """A compressed batch's records decompressed (kept by the batch for the checks): one that
    does not decompress is LogValidator's KafkaException, which Kafka answers UNKNOWN_SERVER_ERROR."""
    if batch.compression_type == NONE:
        return
    try:
        batch.decompressed_records()
    except CorruptRecordError as exc:
        raise ProduceRefused(Errors.UNKNOWN_SERVER_ERROR, f"Failed to decompress the records of {topic_partition}: "
                                                          f"{exc}") from None


def _check_records(batch: RecordBatch, topic_partition: str, rules: RecordRules) -> list | None:
    """Every record decodes, its offset delta is the next one and it keeps the record rules
    (LogValidator.validateRecord): in C when the extension runs (the Spark reader's record
    parser, keeping only the offsets, timestamps and, on a compacted topic, keys: no Python
    object per record; the oracle names the records only when some may fail), else record by
    record. The records decoded on the way (the pure path), for a recompression to reuse; None
    from C (a recompression decodes them then, from the decompressed bytes the batch keeps)."""
    if _native.records is not None:
        _check_records_native(batch, topic_partition, rules)
        return None
    records = _records_in_order(batch, topic_partition)
    raise_record_errors(record_errors(records, rules, batch.timestamp_type == LOG_APPEND_TIME, topic_partition))
    return records


def _records_in_order(batch: RecordBatch, topic_partition: str) -> list:
    """The batch's records, decoded, their offset deltas checked (the pure path)."""
    records = []
    try:
        for record in batch:
            if record.offset - batch.base_offset != len(records):
                raise ProduceRefused(Errors.INVALID_RECORD, f"Record {record} has an invalid offset delta in topic "
                                                            f"partition {topic_partition}.")
            records.append(record)
    except CorruptRecordError as exc:
        raise ProduceRefused(Errors.INVALID_RECORD, f"Record is corrupt in topic partition {topic_partition}: "
                                                    f"{exc}") from None
    return records


def _check_records_native(batch: RecordBatch, topic_partition: str, rules: RecordRules) -> None:
    try:
        data, start, end, count, compressed = batch.records_range()
    except CorruptRecordError as exc:
        raise ProduceRefused(Errors.INVALID_RECORD, f"Record is corrupt in topic partition {topic_partition}: "
                                                    f"{exc}") from None
    columns = _native.records.Columns(java_utf8, rules.compacted, False, False, True)
    error = columns.add(data, start, end, count, batch.base_offset, batch.base_timestamp, None)
    if error is not None:
        raise ProduceRefused(Errors.INVALID_RECORD, f"Record is corrupt in topic partition {topic_partition}: "
                                                    f"{batch.fail_at(compressed)(*error)}")
    finished = columns.finish()
    if not _offsets_run(finished["offset"], batch.base_offset, count):
        raise ProduceRefused(Errors.INVALID_RECORD, f"A record has an invalid offset delta in topic partition "
                                                    f"{topic_partition}: the deltas must run 0 to {count - 1}.")
    log_append_batch = batch.timestamp_type == LOG_APPEND_TIME
    if not rules.all_pass(log_append_batch, finished["timestamp"], finished["key"][3]):
        raise_record_errors(record_errors(batch, rules, log_append_batch, topic_partition))


# 0, 1, 2, ... as native int64s: the offsets of a produced batch's records (its base offset is 0)
# are compared with a prefix of it, not with a run built for each batch (as many Python ints as
# records, as much CPU as the C parse of the records). Grown to the largest batch seen, at most
# _KEPT_RUN_MAX records (1 MiB).
_kept_run = [b""]
_KEPT_RUN_MAX = 1 << 17


def _offsets_run(column, base_offset: int, count: int) -> bool:
    """Whether the C parser's offset ``column`` holds base_offset, base_offset + 1, ... (``count``)."""
    column = memoryview(column)
    if base_offset != 0 or count > _KEPT_RUN_MAX:
        return column.tobytes() == array("q", range(base_offset, base_offset + count)).tobytes()
    if len(_kept_run[0]) < 8 * count:
        _kept_run[0] = array("q", range(min(_KEPT_RUN_MAX, max(count, len(_kept_run[0]) // 4)))).tobytes()
    return column.nbytes == 8 * count and _kept_run[0].startswith(column)


def _with_log_append_time(data: bytes, now_ms: int) -> bytes:
    """The batch with timestamp type LogAppendTime, max timestamp ``now_ms`` and its CRC again
    (MutableRecordBatch.setMaxTimestamp)."""
    patched = bytearray(data)
    attributes = _INT16.unpack_from(patched, _ATTRIBUTES_AT)[0]
    _INT16.pack_into(patched, _ATTRIBUTES_AT, attributes | _LOG_APPEND_TIME_FLAG)
    _INT64.pack_into(patched, _MAX_TIMESTAMP_AT, now_ms)
    _UINT32.pack_into(patched, _CRC_AT, crc32c(memoryview(patched)[_ATTRIBUTES_AT:]))
    return bytes(patched)
