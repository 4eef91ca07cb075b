"""A produced batch written again in its topic's ``compression.type`` (Kafka's
LogValidator.buildRecordsAndAssignOffsets), when the topic asks for another codec than the
producer's: ``producer`` (Kafka's default) keeps the producer's, ``uncompressed`` none, and
``gzip``, ``snappy``, ``lz4``, ``zstd`` that codec. A batch already in the topic's codec keeps its
bytes (Kafka's in-place path).

The new batch is MemoryRecordsBuilder's: the producer's id, epoch, base sequence and
transactional flag, the topic's timestamp type (with LogAppendTime the batch's max timestamp
is the append time; the records keep the producer's timestamps, as in Kafka), each record's
key, value and headers with fresh offset and timestamp deltas and attributes 0, compressed at the
topic's ``compression.<codec>.level`` (Kafka's default level when none is given; Kafka's defaults,
-1, 9 and 3, write the same bytes as no level). The new batch is checked
against ``max.message.bytes`` again (UnifiedLog.append: MESSAGE_TOO_LARGE).
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors
from kafkawire.records import GZIP, LZ4, NONE, SNAPPY, ZSTD, RecordBatch
from kafkawire.records.batch import CREATE_TIME, LOG_APPEND_TIME
from kafkawire.records.builder import RecordBatchBuilder

from .record_checks import java_long

__all__ = ["BROKER_COMPRESSION_TYPES", "target_codec", "recompressed"]

# BrokerCompressionType: the values of compression.type, and the codec each asks for (None: the producer's)
BROKER_COMPRESSION_TYPES = {"uncompressed": NONE, "zstd": ZSTD, "lz4": LZ4, "snappy": SNAPPY, "gzip": GZIP,
                            "producer": None}


def target_codec(compression_type: str, producer_codec: int) -> int:
    """BrokerCompressionType.targetCompression: the codec the batch is stored in."""
    codec = BROKER_COMPRESSION_TYPES.get(compression_type)
    return producer_codec if codec is None else codec


def recompressed(batch: RecordBatch, codec: int, *, log_append_time: bool, now_ms: int,
                 topic_partition: str, max_message_bytes: int, records=None,
                 level: int | None = None) -> tuple[bytes, RecordBatch]:
    """``batch`` (checked already) as a new batch in ``codec``, and the new batch's header parsed
    (its CRC is the builder's: not computed again); or RecompressionRefused with Kafka's error.
    ``records``: the batch's records if the checks decoded them already (else decoded here)."""
    builder = RecordBatchBuilder(compression_type=codec, compression_level=level,
                                 timestamp_type=LOG_APPEND_TIME if log_append_time else CREATE_TIME,
                                 producer_id=batch.producer_id,
                                 producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
                                 is_transactional=batch.is_transactional,
                                 max_timestamp=now_ms if log_append_time else None)
    for record in batch if records is None else records:
        timestamp = java_long(record.timestamp)
        try:
            builder.append(record.key, record.value, record.headers, timestamp)
        except ValueError:              # MemoryRecordsBuilder: IllegalArgumentException, an unexpected error
            raise RecompressionRefused(Errors.UNKNOWN_SERVER_ERROR,
                                       f"Invalid negative timestamp {timestamp}") from None
    data = builder.build()
    if len(data) > max_message_bytes:
        raise RecompressionRefused(Errors.MESSAGE_TOO_LARGE,
                                   f"Message batch size is {len(data)} bytes in append topartition {topic_partition} "
                                   f"which exceeds the maximum configured size of {max_message_bytes}.")
    return data, RecordBatch.from_buffer(data)


class RecompressionRefused(Exception):
    """The batch cannot be stored in the topic's codec: ``code`` is Kafka's error."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
