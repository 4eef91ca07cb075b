"""Metadata records as kafka-dump-log's ``--cluster-metadata-decoder`` shows them:
``{"type":"TOPIC_RECORD","version":0,"data":{...}}`` (ClusterMetadataLogMessageParser), the
data in Kafka's JsonConverter form and the whole in Jackson's compact text.

Decoding is a pure function of the value bytes, so results are cached by value: a metadata
log is mostly identical NoOpRecords, which then cost one dictionary lookup each.
"""
from __future__ import annotations

from .fast_json import json_object, json_text
from .frame import FRAME_VERSION, MetadataRecord, MetadataRecordError, decode_metadata_record
from kafkawire import messages

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


_TYPE_NAMES: dict[type, str] = {}


def _type_name(cls) -> str:
    name = _TYPE_NAMES.get(cls)
    if name is None:
        name = _TYPE_NAMES[cls] = record_type_name(cls.NAME)
    return name


class MetadataPayload:
    """One decoded value: ``record`` (a MetadataRecord) and, computed on first use, ``obj``
    (the dict kafka-dump-log builds) and ``text`` (its JSON); on failure ``error`` says why
    and the others are None."""

    __slots__ = ("record", "error", "_obj", "_text")

    def __init__(self, record, error):
        self.record = record
        self.error = error
        self._obj = self._text = None

    @property
    def obj(self):
        if self._obj is None and self.record is not None:
            r = self.record
            self._obj = {"type": _type_name(type(r.message)), "version": r.version,
                         "data": json_object(r.message, r.version)}
        return self._obj

    @property
    def text(self):
        if self._text is None and self.record is not None:
            r = self.record
            self._text = (f'{{"type":"{_type_name(type(r.message))}","version":{r.version},'
                          f'"data":{json_text(r.message, r.version)}}}')
        return self._text


_CLASSES: dict[int, type | None] = {}


def _record_class(api_key: int):
    cls = _CLASSES.get(api_key, False)
    if cls is False:
        try:
            cls = messages.metadata_record(api_key)
        except KeyError:
            cls = None
        _CLASSES[api_key] = cls
    return cls


def _fast_decode(data: bytes):
    """The common frame (three one-byte varints) decoded without the general path's checks;
    None sends the value to ``decode_metadata_record`` for the full rules and error text."""
    if len(data) < 3 or data[0] != FRAME_VERSION or data[1] >= 0x80 or data[2] >= 0x80:
        return None
    cls = _record_class(data[1])
    if cls is None:
        return None
    decoder = cls._DECODERS.get(data[2])
    if decoder is None:
        return None
    try:
        message, end = decoder(data, 3)
    except Exception:
        return None
    if end != len(data):
        return None
    return MetadataRecord(data[1], data[2], message)


def decode_payload(value) -> MetadataPayload:
    if value is None:
        return MetadataPayload(None, "metadata record has a null value")
    data = bytes(value)
    record = _fast_decode(data)
    if record is None:
        try:
            record = decode_metadata_record(data)
        except MetadataRecordError as exc:
            return MetadataPayload(None, str(exc))
    return MetadataPayload(record, None)


class PayloadDecoder:
    """``decode_payload`` with a bounded cache for short values, keyed by their bytes.

    Only short values repeat in practice (NoOpRecord, registration changes); caching the long,
    unique ones would only cost time.
    """

    MAX_CACHED_VALUE = 48

    def __init__(self, max_entries: int = 4096):
        self._cache: dict[bytes, MetadataPayload] = {}
        self._max = max_entries

    def __call__(self, value) -> MetadataPayload:
        if value is None or len(value) > self.MAX_CACHED_VALUE:
            return decode_payload(value)
        key = bytes(value)
        hit = self._cache.get(key)
        if hit is None:
            hit = decode_payload(key)
            if len(self._cache) >= self._max:
                self._cache.clear()
            self._cache[key] = hit
        return hit
