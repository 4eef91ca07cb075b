"""Kafka's primitive types, as the generated codecs read and write them.

Readers take (data, pos) with `data` a bytes object and return (value, new_pos). Every length
is checked against the bytes that are left before anything is sliced or allocated, so hostile
input can only make a reader raise Malformed, never allocate more than the input's size.
"""
from __future__ import annotations

import struct
from uuid import UUID, SafeUUID

from .errors import Malformed, UnsupportedVersionError
from .file_range import FileFrame, FileRange

__all__ = [
    "Malformed", "read_uvarint", "write_uvarint",
    "read_string", "read_nullable_string", "read_compact_string", "read_compact_nullable_string",
    "write_string", "write_nullable_string", "write_compact_string", "write_compact_nullable_string",
    "read_bytes", "read_nullable_bytes", "read_compact_bytes", "read_compact_nullable_bytes",
    "write_bytes", "write_nullable_bytes", "write_compact_bytes", "write_compact_nullable_bytes",
    "read_array_length", "read_nullable_array_length", "read_compact_array_length",
    "read_compact_nullable_array_length", "write_array_length", "write_nullable_array_length",
    "write_compact_array_length", "write_compact_nullable_array_length",
    "array_struct", "array_structs", "read_uuid", "write_uuid", "write_uuid_array",
    "read_unknown_tags", "read_tag_header", "write_tags", "unsupported_field", "unsupported_tags",
]

_new = object.__new__
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_unpack_int16 = _INT16.unpack_from
_unpack_int32 = _INT32.unpack_from
_pack_int16 = _INT16.pack
_pack_int32 = _INT32.pack

ZERO_UUID = UUID(int=0)


def read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:
        return b, pos + 1
    result, shift, start = b & 0x7F, 7, pos
    while True:
        pos += 1
        b = data[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result > 0xFFFFFFFF:
                # Only 4 bits of a fifth byte fit. Java's ByteUtils drops the rest silently, but no
                # Kafka writer sets them, and what we read must be writable again.
                raise Malformed(f"unsigned varint at byte {start} does not fit in 32 bits")
            return result, pos + 1
        shift += 7
        if shift > 28:
            raise Malformed(f"unsigned varint at byte {start} is longer than 5 bytes")


def write_uvarint(buf: bytearray, value: int) -> None:
    if 0 <= value < 0x80:
        buf.append(value)
        return
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"{value} does not fit in an unsigned varint")
    while value >= 0x80:
        buf.append((value & 0x7F) | 0x80)
        value >>= 7
    buf.append(value)


def _too_long(what: str, length: int, pos: int, data: bytes) -> Malformed:
    return Malformed(f"{what} of length {length} at byte {pos} runs past the end of the data "
                     f"({len(data) - pos} bytes left)")


# --- strings --------------------------------------------------------------------------------

def read_string(data, pos):
    (n,) = _unpack_int16(data, pos)
    pos += 2
    end = pos + n
    if n < 0:
        raise Malformed(f"string length {n}: null is not allowed here")
    if end > len(data):
        raise _too_long("string", n, pos, data)
    return data[pos:end].decode(), end


def read_nullable_string(data, pos):
    (n,) = _unpack_int16(data, pos)
    pos += 2
    if n < 0:
        if n != -1:
            raise Malformed(f"string length {n} is negative")
        return None, pos
    end = pos + n
    if end > len(data):
        raise _too_long("string", n, pos, data)
    return data[pos:end].decode(), end


def read_compact_string(data, pos):
    n = data[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(data, pos)
    n -= 1
    if n < 0:
        raise Malformed("compact string is null, which is not allowed here")
    end = pos + n
    if end > len(data):
        raise _too_long("compact string", n, pos, data)
    return data[pos:end].decode(), end


def read_compact_nullable_string(data, pos):
    n = data[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(data, pos)
    n -= 1
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(data):
        raise _too_long("compact string", n, pos, data)
    return data[pos:end].decode(), end


def write_string(buf, value):
    raw = value.encode()
    if len(raw) > 0x7FFF:
        raise ValueError(f"string of {len(raw)} bytes is longer than 32767")
    buf += _pack_int16(len(raw))
    buf += raw


def write_nullable_string(buf, value):
    if value is None:
        buf += b"\xff\xff"
    else:
        write_string(buf, value)


def write_compact_string(buf, value):
    raw = value.encode()
    if len(raw) < 0x7F:
        buf.append(len(raw) + 1)
    else:
        write_uvarint(buf, len(raw) + 1)
    buf += raw


def write_compact_nullable_string(buf, value):
    if value is None:
        buf.append(0)
        return
    raw = value.encode()
    if len(raw) < 0x7F:
        buf.append(len(raw) + 1)
    else:
        write_uvarint(buf, len(raw) + 1)
    buf += raw


# --- bytes and records ------------------------------------------------------------------------

def read_bytes(data, pos):
    (n,) = _unpack_int32(data, pos)
    pos += 4
    if n < 0:
        raise Malformed(f"bytes length {n}: null is not allowed here")
    end = pos + n
    if end > len(data):
        raise _too_long("bytes", n, pos, data)
    return data[pos:end], end


def read_nullable_bytes(data, pos):
    (n,) = _unpack_int32(data, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise Malformed(f"bytes length {n} is negative")
        return None, pos
    end = pos + n
    if end > len(data):
        raise _too_long("bytes", n, pos, data)
    return data[pos:end], end


# Compact bytes are mostly record batches, whose lengths take two varint bytes (128 B to 16 KB):
# those two are read inline, sparing a call per batch; longer lengths go through read_uvarint.
# `data` may be the input's memoryview (records, zeroCopy bytes): the value is then a slice, not a copy.

def read_compact_bytes(data, pos):
    n = data[pos]
    if n < 0x80:
        pos += 1
    elif data[pos + 1] < 0x80:
        n = (n & 0x7F) | (data[pos + 1] << 7)
        pos += 2
    else:
        n, pos = read_uvarint(data, pos)
    n -= 1
    if n < 0:
        raise Malformed("compact bytes are null, which is not allowed here")
    end = pos + n
    if end > len(data):
        raise _too_long("compact bytes", n, pos, data)
    return data[pos:end], end


def read_compact_nullable_bytes(data, pos):
    n = data[pos]
    if n < 0x80:
        pos += 1
    elif data[pos + 1] < 0x80:
        n = (n & 0x7F) | (data[pos + 1] << 7)
        pos += 2
    else:
        n, pos = read_uvarint(data, pos)
    n -= 1
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(data):
        raise _too_long("compact bytes", n, pos, data)
    return data[pos:end], end


def write_bytes(buf, value):
    buf += _pack_int32(len(value))
    if len(value) < SET_ASIDE:
        buf += value
    elif type(buf) is EncodeBuffer:
        buf.set_aside(value)
    else:
        buf += value if type(value) is not FileRange else value.read()


def write_nullable_bytes(buf, value):
    if value is None:
        buf += b"\xff\xff\xff\xff"
    else:
        write_bytes(buf, value)


def write_compact_bytes(buf, value):
    write_uvarint(buf, len(value) + 1)
    if len(value) < SET_ASIDE:
        buf += value
    elif type(buf) is EncodeBuffer:
        buf.set_aside(value)
    else:
        buf += value if type(value) is not FileRange else value.read()


def write_compact_nullable_bytes(buf, value):
    if value is None:
        buf.append(0)
    else:
        write_compact_bytes(buf, value)


SET_ASIDE = 1024    # byte values at least this long are set aside by an EncodeBuffer, not copied in


class EncodeBuffer(bytearray):
    """The buffer Message.encode writes into: a bytearray that keeps large byte values (record
    batches) aside instead of copying them in, and joins everything once at the end.

    Appending megabytes of batches to one bytearray has the allocator move it and fault in fresh
    pages as it grows, and bytes() then copies all of it again: encoding a 1.5 MB fetch response
    took 2 to 5 times as long as copying it, varying from run to run. getvalue() allocates the
    result once and copies each batch once. A value set aside must not change until then (it is
    a field of the message being encoded).
    """
    # No __slots__ and no __init__: a small message's whole encoding costs about as much as a
    # Python __init__ call. An instance gets its own list on the first set_aside.
    parts: tuple[()] | list[bytes | memoryview | FileRange] = ()
    has_files = False       # a part is a FileRange (kafkawire.protocol.file_range): bytes still in a file

    def set_aside(self, value) -> None:
        parts = self.parts
        if not parts:
            parts = self.parts = []
        if type(value) is FileRange:
            self.has_files = True
        else:
            value = memoryview(value)     # a value that is not bytes-like fails here, in its field's writer
        parts.append(bytes(self))
        self.clear()
        parts.append(value)

    def size(self) -> int:
        return sum(map(len, self.parts)) + len(self)

    def getvalue(self, size_prefix: bool = False) -> bytes:
        """Everything written, as bytes; with size_prefix, after its length as an int32 (a frame).
        File ranges are read here."""
        if not self.parts and not size_prefix:
            return bytes(self)
        head = [_pack_int32(self.size())] if size_prefix else []
        parts = self.parts if not self.has_files else [bytes(p) if type(p) is FileRange else p for p in self.parts]
        return b"".join([*head, *parts, self])

    def getframe(self):
        """A frame (size prefix included): bytes, or a FileFrame when parts are still in files
        (the bytes between the ranges joined, each range left to be sent from its file)."""
        if not self.has_files:
            return self.getvalue(size_prefix=True)
        frame, pending = FileFrame(), [_pack_int32(self.size())]
        for part in self.parts:
            if type(part) is FileRange:
                frame += (b"".join(pending), part)
                pending = []
            else:
                pending.append(part)
        pending.append(self)
        frame.append(b"".join(pending))
        return frame


# --- arrays -----------------------------------------------------------------------------------
# An element takes at least one byte on the wire in every type but empty structs, so a count
# larger than the bytes left is impossible; Kafka's Java readers apply the same check.

def read_array_length(data, pos):
    (n,) = _unpack_int32(data, pos)
    pos += 4
    if n < 0:
        raise Malformed(f"array length {n}: null is not allowed here")
    if n > len(data) - pos:
        raise Malformed(f"array of {n} elements at byte {pos} cannot fit in the {len(data) - pos} bytes left")
    return n, pos


def read_nullable_array_length(data, pos):
    (n,) = _unpack_int32(data, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise Malformed(f"array length {n} is negative")
        return -1, pos
    if n > len(data) - pos:
        raise Malformed(f"array of {n} elements at byte {pos} cannot fit in the {len(data) - pos} bytes left")
    return n, pos


def read_compact_array_length(data, pos):
    n = data[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(data, pos)
    n -= 1
    if n < 0:
        raise Malformed("compact array is null, which is not allowed here")
    if n > len(data) - pos:
        raise Malformed(f"array of {n} elements at byte {pos} cannot fit in the {len(data) - pos} bytes left")
    return n, pos


def read_compact_nullable_array_length(data, pos):
    n, pos = read_uvarint(data, pos)
    n -= 1
    if n > len(data) - pos:
        raise Malformed(f"array of {n} elements at byte {pos} cannot fit in the {len(data) - pos} bytes left")
    return n, pos


def write_array_length(buf, items):
    buf += _pack_int32(len(items))


def write_nullable_array_length(buf, items):
    buf += _pack_int32(-1 if items is None else len(items))


def write_compact_array_length(buf, items):
    n = len(items) + 1
    if n < 0x80:
        buf.append(n)
    else:
        write_uvarint(buf, n)


def write_compact_nullable_array_length(buf, items):
    if items is None:
        buf.append(0)
    else:
        write_compact_array_length(buf, items)


_array_structs: dict = {}


def array_struct(code: str, n: int) -> struct.Struct:
    """The Struct of n fixed-width elements; n is bounded by the bytes left, so the cache is too."""
    key = (code, n)
    s = _array_structs.get(key)
    if s is None:
        s = struct.Struct(f">{n}{code}")
        if len(_array_structs) < 4096:
            _array_structs[key] = s
    return s


def array_structs(code: str) -> tuple:
    """Structs of 0..63 elements, indexed by count: the generated code's fast path for short arrays."""
    return tuple(struct.Struct(f">{n}{code}") for n in range(64))


# --- uuid -------------------------------------------------------------------------------------

# UUID(bytes=...) validates its argument at length; 16 bytes sliced from the wire need none of it.
# UUID is immutable through __setattr__, so its two slots are filled through their descriptors.
_set_uuid_int = UUID.__dict__["int"].__set__
_set_uuid_safety = UUID.__dict__["is_safe"].__set__
_int_from_bytes = int.from_bytes      # big-endian by default
_UNKNOWN_SAFETY = SafeUUID.unknown


_ZERO_BYTES16 = bytes(16)


def uuid_from_bytes(raw: bytes) -> UUID:
    if raw == _ZERO_BYTES16:  # Kafka's Uuid.ZERO_UUID ("no id"), frequent: one shared (immutable) object
        return ZERO_UUID
    u = _new(UUID)
    _set_uuid_int(u, _int_from_bytes(raw))
    _set_uuid_safety(u, _UNKNOWN_SAFETY)
    return u


def read_uuid(data, pos):
    end = pos + 16
    if end > len(data):
        raise Malformed(f"uuid at byte {pos} runs past the end of the data")
    raw = data[pos:end]
    if raw == _ZERO_BYTES16:
        return ZERO_UUID, end
    u = _new(UUID)
    _set_uuid_int(u, _int_from_bytes(raw))
    _set_uuid_safety(u, _UNKNOWN_SAFETY)
    return u, end


def write_uuid(buf, value):
    buf += value.int.to_bytes(16, "big")


def write_uuid_array(buf, items):
    for u in items:
        buf += u.int.to_bytes(16, "big")


# --- tagged fields ----------------------------------------------------------------------------

def read_unknown_tags(data, pos):
    """A tagged-field section of which no tag is known: every field is kept as (tag, bytes)."""
    n, pos = read_uvarint(data, pos)
    if n == 0:
        return (), pos
    if n > len(data) - pos:
        raise Malformed(f"{n} tagged fields cannot fit in the {len(data) - pos} bytes left")
    fields, last = [], -1
    for _ in range(n):
        tag, pos, end = read_tag_header(data, pos, last)
        fields.append((tag, data[pos:end]))
        pos, last = end, tag
    return fields, pos


def read_tag_header(data, pos, last_tag):
    tag, pos = read_uvarint(data, pos)
    if tag <= last_tag:
        raise Malformed(f"tagged field {tag} at byte {pos} does not follow tag {last_tag} in ascending order")
    size, pos = read_uvarint(data, pos)
    end = pos + size
    if end > len(data):
        raise _too_long(f"tagged field {tag}", size, pos, data)
    return tag, pos, end


def write_tags(buf, known, unknown):
    """Write a tagged-field section: known (tag, bytes) and unknown (tag, bytes), in tag order."""
    fields = known
    if unknown:
        fields = sorted(list(known) + list(unknown), key=lambda item: item[0])
        for a, b in zip(fields, fields[1:]):
            if a[0] == b[0]:
                raise ValueError(f"tag {a[0]} is set both as a known field and as an unknown tagged field")
    write_uvarint(buf, len(fields))
    for tag, raw in fields:
        write_uvarint(buf, tag)
        write_uvarint(buf, len(raw))
        buf += raw


def unsupported_field(message: str, field: str, version: int) -> UnsupportedVersionError:
    return UnsupportedVersionError(message, version, field,
                                   f"{field} is set to a non-default value, but version {version} has no such field "
                                   f"and the field is not ignorable")


def unsupported_tags(message: str, struct: str, version: int) -> UnsupportedVersionError:
    return UnsupportedVersionError(message, version, f"tagged fields of {struct}",
                                   f"tagged fields were set, but version {version} is not flexible")
