"""kafkawire's error code table is Kafka's: same codes, names, retriability and default messages.

The references are Kafka 4.3.1's Errors (from its kafka-clients jar, tests/kafka_schemas.py) and
trunk's, whose codes kafkawire also knows: rebuilt from the jar's and tests/data/kafka-trunk, and,
when ../shared is present, its held-out errors.tsv."""
import csv

import pytest

from kafkawire.protocol.error_codes import Errors
from tests import kafka_schemas, kafka_trunk_record
from tests.conftest import unavailable


def kafka_errors(source: str) -> list[dict]:
    """The rows of Kafka's errors.tsv from ``source``: the 4.3.1 jar, trunk's rebuilt from the jar
    and tests/data/kafka-trunk (tests/kafka_trunk_record.py), or ../shared's held-out trunk copy."""
    if source == "Kafka trunk (record)":
        path = kafka_trunk_record.references("record")[0] / "errors.tsv"
    elif source == "Kafka trunk (../shared)":
        path = kafka_trunk_record.references("shared")[0] / "errors.tsv"
    else:
        tables = kafka_schemas.errors_tables()
        if source not in tables:
            unavailable(kafka_schemas.why())
        path = tables[source]
    with open(path, encoding="utf-8") as table:
        return list(csv.DictReader(table, delimiter="\t"))


@pytest.mark.parametrize("source", ["Kafka 4.3.1", "Kafka trunk (record)", "Kafka trunk (../shared)"])
def test_error_codes_match_kafka(source):
    rows = kafka_errors(source)
    if source.startswith("Kafka trunk"):
        assert len(rows) == len(Errors)
    assert len(rows) > 130
    for row in rows:
        error = Errors[row["name"]]
        assert int(error) == int(row["code"]), row["name"]
        assert error.retriable == (row["retriable"] == "true"), row["name"]


def test_default_messages_are_kafka_4_3_1s():
    """A client shows an error's default message when the response has none: it must be Kafka 4.3.1's."""
    rows = kafka_errors("Kafka 4.3.1")
    wrong = {row["name"]: (Errors[row["name"]].message, row["default_message"]) for row in rows
             if row["name"] != "NONE" and Errors[row["name"]].message != row["default_message"]}
    assert not wrong, f"default messages that differ from Kafka 4.3.1's (ours, Kafka's): {wrong}"


def test_fenced_state_epoch_message_is_kafka_4_3_1s_not_trunks():
    """Kafka 4.3.1's Errors.FENCED_STATE_EPOCH names the share coordinator (trunk later made it
    general); the test above checks every message against the jar, this one runs without Java."""
    assert Errors.FENCED_STATE_EPOCH.message == \
        "The share coordinator rejected the request because the share-group state epoch did not match."


def test_unknown_code_is_unknown_server_error():
    assert Errors.for_code(31_000) is Errors.UNKNOWN_SERVER_ERROR
    assert Errors.for_code(74) is Errors.FENCED_LEADER_EPOCH
