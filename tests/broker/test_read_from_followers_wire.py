"""Reading from followers (KIP-392) on the wire: three combined nodes (`kafkawire server-start`
subprocesses, three voters), each with its own `broker.rack` and
`replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector`. A topic with
replication factor 3 gets records (acks=all) on its leader; a confluent-kafka consumer with
`client.rack` set to a follower's rack reads every record, and it read them from that follower:
the leader answers a Fetch v12 from that rack with the follower as preferred read replica and no
records, and librdkafka's statistics show the partition fetched from the follower (its `broker`)
with Fetch requests sent to it. The rules one by one are in test_read_from_followers.py.
"""
from __future__ import annotations

import json

import pytest

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.protocol.error_codes import Errors

from .test_replication_follower_wire import NODES, WAIT_S, _partition, three_combined_nodes
from .wire import call

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "nearest"
RECORDS = 20
SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def _leader_fetch(broker, rack: str):
    request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, rack_id=rack,
                           topics=[FetchTopic(topic=TOPIC, partitions=[FetchPartition(
                               partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    return call(broker, request, 12).responses[0].partitions[0]


def _in_sync(broker):
    p = _partition(broker, TOPIC)
    return p if p.error_code == Errors.NONE and p.leader_id > 0 and sorted(p.isr_nodes) == list(NODES) else None


def test_a_consumer_in_a_followers_rack_reads_every_record_from_that_follower(tmp_path):
    racks = {i: f"rack-{i}" for i in NODES}
    with three_combined_nodes(tmp_path, properties={"replica.selector.class": SELECTOR},
                              node_properties={i: {"broker.rack": racks[i]} for i in NODES}) as (quorum, brokers):
        created = call(brokers[1], CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name=TOPIC, num_partitions=1, replication_factor=3, assignments=[], configs=[])]))
        assert [t.error_code for t in created.topics] == [Errors.NONE]
        partition = quorum.wait_until(lambda: _in_sync(brokers[1]), WAIT_S, "the topic's three replicas in sync")
        leader = partition.leader_id
        follower = min(i for i in NODES if i != leader)
        bootstrap = ",".join(f"{h}:{p}" for h, p in brokers.values())

        producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for n in range(RECORDS):
            producer.produce(TOPIC, key=b"k", value=b"v%d" % n, partition=0)
        assert producer.flush(WAIT_S) == 0

        # The follower knows the high watermark one fetch later; until then the leader may still serve.
        answer = quorum.wait_until(lambda: (lambda d: d if d.preferred_read_replica == follower else None)(
            _leader_fetch(brokers[leader], racks[follower])), WAIT_S, "the leader to name the follower")
        assert answer.error_code == Errors.NONE and answer.records in (b"", None)

        stats = []
        consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": "nearest-readers", "client.rack": racks[follower],
            "enable.auto.commit": False, "statistics.interval.ms": 200, "stats_cb": stats.append,
            "fetch.wait.max.ms": 100})
        try:
            consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, confluent_kafka.OFFSET_BEGINNING)])
            values = []

            def read_all():
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    values.append(message.value())
                return len(values) >= RECORDS
            quorum.wait_until(read_all, WAIT_S, f"the consumer to read {RECORDS} records")
            assert values == [b"v%d" % n for n in range(RECORDS)]
            seen = quorum.wait_until(lambda: (consumer.poll(0.1), _fetched_from(stats, follower))[1], WAIT_S,
                                     "statistics showing the partition fetched from the follower")
            assert seen["leader"] == leader and seen["fetches_to_follower"] > 0
        finally:
            consumer.close()


def _fetched_from(stats: list, follower: int):
    """The last statistics (librdkafka's STATISTICS.md) if they show partition 0 fetched from
    ``follower`` (``broker``, the broker messages are being fetched from) and Fetch requests sent
    to it; else None."""
    if not stats:
        return None
    last = json.loads(stats[-1])
    partition = last.get("topics", {}).get(TOPIC, {}).get("partitions", {}).get("0")
    fetches = sum(b.get("req", {}).get("Fetch", 0) for b in last.get("brokers", {}).values()
                  if b.get("nodeid") == follower)
    if partition is None or partition.get("broker") != follower or fetches == 0:
        return None
    return {"leader": partition.get("leader"), "fetches_to_follower": fetches}
