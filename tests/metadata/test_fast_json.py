"""The compiled JSON forms (kafkawire.metadata.fast_json) equal the interpreter's to_json and
Jackson's text, on every metadata record of the reference samples and on tricky messages."""
from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kafkawire import messages
from kafkawire.metadata import decode_metadata_record, encode_metadata_record
from kafkawire.metadata.fast_json import json_object, json_text
from kafkawire.metadata.java_text import iso_zoned_utc, jackson_json, java_double
from kafkawire.metadata.record_json import PayloadDecoder, decode_payload, record_type_name
from kafkawire.records import iter_batches
from tests.conftest import REFERENCE as SHARED_REFERENCE

KRAFT_DATA = SHARED_REFERENCE / "kraft-data"


def both_forms_agree(message, version):
    expected = message.to_json(version)
    assert json_object(message, version) == expected
    assert json_text(message, version) == jackson_json(expected)
    assert json.loads(json_text(message, version)) == json.loads(json.dumps(expected))


def test_every_sample_record():
    if not KRAFT_DATA.is_dir():
        pytest.skip(f"reference material not available: {KRAFT_DATA} is missing")
    assert both_forms_agree_on_every_metadata_record(KRAFT_DATA) > 100_000


def both_forms_agree_on_every_metadata_record(root: Path) -> int:
    """both_forms_agree on every metadata record of the metadata logs and snapshots under root
    (tests/interop/test_held_out_claims_on_kafka_data.py runs it on data Kafka wrote in the run);
    returns how many."""
    seen = 0
    for path in sorted(root.rglob("*")):
        if not (path.parent.name == "__cluster_metadata-0" or path.name == "bootstrap.checkpoint"):
            continue
        if not (path.suffix == ".log" or path.name.endswith(".checkpoint")):
            continue
        for batch in iter_batches(path.read_bytes()):
            if batch.is_control:
                continue
            for record in batch:
                try:
                    decoded = decode_metadata_record(record.value)
                except ValueError:
                    continue   # the pre-release PartitionRecord v1 of apache__kafka's samples
                both_forms_agree(decoded.message, decoded.version)
                seen += 1
    return seen


def test_floats_nulls_escapes_and_tagged_fields():
    quota = messages.by_name("ClientQuotaRecord").from_json(
        {"entity": [{"entityType": "user", "entityName": None}, {"entityType": "client-id", "entityName": "a\u0001\"b"}],
         "key": "producer_byte_rate", "value": 1e7, "remove": False}, 0)
    both_forms_agree(quota, 0)
    assert '"value":1.0E7' in json_text(quota, 0)
    assert '"entityName":"a\\u0001\\"b"' in json_text(quota, 0)
    change = messages.by_name("PartitionChangeRecord")(partition_id=3, topic_id=uuid.uuid4(), isr=[1, 2],
                                                        eligible_leader_replicas=[], directories=None)
    for version in (0, 1, 2):
        both_forms_agree(change, version)
    assert '"leader"' not in json_text(change, 2)          # tagged and at its default (-2)
    assert '"eligibleLeaderReplicas":[]' in json_text(change, 2)
    broker = messages.by_name("RegisterBrokerRecord")(broker_id=1, rack=None, log_dirs=[uuid.uuid4()])
    for version in range(5):
        both_forms_agree(broker, version)
    scram = messages.by_name("UserScramCredentialRecord")(name="alice", mechanism=1, salt=b"\x00\xff",
                                                          stored_key=b"k", server_key=b"s", iterations=4096)
    both_forms_agree(scram, 0)
    assert '"salt":"AP8="' in json_text(scram, 0)


@pytest.mark.parametrize("value,text", [
    (1.0, "1.0"), (0.5, "0.5"), (1e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"),
    (0.0001, "1.0E-4"), (123.456, "123.456"), (-2.5e-5, "-2.5E-5"), (1048576.0, "1048576.0"),
    (12345678.9, "1.23456789E7"), (0.0, "0.0"), (-0.0, "-0.0"), (float("inf"), "Infinity"),
    (float("nan"), "NaN"), (1e22, "1.0E22"),
])
def test_java_double(value, text):
    # Expected texts follow the rules of Java's Double.toString (JDK 19+ shortest digits).
    assert java_double(value) == text


def test_iso_zoned_utc():
    # DateTimeFormatter.ISO_ZONED_DATE_TIME in ZoneId.of("UTC"): no fraction when it is zero.
    assert iso_zoned_utc(0) == "1970-01-01T00:00:00Z[UTC]"
    assert iso_zoned_utc(1713532844123) == "2024-04-19T13:20:44.123Z[UTC]"
    assert iso_zoned_utc(1713532844100) == "2024-04-19T13:20:44.1Z[UTC]"


def test_record_type_names():
    # MetadataRecordType's constants in Kafka's metadata module.
    assert record_type_name("NoOpRecord") == "NO_OP_RECORD"
    assert record_type_name("ZkMigrationStateRecord") == "ZK_MIGRATION_STATE_RECORD"
    assert record_type_name("BrokerRegistrationChangeRecord") == "BROKER_REGISTRATION_CHANGE_RECORD"


def test_payload_decoder_cache_and_errors():
    value = encode_metadata_record(messages.by_name("NoOpRecord")(), 0)
    decoder = PayloadDecoder()
    assert decoder(value) is decoder(memoryview(value))
    assert decoder(value).text == '{"type":"NO_OP_RECORD","version":0,"data":{}}'
    assert decode_payload(None).error == "metadata record has a null value"
    assert "unknown metadata record type 99" in decode_payload(bytes([1, 99, 0])).error
    long_value = value + b"\x00"     # a byte left over after the record
    assert decode_payload(long_value).error is not None



@given(st.floats(allow_nan=False, allow_infinity=False))
@settings(max_examples=500)
def test_java_double_round_trips_in_java_grammar(value):
    text = java_double(value)
    assert float(text) == value
    magnitude = abs(value)
    if value == 0 or 1e-3 <= magnitude < 1e7:
        assert re.fullmatch(r"-?\d+\.\d+", text), text          # plain decimal, a digit after the point
    else:
        assert re.fullmatch(r"-?\d\.\d+E-?\d+", text), text     # d.ddddE±n
