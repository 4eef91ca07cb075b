"""--decode-records: the record batches inside Produce, Fetch and ShareFetch bodies, and the records
of Kafka's internal topics (__cluster_metadata, __consumer_offsets, __transaction_state,
__share_group_state) decoded with our schemas."""
from __future__ import annotations

import struct
from functools import lru_cache

from kafkawire import messages
from kafkawire.records import iter_batches
from kafkawire.metadata.frame import decode_metadata_record

# Internal topic -> the folder of schemas/coordinators its records come from.
COORDINATOR_TOPICS = {
    "__consumer_offsets": "group-coordinator",
    "__transaction_state": "transaction-coordinator",
    "__share_group_state": "share-coordinator",
}
METADATA_TOPIC = "__cluster_metadata"


@lru_cache(maxsize=None)
def coordinator_classes() -> dict[tuple[str, str, int], type]:
    """(folder, "coordinator-key" | "coordinator-value", record type) -> class."""
    table = {}
    for name, _, kind, api_key in messages.REGISTRY.index:
        if kind in ("coordinator-key", "coordinator-value"):
            cls = messages.by_name(name)
            table[(cls.SCHEMA.split("/")[-2], kind, api_key)] = cls
    return table


def decode_coordinator_record(topic: str, key, value) -> dict:
    """Key and value of an internal coordinator topic's record, in JsonConverter form."""
    folder = COORDINATOR_TOPICS[topic]
    key = bytes(key or b"")
    if len(key) < 2:
        return {"error": f"key of {len(key)} bytes: no record type"}
    record_type = struct.unpack_from(">h", key)[0]
    key_cls = coordinator_classes().get((folder, "coordinator-key", record_type))
    if key_cls is None:
        return {"error": f"record type {record_type} is not one of {topic}'s"}
    out = {"type": record_type, "key": key_cls.decode(key[2:], 0).to_json(0), "keyType": key_cls.NAME}
    if value is None:
        out["value"] = None           # a tombstone: the key is deleted
        return out
    value = bytes(value)
    value_cls = coordinator_classes()[(folder, "coordinator-value", record_type)]
    version = struct.unpack_from(">h", value)[0]
    out.update(valueType=value_cls.NAME, valueVersion=version,
               value=value_cls.decode(value[2:], version).to_json(version))
    return out


def _record_json(topic: str | None, record) -> dict:
    out = {"offset": record.offset, "timestamp": record.timestamp}
    try:
        if topic in COORDINATOR_TOPICS:
            out.update(decode_coordinator_record(topic, record.key, record.value))
            return out
        if topic == METADATA_TOPIC and record.value is not None and not record.batch.is_control:
            decoded = decode_metadata_record(record.value)
            out.update(type=decoded.type_name, version=decoded.version,
                       data=decoded.message.to_json(decoded.version))
            return out
    except Exception as exc:         # a bad record is reported in place; the others still decode
        out["error"] = str(exc) or type(exc).__name__
    out["key"] = None if record.key is None else _text(record.key)
    out["value"] = None if record.value is None else _text(record.value)
    return out


def _text(data) -> str:
    raw = bytes(data)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + raw.hex()


def decode_batches(topic: str | None, data) -> list[dict]:
    """Every batch of a records field: its header, and each record."""
    out = []
    try:
        for batch in iter_batches(bytes(data)):
            records = [_record_json(topic, r) for r in batch]
            out.append({"baseOffset": batch.base_offset, "records": records,
                        "producerId": getattr(batch, "producer_id", -1),
                        "isControl": bool(getattr(batch, "is_control", False))})
    except Exception as exc:         # a corrupt batch ends this field's listing, with the reason
        out.append({"error": str(exc) or type(exc).__name__})
    return out


def records_of(body, version: int, topic: str | None = None) -> list[dict]:
    """Every non-null records field in a decoded body, with the topic of its enclosing struct."""
    found = []
    for f in type(body)._FIELDS:
        if not f.present(version):
            continue
        value = getattr(body, f.py_name)
        if f.py_name in ("name", "topic", "topic_name") and isinstance(value, str):
            topic = value
        if f.kind == "records" and value is not None:
            found.append({"topic": topic, "field": f.py_name, "batches": decode_batches(topic, value)})
        elif f.kind == "struct" and value is not None:
            found += records_of(value, version, topic)
        elif f.kind == "array" and f.element == "struct" and value:
            for item in value:
                found += records_of(item, version, topic)
    return found
