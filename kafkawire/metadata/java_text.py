"""Text as Kafka's Java code prints it: ``Double.toString``, ``Arrays.toString``,
``Optional.toString``, ``DateTimeFormatter.ISO_ZONED_DATE_TIME`` in UTC, ``new String(bytes,
UTF_8)`` and Jackson's compact JSON (``JsonNode.toString``), which kafka-dump-log uses for
every payload it decodes.

Why not ``json.dumps`` and ``repr`` alone: Jackson writes doubles with ``Double.toString``
(``1.0E7``, not ``10000000.0``), NaN and infinities as quoted strings, and ``\\u001F`` with
upper-case hex digits; Python differs on all three. Everything else (escapes of ``"`` ``\\``
and control characters, non-ASCII left as is) is the same, so the C-accelerated
``json.dumps`` does the work and only messages holding floats take the slow path.
"""
from __future__ import annotations

import codecs
import datetime
import json
import math
import re
from decimal import Decimal

__all__ = ["java_double", "java_list", "java_string_hash", "java_hashset_order", "java_optional", "iso_zoned_utc", "jackson_json",
           "java_string_key", "java_utf8"]


def java_double(value: float) -> str:
    """``Double.toString``: the shortest digits that round-trip, written as plain decimals
    for 1e-3 <= |x| < 1e7 and as ``d.dddE±n`` otherwise, always with a fraction digit."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    # ``point`` is where the decimal point goes counting from the first digit.
    point = len(digits) + exponent
    prefix = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{text}"
        if point >= len(text):
            return f"{prefix}{text}{'0' * (point - len(text))}.0"
        return f"{prefix}{text[:point]}.{text[point:]}"
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{point - 1}"


def java_list(items) -> str:
    """``Arrays.toString`` / ``List.toString``: ``[1, 2, 3]``."""
    return "[" + ", ".join(str(i) for i in items) + "]"


def java_split(text: str, separator: str = ",") -> list[str]:
    """Java's String.split with a one-character literal separator: trailing empty strings dropped
    ("," gives none), a text without the separator is itself ("" gives [""])."""
    if separator not in text:
        return [text]
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_string_hash(text: str) -> int:
    """String.hashCode over UTF-16 code units, as an unsigned 32-bit value."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hashset_order(names) -> list[str]:
    """``names`` (in insertion order) as a ``new HashSet<>()`` of them iterates: by bucket
    (HashMap.hash masked by the table size), insertion order within a bucket."""
    names = list(names)
    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = java_string_hash(name)
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(names, key=bucket)


def java_optional(value) -> str:
    return "Optional.empty" if value is None else f"Optional[{value}]"


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def iso_zoned_utc(epoch_ms: int) -> str:
    """``DateTimeFormatter.ISO_ZONED_DATE_TIME`` of an instant in ``ZoneId.of("UTC")``:
    ``2024-04-19T13:20:44.123Z[UTC]``; the fraction is left out when it is zero and
    written without trailing zeros otherwise."""
    moment = _EPOCH + datetime.timedelta(milliseconds=epoch_ms)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += "." + f"{moment.microsecond:06d}".rstrip("0")
    return text + "Z[UTC]"


def java_string_key(text: str) -> bytes:
    """A sort key giving ``String.compareTo``'s order (UTF-16 code units), which differs from
    Python's code-point order only for characters above U+FFFF."""
    return text.encode("utf-16-be", "surrogatepass")


# --- Java's UTF-8 decoder -------------------------------------------------------------------

def java_utf8(data) -> str:
    """``new String(bytes, UTF_8)`` (what kafka-dump-log prints keys, values and header keys
    with): well-formed UTF-8 decodes as in Python; ill-formed bytes become U+FFFD by Java's
    rule, not Python's. The two differ on UTF-8-encoded surrogates: Java replaces
    ``ED A0..BF xx`` by one U+FFFD (two when ``xx`` is no continuation byte, then ``xx``)
    and ``ED A0..BF`` cut off by the end of the data by one; Python replaces every byte.
    tests/metadata/test_java_utf8.py checks this against cases taken from Java's own output."""
    return bytes(data).decode("utf-8", "kafkawire-java-utf8")


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _java_malformed(data: bytes, i: int) -> tuple[int, bool]:
    """At an ill-formed sequence starting at ``data[i]``: how many bytes Java replaces with
    one U+FFFD, and whether that U+FFFD takes the rest of the data (a sequence the end cuts
    off: Java stops decoding there)."""
    lead, rest = data[i], len(data) - i - 1
    if 0xE0 <= lead <= 0xEF:
        if rest >= 2:
            second, third = data[i + 1], data[i + 2]
            if (lead == 0xE0 and second < 0xA0) or not _is_continuation(second):
                return 1, False
            # a well-framed surrogate (ED A0..BF xx) is one replacement for all three bytes
            return (2 if not _is_continuation(third) else 3), False
        if rest == 1:
            second = data[i + 1]
            if (lead == 0xE0 and second < 0xA0) or not _is_continuation(second):
                return 1, False
        return 1, True
    if 0xF0 <= lead <= 0xF4:
        return _java_malformed4(data, i, lead, rest)
    return 1, False          # a stray continuation byte, C0, C1, F5-FF, or C2-DF without its pair


def _bad_second_of_four(lead: int, second: int) -> bool:
    return ((lead == 0xF0 and not 0x90 <= second <= 0xBF) or (lead == 0xF4 and second & 0xF0 != 0x80)
            or not _is_continuation(second))


def _java_malformed4(data: bytes, i: int, lead: int, rest: int) -> tuple[int, bool]:
    if rest >= 3:
        second, third = data[i + 1], data[i + 2]
        if _bad_second_of_four(lead, second):
            return 1, False
        return (2 if not _is_continuation(third) else 3), False
    if rest >= 1 and _bad_second_of_four(lead, data[i + 1]):
        return 1, False
    if rest >= 2 and not _is_continuation(data[i + 2]):
        return 2, False
    return 1, True


def _java_replace(exc: UnicodeDecodeError):
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    length, stop = _java_malformed(exc.object, exc.start)
    return "\ufffd", len(exc.object) if stop else exc.start + length


codecs.register_error("kafkawire-java-utf8", _java_replace)


# --- Jackson --------------------------------------------------------------------------------

_LOWER_HEX_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-f]{4})")


def _upper_escape(match) -> str:
    return f"{match.group(1)}\\u{match.group(2).upper()}"


def jackson_hex_escapes(text: str) -> str:
    """JSON text from Python's encoder with its ``\\uXXXX`` escapes in Jackson's upper-case hex."""
    if "\\u" in text:
        text = _LOWER_HEX_ESCAPE.sub(_upper_escape, text)
    return text


def _with_java_doubles(value):
    """Replace floats by markers json.dumps writes verbatim (see jackson_json)."""
    if isinstance(value, float):
        return _RawNumber(java_double(value)) if math.isfinite(value) else java_double(value)
    if isinstance(value, dict):
        return {k: _with_java_doubles(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_java_doubles(v) for v in value]
    return value


class _RawNumber(str):
    """A number already formatted as Java writes it."""


def _encode_with_raw_numbers(obj) -> str:
    parts = []
    _write(obj, parts.append)
    return "".join(parts)


def _write(obj, out) -> None:
    if isinstance(obj, _RawNumber):
        out(str.__str__(obj))
    elif isinstance(obj, dict):
        out("{")
        first = True
        for k, v in obj.items():
            if not first:
                out(",")
            first = False
            out(json.dumps(k, ensure_ascii=False))
            out(":")
            _write(v, out)
        out("}")
    elif isinstance(obj, list):
        out("[")
        for i, v in enumerate(obj):
            if i:
                out(",")
            _write(v, out)
        out("]")
    else:
        out(json.dumps(obj, ensure_ascii=False))


def _has_float(value) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def jackson_json(value, *, may_hold_floats: bool = True) -> str:
    """Compact JSON exactly as Jackson's ``JsonNode.toString()`` writes it.

    ``may_hold_floats=False`` is a promise from the caller (it knows the schema) that lets
    the fast path skip looking for doubles.
    """
    if may_hold_floats and _has_float(value):
        text = _encode_with_raw_numbers(_with_java_doubles(value))
    else:
        text = _dumps(value)
    if "\\u" in text:
        text = _LOWER_HEX_ESCAPE.sub(_upper_escape, text)
    return text
