"""Leader epochs on the broker role: a partition records each new leader epoch at its log end
(Kafka's Partition.makeLeader) in its leader-epoch-checkpoint, which survives reopening; and
OffsetForLeaderEpoch (23) and DescribeLogDirs (35) answer as Kafka's KafkaApis does: in process
against a LeaderPartition for every answer, then every advertised version through the wire on the
session's embedded broker (kafkawire.testing)."""
from __future__ import annotations

import asyncio
import os
import time
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker.log_dir_apis import LogDirApis
from kafkawire.broker.partition import LeaderPartition
from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_log_dirs_request import DescribableLogDirTopic, DescribeLogDirsRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.offset_for_leader_epoch_request import (OffsetForLeaderEpochRequest, OffsetForLeaderPartition,
                                                                OffsetForLeaderTopic)
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch
from kafkawire.storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT

from .wire import call

pytest_plugins = ["kafkawire.testing.pytest_plugin"]

TOPIC_ID = uuid.UUID(int=7)


def append(partition: LeaderPartition, count: int) -> None:
    partition.log.append(build_batch([(b"k", b"v")] * count), assign_offsets=True,
                         leader_epoch=partition.leader_epoch)


@pytest.fixture
def led(tmp_path):
    """orders-0 led here: epoch 0 for offsets 0-2, epoch 2 for 3-7, epoch 5 from 8 (nothing in it
    yet); orders-1 is in the metadata but led elsewhere."""
    partition = LeaderPartition.open(str(tmp_path), "orders", 0, TOPIC_ID, leader_epoch=0, segment_bytes=1 << 20)
    append(partition, 3)
    partition.leader_epoch = 2
    append(partition, 5)
    partition.leader_epoch = 5
    topic = SimpleNamespace(name="orders", id=TOPIC_ID, partitions={
        0: SimpleNamespace(leader=1, leader_epoch=5), 1: SimpleNamespace(leader=2, leader_epoch=0)})
    broker = SimpleNamespace(image=lambda: SimpleNamespace(topics_by_name={"orders": topic}), node_id=1,
                             partitions={("orders", 0): partition}, log_dir=str(tmp_path),
                             replica_roles=SimpleNamespace(followers={}))
    yield broker, partition
    partition.close()


def ask(broker, *partitions, topic="orders"):
    """OffsetForLeaderEpoch for (partition, current_leader_epoch, leader_epoch) triples:
    (error, leader epoch, end offset) of each."""
    request = OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderTopic(topic=topic, partitions=[
        OffsetForLeaderPartition(partition=p, current_leader_epoch=c, leader_epoch=e) for p, c, e in partitions])])
    response = asyncio.run(LogDirApis(broker).offset_for_leader_epoch(None, request))
    return [(r.error_code, r.leader_epoch, r.end_offset) for r in response.topics[0].partitions]


def test_each_new_leader_epoch_starts_at_the_log_end_in_the_checkpoint_and_survives_reopening(led, tmp_path):
    broker, partition = led
    path = tmp_path / "orders-0" / LEADER_EPOCH_CHECKPOINT
    assert path.read_bytes() == b"0\n3\n0 0\n2 3\n5 8\n"
    partition.leader_epoch = 5                  # the same epoch again (every metadata update): no entry
    append(partition, 1)
    assert path.read_bytes() == b"0\n3\n0 0\n2 3\n5 8\n"
    partition.close()
    reopened = LeaderPartition.open(str(tmp_path), "orders", 0, TOPIC_ID, leader_epoch=5, segment_bytes=1 << 20)
    broker.partitions[("orders", 0)] = reopened
    assert ask(broker, (0, 5, 2), (0, 5, 5)) == [(Errors.NONE, 2, 8), (Errors.NONE, 5, 9)]


def test_a_checkpoint_that_cannot_be_written_is_logged_and_the_new_epoch_still_served(led, monkeypatch, caplog):
    """A disk error must not break the metadata update that brought the new epoch."""
    broker, partition = led
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("kafkawire.storage.leader_epoch_cache.write_leader_epoch_checkpoint", disk_full)
    partition.leader_epoch = 6
    assert "cannot write the leader epoch checkpoint" in caplog.text
    # epoch 5 wrote nothing: epoch 6 replaced it at offset 8 (Kafka's rule), so 5 ends with 2
    assert ask(broker, (0, 6, 5), (0, 6, 6)) == [(Errors.NONE, 2, 8), (Errors.NONE, 6, 8)]


def test_offset_for_leader_epoch_gives_where_the_requested_epoch_ends(led):
    broker, _ = led
    assert ask(broker, *[(0, -1, e) for e in (0, 1, 2, 3, 5, 6, -1)]) == [
        (Errors.NONE, 0, 3),        # ends where epoch 2 starts
        (Errors.NONE, 0, 3),        # unknown: the largest epoch below it
        (Errors.NONE, 2, 8),
        (Errors.NONE, 2, 8),
        (Errors.NONE, 5, 8),        # the current epoch ends at the log end
        (Errors.NONE, -1, -1),      # above every known epoch: UNDEFINED_EPOCH_OFFSET
        (Errors.NONE, -1, -1),
    ]


def test_offset_for_leader_epoch_fences_the_current_leader_epoch(led):
    broker, _ = led
    assert ask(broker, (0, 4, 2), (0, 6, 2), (0, 5, 2), (0, -2, 2)) == [
        (Errors.FENCED_LEADER_EPOCH, -1, -1), (Errors.UNKNOWN_LEADER_EPOCH, -1, -1), (Errors.NONE, 2, 8),
        (Errors.FENCED_LEADER_EPOCH, -1, -1)]


def test_offset_for_leader_epoch_of_a_partition_not_led_here_or_unknown(led):
    broker, _ = led
    assert ask(broker, (1, -1, 0), (9, -1, 0)) == [
        (Errors.NOT_LEADER_OR_FOLLOWER, -1, -1), (Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]
    assert ask(broker, (0, -1, 0), topic="nowhere") == [(Errors.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]


def test_describe_log_dirs_lists_the_requested_partitions_of_the_one_directory(led, tmp_path):
    broker, partition = led
    apis = LogDirApis(broker)
    every = asyncio.run(apis.describe_log_dirs(None, DescribeLogDirsRequest(topics=None))).results
    assert [(r.error_code, r.log_dir) for r in every] == [(Errors.NONE, str(tmp_path))]
    assert every[0].total_bytes >= every[0].usable_bytes > 0
    [topic] = every[0].topics
    segment = tmp_path / "orders-0" / "00000000000000000000.log"
    assert (topic.name, [(p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                         for p in topic.partitions]) == ("orders", [(0, os.path.getsize(segment), 0, False)])
    named = asyncio.run(apis.describe_log_dirs(None, DescribeLogDirsRequest(topics=[
        DescribableLogDirTopic(topic="nowhere", partitions=[0]), DescribableLogDirTopic(topic="orders", partitions=[1])])))
    assert [(r.error_code, r.topics) for r in named.results] == [(Errors.NONE, [])]     # as Kafka: left out


def test_describe_log_dirs_of_a_directory_gone_is_a_storage_error(led, tmp_path):
    broker, _ = led
    broker.log_dir = str(tmp_path / "gone")
    [result] = asyncio.run(LogDirApis(broker).describe_log_dirs(None, DescribeLogDirsRequest(topics=None))).results
    assert (result.error_code, result.log_dir, result.topics) == (Errors.KAFKA_STORAGE_ERROR, str(tmp_path / "gone"), [])


# -- through the wire, on the session's embedded broker --

def produce_three(node) -> int:
    response = call(node, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
        name="epochs-wire", partition_data=[PartitionProduceData(index=0, records=build_batch([(b"k", b"v")] * 3))])]),
        api_version=9)
    return response.responses[0].partition_responses[0].error_code


def wait_until(condition, what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_every_advertised_version_of_both_apis_answers_through_the_wire(kafkawire_broker):
    node = kafkawire_broker
    advertised = {k.api_key: (k.min_version, k.max_version) for k in call(node, ApiVersionsRequest(
        client_software_name="kafkawire-tests", client_software_version="1")).api_keys}
    assert (advertised[23], advertised[35]) == ((2, 4), (1, 5))          # Kafka 4.3.1's ranges
    created = call(node, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name="epochs-wire", num_partitions=1, replication_factor=1, assignments=[], configs=[])]))
    assert created.topics[0].error_code == Errors.NONE
    wait_until(lambda: produce_three(node) == Errors.NONE, "the new topic's leader to take a produce")
    epoch = call(node, MetadataRequest(topics=[MetadataRequestTopic(name="epochs-wire")], allow_auto_topic_creation=False),
                 api_version=12).topics[0].partitions[0].leader_epoch
    for version in range(2, 5):
        response = call(node, OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderTopic(
            topic="epochs-wire", partitions=[OffsetForLeaderPartition(partition=0, current_leader_epoch=epoch,
                                                                      leader_epoch=epoch)])]), api_version=version)
        answer = response.topics[0].partitions[0]
        assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (Errors.NONE, epoch, 3), version
    for version in range(1, 6):
        [result] = call(node, DescribeLogDirsRequest(topics=[DescribableLogDirTopic(
            topic="epochs-wire", partitions=[0])]), api_version=version).results
        sizes = [(t.name, p.partition_index, p.partition_size > 0) for t in result.topics for p in t.partitions]
        assert (result.error_code, result.log_dir, sizes) == (
            Errors.NONE, os.path.abspath(node.log_dir), [("epochs-wire", 0, True)]), version
        assert (result.usable_bytes > 0) == (version >= 4), version
