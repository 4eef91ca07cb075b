"""The frame around each record value in the metadata log, as Kafka's MetadataRecordSerde
writes it: unsigned varints frame version (1), apiKey (the record type) and version, then the
record in that version.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkawire.protocol.errors import DecodeError
from kafkawire.protocol.primitives import read_uvarint, write_uvarint

FRAME_VERSION = 1


class MetadataRecordError(ValueError):
    """A metadata record value that cannot be decoded, with where and why."""


@dataclass
class MetadataRecord:
    api_key: int
    version: int
    message: object          # the generated class instance (TopicRecord, PartitionRecord, ...)
    frame_version: int = FRAME_VERSION

    @property
    def type_name(self) -> str:
        return type(self.message).NAME


def decode_metadata_record(value) -> MetadataRecord:
    from kafkawire import messages
    data = bytes(value)
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
    try:
        message = cls.decode(memoryview(data)[pos:], version)
    except DecodeError as exc:
        raise MetadataRecordError(f"{exc} (the record starts at byte {pos} of the value)") from None
    return MetadataRecord(api_key, version, message, frame_version)


def encode_metadata_record(message, version: int) -> bytes:
    buf = bytearray()
    write_uvarint(buf, FRAME_VERSION)
    write_uvarint(buf, message.API_KEY)
    write_uvarint(buf, version)
    message.encode_into(buf, version)
    return bytes(buf)
