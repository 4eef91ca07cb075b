"""Decoding the records of a v2 batch: ``decode_records``, the reader's hot loop.

The loop is written for CPython, where a function call costs more than decoding a small
varint: everything is a local, the one- and two-byte varints (nearly all of them) are decoded
inline through the ``ZIGZAG`` table and only longer ones call ``read_unsigned_tail``, and the
common single-header record skips the header loop. Inlining by hand meant the same varint
code eight times over, so the loop is kept here once, as ``_LOOP``, with each repeated piece
written as a macro line (``@varint``, ``@short_varint``, ``@nullable_bytes``, ``@header``)
that ``_expand`` replaces by its lines before the function is compiled, once, at import.
The compiled source is ``DECODE_RECORDS_SOURCE``; tracebacks show its lines.

Every length is checked against the bytes left before it is used, so hostile input only ever
raises CorruptRecordError (``fail(reason, pos)`` builds it for a byte position).

When the C extension is built (``kafkawire._native``), ``decode_records`` is its loop
(``decode_records_native``): it decodes the whole batch in one call, into the same Record
objects, and hands out the records before the first bad one, then the same error this loop
raises (``decode_records_pure``, its oracle).
"""
from __future__ import annotations

import linecache
import re
from collections.abc import Callable, Iterator
from typing import Any, cast

from .. import _native
from .errors import CorruptRecordError
from .varint import read_unsigned_tail

__all__ = ["decode_records", "decode_records_pure", "decode_records_native", "ZIGZAG", "DECODE_RECORDS_SOURCE"]

# Zigzag decoding of every 1- and 2-byte varint payload (0..16383) by table lookup: a list
# index is one specialised bytecode, cheaper than ``(v >> 1) ^ -(v & 1)``.
ZIGZAG = [(v >> 1) ^ -(v & 1) for v in range(1 << 14)]


def _varint(target: str, max_bytes: str, skip: str = "0") -> list[str]:
    """A zigzag varint at ``data[pos + skip]`` into ``target``, ``pos`` moved past it."""
    k = int(skip)
    at = f"pos + {k}" if k else "pos"
    return [f"b = data[{at}]",
            "if b < 0x80:",
            f"    {target} = zz[b]",
            f"    pos += {k + 1}",
            f"elif (b2 := data[pos + {k + 1}]) < 0x80:",
            f"    {target} = zz[(b & 0x7F) | (b2 << 7)]",
            f"    pos += {k + 2}",
            "else:",
            f"    v, pos = tail(data, pos + {k + 2}, (b & 0x7F) | ((data[pos + {k + 1}] & 0x7F) << 7), 14, {max_bytes})",
            f"    {target} = (v >> 1) ^ -(v & 1)"]


def _short_varint(target: str) -> list[str]:
    """A zigzag varint whose two-byte form is rare (header lengths): one byte inline."""
    return ["b = data[pos]",
            "if b < 0x80:",
            f"    {target} = zz[b]",
            "    pos += 1",
            "else:",
            "    v, pos = tail(data, pos + 1, b & 0x7F, 7, 5)",
            f"    {target} = (v >> 1) ^ -(v & 1)"]


def _nullable_bytes(target: str, length: str, what: str, form: str) -> list[str]:
    """A varint length (-1 = null) and that many bytes, as a memoryview slice."""
    read = f"@varint {length} 5" if form == "full" else f"@short_varint {length}"
    return [read,
            f"if 0 <= {length} <= rec_end - pos:",
            f"    {target} = mv[pos:pos + {length}]",
            f"    pos += {length}",
            f"elif {length} == -1:",
            f"    {target} = None",
            "else:",
            f'    raise fail(f"invalid {what.replace("_", " ")} length {{{length}}}: {{rec_end - pos}} bytes left '
            f'in the record", pos)']


def _header() -> list[str]:
    """One header: a UTF-8 key (not nullable, kept invertible with surrogateescape) and a value."""
    return ["@short_varint hn",
            "if not 0 <= hn <= rec_end - pos:",
            '    raise fail(f"invalid header key length {hn}: {rec_end - pos} bytes left "',
            '               f"in the record (header keys are not nullable)", pos)',
            "hkey = (text[pos:pos + hn] if text is not None else bytes(mv[pos:pos + hn])).decode(",
            '    "utf-8", "surrogateescape")',
            "pos += hn",
            "@nullable_bytes hvalue hn header_value short"]


_MACROS: dict[str, Callable[..., list[str]]] = {
    "varint": _varint, "short_varint": _short_varint, "nullable_bytes": _nullable_bytes, "header": _header}

_LOOP = '''
def decode_records(data, pos, end, count, base_offset, base_timestamp, log_append_time,
                   batch, record_cls, fail):
    mv = memoryview(data)
    # Slicing bytes/bytearray/mmap gives bytes, whose .decode beats str(memoryview).
    text = None if isinstance(data, memoryview) else data
    tail = read_unsigned_tail
    zz = ZIGZAG
    empty = ()
    new = object.__new__
    for _ in range(count):
        try:
            @varint length 5
            if length < 0 or length > end - pos:
                raise fail(f"invalid record size {length}: {end - pos} bytes of records left "
                           f"(count says {count} records)", pos)
            rec_end = pos + length
            attributes = data[pos]
            @varint ts_delta 10 1
            @varint off_delta 5
            @nullable_bytes key n key full
            @nullable_bytes value n value full
            b = data[pos]
            if b == 0:  # zigzag(0): no headers, the most common case
                headers = empty
                pos += 1
            else:
                if b == 2:  # zigzag(1): one header (its lengths are checked below)
                    n = 1
                    pos += 1
                elif b < 0x80:
                    n = zz[b]
                    pos += 1
                else:
                    v, pos = tail(data, pos + 1, b & 0x7F, 7, 5)
                    n = (v >> 1) ^ -(v & 1)
                # One header is common enough to be worth its own copy of the header code
                # (no list, no loop): about 10% of the decoding time.
                if n == 1:
                    @header
                    headers = ((hkey, hvalue),)
                else:
                    if n < 0:
                        raise fail(f"invalid number of record headers {n}", pos)
                    if n > (rec_end - pos) >> 1:  # every header takes at least 2 bytes
                        raise fail(f"{n} headers cannot fit in the {rec_end - pos} bytes left in the record", pos)
                    hl = []
                    for _h in range(n):
                        @header
                        hl.append((hkey, hvalue))
                    headers = tuple(hl)
            if pos != rec_end:
                raise fail(f"invalid record size: expected to read {length} bytes in record "
                           f"payload, but instead read {pos - rec_end + length}", rec_end - length)
        except IndexError:
            raise fail("record runs past the end of the buffer", pos) from None
        except CorruptRecordError as e:  # from read_unsigned_tail, which lacks context
            if e.position is None or not e.reason.startswith("varint"):
                raise
            raise fail(e.reason, e.position) from None
        # object.__new__ plus slot stores beats calling Record.__init__ (no extra frame).
        r = new(record_cls)
        r.offset = base_offset + off_delta
        r.timestamp = base_timestamp + ts_delta if log_append_time is None else log_append_time
        r.key = key
        r.value = value
        r.headers = headers
        r.attributes = attributes
        r.timestamp_delta = ts_delta
        r.batch = batch
        yield r
    if pos != end:
        raise fail(f"incorrect declared batch size: {end - pos} bytes remain after the last record", pos)
'''

_MACRO_LINE = re.compile(r"^(\s*)@(\w+)\s*(.*)$")


def _expand(lines: list[str]) -> list[str]:
    """Replace every macro line by its lines, at the macro's indentation (macros may nest)."""
    out = []
    for line in lines:
        match = _MACRO_LINE.match(line)
        if match is None:
            out.append(line)
            continue
        indent, name, args = match.groups()
        out += [indent + text for text in _expand(_MACROS[name](*args.split()))]
    return out


def _compile() -> tuple[Callable[..., Iterator], str]:
    source = "\n".join(_expand(_LOOP.split("\n")))
    filename = "<kafkawire.records.record_decoding: decode_records>"
    # Tracebacks through the compiled loop show its lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"ZIGZAG": ZIGZAG, "read_unsigned_tail": read_unsigned_tail,
                 "CorruptRecordError": CorruptRecordError}
    exec(compile(source, filename, "exec"), namespace)
    return cast(Callable[..., Iterator], namespace["decode_records"]), source


decode_records_pure, DECODE_RECORDS_SOURCE = _compile()
decode_records_pure.__doc__ = """Yield ``count`` records of class ``record_cls`` from ``data[pos:end]``
(offsets from ``base_offset``, timestamps from ``base_timestamp`` or all ``log_append_time``);
``fail(reason, pos)`` builds the CorruptRecordError for a byte position."""


def _yield_then_raise(records: list, error: CorruptRecordError) -> Iterator:
    yield from records
    raise error


def _native_decoder(decode: Callable[..., tuple[list, tuple[str, int] | None]]) -> Callable[..., Iterator]:
    def decode_records_native(data, pos, end, count, base_offset, base_timestamp, log_append_time,
                              batch, record_cls, fail):
        """``decode_records_pure``'s records and errors, from the C loop."""
        try:
            records, error = decode(data, pos, end, count, base_offset, base_timestamp, log_append_time,
                                    batch, record_cls)
        except BufferError:  # a buffer that is not one contiguous run of bytes: the pure loop reads it
            return decode_records_pure(data, pos, end, count, base_offset, base_timestamp, log_append_time,
                                       batch, record_cls, fail)
        if error is None:
            return iter(records)
        return _yield_then_raise(records, fail(*error))
    return decode_records_native


decode_records_native = None if _native.records is None else _native_decoder(_native.records.decode_records)
decode_records = decode_records_pure if decode_records_native is None else decode_records_native
