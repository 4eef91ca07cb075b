"""Building metadata records, batches and log files for the image and shell tests."""
from __future__ import annotations

import uuid

from kafkawire import messages
from kafkawire.metadata import encode_metadata_record
from kafkawire.records import ControlRecordType, RecordBatchBuilder
from kafkawire.records.control import encode_control_key

TS = 1_700_000_000_000


def record(record_name: str, **fields):
    return messages.by_name(record_name)(**fields)


def value(message, version: int | None = None) -> bytes:
    if version is None:
        version = max(type(message).versions())
    return encode_metadata_record(message, version)


def batch(base_offset: int, messages_, *, epoch: int = 1, ts: int = TS) -> bytes:
    builder = RecordBatchBuilder(base_offset=base_offset, partition_leader_epoch=epoch)
    for m in messages_:
        builder.append(None, m if isinstance(m, bytes) else value(m), (), ts)
    return builder.build()


def leader_change_batch(base_offset: int, leader: int, epoch: int, voters=(1,), ts: int = TS) -> bytes:
    lc = messages.by_name("LeaderChangeMessage").from_json(
        {"version": 0, "leaderId": leader, "voters": [{"voterId": v} for v in voters],
         "grantingVoters": [{"voterId": leader}]}, 0)
    builder = RecordBatchBuilder(base_offset=base_offset, partition_leader_epoch=epoch, is_control=True)
    builder.append(encode_control_key(ControlRecordType.LEADER_CHANGE), lc.encode(0), (), ts)
    return builder.build()


class LogWriter:
    """Batches with consecutive offsets, one batch per call."""

    def __init__(self, epoch: int = 1, start: int = 0):
        self.offset = start
        self.epoch = epoch
        self.parts: list[bytes] = []
        self.ts = TS

    def add(self, *messages_) -> LogWriter:
        self.parts.append(batch(self.offset, messages_, epoch=self.epoch, ts=self.ts))
        self.offset += len(messages_)
        self.ts += 1000
        return self

    def leader(self, leader: int, epoch: int) -> LogWriter:
        self.epoch = epoch
        self.parts.append(leader_change_batch(self.offset, leader, epoch, ts=self.ts))
        self.offset += 1
        return self

    def bytes(self) -> bytes:
        return b"".join(self.parts)

    def write(self, directory, name: str = "00000000000000000000.log"):
        path = directory / name
        path.write_bytes(self.bytes())
        return path


TOPIC_A = uuid.UUID(int=0x1111_2222_3333_4444_5555_6666_7777_8888)
TOPIC_B = uuid.UUID(int=0x9999_AAAA_BBBB_CCCC_DDDD_EEEE_FFFF_0000)
DIR_1 = uuid.UUID(int=0xA1 << 64 | 0xB1)
DIR_2 = uuid.UUID(int=0xA2 << 64 | 0xB2)
DIR_3 = uuid.UUID(int=0xA3 << 64 | 0xB3)
