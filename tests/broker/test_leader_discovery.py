"""Leader discovery (KIP-951), in process: a real Broker (kafkawire.broker) on a stand-in metadata
image answers Produce (v10+) and Fetch (v16+) as Kafka 4.3.1's KafkaApis does: a partition refused
as NOT_LEADER_OR_FOLLOWER (or, for Fetch, FENCED_LEADER_EPOCH) names its current leader and epoch,
and the answer carries that leader's endpoint on the listener the request came in on; no endpoint
for a fenced leader or one without that listener, none for a follower's fetch, none before those
versions, none when nothing is refused. Each answer is also encoded and decoded at its version.
The comparison with a real Kafka broker is in tests/interop/test_read_from_followers_vs_kafka.py."""
from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from kafkawire.broker.leader_discovery import scala_hash_map_order
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.protocol.framing import decode_response, encode_response
from kafkawire.records.builder import build_batch

from tests.broker.test_read_from_followers import TOPIC_ID, close, consumer_fetch, make_broker

LISTENERS = ("PLAINTEXT", "EXTERNAL")
RACKS = {1: "a", 2: "b", 3: None}


def registration(broker_id, *, fenced=False, listeners=LISTENERS):
    """Broker ``broker_id``: PLAINTEXT on 127.0.0.1:900<id>, EXTERNAL on ext-<id>:1900<id>."""
    endpoints = {"PLAINTEXT": SimpleNamespace(host="127.0.0.1", port=9000 + broker_id),
                 "EXTERNAL": SimpleNamespace(host=f"ext-{broker_id}", port=19000 + broker_id)}
    return SimpleNamespace(listeners={n: endpoints[n] for n in listeners}, rack=RACKS[broker_id], fenced=fenced,
                           epoch=20, in_controlled_shutdown=False)


def image(leader, epoch, *, replicas=(1, 2, 3), brokers=None, more=()):
    """t-0 led by ``leader``; ``more``: (leader, epoch, replicas) of t-1, t-2, ..."""
    partitions = {i: SimpleNamespace(leader=lead, leader_epoch=e, replicas=r, isr=r, partition_epoch=e)
                  for i, (lead, e, r) in enumerate([(leader, epoch, replicas), *more])}
    topic = SimpleNamespace(name="t", id=TOPIC_ID, partitions=partitions)
    return SimpleNamespace(topics_by_name={"t": topic}, topics_by_id={TOPIC_ID: topic}, configs={},
                           brokers={i: registration(i) for i in (1, 2, 3)} if brokers is None else brokers)


def broker_on(tmp_path, leader, epoch, **kwargs):
    broker, state = make_broker(tmp_path)     # the request's listener name is the context's; the image has both
    state["image"] = image(leader, epoch, **kwargs)
    broker.on_metadata()
    return broker, state


def roundtrip(response, api_key, version):
    """The answer as the client reads it: encoded and decoded at the request's version."""
    return decode_response(encode_response(response, version, 7)[4:], api_key, version)[1]


async def produce(broker, version=10, listener="PLAINTEXT", by_id=None):
    by_id = version >= 13 if by_id is None else by_id
    request = ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
        name="" if by_id else "t", topic_id=TOPIC_ID if by_id else uuid.UUID(int=0),
        partition_data=[PartitionProduceData(index=0, records=build_batch([(b"k", b"v")]))])])
    response = await broker.produce_api.produce(SimpleNamespace(api_version=version, listener_name=listener), request)
    response = roundtrip(response, 0, version)
    p = response.responses[0].partition_responses[0]
    leader = (p.current_leader.leader_id, p.current_leader.leader_epoch) if version >= 10 else None
    return p.error_code, leader, endpoints(response)


async def fetch(broker, request, version=16, listener="PLAINTEXT"):
    response = await asyncio.wait_for(broker.fetch_api.fetch(
        SimpleNamespace(api_version=version, listener_name=listener), request), 10)
    response = roundtrip(response, 1, version)
    p = response.responses[0].partitions[0]
    return p.error_code, (p.current_leader.leader_id, p.current_leader.leader_epoch), endpoints(response)


def endpoints(response):
    return [(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints]


def test_a_produce_to_a_follower_names_the_leader_and_its_endpoint_on_the_requests_listener(tmp_path):
    async def go():
        broker, _ = broker_on(tmp_path, leader=2, epoch=4)
        assert ("t", 0) in broker.replica_roles.followers
        plain = (Errors.NOT_LEADER_OR_FOLLOWER, (2, 4), [(2, "127.0.0.1", 9002, "b")])
        assert await produce(broker) == plain
        assert await produce(broker, 13) == plain                       # topic by id
        assert await produce(broker, listener="EXTERNAL") == (Errors.NOT_LEADER_OR_FOLLOWER, (2, 4),
                                                              [(2, "ext-2", 19002, "b")])
        assert await produce(broker, 9) == (Errors.NOT_LEADER_OR_FOLLOWER, None, [])    # before v10: nothing
        await close(broker)
    asyncio.run(go())


def test_a_leader_without_an_endpoint_is_named_alone(tmp_path):
    """MetadataCache.getAliveBrokerNode: a fenced leader, or one without the request's listener, has
    no endpoint; the partition still names it."""
    async def go():
        broker, state = broker_on(tmp_path, leader=2, epoch=4)
        brokers = {1: registration(1), 2: registration(2, fenced=True), 3: registration(3)}
        state["image"] = image(2, 4, brokers=brokers)
        broker.on_metadata()
        assert await produce(broker) == (Errors.NOT_LEADER_OR_FOLLOWER, (2, 4), [])
        brokers[2] = registration(2, listeners=("PLAINTEXT",))
        assert await produce(broker, listener="EXTERNAL") == (Errors.NOT_LEADER_OR_FOLLOWER, (2, 4), [])
        assert await produce(broker) == (Errors.NOT_LEADER_OR_FOLLOWER, (2, 4), [(2, "127.0.0.1", 9002, "b")])
        await close(broker)
    asyncio.run(go())


def test_a_partition_not_hosted_here_names_the_leader_of_the_metadata(tmp_path):
    async def go():
        broker, _ = broker_on(tmp_path, leader=3, epoch=9, replicas=(2, 3))
        assert ("t", 0) not in broker.replica_roles.followers and ("t", 0) not in broker.partitions
        assert await produce(broker) == (Errors.NOT_LEADER_OR_FOLLOWER, (3, 9), [(3, "127.0.0.1", 9003, None)])
        data = await fetch(broker, consumer_fetch(16, offset=0))
        assert data == (Errors.NOT_LEADER_OR_FOLLOWER, (3, 9), [(3, "127.0.0.1", 9003, None)])
        await close(broker)
    asyncio.run(go())


def test_a_fetch_refused_by_a_follower_names_the_leader_from_v16(tmp_path):
    async def go():
        broker, _ = broker_on(tmp_path, leader=2, epoch=4)
        named = [(2, "127.0.0.1", 9002, "b")]
        assert await fetch(broker, consumer_fetch(16, offset=0, epoch=3)) == (Errors.FENCED_LEADER_EPOCH, (2, 4), named)
        assert await fetch(broker, consumer_fetch(16, offset=0, epoch=3), listener="EXTERNAL") == \
            (Errors.FENCED_LEADER_EPOCH, (2, 4), [(2, "ext-2", 19002, "b")])
        # a follower's fetch: the leader named, no endpoints (KafkaApis answers followers without them)
        assert await fetch(broker, consumer_fetch(16, offset=0, replica=3)) == (Errors.NOT_LEADER_OR_FOLLOWER, (2, 4), [])
        # UNKNOWN_LEADER_EPOCH names no leader; neither does a fetch the follower serves
        assert await fetch(broker, consumer_fetch(16, offset=0, epoch=5)) == (Errors.UNKNOWN_LEADER_EPOCH, (-1, -1), [])
        assert await fetch(broker, consumer_fetch(16, offset=0, epoch=4)) == (Errors.NONE, (-1, -1), [])
        # before v16 nothing (v15 decodes the tagged field, which stays unset)
        assert await fetch(broker, consumer_fetch(15, offset=0, epoch=3), 15) == (Errors.FENCED_LEADER_EPOCH, (-1, -1), [])
        await close(broker)
    asyncio.run(go())


def test_a_stale_epoch_on_the_leader_names_the_leader_itself(tmp_path):
    async def go():
        broker, _ = broker_on(tmp_path, leader=1, epoch=6)
        broker.partitions[("t", 0)].log.append(build_batch([(b"k", b"v")]), assign_offsets=True, leader_epoch=6)
        assert await fetch(broker, consumer_fetch(16, offset=0, epoch=5)) == \
            (Errors.FENCED_LEADER_EPOCH, (1, 6), [(1, "127.0.0.1", 9001, "a")])
        assert (await produce(broker))[:2] == (Errors.NONE, (-1, -1)) and (await produce(broker))[2] == []
        await close(broker)
    asyncio.run(go())


def test_each_leader_is_named_once_and_a_fetch_session_keeps_the_refused_partitions(tmp_path):
    async def go():
        elsewhere = (2, 3)          # partitions 1-3 are not hosted on broker 1
        broker, _ = broker_on(tmp_path, leader=1, epoch=2, more=[(3, 5, elsewhere), (2, 6, elsewhere), (3, 5, elsewhere)])
        request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
                               session_epoch=0, replica_state=ReplicaState(replica_id=-1, replica_epoch=-1),
                               topics=[FetchTopic(topic_id=TOPIC_ID, partitions=[FetchPartition(
                                   partition=i, fetch_offset=0, partition_max_bytes=1 << 20) for i in range(4)])])
        ctx = SimpleNamespace(api_version=16, listener_name="PLAINTEXT")
        both = [(2, "127.0.0.1", 9002, "b"), (3, "127.0.0.1", 9003, None)]
        for _ in range(2):          # the full fetch that makes the session, then an incremental one
            response = roundtrip(await broker.fetch_api.fetch(ctx, request), 1, 16)
            answered = {p.partition_index: (p.error_code, p.current_leader.leader_id, p.current_leader.leader_epoch)
                        for p in response.responses[0].partitions}
            assert answered == {i: (Errors.NOT_LEADER_OR_FOLLOWER, *leader) for i, leader in
                                ((1, (3, 5)), (2, (2, 6)), (3, (3, 5)))} | \
                ({0: (Errors.NONE, -1, -1)} if request.session_epoch == 0 else {})     # unchanged: left out
            assert endpoints(response) == both and response.session_id > 0
            request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                                   session_id=response.session_id, session_epoch=1,
                                   replica_state=ReplicaState(replica_id=-1, replica_epoch=-1), topics=[])
        await close(broker)
    asyncio.run(go())


def test_endpoints_come_in_the_order_of_kafkas_scala_hash_map():
    assert scala_hash_map_order([3, 1, 2]) == [1, 2, 3]
    assert scala_hash_map_order([2, 17]) == [17, 2]                    # slot 1 before slot 2 (16 slots)
    assert scala_hash_map_order([16, 0]) == [0, 16]                    # one slot: by hash
    assert scala_hash_map_order(list(range(10)) + [17]) == [0, 1, 17] + list(range(2, 10))     # 11 keys: 16 slots
    assert scala_hash_map_order(list(range(11)) + [17]) == list(range(11)) + [17]     # 12 keys: 32 slots
    assert scala_hash_map_order([1 << 16, 2]) == [1 << 16, 2]          # hash 65536 ^ 1 = 65537: slot 1
