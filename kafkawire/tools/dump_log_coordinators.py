"""dump-log's coordinator decoders: ``--offsets-decoder`` (``__consumer_offsets``),
``--transaction-log-decoder`` (``__transaction_state``) and ``--share-group-state-decoder``
(``__share_group_state``), printing keys and values as Kafka's DumpLogSegments prints them.

A coordinator record's key is ``int16 record type`` + the key message, its value ``int16
version`` + the value message, or null (a tombstone, printed ``<DELETE>``). Kafka prints the
key as ``{"type":"<record type>","data":{...}}`` and the value as
``{"version":"<version>","data":{...}}``, both in JsonConverter form written by Jackson. A
classic group's GroupMetadataValue of protocol type ``consumer`` shows each member's
subscription and assignment decoded (ConsumerProtocolSubscription / ConsumerProtocolAssignment),
not as base64, unless those bytes do not decode.

What Kafka prints for a record that does not decode is kept word for word where the words are
Kafka's own (``Unknown record type ...``, ``Found an unknown record version ...``, ``Could not
read version from ...``); for bytes that break inside a message Kafka quotes its generated
reader's exception, which we cannot reproduce in general: we print the same frame of words with
Java's ``null`` (the message of the BufferUnderflowException that running out of bytes raises),
and our field and byte go to stderr.
"""
from __future__ import annotations

import base64
import re
import struct
import sys
from functools import lru_cache
from types import FunctionType
from typing import NamedTuple

from kafkawire.capture.records import coordinator_classes
from kafkawire.metadata.java_text import jackson_json, java_utf8
from kafkawire.protocol.errors import DecodeError, Malformed, describe_failure
from kafkawire.protocol.primitives import read_uvarint

# dump-log flag -> the schemas/coordinators folder its records come from.
DECODER_FOLDERS = {
    "offsets_decoder": "group-coordinator",
    "transaction_log_decoder": "transaction-coordinator",
    "share_group_state_decoder": "share-coordinator",
}
GROUP_METADATA_RECORD_TYPE = 2
CONSUMER_PROTOCOL_TYPE = "consumer"
CONSUMER_PROTOCOL_HIGHEST_VERSION = 3


def add_decoder_arguments(parser) -> None:
    parser.add_argument("--offsets-decoder", action="store_true",
                        help="decode the records as __consumer_offsets records (group coordinator)")
    parser.add_argument("--transaction-log-decoder", action="store_true",
                        help="decode the records as __transaction_state records (transaction coordinator)")
    parser.add_argument("--share-group-state-decoder", action="store_true",
                        help="decode the records as __share_group_state records (share coordinator)")


def chosen_folder(args) -> str | None:
    """The decoder the flags ask for, in Kafka's order of precedence (offsets, then transaction
    log, then cluster metadata, then share group state); None if none or cluster metadata."""
    if args.offsets_decoder:
        return DECODER_FOLDERS["offsets_decoder"]
    if args.transaction_log_decoder:
        return DECODER_FOLDERS["transaction_log_decoder"]
    if args.share_group_state_decoder and not args.cluster_metadata_decoder:
        return DECODER_FOLDERS["share_group_state_decoder"]
    return None


class Parsed(NamedTuple):
    key: str | None          # the text after "key: " (None: no key printed)
    payload: str | None      # the text after "payload: " (None: no payload printed)
    problem: str | None      # our own account of a failure, for stderr (None: it decoded)


class MissingKeyError(Exception):
    """A coordinator record must have a key; Kafka's tool dies on one without."""


class _ReadFailure(Exception):
    def __init__(self, kafka_text: str, ours: str):
        super().__init__(kafka_text)
        self.kafka_text = kafka_text
        self.ours = ours


class CoordinatorDecoder:
    def __init__(self, folder: str):
        self.folder = folder
        table = coordinator_classes()
        self.keys = {t: cls for (f, kind, t), cls in table.items() if f == folder and kind == "coordinator-key"}
        self.values = {t: cls for (f, kind, t), cls in table.items() if f == folder and kind == "coordinator-value"}

    def parse(self, offset: int, key, value) -> Parsed:
        if key is None:
            raise MissingKeyError(f"Failed to decode message at offset {offset} using the specified decoder "
                                  f"(message had a missing key)")
        key = bytes(key)
        try:
            record_type = _read_version(key, "key")
            if record_type not in self.keys:
                return Parsed(f"Unknown record type {record_type} at offset {offset}, skipping.", None,
                              f"record type {record_type} is not a {self.folder} record")
            key_message = _read_message(self.keys[record_type], key, record_type, 0, "key")
            key_text = jackson_json({"type": str(record_type), "data": key_message.to_json(0)})
            if value is None:
                return Parsed(key_text, "<DELETE>", None)
            return Parsed(key_text, self._value_text(record_type, bytes(value)), None)
        except _ReadFailure as exc:
            return Parsed(f"Error at offset {offset}, skipping. {exc.kafka_text}", None, exc.ours)

    def _value_text(self, record_type: int, value: bytes) -> str:
        cls = self.values[record_type]
        version = _read_version(value, "value")
        low, high = cls.VALID_VERSIONS
        if not low <= version <= high:
            text = f"Found an unknown record version {version} for {record_type} type"
            raise _ReadFailure(text, f"{cls.NAME} has versions {low}-{high}, not {version}")
        message = _read_message(cls, value, version, version, "value")
        data = message.to_json(version)
        if self.folder == "group-coordinator" and record_type == GROUP_METADATA_RECORD_TYPE:
            _decode_consumer_protocol(data)
        return jackson_json({"version": str(version), "data": data})


def _read_version(data: bytes, name: str) -> int:
    if len(data) < 2:
        raise _ReadFailure(f"Could not read version from {name}'s buffer.",
                           f"the {name} has {len(data)} bytes, too few for its int16 version")
    return struct.unpack_from(">h", data)[0]


def _read_message(cls, data: bytes, version_read: int, version: int, name: str):
    """Decode what follows the int16 prefix; bytes left over are ignored, as Kafka's reader
    ignores them. ``version_read`` is the version Kafka names (a key is read 'with version' its
    record type, though every key has the one layout)."""
    try:
        try:
            message, _ = cls.decode(data[2:], version, partial=True)
        except DecodeError as exc:
            if not exc.reason.startswith("string is not valid UTF-8"):
                raise
            message = _decode_with_java_strings(cls, data[2:], version)
    except DecodeError as exc:
        raise _ReadFailure(f"Could not read record with version {version_read} from {name}'s buffer due to: "
                           f"{_java_reason(exc)}.", str(exc)) from None
    return message


# --- strings as Java reads them -------------------------------------------------------------
# Kafka's reader makes text of any bytes (``new String(bytes, UTF_8)``: ill-formed sequences
# become U+FFFD) where our generated decoders refuse invalid UTF-8. Only for a message that
# failed so, it is decoded again by copies of its module's decoders whose string readers are
# Java's; the generated code itself stays strict (and fast) for everyone else.

def _java_fixed_string(nullable: bool):
    def read(data, pos):
        (n,) = struct.unpack_from(">h", data, pos)
        pos += 2
        if n < 0:
            if nullable and n == -1:
                return None, pos
            raise Malformed(f"string length {n}: null is not allowed here")
        if pos + n > len(data):
            raise Malformed(f"string of length {n} at byte {pos} runs past the end of the data "
                            f"({len(data) - pos} bytes left)")
        return java_utf8(data[pos:pos + n]), pos + n
    return read


def _java_compact_string(nullable: bool):
    def read(data, pos):
        n, pos = read_uvarint(data, pos)
        n -= 1
        if n < 0:
            if nullable:
                return None, pos
            raise Malformed("compact string is null, which is not allowed here")
        if pos + n > len(data):
            raise Malformed(f"compact string of length {n} at byte {pos} runs past the end of the data "
                            f"({len(data) - pos} bytes left)")
        return java_utf8(data[pos:pos + n]), pos + n
    return read


_JAVA_STRING_READERS = {"read_string": _java_fixed_string(False), "read_nullable_string": _java_fixed_string(True),
                        "read_compact_string": _java_compact_string(False),
                        "read_compact_nullable_string": _java_compact_string(True)}


@lru_cache(maxsize=None)
def _java_string_module(module_name: str) -> dict:
    """A copy of a generated module's globals whose functions read strings as Java does."""
    original = vars(sys.modules[module_name])
    copied = dict(original, **_JAVA_STRING_READERS)
    for name, value in original.items():
        if isinstance(value, FunctionType) and value.__globals__ is original:
            copied[name] = FunctionType(value.__code__, copied, value.__name__, value.__defaults__, value.__closure__)
    return copied


def _decode_with_java_strings(cls, data: bytes, version: int):
    decoder = _java_string_module(cls.__module__)[cls._DECODERS[version].__name__]
    try:
        message, _ = decoder(bytes(data), 0)
    except Exception as exc:
        raise DecodeError(cls.NAME, version, None, None, describe_failure(exc, len(data), None)) from None
    return message


_NULL_NOT_ALLOWED = re.compile(r"(string|bytes|array) length -?\d+: null is not allowed here")
_ARRAY_TOO_LONG = re.compile(r"array of (\d+) elements at byte \d+ cannot fit in the (\d+) bytes left")
_RUNS_PAST_END = re.compile(r"[\w ]+ of length (\d+) at byte \d+ runs past the end of the data \((\d+) bytes left\)")


def _java_reason(exc: DecodeError) -> str:
    """The message of the exception Kafka's generated reader throws for the failure our decoder
    found (Java's ``null`` for running out of bytes: BufferUnderflowException has no message);
    our own reason where we know no Java counterpart."""
    reason = exc.reason
    if reason.startswith("truncated"):
        return "null"
    if _NULL_NOT_ALLOWED.fullmatch(reason) and exc.field:
        leaf = re.sub(r"\[\d+\]", "", exc.field).split(".")[-1]
        return f"non-nullable field {leaf} was serialized as null"
    match = _ARRAY_TOO_LONG.fullmatch(reason)
    if match:
        return (f"Tried to allocate a collection of size {match[1]}, but there are only {match[2]} "
                f"bytes remaining.")
    match = _RUNS_PAST_END.fullmatch(reason)
    if match:
        return f"Error reading byte array of {match[1]} byte(s): only {match[2]} byte(s) available"
    return reason


# --- ConsumerProtocolSubscription / ConsumerProtocolAssignment (classic consumer groups) ------

class _Reader:
    """Big-endian reads over the int16-version-prefixed bytes of a subscription or assignment."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ValueError("buffer underflow")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self, nullable: bool = False):
        length = self.take(">h")
        if length < 0:
            if nullable:
                return None
            raise ValueError("non-nullable string serialized as null")
        return java_utf8(self.raw(length))

    def raw(self, length: int) -> bytes:
        if self.pos + length > len(self.data):
            raise ValueError("buffer underflow")
        self.pos += length
        return self.data[self.pos - length:self.pos]

    def nullable_bytes(self):
        length = self.take(">i")
        return None if length < 0 else base64.b64encode(self.raw(length)).decode()

    def array(self, read_item):
        count = self.take(">i")
        if count < 0:
            raise ValueError("non-nullable array serialized as null")
        if count > len(self.data) - self.pos:
            raise ValueError("array longer than the bytes left")
        return [read_item() for _ in range(count)]

    def topic_partitions(self, version: int):
        def one():
            if version > CONSUMER_PROTOCOL_HIGHEST_VERSION:
                raise ValueError(f"TopicPartition has no version {version}")  # as Kafka's nested reader
            return {"topic": self.string(), "partitions": self.array(lambda: self.take(">i"))}
        return self.array(one)


def _subscription(reader: _Reader, version: int) -> dict:
    out = {"topics": reader.array(reader.string), "userData": reader.nullable_bytes()}
    if version >= 1:
        out["ownedPartitions"] = reader.topic_partitions(version)
    if version >= 2:
        out["generationId"] = reader.take(">i")
    if version >= 3:
        out["rackId"] = reader.string(nullable=True)
    return out


def _assignment(reader: _Reader, version: int) -> dict:
    return {"assignedPartitions": reader.topic_partitions(version), "userData": reader.nullable_bytes()}


def _decode_consumer_protocol(group_metadata: dict) -> None:
    """Kafka's OffsetsMessageParser: in a ``consumer`` group each member's subscription and
    assignment bytes are shown decoded; bytes that do not decode stay as base64."""
    if group_metadata.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return
    for member in group_metadata.get("members") or ():
        for field, read in (("subscription", _subscription), ("assignment", _assignment)):
            encoded = member.get(field)
            if encoded is None:
                continue
            try:
                reader = _Reader(base64.b64decode(encoded))
                member[field] = read(reader, reader.take(">h"))
            except (ValueError, struct.error):
                pass
