"""The base classes of the generated messages: encode/decode by version, equality, repr, and
Kafka's JsonConverter form (to_json/from_json).

The binary codecs are generated per version; JSON is interpreted from each class's _FIELDS
table, as it is for tools and tests, not for the hot path.
"""
from __future__ import annotations

import base64
import sys
from typing import Any, NamedTuple
from uuid import UUID

from .errors import (DecodeError, EncodeError, JsonError, UnsupportedVersionError, describe_failure, locate)
from .primitives import EncodeBuffer

class _Missing:
    """The one MISSING: "not given" for mutable keyword defaults (None means null), and the
    value of a lazy default's slot until the field is first read. It stays itself through
    copy, deepcopy and pickle, which rebuild plain object() sentinels as new objects."""
    __slots__ = ()

    def __repr__(self):
        return "MISSING"

    def __reduce__(self):
        return "MISSING"     # a global of this module: copied and unpickled as the same object


# Typed Any: it stands in, as a keyword default, for a value of whatever type the field has.
MISSING: Any = _Missing()


def version_in(rng, version) -> bool:
    """Whether a version lies in a (lowest, highest) range; None is the empty range.

    Public: the compiled JSON writers (kafkawire.metadata.fast_json) test a field's
    ``versions`` and ``tagged_versions`` by this rule, the one the interpreter uses."""
    return rng is not None and rng[0] <= version <= rng[1]


_in = version_in


class Field(NamedTuple):
    name: str
    py_name: str
    json_name: str
    kind: str
    element: str | None
    struct: type | None
    versions: tuple | None
    nullable_versions: tuple | None
    tagged_versions: tuple | None
    tag: int | None
    default: object
    ignorable: bool
    flexible_versions: tuple | None

    def present(self, version):
        return _in(self.versions, version)

    def nullable(self, version):
        return _in(self.nullable_versions, version)

    def tagged_in(self, version):
        return _in(self.tagged_versions, version)


class Struct:
    __slots__ = ()
    _FIELDS: tuple = ()
    _ENCODERS: dict = {}
    _DECODERS: dict = {}
    NAME = "Struct"

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        for f in self._FIELDS:
            if getattr(self, f.py_name) != getattr(other, f.py_name):
                return False
        return list(self._unknown_tagged_fields) == list(other._unknown_tagged_fields)

    # No __hash__: a class that defines __eq__ alone gets __hash__ = None from Python, so
    # instances (mutable) are unhashable, as they were with an explicit None.

    def __repr__(self):
        parts = [f"{f.py_name}={getattr(self, f.py_name)!r}" for f in self._FIELDS]
        if self._unknown_tagged_fields:
            parts.append(f"_unknown_tagged_fields={self._unknown_tagged_fields!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    @property
    def unknown_tagged_fields(self):
        """Tagged fields this schema does not know, as (tag, bytes); kept and written back in tag order."""
        return self._unknown_tagged_fields

    @unknown_tagged_fields.setter
    def unknown_tagged_fields(self, fields):
        self._unknown_tagged_fields = sorted(fields, key=lambda item: item[0]) if fields else ()

    # --- Kafka's JsonConverter form -------------------------------------------------------------
    def to_json(self, version: int) -> dict:
        out = {}
        for f in self._FIELDS:
            if not _in(f.versions, version):
                continue
            value = getattr(self, f.py_name)
            if _in(f.tagged_versions, version) and _is_default(f, value):
                continue
            out[f.json_name] = _value_to_json(f, f.kind, value, version, self)
        return out

    @classmethod
    def from_json(cls, obj: dict, version: int):
        if not isinstance(obj, dict):
            raise JsonError(f"{cls.NAME} v{version}: expected a JSON object, got {type(obj).__name__}")
        self = cls()
        known = set()
        for f in cls._FIELDS:
            known.add(f.json_name)
            present = _in(f.versions, version)
            if f.json_name not in obj:
                if present and not _in(f.tagged_versions, version):
                    raise JsonError(f"{cls.NAME}: unable to locate field '{f.json_name}', which is mandatory in version {version}")
                continue
            if not present:
                raise JsonError(f"{cls.NAME}: field '{f.json_name}' is not supported in version {version}")
            setattr(self, f.py_name, _value_from_json(f, f.kind, obj[f.json_name], version, cls))
        extra = set(obj) - known
        if extra:
            raise JsonError(f"{cls.NAME} v{version}: unknown field(s) {sorted(extra)}")
        return self


class Message(Struct):
    """The base of every generated message class (requests, responses, headers, records).

    ``Cls.decode(data, version)`` reads one (every byte must be used, unless ``partial=True``,
    which returns ``(message, end)``); ``msg.encode(version)`` writes one; ``to_json(version)`` and
    ``Cls.from_json(obj, version)`` are Kafka's JsonConverter form; ``Cls.versions()`` is the range
    of valid versions. Class attributes: ``NAME``, ``API_KEY`` (record type for metadata records),
    ``TYPE``, ``SCHEMA`` (the schema file it came from).
    """
    __slots__ = ()
    NAME = "Message"
    TYPE = ""
    API_KEY: int | None = None
    VALID_VERSIONS: tuple[int, int] | None = None       # None: the empty range
    FLEXIBLE_VERSIONS: tuple[int, int] | None = None
    LATEST_VERSION_UNSTABLE = False
    SCHEMA = ""
    _HAS_BYTES = False     # whether a bytes or records field may carry a value worth setting aside
    # version -> the C encoder (kafkawire.protocol.native_codec), which returns the bytes or None
    # to let the generated encoder write them (or word the error); empty on the pure path.
    _NATIVE_ENCODERS: dict = {}

    @classmethod
    def versions(cls) -> range:
        if cls.VALID_VERSIONS is None:
            return range(0)
        return range(cls.VALID_VERSIONS[0], cls.VALID_VERSIONS[1] + 1)

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return _in(cls.FLEXIBLE_VERSIONS, version)

    def encode_into(self, buf: bytearray, version: int) -> None:
        encoder = self._ENCODERS.get(version)
        if encoder is None:
            raise UnsupportedVersionError(self.NAME, version, None, f"no such version; valid versions are {self._valid_text()}")
        try:
            encoder(self, buf)
        except EncodeError:
            raise
        except Exception as exc:
            field, _ = locate(sys.exc_info()[2])
            raise EncodeError(self.NAME, version, field, f"{type(exc).__name__}: {exc}") from exc

    def encode(self, version: int) -> bytes:
        native = self._NATIVE_ENCODERS.get(version)
        if native is not None:
            data = native(self)
            if data is not None:
                return data
        if self._HAS_BYTES:
            buf = EncodeBuffer()
            self.encode_into(buf, version)
            return buf.getvalue()
        small = bytearray()    # cheaper to make and to fill than an EncodeBuffer, for the many small messages
        self.encode_into(small, version)
        return bytes(small)

    @classmethod
    def decode(cls, data, version: int, *, partial: bool = False):
        """Decode a whole buffer (every byte must be used), or with partial=True return (message, end)."""
        decoder = cls._DECODERS.get(version)
        if decoder is None:
            raise DecodeError(cls.NAME, version, None, None, f"no such version; valid versions are {cls._valid_text()}")
        if type(data) is not bytes:
            data = bytes(data)
        try:
            message, end = decoder(data, 0)
        except Exception as exc:
            field, offset = locate(sys.exc_info()[2], len(data))
            raise DecodeError(cls.NAME, version, field, offset, describe_failure(exc, len(data), offset)) from None
        if partial:
            return message, end
        if end != len(data):
            raise DecodeError(cls.NAME, version, None, end, f"{len(data) - end} bytes left over after the message")
        return message

    @classmethod
    def _valid_text(cls):
        if cls.VALID_VERSIONS is None:
            return "none"
        return f"{cls.VALID_VERSIONS[0]}-{cls.VALID_VERSIONS[1]}"


def tagged_value_is_default(f: Field, value) -> bool:
    """The rule Kafka uses to leave a tagged field out: equal to its (explicit or implicit) default.

    In _FIELDS an array's default is None (null) or () (empty); a struct's is None (null) or
    MISSING (a default-constructed instance).
    """
    if f.kind == "array":
        return value is None if f.default is None else (value is not None and len(value) == 0)
    if f.kind == "struct":
        if f.default is None:
            return value is None
        struct = f.struct
        assert struct is not None, f"struct field {f.name} has no struct class"
        return value is not None and value == struct()
    return value == f.default


_is_default = tagged_value_is_default


def _value_to_json(f, kind, value, version, owner):
    if value is None:
        return None
    if kind in ("bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string"):
        return value
    if kind == "uuid":
        return uuid_to_kafka_string(value)
    if kind in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode()
    if kind == "struct":
        return value.to_json(version)
    if kind == "array":
        return [_value_to_json(f, f.element, item, version, owner) for item in value]
    raise JsonError(f"unknown kind {kind}")


def _value_from_json(f, kind, value, version, owner):
    where = f"{owner.NAME}.{f.json_name}"
    if value is None:
        # Only strings, bytes, records, arrays and structs ever have nullableVersions.
        if not _in(f.nullable_versions, version):
            raise JsonError(f"{where}: null is not allowed in version {version}")
        return None
    try:
        if kind == "bool":
            if not isinstance(value, bool):
                raise TypeError("expected true or false")
            return value
        if kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                raise TypeError("expected an integer")
            return int(value)
        if kind == "float64":
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise TypeError("expected a number")
            return float(value)
        if kind == "string":
            if not isinstance(value, str):
                raise TypeError("expected a string")
            return value
        if kind == "uuid":
            return uuid_from_kafka_string(value)
        if kind in ("bytes", "records"):
            return base64.b64decode(value, validate=True)
        if kind == "struct":
            return f.struct.from_json(value, version)
        if kind == "array":
            if not isinstance(value, list):
                raise TypeError("expected an array")
            element = f.element
            return [_value_from_json(f._replace(nullable_versions=None), element, item, version, owner) for item in value]
    except JsonError:
        raise
    except (TypeError, ValueError) as exc:
        raise JsonError(f"{where}: {exc} (got {value!r:.60})") from None
    raise JsonError(f"{where}: unknown kind {kind}")


def uuid_to_kafka_string(value: UUID) -> str:
    """Kafka's Uuid.toString: 22 characters of unpadded base64url."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def uuid_from_kafka_string(text: str) -> UUID:
    if not isinstance(text, str) or len(text) != 22:
        raise ValueError(f"a uuid is 22 characters of base64url, not {text!r:.40}")
    return UUID(bytes=base64.urlsafe_b64decode(text + "=="))
