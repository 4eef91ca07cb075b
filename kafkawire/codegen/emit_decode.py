"""The decoders of a generated message module: one function per struct and version, fixed-width
runs read with one precompiled struct.Struct, the rest through kafkawire.protocol.primitives.

A mixin of ModuleEmitter (kafkawire/codegen/emit.py), which holds the module-wide state
(struct constants, array tables, shared function bodies) these methods use."""
from __future__ import annotations

from .emit_support import FIXED_SIZES, Writer, packable, run_label, slot_name
from .model import FIXED_FORMATS, FieldSpec, StructSpec


class DecoderEmitter:
    def _emit_decoder(self, out: Writer, struct: StructSpec, version: int) -> None:
        lines: list[tuple[str, str | None]] = []
        flexible = self.spec.flexible(version)
        present = struct.fields_in(version)
        tagged = struct.tagged_fields_in(version) if flexible else []
        run: list[FieldSpec] = []

        def flush():
            if not run:
                return
            fmt = ">" + "".join(FIXED_FORMATS[f.type.kind] for f in run)
            size = sum(FIXED_SIZES[FIXED_FORMATS[f.type.kind]] for f in run)
            const = self.struct_constant(fmt)
            targets = ", ".join(f"self.{f.py_name}" for f in run)
            lines.append((f"{targets}{',' if len(run) == 1 else ''} = {const}.unpack_from(data, pos)", run_label(run)))
            lines.append((f"pos += {size}", None))
            run.clear()

        ordered = [f for f in struct.fields if f in present]
        i = 0
        while i < len(ordered):
            f = ordered[i]
            i += 1
            if packable(f):
                run.append(f)
                continue
            after = []
            while i < len(ordered) and packable(ordered[i]):
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
        size_before = sum(FIXED_SIZES[FIXED_FORMATS[x.type.kind]] for x in before)
        size_after = sum(FIXED_SIZES[FIXED_FORMATS[x.type.kind]] for x in after)
        total = size_before + FIXED_SIZES[code] + size_after
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
                      run_label(after)))
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
                    (f"pos += {FIXED_SIZES[FIXED_FORMATS[kind]]}", None)]
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
            if nullable and f.tagged and version in f.tagged_versions:
                # Inside a tagged field Kafka marks a nullable struct with an unsigned varint,
                # 0 for null, not with the int8 -1 of the untagged form.
                return [("marker, pos = read_uvarint(data, pos)", name),
                        ("if marker == 0:", None),
                        (f"    {target} = None", None),
                        ("else:", None),
                        (f"    {target}, pos = {self._struct_decode_call(f.struct, version)}", name)]
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
            lines.append((f"    pos += {FIXED_SIZES[code]} * n", None))
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

    def _emit_tag_decoder(self, out: Writer, struct: StructSpec, version: int, tagged: list[FieldSpec]) -> str:
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
