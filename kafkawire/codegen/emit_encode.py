"""The encoders of a generated message module: one function per struct and version, the
mirror of emit_decode.

A mixin of ModuleEmitter (kafkawire/codegen/emit.py), like DecoderEmitter."""
from __future__ import annotations

from .emit_support import Writer, run_label, slot_name
from .model import FIXED_FORMATS, FieldSpec, StructSpec


class EncoderEmitter:
    def _emit_encoder(self, out: Writer, struct: StructSpec, version: int) -> None:
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
            lines.append((f"buf += {const}.pack({args})", run_label(run)))
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
                null_marker = "0" if f.tagged and version in f.tagged_versions else "0xFF"   # see _decode_value
                return [(f"if {value} is None:", None),
                        (f"    {buf}.append({null_marker})", None),
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
