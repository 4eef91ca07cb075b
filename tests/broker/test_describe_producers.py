"""DescribeProducers (61) on the broker role, as Kafka's KafkaApis.handleDescribeProducersRequest
and ReplicaManager.activeProducerState answer it: in process against a LeaderPartition for every
answer (Kafka's DescribeProducersRequestTest and KafkaApisTest cases: the active producers, an
invalid topic name, an unknown topic or partition, a partition not hosted here), then every
advertised version through the wire on the session's embedded broker (kafkawire.testing)."""
from __future__ import annotations

import asyncio
import time
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker.describe_producers import DescribeProducersApi
from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.validation import validate_produce
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_producers_request import DescribeProducersRequest, TopicRequest
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch

from .test_leader_epoch_apis import wait_until
from .wire import call

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

TOPIC_ID = uuid.UUID(int=9)
NOW = 1_800_000_000_000


def idempotent_batch(pid: int, epoch: int, seq: int, count: int, timestamp: int = NOW) -> bytes:
    return build_batch([(b"k", b"v", [], timestamp)] * count, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


@pytest.fixture
def hosted(tmp_path):
    """orders-0 led here with two producers; orders-1 in the metadata, led elsewhere."""
    partition = LeaderPartition.open(str(tmp_path), "orders", 0, TOPIC_ID, leader_epoch=0, segment_bytes=1 << 20,
                                     now_ms=NOW)
    for data in (idempotent_batch(7, 0, 0, 3), idempotent_batch(7, 0, 3, 2, NOW + 5), idempotent_batch(8, 2, 0, 1),
                 build_batch([(b"k", b"plain")])):          # a batch without producer id: not a producer
        validated = validate_produce(data, topic_partition="orders-0", max_message_bytes=1 << 20,
                                     log_append_time=False, now_ms=NOW)
        partition.append(validated, now_ms=NOW)
    topic = SimpleNamespace(name="orders", id=TOPIC_ID, partitions={0: SimpleNamespace(leader=1),
                                                                     1: SimpleNamespace(leader=2)})
    broker = SimpleNamespace(image=lambda: SimpleNamespace(topics_by_name={"orders": topic}),
                             partitions={("orders", 0): partition})
    yield broker
    partition.close()


def describe(broker, *topics):
    request = DescribeProducersRequest(topics=[TopicRequest(name=n, partition_indexes=list(p)) for n, p in topics])
    return asyncio.run(DescribeProducersApi(broker).describe_producers(None, request))


def producers_of(partition_response):
    return sorted((p.producer_id, p.producer_epoch, p.last_sequence, p.last_timestamp, p.coordinator_epoch,
                   p.current_txn_start_offset) for p in partition_response.active_producers)


def test_a_led_partition_lists_each_producer_with_its_epoch_last_sequence_and_timestamp(hosted):
    """UnifiedLog.activeProducers: coordinator epoch and transaction start offset -1 without transactions."""
    [topic] = describe(hosted, ("orders", [0])).topics
    [partition] = topic.partitions
    assert (topic.name, partition.partition_index, partition.error_code, partition.error_message) \
        == ("orders", 0, Errors.NONE, None)
    assert producers_of(partition) == [(7, 0, 4, NOW + 5, -1, -1), (8, 2, 0, NOW, -1, -1)]


def test_partitions_not_hosted_or_unknown_and_unknown_or_invalid_topics_have_kafkas_errors(hosted):
    """getPartitionOrError: in the metadata but not here NOT_LEADER_OR_FOLLOWER, else
    UNKNOWN_TOPIC_OR_PARTITION; a topic checked first by Topic.validate (with its message), then
    the metadata; every requested partition answered, in the request's order."""
    orders, unknown, invalid = describe(hosted, ("orders", [1, 5, 0]), ("nope", [0]), ("bad/name", [0, 1])).topics
    assert [(p.partition_index, p.error_code, p.active_producers) for p in orders.partitions[:2]] \
        == [(1, Errors.NOT_LEADER_OR_FOLLOWER, []), (5, Errors.UNKNOWN_TOPIC_OR_PARTITION, [])]
    assert orders.partitions[2].error_code == Errors.NONE
    assert [(p.error_code, p.error_message) for p in unknown.partitions] == [(Errors.UNKNOWN_TOPIC_OR_PARTITION, None)]
    message = ("Topic name is invalid: 'bad/name' contains one or more characters other than ASCII "
               "alphanumerics, '.', '_' and '-'")
    assert [(p.partition_index, p.error_code, p.error_message) for p in invalid.partitions] \
        == [(0, Errors.INVALID_TOPIC_EXCEPTION, message), (1, Errors.INVALID_TOPIC_EXCEPTION, message)]


def test_a_producer_forgotten_by_expiration_is_no_longer_listed(hosted):
    partition = hosted.partitions[("orders", 0)]
    partition.producers.remove_expired(NOW + 2 + partition.producers.expiration_ms)     # 8 expires, 7 (NOW+5) stays
    [[answer]] = [t.partitions for t in describe(hosted, ("orders", [0])).topics]
    assert [p.producer_id for p in answer.active_producers] == [7]


# -- through the wire, on the session's embedded broker --

def test_every_advertised_version_answers_through_the_wire(kafkawire_broker):
    node = kafkawire_broker
    advertised = {k.api_key: (k.min_version, k.max_version) for k in call(node, ApiVersionsRequest(
        client_software_name="kafkawire-tests", client_software_version="1")).api_keys}
    assert advertised[61] == (0, 0)                                   # Kafka 4.3.1's range
    created = call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name="producers-wire", num_partitions=1, replication_factor=1, assignments=[], configs=[])]))
    assert created.topics[0].error_code == Errors.NONE

    def produce() -> int:
        response = call(node, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="producers-wire", partition_data=[PartitionProduceData(
                index=0, records=idempotent_batch(4242, 1, 0, 2, timestamp=int(time.time() * 1000)))])]), api_version=9)
        return response.responses[0].partition_responses[0].error_code
    wait_until(lambda: produce() == Errors.NONE, "the new topic's leader to take a produce")
    for version in range(0, 1):
        response = call(node, DescribeProducersRequest(topics=[TopicRequest(name="producers-wire", partition_indexes=[0, 3])]),
                        api_version=version)
        [topic] = response.topics
        assert [(p.partition_index, p.error_code) for p in topic.partitions] \
            == [(0, Errors.NONE), (3, Errors.UNKNOWN_TOPIC_OR_PARTITION)]
        [producer] = topic.partitions[0].active_producers
        assert (producer.producer_id, producer.producer_epoch, producer.last_sequence, producer.coordinator_epoch,
                producer.current_txn_start_offset) == (4242, 1, 1, -1, -1)
