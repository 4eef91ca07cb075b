"""Byte layouts the record readers and writers share.

What every entry of a Kafka log starts with, whatever its magic: the base offset (int64) and
the size of the rest (int32), ``LOG_OVERHEAD``; the one definition every reader uses. Then the
v2 batch header (names follow DefaultRecordBatch.java), its attribute bits and the "none"
values of its fields.
"""
from __future__ import annotations

import struct

LOG_OVERHEAD = 12          # Kafka's Records.LOG_OVERHEAD: offset (8) + size (4)

HEADER = struct.Struct(">qiibIhiqqqhii")
PRE_CRC = struct.Struct(">qiibI")       # baseOffset..crc: not covered by the CRC
POST_CRC = struct.Struct(">hiqqqhii")   # attributes..recordsCount: covered by the CRC

HEADER_SIZE_UP_TO_MAGIC = 17
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
RECORD_BATCH_OVERHEAD = HEADER.size   # 61
MAGIC = 2
# Smallest record: one byte each for length, attributes, timestampDelta, offsetDelta,
# keyLength, valueLength and headerCount.
MIN_RECORD_SIZE = 7

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

INT32_MAX = 0x7FFFFFFF
INT64_MAX = 0x7FFFFFFFFFFFFFFF
