"""Control records: the key every control record carries, and a hook for its value.

A batch with the control attribute bit holds control records (transaction markers,
KRaft leader-change and snapshot markers, KRaft voter records). The record key is always
``int16 version, int16 type`` (ControlRecordType.java); the value's schema depends on
the type. Kafka treats an unknown type as UNKNOWN rather than failing, so that an old
reader can skip records a newer writer added; we do the same and name it ``UNKNOWN(n)``.

Values: ABORT/COMMIT carry an EndTxnMarker (int16 version, int32 coordinatorEpoch),
small enough to decode by hand here. The KRaft types (LEADER_CHANGE, SNAPSHOT_HEADER,
SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS) are generated message classes; whoever owns
them registers a decoder with ``register_control_value_decoder``. Until then their values
come back as raw bytes (memoryview).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from enum import IntEnum
from typing import Any, NamedTuple

from .errors import CorruptRecordError

__all__ = [
    "ControlRecordType",
    "ControlRecordKey",
    "EndTxnMarker",
    "CONTROL_VALUE_DECODERS",
    "register_control_value_decoder",
    "control_type_name",
    "parse_control_key",
    "encode_control_key",
    "decode_control_value",
    "decode_end_txn_marker",
    "encode_end_txn_marker",
]


class ControlRecordType(IntEnum):
    """The type in a control record's key: transaction markers (ABORT, COMMIT) and KRaft's control
    records (leader change, snapshot header and footer, kraft.version, voters).
    """
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def control_type_name(type_id: int) -> str:
    try:
        return ControlRecordType(type_id).name
    except ValueError:
        return f"UNKNOWN({type_id})"


_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")

# ControlRecordType.CURRENT_CONTROL_RECORD_KEY_VERSION / EndTransactionMarker's version.
CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0


class ControlRecordKey(NamedTuple):
    """A control record's key: its ``version`` (0) and ``type`` (a ControlRecordType value)."""
    version: int
    type: int

    @property
    def name(self) -> str:
        return control_type_name(self.type)

    @property
    def is_known(self) -> bool:
        return self.type in ControlRecordType._value2member_map_


def parse_control_key(key) -> ControlRecordKey:
    """Read a control record key. Like Java, a newer key version is read as version 0
    (its first four bytes keep their meaning); a missing/short key or a negative version
    is corruption."""
    if key is None:
        raise CorruptRecordError("control record has a null key")
    if len(key) < _KEY.size:
        raise CorruptRecordError(
            f"control record key must have at least 4 bytes, but found only {len(key)}"
        )
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise CorruptRecordError(f"invalid control record key version {version}")
    return ControlRecordKey(version, type_id)


def encode_control_key(type_id: int, version: int = CONTROL_KEY_VERSION) -> bytes:
    return _KEY.pack(version, type_id)


class EndTxnMarker(NamedTuple):
    """The value of a transaction marker (COMMIT or ABORT control record): its ``version`` and the
    transaction coordinator's epoch.
    """
    version: int
    coordinator_epoch: int


def decode_end_txn_marker(value) -> EndTxnMarker:
    if value is None or len(value) < _END_TXN.size:
        size = "null" if value is None else f"{len(value)} bytes"
        raise CorruptRecordError(f"end transaction marker value must have 6 bytes, found {size}")
    version, coordinator_epoch = _END_TXN.unpack_from(value, 0)
    if version < 0:
        raise CorruptRecordError(f"invalid end transaction marker version {version}")
    return EndTxnMarker(version, coordinator_epoch)


def encode_end_txn_marker(coordinator_epoch: int, version: int = END_TXN_MARKER_VERSION) -> bytes:
    return _END_TXN.pack(version, coordinator_epoch)


# Hook: control type id -> decoder(memoryview | None) -> decoded value. The generated
# KRaft message classes (LeaderChangeMessage, SnapshotHeaderRecord, SnapshotFooterRecord,
# KRaftVersionRecord, VotersRecord) are to be registered here by their owner.
CONTROL_VALUE_DECODERS: dict[int, Callable[[Any], Any]] = {
    ControlRecordType.ABORT: decode_end_txn_marker,
    ControlRecordType.COMMIT: decode_end_txn_marker,
}


def register_control_value_decoder(type_id: int, decoder: Callable[[Any], Any]) -> None:
    CONTROL_VALUE_DECODERS[int(type_id)] = decoder


def decode_control_value(type_id: int, value):
    """Decode a control record value with the registered decoder, or return it as is."""
    decoder = CONTROL_VALUE_DECODERS.get(type_id)
    return value if decoder is None else decoder(value)
