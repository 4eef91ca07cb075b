"""A Produce the partition's log refuses is logged on the broker's logger as Kafka 4.3.1's
ReplicaManager.appendToLocalLog logs it (processFailedRecord): at INFO for a fenced producer epoch
(InvalidProducerEpochException), at ERROR for any other refusal of the log (records rejected by
LogValidator, an out-of-order sequence, too few in-sync replicas for acks=all, ...), with the
partition, its topic id and the reason; not at all for what Kafka answers as known exceptions
(a corrupt batch, one too large) or what KafkaApis refuses before the log (two batches). One line
per refused append, its reason bounded. In process: a real Broker on a stand-in image."""
from __future__ import annotations

import asyncio
import logging
import time
from types import SimpleNamespace

import pytest

from kafkawire.broker import produce as produce_module
from kafkawire.broker.produce import MAX_REASON_CHARS, log_failed_append
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.message import uuid_to_kafka_string
from kafkawire.records.builder import build_batch

from tests.broker.test_leader_discovery import image
from tests.broker.test_read_from_followers import TOPIC_ID, close, make_broker

LOGGER = "kafkawire.broker.produce"
TOPIC_ID_TEXT = uuid_to_kafka_string(TOPIC_ID)


@pytest.fixture
def broker(tmp_path):
    """Broker 1 leads t-0 (one replica), at leader epoch 0."""
    broker, state = make_broker(tmp_path)
    state["image"] = image(1, 0, replicas=(1,))
    broker.on_metadata()
    yield broker
    asyncio.run(close(broker))


def produce(broker, records: bytes, acks: int = 1) -> int:
    request = ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[TopicProduceData(
        name="t", partition_data=[PartitionProduceData(index=0, records=records)])])
    response = asyncio.run(broker.produce_api.produce(SimpleNamespace(api_version=9, listener_name="PLAINTEXT"),
                                                      request))
    return response.responses[0].partition_responses[0].error_code


def lines(caplog) -> list[tuple[int, str]]:
    """(level, message) of the records above DEBUG on the produce logger."""
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == LOGGER and r.levelno > logging.DEBUG]


def ahead() -> bytes:
    """A record two hours ahead of the broker's clock: INVALID_TIMESTAMP (message.timestamp.after.max.ms)."""
    return build_batch([(b"k", b"v", [], int(time.time() * 1000) + 7_200_000)])


def idempotent(sequence: int, epoch: int = 0) -> bytes:
    return build_batch([(b"k", b"v")], producer_id=5, producer_epoch=epoch, base_sequence=sequence)


def test_records_the_validator_rejects_are_logged_at_error_with_the_partition_and_the_reason(broker, caplog):
    caplog.set_level(logging.DEBUG, LOGGER)
    assert produce(broker, ahead()) == Errors.INVALID_TIMESTAMP
    assert lines(caplog) == [(logging.ERROR, f"append to partition t-0 (topic id {TOPIC_ID_TEXT}) refused with "
                                             "INVALID_TIMESTAMP: One or more records have been rejected due to "
                                             "invalid timestamp")]


def test_a_fenced_producer_epoch_is_logged_at_info_and_a_sequence_gap_at_error(broker, caplog):
    caplog.set_level(logging.DEBUG, LOGGER)
    assert produce(broker, idempotent(0, epoch=1)) == Errors.NONE
    assert produce(broker, idempotent(1, epoch=0)) == Errors.INVALID_PRODUCER_EPOCH
    assert produce(broker, idempotent(5, epoch=1)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    (fenced_level, fenced), (gap_level, gap) = lines(caplog)
    assert (fenced_level, gap_level) == (logging.INFO, logging.ERROR)
    assert fenced.startswith(f"append to partition t-0 (topic id {TOPIC_ID_TEXT}) refused with INVALID_PRODUCER_EPOCH: "
                             "Epoch of producer 5 at offset 1 in t-0 is 0, which is < the last seen epoch 1")
    assert gap.startswith(f"append to partition t-0 (topic id {TOPIC_ID_TEXT}) refused with "
                          "OUT_OF_ORDER_SEQUENCE_NUMBER: Out of order sequence number for producer 5 at offset 1")


def test_what_kafka_answers_as_known_or_refuses_before_the_log_is_not_logged(broker, caplog):
    caplog.set_level(logging.DEBUG, LOGGER)
    good = build_batch([(b"k", b"v")])
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    assert produce(broker, bytes(corrupt)) == Errors.CORRUPT_MESSAGE       # CorruptRecordException
    assert produce(broker, good + good) == Errors.INVALID_RECORD          # KafkaApis: two batches
    assert produce(broker, good) == Errors.NONE
    assert lines(caplog) == []


def test_too_few_in_sync_replicas_for_acks_all_is_logged_at_error(broker, caplog, monkeypatch):
    caplog.set_level(logging.DEBUG, LOGGER)
    monkeypatch.setattr(produce_module, "isr_and_min_isr", lambda *args: ((1,), 2))    # follower 2 left the ISR
    assert produce(broker, build_batch([(b"k", b"v")]), acks=-1) == Errors.NOT_ENOUGH_REPLICAS
    assert lines(caplog) == [(logging.ERROR, f"append to partition t-0 (topic id {TOPIC_ID_TEXT}) refused with "
                                             "NOT_ENOUGH_REPLICAS: 1 in-sync replica(s) [1], fewer than the "
                                             "min.insync.replicas of 2")]


def test_each_refused_append_is_one_bounded_line(broker, caplog):
    """Kafka logs every failure with its stack trace; kafkawire logs every failure too, in one
    line (no traceback) whose reason is cut at MAX_REASON_CHARS."""
    caplog.set_level(logging.DEBUG, LOGGER)
    for _ in range(50):
        assert produce(broker, ahead()) == Errors.INVALID_TIMESTAMP
    assert len(lines(caplog)) == 50
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in caplog.records)
    caplog.clear()
    topic = SimpleNamespace(name="t" * 249, id=TOPIC_ID)
    log_failed_append(topic, 0, Errors.INVALID_RECORD, "x" * 1_000_000)
    [(level, message)] = lines(caplog)
    assert level == logging.ERROR
    assert message.endswith("x" * MAX_REASON_CHARS + "...")
    assert len(message) < MAX_REASON_CHARS + 400
