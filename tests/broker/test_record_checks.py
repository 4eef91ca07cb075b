"""The record rules of a produced batch (kafkawire.broker.record_checks), as Kafka 4.3.1's
LogValidator.validateRecord applies them and ReplicaManager answers them (RecordValidationException):
the timestamp bounds, a key on a compacted topic, no LogAppendTime from a producer; each with
Kafka's partition error, ``error_message`` and ``record_errors``. Every rule runs through both
the C fast path and the pure oracle (``path``); one test sends a raw ProduceRequest to the
session's embedded broker."""
from __future__ import annotations

import struct
import time
from types import SimpleNamespace

import pytest
from crc32c import crc32c

from kafkawire import _native
from kafkawire.broker.produce import record_rules
from kafkawire.broker.record_checks import LONG_MAX, RecordErrors, RecordRules
from kafkawire.broker.validation import validate_produce
from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import GZIP
from kafkawire.records.batch import LOG_APPEND_TIME
from kafkawire.records.builder import build_batch

from .wire import call      # a raw request to the session's broker

# The session's embedded broker (kafkawire_broker), shared with the other wire tests.
pytest_plugins = ["kafkawire.testing.pytest_plugin"]

NOW = 1_800_000_000_000
HOUR = 3_600_000
TIMESTAMP_TEXT = "One or more records have been rejected due to invalid timestamp"


@pytest.fixture(params=["native", "pure"])
def path(request, monkeypatch):
    """The C record parser's fast path, or the pure oracle alone."""
    if request.param == "native":
        if _native.records is None:
            pytest.skip("the C extension is not built")
    else:
        monkeypatch.setattr(_native, "records", None)
    return request.param


@pytest.mark.parametrize("c_bounds", [True, False])
def test_the_bounds_of_the_timestamp_column_are_its_min_and_max(monkeypatch, c_bounds):
    # all_pass takes the C parser's timestamp column: its (min, max) in C, or by min and max.
    from array import array
    from kafkawire.broker import record_checks
    if c_bounds and _native.records is None:
        pytest.skip("the C extension is not built")
    bounds = _native.records.int64_bounds if c_bounds else record_checks._int64_bounds_in_python
    monkeypatch.setattr(record_checks, "_int64_bounds", bounds)
    for values in ([5], [3, -7, 2**63 - 1, 0], [-2**63, 4], list(range(1000, 0, -3))):
        column = array("q", values).tobytes()
        assert bounds(column) == (min(values), max(values))
        assert bounds(memoryview(column)) == (min(values), max(values))
    rules = RecordRules(now_ms=NOW, before_max_ms=10, after_max_ms=10)
    assert rules.all_pass(False, array("q", [NOW - 10, NOW + 10, NOW]).tobytes(), 0)
    assert not rules.all_pass(False, array("q", [NOW, NOW - 11, NOW]).tobytes(), 0)
    assert not rules.all_pass(False, array("q", [NOW, NOW + 11, NOW]).tobytes(), 0)
    assert rules.all_pass(False, b"", 0)


def test_the_bounds_are_the_extensions_when_it_runs():
    from kafkawire.broker import record_checks
    expected = record_checks._int64_bounds_in_python if _native.records is None else _native.records.int64_bounds
    assert record_checks._int64_bounds is expected


def refused(data, rules: RecordRules) -> RecordErrors:
    with pytest.raises(RecordErrors) as info:
        validate_produce(data, topic_partition="t-0", max_message_bytes=1048588, now_ms=NOW,
                         log_append_time=not rules.create_time, rules=rules)
    return info.value


def taken(data, rules: RecordRules) -> int:
    return validate_produce(data, topic_partition="t-0", max_message_bytes=1048588, now_ms=NOW,
                            log_append_time=not rules.create_time, rules=rules).records


def test_a_timestamp_more_than_after_max_ms_ahead_is_invalid_timestamp_with_kafkas_record_error(path):
    data = build_batch([(b"a", b"1", [], NOW), (b"b", b"2", [], NOW + HOUR + 1), (b"c", b"3", [], NOW + HOUR)])
    error = refused(data, RecordRules(now_ms=NOW))
    assert (error.code, str(error)) == (Errors.INVALID_TIMESTAMP, TIMESTAMP_TEXT)
    assert error.errors == [(1, f"Timestamp {NOW + HOUR + 1} of message with offset 1 is out of range. The timestamp "
                                f"should be within [{NOW - LONG_MAX}, {NOW + HOUR}]")]


@pytest.mark.parametrize("compression", [0, GZIP])
def test_a_timestamp_more_than_before_max_ms_behind_is_invalid_timestamp_and_the_bound_itself_passes(path, compression):
    rules = RecordRules(now_ms=NOW, before_max_ms=1000, after_max_ms=0)
    assert taken(build_batch([(b"a", b"1", [], NOW - 1000), (b"b", b"2", [], NOW)],
                             compression_type=compression), rules) == 2
    error = refused(build_batch([(b"a", b"1", [], NOW - 1001)], compression_type=compression), rules)
    assert error.errors == [(0, f"Timestamp {NOW - 1001} of message with offset 0 is out of range. The timestamp "
                                f"should be within [{NOW - 1000}, {NOW}]")]


def test_records_without_a_timestamp_and_log_append_time_topics_skip_the_bounds(path):
    assert taken(build_batch([(b"a", b"1", [], -1)] * 3), RecordRules(now_ms=NOW, before_max_ms=0, after_max_ms=0)) == 3
    assert taken(build_batch([(b"a", b"1", [], 0)]), RecordRules(now_ms=NOW, create_time=False, before_max_ms=0)) == 1


def test_the_bounds_in_the_text_wrap_as_javas_longs(path):
    error = refused(build_batch([(b"a", b"1", [], NOW - 1)]),
                    RecordRules(now_ms=NOW, before_max_ms=0, after_max_ms=LONG_MAX))
    assert error.errors[0][1].endswith(f"should be within [{NOW}, {NOW + LONG_MAX - 2 ** 64}]")


def test_a_timestamp_past_int64_wraps_as_javas_sum_of_base_and_delta(path):
    """The C parser saturates such a sum; the oracle then names the record with Java's value."""
    data = bytearray(build_batch([(b"a", b"1", [], 0), (b"b", b"2", [], 1 << 62)]))
    struct.pack_into(">q", data, 27, 1 << 62)                 # base timestamp: the second record passes int64
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    error = refused(bytes(data), RecordRules(now_ms=NOW))
    assert [message.split(" of ")[0] for _, message in error.errors] == [f"Timestamp {1 << 62}",
                                                                         f"Timestamp {-(1 << 63)}"]


def test_a_compacted_topic_refuses_records_without_a_key_listing_the_first_three_errors(path):
    data = build_batch([(None, b"1"), (b"k", b"2"), (None, b"3"), (None, b"4"), (None, None)])
    error = refused(data, RecordRules(now_ms=NOW, compacted=True))
    text = "Compacted topic cannot accept message without key in topic partition t-0"
    assert error.code == Errors.INVALID_RECORD
    assert error.errors == [(0, text), (2, text), (3, text), (4, text)]
    assert str(error) == ("One or more records have been rejected due to 4 record errors in total, and only showing "
                          f"the first three errors at most: [RecordError(batchIndex=0, message='{text}'), "
                          f"RecordError(batchIndex=2, message='{text}'), RecordError(batchIndex=3, message='{text}')]")
    assert taken(data, RecordRules(now_ms=NOW)) == 5          # the same batch is fine on a topic that is not compacted


def test_a_missing_key_is_a_records_first_error_and_any_bad_timestamp_makes_the_partition_invalid_timestamp(path):
    data = build_batch([(None, b"1", [], NOW + 2 * HOUR), (b"k", b"2", [], NOW + 2 * HOUR)])
    error = refused(data, RecordRules(now_ms=NOW, compacted=True))
    assert (error.code, str(error)) == (Errors.INVALID_TIMESTAMP, TIMESTAMP_TEXT)
    assert [(index, message.split(" ")[0]) for index, message in error.errors] == [(0, "Compacted"), (1, "Timestamp")]


def test_a_producer_may_not_set_log_append_time(path):
    data = build_batch([(b"ke", b"val", [], NOW)], timestamp_type=LOG_APPEND_TIME)
    error = refused(data, RecordRules(now_ms=NOW, create_time=False))
    assert error.errors == [(0, f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW}, key=2 "
                                "bytes, value=3 bytes). Producer should not set timestamp type to LogAppendTime.")]
    # On a CreateTime topic the batch's max timestamp is each record's, checked against the bounds;
    # without one (-1) it is the same error.
    assert taken(data, RecordRules(now_ms=NOW)) == 1
    no_time = build_batch([(b"ke", b"val", [], NOW)], timestamp_type=LOG_APPEND_TIME, max_timestamp=-1)
    assert refused(no_time, RecordRules(now_ms=NOW)).errors[0][1].startswith("Invalid timestamp type in message")


def test_the_rules_come_from_the_topics_configs_else_the_brokers():
    config = SimpleNamespace(node_id=1, log_cleanup_policy=("delete",), log_message_timestamp_before_max_ms=LONG_MAX,
                             log_message_timestamp_after_max_ms=5, min_insync_replicas=1, message_max_bytes=1000,
                             compression_type="producer", log_message_timestamp_type="CreateTime",
                             compression_gzip_level=-1, compression_lz4_level=9, compression_zstd_level=3)
    image = SimpleNamespace(configs={(TOPIC_RESOURCE, "c"): {"cleanup.policy": "delete,compact",
                                                             "message.timestamp.before.max.ms": "7"},
                                     (BROKER_RESOURCE, ""): {"log.message.timestamp.after.max.ms": "9"}})
    assert record_rules(image, "c", config, NOW) == RecordRules(NOW, True, 7, 9, True)
    log_append = SimpleNamespace(**{**vars(config), "log_message_timestamp_type": "LogAppendTime"})
    assert record_rules(None, "d", log_append, NOW) == RecordRules(NOW, False, LONG_MAX, 5, False)


# -- through the wire, on the session's embedded broker --

def produce(node, records: bytes):
    response = call(node, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
        name="record-checks-compacted", partition_data=[PartitionProduceData(index=0, records=records)])]),
        api_version=9)
    return response.responses[0].partition_responses[0]


def test_a_record_error_reaches_a_raw_produce_answer(kafkawire_broker):
    node = kafkawire_broker
    created = call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name="record-checks-compacted", num_partitions=1, replication_factor=1, assignments=[],
        configs=[CreatableTopicConfig(name="cleanup.policy", value="compact")])]))
    assert created.topics[0].error_code == Errors.NONE
    deadline = time.monotonic() + 30
    while produce(node, build_batch([(b"k", b"v")])).error_code != Errors.NONE:     # the new topic's leader
        assert time.monotonic() < deadline, "timed out waiting for the new topic's leader"
        time.sleep(0.05)
    answer = produce(node, build_batch([(b"k", b"v"), (None, b"w")]))
    text = "Compacted topic cannot accept message without key in topic partition record-checks-compacted-0"
    assert (answer.error_code, answer.base_offset, answer.log_start_offset) == (Errors.INVALID_RECORD, -1, 0)
    assert [(e.batch_index, e.batch_index_error_message) for e in answer.record_errors] == [(1, text)]
    assert answer.error_message.startswith("One or more records have been rejected due to 1 record errors")
