"""Values of KRaft's control records, decoded through the generated message classes.

Each value starts with an int16 Version field, but Kafka does not use it to choose the
layout: ControlRecordUtils reads, and MemoryRecordsBuilder writes, every LeaderChange,
SnapshotHeader/Footer, KRaftVersion and Voters value at message version 0 (its
``*_CURRENT_VERSION`` constants), whatever the field says; the field is data. So do we: a
value saying Version 1 (or -1) in version 0's layout is read as Kafka reads it, and a
message is written in version 0's layout with its Version field as set. (A
LeaderChangeMessage's version 1 VoterDirectoryId is thus never on disk, as with Kafka.)
"""
from __future__ import annotations

from .control import ControlRecordType, register_control_value_decoder
from .errors import CorruptRecordError
from kafkawire import messages
from kafkawire.protocol.errors import DecodeError

VALUE_MESSAGES = {
    ControlRecordType.LEADER_CHANGE: "LeaderChangeMessage",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    ControlRecordType.KRAFT_VERSION: "KRaftVersionRecord",
    ControlRecordType.KRAFT_VOTERS: "VotersRecord",
}

# ControlRecordUtils.*_CURRENT_VERSION: the one layout Kafka reads and writes these values in.
LAYOUT_VERSION = 0


def decoder_for(name: str):
    def decode(value):
        cls = messages.by_name(name)
        try:
            return cls.decode(b"" if value is None else value, LAYOUT_VERSION)
        except DecodeError as exc:
            # The records layer promises one error type; the value's own offset is in the reason.
            raise CorruptRecordError(f"control record value: {exc}") from None
    decode.__name__ = f"decode_{name}"
    return decode


def encode_value(message) -> bytes:
    """A control record value: the message in version 0's layout, its Version field as set
    (MemoryRecordsBuilder.append*Message)."""
    return message.encode(LAYOUT_VERSION)


def json_version(message) -> int:
    """The version to give to_json for a decoded value (or its structs) so that it prints
    what kafka-dump-log prints: JsonConverter.write(value, value.version()). Kafka's
    generated converter tests the version only for fields some versions lack (``_version
    >= 1`` for LeaderChange's VoterDirectoryId), so a Version below 0 prints what version 0
    does; our to_json leaves out every field outside the version it is given, hence the
    floor at 0."""
    return max(message.version, LAYOUT_VERSION)


def value_json(message) -> dict:
    """A decoded value's JSON, as kafka-dump-log prints it (see json_version)."""
    return message.to_json(json_version(message))


for _type, _name in VALUE_MESSAGES.items():
    register_control_value_decoder(_type, decoder_for(_name))
