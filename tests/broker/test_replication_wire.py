"""Replication, the leader side, on the wire: a combined kafkawire node leads a partition of three
replicas whose two followers are brokers registered by hand (BrokerRegistration and heartbeats on
the controller listener) and played by this test with raw follower Fetch requests (ReplicaState,
v15+). The high watermark moves only when both followers fetched past it; acks=all waits for them;
a follower that stops fetching while the log grows leaves the ISR after replica.lag.time.max.ms
through an AlterPartition the controller commits; acks=all below min.insync.replicas is NOT_ENOUGH_REPLICAS."""
from __future__ import annotations

import asyncio
import contextlib
import time

from kafkawire.messages.create_topics_request import (CreatableReplicaAssignment, CreatableTopic,
                                                      CreatableTopicConfig, CreateTopicsRequest)
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.client import NetworkClient
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch
from kafkawire.testing import EmbeddedBroker
from tests.controller.harness import heartbeat
from tests.interop.hand_registered_broker import CAUGHT_UP, register_unfenced

TOPIC = "replicated"
LAG_MS = 1200
WAIT_S = 30


async def until(predicate, what: str):
    """Until ``await predicate()`` is truthy (bounded); its value."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Cluster:
    def __init__(self, node: EmbeddedBroker, client: NetworkClient, cluster_id: str):
        self.broker = ("127.0.0.1", node.broker_port)
        self.controller = ("127.0.0.1", node.controller_port)
        self.client = client
        self.cluster_id = cluster_id
        self.epochs: dict[int, int] = {}
        self.topic_id = None
        self.leader_epoch = -1

    async def keep_alive(self):
        """The hand-registered brokers' heartbeats, so the controller keeps them unfenced."""
        while True:
            for broker_id, epoch in self.epochs.items():
                await self.client.send(self.controller, heartbeat(broker_id, epoch, CAUGHT_UP), api_version=2)
            await asyncio.sleep(0.3)

    async def partition_state(self):
        response = await self.client.send(self.broker, MetadataRequest(
            topics=[MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=False), api_version=12)
        [p] = response.topics[0].partitions
        return p

    async def follower_fetch(self, broker_id: int, offset: int, client=None):
        request = FetchRequest(replica_state=ReplicaState(replica_id=broker_id, replica_epoch=self.epochs[broker_id]),
                               max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[FetchTopic(
                                   topic_id=self.topic_id, partitions=[FetchPartition(
                                       partition=0, current_leader_epoch=self.leader_epoch, fetch_offset=offset,
                                       last_fetched_epoch=-1, log_start_offset=0, partition_max_bytes=1 << 20)])])
        response = await (client or self.client).send(self.broker, request, api_version=17)
        return response.responses[0].partitions[0]

    async def latest(self) -> int:
        """ListOffsets latest: the high watermark consumers see."""
        response = await self.client.send(self.broker, ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
            name=TOPIC, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
        return response.topics[0].partitions[0].offset

    async def produce(self, values: list[bytes], acks: int, client=None):
        request = ProduceRequest(acks=acks, timeout_ms=20_000, topic_data=[TopicProduceData(
            name=TOPIC, partition_data=[PartitionProduceData(index=0, records=build_batch(
                [(None, v) for v in values]))])])
        response = await (client or self.client).send(self.broker, request, api_version=11)
        return response.responses[0].partition_responses[0]


def test_the_leader_waits_for_its_followers_and_shrinks_the_isr_through_alter_partition(tmp_path):
    node = EmbeddedBroker(tmp_path, properties={"replica.lag.time.max.ms": LAG_MS, "broker.heartbeat.interval.ms": 300})
    with node:
        asyncio.run(asyncio.wait_for(scenario(node), 60))


async def scenario(node):
    client = NetworkClient(client_id="replication-test")
    producer = NetworkClient(client_id="replication-test-producer")      # an acks=all answer waits on its own
    cluster_id = open(f"{node.log_dir}/meta.properties").read().split("cluster.id=")[1].split()[0]
    cluster = Cluster(node, client, cluster_id)
    try:
        for broker_id in (2, 3):
            cluster.epochs[broker_id] = await register_unfenced(client, cluster.controller, broker_id, cluster_id)
        alive = asyncio.ensure_future(cluster.keep_alive())
        try:
            await replicate(cluster, producer)
        finally:
            alive.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await alive
    finally:
        await client.close()
        await producer.close()


async def replicate(cluster: Cluster, producer: NetworkClient):
    created = await cluster.client.send(cluster.broker, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=TOPIC, num_partitions=-1, replication_factor=-1,
        assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2, 3])],
        configs=[CreatableTopicConfig(name="min.insync.replicas", value="3")])]), api_version=7)
    assert created.topics[0].error_code == Errors.NONE, created.topics[0]
    cluster.topic_id = created.topics[0].topic_id
    state = await until(cluster.partition_state, "the partition led by 1 with an ISR of three")
    assert (state.leader_id, sorted(state.isr_nodes)) == (1, [1, 2, 3])
    cluster.leader_epoch = state.leader_epoch

    # The high watermark moves only when both followers fetched past the batch.
    assert (await cluster.produce([b"a", b"b", b"c"], acks=1)).error_code == Errors.NONE
    first = await cluster.follower_fetch(2, 0)
    assert first.records and first.high_watermark == 0        # followers read past the high watermark
    await cluster.follower_fetch(2, 3)
    assert await cluster.latest() == 0
    await cluster.follower_fetch(3, 3)
    assert await cluster.latest() == 3

    # acks=all waits until both followers have the batch.
    waiting = asyncio.ensure_future(cluster.produce([b"d", b"e"], acks=-1, client=producer))
    async def batch_at_the_leader():
        return (await cluster.follower_fetch(2, 3)).records
    await until(batch_at_the_leader, "the acks=all batch at the leader")
    await cluster.follower_fetch(2, 5)
    assert not waiting.done()
    await cluster.follower_fetch(3, 5)
    answer = await asyncio.wait_for(waiting, WAIT_S)
    assert (answer.error_code, answer.base_offset) == (Errors.NONE, 3)

    # Follower 3 stops fetching while the log grows (a follower at the log end of an idle partition stays
    # caught up): after replica.lag.time.max.ms the ISR drops it through an AlterPartition.
    assert (await cluster.produce([b"f"], acks=1)).error_code == Errors.NONE
    assert (await cluster.follower_fetch(2, 5)).records

    async def shrunk():
        await cluster.follower_fetch(2, 6)
        state = await cluster.partition_state()
        return sorted(state.isr_nodes) == [1, 2] and state
    state = await until(shrunk, "the ISR to shrink to [1, 2]")
    assert state.leader_epoch == cluster.leader_epoch          # an ISR change, not an election

    # Below min.insync.replicas=3 now: acks=all is refused before the append.
    refused = await cluster.produce([b"g"], acks=-1)
    assert (refused.error_code, refused.error_message, refused.log_start_offset) == (Errors.NOT_ENOUGH_REPLICAS, None, 0)
