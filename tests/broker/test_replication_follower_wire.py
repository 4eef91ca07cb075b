"""Replication across kafkawire brokers, the follower side, on the wire: three combined nodes
(three voters, each process.roles=broker,controller, `kafkawire server-start` subprocesses on free
ports) register three brokers; a topic with replication factor 3 is created, batches are produced
to its leader, and the two followers' replica fetchers copy them: each follower's segment holds
the leader's bytes, byte for byte (offsets and partition leader epochs as the leader wrote them),
and a follower refuses produce and consumer fetches before v11 with NOT_LEADER_OR_FOLLOWER (from
v11 on it serves them, KIP-392: test_read_from_followers*.py). With the leader
killed, a follower leads with the log it copied and the other follows it; restarted, the killed
broker catches up, rejoins the ISR and, its partition's first replica, leads it again at the
active controller's next automatic leader balancing (``leader.imbalance.check.interval.seconds=1``
here; Kafka's electPreferred task, kafkawire/controller/leader_balance.py).
"""
from __future__ import annotations

import contextlib
import os

import pytest

from kafkawire.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from kafkawire.records.builder import build_batch

from .wire import call, serving_brokers

WAIT_S = 60
NODES = (1, 2, 3)


@contextlib.contextmanager
def three_combined_nodes(base, properties=None, node_properties=None):
    """Three combined nodes on free ports under ``base``, killed by pid at the end; yields the
    quorum and node id -> broker (host, port). ``properties``: more settings for every node;
    ``node_properties``: node id -> more settings of that node."""
    ports = dict(zip(NODES, free_ports(len(NODES))))
    quorum = LocalQuorum(base, voters=3, properties={
        "process.roles": "broker,controller",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300",
        "replica.fetch.backoff.ms": "100", **(properties or {}),
    })
    for i in NODES:
        quorum.node_properties[i] = {"listeners": f"PLAINTEXT://127.0.0.1:{ports[i]},"
                                                  f"CONTROLLER://127.0.0.1:{quorum.ports[i]}",
                                     **(node_properties or {}).get(i, {})}
    quorum.format()
    quorum.start_all()
    brokers = {i: ("127.0.0.1", ports[i]) for i in NODES}
    with serving_brokers(quorum, brokers, WAIT_S):
        yield quorum, brokers


def _partition(broker, topic: str):
    response = call(broker, MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                            allow_auto_topic_creation=False), 12)
    return response.topics[0].partitions[0]


def _partition_or_none(broker, topic: str):
    try:
        return _partition(broker, topic)
    except Exception:            # the node asked may be electing a new controller
        return None


def produce(broker, batches: int, first: int = 0) -> None:
    for n in range(first, first + batches):
        records = build_batch([(f"k{n}{i}".encode(), b"v" * (50 + i)) for i in range(5)])
        produced = call(broker, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="replicated", partition_data=[PartitionProduceData(index=0, records=records)])]), 9)
        assert produced.responses[0].partition_responses[0].error_code == Errors.NONE


def _segment(quorum, node_id: int, topic: str) -> bytes:
    path = os.path.join(quorum.data_dir(node_id), f"{topic}-0", f"{0:020d}.log")
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def test_followers_copy_the_leaders_batches_byte_for_byte(tmp_path):
    """Replica fetchers append the leader's batches as the leader wrote them: after three produces
    (acks=1) to the leader of a replication-factor-3 partition, both followers' first segment
    equals the leader's; a follower answers produce and a consumer's fetch v10 with NOT_LEADER_OR_FOLLOWER.
    The leader killed (-9), a follower is made leader with the log it copied (makeLeader keeps it),
    and the other follower, now following it, copies what is produced there. The killed broker
    restarted, nothing elects it (the partition has a leader) but the controller's leader
    balancing, once it is back in the ISR: then it leads again, with the log it copied meanwhile.
    (tests/controller/test_leader_balance.py has the balancing's rules; without it the last wait fails.)"""
    with three_combined_nodes(tmp_path, {"leader.imbalance.check.interval.seconds": "1"}) as (quorum, brokers):
        response = call(brokers[1], CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name="replicated", num_partitions=1, replication_factor=3, assignments=[], configs=[])]))
        assert [t.error_code for t in response.topics] == [Errors.NONE]
        partition = quorum.wait_until(lambda: (lambda p: p if p.error_code == Errors.NONE and p.leader_id > 0 else None)(
            _partition(brokers[1], "replicated")), WAIT_S, "a leader for the new topic")
        assert sorted(partition.replica_nodes) == list(NODES)
        leader = partition.leader_id
        assert partition.replica_nodes[0] == leader          # the first replica leads a new partition
        produce(brokers[leader], 3)
        expected = _segment(quorum, leader, "replicated")
        assert len(expected) > 0
        followers = [i for i in NODES if i != leader]
        quorum.wait_until(lambda: all(_segment(quorum, i, "replicated") == expected for i in followers), WAIT_S,
                          "the followers to hold the leader's batches")
        follower = brokers[followers[0]]
        refused = call(follower, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="replicated", partition_data=[PartitionProduceData(index=0, records=build_batch([(b"k", b"v")]))])]), 9)
        assert refused.responses[0].partition_responses[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER
        fetched = call(follower, FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                                              topics=[FetchTopic(topic="replicated", partitions=[FetchPartition(
                                                  partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 10)
        assert fetched.responses[0].partitions[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER

        quorum.kill(leader)                   # kill -9: a follower is made leader with the log it copied
        survivors = [i for i in NODES if i != leader]
        new = quorum.wait_until(lambda: (lambda p: p if p.leader_id in survivors else None)(
            _partition_or_none(brokers[survivors[0]], "replicated")), WAIT_S, "a new leader").leader_id
        (other,) = [i for i in survivors if i != new]
        produce(brokers[new], 2)
        assert _segment(quorum, new, "replicated").startswith(expected)
        quorum.wait_until(lambda: _segment(quorum, other, "replicated") == _segment(quorum, new, "replicated"),
                          WAIT_S, "the remaining follower to follow the new leader")

        quorum.start(leader)
        moved_epoch = _partition(brokers[new], "replicated").leader_epoch
        back = quorum.wait_until(lambda: (lambda p: p if p is not None and p.leader_id == leader else None)(
            _partition_or_none(brokers[new], "replicated")), WAIT_S, "the first replica to lead again")
        assert sorted(back.isr_nodes) == list(NODES) and back.leader_epoch > moved_epoch
        produce(brokers[leader], 1, first=5)           # it leads: it takes a produce, and the others copy it
        quorum.wait_until(lambda: all(_segment(quorum, i, "replicated") == _segment(quorum, leader, "replicated")
                                      for i in survivors), WAIT_S, "the others to follow the first replica again")


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
