"""Record batch vectors for test_codec_vectors: ours (kafkawire.records) against Kafka 4.3.1's
MemoryRecordsBuilder and MemoryRecords.

A spec is the JSON request CodecVectors' build_batch takes (RecordBatches.java): header fields
and records, or one control record. Both sides build a batch from it; then

- uncompressed and control batches: our bytes equal Kafka's;
- compressed batches (codec output legitimately differs between compressor implementations):
  each side reads the other's batch to the same header fields and records;
- always: Kafka and we read the same bytes (ours and Kafka's) to the same view, CRC included,
  and that view holds exactly the spec's records.
"""
from __future__ import annotations

from hypothesis import strategies as st

from kafkawire import messages
from kafkawire.records import iter_batches
from kafkawire.records.batch import CREATE_TIME, LOG_APPEND_TIME, RecordBatchBuilder, build_control_batch, \
    build_end_txn_marker_batch
from kafkawire.records.compression import CODEC_NAMES
from kafkawire.records.control import ControlRecordType
from kafkawire.records.kraft_control import VALUE_MESSAGES, encode_value
from tests.codec.strategies import instances, without_unknown_tags
from tests.interop.codec_oracle import ask, expect, hex_diff

CODECS = {name: codec for codec, name in CODEC_NAMES.items()}
KRAFT_CONTROL_TYPES = [t.name for t in VALUE_MESSAGES]
DELETE_HORIZON = "none, with a delete horizon"      # as the log cleaner rewrites a batch
BATCH_KINDS = [*CODECS, DELETE_HORIZON] + [f"control {name}" for name in (*KRAFT_CONTROL_TYPES, "COMMIT", "ABORT")]
# ControlRecordUtils' *_CURRENT_VERSION: MemoryRecordsBuilder writes every KRaft control value at 0.
CONTROL_VALUE_VERSION = 0
INT32_MAX = 2**31 - 1

_bytes = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=1, max_size=4).map(lambda b: b * 50))


@st.composite
def _records(draw, base_offset):
    base_timestamp = draw(st.integers(0, 2**41))
    records, offset = [], base_offset
    for _ in range(draw(st.integers(1, 5))):
        headers = draw(st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))),
                                max_size=2))
        records.append({"offset": offset, "timestamp": base_timestamp + draw(st.integers(-base_timestamp, 10**6)),
                        "key": _hex(draw(_bytes)), "value": _hex(draw(_bytes)),
                        "headers": [[k, _hex(v)] for k, v in headers]})
        offset += draw(st.integers(1, 3))       # Kafka's builder takes gaps in the offsets
    return records


def _hex(value):
    return None if value is None else value.hex()


@st.composite
def _producer(draw, transactional=None):
    if transactional is None and not draw(st.booleans()):
        return {"producerId": -1, "producerEpoch": -1, "baseSequence": -1, "transactional": False}
    return {"producerId": draw(st.integers(0, 2**63 - 1)), "producerEpoch": draw(st.integers(0, 2**15 - 1)),
            "baseSequence": draw(st.integers(0, INT32_MAX)) if transactional is None else -1,
            "transactional": draw(st.booleans()) if transactional is None else transactional}


@st.composite
def batch_specs(draw, kind):
    spec = {"baseOffset": draw(st.integers(0, 2**50)),
            "partitionLeaderEpoch": draw(st.one_of(st.just(-1), st.integers(0, INT32_MAX))),
            "compression": "none", "timestampType": "create", "logAppendTime": -1}
    if kind in CODECS or kind == DELETE_HORIZON:
        spec.update(draw(_producer()), compression=kind if kind in CODECS else "none", control=False,
                    records=draw(_records(spec["baseOffset"])))
        if kind == DELETE_HORIZON:
            spec["deleteHorizonMs"] = draw(st.integers(0, 2**41))
        elif draw(st.booleans()):
            spec.update(timestampType="log_append", logAppendTime=draw(st.integers(0, 2**41)))
        return spec
    control_type = kind.split()[1]
    control = {"type": control_type, "timestamp": draw(st.integers(0, 2**41))}
    if control_type in ("COMMIT", "ABORT"):
        spec.update(draw(_producer(transactional=True)))
        control["coordinatorEpoch"] = draw(st.integers(-2**31, INT32_MAX))
    else:
        cls = messages.by_name(VALUE_MESSAGES[ControlRecordType[control_type]])
        message = without_unknown_tags(draw(instances(cls, CONTROL_VALUE_VERSION)))
        # The Version field is data: Kafka writes and reads the value at 0 whatever it says.
        message.version = draw(st.one_of(st.just(CONTROL_VALUE_VERSION), st.integers(-2**15, 2**15 - 1)))
        control["json"] = message.to_json(CONTROL_VALUE_VERSION)
        if control_type == "LEADER_CHANGE":      # Kafka refuses a leader change without an epoch
            spec["partitionLeaderEpoch"] = draw(st.integers(0, INT32_MAX))
    spec.update(control=True, controls=[control])
    return spec


def build_ours(spec) -> bytes:
    fields = dict(base_offset=spec["baseOffset"], partition_leader_epoch=spec["partitionLeaderEpoch"])
    if spec["control"]:
        control = spec["controls"][0]
        if control["type"] in ("COMMIT", "ABORT"):
            return build_end_txn_marker_batch(control["type"] == "COMMIT", producer_id=spec["producerId"],
                                              producer_epoch=spec["producerEpoch"],
                                              coordinator_epoch=control["coordinatorEpoch"],
                                              timestamp=control["timestamp"], **fields)
        cls = messages.by_name(VALUE_MESSAGES[ControlRecordType[control["type"]]])
        value = encode_value(cls.from_json(control["json"], CONTROL_VALUE_VERSION))
        return build_control_batch(ControlRecordType[control["type"]], value, timestamp=control["timestamp"], **fields)
    log_append = spec["timestampType"] == "log_append"
    builder = RecordBatchBuilder(
        **fields, compression_type=CODECS[spec["compression"]],
        timestamp_type=LOG_APPEND_TIME if log_append else CREATE_TIME, is_transactional=spec["transactional"],
        producer_id=spec["producerId"], producer_epoch=spec["producerEpoch"], base_sequence=spec["baseSequence"],
        max_timestamp=spec["logAppendTime"] if log_append else None,
        has_delete_horizon="deleteHorizonMs" in spec, base_timestamp=spec.get("deleteHorizonMs"))
    for record in spec["records"]:
        builder.append(_unhex(record["key"]), _unhex(record["value"]),
                       [(k, _unhex(v)) for k, v in record["headers"]], record["timestamp"],
                       offset_delta=record["offset"] - spec["baseOffset"])
    return builder.build()


def _unhex(text):
    return None if text is None else bytes.fromhex(text)


def _control_view(record):
    key = record.control_key
    out = {"type": key.name}
    value = record.control_value
    if key.type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        out["coordinatorEpoch"] = value.coordinator_epoch
    else:
        out["json"] = value.to_json(CONTROL_VALUE_VERSION)
    return out


def python_view(data: bytes) -> list[dict]:
    """Our reading of batches, in the form of CodecVectors' read_batches answer."""
    batches = []
    iterator = iter_batches(data)
    for batch in iterator:
        records = []
        for record in batch:
            view = {"offset": record.offset, "timestamp": record.timestamp,
                    "key": _hex(None if record.key is None else bytes(record.key)),
                    "value": _hex(None if record.value is None else bytes(record.value)),
                    "headers": [[k, _hex(None if v is None else bytes(v))] for k, v in record.headers]}
            if batch.is_control:
                view["control"] = _control_view(record)
            records.append(view)
        batches.append({
            "baseOffset": batch.base_offset, "lastOffset": batch.last_offset,
            "partitionLeaderEpoch": batch.partition_leader_epoch, "magic": batch.magic, "crc": batch.crc,
            "compression": CODEC_NAMES[batch.compression_type],
            "timestampType": "log_append" if batch.timestamp_type == LOG_APPEND_TIME else "create",
            "maxTimestamp": batch.max_timestamp, "producerId": batch.producer_id,
            "producerEpoch": batch.producer_epoch, "baseSequence": batch.base_sequence,
            "transactional": batch.is_transactional, "control": batch.is_control,
            "deleteHorizonMs": batch.delete_horizon_ms,
            "sizeInBytes": batch.size_in_bytes, "records": records})
    expect(iterator.tail is None, lambda: f"a torn batch at the end: {iterator.tail}")
    return batches


def spec_records(spec) -> list[dict]:
    """The records a batch built from ``spec`` must read back as (Java's Record view)."""
    if spec["control"]:
        return [{"offset": spec["baseOffset"], "timestamp": c["timestamp"], "control": c} for c in spec["controls"]]
    log_append = spec["timestampType"] == "log_append"
    return [dict(r, timestamp=spec["logAppendTime"] if log_append else r["timestamp"]) for r in spec["records"]]


def _comparable(record: dict) -> dict:
    """A record as both views and the spec can show it: a control record by its decoded key and
    value (raw key and value bytes are what the spec does not spell out)."""
    if "control" not in record:
        return record
    control = {k: v for k, v in record["control"].items() if k != "timestamp"}
    return {"offset": record["offset"], "timestamp": record["timestamp"], "control": control}


def check_batch_example(oracle, kind: str, spec: dict) -> None:
    ours = build_ours(spec)
    kafka = bytes.fromhex(ask(oracle, {"op": "build_batch", **spec}, f"build a {kind} batch")["hex"])
    if spec["compression"] == "none":
        expect(ours == kafka, lambda: f"{kind} batch: our bytes differ from MemoryRecordsBuilder's: "
               + hex_diff(ours, kafka))
    views = {}
    for side, data in (("our", ours), ("Kafka's", kafka)):
        kafka_view = ask(oracle, {"op": "read_batches", "hex": data.hex()}, f"read {side} {kind} batch")["batches"]
        our_view = python_view(data)
        expect(our_view == kafka_view, lambda: f"{kind}: Kafka and we read {side} batch differently: "
               f"ours {our_view}, Kafka {kafka_view}")
        expect(len(our_view) == 1, lambda: f"{kind}: {side} bytes hold {len(our_view)} batches")
        got = [_comparable(r) for r in our_view[0]["records"]]
        want = [_comparable(r) for r in spec_records(spec)]
        expect(got == want, lambda: f"{kind}: {side} batch holds other records: {got} != {want}")
        views[side] = {k: v for k, v in our_view[0].items() if k not in ("crc", "sizeInBytes")}
    ours_view, kafka_view = views["our"], views["Kafka's"]
    expect(ours_view == kafka_view, lambda: f"{kind}: the two batches differ: ours {ours_view}, Kafka's {kafka_view}")
