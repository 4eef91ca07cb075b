"""The produce meters (BrokerTopicMetrics TotalProduceRequestsPerSec, FailedProduceRequestsPerSec)
count what Kafka 4.3.1's count: ReplicaManager.appendToLocalLog marks the total for each
partition it is asked to append, and the failed for each failure but its known exceptions
(unknown partition, not leader, a batch too large, a corrupt batch, a storage error). What
KafkaApis refuses before ReplicaManager (an unknown topic or partition, not exactly one batch of
magic 2, authorization) and what appendRecords refuses before the log (invalid acks) is in
neither. In process: a real Broker on a stand-in image, as tests/broker/test_failed_append_log.py."""
from __future__ import annotations

import asyncio
import time
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker.metrics import FAILED_PRODUCE, TOTAL_PRODUCE
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch

from tests.broker.test_leader_discovery import image
from tests.broker.test_read_from_followers import TOPIC_ID, close, make_broker
from tests.interop.test_produce_refusals_vs_kafka import legacy_message

GOOD = build_batch([(b"k", b"v")])
OFFSETS_ID = uuid.UUID(int=77)


@pytest.fixture
def broker(tmp_path):
    """Broker 1 leads t-0 (one replica); t-1 and __consumer_offsets-0 are led by broker 2."""
    broker, state = make_broker(tmp_path)
    state["image"] = image(1, 0, replicas=(1,), more=[(2, 0, (2,))])
    offsets = SimpleNamespace(name="__consumer_offsets", id=OFFSETS_ID, partitions={0: SimpleNamespace(
        leader=2, leader_epoch=0, replicas=(2,), isr=(2,), partition_epoch=0)})     # led by broker 2
    state["image"].topics_by_name[offsets.name] = state["image"].topics_by_id[OFFSETS_ID] = offsets
    broker.on_metadata()
    yield broker
    asyncio.run(close(broker))


def produce(broker, records: bytes | None, *, index: int = 0, acks: int = 1, topic: str = "t",
            client_id: str = "producer-1") -> int:
    request = ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=index, records=records)])])
    ctx = SimpleNamespace(api_version=9, listener_name="PLAINTEXT", client_id=client_id)
    response = asyncio.run(broker.produce_api.produce(ctx, request))
    return response.responses[0].partition_responses[0].error_code


def meters(broker) -> tuple:
    """(total, failed) for all topics, and for t (zeros before t's first mark)."""
    stats = broker.topic_stats
    topic = stats.topics.get("t", {})
    return (stats.all_topics[TOTAL_PRODUCE], stats.all_topics[FAILED_PRODUCE],
            topic.get(TOTAL_PRODUCE, 0), topic.get(FAILED_PRODUCE, 0))


@pytest.mark.parametrize("records, code", [
    (None, Errors.INVALID_RECORD),                    # no batch
    (GOOD + GOOD, Errors.INVALID_RECORD),             # two batches
    (legacy_message(b"k", b"v"), Errors.INVALID_RECORD),     # not magic 2
    (GOOD[:8] + (5).to_bytes(4, "big") + GOOD[12:], Errors.CORRUPT_MESSAGE),    # a batch size below the header's
], ids=["no batch", "two batches", "magic 1", "corrupt size"])
def test_what_kafka_apis_refuses_before_the_log_is_in_neither_meter(broker, records, code):
    assert produce(broker, records) == code
    assert meters(broker) == (0, 0, 0, 0)
    assert produce(broker, records, index=1) == code      # KafkaApis refuses it before the leader is looked at
    assert meters(broker) == (0, 0, 0, 0)


def test_unknown_topics_and_partitions_and_invalid_acks_are_in_neither_meter(broker):
    assert produce(broker, GOOD, topic="absent") == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(broker, GOOD, index=7) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert produce(broker, GOOD, acks=2) == Errors.INVALID_REQUIRED_ACKS
    assert meters(broker) == (0, 0, 0, 0)


def test_a_partition_not_led_here_or_offline_is_counted_in_the_total_not_as_failed(broker):
    assert produce(broker, GOOD, index=1) == Errors.NOT_LEADER_OR_FOLLOWER
    assert meters(broker) == (1, 0, 1, 0)
    broker.offline_partitions[("t", 0)] = TOPIC_ID        # its log directory failed
    assert produce(broker, GOOD) == Errors.KAFKA_STORAGE_ERROR
    assert meters(broker) == (2, 0, 2, 0)


def test_an_internal_topic_is_refused_but_to_the_admin_client_and_counted_in_the_total_not_as_failed(broker):
    offsets = {"topic": "__consumer_offsets", "index": 0}
    assert produce(broker, GOOD, **offsets) == Errors.INVALID_TOPIC_EXCEPTION
    assert produce(broker, GOOD, **offsets, client_id="__admin_client") == Errors.NOT_LEADER_OR_FOLLOWER
    stats = broker.topic_stats
    assert (stats.all_topics[TOTAL_PRODUCE], stats.all_topics[FAILED_PRODUCE]) == (2, 0)
    assert (stats.topics["__consumer_offsets"][TOTAL_PRODUCE], stats.topics["__consumer_offsets"][FAILED_PRODUCE]) == \
        (2, 0)


def test_the_logs_known_refusals_are_counted_in_the_total_not_as_failed(broker):
    corrupt = bytearray(GOOD)
    corrupt[-1] ^= 0xFF
    assert produce(broker, bytes(corrupt)) == Errors.CORRUPT_MESSAGE              # CorruptRecordException
    big = build_batch([(b"k", b"v" * 1_100_000)])
    assert produce(broker, big) == Errors.MESSAGE_TOO_LARGE                       # RecordTooLargeException
    assert meters(broker) == (2, 0, 2, 0)


def test_the_logs_other_refusals_are_counted_in_both(broker):
    ahead = build_batch([(b"k", b"v", [], int(time.time() * 1000) + 7_200_000)])
    assert produce(broker, ahead) == Errors.INVALID_TIMESTAMP                     # RecordValidationException
    assert produce(broker, idempotent(0)) == Errors.NONE
    assert produce(broker, idempotent(5)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert meters(broker) == (3, 2, 3, 2)


def idempotent(sequence: int) -> bytes:
    return build_batch([(b"k", b"v")], producer_id=5, producer_epoch=0, base_sequence=sequence)
