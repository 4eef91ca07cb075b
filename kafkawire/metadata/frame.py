"""The frame around each record value in the metadata log, as Kafka's MetadataRecordSerde
writes it: unsigned varints frame version (1), apiKey (the record type) and version, then the
record in that version.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkawire.protocol.errors import BadBytesError, DecodeError
from kafkawire.protocol.primitives import read_uvarint, write_uvarint
from kafkawire import messages

FRAME_VERSION = 1


class MetadataRecordError(BadBytesError):
    """A metadata record value that cannot be decoded, with where and why."""


@dataclass
class MetadataRecord:
    """A decoded metadata record: ``api_key`` (its record type), ``version``, ``message`` (the
    generated instance: TopicRecord, PartitionRecord, ...) and the frame version (1).
    """
    api_key: int
    version: int
    message: object          # the generated class instance (TopicRecord, PartitionRecord, ...)
    frame_version: int = FRAME_VERSION

    @property
    def type_name(self) -> str:
        return type(self.message).NAME


def decode_metadata_record(value) -> MetadataRecord:
    """Decode a ``__cluster_metadata`` record value: the frame (version, record type, record version
    as unsigned varints) and the record in it. Raises MetadataRecordError (a BadBytesError) for a
    truncated frame, an unknown frame version, record type or record version, or a bad record.
    """
    api_key, version, message = _decode(bytes(value))
    return MetadataRecord(api_key, version, message, FRAME_VERSION)


def decode_metadata_message(value):
    """``decode_metadata_record(value).message``, the same errors, without the MetadataRecord
    around it: a follower's replay decodes one record per partition a broker's fencing moves
    (issue 28)."""
    return _decode(bytes(value))[2]


# (record type << 7 | record version) -> the record class, for a frame whose three varints are
# one byte each (every record type and version Kafka has), once that version has been checked
# as one the class knows: such a frame is decoded without reading the varints or checking again.
_CHECKED_ONE_BYTE_HEADERS: dict[int, type] = {}
_ONE_BYTE_HEADER = 3


def _decode(data: bytes):
    """(api key, version, message) of a record value as bytes."""
    if len(data) > _ONE_BYTE_HEADER and data[0] == FRAME_VERSION and data[1] < 0x80 and data[2] < 0x80:
        cls = _CHECKED_ONE_BYTE_HEADERS.get(data[1] << 7 | data[2])
        if cls is not None:
            # A whole bytes object: the class's decode takes it in one native call when it can.
            return data[1], data[2], _decode_body(cls, data, _ONE_BYTE_HEADER, data[2])
    try:
        frame_version, pos = read_uvarint(data, 0)
        api_key, pos = read_uvarint(data, pos)
        version, pos = read_uvarint(data, pos)
    except (IndexError, ValueError):
        raise MetadataRecordError(f"truncated metadata record frame ({len(data)} bytes)") from None
    if frame_version != FRAME_VERSION:
        raise MetadataRecordError(f"unknown metadata frame version {frame_version} (expected {FRAME_VERSION})")
    try:
        cls = messages.metadata_record(api_key)
    except KeyError:
        raise MetadataRecordError(f"unknown metadata record type {api_key} (version {version})") from None
    if version not in cls.versions():
        raise MetadataRecordError(f"{cls.NAME} version {version} is not one we know ({cls._valid_text()})")
    if pos == _ONE_BYTE_HEADER:
        _CHECKED_ONE_BYTE_HEADERS[api_key << 7 | version] = cls
    return api_key, version, _decode_body(cls, data, pos, version)


def _decode_body(cls, data: bytes, pos: int, version: int):
    try:
        return cls.decode(data[pos:], version)
    except DecodeError as exc:
        raise MetadataRecordError(f"{exc} (the record starts at byte {pos} of the value)") from None


def encode_metadata_record(message, version: int) -> bytes:
    """A record value as Kafka's MetadataRecordSerde writes it: frame version 1, ``message.API_KEY``
    and ``version`` as unsigned varints, then the message at that version. Raises EncodeError when
    the message cannot be written at ``version``.
    """
    # message.encode, not encode_into: it runs the native encoder when there is one (the same
    # bytes, a tenth of the generated encoder's time; a controller writes one record per
    # partition a broker's fencing moves, issue 28).
    body = message.encode(version)
    header = _FRAME_HEADERS.get((message.API_KEY, version))
    if header is None:
        buf = bytearray()
        write_uvarint(buf, FRAME_VERSION)
        write_uvarint(buf, message.API_KEY)
        write_uvarint(buf, version)
        # (only a version the message could be encoded at gets here: the table stays small)
        header = _FRAME_HEADERS[(message.API_KEY, version)] = bytes(buf)
    return header + body


_FRAME_HEADERS: dict[tuple[int, int], bytes] = {}     # (api key, version) -> the frame's first bytes


# --- Kafka's words for a value it cannot read ------------------------------------------------

def _java_unsigned_varint(data: bytes, pos: int) -> tuple[int, int]:
    """ByteUtils.readUnsignedVarint: up to five bytes, the bits past 32 dropped, as a Java int;
    IndexError past the end, ValueError for a sixth byte."""
    value = 0
    for i in range(5):
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            value &= 0xFFFFFFFF
            return (value - (1 << 32) if value >> 31 else value), pos + i + 1
    raise ValueError("varint too long")


def _frame_short(data: bytes, pos: int, entity: str) -> tuple[int, int]:
    try:
        value, pos = _java_unsigned_varint(data, pos)
    except (IndexError, ValueError):
        raise MetadataRecordError(f"Error while reading {entity}") from None
    if value > 0x7FFF:
        raise MetadataRecordError(f"Value for {entity} was too large.")
    return ((value & 0xFFFF) ^ 0x8000) - 0x8000, pos      # Java's (short) cast


def kafka_read_error(value) -> str:
    """The message of the exception Kafka's MetadataRecordSerde.read throws for a value that
    does not decode (kafka-dump-log prints it after ``Error at <offset>, skipping.``). It names
    a class of failure, not the place: ours, with field and byte, is in MetadataRecordError."""
    data = b"" if value is None else bytes(value)
    try:
        frame_version, pos = _frame_short(data, 0, "frame version")
        if frame_version == 0:
            return ("Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                    "preview release of KRaft in 2.8 to newer versions are not supported.")
        if frame_version != FRAME_VERSION:
            return (f"Could not deserialize metadata record due to unknown frame version {frame_version}"
                    f"(only frame version {FRAME_VERSION} is supported)")
        api_key, pos = _frame_short(data, pos, "type")
        version, pos = _frame_short(data, pos, "version")
    except MetadataRecordError as exc:
        return str(exc)
    try:
        cls = messages.metadata_record(api_key)
    except KeyError:
        return f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}"
    try:
        _, end = cls.decode(memoryview(data)[pos:], version, partial=True)
    except DecodeError:
        return f"Failed to deserialize record with type {api_key}"
    if pos + end < len(data):
        return f"Found {len(data) - pos - end} byte(s) of garbage after {api_key}"
    return f"Failed to deserialize record with type {api_key}"
