"""A mixed cluster (issue 29, scope 5, first slice): one kafkawire controller (node 1), one
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
   the tail, and the groups' offsets; an idempotent producer carries on under the same producer
   id and epoch. The kafkawire broker restarted follows Kafka on both partitions, drops its tail
   (the diverging epoch in Kafka's Fetch answer) and holds Kafka's bytes, back in every ISR
   (Kafka's leader asked the controller with AlterPartition).
3. The other way round: Kafka (now leader of both) is given a tail the paused kafkawire broker
   never fetches and is killed; the kafkawire broker takes over both partitions and serves every
   acknowledged record, the groups' offsets and an idempotent producer's next records. Kafka
   restarted follows it, drops its tail (OffsetForLeaderEpoch answered by kafkawire's leader), is
   back in both ISRs (kafkawire's leader's AlterPartition) and holds kafkawire's bytes.
4. Preferred leader election gives partition 0 back to Kafka; a reassignment drops each follower
   and one brings it back, fetching the whole log from offset 0 from the other's leader.
The same on a Kafka 4.3.1 controller (one more JVM, so by hand, not in CI):
``KAFKAWIRE_MIXED_CONTROLLER=kafka pytest tests/interop/test_mixed_cluster_with_kafka.py``.
Every wait is bounded; every process is killed by pid at teardown; the timings are printed."""
from __future__ import annotations

import concurrent.futures
import glob
import os
import signal
import time

import pytest

from kafkawire.broker.group_records import partition_for
from kafkawire.messages.alter_partition_reassignments_request import (AlterPartitionReassignmentsRequest,
                                                                     ReassignablePartition, ReassignableTopic)
from kafkawire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic, CreateTopicsRequest
from kafkawire.messages.describe_topic_partitions_request import DescribeTopicPartitionsRequest, TopicRequest
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest
from kafkawire.messages.elect_leaders_request import TopicPartitions as ElectTopicPartitions
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch
from kafkawire.storage.state_files import random_uuid, uuid_to_kafka
from tests.broker.wire import call
from tests.interop.kafka_procs import KafkaNode

confluent_kafka = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.slow

TOPIC = "mixed"
CONTROLLER, OURS, KAFKA = 1, 2, 3
LEADERS = {0: KAFKA, 1: OURS}            # partition -> its first leader
WAIT_S = 60
# __transaction_state and __consumer_offsets on both brokers, one partition led by each: each broker
# coordinates a transaction and a group
INTERNAL_TOPICS = {"transaction.state.log.num.partitions": "2", "transaction.state.log.replication.factor": "2",
                   "transaction.state.log.min.isr": "1",
                   "offsets.topic.num.partitions": "2", "offsets.topic.replication.factor": "2"}


class MixedCluster:
    """Node 1 the controller (kafkawire's, or with ``controller="kafka"`` a Kafka 4.3.1 controller
    JVM), node 2 a kafkawire broker, node 3 a Kafka 4.3.1 broker."""

    def __init__(self, base, controller: str = "kafkawire"):
        self.began = time.monotonic()
        self.timings: dict[str, float] = {}
        broker_port, = free_ports(1)
        sessions = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
        properties = {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                      # fenced 3 s after its last heartbeat, so a killed broker's partitions move soon
                      **sessions, "replica.fetch.backoff.ms": "200", **INTERNAL_TOPICS}
        self.kafka_controller = None
        if controller == "kafka":
            self.kafka_controller = KafkaNode(base / "kafka-controller", CONTROLLER, "controller",
                                              properties=sessions)
            # node 1 of this LocalQuorum is formatted but never started: node ids are the cluster's
            self.quorum = LocalQuorum(base / "kafkawire", voters=0, extra_nodes=2, cluster_id=uuid_to_kafka(
                random_uuid()), properties={**properties, "process.roles": "broker",
                                            "controller.quorum.bootstrap.servers": self.kafka_controller.controller_address})
            self.quorum.node_properties[CONTROLLER] = {"listeners": f"PLAINTEXT://127.0.0.1:{self.quorum.ports[1]}"}
            bootstrap_controllers = self.kafka_controller.controller_address
        else:
            self.quorum = LocalQuorum(base / "kafkawire", voters=1, extra_nodes=1, properties=properties)
            bootstrap_controllers = self.quorum.bootstrap_servers()
        self.quorum.node_properties[OURS] = {"process.roles": "broker",
                                             "listeners": f"PLAINTEXT://127.0.0.1:{broker_port}"}
        self.ours = ("127.0.0.1", broker_port)
        self.kafka = KafkaNode(base / "kafka-broker", KAFKA, "broker", properties={
            "controller.quorum.bootstrap.servers": bootstrap_controllers,
            "broker.heartbeat.interval.ms": "500", "replica.fetch.backoff.ms": "200", **INTERNAL_TOPICS})
        self.kafka_address = ("127.0.0.1", self.kafka.broker_port)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ours[1]},{self.kafka.broker_address}"

    def start(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:      # three formats at once
            formats = [pool.submit(self.quorum.format),
                       pool.submit(self.kafka.format, self.quorum.cluster_id, "--no-initial-controllers")]
            if self.kafka_controller:
                formats.append(pool.submit(self.kafka_controller.format, self.quorum.cluster_id, "--standalone"))
            for done in formats:
                done.result()
        self.mark("formatted")
        # all at once: each broker retries until the controller answers
        if self.kafka_controller:
            self.kafka_controller.start()
        else:
            self.quorum.start(CONTROLLER)
        self.kafka.start()
        self.quorum.start(OURS)
        if self.kafka_controller:
            self.kafka_controller.wait_ready(90)
        else:
            self.quorum.wait_for_leader(timeout_s=WAIT_S)
        self.mark("controller_leader")
        self.kafka.wait_ready(90)
        self.mark("kafka_started")
        self.wait_until(lambda: self.brokers_seen(self.ours) == {OURS, KAFKA}, "both brokers unfenced")
        self.mark("brokers_unfenced")

    def mark(self, what: str) -> None:
        self.timings[what] = round(time.monotonic() - self.began, 1)

    def kill(self) -> None:
        self.kafka.kill()
        if self.kafka_controller:
            self.kafka_controller.kill()
        for node_id in list(self.quorum.processes):
            self.quorum.kill(node_id)

    def log_tails(self) -> str:
        return (f"--- Kafka broker {KAFKA}:\n{self.kafka.log_tail(60)}\n--- kafkawire broker {OURS}:\n"
                f"{self.quorum.log_tail(OURS, 60)}\n--- kafkawire controller {CONTROLLER}:\n"
                f"{(self.kafka_controller.log_tail(30) if self.kafka_controller else self.quorum.log_tail(CONTROLLER, 30))}")

    def wait_until(self, condition, what: str, timeout_s: float = WAIT_S):
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            last = condition()
            if last:
                return last
            time.sleep(0.1)
        raise AssertionError(f"not within {timeout_s} s: {what} (last: {last!r})\n{self.log_tails()}")

    # --- asking the brokers ------------------------------------------------------------------------
    def brokers_seen(self, address) -> set[int]:
        try:
            return {b.node_id for b in self._metadata(address).brokers}
        except Exception:               # not listening yet, or just killed
            return set()

    def partitions(self, address) -> dict[int, tuple[int, list[int], list[int]]]:
        """{partition: (leader, replicas, isr)} of TOPIC in the broker's metadata (Metadata v12)."""
        try:
            topics = self._metadata(address).topics
        except Exception:
            return {}
        return {p.partition_index: (p.leader_id, sorted(p.replica_nodes), sorted(p.isr_nodes))
                for t in topics if t.error_code == Errors.NONE for p in t.partitions}

    def all_in_sync(self, address) -> bool:
        """Whether every partition of TOPIC and of the internal topics has both brokers in its ISR."""
        try:
            topics = call(address, MetadataRequest(topics=[MetadataRequestTopic(name=t) for t in (
                TOPIC, "__consumer_offsets", "__transaction_state")], allow_auto_topic_creation=False),
                api_version=12, timeout_ms=2000).topics
        except Exception:
            return False
        return all(t.error_code == Errors.NONE for t in topics) and all(
            sorted(p.isr_nodes) == [OURS, KAFKA] for t in topics for p in t.partitions)

    def _metadata(self, address, topic: str = TOPIC):
        return call(address, MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                             allow_auto_topic_creation=False), api_version=12, timeout_ms=2000)

    def segment(self, node_id: int, partition: int) -> bytes | None:
        root = self.kafka.data_dir if node_id == KAFKA else self.quorum.data_dir(OURS)
        found = glob.glob(f"{root}/{TOPIC}-{partition}/{0:020d}.log")
        if not found:
            return None
        with open(found[0], "rb") as f:
            return f.read()


def answered_while_paused(pid: int, leader_port: int) -> bool:
    """Whether a connection of process ``pid`` to ``leader_port`` holds received, unread bytes: the
    leader answered the paused follower's in-flight Fetch (a long poll), so no Fetch of it is
    pending at the leader and nothing appended from now on reaches that follower."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                unread = int(fields[4].split(":")[1], 16)
                if fields[3] == "01" and fields[9] in inodes and remote_port == leader_port and unread > 0:
                    return True
    return False


def unreplicated_tail(cluster: MixedCluster, follower_pid: int, leader, partitions, tag: str) -> None:
    """With the follower (process ``follower_pid``) paused once its pending Fetch is answered,
    three acks=1 batches to each of ``partitions`` at ``leader``: a tail only the leader holds."""
    os.kill(follower_pid, signal.SIGSTOP)
    try:
        cluster.wait_until(lambda: answered_while_paused(follower_pid, leader[1]), "the paused follower's Fetch answered",
                           timeout_s=10)
        for partition in partitions:
            for n in range(3):
                records = build_batch([(b"%s-%d" % (tag.encode(), n), b"not replicated") for _ in range(2)])
                response = call(leader, ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
                    name=TOPIC, partition_data=[PartitionProduceData(index=partition, records=records)])]), 9)
                assert response.responses[0].partition_responses[0].error_code == Errors.NONE
    except BaseException:
        os.kill(follower_pid, signal.SIGCONT)
        raise


def log_end(segment: bytes | None) -> int:
    """The offset after the last batch of a segment's bytes (baseOffset + lastOffsetDelta + 1)."""
    end, position = 0, 0
    while segment and position + 61 <= len(segment):
        base = int.from_bytes(segment[position:position + 8], "big")
        length = int.from_bytes(segment[position + 8:position + 12], "big")
        end = base + int.from_bytes(segment[position + 23:position + 27], "big") + 1
        position += 12 + length
    return end


def idempotent_producer(cluster: MixedCluster):
    """A confluent-kafka producer with idempotence (acks=all): kept across a failover, its next
    sequence numbers must be accepted by the new leader, whose producer state was replicated."""
    return confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5,
                                     "enable.idempotence": True, "message.timeout.ms": 30_000})


def idempotent_producers(segment: bytes) -> set[tuple[int, int]]:
    """The (producer id, producer epoch) of the segment's idempotent, non-transactional batches: one
    per idempotent producer unless a failover cost it its producer state (librdkafka then bumps the
    epoch or gets a new id, KIP-360, and carries on: the records alone would not show it)."""
    return {(b.producer_id, b.producer_epoch) for b in iter_batches(segment)
            if b.producer_id >= 0 and not b.is_transactional}


def produce(cluster: MixedCluster, count: int, tag: str, producer=None) -> dict[int, list[bytes]]:
    """``count`` records to each partition with acks=all (confluent-kafka; idempotence off unless
    ``producer`` is given, so that nothing but the replication decides); {partition: the values
    acknowledged, in order}."""
    producer = producer or confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                                                     "linger.ms": 5, "enable.idempotence": False,
                                                     "message.timeout.ms": 30_000})
    acked: dict[int, list[bytes]] = {0: [], 1: []}
    errors = []

    def delivered(error, message):
        if error is None:
            acked[message.partition()].append(message.value())
        else:
            errors.append(error)
    for partition in acked:
        for i in range(count):
            producer.produce(TOPIC, b"%s-%d-%d" % (tag.encode(), partition, i), partition=partition,
                             on_delivery=delivered)
    assert producer.flush(WAIT_S) == 0
    assert errors == [] and all(len(values) == count for values in acked.values()), (errors, acked)
    return acked


def reader(bootstrap: str, partitions):
    """A consumer assigned ``partitions`` of TOPIC from offset 0 (no group)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                                         "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, p, 0) for p in partitions])
    return consumer


def read_more(consumer, got: dict[int, list[bytes]], counts: dict[int, int]) -> dict[int, list[bytes]]:
    """``got`` with what ``consumer`` reads next, until each partition has ``counts`` records."""
    deadline = time.monotonic() + WAIT_S
    while any(len(got[p]) < counts[p] for p in counts) and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got[message.partition()].append(message.value())
    return got


def read_back(bootstrap: str, counts: dict[int, int]) -> dict[int, list[bytes]]:
    """Every record of each partition from offset 0 up to ``counts``."""
    consumer = reader(bootstrap, counts)
    try:
        return read_more(consumer, {p: [] for p in counts}, counts)
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def cluster(kafka_libs, tmp_path_factory):
    controller = os.environ.get("KAFKAWIRE_MIXED_CONTROLLER", "kafkawire")
    assert controller in ("kafkawire", "kafka"), f"KAFKAWIRE_MIXED_CONTROLLER={controller!r}: kafkawire or kafka"
    cluster = MixedCluster(tmp_path_factory.mktemp("mixed-cluster"), controller)
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


def _in_sync_everywhere(cluster: MixedCluster, leaders: dict[int, int]) -> bool:
    wanted = {p: (leader, [OURS, KAFKA], [OURS, KAFKA]) for p, leader in leaders.items()}
    return all(cluster.partitions(a) == wanted for a in (cluster.ours, cluster.kafka_address))


def _followers_hold_leaders_bytes(cluster: MixedCluster) -> bool:
    return all(cluster.segment(KAFKA, p) is not None and cluster.segment(KAFKA, p) == cluster.segment(OURS, p)
               for p in LEADERS)


def _add(acked: dict[int, list[bytes]], more: dict[int, list[bytes]]) -> None:
    for partition, values in more.items():
        acked[partition] += values


def test_acks_all_records_replicated_in_sync_and_byte_for_byte(cluster):
    _add(cluster.acked, produce(cluster, 50, "first"))
    cluster.mark("first_produce_acked")
    got = read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()})
    assert got == cluster.acked
    assert _in_sync_everywhere(cluster, LEADERS)
    # DescribeTopicPartitions (leader epoch, ISR, ELR, offline replicas): each broker's answer from its image alike
    described = [described_partitions(address) for address in (cluster.ours, cluster.kafka_address)]
    assert described[0] == described[1] and [row[4] for row in described[0]] == [[OURS, KAFKA]] * 2, described
    cluster.wait_until(lambda: _followers_hold_leaders_bytes(cluster), "each follower to hold its leader's bytes")
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


def described_partitions(address) -> list[tuple]:
    """DescribeTopicPartitions v0 of TOPIC: each partition's fields, replica lists sorted."""
    topic, = call(address, DescribeTopicPartitionsRequest(topics=[TopicRequest(name=TOPIC)])).topics
    assert topic.error_code == Errors.NONE, topic
    return [(p.error_code, p.partition_index, p.leader_id, p.leader_epoch, sorted(p.isr_nodes), sorted(p.replica_nodes),
             p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas) for p in topic.partitions]


def group_in(partition: int, protocol: str) -> str:
    """A group id that __consumer_offsets' partition ``partition`` (of 2) holds."""
    return next(f"{protocol}-{n}" for n in range(100) if partition_for(f"{protocol}-{n}", 2) == partition)


def commit(bootstrap: str, group: str, offsets: dict[int, int], protocol: str) -> None:
    """A member of ``group`` (classic, or KIP-848's consumer protocol) subscribes to TOPIC, gets
    both partitions, commits ``offsets`` and leaves: the coordinator writes the group's records."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + WAIT_S
        while len(consumer.assignment()) < len(offsets) and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert len(consumer.assignment()) == len(offsets), consumer.assignment()
        consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, p, o) for p, o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def committed(bootstrap: str, group: str) -> dict[int, int]:
    """OffsetFetch of TOPIC's partitions for ``group``."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "enable.auto.commit": False})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed(
            [confluent_kafka.TopicPartition(TOPIC, p) for p in LEADERS], timeout=WAIT_S)}
    finally:
        consumer.close()


def transactional_id_in(partition: int) -> str:
    """A transactional id that __transaction_state's partition ``partition`` (of 2) holds."""
    return next(f"txn-{n}" for n in range(100) if partition_for(f"txn-{n}", 2) == partition)


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
        for commit in (True, False):
            producer.begin_transaction()
            values = {p: [b"%s-%s-%d-%d" % (transactional_id.encode(), b"commit" if commit else b"abort", p, i)
                          for i in range(5)] for p in LEADERS}
            for p, batch in values.items():
                for value in batch:
                    producer.produce(TOPIC, value, partition=p)
            assert producer.flush(WAIT_S) == 0
            if commit:
                producer.commit_transaction(WAIT_S)
                _add(cluster.acked, values)
            else:
                producer.abort_transaction(WAIT_S)
        coordinators[transactional_id] = partition
    for address in (cluster.ours, cluster.kafka_address):              # one coordinator on each broker
        answer = call(address, FindCoordinatorRequest(key_type=1, coordinator_keys=sorted(coordinators)), api_version=4)
        assert sorted(c.node_id for c in answer.coordinators) == [OURS, KAFKA], answer
    got = read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()})
    assert got == cluster.acked
    cluster.wait_until(lambda: _followers_hold_leaders_bytes(cluster), "each follower to hold its leader's bytes")
    cluster.mark("transactions_done")


def test_kafka_takes_over_from_a_killed_kafkawire_broker_which_then_truncates_to_it(cluster):
    """Before the kill, kafkawire (leader of partition 1) holds an acks=1 tail Kafka never fetched:
    restarted, it follows Kafka's leader and must drop that tail (Kafka's Fetch answer carries the
    diverging epoch) to hold Kafka's bytes."""
    idempotent = idempotent_producer(cluster)
    _add(cluster.acked, produce(cluster, 10, "idempotent-before-kafkawire-killed", idempotent))
    cluster.wait_until(lambda: _followers_hold_leaders_bytes(cluster), "each follower to hold its leader's bytes")
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
    _add(cluster.acked, produce(cluster, 20, "kafka-alone", idempotent))
    assert len(idempotent_producers(cluster.segment(KAFKA, 1))) == 1      # Kafka took our producer state

    cluster.quorum.start(OURS)
    cluster.wait_until(lambda: _in_sync_everywhere(cluster, {0: KAFKA, 1: KAFKA}) and cluster.all_in_sync(
        cluster.kafka_address), "the restarted kafkawire broker back in every ISR")
    cluster.mark("kafkawire_back_in_sync")
    cluster.wait_until(lambda: _followers_hold_leaders_bytes(cluster), "kafkawire to hold Kafka's bytes again")


def test_kafkawire_takes_over_from_a_killed_kafka_broker_which_then_truncates_to_it(cluster):
    """The other way round: Kafka (leader of both) holds an acks=1 tail kafkawire never fetched;
    kafkawire takes over and serves every acknowledged record; Kafka, restarted, follows kafkawire
    and drops its tail."""
    idempotent = idempotent_producer(cluster)
    _add(cluster.acked, produce(cluster, 20, "both-again", idempotent))
    cluster.wait_until(lambda: _followers_hold_leaders_bytes(cluster), "kafkawire to hold Kafka's bytes")
    replicated_ends = [log_end(cluster.segment(OURS, p)) for p in (0, 1)]
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
    _add(cluster.acked, produce(cluster, 20, "kafkawire-alone", idempotent))
    try:
        assert read_more(kept, kept_got, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked
    finally:
        kept.close()
    assert [len(idempotent_producers(cluster.segment(OURS, p))) for p in (0, 1)] == [2, 2]   # and we took Kafka's

    cluster.kafka.start()
    cluster.wait_until(lambda: _in_sync_everywhere(cluster, {0: OURS, 1: OURS}),
                       "the restarted Kafka broker back in both ISRs", timeout_s=90)
    cluster.mark("kafka_back_in_sync")
    cluster.wait_until(lambda: _followers_hold_leaders_bytes(cluster), "Kafka to hold kafkawire's bytes")
    assert read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked


def test_preferred_leader_election_gives_partition_0_back_to_kafka(cluster):
    """ElectLeaders (preferred) through the Kafka broker: partition 0 (replicas [3, 2]) goes back to
    Kafka, kafkawire leading it turns follower of Kafka at the new epoch; the replicas then take
    acks=all records and stay byte for byte alike."""
    answer = call(cluster.kafka_address, ElectLeadersRequest(election_type=0, topic_partitions=[
        ElectTopicPartitions(topic=TOPIC, partitions=[0])], timeout_ms=10_000), api_version=2)
    assert [(r.partition_id, r.error_code) for t in answer.replica_election_results
            for r in t.partition_result] == [(0, Errors.NONE)], answer
    cluster.wait_until(lambda: _in_sync_everywhere(cluster, LEADERS), "partition 0 led by Kafka again, both in sync")
    _add(cluster.acked, produce(cluster, 10, "after-election"))
    assert read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked
    cluster.wait_until(lambda: _followers_hold_leaders_bytes(cluster), "each follower to hold its leader's bytes")
    cluster.mark("preferred_leaders_back")


def reassign(cluster: MixedCluster, address, replicas: dict[int, list[int]]) -> None:
    """AlterPartitionReassignments through the broker at ``address`` (forwarded to the controller)."""
    answer = call(address, AlterPartitionReassignmentsRequest(timeout_ms=10_000, topics=[ReassignableTopic(
        name=TOPIC, partitions=[ReassignablePartition(partition_index=p, replicas=r) for p, r in replicas.items()])]),
        api_version=0)
    assert answer.error_code == Errors.NONE and all(
        p.error_code == Errors.NONE for t in answer.responses for p in t.partitions), answer


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
    cluster.wait_until(lambda: _in_sync_everywhere(cluster, LEADERS), "both replicas back, in sync")
    cluster.wait_until(lambda: _followers_hold_leaders_bytes(cluster), "each new follower to hold its leader's bytes")
    cluster.mark("reassigned_back")
    assert read_back(cluster.bootstrap, {p: len(v) for p, v in cluster.acked.items()}) == cluster.acked
