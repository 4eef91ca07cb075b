"""Reading from followers (KIP-392), in process: Kafka's RackAwareReplicaSelector and
ReplicaManager.findPreferredReadReplica (kafkawire.broker.replica_selector) rule by rule, and a real
Broker (kafkawire.broker) on a stand-in metadata image answering consumer Fetches as Kafka 4.3.1's
ReplicaManager/Partition do: on the leader, a preferred read replica and no records exactly when
Kafka names one; on a follower, records below the follower's own high watermark from Fetch v11 on,
Kafka's errors otherwise, and long polls woken by the follower's high watermark.
The three-broker wire test with confluent-kafka is test_read_from_followers_wire.py."""
from __future__ import annotations

import asyncio
import logging
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker import Broker
from kafkawire.broker.broker import BrokerStartError
from kafkawire.broker.replica_selector import (RACK_AWARE_REPLICA_SELECTOR, FollowerView, SelectorError,
                                               preferred_read_replica, replica_selector)
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.net.config import parse_server_config
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch

TOPIC_ID = uuid.UUID(int=11)
RACKS = {1: "a", 2: "b", 3: "b"}
NOW = 1_000_000


# -- the selector --

def follower(broker_id, *, in_isr=True, start=0, end=10, caught_up=NOW, rack="b"):
    return FollowerView(broker_id, in_isr, start, end, caught_up, None if rack is None else (rack,))


def choose(followers, client_rack="b", fetch_offset=5, leader_rack=("a",), selector=RACK_AWARE_REPLICA_SELECTOR):
    return preferred_read_replica(replica_selector(selector), leader_id=1, leader_log_end=10, leader_rack=leader_rack,
                                  followers=followers, client_rack=client_rack, fetch_offset=fetch_offset, now_ms=NOW)


def test_the_rack_aware_selector_sends_a_consumer_to_an_in_sync_replica_of_its_rack():
    assert choose([follower(2)]) == 2
    assert choose([follower(2)], selector=None) is None                  # unset: the leader, always
    assert choose([follower(2)], client_rack="") is None                 # a client without a rack
    assert choose([follower(2)], client_rack=None) is None
    assert choose([follower(2)], client_rack="c") is None                # no replica in its rack
    assert choose([follower(2)], leader_rack=("b",)) is None             # the leader is in its rack


def test_only_in_sync_replicas_holding_the_fetch_offset_and_reachable_on_the_listener_are_candidates():
    assert choose([follower(2, in_isr=False)]) is None
    assert choose([follower(2, end=4)]) is None                          # its log end below the offset
    assert choose([follower(2, end=5)]) == 2                             # the offset is its log end: fine
    assert choose([follower(2, start=6)]) is None                        # its log start above the offset
    assert choose([follower(2, rack=None)]) is None                      # no endpoint on the listener
    assert choose([follower(2, rack=None)], client_rack="c", leader_rack=None) is None


def test_ties_go_to_the_largest_log_end_then_the_most_recently_caught_up_then_the_highest_id():
    assert choose([follower(2, end=9), follower(3, end=8)]) == 2
    assert choose([follower(2, caught_up=NOW - 5), follower(3, caught_up=NOW - 50)]) == 2
    assert choose([follower(2), follower(3)]) == 3
    assert choose([follower(2), follower(3, in_isr=False)]) == 2


def test_replica_selector_class_names_kafkas_class_or_stops_the_broker(tmp_path):
    assert replica_selector(None) is None and replica_selector(RACK_AWARE_REPLICA_SELECTOR) is not None
    with pytest.raises(SelectorError, match="replica.selector.class=com.example.Nearest"):
        replica_selector("com.example.Nearest")
    with pytest.raises(BrokerStartError, match="replica.selector.class=com.example.Nearest: kafkawire knows no"):
        make_broker(tmp_path, "replica.selector.class=com.example.Nearest\n")


# -- a broker on a stand-in image --

def broker_registration(broker_id, *, fenced=False):
    return SimpleNamespace(listeners={"PLAINTEXT": SimpleNamespace(host="127.0.0.1", port=1)}, rack=RACKS[broker_id],
                           fenced=fenced, epoch=20, in_controlled_shutdown=False)


def image_with(leader: int, epoch: int = 1, *, isr=(1, 2, 3), brokers=None):
    registration = SimpleNamespace(leader=leader, leader_epoch=epoch, replicas=(1, 2, 3), isr=tuple(isr),
                                   partition_epoch=epoch)
    topic = SimpleNamespace(name="t", id=TOPIC_ID, partitions={0: registration})
    return SimpleNamespace(topics_by_name={"t": topic}, topics_by_id={TOPIC_ID: topic}, configs={},
                           brokers={} if brokers is None else brokers)


def make_broker(tmp_path, extra: str = ""):
    config = parse_server_config(f"process.roles=broker,controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                                 f"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0\nbroker.rack=a\n"
                                 f"controller.quorum.bootstrap.servers=127.0.0.1:1\nlog.dirs={tmp_path}\n{extra}")
    state = {"image": image_with(1)}
    broker = Broker(config, cluster_id="c", directory_id=None, image=lambda: state["image"], metadata_offset=lambda: 0,
                    send_to_controller=None, supported_features={})
    broker.lifecycle = SimpleNamespace(state="RUNNING", poke=lambda: None, broker_epoch=5)
    broker.group_apis.on_metadata = broker.txn_apis.on_metadata = lambda: None      # not under test here
    return broker, state


async def close(broker):
    await broker.replica_roles.close()
    for partition in broker.partitions.values():
        partition.close()
    broker.state_writes.close()


def consumer_fetch(version=12, *, offset=0, rack="b", epoch=-1, min_bytes=0, wait_ms=0, replica=-1, committed=False):
    partition = FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20,
                               current_leader_epoch=epoch)
    request = FetchRequest(max_wait_ms=wait_ms, min_bytes=min_bytes, max_bytes=1 << 20, rack_id=rack,
                           isolation_level=1 if committed else 0, session_id=0, session_epoch=-1,
                           topics=[FetchTopic(topic="t", topic_id=TOPIC_ID, partitions=[partition])])
    if version >= 15:
        request.replica_state = ReplicaState(replica_id=replica, replica_epoch=20)
    else:
        request.replica_id = replica
    return request


async def fetch(broker, request, version=12):
    response = await asyncio.wait_for(broker.fetch_api.fetch(
        SimpleNamespace(api_version=version, listener_name="PLAINTEXT"), request), 10)
    return response.responses[0].partitions[0]


def values(records) -> list[bytes]:
    return [bytes(r.value) for batch in iter_batches(records or b"") for r in batch]


def leading_broker(tmp_path, extra=f"replica.selector.class={RACK_AWARE_REPLICA_SELECTOR}\n"):
    """Broker 1 (rack a) leads t-0 with followers 2 and 3 (rack b), three records, both followers
    caught up to offset 3 (2 more recently than 3: 3's log end is 2)."""
    broker, state = make_broker(tmp_path, extra)
    state["image"] = image_with(1, brokers={i: broker_registration(i) for i in (1, 2, 3)})
    broker.on_metadata()
    partition = broker.partitions[("t", 0)]
    for n in range(3):
        partition.log.append(build_batch([(b"k", b"v%d" % n)]), assign_offsets=True, leader_epoch=1)
    now = broker.replication.clock()
    broker.replication.follower_fetched(partition, 2, 20, 3, 0, 3)
    broker.replication.follower_fetched(partition, 3, 20, 2, 0, 3)
    assert partition.high_watermark() == 2 and partition.replicas.followers[2].last_caught_up_time_ms >= now
    return broker, state, partition


def test_the_leader_answers_a_preferred_read_replica_without_records_exactly_when_kafka_does(tmp_path, caplog):
    async def go():
        broker, state, partition = leading_broker(tmp_path)
        with caplog.at_level(logging.DEBUG, logger="kafkawire.broker.fetch"):
            data = await fetch(broker, consumer_fetch(offset=1, rack="b"))
        assert (data.error_code, data.preferred_read_replica, data.records) == (Errors.NONE, 2, b"")
        # the selector's choice at DEBUG, as Kafka's ReplicaManager logs it
        assert [r.getMessage() for r in caplog.records if r.name == "kafkawire.broker.fetch"] == [
            "Replica selector RackAwareReplicaSelector returned preferred replica 2 for t-0 "
            "(client rack 'b', listener PLAINTEXT)"]
        assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (2, 2, 0)
        assert data.aborted_transactions is None
        data = await fetch(broker, consumer_fetch(offset=3, rack="b"))        # only 2 has offset 3
        assert data.preferred_read_replica == 2
        # a long poll with a preferred replica is answered at once (ReplicaManager.fetchMessages)
        data = await fetch(broker, consumer_fetch(offset=1, rack="b", min_bytes=1 << 20, wait_ms=30_000))
        assert data.preferred_read_replica == 2
        for request, version in ((consumer_fetch(offset=0, rack="a"), 12),            # the leader's rack
                                 (consumer_fetch(offset=0, rack=""), 12),             # no rack
                                 (consumer_fetch(10, offset=0, rack="b"), 10),        # before v11
                                 (consumer_fetch(15, offset=0, rack="b", replica=2), 15)):    # a follower's fetch
            data = await fetch(broker, request, version)
            assert data.preferred_read_replica == -1 and data.error_code == Errors.NONE, (version, request.rack_id)
            assert values(data.records)[:2] == [b"v0", b"v1"]
        data = await fetch(broker, consumer_fetch(offset=0, rack="b", epoch=0))       # the epoch is checked first
        assert (data.error_code, data.preferred_read_replica) == (Errors.FENCED_LEADER_EPOCH, -1)

        state["image"] = image_with(1, brokers={1: broker_registration(1), 2: broker_registration(2, fenced=True),
                                                3: broker_registration(3)}, isr=(1, 3))
        broker.on_metadata()                # 2 fenced and out of the ISR: 3 is the one, from the offset it has
        assert (await fetch(broker, consumer_fetch(offset=2, rack="b"))).preferred_read_replica == 3
        data = await fetch(broker, consumer_fetch(offset=3, rack="b"))
        assert (data.preferred_read_replica, values(data.records)) == (-1, [])
        await close(broker)
    asyncio.run(go())


def test_without_a_selector_the_leader_serves_every_consumer(tmp_path):
    async def go():
        broker, _, _ = leading_broker(tmp_path, extra="")
        data = await fetch(broker, consumer_fetch(offset=0, rack="b"))
        assert (data.preferred_read_replica, values(data.records)) == (-1, [b"v0", b"v1"])
        await close(broker)
    asyncio.run(go())


def test_the_preferred_read_replica_survives_an_incremental_fetch_session(tmp_path):
    """The session answer always carries a partition with a preferred read replica (CachedPartition)."""
    async def go():
        broker, _, _ = leading_broker(tmp_path)
        full = consumer_fetch(16, offset=1, rack="b")
        full.session_epoch = 0
        ctx = SimpleNamespace(api_version=16, listener_name="PLAINTEXT")
        first = await broker.fetch_api.fetch(ctx, full)
        assert first.session_id > 0 and first.responses[0].partitions[0].preferred_read_replica == 2
        again = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, rack_id="b", session_id=first.session_id,
                             session_epoch=1, topics=[])
        again.replica_state = ReplicaState(replica_id=-1, replica_epoch=-1)
        second = await broker.fetch_api.fetch(ctx, again)
        assert [p.preferred_read_replica for t in second.responses for p in t.partitions] == [2]
        await close(broker)
    asyncio.run(go())


def following_broker(tmp_path):
    """Broker 1 follows t-0 (leader 2, epoch 4): offsets 0-2 copied, the leader's high watermark 2."""
    broker, state = make_broker(tmp_path)
    state["image"] = image_with(2, 4)
    broker.on_metadata()
    replica = broker.replica_roles.followers[("t", 0)]
    for n in range(3):
        replica.append(build_batch([(b"k", b"v%d" % n)], base_offset=n, partition_leader_epoch=4))
    replica.update_from_leader(high_watermark=2, log_start_offset=0)
    return broker, replica


def test_a_follower_serves_consumers_from_v11_below_its_high_watermark(tmp_path):
    async def go():
        broker, replica = following_broker(tmp_path)
        data = await fetch(broker, consumer_fetch(offset=0, rack="b", epoch=4))
        assert data.error_code == Errors.NONE and values(data.records) == [b"v0", b"v1"]
        assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (2, 2, 0)
        data = await fetch(broker, consumer_fetch(offset=0, rack="b", committed=True))
        assert values(data.records) == [b"v0", b"v1"] and data.aborted_transactions == []
        data = await fetch(broker, consumer_fetch(offset=2))               # above its high watermark: nothing yet
        assert (data.error_code, data.records, data.high_watermark) == (Errors.NONE, b"", 2)
        data = await fetch(broker, consumer_fetch(offset=4))               # past its log end
        assert (data.error_code, data.aborted_transactions) == (Errors.OFFSET_OUT_OF_RANGE, None)
        await close(broker)
    asyncio.run(go())


def test_a_follower_refuses_as_kafka_does(tmp_path):
    """Partition.getLocalLog: the current leader epoch against the follower's, then the leader-only
    fetches (before v11, another follower's) NOT_LEADER_OR_FOLLOWER; ListOffsets stays leader-only."""
    async def go():
        broker, _ = following_broker(tmp_path)
        for request, version, error in ((consumer_fetch(offset=0, epoch=3), 12, Errors.FENCED_LEADER_EPOCH),
                                        (consumer_fetch(offset=0, epoch=5), 12, Errors.UNKNOWN_LEADER_EPOCH),
                                        (consumer_fetch(10, offset=0, epoch=3), 10, Errors.FENCED_LEADER_EPOCH),
                                        (consumer_fetch(10, offset=0), 10, Errors.NOT_LEADER_OR_FOLLOWER),
                                        (consumer_fetch(15, offset=0, replica=3), 15, Errors.NOT_LEADER_OR_FOLLOWER)):
            data = await fetch(broker, request, version)
            assert (data.error_code, data.records) == (error, b""), (version, request.topics[0].partitions[0])
        ctx = SimpleNamespace(api_version=7, listener_name="PLAINTEXT")
        for epoch, error in ((-1, Errors.NOT_LEADER_OR_FOLLOWER), (3, Errors.FENCED_LEADER_EPOCH),
                             (5, Errors.UNKNOWN_LEADER_EPOCH)):
            response = await broker.fetch_api.list_offsets(ctx, ListOffsetsRequest(replica_id=-1, topics=[
                ListOffsetsTopic(name="t", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1,
                                                                            current_leader_epoch=epoch)])]))
            assert response.topics[0].partitions[0].error_code == error
        await close(broker)
    asyncio.run(go())


def test_the_followers_high_watermark_wakes_a_consumers_long_poll(tmp_path):
    """ReplicaFetcherThread.completeDelayedFetchRequests: the long poll waiting at the follower's
    high watermark answers the record once the leader's answer moves it."""
    async def go():
        broker, replica = following_broker(tmp_path)
        polling, wait = asyncio.Event(), broker.wait_for_appends

        async def wait_for_appends(seen, timeout):
            polling.set()           # the fetch read once, found nothing, and waits now
            await wait(seen, timeout)
        broker.wait_for_appends = wait_for_appends
        waiting = asyncio.ensure_future(fetch(broker, consumer_fetch(offset=2, min_bytes=1, wait_ms=30_000)))
        await asyncio.wait_for(polling.wait(), 10)
        replica.update_from_leader(high_watermark=3, log_start_offset=0)
        data = await asyncio.wait_for(waiting, 10)     # long before the poll's 30 s
        assert (data.error_code, values(data.records), data.high_watermark) == (Errors.NONE, [b"v2"], 3)
        await close(broker)
    asyncio.run(go())


def test_the_broker_registers_its_rack(tmp_path):
    broker, _ = make_broker(tmp_path)
    broker.servers = [SimpleNamespace(listener_name="PLAINTEXT", port=9092)]
    assert broker._registration().request().rack == "a"
    broker.state_writes.close()
