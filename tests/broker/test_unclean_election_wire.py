"""Unclean leader elections among kafkawire brokers, on the wire: one `kafkawire server-start`
controller (node 1, the one voter, so it stays active whichever brokers die) and three broker-only
nodes (2, 3, 4) on free ports of 127.0.0.1, killed by pid at the end. A partition of replication
factor 3 takes acks=1 writes while one follower is down (out of the ISR), then its leader and
in-sync follower are killed -9 and the out-of-sync replica is started alone. With
``unclean.leader.election.enable=true`` on the topic the controller elects it as it unfences it
(an unclean election): it takes writes, and the old leader, restarted, truncates its extra records
(its last epoch diverges from the new leader's log: OffsetsForLeaderEpoch) and copies the new
leader's, so every replica ends with the same segment. Without the setting the partition stays
leaderless (leader -1, produce refused with NOT_LEADER_OR_FOLLOWER) until an ISR member returns,
which leads with every acknowledged record. The controller's rules are tested with stand-in
brokers in tests/controller/test_unclean_elections.py.
"""
from __future__ import annotations

import contextlib

import pytest

from kafkawire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kafkawire.messages.describe_topic_partitions_request import DescribeTopicPartitionsRequest, TopicRequest
from kafkawire.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch

from .test_replication_follower_wire import _segment, produce
from .wire import call, registered

pytestmark = pytest.mark.slow

WAIT_S = 60
TOPIC = "replicated"          # the topic test_replication_follower_wire.produce writes to
CONTROLLER, BROKERS = 1, (2, 3, 4)


@contextlib.contextmanager
def controller_and_three_brokers(base):
    """The quorum (node 1 the controller, 2-4 broker-only nodes) once the three brokers are
    registered; every process killed by pid on the way out."""
    quorum = LocalQuorum(base, voters=1, extra_nodes=len(BROKERS), properties={
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300",
        "controller.quorum.election.timeout.ms": "200",     # one voter: no need to wait for others
        "replica.fetch.backoff.ms": "100",
    })
    for broker in BROKERS:
        quorum.node_properties[broker] = {"process.roles": "broker",
                                          "listeners": f"PLAINTEXT://127.0.0.1:{quorum.ports[broker]}"}
    quorum.format(mode="standalone")
    try:
        quorum.start_all()
        quorum.wait_until(lambda: registered(quorum.address(BROKERS[0])) == list(BROKERS), WAIT_S,
                          "the three brokers to register", watch=[CONTROLLER, *BROKERS])
        yield quorum
    finally:
        for node_id in (*BROKERS, CONTROLLER):
            quorum.kill(node_id)


def partition_at(quorum, broker: int):
    """Partition 0 of the topic as ``broker``'s metadata has it, or None while it does not answer."""
    try:
        response = call(quorum.address(broker), MetadataRequest(
            topics=[MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=False), 12, timeout_ms=3000)
    except Exception:                      # not listening yet, or the connection reset
        return None
    return response.topics[0].partitions[0] if response.topics and response.topics[0].partitions else None


def wait_for(quorum, broker: int, condition, what: str):
    return quorum.wait_until(lambda: (lambda p: p if p is not None and condition(p) else None)(
        partition_at(quorum, broker)), WAIT_S, what)


def produce_error(quorum, broker: int) -> int:
    response = call(quorum.address(broker), ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=TOPIC, partition_data=[PartitionProduceData(index=0, records=build_batch([(b"k", b"v")]))])]), 9)
    return response.responses[0].partition_responses[0].error_code


def keys_at(quorum, broker: int) -> list[bytes]:
    """The record keys a consumer reads from offset 0 at ``broker`` (fetch v12: a leader or, KIP-392,
    a follower up to the high watermark)."""
    response = call(quorum.address(broker), FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0, session_id=0,
        session_epoch=-1, topics=[FetchTopic(topic=TOPIC, partitions=[FetchPartition(
            partition=0, fetch_offset=0, current_leader_epoch=-1, log_start_offset=-1,
            partition_max_bytes=1 << 20)])], forgotten_topics_data=[], rack_id=""), 12)
    data = response.responses[0].partitions[0]
    assert data.error_code == Errors.NONE, (broker, data.error_code)
    return keys_in(bytes(data.records or b""))


def keys_in(records: bytes) -> list[bytes]:
    return [bytes(r.key) for batch in iter_batches(records) for r in batch]


def create_topic(quorum, *configs: tuple[str, str]) -> tuple[int, int, int]:
    """The topic (RF 3, ``configs``) once it has a leader and a full ISR: (leader, followers...)."""
    created = call(quorum.address(BROKERS[0]), CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=TOPIC, num_partitions=1, replication_factor=3, assignments=[],
        configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs])]))
    assert [t.error_code for t in created.topics] == [Errors.NONE]
    first = wait_for(quorum, BROKERS[0], lambda p: p.leader_id in BROKERS and len(p.isr_nodes) == 3,
                     "a leader and a full ISR")
    return (first.leader_id, *[b for b in first.replica_nodes if b != first.leader_id])


def written_then_leaderless(quorum, unclean: bool, *, stop_leader):
    """Create the topic, write 2 batches in sync, kill -9 a follower and wait until the ISR drops
    it, write 2 more batches (acks=1), kill -9 the other follower and wait until the ISR is the
    leader alone, then ``stop_leader`` (quorum.kill or quorum.stop) the leader.
    Returns (leader, in-sync follower, out-of-sync follower)."""
    leader, in_sync, out_of_sync = create_topic(
        quorum, *([("unclean.leader.election.enable", "true")] if unclean else []))
    produce(quorum.address(leader), 2)
    quorum.wait_until(lambda: _segment(quorum, out_of_sync, TOPIC) == _segment(quorum, leader, TOPIC), WAIT_S,
                      "the followers to copy the first batches")
    quorum.kill(out_of_sync)
    wait_for(quorum, leader, lambda p: sorted(p.isr_nodes) == sorted([leader, in_sync]),
             "the ISR to drop the stopped follower")
    produce(quorum.address(leader), 2, first=2)              # acks=1: the stopped follower never sees these
    quorum.kill(in_sync)
    wait_for(quorum, leader, lambda p: list(p.isr_nodes) == [leader], "the ISR to be the leader alone")
    stop_leader(leader)
    return leader, in_sync, out_of_sync


def described(quorum, broker: int):
    """Partition 0 as ``broker``'s DescribeTopicPartitions has it (ISR, ELR, last known ELR)."""
    topic, = call(quorum.address(broker), DescribeTopicPartitionsRequest(topics=[TopicRequest(name=TOPIC)])).topics
    return topic.partitions[0]


def keys_of_batches(first: int, count: int) -> list[bytes]:
    return [f"k{n}{i}".encode() for n in range(first, first + count) for i in range(5)]


def test_an_out_of_sync_replica_is_elected_unclean_and_the_old_leader_truncates_to_its_log(tmp_path):
    """With unclean elections on for the topic, the out-of-sync replica started alone leads (the
    controller elects it as it unfences it) with the 2 batches it had, and takes 3 more; the old
    leader and the old in-sync follower, restarted, drop their 2 batches the new leader never had
    (the diverging epoch) and copy its 3: every replica's segment is the new leader's, byte for
    byte, and a consumer reads the same keys from each."""
    with controller_and_three_brokers(tmp_path) as quorum:
        leader, in_sync, out_of_sync = written_then_leaderless(quorum, unclean=True, stop_leader=quorum.kill)
        quorum.start(out_of_sync)
        elected = wait_for(quorum, out_of_sync, lambda p: p.leader_id == out_of_sync, "the out-of-sync replica to lead")
        assert list(elected.isr_nodes) == [out_of_sync]
        produce(quorum.address(out_of_sync), 3, first=10)
        expected = keys_of_batches(0, 2) + keys_of_batches(10, 3)
        assert keys_at(quorum, out_of_sync) == expected

        quorum.start(leader)
        quorum.start(in_sync)
        wait_for(quorum, out_of_sync, lambda p: sorted(p.isr_nodes) == sorted(BROKERS), "every replica back in the ISR")
        new_log = _segment(quorum, out_of_sync, TOPIC)
        quorum.wait_until(lambda: all(_segment(quorum, b, TOPIC) == new_log for b in (leader, in_sync)), WAIT_S,
                          "the old leader and follower to hold the new leader's segment")
        # a follower serves up to the high watermark it last heard of: wait for it, not for time
        quorum.wait_until(lambda: all(keys_at(quorum, b) == expected for b in BROKERS), WAIT_S,
                          "a consumer to read the new leader's log from every replica")


def test_without_unclean_elections_the_partition_waits_leaderless_for_an_isr_member(tmp_path):
    """Unclean elections off (the default): the leader, the ISR's last member, stopped cleanly
    (SIGTERM) stays eligible (the ELR, KIP-966); the out-of-sync replica started alone is unfenced
    but not elected: no leader (-1), and it refuses produce. The old leader restarted leads again
    with all 4 batches, acks=1 ones included, and the other replica copies them. (After a kill -9
    the leader would register as shut down uncleanly and leave the ELR, as in Kafka, and only an
    unclean election could give the partition a leader again.)"""
    with controller_and_three_brokers(tmp_path) as quorum:
        leader, _, out_of_sync = written_then_leaderless(quorum, unclean=False, stop_leader=quorum.stop)
        quorum.start(out_of_sync)
        quorum.wait_until(lambda: out_of_sync in registered(quorum.address(out_of_sync)), WAIT_S,
                          "the out-of-sync replica to be unfenced")
        leaderless = described(quorum, out_of_sync)
        assert (leaderless.leader_id, leaderless.isr_nodes, leaderless.eligible_leader_replicas) == (-1, [], [leader])
        assert partition_at(quorum, out_of_sync).leader_id == -1
        assert produce_error(quorum, out_of_sync) == Errors.NOT_LEADER_OR_FOLLOWER

        quorum.start(leader)
        wait_for(quorum, out_of_sync, lambda p: p.leader_id == leader and out_of_sync in p.isr_nodes,
                 "the old leader to lead and the other replica to rejoin the ISR")
        assert keys_at(quorum, leader) == keys_of_batches(0, 4)
        quorum.wait_until(lambda: keys_at(quorum, out_of_sync) == keys_of_batches(0, 4), WAIT_S,
                          "a consumer to read every batch from the other replica")


def produce_acks_all(quorum, broker: int, first: int) -> int:
    records = build_batch([(f"k{first}{i}".encode(), b"v") for i in range(5)])
    response = call(quorum.address(broker), ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=TOPIC, partition_data=[PartitionProduceData(index=0, records=records)])]), 9)
    return response.responses[0].partition_responses[0].error_code


def test_an_eligible_leader_replica_is_elected_cleanly_with_every_acks_all_record(tmp_path):
    """KIP-966 with min.insync.replicas=2: the followers stopped cleanly one after the other, the
    ISR shrinks to the leader and the second one joins the ELR (the ISR is below the minimum), and
    acks=all writes are refused (NOT_ENOUGH_REPLICAS); the leader killed -9, that ELR member
    restarted is elected (unclean elections off) with every acknowledged acks=all record in its
    log, which a consumer reads once the other follower is back in the ISR (the high watermark
    moves again)."""
    with controller_and_three_brokers(tmp_path) as quorum:
        leader, first_out, second_out = create_topic(quorum, ("min.insync.replicas", "2"))
        assert produce_acks_all(quorum, leader, 0) == Errors.NONE
        quorum.stop(first_out)
        wait_for(quorum, leader, lambda p: sorted(p.isr_nodes) == sorted([leader, second_out]),
                 "the ISR to drop the first follower")
        assert produce_acks_all(quorum, leader, 1) == Errors.NONE
        quorum.stop(second_out)
        wait_for(quorum, leader, lambda p: list(p.isr_nodes) == [leader], "the ISR to be the leader alone")
        shrunk = described(quorum, leader)
        assert (shrunk.isr_nodes, shrunk.eligible_leader_replicas) == ([leader], [second_out])
        assert produce_acks_all(quorum, leader, 2) == Errors.NOT_ENOUGH_REPLICAS
        quorum.kill(leader)

        quorum.start(second_out)
        elected = wait_for(quorum, second_out, lambda p: p.leader_id == second_out, "the ELR member to lead")
        assert list(elected.isr_nodes) == [second_out]
        # Both acknowledged batches are in its log; the high watermark it brought may lag (a
        # follower learns it a fetch later) and, the ISR under min.insync.replicas, cannot move.
        assert keys_in(_segment(quorum, second_out, TOPIC)) == keys_of_batches(0, 2)
        quorum.start(first_out)
        wait_for(quorum, second_out, lambda p: sorted(p.isr_nodes) == sorted([first_out, second_out]),
                 "the other follower to rejoin the ISR")
        quorum.wait_until(lambda: keys_at(quorum, second_out) == keys_of_batches(0, 2), WAIT_S,
                          "a consumer to read both acknowledged batches from the new leader")
        assert produce_acks_all(quorum, second_out, 3) == Errors.NONE
