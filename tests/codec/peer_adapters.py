"""Converters between kafkawire messages and two independent Python codecs of Kafka's protocol:
kio (frozen dataclasses, one module per message version) and kafka-python 3.x (classes built at
import time from its own copy of Kafka's JSON schemas).

Both are driven generically from metadata, never per message by hand: our side from each class's
_FIELDS table, kio's from its dataclass fields (``kafka_type``/``tag`` metadata and the type
annotations), kafka-python's from its parsed schema fields (``cls._struct``). Fields are paired
by position among the fields present in a version (all three keep Kafka's schema order); the
pairing is checked by name and wire type first (layout_problems), so a disagreement between
schemas shows as a precise failure rather than a garbled conversion.

Where a peer's value model is narrower than the wire format, the test's instance is repaired
(constrain): every such case is listed in KIO_LIMITS / KAFKA_PYTHON_LIMITS below.
"""
from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import random
import struct
import uuid
from pkgutil import resolve_name

from hypothesis import strategies as st

from kafkawire import messages
from kafkawire.protocol.message import MISSING

ZERO_UUID = uuid.UUID(int=0)
INT32_MIN = -2**31


def present(cls, version):
    return [f for f in cls._FIELDS if f.present(version)]


def our_default(f):
    if f.kind == "struct" and f.default is MISSING:
        return f.struct()
    return f.default


def is_our_default(f, value):
    default = our_default(f)
    if f.kind == "array" and value is not None and default is not None:
        return list(value) == list(default)
    return value == default


def _ours_by_name():
    return {cls.NAME: cls for cls in messages.all_messages()}


# Fields current Kafka renamed after a peer took its schemas, with the same wire layout
# (KIP-1071: StreamsGroupHeartbeatResponse.AcceptableRecoveryLag became ...Legacy; KIP-1251:
# TxnOffsetCommitRequest.GenerationId became GenerationIdOrMemberEpoch).
_RENAMED_AFTER_PEER = {"acceptable_recovery_lag_legacy": "acceptable_recovery_lag",
                       "generation_id_or_member_epoch": "generation_id"}
_KAFKA_NAMES_AFTER_PEER = {"AcceptableRecoveryLagLegacy": "AcceptableRecoveryLag",
                           "GenerationIdOrMemberEpoch": "GenerationId"}


def _norm(name):
    """Names compared loosely: kio renames *_ms fields it types as timedelta/datetime and adds or
    drops a trailing underscore on Python keywords/builtins (type_, our version_)."""
    name = _RENAMED_AFTER_PEER.get(name, name).rstrip("_")
    return name[:-3] if name.endswith("_ms") else name


# ----------------------------------------------------------------------------------------------
# kio
# ----------------------------------------------------------------------------------------------
KIO_LIMITS = {
    "unknown tagged fields": "kio's reader rejects tags its schema does not know and its entities "
                             "have nowhere to keep them: generated instances carry none",
    "error_code": "kio types error codes as the ErrorCode enum, which only has the codes it knows: "
                  "other int16 values are redrawn from ErrorCode",
    "timedelta_i64": "kio reads int64 *_ms durations as datetime.timedelta, which overflows past "
                     "about +-2**56 ms and its writer rounds through float seconds: values that do "
                     "not survive kio's own writer/reader are redrawn",
    "datetime_i64": "kio reads int64 timestamps as aware datetimes: negative values are refused "
                    "(except -1 = null where nullable), years past 9999 overflow and its reader "
                    "goes through float seconds (253402300799999 ms reads back as ...59.998993, "
                    "14572163074502 ms as ...34.502001): "
                    "values that do not survive kio's own writer/reader are redrawn",
    "uuid": "kio reads the all-zero uuid as None; converted back to UUID(int=0) (no repair needed)",
}

_KIO_NARROW = ("error_code", "timedelta_i64", "datetime_i64")
_KIO_WIRE = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64",
             "datetime_i64": "int64"}
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MS = datetime.timedelta(milliseconds=1)


class Kio:
    name = "kio"
    LIMITS = KIO_LIMITS

    def __init__(self):
        from kio.schema.errors import ErrorCode
        from kio.serial import entity_reader, entity_writer
        from kio.serial import _introspect
        from kio.serial._parse import get_reader
        from kio.serial._serialize import get_writer
        self.ErrorCode = ErrorCode
        self.entity_reader = entity_reader
        self.entity_writer = entity_writer
        self.intro = _introspect
        self.get_reader = get_reader
        self.get_writer = get_writer
        self.error_codes = sorted(int(e) for e in ErrorCode)

    # --- enumeration --------------------------------------------------------------------------
    def pairs(self):
        """(our message name, version, kio class path) for every version both sides have."""
        from kio.schema.index import schema_name_map
        ours = _ours_by_name()
        out = []
        for versions in schema_name_map.values():
            for version, by_type in versions.items():
                for path in by_type.values():
                    name = path.split(":", 1)[1]
                    if name in ours and version in ours[name].versions():
                        out.append((name, version, path))
        return sorted(out)

    def peer_class(self, path):
        return resolve_name(path)

    # --- field metadata ------------------------------------------------------------------------
    def _kind(self, kf):
        """(kind, element, entity class) of a kio field in our vocabulary."""
        c = self.intro.classify_field(kf)
        kt = kf.metadata.get("kafka_type")
        if isinstance(c, self.intro.EntityField):
            return "struct", None, c.type_
        if isinstance(c, self.intro.EntityTupleField):
            return "array", "struct", c.type_
        if isinstance(c, self.intro.PrimitiveTupleField):
            return "array", _KIO_WIRE.get(kt, kt), None
        return _KIO_WIRE.get(kt, kt), None, None

    def layout_problems(self, our_cls, kcls, version, path=None):
        path = path or our_cls.NAME
        ours = present(our_cls, version)
        theirs = dataclasses.fields(kcls)
        if [_norm(f.py_name) for f in ours] != [_norm(f.name) for f in theirs]:
            return [f"{path} v{version}: fields differ: ours {[f.py_name for f in ours]}, "
                    f"kio {[f.name for f in theirs]}"]
        problems = []
        for f, kf in zip(ours, theirs):
            kind, element, entity = self._kind(kf)
            if (f.kind, f.element if f.kind == "array" else None) != (kind, element):
                problems.append(f"{path}.{f.py_name} v{version}: ours {f.kind}/{f.element}, kio {kind}/{element}")
            tag = f.tag if f.tagged_in(version) else None
            if tag != self.intro.get_field_tag(kf):
                problems.append(f"{path}.{f.py_name} v{version}: tag ours {tag}, kio {self.intro.get_field_tag(kf)}")
            # kio types every uuid as Optional (zero <-> None) and some int64 timestamps as
            # Optional datetimes (-1 <-> None), whatever Kafka's nullability: not wire nullability.
            if kf.metadata.get("kafka_type") not in ("uuid", "datetime_i64") and tag is None \
                    and f.nullable(version) != self.intro.is_optional(kf):
                problems.append(f"{path}.{f.py_name} v{version}: nullable ours {f.nullable(version)}, "
                                f"kio {self.intro.is_optional(kf)}")
            if entity is not None and f.struct is not None:
                problems += self.layout_problems(f.struct, entity, version, f"{path}.{f.py_name}")
        return problems

    # --- primitive values ----------------------------------------------------------------------
    def _prim_to(self, kt, optional, value):
        if kt == "error_code":
            return self.ErrorCode(value)
        if kt in ("timedelta_i32", "timedelta_i64"):
            return datetime.timedelta(milliseconds=value)
        if kt == "datetime_i64":
            return None if optional and value == -1 else _EPOCH + datetime.timedelta(milliseconds=value)
        if kt == "uuid":
            return None if value == ZERO_UUID else value
        return value

    def _prim_from(self, kt, value):
        if kt == "error_code":
            return int(value)
        if kt in ("timedelta_i32", "timedelta_i64"):
            return value // _MS
        if kt == "datetime_i64":
            return -1 if value is None else (value - _EPOCH) // _MS
        if kt == "uuid":
            return ZERO_UUID if value is None else value
        if kt in ("bytes", "records") and value is not None:
            return bytes(value)
        return value

    def representable(self, kt, optional, value):
        """Does value survive kio's own writer and reader for this kafka_type?"""
        try:
            buf = io.BytesIO()
            self.get_writer(kt, False, optional)(buf, self._prim_to(kt, optional, value))
            data = buf.getvalue()
            if data != struct.pack(">h" if kt == "error_code" else ">q", value):
                return False
            decoded, size = self.get_reader(kt, False, optional)(data, 0)
            # Exactly the object we would build, not just the same milliseconds.
            return size == len(data) and decoded == self._prim_to(kt, optional, value) \
                and self._prim_from(kt, decoded) == value
        except Exception:
            return False

    def _repair_strategy(self, kt, optional):
        if kt == "error_code":
            return st.sampled_from(self.error_codes)
        if kt == "timedelta_i64":
            base = st.one_of(st.integers(-2**53, 2**53), st.sampled_from([0, -1, 1, 2**31, -2**31]))
        else:   # datetime_i64
            base = st.one_of(st.integers(0, 253402300799999), st.sampled_from([0, 1, 1700000000000]))
            if optional:
                base = st.one_of(st.just(-1), base)
        return base.filter(lambda v: self.representable(kt, optional, v))

    def _fix(self, kt, optional, value, draw):
        if kt in _KIO_NARROW and not (optional and value is None) and not self.representable(kt, optional, value):
            if draw is None:
                raise ValueError(f"kio cannot represent {kt} value {value!r}")
            return draw(self._repair_strategy(kt, optional), label=f"kio-representable {kt}")
        return value

    # --- objects -------------------------------------------------------------------------------
    def to_peer(self, obj, kcls, version, draw=None):
        """The kio entity for our struct obj; with draw, values kio cannot hold are first redrawn
        in obj itself (so obj stays the reference both sides must agree on)."""
        kwargs = {}
        for f, kf in zip(present(type(obj), version), dataclasses.fields(kcls)):
            value = getattr(obj, f.py_name)
            kt = kf.metadata.get("kafka_type")
            optional = self.intro.is_optional(kf) and self.intro.get_field_tag(kf) is None
            c = self.intro.classify_field(kf)
            if value is None:
                out = None
            elif isinstance(c, self.intro.EntityField):
                out = self.to_peer(value, c.type_, version, draw)
            elif isinstance(c, self.intro.EntityTupleField):
                out = tuple(self.to_peer(item, c.type_, version, draw) for item in value)
            elif isinstance(c, self.intro.PrimitiveTupleField):
                value[:] = [self._fix(kt, False, item, draw) for item in value]
                out = tuple(self._prim_to(kt, False, item) for item in value)
            else:
                fixed = self._fix(kt, optional, value, draw)
                if fixed is not value:
                    setattr(obj, f.py_name, fixed)
                out = self._prim_to(kt, optional, fixed)
            kwargs[kf.name] = out
        return kcls(**kwargs)

    def from_peer(self, kobj, our_cls, version):
        obj = our_cls()
        for f, kf in zip(present(our_cls, version), dataclasses.fields(type(kobj))):
            value = getattr(kobj, kf.name)
            kt = kf.metadata.get("kafka_type")
            c = self.intro.classify_field(kf)
            if isinstance(c, self.intro.EntityField):
                out = None if value is None else self.from_peer(value, f.struct, version)
            elif isinstance(c, self.intro.EntityTupleField):
                out = None if value is None else [self.from_peer(item, f.struct, version) for item in value]
            elif isinstance(c, self.intro.PrimitiveTupleField):
                out = None if value is None else [self._prim_from(kt, item) for item in value]
            else:
                out = self._prim_from(kt, value)
            setattr(obj, f.py_name, out)
        return obj

    def encode(self, kobj, kcls, version):
        buf = io.BytesIO()
        self.entity_writer(kcls)(buf, kobj)
        return buf.getvalue()

    def decode(self, kcls, data, version):
        kobj, size = self.entity_reader(kcls)(data, 0)
        assert size == len(data), f"kio read {size} of {len(data)} bytes"
        return kobj

    def constrain(self, obj, name, version, draw):
        return obj


# ----------------------------------------------------------------------------------------------
# kafka-python
# ----------------------------------------------------------------------------------------------
KAFKA_PYTHON_LIMITS = {
    "unknown tagged fields": "kafka-python keeps unknown tags on decode (obj.unknown_tags) but never "
                             "writes them back: generated instances carry none",
    "versions": "kafka-python resets every request/response schema's minimum version to 0 "
                "(api_message.ApiMessageData), so its classes accept versions Kafka 4's schemas "
                "dropped (e.g. Fetch v0-3, Produce v0-2, ListOffsets v0): only the validVersions of "
                "its own JSON are compared",
    "ApiVersionsResponse": "kafka-python decodes every ApiVersionsResponse whose ErrorCode is not 0 as "
                           "version 0 (as a broker answers an unsupported version): for v1+ the "
                           "generated ErrorCode is 0",
    "bitfield": "kafka-python patches MetadataResponse/DescribeClusterResponse *AuthorizedOperations "
                "int32 fields into a set of bit numbers (None = INT32_MIN); converted both ways",
    "uuid": "kafka-python reads the all-zero uuid as None; converted back to UUID(int=0)",
    "tagged structs": "kafka-python's default for a tagged struct field is None (absent): our "
                      "default-valued tagged struct maps to None",
}

_KP_MODULES = ("kafka.protocol.metadata.api_versions", "kafka.protocol.metadata.find_coordinator",
               "kafka.protocol.metadata.metadata", "kafka.protocol.admin", "kafka.protocol.consumer",
               "kafka.protocol.producer", "kafka.protocol.sasl")


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


class KafkaPython:
    name = "kafka-python"
    LIMITS = KAFKA_PYTHON_LIMITS

    def __init__(self):
        import pkgutil

        import kafka.protocol as kp
        for info in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
            if ".old" in info.name or info.name.endswith("generate_stubs"):
                continue
            importlib.import_module(info.name)
        from kafka.protocol.api_header import ApiHeader
        from kafka.protocol.api_message import ApiMessage
        from kafka.protocol.schemas import BaseField
        from kafka.protocol.schemas.fields.codecs import UUID, BitField
        self.ApiMessage = ApiMessage
        self.ApiHeader = ApiHeader
        self.BaseField = BaseField
        self.BitField = BitField
        self.UUID = UUID
        self.classes = {}
        for base in (ApiMessage, ApiHeader):
            for cls in _subclasses(base):
                if getattr(cls, "_class_version", None) is None and cls._json is not None:
                    self.classes[cls._json["name"]] = cls

    def pairs(self):
        ours = _ours_by_name()
        out = []
        for name, cls in self.classes.items():
            if name not in ours:
                continue
            low, high = self.BaseField.parse_versions(cls._json["validVersions"])   # the real range
            for version in range(low, high + 1):
                if version in ours[name].versions():
                    out.append((name, version, name))
        return sorted(out)

    def peer_class(self, name):
        return self.classes[name]

    def _is_header(self, cls):
        return issubclass(cls, self.ApiHeader)

    def _flexible(self, cls, version):
        low, high = self.BaseField.parse_versions(cls._json["flexibleVersions"]) or (-1, -1)
        return low <= version <= high

    @staticmethod
    def _fields(struct_field, version):
        return [b for b in struct_field._fields if b.for_version_q(version)]

    # --- field metadata ------------------------------------------------------------------------
    def _kind(self, b):
        if b.is_struct():
            return "struct", None
        if b.is_struct_array():
            return "array", "struct"
        if b.is_array():
            return "array", b.array_of._type_str
        return ("int32" if b._type_str == "bitfield" else b._type_str), None

    def layout_problems(self, our_cls, struct_field, version, path=None):
        path = path or our_cls.NAME
        ours = present(our_cls, version)
        theirs = self._fields(struct_field, version)
        names = [b._name if b._type_str != "bitfield" else "*AuthorizedOperations" for b in theirs]
        # A renamed field may carry either name in kafka-python (its JSON for one message is
        # older than for another: OffsetCommit has GenerationIdOrMemberEpoch, TxnOffsetCommit not).
        if len(ours) != len(theirs) or any(n not in (f.name, _KAFKA_NAMES_AFTER_PEER.get(f.name, f.name))
                                           and not (n.startswith("*") and f.name.endswith(n[1:]))
                                           for f, n in zip(ours, names)):
            return [f"{path} v{version}: fields differ: ours {[f.name for f in ours]}, kafka-python {names}"]
        problems = []
        for f, b in zip(ours, theirs):
            kind, element = self._kind(b)
            if (f.kind, f.element if f.kind == "array" else None) != (kind, element):
                problems.append(f"{path}.{f.name} v{version}: ours {f.kind}/{f.element}, kafka-python {kind}/{element}")
            tag = f.tag if f.tagged_in(version) else None
            their_tag = b.tag if b.tagged_field_q(version) else None
            if tag != their_tag:
                problems.append(f"{path}.{f.name} v{version}: tag ours {tag}, kafka-python {their_tag}")
            if f.nullable(version) != b.nullable_for_version_q(version):
                problems.append(f"{path}.{f.name} v{version}: nullable ours {f.nullable(version)}, "
                                f"kafka-python {b.nullable_for_version_q(version)}")
            if b.is_struct():
                problems += self.layout_problems(f.struct, b, version, f"{path}.{f.name}")
            elif b.is_struct_array():
                problems += self.layout_problems(f.struct, b.array_of, version, f"{path}.{f.name}")
        return problems

    # --- values --------------------------------------------------------------------------------
    def _prim_to(self, b, value):
        if b._type is self.BitField:
            bits = self.BitField.from_32_bit_field(value & 0xFFFFFFFF)
            return None if bits == {31} else bits
        if b._type is self.UUID:
            return None if value == ZERO_UUID else value
        return value

    def _prim_from(self, b, value):
        if b._type is self.BitField:
            if value is None:
                return INT32_MIN
            raw = self.BitField.to_32_bit_field(value)
            return raw - 2**32 if raw >= 2**31 else raw
        if b._type is self.UUID:
            return ZERO_UUID if value is None else value
        if isinstance(value, (memoryview, bytearray)):
            return bytes(value)
        return value

    def _to_struct(self, obj, struct_field, data_class, version):
        kwargs = {}
        for f, b in zip(present(type(obj), version), self._fields(struct_field, version)):
            value = getattr(obj, f.py_name)
            if value is None:
                out = None
            elif b.is_struct():
                tagged = b.tagged_field_q(version)
                out = None if tagged and is_our_default(f, value) else self._to_struct(value, b, b.data_class, version)
            elif b.is_struct_array():
                out = [self._to_struct(item, b.array_of, b.data_class, version) for item in value]
            elif b.is_array():
                out = [self._prim_to(b.array_of, item) for item in value]
            else:
                out = self._prim_to(b, value)
            kwargs[b.name] = out
        return data_class(version=version, **kwargs)

    def _from_struct(self, pobj, our_cls, struct_field, version):
        obj = our_cls()
        for f, b in zip(present(our_cls, version), self._fields(struct_field, version)):
            value = getattr(pobj, b.name)
            if b.is_struct():
                if value is None:
                    out = None if f.nullable(version) else our_default(f)
                else:
                    out = self._from_struct(value, f.struct, b, version)
            elif b.is_struct_array():
                out = None if value is None else [self._from_struct(item, f.struct, b.array_of, version) for item in value]
            elif b.is_array():
                out = None if value is None else [self._prim_from(b.array_of, item) for item in value]
            else:
                out = self._prim_from(b, value)
            setattr(obj, f.py_name, out)
        return obj

    def to_peer(self, obj, cls, version, draw=None):
        return self._to_struct(obj, cls._struct, cls, version)

    def from_peer(self, pobj, our_cls, version):
        return self._from_struct(pobj, our_cls, self.peer_class(our_cls.NAME)._struct, version)

    def encode(self, pobj, cls, version):
        if self._is_header(cls):
            return pobj.encode(flexible=self._flexible(cls, version))
        return pobj.encode(version=version)

    def decode(self, cls, data, version):
        if self._is_header(cls):
            buf = io.BytesIO(data)
            pobj = cls.decode(buf, flexible=self._flexible(cls, version))
            assert buf.tell() == len(data), f"kafka-python read {buf.tell()} of {len(data)} bytes"
            return pobj
        pobj = cls.decode(data, version=version)
        # decode() does not say how much it read: ask its compiled decoder, which it uses.
        flexible = cls.flexible_version_q(version)
        _, pos = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible,
                                                  data_class=cls)(memoryview(data), 0)
        assert pos == len(data), f"kafka-python read {pos} of {len(data)} bytes"
        return pobj

    def constrain(self, obj, name, version, draw):
        if name == "ApiVersionsResponse" and version > 0:
            obj.error_code = 0
        return obj


def peers():
    """Each installed peer, or the reason it is not."""
    import warnings
    out = {}
    for factory in (Kio, KafkaPython):
        try:
            with warnings.catch_warnings():
                # kafka-python loads its schemas with importlib.resources.read_text (deprecated).
                warnings.simplefilter("ignore", DeprecationWarning)
                out[factory.name] = factory()
        except ImportError as exc:
            out[factory.name] = exc
    return out


# ----------------------------------------------------------------------------------------------
# Long values
# ----------------------------------------------------------------------------------------------
# 1- to 4-byte UTF-8 characters: a long string's byte length differs from its length
_LONG_TEXT_CHARS = "abcxyzABC019_-. \u00fc\u20ac\u4e2d\U0001d11e"


def inflate(obj, version, draw, depth=0, rnd=None):
    """Lengthen some strings, bytes and arrays of obj (in place) past 127, where compact lengths
    and tagged-field sizes become multi-byte varints (tests/codec/strategies.py keeps them short).
    Which ones is drawn field by field; the long values themselves come from a seeded
    random.Random drawn once: drawing hundreds of characters or elements one by one through
    Hypothesis was half of tests/codec/test_peers.py's time, and their content does not matter
    to a length prefix."""
    from tests.codec.strategies import _scalar
    if rnd is None:
        rnd = random.Random(draw(st.integers(0, 2 ** 32 - 1), label="long values' seed"))
    for f in present(type(obj), version):
        value = getattr(obj, f.py_name)
        if value is None:
            continue
        if f.kind == "struct":
            inflate(value, version, draw, depth + 1, rnd)
        elif f.kind == "array" and f.element == "struct":
            for item in value:
                inflate(item, version, draw, depth + 1, rnd)
            if value and depth == 0 and draw(st.booleans(), label=f"long {f.py_name}"):
                value.extend([value[0]] * rnd.randint(128 - len(value), 140 - len(value)))
        elif not draw(st.booleans(), label=f"long {f.py_name}"):
            continue
        elif f.kind == "string":
            setattr(obj, f.py_name, "".join(rnd.choice(_LONG_TEXT_CHARS) for _ in range(rnd.randint(128, 160))))
        elif f.kind in ("bytes", "records"):
            setattr(obj, f.py_name, rnd.randbytes(rnd.randint(128, 300)))
        elif f.kind == "array":
            pool = draw(st.lists(_scalar(f.element), min_size=1, max_size=4), label=f"long {f.py_name}'s values")
            value.extend(rnd.choice(pool) for _ in range(rnd.randint(128 - len(value), 140 - len(value))))
