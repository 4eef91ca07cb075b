"""kafkawire's error code table is Kafka's: same codes, names and retriability."""
import csv

from kafkawire.protocol.error_codes import Errors
from tests.conftest import REFERENCE, require


def test_error_codes_match_kafka():
    rows = list(csv.DictReader(open(require(REFERENCE / "kafka-schemas" / "errors.tsv")), delimiter="\t"))
    assert len(rows) == len(Errors)
    for row in rows:
        error = Errors[row["name"]]
        assert int(error) == int(row["code"]), row["name"]
        assert error.retriable == (row["retriable"] == "true"), row["name"]


def test_unknown_code_is_unknown_server_error():
    assert Errors.for_code(31_000) is Errors.UNKNOWN_SERVER_ERROR
    assert Errors.for_code(74) is Errors.FENCED_LEADER_EPOCH
