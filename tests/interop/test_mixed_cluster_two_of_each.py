"""Two kafkawire brokers and two Kafka 4.3.1 brokers in one cluster (issue 29, scope 5: more than
one broker of each implementation): node 1 the controller, nodes 2 and 3 kafkawire brokers
(process.roles=broker), nodes 4 and 5 Kafka brokers (one JVM each, -Xmx256m). The test runs twice
(its fixture has two params): on kafkawire's controller, then on a Kafka 4.3.1 controller (one more
JVM: Kafka's controller places the replicas, fences the killed brokers, moves their leaderships and
judges kafkawire's AlterPartition); ``KAFKAWIRE_MIXED_CONTROLLER=kafkawire|kafka`` picks one by hand.

Topic ``mixed4`` has four partitions of three replicas, each led by another broker, every partition
with replicas of both implementations, ``min.insync.replicas=2``. While an idempotent producer
(confluent-kafka, acks=all) writes to all four partitions without pause:
1. a reassignment moves two partitions at once: partition 0 drops its kafkawire leader for a Kafka
   broker (the leadership moves to Kafka), partition 1 swaps one kafkawire follower for the other,
   which fetches the whole log from Kafka's leader while the records keep coming;
2. a kafkawire broker is killed with kill -9 (its partitions move to the others, of either kind),
   restarted, and rejoins every ISR it was in;
3. a Kafka broker is killed with kill -9 and stays down.
The producer keeps being acknowledged through each step. At the end every acknowledged record is
read back exactly once and in order (idempotence held across each leader change, whichever
implementation took over), and the live replicas of each partition hold the same log, byte for
byte. What the two-broker cluster of test_mixed_cluster_with_kafka.py cannot show: followers of
both kinds of one leader, leaders moving between brokers of the same kind, and a reassignment
under load. Every wait is bounded; every process is killed by pid at teardown."""
from __future__ import annotations

import concurrent.futures
import glob
import threading
import time

import pytest

from kafkawire.messages.alter_partition_reassignments_request import (AlterPartitionReassignmentsRequest,
                                                                     ReassignablePartition, ReassignableTopic)
from kafkawire.messages.create_topics_request import (CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
                                                       CreateTopicsRequest)
from kafkawire.messages.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import free_ports
from tests.broker.wire import call
from tests.interop.kafka_procs import KafkaNode

confluent_kafka = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.slow

from tests.interop.mixed_cluster import OnEitherController, chosen_controllers  # noqa: E402  (after the skip: it imports confluent_kafka)

TOPIC = "mixed4"
OURS, KAFKAS = (2, 3), (4, 5)
ASSIGNMENT = {0: [2, 4, 3], 1: [4, 3, 5], 2: [3, 5, 2], 3: [5, 2, 4]}
REASSIGNED = {0: [5, 4, 3], 1: [4, 2, 5]}
WAIT_S = 60


class TwoOfEach(OnEitherController):
    def __init__(self, base, controller: str = "kafkawire"):
        self.began = time.monotonic()
        self.timings: dict[str, float] = {}
        ports = free_ports(2)
        sessions = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
        bootstrap_controllers = self._controller_and_quorum(base, controller, len(OURS), {
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "replica.fetch.backoff.ms": "200", **sessions}, sessions)
        self.addresses = {}
        for node_id, port in zip(OURS, ports):
            self.quorum.node_properties[node_id] = {"process.roles": "broker",
                                                    "listeners": f"PLAINTEXT://127.0.0.1:{port}"}
            self.addresses[node_id] = ("127.0.0.1", port)
        self.kafkas = {node_id: KafkaNode(base / f"kafka-{node_id}", node_id, "broker", properties={
            "controller.quorum.bootstrap.servers": bootstrap_controllers,
            "broker.heartbeat.interval.ms": "500", "replica.fetch.backoff.ms": "200"}) for node_id in KAFKAS}
        for node_id, kafka in self.kafkas.items():
            self.addresses[node_id] = ("127.0.0.1", kafka.broker_port)

    def start(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:      # the formats at once (two or three JVMs)
            formats = self._format_controller_and_quorum(pool) + [pool.submit(
                kafka.format, self.quorum.cluster_id, "--no-initial-controllers") for kafka in self.kafkas.values()]
            for done in formats:
                done.result()
        self.mark("formatted")
        self._start_controller()
        for kafka in self.kafkas.values():
            kafka.start()
        for node_id in OURS:
            self.quorum.start(node_id)
        self._wait_for_controller()
        for kafka in self.kafkas.values():
            kafka.wait_ready(90)
        self.wait_until(lambda: self.brokers_seen(OURS[0]) == set(OURS + KAFKAS), "all four brokers unfenced")
        self.mark("started")

    def mark(self, what: str) -> None:
        self.timings[what] = round(time.monotonic() - self.began, 1)

    def kill(self) -> None:
        for kafka in self.kafkas.values():
            kafka.kill()
        self._kill_controller_and_quorum()

    def log_tails(self) -> str:
        tails = [self._controller_log_tail(40)] + [f"--- kafkawire node {n}:\n{self.quorum.log_tail(n, 40)}"
                                                  for n in OURS]
        tails += [f"--- Kafka broker {n}:\n{k.log_tail(40)}" for n, k in self.kafkas.items()]
        return "\n".join(tails)

    def bootstrap(self, nodes) -> str:
        return ",".join(f"{host}:{port}" for host, port in (self.addresses[n] for n in nodes))

    def brokers_seen(self, node_id: int) -> set[int]:
        try:
            return {b.node_id for b in self._metadata(node_id).brokers}
        except Exception:               # not listening yet, or just killed
            return set()

    def partitions(self, node_id: int) -> dict[int, tuple[int, list[int], list[int]]]:
        """{partition: (leader, replicas, isr)} of TOPIC in broker ``node_id``'s metadata."""
        try:
            topics = self._metadata(node_id).topics
        except Exception:
            return {}
        return {p.partition_index: (p.leader_id, list(p.replica_nodes), sorted(p.isr_nodes))
                for t in topics if t.error_code == Errors.NONE for p in t.partitions}

    def _metadata(self, node_id: int):
        return call(self.addresses[node_id], MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)],
                                                             allow_auto_topic_creation=False),
                    api_version=12, timeout_ms=2000)

    def in_sync(self, replicas: dict[int, list[int]], live, down=()) -> bool:
        """Whether every live broker's metadata has each partition on ``replicas`` with every live
        replica in its ISR (and none of ``down``)."""
        wanted = {p: (r, sorted(set(r) - set(down))) for p, r in replicas.items()}
        return all({p: (rs, isr) for p, (_, rs, isr) in self.partitions(n).items()} == wanted for n in live)

    def log(self, node_id: int, partition: int) -> bytes:
        """The replica's whole log: its segments' bytes in offset order."""
        root = self.kafkas[node_id].data_dir if node_id in KAFKAS else self.quorum.data_dir(node_id)
        data = b""
        for path in sorted(glob.glob(f"{root}/{TOPIC}-{partition}/*.log")):
            with open(path, "rb") as f:
                data += f.read()
        return data


class SteadyProducer:
    """An idempotent acks=all producer writing to every partition in rounds, each flushed before
    the next, until stopped; ``acked`` holds each partition's acknowledged values in order."""

    def __init__(self, bootstrap: str):
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                                                  "enable.idempotence": True, "message.timeout.ms": 45_000})
        self.acked: dict[int, list[bytes]] = {p: [] for p in ASSIGNMENT}
        self.errors: list = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        sent = 0
        while not self.stopped.is_set() and not self.errors:
            for partition in ASSIGNMENT:
                for _ in range(5):
                    self.producer.produce(TOPIC, b"v-%d-%d" % (partition, sent), partition=partition,
                                          on_delivery=self._delivered)
                    sent += 1
            self.producer.flush(60)

    def _delivered(self, error, message) -> None:
        if error is None:
            self.acked[message.partition()].append(message.value())
        else:
            self.errors.append(error)

    def count(self) -> int:
        return sum(len(values) for values in self.acked.values())

    def stop(self) -> dict[int, list[bytes]]:
        self.stopped.set()
        self.thread.join(90)
        assert not self.thread.is_alive() and self.producer.flush(30) == 0
        # librdkafka's client goes with the last reference to it (the thread's bound method held
        # this object in a cycle: left to the collector, it went on dialling the dead brokers)
        self.producer = self.thread = None
        assert self.errors == [], self.errors
        return self.acked


def read_all(bootstrap: str, counts: dict[int, int]) -> tuple[dict[int, list[bytes]], dict[int, int]]:
    """Each partition's records from offset 0 up to ``counts``, and its high watermark."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                                         "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, p, 0) for p in counts])
    got: dict[int, list[bytes]] = {p: [] for p in counts}
    deadline = time.monotonic() + WAIT_S
    try:
        while any(len(got[p]) < counts[p] for p in counts) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got[message.partition()].append(message.value())
        ends = {p: consumer.get_watermark_offsets(confluent_kafka.TopicPartition(TOPIC, p), timeout=10)[1]
                for p in counts}
    finally:
        consumer.close()
    return got, ends


@pytest.fixture(params=chosen_controllers(), ids=lambda controller: f"{controller}-controller")
def cluster(request, kafka_libs, tmp_path):
    cluster = TwoOfEach(tmp_path, request.param)
    try:
        cluster.start()
        yield cluster
        print(f"\ntwo of each ({request.param} controller): timings (s since start): {cluster.timings}")
    except BaseException:
        print(cluster.log_tails())
        raise
    finally:
        cluster.kill()


def test_two_brokers_of_each_kind_lose_nothing_through_a_reassignment_and_kills(cluster):
    response = call(cluster.addresses[OURS[0]], CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=TOPIC, num_partitions=-1, replication_factor=-1, configs=[
            CreatableTopicConfig(name="min.insync.replicas", value="2")], assignments=[
            CreatableReplicaAssignment(partition_index=p, broker_ids=r) for p, r in ASSIGNMENT.items()])]))
    assert [t.error_code for t in response.topics] == [Errors.NONE], response
    everyone = OURS + KAFKAS
    cluster.wait_until(lambda: cluster.in_sync(ASSIGNMENT, everyone), "the topic in sync as assigned")
    producer = SteadyProducer(cluster.bootstrap(everyone))

    def acknowledged_more(than: int):
        return lambda: producer.errors or producer.count() >= than + 40
    cluster.wait_until(acknowledged_more(0), "the producer acknowledged")

    # 1. a reassignment under load: partition 0's leader (kafkawire 2) replaced by Kafka 5, and
    #    kafkawire 2 added to partition 1 (led by Kafka) in place of kafkawire 3
    answer = call(cluster.addresses[KAFKAS[0]], AlterPartitionReassignmentsRequest(timeout_ms=10_000, topics=[
        ReassignableTopic(name=TOPIC, partitions=[ReassignablePartition(partition_index=p, replicas=r)
                                                  for p, r in REASSIGNED.items()])]), api_version=0)
    assert answer.error_code == Errors.NONE and all(
        p.error_code == Errors.NONE for t in answer.responses for p in t.partitions), answer
    replicas = {**ASSIGNMENT, **REASSIGNED}

    def reassigned():
        listed = call(cluster.addresses[OURS[1]], ListPartitionReassignmentsRequest(timeout_ms=2000, topics=None))
        return listed.error_code == Errors.NONE and not listed.topics and cluster.in_sync(replicas, everyone)
    cluster.wait_until(reassigned, "the reassignment done and every replica in sync")
    assert cluster.partitions(OURS[0])[0][0] in KAFKAS       # partition 0 is led by Kafka now
    cluster.mark("reassigned")
    cluster.wait_until(acknowledged_more(producer.count()), "the producer acknowledged after the reassignment")

    # 2. kill -9 of kafkawire broker 3 (leader of partition 2), restarted: back in every ISR
    cluster.quorum.kill(OURS[1])
    live = (OURS[0], *KAFKAS)
    cluster.wait_until(lambda: cluster.in_sync(replicas, live, down=[OURS[1]]), "broker 3 out of every ISR")
    assert cluster.partitions(OURS[0])[2][0] != OURS[1]
    cluster.wait_until(acknowledged_more(producer.count()), "the producer acknowledged without broker 3")
    cluster.quorum.start(OURS[1])
    cluster.wait_until(lambda: cluster.in_sync(replicas, everyone), "broker 3 back in every ISR")
    cluster.mark("kafkawire_broker_back")

    # 3. kill -9 of Kafka broker 5 (leader of partitions 0 and 3), which stays down
    cluster.kafkas[KAFKAS[1]].kill()
    live = (*OURS, KAFKAS[0])
    cluster.wait_until(lambda: cluster.in_sync(replicas, live, down=[KAFKAS[1]]), "broker 5 out of every ISR")
    cluster.wait_until(acknowledged_more(producer.count()), "the producer acknowledged without broker 5")

    cluster.mark("kafka_broker_killed")
    acked = producer.stop()
    assert all(len(values) >= 20 for values in acked.values()), {p: len(v) for p, v in acked.items()}
    got, ends = read_all(cluster.bootstrap(live), {p: len(v) for p, v in acked.items()})
    assert got == acked                          # every acknowledged record, once, in order
    assert ends == {p: len(v) for p, v in acked.items()}       # and nothing else in the logs
    for partition, on in replicas.items():
        holders = [n for n in on if n != KAFKAS[1]]
        cluster.wait_until(lambda: len({cluster.log(n, partition) for n in holders}) == 1,
                           f"partition {partition}'s replicas {holders} to hold the same log")
