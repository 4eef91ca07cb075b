"""Values of KRaft's control records, decoded through the generated message classes.

Each value starts with its own int16 Version field (the data version, which is also the
message version the writer used), so it is decoded at that version; a version newer than
our schema's is decoded at our newest, whose tagged-field rules keep what we do not know.
"""
from __future__ import annotations

import struct

from .control import ControlRecordType, register_control_value_decoder
from .errors import CorruptRecordError

VALUE_MESSAGES = {
    ControlRecordType.LEADER_CHANGE: "LeaderChangeMessage",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    ControlRecordType.KRAFT_VERSION: "KRaftVersionRecord",
    ControlRecordType.KRAFT_VOTERS: "VotersRecord",
}


def value_version(cls, value) -> int:
    if value is None or len(value) < 2:
        raise CorruptRecordError(f"{cls.NAME} control record value of {0 if value is None else len(value)} bytes "
                                 f"has no version", 0)
    (version,) = struct.unpack_from(">h", value, 0)
    low, high = cls.VALID_VERSIONS
    if version < low:
        raise CorruptRecordError(f"{cls.NAME} control record value has version {version}, below {low}", 0)
    return min(version, high)


def decoder_for(name: str):
    def decode(value):
        from kafkawire import messages
        from kafkawire.protocol.errors import DecodeError
        cls = messages.by_name(name)
        try:
            return cls.decode(value, value_version(cls, value))
        except DecodeError as exc:
            # The records layer promises one error type; the value's own offset is in the reason.
            raise CorruptRecordError(f"control record value: {exc}") from None
    decode.__name__ = f"decode_{name}"
    return decode


def encode_value(message) -> bytes:
    """A control record value: the message at the version its Version field names."""
    return message.encode(message.version)


for _type, _name in VALUE_MESSAGES.items():
    register_control_value_decoder(_type, decoder_for(_name))
