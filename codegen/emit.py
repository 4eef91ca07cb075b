"""Python source for one message schema.

What comes out, per struct and per version, is straight-line code: runs of fixed-width fields
packed and unpacked with one precompiled struct.Struct, variable-width fields through the small
readers and writers of kafkawire.protocol.primitives, and no look-up of the schema at run time.
Versions whose code would be identical share one function.
"""
from __future__ import annotations

import hashlib
import uuid as uuid_module

from .model import FIXED_FORMATS, FieldSpec, MessageSpec, StructSpec, snake_case
from .versions import OPEN_END, Versions

_ARRAY_NAMES = {"?": "BOOL", "b": "INT8", "h": "INT16", "H": "UINT16", "i": "INT32", "I": "UINT32",
                "q": "INT64", "d": "FLOAT64"}
_FIXED_SIZES = {"?": 1, "b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "d": 8}


def module_name(spec: MessageSpec) -> str:
    return snake_case(spec.name)


def _run_label(run: list[FieldSpec]):
    """How the error locator learns the fields of a packed run: (name, attribute, format) each."""
    if len(run) == 1:
        return run[0].name
    return tuple((f.name, f.py_name, FIXED_FORMATS[f.type.kind]) for f in run)


def _range_literal(v: Versions) -> str:
    return "None" if v.empty else f"({v.lowest}, {v.highest})"


def _packable(f: FieldSpec) -> bool:
    """Whether a field joins a run of fixed-width fields read or written with one struct.Struct."""
    return f.type.kind in FIXED_FORMATS and f.type.kind != "uuid"


def lazy_default(f: FieldSpec) -> bool:
    """A tagged struct whose default is an instance: absent from nearly every message, so the
    instance is made when the field is first read (a property over a private slot), not per decode."""
    return f.type.kind == "struct" and f.default is not None and f.tagged


def slot_name(f: FieldSpec) -> str:
    """The slot a field's value lives in: its own name, or a private one behind a lazy default."""
    return f"_{f.py_name}" if lazy_default(f) else f.py_name


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.line_fields: dict[int, object] = {}

    def add(self, text: str = "", field=None) -> None:
        self.lines.append(text)
        if field is not None:
            self.line_fields[len(self.lines)] = field


class ModuleEmitter:
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
            self.constants[key] = f"_ARRAY_{_ARRAY_NAMES[code]}"
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
        w = _Writer()
        w.add(f"# Generated by kafkawire codegen from {self.source_name}")
        w.add(f"# (sha256 {self.digest}).")
        w.add("# Do not edit: change the schema and run `kafkawire codegen`.")
        w.add(f'"""{spec.name}: {self._summary()}."""')
        w.add("from struct import Struct as _Struct")
        w.add("from uuid import UUID as _UUID")
        w.add("")
        w.add("from kafkawire.protocol import message as _message")
        w.add("from kafkawire.protocol.message import Field as _Field, MISSING as _MISSING")
        w.add("from kafkawire.protocol.primitives import *  # noqa: F403 - the readers and writers named in __all__")
        w.add("from kafkawire.protocol.primitives import ZERO_UUID as _ZERO_UUID")
        w.add("")
        w.add("_new = object.__new__")
        body = _Writer()
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
        functions = _Writer()
        for struct in ordered:
            for version in self._versions_of(struct):
                self._emit_decoder(functions, struct, version)
                self._emit_encoder(functions, struct, version)
        tables = _Writer()
        tables.add("")
        for struct in ordered:
            versions = self._versions_of(struct)
            decoders = ", ".join(f"{v}: {self.canonical[('decode', struct.name, v)]}" for v in versions)
            encoders = ", ".join(f"{v}: {self.canonical[('encode', struct.name, v)]}" for v in versions)
            tables.add(f"{struct.name}._DECODERS = {{{decoders}}}")
            tables.add(f"{struct.name}._ENCODERS = {{{encoders}}}")
        # Constants go between the imports and the classes; their line count shifts the rest.
        consts = _Writer()
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
    def _emit_class(self, w: _Writer, struct: StructSpec) -> None:
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
            w.add(f"    VALID_VERSIONS = {_range_literal(spec.valid_versions)}")
            w.add(f"    FLEXIBLE_VERSIONS = {_range_literal(spec.flexible_versions)}")
            w.add(f"    LATEST_VERSION_UNSTABLE = {spec.latest_version_unstable!r}")
            w.add(f"    SCHEMA = {self.source_name!r}")
            if any(f.type.kind in ("bytes", "records") or (f.type.element and f.type.element.kind in ("bytes", "records"))
                   for s in spec.structs.values() for f in s.fields):
                w.add("    _HAS_BYTES = True")
        else:
            w.add(f"    NAME = {struct.name!r}")
            w.add(f"    MESSAGE = {spec.name!r}")
            w.add(f"    FLEXIBLE_VERSIONS = {_range_literal(spec.flexible_versions)}")
        w.add("")
        if struct.fields:
            params = []
            for f in struct.fields:
                mutable = f.default is not None and f.type.kind in ("array", "struct")
                params.append(f"{f.py_name}={'_MISSING' if mutable else self.default_expr(f)}")
            w.add("    def __init__(self, *, " + ", ".join(params) + "):")
            for f in struct.fields:
                mutable = f.default is not None and f.type.kind in ("array", "struct")
                if lazy_default(f):
                    w.add(f"        self.{slot_name(f)} = {f.py_name}")
                elif mutable:
                    w.add(f"        self.{f.py_name} = {self.default_expr(f)} if {f.py_name} is _MISSING else {f.py_name}")
                else:
                    w.add(f"        self.{f.py_name} = {f.py_name}")
        else:
            w.add("    def __init__(self):")
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
                f"{f.struct.name if f.struct else None}, {_range_literal(f.versions)}, "
                f"{_range_literal(f.nullable_versions)}, {_range_literal(f.tagged_versions)}, {f.tag!r}, "
                f"{self._table_default(f)}, "
                f"{f.ignorable!r}, {_range_literal(f.flexible_versions) if f.flexible_versions else 'None'}),")
        return rows

    def _table_default(self, f: FieldSpec) -> str:
        if f.default is None or f.type.kind not in ("array", "struct"):
            return self.default_expr(f)
        return "()" if f.type.kind == "array" else "_MISSING"

    # --- decoding ---------------------------------------------------------------------------
    def _field_flexible(self, f: FieldSpec, version: int) -> bool:
        override = f.flexible_versions
        return version in (override if override is not None else self.spec.flexible_versions)

    def _emit_decoder(self, out: _Writer, struct: StructSpec, version: int) -> None:
        lines: list[tuple[str, str | None]] = []
        flexible = self.spec.flexible(version)
        present = struct.fields_in(version)
        tagged = struct.tagged_fields_in(version) if flexible else []
        run: list[FieldSpec] = []

        def flush():
            if not run:
                return
            fmt = ">" + "".join(FIXED_FORMATS[f.type.kind] for f in run)
            size = sum(_FIXED_SIZES[FIXED_FORMATS[f.type.kind]] for f in run)
            const = self.struct_constant(fmt)
            targets = ", ".join(f"self.{f.py_name}" for f in run)
            lines.append((f"{targets}{',' if len(run) == 1 else ''} = {const}.unpack_from(data, pos)", _run_label(run)))
            lines.append((f"pos += {size}", None))
            run.clear()

        ordered = [f for f in struct.fields if f in present]
        i = 0
        while i < len(ordered):
            f = ordered[i]
            i += 1
            if _packable(f):
                run.append(f)
                continue
            after = []
            while i < len(ordered) and _packable(ordered[i]):
                after.append(ordered[i])
                i += 1
            if f.type.kind == "array" and after:
                lines += self._decode_array_in_run(f, version, list(run), after)
                run.clear()
                continue
            flush()
            lines += self._decode_value(f, version, f"self.{slot_name(f)}", "    ")
            run.extend(after)
        flush()
        for f in struct.fields:
            if f not in present:
                lines.append((f"self.{slot_name(f)} = {self.decode_default_expr(f)}", None))
        if flexible:
            if tagged:
                tag_fn = self._emit_tag_decoder(out, struct, version, tagged)
                view = ", view" if self.needs_view(struct) else ""
                lines.append(("if data[pos]:", f"tagged fields of {struct.name}"))
                lines.append((f"    pos = {tag_fn}(self, data, pos{view})", f"tagged fields of {struct.name}"))
                lines.append(("else:", None))
                lines.append(("    self._unknown_tagged_fields = ()", None))
                lines.append(("    pos += 1", None))
            else:
                lines.append(("if data[pos]:", f"tagged fields of {struct.name}"))
                lines.append(("    self._unknown_tagged_fields, pos = read_unknown_tags(data, pos)", f"tagged fields of {struct.name}"))
                lines.append(("else:", None))
                lines.append(("    self._unknown_tagged_fields = ()", None))
                lines.append(("    pos += 1", None))
        else:
            lines.append(("self._unknown_tagged_fields = ()", None))
        lines.append(("return self, pos", None))
        header = [(f"self = _new({struct.name})", None)]
        params = "(data, pos)"
        if self.needs_view(struct):
            if struct is self.spec.struct:
                # One view of the whole input, made once: each records field is a slice of it.
                header.insert(0, ("view = memoryview(data)", None))
            else:
                params = "(data, pos, view)"
        self._add_function(out, "decode", struct, version, params, header + lines)

    def _decode_array_in_run(self, f: FieldSpec, version: int, before: list[FieldSpec],
                             after: list[FieldSpec]) -> list[tuple[str, str | None]]:
        """An array between two runs of fixed-width fields, read as one run when it is empty or null.

        One unpack takes the fields before the array, the first byte (compact) or int32 (classic)
        of its length, and the fields after it. That is the whole array when it is empty or null,
        as arrays of aborted transactions or offline replicas usually are; otherwise the array and
        the fields after it are read again from the length on. The speculative unpack cannot run
        past valid data: whatever the array holds, the fields after it follow it.
        """
        flexible = self._field_flexible(f, version)
        nullable = f.nullable_in(version)
        code, empty, null = ("B", 1, 0) if flexible else ("i", 0, -1)
        codes = [FIXED_FORMATS[x.type.kind] for x in before] + [code] + [FIXED_FORMATS[x.type.kind] for x in after]
        const = self.struct_constant(">" + "".join(codes))
        size_before = sum(_FIXED_SIZES[FIXED_FORMATS[x.type.kind]] for x in before)
        size_after = sum(_FIXED_SIZES[FIXED_FORMATS[x.type.kind]] for x in after)
        total = size_before + _FIXED_SIZES[code] + size_after
        target = f"self.{slot_name(f)}"
        label = (tuple((x.name, x.py_name, FIXED_FORMATS[x.type.kind]) for x in before) + ((f.name, None, code),)
                 + tuple((x.name, x.py_name, FIXED_FORMATS[x.type.kind]) for x in after))
        targets = [f"self.{x.py_name}" for x in before] + ["n"] + [f"self.{x.py_name}" for x in after]
        lines = [(f"{', '.join(targets)} = {const}.unpack_from(data, pos)", label),
                 (f"if n == {empty}:", None),
                 (f"    # {f.name} is empty: the fields after it came with the same unpack.", None),
                 (f"    {target} = []", None),
                 (f"    pos += {total}", None)]
        if nullable:
            lines += [(f"elif n == {null}:", None),
                      (f"    {target} = None", None),
                      (f"    pos += {total}", None)]
        lines.append(("else:", None))
        if size_before:
            lines.append((f"    pos += {size_before}", None))
        for text, field_name in self._decode_value(f, version, target, "    "):
            lines.append(("    " + text, field_name))
        after_const = self.struct_constant(">" + "".join(FIXED_FORMATS[x.type.kind] for x in after))
        after_targets = ", ".join(f"self.{x.py_name}" for x in after)
        lines.append((f"    {after_targets}{',' if len(after) == 1 else ''} = {after_const}.unpack_from(data, pos)",
                      _run_label(after)))
        lines.append((f"    pos += {size_after}", None))
        return lines

    def needs_view(self, struct: StructSpec) -> bool:
        """Whether decoding the struct slices records (or zeroCopy bytes) out of the input,
        itself or in a struct below it: its decoders then take the input's memoryview."""
        known = self.views
        if struct.name not in known:
            known[struct.name] = False      # a struct that contains itself adds nothing
            known[struct.name] = any(
                f.type.kind == "records" or f.zero_copy
                or (f.type.struct_name is not None and self.needs_view(self.spec.structs[f.type.struct_name]))
                for f in struct.fields)
        return known[struct.name]

    def _decode_value(self, f: FieldSpec, version: int, target: str, indent: str) -> list[tuple[str, str | None]]:
        """Lines that read one field's value at `pos` into `target`."""
        kind = f.type.kind
        flexible = self._field_flexible(f, version)
        nullable = f.nullable_in(version)
        name = f.name
        if kind in FIXED_FORMATS:
            if kind == "uuid":
                return [(f"{target}, pos = read_uuid(data, pos)", name)]
            fmt = ">" + FIXED_FORMATS[kind]
            const = self.struct_constant(fmt)
            return [(f"{target}, = {const}.unpack_from(data, pos)", name),
                    (f"pos += {_FIXED_SIZES[FIXED_FORMATS[kind]]}", None)]
        if kind == "records" and flexible:
            return self._decode_compact_records(f, nullable, target)
        if kind in ("string", "bytes", "records"):
            base = "string" if kind == "string" else "bytes"
            reader = ("compact_" if flexible else "") + ("nullable_" if nullable else "") + base
            # Records (and zeroCopy bytes) are slices of the input's memoryview, not copies, as
            # Kafka's Java reader wraps a slice of its buffer.
            source = "view" if kind == "records" or f.zero_copy else "data"
            return [(f"{target}, pos = read_{reader}({source}, pos)", name)]
        if kind == "struct":
            if nullable:
                return [("if data[pos] >= 128:", name),
                        (f"    {target} = None", None),
                        ("    pos += 1", None),
                        ("else:", None),
                        (f"    {target}, pos = {self._struct_decode_call(f.struct, version, 'pos + 1')}", name)]
            return [(f"{target}, pos = {self._struct_decode_call(f.struct, version)}", name)]
        # arrays
        reader = ("compact_" if flexible else "") + ("nullable_" if nullable else "") + "array_length"
        if flexible:
            # Most arrays are short: a one-byte length is read inline; the rest go through the checked reader.
            lowest = -1 if nullable else 0
            lines = [("n = data[pos] - 1", name),
                     (f"if {lowest} <= n < 0x7F:", None),
                     ("    pos += 1", None),
                     ("else:", None),
                     (f"    n, pos = read_{reader}(data, pos)", name)]
        else:
            lines = [(f"n, pos = read_{reader}(data, pos)", name)]
        # Empty arrays are the usual case for many fields (aborted transactions, offline replicas):
        # they cost one comparison and a new list.
        lines.append(("if n == 0:", None))
        lines.append((f"    {target} = []", None))
        lines.append(("elif n > 0:" if nullable else "else:", None))
        element = f.type.element
        ek = element.kind
        if ek in FIXED_FORMATS and ek != "uuid":
            code = FIXED_FORMATS[ek]
            table = self.array_table(code)
            # n is at most the bytes left, so the Struct is bounded; unpack_from checks the end itself.
            lines.append((f"    {target} = list(({table}[n] if n < 64 else array_struct({code!r}, n)).unpack_from(data, pos))", name))
            lines.append((f"    pos += {_FIXED_SIZES[code]} * n", None))
        else:
            if ek == "uuid":
                item_read = "item, pos = read_uuid(data, pos)"
            elif ek in ("string", "bytes", "records"):
                base = "string" if ek == "string" else "bytes"
                item_read = f"item, pos = read_{'compact_' if flexible else ''}{base}(data, pos)"
            else:
                item_read = f"item, pos = {self._struct_decode_call(element, version)}"
            lines.append(("    items = []", None))
            lines.append(("    append = items.append", None))
            lines.append(("    for _ in range(n):", None))
            lines.append((f"        {item_read}", name))
            lines.append(("        append(item)", None))
            lines.append((f"    {target} = items", None))
        if nullable:
            lines.append(("else:", None))
            lines.append((f"    {target} = None", None))
        return lines

    def _decode_compact_records(self, f: FieldSpec, nullable: bool, target: str) -> list[tuple[str, str | None]]:
        """Records with a compact length, read inline: they are read once per partition of every
        fetch response and produce request, and their length (128 B to 16 KB) takes two bytes."""
        name = f.name
        lines = [("n = data[pos]", name),
                 ("if n < 0x80:", None),
                 ("    pos += 1", None),
                 ("elif data[pos + 1] < 0x80:", name),
                 ("    n = (n & 0x7F) | (data[pos + 1] << 7)", None),
                 ("    pos += 2", None),
                 ("else:", None),
                 ("    n, pos = read_uvarint(data, pos)", name),
                 ("if n:", None),
                 ("    end = pos + n - 1", None),
                 ("    if end > len(data):", None),
                 ("        raise Malformed(f'compact bytes of length {n - 1} at byte {pos} runs past the end "
                  "of the data ({len(data) - pos} bytes left)')", name),
                 (f"    {target} = view[pos:end]", None),
                 ("    pos = end", None),
                 ("else:", None)]
        if nullable:
            lines.append((f"    {target} = None", None))
        else:
            lines.append(("    raise Malformed('compact bytes are null, which is not allowed here')", name))
        return lines

    def _struct_decode_call(self, struct, version: int, pos: str = "pos") -> str:
        """The call that decodes a struct (a StructSpec, or the element type of an array) at `pos`."""
        struct = self.spec.structs[struct.name]
        view = ", view" if self.needs_view(struct) else ""
        return f"{self.canonical[('decode', struct.name, version)]}(data, {pos}{view})"

    def _emit_tag_decoder(self, out: _Writer, struct: StructSpec, version: int, tagged: list[FieldSpec]) -> str:
        lines: list[tuple[str, str | None]] = [
            ("n, pos = read_uvarint(data, pos)", f"tagged fields of {struct.name}"),
            ("if n > len(data) - pos:", None),
            ("    raise Malformed(f'{n} tagged fields cannot fit in the {len(data) - pos} bytes left')", None),
            ("unknown = None", None),
            ("last = -1", None),
            ("for _ in range(n):", None),
            ("    tag, pos, end = read_tag_header(data, pos, last)", f"tagged fields of {struct.name}"),
            ("    last = tag", None),
        ]
        keyword = "if"
        for f in tagged:
            lines.append((f"    {keyword} tag == {f.tag}:", None))
            for text, field_name in self._decode_value(f, version, f"self.{slot_name(f)}", "        "):
                lines.append(("        " + text, field_name))
            lines.append(("        if pos != end:", None))
            lines.append((f"            raise Malformed(f'tagged field {f.name} (tag {f.tag}) ends at byte {{end}} "
                          f"but its value ended at byte {{pos}}')", f.name))
            keyword = "elif"
        lines.append(("    else:", None))
        lines.append(("        if unknown is None:", None))
        lines.append(("            unknown = []", None))
        lines.append(("        unknown.append((tag, data[pos:end]))", None))
        lines.append(("        pos = end", None))
        lines.append(("self._unknown_tagged_fields = () if unknown is None else unknown", None))
        lines.append(("return pos", None))
        params = "(self, data, pos, view)" if self.needs_view(struct) else "(self, data, pos)"
        return self._add_function(out, "decode_tags", struct, version, params, lines)

    # --- encoding ---------------------------------------------------------------------------
    def _emit_encoder(self, out: _Writer, struct: StructSpec, version: int) -> None:
        lines: list[tuple[str, str | None]] = []
        flexible = self.spec.flexible(version)
        present = struct.fields_in(version)
        tagged = struct.tagged_fields_in(version) if flexible else []
        run: list[FieldSpec] = []
        checks: list[tuple[str, str | None]] = []

        def flush():
            if not run:
                return
            fmt = ">" + "".join(FIXED_FORMATS[f.type.kind] for f in run)
            const = self.struct_constant(fmt)
            args = ", ".join(f"self.{f.py_name}" for f in run)
            lines.append((f"buf += {const}.pack({args})", _run_label(run)))
            run.clear()

        for f in struct.fields:
            if f in present:
                if f.type.kind in FIXED_FORMATS and f.type.kind != "uuid":
                    run.append(f)
                    continue
                flush()
                lines += self._encode_value(f, version, f"self.{f.py_name}", "buf")
            elif f not in tagged and not f.ignorable:
                # Kafka refuses to drop information silently: a field the version cannot carry must be at its default.
                checks.append((f"if {self.default_compare(f, 'self.' + slot_name(f))}:", f.name))
                checks.append((f"    raise unsupported_field({self.spec.name!r}, {f.name!r}, {version})", f.name))
        flush()
        lines[:0] = checks
        if flexible:
            if tagged:
                lines.append(("known = []", None))
                for f in tagged:
                    lines.append((f"if {self.default_compare(f, 'self.' + slot_name(f))}:", f.name))
                    lines.append(("    tag_buf = bytearray()", None))
                    for text, field_name in self._encode_value(f, version, f"self.{slot_name(f)}", "tag_buf"):
                        lines.append(("    " + text, field_name))
                    lines.append((f"    known.append(({f.tag}, tag_buf))", None))
                lines.append(("if known or self._unknown_tagged_fields:", None))
                lines.append(("    write_tags(buf, known, self._unknown_tagged_fields)", f"tagged fields of {struct.name}"))
                lines.append(("else:", None))
                lines.append(("    buf.append(0)", None))
            else:
                lines.append(("if self._unknown_tagged_fields:", None))
                lines.append(("    write_tags(buf, (), self._unknown_tagged_fields)", f"tagged fields of {struct.name}"))
                lines.append(("else:", None))
                lines.append(("    buf.append(0)", None))
        else:
            lines.append(("if self._unknown_tagged_fields:", None))
            lines.append((f"    raise unsupported_tags({self.spec.name!r}, {struct.name!r}, {version})", f"tagged fields of {struct.name}"))
        self._add_function(out, "encode", struct, version, "(self, buf)", lines)

    def _encode_value(self, f: FieldSpec, version: int, value: str, buf: str) -> list[tuple[str, str | None]]:
        kind = f.type.kind
        flexible = self._field_flexible(f, version)
        nullable = f.nullable_in(version)
        name = f.name
        if kind in FIXED_FORMATS:
            if kind == "uuid":
                return [(f"write_uuid({buf}, {value})", name)]
            const = self.struct_constant(">" + FIXED_FORMATS[kind])
            return [(f"{buf} += {const}.pack({value})", name)]
        if kind in ("string", "bytes", "records"):
            base = "string" if kind == "string" else "bytes"
            writer = ("compact_" if flexible else "") + ("nullable_" if nullable else "") + base
            return [(f"write_{writer}({buf}, {value})", name)]
        if kind == "struct":
            fn = self.canonical[("encode", f.struct.name, version)]
            if nullable:
                return [(f"if {value} is None:", None),
                        (f"    {buf}.append(0xFF)", None),
                        ("else:", None),
                        (f"    {buf}.append(1)", None),
                        (f"    {fn}({value}, {buf})", name)]
            return [(f"{fn}({value}, {buf})", name)]
        writer = ("compact_" if flexible else "") + ("nullable_" if nullable else "") + "array_length"
        lines = [(f"items = {value}", None)]
        inner = ""
        if flexible and not nullable:
            lines += [("if len(items) < 0x7F:", name),
                      (f"    {buf}.append(len(items) + 1)", None),
                      ("else:", None),
                      (f"    write_{writer}({buf}, items)", name)]
        else:
            lines.append((f"write_{writer}({buf}, items)", name))
        if nullable:
            lines.append(("if items is not None:", None))
            inner = "    "
        ek = f.type.element.kind
        if ek in FIXED_FORMATS and ek != "uuid":
            code = FIXED_FORMATS[ek]
            table = self.array_table(code)
            lines.append((f"{inner}if items:", None))
            lines.append((f"{inner}    {buf} += ({table}[len(items)] if len(items) < 64 else array_struct({code!r}, len(items))).pack(*items)", name))
        elif ek == "uuid":
            lines.append((f"{inner}write_uuid_array({buf}, items)", name))
        elif ek in ("string", "bytes", "records"):
            base = "string" if ek == "string" else "bytes"
            lines.append((f"{inner}for item in items:", None))
            lines.append((f"{inner}    write_{'compact_' if flexible else ''}{base}({buf}, item)", name))
        else:
            fn = self.canonical[("encode", f.type.element.name, version)]
            lines.append((f"{inner}for item in items:", None))
            lines.append((f"{inner}    {fn}(item, {buf})", name))
        return lines

    # --- functions, shared between versions whose code is the same ------------------------------
    def _add_function(self, out: _Writer, kind: str, struct: StructSpec, version: int,
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
