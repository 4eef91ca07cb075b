"""The payload of a PushTelemetry request (KIP-714): OpenTelemetry's MetricsData protobuf, possibly
compressed, read only as far as an exporter needs it: each metric's name, kind and the numeric
data points with their attributes.

Kafka's broker hands the exporter the decompressed bytes (PushTelemetryRequest.metricsData), and
a decompression of more than ``telemetry.max.bytes`` fails the push (TelemetryTooLargeException
inside the export, which KafkaApis answers INVALID_RECORD). Here the same bound holds, and the
reader below checks every length against what is left, so a hostile payload costs at most a
walk over its bytes and raises PayloadError, never anything else.

The protobuf fields read (opentelemetry/proto/metrics/v1/metrics.proto; unknown fields skipped):
MetricsData.resource_metrics=1; ResourceMetrics.resource=1, scope_metrics=2; Resource.attributes=1;
ScopeMetrics.metrics=2; Metric.name=1, gauge=5, sum=7, histogram=9, exponential_histogram=10,
summary=11; Gauge/Sum.data_points=1; NumberDataPoint.attributes=7, time_unix_nano=3,
as_double=4, as_int=6; Histogram*/Summary data points: count=4 as the value; KeyValue.key=1,
value=2; AnyValue.string_value=1, bool_value=2, int_value=3, double_value=4.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from kafkawire.records.compression import NONE, decompress
from kafkawire.records.errors import BadBytesError

__all__ = ["PayloadError", "TelemetryMetric", "decode_metrics", "metrics_data"]

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
_KINDS = {5: "gauge", 7: "sum", 9: "histogram", 10: "exponential_histogram", 11: "summary"}
_COUNT_FIELD = {9: 4, 10: 4, 11: 4}          # the histogram and summary points' count
_DOUBLE = struct.Struct("<d")
_SIGNED64 = struct.Struct("<q")
_UNSIGNED64 = struct.Struct("<Q")


class PayloadError(ValueError):
    """The payload does not decompress within the limit or is not a MetricsData message."""


@dataclass
class TelemetryMetric:
    """One metric of a push: ``points`` are (attributes, value) of its data points."""
    name: str
    kind: str
    points: list[tuple[dict[str, str], float]] = field(default_factory=list)


def metrics_data(compression_type: int, payload, max_bytes: int) -> bytes:
    """The MetricsData bytes: ``payload`` decompressed, at most ``max_bytes`` of them."""
    if compression_type == NONE:
        return bytes(payload)
    try:
        return decompress(compression_type, payload, max_size=max_bytes)
    except BadBytesError as exc:
        raise PayloadError(f"the metrics do not decompress: {exc}") from None


def decode_metrics(data: bytes) -> tuple[dict[str, str], list[TelemetryMetric]]:
    """(the resource attributes, the metrics) of a MetricsData message; PayloadError if it is not one."""
    resource: dict[str, str] = {}
    metrics: list[TelemetryMetric] = []
    for number, value in _fields(memoryview(data)):
        if number == 1 and isinstance(value, memoryview):          # ResourceMetrics
            for inner, part in _fields(value):
                if inner == 1 and isinstance(part, memoryview):    # Resource
                    resource.update(_attributes(part, 1))
                elif inner == 2 and isinstance(part, memoryview):  # ScopeMetrics
                    metrics.extend(_metric(m) for n, m in _fields(part) if n == 2 and isinstance(m, memoryview))
    return resource, metrics


def _metric(view: memoryview) -> TelemetryMetric:
    metric = TelemetryMetric("", "unknown")
    for number, value in _fields(view):
        if number == 1 and isinstance(value, memoryview):
            metric.name = _text(value)
        elif number in _KINDS and isinstance(value, memoryview):
            metric.kind = _KINDS[number]
            metric.points.extend(_point(p, _COUNT_FIELD.get(number)) for n, p in _fields(value)
                                 if n == 1 and isinstance(p, memoryview))
    return metric


def _point(view: memoryview, count_field: int | None) -> tuple[dict[str, str], float]:
    """A data point's attributes and value: a number point's as_double or as_int (both fixed64
    on the wire), or a histogram's or summary's count."""
    value = 0.0
    attributes: dict[str, str] = {}
    for number, raw in _fields(view):
        if number == 7 and isinstance(raw, memoryview):
            _add_attribute(attributes, raw)
        elif count_field is None and number == 4 and isinstance(raw, bytes):
            value = _DOUBLE.unpack(raw)[0]
        elif count_field is None and number == 6 and isinstance(raw, bytes):
            value = float(_SIGNED64.unpack(raw)[0])
        elif number == count_field and isinstance(raw, bytes):
            value = float(_UNSIGNED64.unpack(raw)[0])
    return attributes, value


def _attributes(view: memoryview, number: int) -> dict[str, str]:
    """The KeyValue fields numbered ``number`` of ``view``, their values as text."""
    out: dict[str, str] = {}
    for n, kv in _fields(view):
        if n == number and isinstance(kv, memoryview):
            _add_attribute(out, kv)
    return out


def _add_attribute(out: dict[str, str], kv: memoryview) -> None:
    key, text = "", ""
    for inner, part in _fields(kv):
        if inner == 1 and isinstance(part, memoryview):
            key = _text(part)
        elif inner == 2 and isinstance(part, memoryview):
            text = _any_value(part)
    out[key] = text


def _any_value(view: memoryview) -> str:
    for number, value in _fields(view):
        if number == 1 and isinstance(value, memoryview):
            return _text(value)
        if number in (2, 3) and isinstance(value, int):
            return ("false", "true")[value != 0] if number == 2 else str(_SIGNED64.unpack(_UNSIGNED64.pack(value))[0])
        if number == 4 and isinstance(value, bytes):
            return repr(_DOUBLE.unpack(value)[0])
    return ""


def _text(view: memoryview) -> str:
    try:
        return bytes(view).decode("utf-8")
    except UnicodeDecodeError:
        raise PayloadError("a string field is not UTF-8") from None


def _fields(view: memoryview):
    """(field number, value) of each field of a protobuf message: a varint as an int, a
    length-delimited field as a memoryview of ``view``, a fixed64/fixed32 as its 8/4 bytes."""
    pos, end = 0, len(view)
    while pos < end:
        key = view[pos]
        if key < 0x80:                  # one-byte keys and lengths (nearly all): no call
            pos += 1
        else:
            key, pos = _varint(view, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise PayloadError(f"field number 0 at byte {pos}")
        if wire_type == VARINT:
            value, pos = _varint(view, pos)
        elif wire_type == LENGTH:
            if pos < end and view[pos] < 0x80:
                size, pos = view[pos], pos + 1
            else:
                size, pos = _varint(view, pos)
            if size > end - pos:
                raise PayloadError(f"a field of {size} bytes at byte {pos} runs past the end ({end})")
            value, pos = view[pos:pos + size], pos + size
        elif wire_type in (FIXED64, FIXED32):
            width = 8 if wire_type == FIXED64 else 4
            if width > end - pos:
                raise PayloadError(f"a fixed field at byte {pos} runs past the end ({end})")
            value, pos = bytes(view[pos:pos + width]), pos + width
        else:
            raise PayloadError(f"wire type {wire_type} (field {number}) is not read here")
        yield number, value


def _varint(view: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(view):
            raise PayloadError("a varint runs past the end")
        byte = view[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise PayloadError(f"a varint longer than 10 bytes ends at byte {pos}")
