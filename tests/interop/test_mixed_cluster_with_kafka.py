"""A mixed cluster (issue 29, scope 5): one controller (node 1: kafkawire's, or Kafka's, below), one
kafkawire broker (node 2, process.roles=broker) and one Apache Kafka 4.3.1 broker (node 3, one JVM
at -Xmx256m) on it, replicas of the same partitions. Topic ``mixed`` has partition 0 on [3, 2]
(Kafka leads, kafkawire follows) and partition 1 on [2, 3] (the other way round).

In order, on one cluster per module:
1. confluent-kafka produces with acks=all to both partitions; a consumer reads every acknowledged
   record back; both brokers' metadata show the ISR as both brokers; each follower's segment holds
   its leader's bytes, byte for byte. A classic and a KIP-848 group coordinated by each broker
   (__consumer_offsets and __transaction_state have replication factor 2 and a partition led by
   each) each have a member join, commit offsets and leave.
   A transactional producer coordinated by each broker commits and aborts over both partitions.
2. The kafkawire broker (leader of partition 1) is given an acks=1 tail that Kafka never fetches
   (Kafka's JVM is SIGSTOPped once its pending Fetch is answered), then killed with kill -9:
   Kafka takes over partition 1 and serves every acknowledged record of both partitions, without
   the tail, and the groups' offsets; a KIP-848 and a classic member subscribed throughout go on at
   Kafka's coordinator without joining again (same member epoch, same member id); an idempotent producer carries on under the same producer
   id and epoch. The kafkawire broker restarted follows Kafka on both partitions, drops its tail
   (the diverging epoch in Kafka's Fetch answer) and holds Kafka's bytes, back in every ISR
   (Kafka's leader asked the controller with AlterPartition).
3. The other way round: Kafka (now leader of both) is given a tail the paused kafkawire broker
   never fetches and is killed; the kafkawire broker takes over both partitions and serves every
   acknowledged record, the groups' offsets, two live members and an idempotent producer's next
   records, and a consumer kept across the kill reads on (its position validated, KIP-320). Kafka
   restarted follows it, drops its tail (OffsetForLeaderEpoch answered by kafkawire's leader), is
   back in both ISRs (kafkawire's leader's AlterPartition) and holds kafkawire's bytes.
4. Preferred leader election gives partition 0 back to Kafka; a reassignment drops each follower
   and one brings it back, fetching the whole log from offset 0 from the other's leader.
5. A compacted log copied across implementations: a `compact` topic led by each broker alone is
   cleaned by its leader's cleaner, then each partition gets the other implementation as follower.
Between 1 and 2, KIP-939's two-phase commit init is answered alike by each coordinator.
The module runs twice (its cluster fixture has two params): on kafkawire's controller with PLAINTEXT
between the brokers, then on a Kafka 4.3.1 controller (one more JVM, so that Kafka's controller
judges kafkawire's registration, heartbeats, fencing and AlterPartition) with replication over
SASL_SSL with SCRAM-SHA-256 between the brokers: two claims for one more cluster (35 s at load 10).
By hand, ``KAFKAWIRE_MIXED_CONTROLLER=kafkawire|kafka`` and ``KAFKAWIRE_MIXED_INTER_BROKER=
plaintext|sasl|sasl_ssl`` (either or both; the one unset takes kafkawire or plaintext) run the
module once on that one combination instead.
Every wait is bounded; every process is killed by pid at teardown; the timings are printed."""
from __future__ import annotations

import os
import signal
import time

import pytest

from kafkawire.messages.api_versions_request import ApiVersionsRequest
from kafkawire.messages.alter_partition_reassignments_request import (AlterPartitionReassignmentsRequest,
                                                                     ReassignablePartition, ReassignableTopic)
from kafkawire.messages.create_topics_request import (CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
                                                       CreateTopicsRequest)
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest
from kafkawire.messages.elect_leaders_request import TopicPartitions as ElectTopicPartitions
from kafkawire.messages.describe_transactions_request import DescribeTransactionsRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.init_producer_id_request import InitProducerIdRequest
from kafkawire.protocol.error_codes import Errors
from tests.broker.wire import call

confluent_kafka = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.slow

from tests.interop.mixed_cluster import (  # noqa: E402  (after the skip: it imports confluent_kafka)
    KAFKA, LEADERS, OURS, TOPIC, WAIT_S, MixedCluster, add_acked, commit, commit_as_member, committed,
    described_partitions, live_member, member_view,
    followers_hold_leaders_bytes, group_in, idempotent_producer, idempotent_producers, in_sync_everywhere, log_end,
    produce, read_back, read_more, reader, reassign, replica_records, transactional_id_in, unreplicated_tail)


def cluster_configurations() -> list:
    """(controller, inter-broker security) of each cluster the module runs on: without the
    variables, kafkawire's controller over PLAINTEXT and Kafka's over SASL_SSL; with either, that
    one combination."""
    controller = os.environ.get("KAFKAWIRE_MIXED_CONTROLLER")
    inter_broker = os.environ.get("KAFKAWIRE_MIXED_INTER_BROKER")
    if controller is None and inter_broker is None:
        chosen = [("kafkawire", "plaintext"), ("kafka", "sasl_ssl")]
    else:
        chosen = [(controller or "kafkawire", inter_broker or "plaintext")]
    return [pytest.param(c, id=f"{c[0]}-controller-{c[1]}") for c in chosen]


@pytest.fixture(scope="module", params=cluster_configurations())
def cluster(request, kafka_libs, tmp_path_factory):
    controller, inter_broker = request.param
    assert controller in ("kafkawire", "kafka"), f"KAFKAWIRE_MIXED_CONTROLLER={controller!r}: kafkawire or kafka"
    assert inter_broker in ("plaintext", "sasl", "sasl_ssl"), \
        f"KAFKAWIRE_MIXED_INTER_BROKER={inter_broker!r}: plaintext, sasl or sasl_ssl"
    cluster = MixedCluster(tmp_path_factory.mktemp(f"mixed-cluster-{controller}"), controller, inter_broker)
    try:
        cluster.start()
        response = call(cluster.ours, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
            name=TOPIC, num_partitions=-1, replication_factor=-1, assignments=[
                CreatableReplicaAssignment(partition_index=p, broker_ids=[leader, OURS + KAFKA - leader])
                for p, leader in LEADERS.items()])]))
        assert [t.error_code for t in response.topics] == [Errors.NONE]
        for address in (cluster.ours, cluster.kafka_address):
            cluster.wait_until(lambda: cluster.partitions(address) == {
                p: (leader, [OURS, KAFKA], [OURS, KAFKA]) for p, leader in LEADERS.items()},
                f"{address} to see {TOPIC} led as assigned")
        cluster.acked = {0: [], 1: []}
        cluster.commits = {}                 # group -> the offsets it committed
        yield cluster
        print(f"\nmixed cluster timings (s since start): {cluster.timings}")
    except BaseException:
        print(cluster.log_tails())
        raise
    finally:
        cluster.kill()


def test_acks_all_records_replicated_in_sync_and_byte_for_byte(cluster):
    add_acked(cluster.acked, produce(cluster, 50, "first"))
    cluster.mark("first_produce_acked")
    got = read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()})
    assert got == cluster.acked
    assert in_sync_everywhere(cluster, LEADERS)
    # DescribeTopicPartitions (leader epoch, ISR, ELR, offline replicas): each broker's answer from its image alike
    described = [described_partitions(address) for address in (cluster.ours, cluster.kafka_address)]
    assert described[0] == described[1] and [row[4] for row in described[0]] == [[OURS, KAFKA]] * 2, described
    cluster.wait_until(lambda: followers_hold_leaders_bytes(cluster), "each follower to hold its leader's bytes")
    cluster.mark("followers_byte_identical")
    groups = []
    for protocol in ("classic", "consumer"):        # each protocol's records, written by each coordinator
        for partition in (0, 1):
            group = group_in(partition, protocol)
            commit(cluster.bootstrap, group, {p: len(v) - 5 for p, v in cluster.acked.items()}, protocol)
            cluster.commits[group] = {p: len(v) - 5 for p, v in cluster.acked.items()}
            groups.append(group)
    for address in (cluster.ours, cluster.kafka_address):              # one coordinator on each broker
        answer = call(address, FindCoordinatorRequest(key_type=0, coordinator_keys=groups), api_version=4)
        assert sorted(c.node_id for c in answer.coordinators) == [OURS, OURS, KAFKA, KAFKA], answer
    assert {group: committed(cluster.bootstrap, group) for group in groups} == cluster.commits


def test_transactions_coordinated_by_either_broker_span_both_leaders(cluster):
    """A transactional producer per __transaction_state partition (one coordinated by each broker)
    commits and aborts a transaction over both partitions: the coordinators' markers go to both
    leaders (WriteTxnMarkers across implementations), read_committed reads the committed records
    only, and the followers still hold their leaders' bytes, markers included."""
    coordinators = {}
    for partition in (0, 1):
        transactional_id = transactional_id_in(partition)
        producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": transactional_id})
        producer.init_transactions(WAIT_S)
        for committing in (True, False):
            producer.begin_transaction()
            values = {p: [b"%s-%s-%d-%d" % (transactional_id.encode(), b"commit" if committing else b"abort", p, i)
                          for i in range(5)] for p in LEADERS}
            for p, batch in values.items():
                for value in batch:
                    producer.produce(TOPIC, value, partition=p)
            assert producer.flush(WAIT_S) == 0
            if committing:
                producer.commit_transaction(WAIT_S)
                add_acked(cluster.acked, values)
            else:
                producer.abort_transaction(WAIT_S)
        coordinators[transactional_id] = partition
    for address in (cluster.ours, cluster.kafka_address):              # one coordinator on each broker
        answer = call(address, FindCoordinatorRequest(key_type=1, coordinator_keys=sorted(coordinators)), api_version=4)
        assert sorted(c.node_id for c in answer.coordinators) == [OURS, KAFKA], answer
    got = read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()})
    assert got == cluster.acked
    cluster.wait_until(lambda: followers_hold_leaders_bytes(cluster), "each follower to hold its leader's bytes")
    cluster.mark("transactions_done")


def test_two_phase_commit_inits_are_answered_as_kafkas_coordinator_answers_them(cluster):
    """KIP-939 as Kafka 4.3.1 serves it, both brokers with unstable.api.versions.enable and
    transaction.two.phase.commit.enable: each advertises InitProducerId v6; a v6 init with
    enable2Pc at a coordinator of each implementation gets a producer id, and its transaction's
    timeout is Integer.MAX_VALUE (it never times out) whatever the request asked, as
    DescribeTransactions shows; keepPreparedTxn is UNSUPPORTED_VERSION at both."""
    for address in (cluster.ours, cluster.kafka_address):
        versions = {k.api_key: (k.min_version, k.max_version) for k in call(address, ApiVersionsRequest(
            client_software_name="kafkawire-tests", client_software_version="1")).api_keys}
        assert versions[22] == (0, 6), (address, versions[22])
    candidates = [f"two-phase-{n}" for n in range(20)]
    found = call(cluster.ours, FindCoordinatorRequest(key_type=1, coordinator_keys=candidates), api_version=4)
    ids = {node: next(c.key for c in found.coordinators if c.error_code == Errors.NONE and c.node_id == node)
           for node in (OURS, KAFKA)}
    answers = {}
    for node, address in ((OURS, cluster.ours), (KAFKA, cluster.kafka_address)):
        init = call(address, InitProducerIdRequest(transactional_id=ids[node], transaction_timeout_ms=5000,
                                                   enable2_pc=True), api_version=6)
        described, = call(address, DescribeTransactionsRequest(transactional_ids=[ids[node]])).transaction_states
        kept = call(address, InitProducerIdRequest(transactional_id=ids[node], transaction_timeout_ms=5000,
                                                   enable2_pc=True, keep_prepared_txn=True), api_version=6)
        answers[node] = (init.error_code, init.producer_epoch, described.error_code, described.transaction_state,
                         described.transaction_timeout_ms, kept.error_code)
    assert answers[OURS] == answers[KAFKA] == (Errors.NONE, 0, Errors.NONE, "Empty", 2**31 - 1,
                                               Errors.UNSUPPORTED_VERSION), answers


def test_kafka_takes_over_from_a_killed_kafkawire_broker_which_then_truncates_to_it(cluster):
    """Before the kill, kafkawire (leader of partition 1) holds an acks=1 tail Kafka never fetched:
    restarted, it follows Kafka's leader and must drop that tail (Kafka's Fetch answer carries the
    diverging epoch) to hold Kafka's bytes."""
    idempotent = idempotent_producer(cluster)
    add_acked(cluster.acked, produce(cluster, 10, "idempotent-before-kafkawire-killed", idempotent))
    members = [live_member(cluster, OURS, protocol) for protocol in ("consumer", "classic")]
    for member, _ in members:
        commit_as_member(member)
    views = [member_view(cluster.ours, group) for _, group in members]
    cluster.wait_until(lambda: followers_hold_leaders_bytes(cluster), "each follower to hold its leader's bytes")
    replicated_end = log_end(cluster.segment(OURS, 1))
    kafka_pid = cluster.kafka.process.pid
    unreplicated_tail(cluster, kafka_pid, cluster.ours, [1], "kafkawire-only")
    assert log_end(cluster.segment(OURS, 1)) == replicated_end + 6
    cluster.quorum.kill(OURS)
    os.kill(kafka_pid, signal.SIGCONT)
    cluster.wait_until(lambda: cluster.partitions(cluster.kafka_address) == {
        0: (KAFKA, [OURS, KAFKA], [KAFKA]), 1: (KAFKA, [OURS, KAFKA], [KAFKA])}, "Kafka to lead both partitions alone")
    cluster.mark("kafka_took_over")
    assert log_end(cluster.segment(KAFKA, 1)) == replicated_end          # the tail never reached Kafka
    assert read_back(cluster.kafka.broker_address, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked
    # the groups kafkawire coordinated too: Kafka's coordinator loads what kafkawire's wrote
    assert {group: committed(cluster.kafka.broker_address, group) for group in cluster.commits} == cluster.commits
    try:          # and the live members go on at Kafka's coordinator, at the same member epoch or id
        for member, _ in members:
            commit_as_member(member)
        assert [member_view(cluster.kafka_address, group) for _, group in members] == views
    finally:
        for member, _ in members:
            member.close()
    add_acked(cluster.acked, produce(cluster, 20, "kafka-alone", idempotent))
    assert len(idempotent_producers(cluster.segment(KAFKA, 1))) == 1      # Kafka took our producer state

    cluster.quorum.start(OURS)
    cluster.wait_until(lambda: in_sync_everywhere(cluster, {0: KAFKA, 1: KAFKA}) and cluster.all_in_sync(
        cluster.kafka_address), "the restarted kafkawire broker back in every ISR")
    cluster.mark("kafkawire_back_in_sync")
    cluster.wait_until(lambda: followers_hold_leaders_bytes(cluster), "kafkawire to hold Kafka's bytes again")


def test_kafkawire_takes_over_from_a_killed_kafka_broker_which_then_truncates_to_it(cluster):
    """The other way round: Kafka (leader of both) holds an acks=1 tail kafkawire never fetched;
    kafkawire takes over and serves every acknowledged record; Kafka, restarted, follows kafkawire
    and drops its tail."""
    idempotent = idempotent_producer(cluster)
    add_acked(cluster.acked, produce(cluster, 20, "both-again", idempotent))
    cluster.wait_until(lambda: followers_hold_leaders_bytes(cluster), "kafkawire to hold Kafka's bytes")
    replicated_ends = [log_end(cluster.segment(OURS, p)) for p in (0, 1)]
    members = [live_member(cluster, KAFKA, protocol) for protocol in ("consumer", "classic")]
    for member, _ in members:
        commit_as_member(member)
    views = [member_view(cluster.kafka_address, group) for _, group in members]
    # a consumer kept across the failover: it validates its positions with the new leader (KIP-320)
    kept = reader(cluster.bootstrap, LEADERS)
    kept_got = read_more(kept, {p: [] for p in LEADERS}, {p: len(v) for p, v in cluster.acked.items()})
    assert kept_got == cluster.acked
    ours_pid = cluster.quorum.processes[OURS].pid
    unreplicated_tail(cluster, ours_pid, cluster.kafka_address, [0, 1], "kafka-only")
    cluster.kafka.kill()
    os.kill(ours_pid, signal.SIGCONT)
    cluster.wait_until(lambda: cluster.partitions(cluster.ours) == {
        0: (OURS, [OURS, KAFKA], [OURS]), 1: (OURS, [OURS, KAFKA], [OURS])}, "kafkawire to lead both partitions alone")
    cluster.mark("kafkawire_took_over")
    assert [log_end(cluster.segment(p_node, p)) for p_node in (KAFKA, OURS) for p in (0, 1)] == \
        [end + 6 for end in replicated_ends] + replicated_ends               # the tails never reached kafkawire
    bootstrap = f"127.0.0.1:{cluster.ours[1]}"
    assert read_back(bootstrap, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked
    # every group, last coordinated by Kafka: kafkawire's coordinator loads what Kafka's wrote
    assert {group: committed(bootstrap, group) for group in cluster.commits} == cluster.commits
    try:          # and the live members go on at kafkawire's coordinator, at the same member epoch or id
        for member, _ in members:
            commit_as_member(member)
        assert [member_view(cluster.ours, group) for _, group in members] == views
    finally:
        for member, _ in members:
            member.close()
    add_acked(cluster.acked, produce(cluster, 20, "kafkawire-alone", idempotent))
    try:
        assert read_more(kept, kept_got, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked
    finally:
        kept.close()
    assert [len(idempotent_producers(cluster.segment(OURS, p))) for p in (0, 1)] == [2, 2]   # and we took Kafka's

    cluster.kafka.start()
    cluster.wait_until(lambda: in_sync_everywhere(cluster, {0: OURS, 1: OURS}),
                       "the restarted Kafka broker back in both ISRs", timeout_s=90)
    cluster.mark("kafka_back_in_sync")
    cluster.wait_until(lambda: followers_hold_leaders_bytes(cluster), "Kafka to hold kafkawire's bytes")
    assert read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked


def test_preferred_leader_election_gives_partition_0_back_to_kafka(cluster):
    """ElectLeaders (preferred) through the Kafka broker: partition 0 (replicas [3, 2]) goes back to
    Kafka, kafkawire leading it turns follower of Kafka at the new epoch; the replicas then take
    acks=all records and stay byte for byte alike."""
    answer = call(cluster.kafka_address, ElectLeadersRequest(election_type=0, topic_partitions=[
        ElectTopicPartitions(topic=TOPIC, partitions=[0])], timeout_ms=10_000), api_version=2)
    assert [(r.partition_id, r.error_code) for t in answer.replica_election_results
            for r in t.partition_result] == [(0, Errors.NONE)], answer
    cluster.wait_until(lambda: in_sync_everywhere(cluster, LEADERS), "partition 0 led by Kafka again, both in sync")
    add_acked(cluster.acked, produce(cluster, 10, "after-election"))
    assert read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked
    cluster.wait_until(lambda: followers_hold_leaders_bytes(cluster), "each follower to hold its leader's bytes")
    cluster.mark("preferred_leaders_back")


def test_reassignment_drops_each_follower_and_brings_it_back_from_an_empty_log(cluster):
    """Each partition reassigned to its leader alone (the other implementation's follower deletes
    its replica), then back to both: the new follower fetches the whole log from offset 0 (records,
    aborted transactions, markers) from the other implementation's leader and ends byte for byte
    alike, in the ISR."""
    reassign(cluster, cluster.ours, {p: [leader] for p, leader in LEADERS.items()})
    cluster.wait_until(lambda: cluster.partitions(cluster.kafka_address) == {
        p: (leader, [leader], [leader]) for p, leader in LEADERS.items()} and all(
        cluster.segment(OURS + KAFKA - leader, p) is None for p, leader in LEADERS.items()),
        "each follower's replica gone")
    reassign(cluster, cluster.kafka_address, {p: [leader, OURS + KAFKA - leader] for p, leader in LEADERS.items()})
    cluster.wait_until(lambda: in_sync_everywhere(cluster, LEADERS), "both replicas back, in sync")
    cluster.wait_until(lambda: followers_hold_leaders_bytes(cluster), "each new follower to hold its leader's bytes")
    cluster.mark("reassigned_back")
    assert read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked


def test_each_implementations_follower_copies_the_others_compacted_log(cluster):
    """A `compact` topic, partition 0 on Kafka alone and partition 1 on kafkawire alone, written
    until each leader has rolled segments and its cleaner has removed older values of the same
    keys; then each partition takes the other implementation as follower, which fetches the
    compacted log from offset 0, offset gaps and all. Every record either replica holds is one the
    producer had acknowledged at that offset; every key's last value is in both; and the consumer
    reads each key's last value once the follower leads (a preferred election, the follower being
    placed first)."""
    compacted = "mixed-compacted"
    alone = {0: KAFKA, 1: OURS}
    response = call(cluster.ours, CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=compacted, num_partitions=-1, replication_factor=-1, configs=[
            CreatableTopicConfig(name=k, value=v) for k, v in (
                ("cleanup.policy", "compact"), ("segment.ms", "100"), ("min.cleanable.dirty.ratio", "0.01"))],
        assignments=[CreatableReplicaAssignment(partition_index=p, broker_ids=[b]) for p, b in alone.items()])]))
    assert [t.error_code for t in response.topics] == [Errors.NONE], response
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0})
    written: dict[int, dict[int, tuple[bytes, bytes]]] = {0: {}, 1: {}}

    def delivered(error, message):
        assert error is None, error
        written[message.partition()][message.offset()] = (message.key(), message.value())

    def compacted_by_its_leader(partition: int) -> bool:
        held = replica_records(cluster, alone[partition], compacted, partition)
        return held is not None and 0 < len(held) < len(written[partition])
    rounds, deadline = 0, time.monotonic() + WAIT_S
    # rounds of the same four keys until each leader has rolled segments (segment.ms) and cleaned them
    while not all(map(compacted_by_its_leader, alone)):
        assert time.monotonic() < deadline, (rounds, {p: replica_records(cluster, b, compacted, p)
                                                      for p, b in alone.items()}, cluster.log_tails())
        for partition in alone:
            for key in range(4):
                producer.produce(compacted, b"round-%d" % rounds, key=b"key-%d" % key, partition=partition,
                                 on_delivery=delivered)
        assert producer.flush(WAIT_S) == 0
        rounds += 1
    latest = {p: {key: max(o for o, (k, _) in records.items() if k == key) for key in {k for k, _ in records.values()}}
              for p, records in written.items()}
    answer = call(cluster.ours, AlterPartitionReassignmentsRequest(timeout_ms=10_000, topics=[ReassignableTopic(
        name=compacted, partitions=[ReassignablePartition(partition_index=p, replicas=[OURS + KAFKA - b, b])
                                    for p, b in alone.items()])]), api_version=0)
    assert [p.error_code for t in answer.responses for p in t.partitions] == [Errors.NONE] * 2, answer

    def in_sync() -> bool:
        topic, = cluster._metadata(cluster.ours, compacted).topics
        return all(sorted(p.isr_nodes) == [OURS, KAFKA] for p in topic.partitions)

    def replicated(partition: int) -> bool:
        held = [replica_records(cluster, b, compacted, partition) for b in (OURS, KAFKA)]
        return all(h is not None and all(written[partition].get(o) == kv for o, kv in h.items()) and
                   all(o in h for o in latest[partition].values()) for h in held)
    cluster.wait_until(lambda: in_sync() and all(map(replicated, alone)),
                       "each new follower in the ISR, both replicas holding every key's last value")
    # the new followers copied a log whose first records had been cleaned away: it starts past 0
    assert all(min(replica_records(cluster, OURS + KAFKA - b, compacted, p)) > 0 for p, b in alone.items())
    answer = call(cluster.ours, ElectLeadersRequest(election_type=0, topic_partitions=[
        ElectTopicPartitions(topic=compacted, partitions=[0, 1])], timeout_ms=10_000), api_version=2)
    assert [r.error_code for t in answer.replica_election_results for r in t.partition_result] == [Errors.NONE] * 2
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused",
                                         "enable.auto.commit": False})
    last_read: dict[int, dict[bytes, bytes]] = {0: {}, 1: {}}
    ends = {p: max(written[p]) for p in alone}
    try:
        consumer.assign([confluent_kafka.TopicPartition(compacted, p, 0) for p in alone])
        deadline = time.monotonic() + WAIT_S
        seen = {p: -1 for p in alone}
        while any(seen[p] < ends[p] for p in alone) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen[message.partition()] = message.offset()
                last_read[message.partition()][message.key()] = message.value()
    finally:
        consumer.close()
    assert last_read == {p: {written[p][o][0]: written[p][o][1] for o in latest[p].values()} for p in alone}
