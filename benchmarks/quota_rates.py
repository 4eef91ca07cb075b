"""By hand (issue 29): the quotas that hold a rate, measured on the wire against their setting.

    python -m benchmarks.quota_rates connections [COUNT]   # max.connection.creation.rate, ip quota
    python -m benchmarks.quota_rates leader [RATE]          # leader.replication.throttled.rate
    python -m benchmarks.quota_rates follower [RATE]        # follower.replication.throttled.rate

* connections: COUNT (400) connections opened one after another from 127.0.0.1 to a KafkaServer,
  each asked one Metadata, with no limit, with max.connection.creation.rate=20 and with an ip
  connection_creation_rate of 20 (the defaults' 11 windows of 1 s: a first burst of about 10 s'
  worth goes at once).
* leader: a combined node leads a partition whose other replica (broker 2) is registered by hand
  and played with raw follower Fetches; ~2 MB are produced while it is out of the ISR, then the
  leader's rate is RATE (200000) with every replica throttled, and the follower fetches 32 KB
  at a time for 6 s: the bytes per second it got (RATE 0: no throttle).
* follower: three combined nodes; one is stopped, ~3 MB produced, then (RATE > 0, default
  300000) follower.replication.throttled.rate=RATE and follower.replication.throttled.replicas=*;
  the stopped node starts again: the seconds until its log holds the leader's bytes (RATE 0: no
  throttle).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
import time

from kafkawire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kafkawire.messages.incremental_alter_configs_request import (AlterableConfig, AlterConfigsResource,
                                                                  IncrementalAlterConfigsRequest)
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.admission import AdmissionLimits, ConnectionQuotas
from kafkawire.net.client import NetworkClient
from kafkawire.net.server import KafkaServer
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch
from kafkawire.testing import EmbeddedBroker
from tests.broker.test_replication_follower_wire import _partition, three_combined_nodes
from tests.broker.test_replication_wire import Cluster, until
from tests.broker.wire import call
from tests.interop.hand_registered_broker import register_unfenced
from tests.net.netlib import RawConnection
from tests.net.test_admission import answered
from tests.net.test_server import METADATA, echo_metadata

BROKER, TOPIC = 4, 2
SET = 0


def throttle(resource_type: int, name: str, key: str, value: str) -> AlterConfigsResource:
    return AlterConfigsResource(resource_type=resource_type, resource_name=name,
                                configs=[AlterableConfig(name=key, config_operation=SET, value=value)])


# -- connections --

async def connections(kind: str, count: int) -> None:
    limits = AdmissionLimits(max_connection_creation_rate=20 if kind == "max.connection.creation.rate" else 2**31 - 1)
    rates = {"127.0.0.1": 20} if kind == "ip connection_creation_rate" else {}
    quotas = ConnectionQuotas(limits, ip_rates=lambda: rates)
    async with KafkaServer({METADATA: echo_metadata}, connection_quotas=quotas) as server:
        start, served, closed = time.monotonic(), 0, 0
        for i in range(count):
            conn = await RawConnection.open(server.port)
            if await answered(conn, "x", i, timeout=5):
                served += 1
            else:
                closed += 1
            await conn.aclose()
        elapsed = time.monotonic() - start
    label = kind if kind == "no limit" else f"{kind} 20/s"
    print(f"{label}: {count} connections in {elapsed:.2f} s; served {served} ({served / elapsed:.1f}/s), "
          f"closed unserved {closed}")


# -- leader --

async def leader(node: EmbeddedBroker, rate: int) -> None:
    client = NetworkClient(client_id="quota-rates")
    cluster_id = open(f"{node.log_dir}/meta.properties").read().split("cluster.id=")[1].split()[0]
    cluster = Cluster(node, client, cluster_id)
    cluster.epochs[2] = await register_unfenced(client, cluster.controller, 2, cluster_id)
    alive = asyncio.ensure_future(cluster.keep_alive())
    try:
        created = await client.send(cluster.broker, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name="replicated", num_partitions=-1, replication_factor=-1,
            assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2])])]), api_version=7)
        cluster.topic_id = created.topics[0].topic_id
        cluster.leader_epoch = (await until(cluster.partition_state, "the partition led")).leader_epoch
        for _ in range(200):                      # ~2 MB while the follower does not fetch
            await cluster.produce([b"x" * 10_000], acks=1)

        async def out_of_isr():
            return sorted((await cluster.partition_state()).isr_nodes) == [1]
        await until(out_of_isr, "the follower out of the ISR")
        if rate:
            await client.send(cluster.broker, IncrementalAlterConfigsRequest(resources=[
                throttle(BROKER, "", "leader.replication.throttled.rate", str(rate)),
                throttle(TOPIC, "replicated", "leader.replication.throttled.replicas", "*")]), api_version=1)
            await asyncio.sleep(1)                # in the broker's image
        offset, got, start = 0, 0, time.monotonic()
        while time.monotonic() - start < 6:
            request = FetchRequest(replica_state=ReplicaState(replica_id=2, replica_epoch=cluster.epochs[2]),
                                   max_wait_ms=50, min_bytes=1, max_bytes=1 << 20, topics=[FetchTopic(
                                       topic_id=cluster.topic_id, partitions=[FetchPartition(
                                           partition=0, current_leader_epoch=cluster.leader_epoch,
                                           fetch_offset=offset, last_fetched_epoch=-1, log_start_offset=0,
                                           partition_max_bytes=32_768)])])
            data = (await client.send(cluster.broker, request, api_version=17)).responses[0].partitions[0]
            batches = list(iter_batches(data.records)) if data.records else []
            if batches:
                offset = batches[-1].last_offset + 1
                got += len(data.records)
        elapsed = time.monotonic() - start
        print(f"leader.replication.throttled.rate={rate}: {got} bytes in {elapsed:.1f} s = {got / elapsed:.0f} B/s "
              f"(to offset {offset} of 200)")
    finally:
        alive.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await alive
        await client.close()


# -- follower --

def follower(rate: int) -> None:
    with three_combined_nodes(tempfile.mkdtemp(prefix="quota-rates-"),
                              properties={"replica.lag.time.max.ms": "2000"}) as (quorum, brokers):
        call(brokers[1], CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name="replicated", num_partitions=1, replication_factor=3)]), 7)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            p = _partition(brokers[1], "replicated")
            if p.leader_id > 0 and len(p.isr_nodes) == 3:
                break
            time.sleep(0.2)
        lead = brokers[p.leader_id]
        stopped = next(i for i in (3, 2, 1) if i != p.leader_id)
        quorum.stop(stopped)
        for _ in range(300):                      # ~3 MB
            call(lead, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
                name="replicated", partition_data=[PartitionProduceData(index=0, records=build_batch(
                    [(None, os.urandom(10_000))]))])]), 9)
        if rate:
            call(lead, IncrementalAlterConfigsRequest(resources=[
                throttle(BROKER, "", "follower.replication.throttled.rate", str(rate)),
                throttle(TOPIC, "replicated", "follower.replication.throttled.replicas", "*")]), 1)
        segment = f"replicated-0/{0:020d}.log"
        size = os.path.getsize(os.path.join(quorum.data_dir(p.leader_id), segment))
        copy = os.path.join(quorum.data_dir(stopped), segment)
        start = time.monotonic()
        quorum.start(stopped)
        while time.monotonic() - start < 90 and not (os.path.exists(copy) and os.path.getsize(copy) >= size):
            time.sleep(0.1)
        took = time.monotonic() - start
        print(f"follower.replication.throttled.rate={rate}: node {stopped} copied {size} bytes in {took:.1f} s "
              f"from its start ({size / took:.0f} B/s, its start-up included)")


def main(argv: list[str]) -> None:
    what = argv[0] if argv else "connections"
    if what == "connections":
        count = int(argv[1]) if len(argv) > 1 else 400
        for kind in ("no limit", "max.connection.creation.rate", "ip connection_creation_rate"):
            asyncio.run(connections(kind, count))
    elif what == "leader":
        with EmbeddedBroker(properties={"replica.lag.time.max.ms": 1000, "broker.heartbeat.interval.ms": 300}) as node:
            asyncio.run(asyncio.wait_for(leader(node, int(argv[1]) if len(argv) > 1 else 200_000), 120))
    elif what == "follower":
        follower(int(argv[1]) if len(argv) > 1 else 300_000)
    else:
        sys.exit(f"unknown measurement {what!r}: connections, leader or follower")


if __name__ == "__main__":
    main(sys.argv[1:])
