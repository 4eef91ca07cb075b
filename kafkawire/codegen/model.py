"""Kafka message schemas as a validated model.

Parsing follows Apache Kafka's generator (MessageSpec, StructSpec, FieldSpec, FieldType):
the same keys, the same defaults and the same rules. A schema that Kafka's generator would
refuse is refused here, with a SchemaError naming the file, the message and the field.
"""
from __future__ import annotations

import base64
import keyword
import re
import uuid
from dataclasses import dataclass, field as dataclass_field
from pathlib import Path

from . import dialect
from .versions import ALL, NONE, Versions

MESSAGE_TYPES = {"request", "response", "header", "data", "metadata", "coordinator-key", "coordinator-value"}
MESSAGE_KEYS = {"name", "type", "apiKey", "validVersions", "flexibleVersions", "deprecatedVersions",
                "latestVersionUnstable", "listeners", "fields", "commonStructs"}
FIELD_KEYS = {"name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default", "ignorable",
              "mapKey", "entityType", "zeroCopy", "about", "fields", "flexibleVersions"}
STRUCT_KEYS = {"name", "versions", "fields", "about"}

# struct format character of each fixed-width primitive, big-endian on the wire.
FIXED_FORMATS = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i",
                 "uint32": "I", "int64": "q", "float64": "d", "uuid": "16s"}
VARIABLE_PRIMITIVES = {"string", "bytes", "records"}
PRIMITIVES = set(FIXED_FORMATS) | VARIABLE_PRIMITIVES
INT_RANGES = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
              "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1)}
NULLABLE_KINDS = {"string", "bytes", "records", "array", "struct"}
ENTITY_TYPES = {"unknown": None, "transactionalId": "string", "producerId": "int64", "groupId": "string",
                "topicName": "string", "brokerId": "int32"}
FIELD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


class SchemaError(ValueError):
    """A schema breaks one of the rules of Kafka's message generator."""

    def __init__(self, path: Path | str, message: str | None, field_path: str | None, rule: str):
        self.path, self.message, self.field_path, self.rule = str(path), message, field_path, rule
        where = f"{self.path}"
        if message:
            where += f": message {message}"
        if field_path:
            where += f", field {field_path}"
        super().__init__(f"{where}: {rule}")


@dataclass
class FieldType:
    """A field's type: a primitive, a struct, or an array of either."""
    name: str                        # as written in the schema, e.g. "[]int32", "TopicData"
    kind: str                        # a primitive name, "struct" or "array"
    element: "FieldType | None" = None

    @classmethod
    def parse(cls, text: str) -> "FieldType":
        if text.startswith("[]"):
            element = cls.parse(text[2:])
            if element.kind == "array":
                raise ValueError(f"arrays of arrays are not supported: {text!r}")
            return cls(text, "array", element)
        if text in PRIMITIVES:
            return cls(text, text)
        if text[:1].isupper() and FIELD_NAME.match(text):
            return cls(text, "struct")
        raise ValueError(f"unknown type {text!r}")

    @property
    def struct_name(self) -> str | None:
        if self.kind == "struct":
            return self.name
        if self.kind == "array" and self.element.kind == "struct":
            return self.element.name
        return None


@dataclass
class FieldSpec:
    name: str
    type: FieldType
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    default: object                  # the Python default value (None for null)
    default_text: str                # the schema's own spelling, for the generated comments
    ignorable: bool
    map_key: bool
    entity_type: str
    zero_copy: bool
    about: str
    flexible_versions: Versions | None   # only ClientId-style overrides set this
    struct: "StructSpec | None" = None
    py_name: str = ""
    json_name: str = ""

    @property
    def tagged(self) -> bool:
        return self.tag is not None

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_versions

    def present_in(self, version: int) -> bool:
        return version in self.versions


@dataclass
class StructSpec:
    name: str
    versions: Versions
    fields: list[FieldSpec]
    is_common: bool = False

    def fields_in(self, version: int) -> list[FieldSpec]:
        return [f for f in self.fields if f.present_in(version) and not (f.tagged and version in f.tagged_versions)]

    def tagged_fields_in(self, version: int) -> list[FieldSpec]:
        return sorted((f for f in self.fields if f.tagged and version in f.tagged_versions), key=lambda f: f.tag)


@dataclass
class MessageSpec:
    path: Path
    name: str
    type: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    latest_version_unstable: bool
    listeners: list[str]
    struct: StructSpec
    common_structs: dict[str, StructSpec]
    structs: dict[str, StructSpec] = dataclass_field(default_factory=dict)  # every struct by name, inner first

    @property
    def fields(self) -> list[FieldSpec]:
        return self.struct.fields

    def flexible(self, version: int) -> bool:
        return version in self.flexible_versions


def snake_case(name: str) -> str:
    """Kafka's PascalCase field names as Python attribute names: KRaftVersion -> k_raft_version."""
    words = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", words).lower()
    return words + "_" if keyword.iskeyword(words) or words == "self" else words


def json_name(name: str) -> str:
    """The key Kafka's JsonConverter writes: the field name with only its first letter lowered."""
    return name[:1].lower() + name[1:]


class _Parser:
    def __init__(self, path: Path, raw: dict):
        self.path, self.raw = path, raw
        self.message_name = raw.get("name") if isinstance(raw, dict) else None
        self.structs: dict[str, StructSpec] = {}
        self.common: dict[str, StructSpec] = {}

    def fail(self, field_path: str | None, rule: str) -> SchemaError:
        return SchemaError(self.path, self.message_name, field_path, rule)

    def versions(self, text, field_path, what, default=None) -> Versions:
        if text is not None and not isinstance(text, str):
            raise self.fail(field_path, f"{what} must be a string such as \"0+\", not {text!r}")
        try:
            return Versions.parse(text, default)
        except ValueError as exc:
            raise self.fail(field_path, f"{what}: {exc}") from None

    def parse(self) -> MessageSpec:
        raw = self.raw
        if not isinstance(raw, dict):
            raise self.fail(None, "the schema must be a JSON object")
        unknown = set(raw) - MESSAGE_KEYS
        if unknown:
            raise self.fail(None, f"unknown key(s) {sorted(unknown)}; a message has {sorted(MESSAGE_KEYS)}")
        name = raw.get("name")
        if not isinstance(name, str) or not FIELD_NAME.match(name):
            raise self.fail(None, f"the message name {name!r} must match [A-Za-z][A-Za-z0-9]*")
        kind = raw.get("type")
        if kind not in MESSAGE_TYPES:
            raise self.fail(None, f"unknown message type {kind!r}; expected one of {sorted(MESSAGE_TYPES)}")
        api_key = raw.get("apiKey")
        if api_key is not None and (not isinstance(api_key, int) or not 0 <= api_key <= 0x7FFF):
            raise self.fail(None, f"apiKey {api_key!r} must be an integer from 0 to 32767")
        if kind in ("request", "response") and api_key is None:
            raise self.fail(None, f"a {kind} needs an apiKey")
        valid = self.versions(raw.get("validVersions"), None, "validVersions")
        if "flexibleVersions" not in raw and not valid.empty:
            # Kafka 4.0 left removed APIs as stubs with "validVersions": "none" and nothing else.
            raise self.fail(None, "flexibleVersions is required: \"none\" or an open-ended range such as \"9+\"")
        flexible = self.versions(raw.get("flexibleVersions", "none"), None, "flexibleVersions")
        if not flexible.empty and not flexible.open_ended:
            raise self.fail(None, f"flexibleVersions must be \"none\" or open-ended (\"N+\"), not {flexible}")
        unstable = raw.get("latestVersionUnstable", False)
        if not isinstance(unstable, bool):
            raise self.fail(None, "latestVersionUnstable must be true or false")
        if unstable and kind != "request":
            raise self.fail(None, "latestVersionUnstable is only allowed on requests")
        listeners = raw.get("listeners") or []
        if listeners and kind != "request":
            raise self.fail(None, "listeners are only allowed on requests")
        self.valid, self.flexible = valid, flexible

        for raw_struct in raw.get("commonStructs") or []:
            struct = self.struct_from(raw_struct)
            if struct.name in self.common:
                raise self.fail(struct.name, f"common struct {struct.name} is defined twice")
            self.common[struct.name] = struct
        # Common structs may refer to each other in any order: declare them all, then fill them in.
        for raw_struct in raw.get("commonStructs") or []:
            struct = self.common[raw_struct["name"]]
            struct.fields = self.fields(raw_struct.get("fields") or [], struct.name, struct.versions)
            self.structs.setdefault(struct.name, struct)
        top = StructSpec(name, valid, [])
        top.fields = self.fields(raw.get("fields") or [], None, valid)
        self.structs[name] = top
        for struct in self.common.values():
            if struct.name not in self.structs:
                self.structs[struct.name] = struct
        return MessageSpec(self.path, name, kind, api_key, valid, flexible, unstable, list(listeners),
                           top, self.common, self.structs)

    def struct_from(self, raw: dict) -> StructSpec:
        if not isinstance(raw, dict):
            raise self.fail(None, f"a common struct must be a JSON object, not {raw!r}")
        unknown = set(raw) - STRUCT_KEYS
        if unknown:
            raise self.fail(raw.get("name"), f"unknown key(s) {sorted(unknown)} in a common struct")
        name = raw.get("name")
        if not isinstance(name, str) or not FIELD_NAME.match(name) or not name[0].isupper():
            raise self.fail(name, f"common struct name {name!r} must be capitalized and alphanumeric")
        versions = self.versions(raw.get("versions"), name, "versions", ALL)
        return StructSpec(name, versions, [], is_common=True)

    def fields(self, raws: list, parent: str | None, parent_versions: Versions) -> list[FieldSpec]:
        if not isinstance(raws, list):
            raise self.fail(parent, "fields must be a list")
        fields = [self.field(raw, parent, parent_versions) for raw in raws]
        names, py_names, tags = set(), {}, {}
        for f in fields:
            where = f"{parent}.{f.name}" if parent else f.name
            if f.name in names:
                raise self.fail(where, "duplicate field name")
            names.add(f.name)
            if f.py_name in py_names:
                raise self.fail(where, f"field names {py_names[f.py_name]} and {f.name} map to the same Python name {f.py_name}")
            py_names[f.py_name] = f.name
            if f.tagged:
                if f.tag in tags:
                    raise self.fail(where, f"tag {f.tag} is used by both {tags[f.tag]} and {f.name}")
                tags[f.tag] = f.name
        for expected in range(len(tags)):
            if expected not in tags:
                raise self.fail(parent, f"tags must be contiguous from 0: tag {expected} is missing "
                                        f"but tags {sorted(tags)} are used (use tag {expected} before a higher one)")
        return fields

    def field(self, raw: dict, parent: str | None, parent_versions: Versions) -> FieldSpec:
        if not isinstance(raw, dict):
            raise self.fail(parent, f"a field must be a JSON object, not {raw!r}")
        name = raw.get("name")
        where = f"{parent}.{name}" if parent else str(name)
        unknown = set(raw) - FIELD_KEYS
        if unknown:
            raise self.fail(where, f"unknown key(s) {sorted(unknown)}; a field has {sorted(FIELD_KEYS)}")
        if not isinstance(name, str) or not FIELD_NAME.match(name):
            raise self.fail(where, f"field name {name!r} must match [A-Za-z][A-Za-z0-9]*")
        try:
            ftype = FieldType.parse(raw.get("type") or "")
        except ValueError as exc:
            raise self.fail(where, str(exc)) from None

        tagged_text = raw.get("taggedVersions")
        versions_text = raw.get("versions")
        if versions_text is None and tagged_text is None:
            raise self.fail(where, "a field needs versions (or taggedVersions)")
        versions = self.versions(versions_text if versions_text is not None else tagged_text, where, "versions")
        if not self.valid.empty and not versions.empty and versions.lowest > self.valid.highest:
            raise self.fail(where, f"versions {versions} lie outside the message's validVersions {self.valid}")
        nullable = self.versions(raw.get("nullableVersions"), where, "nullableVersions", NONE)
        tagged = self.versions(tagged_text, where, "taggedVersions", NONE)
        kind = ftype.kind

        if not nullable.empty and kind not in NULLABLE_KINDS:
            raise self.fail(where, f"nullableVersions is set, but a {ftype.name} field can never be null"
                                   + (" (an absent uuid is the zero uuid)" if kind == "uuid" else ""))
        tag = raw.get("tag")
        if tag is not None:
            try:
                tag = int(tag)
            except (TypeError, ValueError):
                raise self.fail(where, f"tag {tag!r} is not an integer") from None
            if tag < 0:
                raise self.fail(where, f"tag {tag} is negative")
            if tagged.empty:
                raise self.fail(where, "a field with a tag needs taggedVersions")
        elif not tagged.empty:
            raise self.fail(where, "taggedVersions is set but the field has no tag")
        if tag is not None:
            if not tagged.open_ended:
                raise self.fail(where, f"taggedVersions must be open-ended (\"N+\"), not {tagged}")
            if not versions.contains_range(tagged):
                raise self.fail(where, f"taggedVersions {tagged} must be a subset of versions {versions}")
            if not self.flexible.contains_range(tagged):
                raise self.fail(where, f"tagged field in taggedVersions {tagged}, but only versions "
                                       f"{self.flexible} of the message are flexible")
            overlap = nullable.intersect(tagged)
            if not overlap.empty and overlap != tagged:
                raise self.fail(where, f"a tagged field must be nullable in all of its taggedVersions "
                                       f"{tagged} or none of them, not {nullable}")
            if raw.get("mapKey"):
                raise self.fail(where, "a tagged field cannot be a mapKey")

        flexible_override = None
        if "flexibleVersions" in raw:
            if kind not in ("string", "bytes"):
                raise self.fail(where, "a field may override flexibleVersions only if it is a string or bytes")
            flexible_override = self.versions(raw["flexibleVersions"], where, "flexibleVersions")
            if not flexible_override.empty and not flexible_override.open_ended:
                raise self.fail(where, "a field's flexibleVersions must be \"none\" or open-ended")
        zero_copy = bool(raw.get("zeroCopy", False))
        if zero_copy and kind != "bytes":
            raise self.fail(where, "zeroCopy is only allowed on bytes fields")
        entity = raw.get("entityType", "unknown") or "unknown"
        if entity not in ENTITY_TYPES:
            raise self.fail(where, f"unknown entityType {entity!r}; expected one of {sorted(ENTITY_TYPES)}")
        base = ftype.element.kind if kind == "array" else kind
        if ENTITY_TYPES[entity] is not None and base != ENTITY_TYPES[entity]:
            raise self.fail(where, f"entityType {entity} needs type {ENTITY_TYPES[entity]}, not {ftype.name}")

        field = FieldSpec(name=name, type=ftype, versions=versions, nullable_versions=nullable,
                          tagged_versions=tagged, tag=tag, default=None, default_text="",
                          ignorable=bool(raw.get("ignorable", False)), map_key=bool(raw.get("mapKey", False)),
                          entity_type=entity, zero_copy=zero_copy, about=str(raw.get("about", "")),
                          flexible_versions=flexible_override, py_name=snake_case(name), json_name=json_name(name))
        field.default, field.default_text = self.default(raw, field, where)

        struct_name = ftype.struct_name
        inline = raw.get("fields")
        if struct_name:
            if inline is not None:
                if struct_name in self.common:
                    raise self.fail(where, f"struct {struct_name} is a common struct and cannot be re-specified inline")
                if struct_name in self.structs or struct_name == self.message_name:
                    raise self.fail(where, f"struct name {struct_name} is used twice in this file")
                struct = StructSpec(struct_name, versions, [])
                self.structs[struct_name] = struct   # claimed before the children, so a child can't reuse it
                struct.fields = self.fields(inline, where, versions)
                field.struct = struct
            elif struct_name in self.common:
                field.struct = self.common[struct_name]
            else:
                raise self.fail(where, f"struct type {struct_name} has no fields and is not a common struct")
        elif inline:
            raise self.fail(where, f"a {ftype.name} field cannot have fields")
        return field

    def default(self, raw: dict, field: FieldSpec, where: str) -> tuple[object, str]:
        # A JSON null ("default": null, not the string "null") is no default at all, as in Kafka's
        # FieldSpec (a null String becomes ""): the field's zero value, an empty array or a default
        # struct, which Kafka 4.3.1's generated code writes and reads (tests/interop/test_codec_vectors.py).
        kind, text = field.type.kind, raw.get("default")
        if isinstance(text, bool):
            text = "true" if text else "false"
        if isinstance(text, (int, float)):
            text = str(text)
        if text is not None and not isinstance(text, str):
            raise self.fail(where, f"default {text!r} must be a string")
        if text == "null":
            if kind not in NULLABLE_KINDS:
                raise self.fail(where, f"a {field.type.name} field cannot default to null")
            if not field.nullable_versions.contains_range(field.versions):
                raise self.fail(where, f"null default, but not all versions of this field are nullable "
                                       f"(versions {field.versions}, nullableVersions {field.nullable_versions})")
            return None, "null"
        if text is None or text == "":
            return _zero_value(field), ""
        if kind == "bool":
            if text.lower() not in ("true", "false"):
                raise self.fail(where, f"invalid default {text!r} for a bool field")
            return text.lower() == "true", text
        if kind in INT_RANGES:
            try:
                value = int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text, 10)
            except ValueError:
                raise self.fail(where, f"invalid default {text!r} for a {kind} field") from None
            low, high = INT_RANGES[kind]
            if not low <= value <= high:
                raise self.fail(where, f"default {text} does not fit in a {kind}")
            return value, text
        if kind == "float64":
            try:
                return float(text), text
            except ValueError:
                raise self.fail(where, f"invalid default {text!r} for a float64 field") from None
        if kind == "uuid":
            try:
                raw_bytes = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
                if len(raw_bytes) != 16:
                    raise ValueError
            except ValueError:
                raise self.fail(where, f"invalid default {text!r} for a uuid field: not a 22-character base64url uuid") from None
            return uuid.UUID(bytes=raw_bytes), text
        if kind == "string":
            return text, text
        raise self.fail(where, f"a {field.type.name} field may only default to null or empty, not {text!r}")


def _zero_value(field: FieldSpec) -> object:
    kind = field.type.kind
    if kind == "bool":
        return False
    if kind in INT_RANGES:
        return 0
    if kind == "float64":
        return 0.0
    if kind == "uuid":
        return uuid.UUID(int=0)
    if kind == "string":
        return ""
    if kind == "bytes":
        return b""
    if kind == "records":
        # Kafka defaults records to null; a field that can never be null gets the empty set instead.
        return None if not field.nullable_versions.empty else b""
    if kind == "array":
        return ()     # an empty array; the generated code gives each instance its own list
    return ()         # a struct: a default instance, made per instance by the generated code


def parse_message(path: Path, raw: dict | None = None) -> MessageSpec:
    raw = dialect.load(path) if raw is None else raw
    return _Parser(path, raw).parse()
