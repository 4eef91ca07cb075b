"""Metadata records as kafka-dump-log's ``--cluster-metadata-decoder`` shows them:
``{"type":"TOPIC_RECORD","version":0,"data":{...}}`` (ClusterMetadataLogMessageParser), the
data in Kafka's JsonConverter form and the whole in Jackson's compact text.

Decoding is a pure function of the value bytes, so results are cached by value: a metadata
log is mostly identical NoOpRecords, which then cost one dictionary lookup each.
"""
from __future__ import annotations

from .frame import MetadataRecordError, decode_metadata_record
from .java_text import jackson_json

__all__ = ["record_type_name", "MetadataPayload", "decode_payload", "PayloadDecoder"]


def record_type_name(message_name: str) -> str:
    """MetadataRecordType's enum name for a record class: Kafka's generator writes
    ``toSnakeCase(name).toUpperCase()``, an underscore before each capital that follows a
    lower-case letter (``NoOpRecord`` -> ``NO_OP_RECORD``)."""
    out = []
    previous_was_capital = True
    for ch in message_name:
        if ch.isupper():
            if not previous_was_capital:
                out.append("_")
            out.append(ch)
            previous_was_capital = True
        else:
            out.append(ch.upper())
            previous_was_capital = False
    return "".join(out)


def _holds_floats(cls, seen=None) -> bool:
    """Whether a message (or any struct inside it) has a float64 field."""
    seen = set() if seen is None else seen
    if cls in seen:
        return False
    seen.add(cls)
    for f in cls._FIELDS:
        if f.kind == "float64" or f.element == "float64":
            return True
        if f.struct is not None and _holds_floats(f.struct, seen):
            return True
    return False


class MetadataPayload:
    """One decoded value: ``obj`` is the dict kafka-dump-log builds, ``text`` its JSON; on
    failure ``error`` says why and both are None."""

    __slots__ = ("obj", "text", "error", "record")

    def __init__(self, obj, text, error, record):
        self.obj = obj
        self.text = text
        self.error = error
        self.record = record


_FLOATS: dict[type, bool] = {}


def decode_payload(value) -> MetadataPayload:
    if value is None:
        return MetadataPayload(None, None, "metadata record has a null value", None)
    try:
        record = decode_metadata_record(value)
    except MetadataRecordError as exc:
        return MetadataPayload(None, None, str(exc), None)
    cls = type(record.message)
    floats = _FLOATS.get(cls)
    if floats is None:
        floats = _FLOATS[cls] = _holds_floats(cls)
    obj = {"type": record_type_name(cls.NAME), "version": record.version,
           "data": record.message.to_json(record.version)}
    return MetadataPayload(obj, jackson_json(obj, may_hold_floats=floats), None, record)


class PayloadDecoder:
    """``decode_payload`` with a bounded cache keyed by the value bytes."""

    def __init__(self, max_entries: int = 4096):
        self._cache: dict[bytes, MetadataPayload] = {}
        self._max = max_entries

    def __call__(self, value) -> MetadataPayload:
        if value is None:
            return decode_payload(None)
        key = bytes(value)
        hit = self._cache.get(key)
        if hit is None:
            hit = decode_payload(key)
            if len(self._cache) >= self._max:
                self._cache.clear()
            self._cache[key] = hit
        return hit
