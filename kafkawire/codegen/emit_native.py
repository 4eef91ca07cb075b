"""The field programs of a generated message module: one compact tuple per decoding function,
which the native decoder (kafkawire/_native_src/message_decode.c) walks instead of running the
Python function, and the native encoder too (issue 26). They come from the same model and the same choices as the Python
decoders (emit_decode), so the schema has one source of truth; the pure decoders stay the oracle.

A program is ``(struct class name, fields, tagged)``:

* ``fields``: the fields the version carries, in wire order, then the absent ones (their
  defaults), each ``(slot, kind, flags, element, program)``, trailing Nones left out. ``kind`` is
  a primitive, ``'struct'``, ``'array'`` or ``'default'``; ``flags`` is a sum of
  ``NATIVE_FLAGS``; an array names its element kind; a struct (or an array of structs) names the
  program of its decoding function. A default is ``(slot, 'default', flags, mode, value)``:
  mode ``'const'`` (a literal), ``'global'`` (a module constant), ``'lazy'`` (``_MISSING``, for
  a tagged struct made on first read; value names the default instance encoders compare with), ``'list'`` (a new empty list) or ``'call'`` (a module
  factory, called for each message); flags has ``ignorable`` for a field an encoder may drop.

The native encoder (message_encode.c) walks the same programs: wire fields in order, absent
fields checked against their defaults as the generated encoders check them, tagged fields
written when they differ from theirs.
* ``tagged``: None when the version is not flexible, else the known tagged fields as
  ``(tag, field)`` (empty: every tag is kept as an unknown (tag, bytes) pair).

A mixin of ModuleEmitter (kafkawire/codegen/emit.py), like DecoderEmitter."""
from __future__ import annotations

from .emit_support import Writer, lazy_default, slot_name
from .model import FieldSpec, StructSpec

# One bit each; the C side reads the same values (message_decode.c, F_*).
NATIVE_FLAGS = {"compact": 1, "nullable": 2, "view": 4, "varint_marker": 8, "ignorable": 16}


class NativeProgramEmitter:
    def native_programs(self, structs: list[StructSpec]) -> Writer:
        """``_NATIVE_PROGRAMS`` (decoding function name -> program) and the call that hands them
        to the native decoder, if it is built (kafkawire.protocol.native_codec)."""
        w = Writer()
        w.add("")
        w.add("# The field programs of the decoding functions above, walked by the native decoder and encoder")
        w.add("# (kafkawire/_native_src/message_*.c; kafkawire/codegen/emit_native.py says the format).")
        w.add("_NATIVE_PROGRAMS = {")
        done = set()
        for struct in structs:
            for version in self._versions_of(struct):
                name = self.canonical[("decode", struct.name, version)]
                if name not in done:
                    done.add(name)
                    w.add(f"    {name!r}: {self._native_program(struct, version)!s},")
        w.add("}")
        w.add(f"_native_codec.install({self.spec.struct.name}, _NATIVE_PROGRAMS, globals())")
        return w

    def _native_program(self, struct: StructSpec, version: int) -> str:
        flexible = self.spec.flexible(version)
        present = struct.fields_in(version)
        fields = [self._native_field(f, version) for f in struct.fields if f in present]
        fields += [self._native_default(f) for f in struct.fields if f not in present]
        if flexible:
            tagged = [f"({f.tag}, {self._native_field(f, version)})" for f in struct.tagged_fields_in(version)]
            tags = "(" + "".join(t + ", " for t in tagged) + ")"
        else:
            tags = "None"
        return f"({struct.name!r}, ({''.join(f + ', ' for f in fields)}), {tags})"

    def _native_field(self, f: FieldSpec, version: int) -> str:
        kind = f.type.kind
        flags = 0
        if kind in ("string", "bytes", "records", "array") and self._field_flexible(f, version):
            flags |= NATIVE_FLAGS["compact"]
        if f.nullable_in(version):
            flags |= NATIVE_FLAGS["nullable"]
            if kind == "struct" and f.tagged and version in f.tagged_versions:
                flags |= NATIVE_FLAGS["varint_marker"]
        if kind == "records" or (kind == "bytes" and f.zero_copy):
            flags |= NATIVE_FLAGS["view"]
        parts = [repr(slot_name(f)), repr(kind), str(flags)]
        if kind == "struct":
            parts += ["None", repr(self._native_program_name(f.struct.name, version))]
        elif kind == "array":
            element = f.type.element
            parts.append(repr(element.kind))
            if element.kind == "struct":
                parts.append(repr(self._native_program_name(element.name, version)))
        return f"({', '.join(parts)})"

    def _native_program_name(self, struct_name: str, version: int) -> str:
        return self.canonical[("decode", self.spec.structs[struct_name].name, version)]

    def _native_default(self, f: FieldSpec) -> str:
        """The default a decoder stores for an absent field, as decode_default_expr writes it."""
        expr = self.decode_default_expr(f)
        if lazy_default(f):
            # _MISSING until first read; the encoder compares a value read with the default instance.
            mode, value = "lazy", repr(f"_DEFAULT_{f.struct.name}")
        elif expr.startswith("_") and not expr.endswith("()"):
            mode, value = "global", repr(expr)       # _ZERO_UUID, _UUID_n
        elif expr.endswith("()"):
            mode, value = "call", repr(expr[:-2])     # _fresh_Struct()
        elif expr == "[]":
            mode, value = "list", "None"
        else:
            mode, value = "const", expr               # a literal: int, float, str, bool or None
        flags = NATIVE_FLAGS["ignorable"] if f.ignorable else 0
        return f"({slot_name(f)!r}, 'default', {flags}, {mode!r}, {value})"

