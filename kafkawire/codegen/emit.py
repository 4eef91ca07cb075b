"""Python source for one message schema.

What comes out, per struct and per version, is straight-line code: runs of fixed-width fields
packed and unpacked with one precompiled struct.Struct, variable-width fields through the small
readers and writers of kafkawire.protocol.primitives, and no look-up of the schema at run time.
Versions whose code would be identical share one function.
"""
from __future__ import annotations

import hashlib
import uuid as uuid_module

from .emit_decode import DecoderEmitter
from .emit_encode import EncoderEmitter
from .emit_native import NativeProgramEmitter
from .emit_support import (ARRAY_NAMES, GENERATED_MARKER, Writer, annotation, lazy_default, module_name,
                           range_literal, slot_name)
from .model import FieldSpec, MessageSpec, StructSpec
from .versions import OPEN_END

__all__ = ["GENERATED_MARKER", "ModuleEmitter", "module_name"]


class ModuleEmitter(DecoderEmitter, EncoderEmitter, NativeProgramEmitter):
    def __init__(self, spec: MessageSpec, source_name: str, source_text: bytes):
        self.spec = spec
        self.source_name = source_name
        self.digest = hashlib.sha256(source_text).hexdigest()
        self.structs_formats: dict[str, str] = {}     # struct format -> module constant name
        self.constants: dict[str, str] = {}            # repr of a default -> constant name
        self.canonical: dict[tuple[str, str, int], str] = {}   # (kind, struct, version) -> function name
        self.bodies: dict[tuple[str, str], str] = {}   # (kind, body text) -> function name
        self.views: dict[str, bool] = {}               # struct name -> needs_view

    # --- naming helpers ---------------------------------------------------------------------
    def array_table(self, code: str) -> str:
        key = f"array_structs({code!r})"
        if key not in self.constants:
            self.constants[key] = f"_ARRAY_{ARRAY_NAMES[code]}"
        return self.constants[key]

    def struct_constant(self, fmt: str) -> str:
        name = self.structs_formats.get(fmt)
        if name is None:
            name = f"_S{len(self.structs_formats)}"
            self.structs_formats[fmt] = name
        return name

    def decode_default_expr(self, field: FieldSpec) -> str:
        """The default a decoder stores (in slot_name(field)) for a field the bytes lack: as
        default_expr, but a struct comes from its keyword-free factory, which the hot path can
        afford, and a lazy default is left to be made on first read."""
        if lazy_default(field):
            return "_MISSING"
        if field.type.kind == "struct" and field.default is not None:
            return f"_fresh_{field.struct.name}()"
        return self.default_expr(field)

    def default_expr(self, field: FieldSpec) -> str:
        """A Python expression for the field's default (fresh for mutable defaults)."""
        kind = field.type.kind
        value = field.default
        if value is None:
            return "None"
        if kind == "array":
            return "[]"
        if kind == "struct":
            return f"{field.struct.name}()"
        if kind == "uuid":
            if value.int == 0:
                return "_ZERO_UUID"
            key = f"_UUID({str(value)!r})"
            if key not in self.constants:
                self.constants[key] = f"_UUID_{len(self.constants)}"
            return self.constants[key]
        if kind == "float64":
            return repr(float(value))
        return repr(value)

    def default_compare(self, field: FieldSpec, expr: str) -> str:
        """A condition that is true when `expr` (the field's slot) differs from the field's default."""
        if lazy_default(field):
            # Never read yet is the default; once read, it may have been changed in place.
            return f"{expr} is not _MISSING and ({self._differs(field, expr)})"
        return self._differs(field, expr)

    def _differs(self, field: FieldSpec, expr: str) -> str:
        kind = field.type.kind
        if field.default is None:
            return f"{expr} is not None"
        if kind == "array":
            return f"{expr} is None or len({expr}) != 0"
        if kind == "struct":
            inner = field.struct.fields
            if all(f.type.kind not in ("array", "struct") for f in inner):
                # Compared field by field: Struct.__eq__ would cost a call and a loop on every encode.
                parts = [f"{expr}.{f.py_name} != {self.default_expr(f)}" for f in inner]
                parts.append(f"{expr}._unknown_tagged_fields")
                return f"{expr} is None or " + " or ".join(parts)
            return f"{expr} != _DEFAULT_{field.struct.name}"
        return f"{expr} != {self.default_expr(field)}"

    # --- the module -------------------------------------------------------------------------
    def emit(self) -> str:
        spec = self.spec
        ordered = self._structs_in_order()
        w = Writer()
        w.add(GENERATED_MARKER)
        w.add(f"# From {self.source_name} (sha256 {self.digest}):")
        w.add("# change the schema and run `kafkawire codegen`.")
        w.add(f'"""{spec.name}: {self._summary()}."""')
        w.add("from __future__ import annotations")
        w.add("")
        w.add("from struct import Struct as _Struct")
        w.add("from uuid import UUID as _UUID")
        w.add("")
        w.add("from kafkawire.protocol import message as _message, native_codec as _native_codec")
        w.add("from kafkawire.protocol.message import Field as _Field, MISSING as _MISSING")
        w.add("from kafkawire.protocol.primitives import *  # noqa: F403 - the readers and writers named in __all__")
        w.add("from kafkawire.protocol.primitives import ZERO_UUID as _ZERO_UUID")
        w.add("")
        w.add("_new = object.__new__")
        body = Writer()
        for struct in ordered:
            self._emit_class(body, struct)
        body.add("")
        for struct in ordered:
            body.add("")
            body.add(f"{struct.name}._FIELDS = (")
            for row in self.field_table(struct):
                body.add(row)
            body.add(")")
        for struct in ordered:
            body.add("")
            body.add("")
            body.add(f"def _fresh_{struct.name}():")
            body.add(f"    self = _new({struct.name})")
            for f in struct.fields:
                body.add(f"    self.{slot_name(f)} = {self.decode_default_expr(f)}")
            body.add("    self._unknown_tagged_fields = ()")
            body.add("    return self")
        body.add("")
        for struct in ordered:
            body.add(f"_DEFAULT_{struct.name} = {struct.name}()")
        functions = Writer()
        for struct in ordered:
            for version in self._versions_of(struct):
                self._emit_decoder(functions, struct, version)
                self._emit_encoder(functions, struct, version)
        tables = Writer()
        tables.add("")
        for struct in ordered:
            versions = self._versions_of(struct)
            decoders = ", ".join(f"{v}: {self.canonical[('decode', struct.name, v)]}" for v in versions)
            encoders = ", ".join(f"{v}: {self.canonical[('encode', struct.name, v)]}" for v in versions)
            tables.add(f"{struct.name}._DECODERS = {{{decoders}}}")
            tables.add(f"{struct.name}._ENCODERS = {{{encoders}}}")
        # Constants go between the imports and the classes; their line count shifts the rest.
        consts = Writer()
        consts.add("")
        for fmt, name in self.structs_formats.items():
            consts.add(f"{name} = _Struct({fmt!r})")
        for expr, name in self.constants.items():
            consts.add(f"{name} = {expr}")
        out_lines = w.lines + consts.lines
        table: dict[int, object] = {}
        for part in (body, functions, tables):
            offset = len(out_lines)
            for line_no, field_name in part.line_fields.items():
                table[line_no + offset] = field_name
            out_lines += part.lines
        out_lines.append("")
        out_lines.append("# Which field each decoding or encoding line handles, for error messages.")
        out_lines.append("_LINE_FIELDS = {")
        for line_no, field_name in sorted(table.items()):
            out_lines.append(f"    {line_no}: {field_name!r},")
        out_lines.append("}")
        out_lines += self.native_programs(ordered).lines
        return "\n".join(out_lines) + "\n"

    def _summary(self) -> str:
        spec = self.spec
        parts = []
        if spec.api_key is not None:
            parts.append(f"apiKey {spec.api_key}")
        parts.append(spec.type)
        parts.append(f"versions {spec.valid_versions}")
        parts.append(f"flexible {spec.flexible_versions}")
        return ", ".join(parts)

    def _structs_in_order(self) -> list[StructSpec]:
        """Every struct, children before parents, the message itself last."""
        seen: dict[str, StructSpec] = {}

        def visit(struct: StructSpec):
            if struct.name in seen:
                return
            for f in struct.fields:
                if f.struct is not None:
                    visit(f.struct)
            seen[struct.name] = struct

        for common in self.spec.common_structs.values():
            visit(common)
        visit(self.spec.struct)
        return list(seen.values())

    def _versions_of(self, struct: StructSpec) -> list[int]:
        """The message versions in which this struct can appear."""
        valid = self.spec.valid_versions
        if valid.empty:
            return []
        if struct is self.spec.struct:
            return list(valid)
        usable = set()

        def walk(s: StructSpec, versions: set[int], path: tuple):
            if s.name in path:
                return
            for f in s.fields:
                if f.struct is None:
                    continue
                here = {v for v in versions if f.present_in(v)}
                if f.struct is struct:
                    usable.update(here)
                walk(f.struct, here, path + (s.name,))

        walk(self.spec.struct, set(valid), ())
        return sorted(usable)

    # --- classes ----------------------------------------------------------------------------
    def _emit_class(self, w: Writer, struct: StructSpec) -> None:
        spec = self.spec
        is_message = struct is spec.struct
        base = "_message.Message" if is_message else "_message.Struct"
        w.add("")
        w.add("")
        w.add(f"class {struct.name}({base}):")
        if is_message:
            w.add(f'    """{spec.name} ({self._summary()})."""')
        else:
            w.add(f'    """A {struct.name} of {spec.name}."""')
        slots = ", ".join(repr(slot_name(f)) for f in struct.fields)
        w.add(f"    __slots__ = ({slots}{', ' if slots else ''}'_unknown_tagged_fields')")
        if is_message:
            w.add(f"    NAME = {spec.name!r}")
            w.add(f"    TYPE = {spec.type!r}")
            w.add(f"    API_KEY = {spec.api_key!r}")
            w.add(f"    VALID_VERSIONS = {range_literal(spec.valid_versions)}")
            w.add(f"    FLEXIBLE_VERSIONS = {range_literal(spec.flexible_versions)}")
            w.add(f"    LATEST_VERSION_UNSTABLE = {spec.latest_version_unstable!r}")
            w.add(f"    SCHEMA = {self.source_name!r}")
            if any(f.type.kind in ("bytes", "records") or (f.type.element and f.type.element.kind in ("bytes", "records"))
                   for s in spec.structs.values() for f in s.fields):
                w.add("    _HAS_BYTES = True")
        else:
            w.add(f"    NAME = {struct.name!r}")
            w.add(f"    MESSAGE = {spec.name!r}")
            w.add(f"    FLEXIBLE_VERSIONS = {range_literal(spec.flexible_versions)}")
        w.add("")
        if struct.fields:
            params = []
            for f in struct.fields:
                mutable = f.default is not None and f.type.kind in ("array", "struct")
                default = "_MISSING" if mutable else self.default_expr(f)
                params.append(f"{f.py_name}: {annotation(f)} = {default}")
            w.add("    def __init__(self, *, " + ", ".join(params) + ") -> None:")
            for f in struct.fields:
                mutable = f.default is not None and f.type.kind in ("array", "struct")
                if lazy_default(f):
                    w.add(f"        self.{slot_name(f)} = {f.py_name}")
                elif mutable:
                    w.add(f"        self.{f.py_name} = {self.default_expr(f)} if {f.py_name} is _MISSING else {f.py_name}")
                else:
                    w.add(f"        self.{f.py_name} = {f.py_name}")
        else:
            w.add("    def __init__(self) -> None:")
        w.add("        self._unknown_tagged_fields = ()")
        for f in struct.fields:
            if lazy_default(f):
                slot = slot_name(f)
                w.add("")
                w.add("    @property")
                w.add(f"    def {f.py_name}(self):")
                w.add(f"        # _MISSING until first read, then this instance's own {f.struct.name}.")
                w.add(f"        value = self.{slot}")
                w.add("        if value is _MISSING:")
                w.add(f"            value = self.{slot} = {self.default_expr(f)}")
                w.add("        return value")
                w.add("")
                w.add(f"    @{f.py_name}.setter")
                w.add(f"    def {f.py_name}(self, value):")
                w.add(f"        self.{slot} = value")

    def field_table(self, struct: StructSpec) -> list[str]:
        rows = []
        for f in struct.fields:
            element = f.type.element.kind if f.type.kind == "array" else None
            rows.append(
                f"    _Field({f.name!r}, {f.py_name!r}, {f.json_name!r}, {f.type.kind!r}, {element!r}, "
                f"{f.struct.name if f.struct else None}, {range_literal(f.versions)}, "
                f"{range_literal(f.nullable_versions)}, {range_literal(f.tagged_versions)}, {f.tag!r}, "
                f"{self._table_default(f)}, "
                f"{f.ignorable!r}, {range_literal(f.flexible_versions) if f.flexible_versions else 'None'}),")
        return rows

    def _table_default(self, f: FieldSpec) -> str:
        if f.default is None or f.type.kind not in ("array", "struct"):
            return self.default_expr(f)
        return "()" if f.type.kind == "array" else "_MISSING"

    def _field_flexible(self, f: FieldSpec, version: int) -> bool:
        override = f.flexible_versions
        return version in (override if override is not None else self.spec.flexible_versions)

    # --- functions, shared between versions whose code is the same ------------------------------
    def _add_function(self, out: Writer, kind: str, struct: StructSpec, version: int,
                      params: str, lines: list[tuple[str, str | None]]) -> str:
        key_text = params + "\n" + "\n".join(text for text, _ in lines)
        existing = self.bodies.get((kind + struct.name, key_text))
        if existing is not None:
            self.canonical[(kind, struct.name, version)] = existing
            return existing
        name = f"_{kind}_{struct.name}_v{version}"
        self.bodies[(kind + struct.name, key_text)] = name
        self.canonical[(kind, struct.name, version)] = name
        out.add("")
        out.add("")
        out.add(f"def {name}{params}:")
        for text, field_name in lines:
            out.add("    " + text, field_name)
        return name
