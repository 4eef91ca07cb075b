"""Variable-length integers as Kafka writes them (org.apache.kafka.common.utils.ByteUtils).

Record fields in magic v2 use protobuf-style base-128 varints. Signed values are
zigzag-encoded first, so that small negative numbers (e.g. -1 for a null key) stay one
byte long. Kafka reads at most 5 bytes for an int32 varint and 10 for an int64 varlong;
anything longer is corrupt, and we refuse it instead of looping over hostile input.

Decoders take ``(buffer, offset)`` and return ``(value, new_offset)`` so a caller can walk
a buffer without slicing it. Like Java (which shifts into an ``int``/``long``), the
decoded value is truncated to 32/64 bits, so a decoder never returns a value outside the
type's range, whatever the bytes are.
"""

from __future__ import annotations

from .errors import CorruptRecordError

__all__ = [
    "decode_varint",
    "decode_varlong",
    "decode_unsigned_varint",
    "encode_varint",
    "encode_varlong",
    "encode_unsigned_varint",
    "size_of_varint",
    "size_of_varlong",
    "size_of_unsigned_varint",
    "read_unsigned_tail",
]

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1

VARINT_MAX_BYTES = 5
VARLONG_MAX_BYTES = 10


# --- encoding -------------------------------------------------------------------------

def _encode_unsigned(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# Most varints in a record are tiny (attributes, deltas, header counts); a table lookup
# for zigzag values 0..127 makes the writer's common case one list index.
_ONE_BYTE = [bytes((i,)) for i in range(128)]


def encode_unsigned_varint(value: int) -> bytes:
    if not 0 <= value <= _MASK32:
        raise ValueError(f"unsigned varint out of range: {value}")
    return _ONE_BYTE[value] if value < 128 else _encode_unsigned(value)


def encode_varint(value: int) -> bytes:
    """Zigzag int32 varint (ByteUtils.writeVarint)."""
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"varint out of int32 range: {value}")
    zz = ((value << 1) ^ (value >> 31)) & _MASK32
    return _ONE_BYTE[zz] if zz < 128 else _encode_unsigned(zz)


def encode_varlong(value: int) -> bytes:
    """Zigzag int64 varlong (ByteUtils.writeVarlong)."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"varlong out of int64 range: {value}")
    zz = ((value << 1) ^ (value >> 63)) & _MASK64
    return _ONE_BYTE[zz] if zz < 128 else _encode_unsigned(zz)


def size_of_unsigned_varint(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def size_of_varint(value: int) -> int:
    return size_of_unsigned_varint(((value << 1) ^ (value >> 31)) & _MASK32)


def size_of_varlong(value: int) -> int:
    return size_of_unsigned_varint(((value << 1) ^ (value >> 63)) & _MASK64)


# --- decoding -------------------------------------------------------------------------

def read_unsigned_tail(buf, pos: int, value: int, shift: int, max_bytes: int) -> tuple[int, int]:
    """Continue an unsigned varint whose first ``shift // 7`` bytes are already in ``value``.

    The record reader inlines the one-byte case and calls this for the rest; ``pos`` is
    the index of the next unread byte. Raises CorruptRecordError when the varint runs
    past ``max_bytes`` or past the end of ``buf``.
    """
    limit = 7 * max_bytes
    try:
        while True:
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                # Java shifts into an int/long: bits past 32/64 are dropped, not an error.
                return value & (_MASK32 if max_bytes == VARINT_MAX_BYTES else _MASK64), pos
            shift += 7
            if shift >= limit:
                raise CorruptRecordError(
                    f"varint longer than {max_bytes} bytes", pos - 1
                )
    except IndexError:
        raise CorruptRecordError("varint runs past the end of the buffer", pos) from None


def decode_unsigned_varint(buf, offset: int = 0) -> tuple[int, int]:
    """Unsigned (no zigzag) varint of at most 5 bytes, as used by flexible protocol versions."""
    return read_unsigned_tail(buf, offset, 0, 0, VARINT_MAX_BYTES)


def decode_varint(buf, offset: int = 0) -> tuple[int, int]:
    """Zigzag int32 varint of at most 5 bytes (ByteUtils.readVarint)."""
    value, pos = read_unsigned_tail(buf, offset, 0, 0, VARINT_MAX_BYTES)
    return (value >> 1) ^ -(value & 1), pos


def decode_varlong(buf, offset: int = 0) -> tuple[int, int]:
    """Zigzag int64 varlong of at most 10 bytes (ByteUtils.readVarlong)."""
    value, pos = read_unsigned_tail(buf, offset, 0, 0, VARLONG_MAX_BYTES)
    return (value >> 1) ^ -(value & 1), pos
