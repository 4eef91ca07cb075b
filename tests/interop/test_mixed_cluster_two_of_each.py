"""Two kafkawire brokers and two Kafka 4.3.1 brokers in one cluster (issue 29, scope 5: more than
one broker of each implementation): node 1 the controller, nodes 2 and 3 kafkawire brokers
(process.roles=broker), nodes 4 and 5 Kafka brokers (one JVM each, -Xmx256m). The test runs twice
(its fixture has two params): on kafkawire's controller, then on a Kafka 4.3.1 controller (one more
JVM: Kafka's controller places the replicas, fences the killed brokers, moves their leaderships and
judges kafkawire's AlterPartition); ``KAFKAWIRE_MIXED_CONTROLLER=kafkawire|kafka`` picks one by hand.

Topic ``mixed4`` has four partitions of three replicas, each led by another broker, every partition
with replicas of both implementations, ``min.insync.replicas=2``; ``mixed4-txn`` the same, for
transactions. ``__transaction_state`` and ``__consumer_offsets`` have four partitions of three
replicas: a transactional id and a group coordinated by a broker of each kind (the ones killed
below where they coordinate some) each commit (a transaction over every partition, after an aborted
one; a group's offsets). Then, while an idempotent producer (confluent-kafka, acks=all) writes to
all four partitions of ``mixed4`` without pause:
1. a reassignment moves two partitions at once: partition 0 drops its kafkawire leader for a Kafka
   broker (the leadership moves to Kafka), partition 1 swaps one kafkawire follower for the other,
   which fetches the whole log from Kafka's leader while the records keep coming;
2. a kafkawire broker is killed with kill -9 (its partitions move to the others, of either kind),
   restarted, and rejoins every ISR it was in;
3. controlled shutdowns (SIGTERM), after a preferred leader election: kafkawire broker 3 leading
   partition 2 (to Kafka broker 5), then Kafka broker 4 leading partition 1 (to kafkawire broker
   2), each allowed by the controller (its log says so), restarted, back in every ISR;
4. a Kafka broker is killed with kill -9 and stays down.
The producer keeps being acknowledged through each step. At the end every acknowledged record is
read back exactly once and in order (idempotence held across each leader change, whichever
implementation took over), and the live replicas of each partition hold the same log, byte for
byte. The transactions' committed records are read (read_committed) once, none aborted, and the
groups' offsets answered by the coordinators now (the killed brokers' coordination moved); each
transactional id and group commits again there. What the two-broker cluster of
test_mixed_cluster_with_kafka.py cannot show: followers of both kinds of one leader, leaders moving
between brokers of the same kind, a reassignment under load, and controlled shutdowns. Every wait
is bounded; every process is killed by pid at teardown."""
from __future__ import annotations

import concurrent.futures
import glob
import signal
import threading
import time

import pytest

from kafkawire.messages.alter_partition_reassignments_request import (AlterPartitionReassignmentsRequest,
                                                                     ReassignablePartition, ReassignableTopic)
from kafkawire.messages.create_topics_request import (CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
                                                       CreateTopicsRequest)
from kafkawire.messages.elect_leaders_request import ElectLeadersRequest
from kafkawire.messages.elect_leaders_request import TopicPartitions as ElectTopicPartitions
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.list_partition_reassignments_request import ListPartitionReassignmentsRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import free_ports
from tests.broker.wire import call
from tests.interop.kafka_procs import KafkaNode

confluent_kafka = pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.slow

from tests.interop.mixed_cluster import OnEitherController, chosen_controllers  # noqa: E402  (after the skip: it imports confluent_kafka)

TOPIC, TXN_TOPIC = "mixed4", "mixed4-txn"
OURS, KAFKAS = (2, 3), (4, 5)
ASSIGNMENT = {0: [2, 4, 3], 1: [4, 3, 5], 2: [3, 5, 2], 3: [5, 2, 4]}
REASSIGNED = {0: [5, 4, 3], 1: [4, 2, 5]}
WAIT_S = 60
# __consumer_offsets and __transaction_state on three brokers each, a partition led by each broker:
# brokers of both kinds coordinate groups and transactions, and a killed one's coordination moves
INTERNAL_TOPICS = {"offsets.topic.num.partitions": "4", "offsets.topic.replication.factor": "3",
                   "transaction.state.log.num.partitions": "4", "transaction.state.log.replication.factor": "3",
                   "transaction.state.log.min.isr": "2", "group.initial.rebalance.delay.ms": "0"}


class TwoOfEach(OnEitherController):
    def __init__(self, base, controller: str = "kafkawire"):
        self.began = time.monotonic()
        self.timings: dict[str, float] = {}
        ports = free_ports(2)
        sessions = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
        bootstrap_controllers = self._controller_and_quorum(base, controller, len(OURS), {
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "replica.fetch.backoff.ms": "200", **sessions, **INTERNAL_TOPICS}, sessions)
        self.addresses = {}
        for node_id, port in zip(OURS, ports):
            self.quorum.node_properties[node_id] = {"process.roles": "broker",
                                                    "listeners": f"PLAINTEXT://127.0.0.1:{port}"}
            self.addresses[node_id] = ("127.0.0.1", port)
        self.kafkas = {node_id: KafkaNode(base / f"kafka-{node_id}", node_id, "broker", properties={
            "controller.quorum.bootstrap.servers": bootstrap_controllers,
            "broker.heartbeat.interval.ms": "500", "replica.fetch.backoff.ms": "200", **INTERNAL_TOPICS})
            for node_id in KAFKAS}
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

    def wait_acknowledged_more(self, cluster: TwoOfEach, when: str) -> None:
        """Until 40 more records are acknowledged (or a delivery fails)."""
        than = self.count()
        cluster.wait_until(lambda: self.errors or self.count() >= than + 40, f"the producer acknowledged {when}")

    def stop(self) -> dict[int, list[bytes]]:
        self.stopped.set()
        self.thread.join(90)
        assert not self.thread.is_alive() and self.producer.flush(30) == 0
        # librdkafka's client goes with the last reference to it (the thread's bound method held
        # this object in a cycle: left to the collector, it went on dialling the dead brokers)
        self.producer = self.thread = None
        assert self.errors == [], self.errors
        return self.acked


def read_all(bootstrap: str, counts: dict[int, int], topic: str = TOPIC,
             isolation: str = "read_uncommitted") -> tuple[dict[int, list[bytes]], dict[int, int]]:
    """Each partition's records from offset 0 up to ``counts``, and its high watermark."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in counts])
    got: dict[int, list[bytes]] = {p: [] for p in counts}
    deadline = time.monotonic() + WAIT_S
    try:
        while any(len(got[p]) < counts[p] for p in counts) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got[message.partition()].append(message.value())
        ends = {p: consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=10)[1]
                for p in counts}
    finally:
        consumer.close()
    return got, ends


def coordinator_of_each_kind(cluster: TwoOfEach, key_type: int, prefix: str) -> dict[str, tuple[str, int]]:
    """{kind: (key, its coordinator)}: a group id (``key_type`` 0) or transactional id (1) that a
    kafkawire broker coordinates, and one that a Kafka broker does, the killed brokers (3, 5)
    chosen where they coordinate some key (their keys' coordination moves to another broker)."""
    candidates = [f"{prefix}-{n}" for n in range(40)]

    def found():
        answer = call(cluster.addresses[OURS[0]], FindCoordinatorRequest(key_type=key_type,
                                                                         coordinator_keys=candidates), api_version=4)
        return {c.key: c.node_id for c in answer.coordinators if c.error_code == Errors.NONE}
    def found_on_both_kinds():          # none while the internal topic is being created
        got = found()
        return got if {node in OURS for node in got.values()} == {True, False} else None
    nodes = cluster.wait_until(found_on_both_kinds, f"{prefix} keys coordinated by both kinds")
    chosen = {}
    for kind, brokers, killed in (("kafkawire", OURS, OURS[1]), ("kafka", KAFKAS, KAFKAS[1])):
        of_kind = sorted((node != killed, key) for key, node in nodes.items() if node in brokers)
        chosen[kind] = (of_kind[0][1], nodes[of_kind[0][1]])
    return chosen


def transact(bootstrap: str, transactional_id: str, tag: str) -> dict[int, list[bytes]]:
    """An aborted, then a committed transaction over every partition of TXN_TOPIC (each aborted
    record precedes a committed one, so a read_committed reader that let one through reads it
    among those it expects); the committed values."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(WAIT_S)
    for committing in (False, True):
        producer.begin_transaction()
        values = {p: [b"%s-%s-%s-%d-%d" % (transactional_id.encode(), tag.encode(), b"commit" if committing
                                           else b"abort", p, i) for i in range(3)] for p in ASSIGNMENT}
        for partition, batch in values.items():
            for value in batch:
                producer.produce(TXN_TOPIC, value, partition=partition)
        assert producer.flush(WAIT_S) == 0
        if committing:
            producer.commit_transaction(WAIT_S)
        else:
            producer.abort_transaction(WAIT_S)
    return values


def commit_offsets(bootstrap: str, group: str, offsets: dict[int, int]) -> None:
    """OffsetCommit of ``offsets`` (TOPIC's partitions) for ``group`` by a consumer with no
    subscription (generation -1, as Kafka's simple consumers commit)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, p, o) for p, o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str) -> dict[int, int]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "enable.auto.commit": False})
    try:
        return {tp.partition: tp.offset for tp in consumer.committed(
            [confluent_kafka.TopicPartition(TOPIC, p) for p in ASSIGNMENT], timeout=WAIT_S)}
    finally:
        consumer.close()


class Coordinated:
    """A transactional id and a group coordinated by each kind of broker, and what they wrote:
    the transactions' committed values and the groups' committed offsets."""

    def __init__(self, cluster: TwoOfEach):
        self.transactional_ids = coordinator_of_each_kind(cluster, 1, "txn")
        self.groups = coordinator_of_each_kind(cluster, 0, "group")
        self.committed_values: dict[int, list[bytes]] = {p: [] for p in ASSIGNMENT}
        self.offsets: dict[str, dict[int, int]] = {}

    def write(self, bootstrap: str, tag: str) -> None:
        for transactional_id, _ in self.transactional_ids.values():
            for partition, values in transact(bootstrap, transactional_id, tag).items():
                self.committed_values[partition] += values
        for n, (group, _) in enumerate(self.groups.values()):
            self.offsets[group] = {p: 10 * n + p + len(tag) for p in ASSIGNMENT}
            commit_offsets(bootstrap, group, self.offsets[group])

    def coordinators_now(self, cluster: TwoOfEach, asked: int) -> dict[str, int]:
        """{key: the broker that coordinates it now} (FindCoordinator through broker ``asked``)."""
        found = {}
        for key_type, chosen in ((1, self.transactional_ids), (0, self.groups)):
            answer = call(cluster.addresses[asked], FindCoordinatorRequest(
                key_type=key_type, coordinator_keys=[key for key, _ in chosen.values()]), api_version=4)
            found.update((c.key, c.node_id) for c in answer.coordinators)
        return found

    def check(self, bootstrap: str) -> None:
        """read_committed reads the committed values, none aborted; each group's offsets are answered."""
        got, _ = read_all(bootstrap, {p: len(v) for p, v in self.committed_values.items()}, TXN_TOPIC,
                          "read_committed")
        assert got == self.committed_values
        assert {group: committed_offsets(bootstrap, group) for group in self.offsets} == self.offsets


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


def create_topics(cluster: TwoOfEach) -> None:
    response = call(cluster.addresses[OURS[0]], CreateTopicsRequest(timeout_ms=10_000, topics=[CreatableTopic(
        name=name, num_partitions=-1, replication_factor=-1, configs=[
            CreatableTopicConfig(name="min.insync.replicas", value="2")], assignments=[
            CreatableReplicaAssignment(partition_index=p, broker_ids=r) for p, r in ASSIGNMENT.items()])
        for name in (TOPIC, TXN_TOPIC)]))
    assert [t.error_code for t in response.topics] == [Errors.NONE, Errors.NONE], response


def reassign_under_load(cluster: TwoOfEach, producer: SteadyProducer) -> dict[int, list[int]]:
    """Partition 0's leader (kafkawire 2) replaced by Kafka 5, and kafkawire 2 added to partition 1
    (led by Kafka) in place of kafkawire 3; the replicas after."""
    answer = call(cluster.addresses[KAFKAS[0]], AlterPartitionReassignmentsRequest(timeout_ms=10_000, topics=[
        ReassignableTopic(name=TOPIC, partitions=[ReassignablePartition(partition_index=p, replicas=r)
                                                  for p, r in REASSIGNED.items()])]), api_version=0)
    assert answer.error_code == Errors.NONE and all(
        p.error_code == Errors.NONE for t in answer.responses for p in t.partitions), answer
    replicas = {**ASSIGNMENT, **REASSIGNED}

    def reassigned():
        listed = call(cluster.addresses[OURS[1]], ListPartitionReassignmentsRequest(timeout_ms=2000, topics=None))
        return listed.error_code == Errors.NONE and not listed.topics and cluster.in_sync(replicas, OURS + KAFKAS)
    cluster.wait_until(reassigned, "the reassignment done and every replica in sync")
    assert cluster.partitions(OURS[0])[0][0] in KAFKAS       # partition 0 is led by Kafka now
    cluster.mark("reassigned")
    producer.wait_acknowledged_more(cluster, "after the reassignment")
    return replicas


def controlled_shutdowns(cluster: TwoOfEach, producer: SteadyProducer, replicas: dict[int, list[int]]) -> None:
    """Preferred leaders elected (partition 2 back to kafkawire 3), then SIGTERM of kafkawire 3
    (partition 2 to Kafka 5) and, once it is back, of Kafka 4 (partition 1 to kafkawire 2): each
    a controlled shutdown its controller allowed, each broker restarted and back in every ISR."""
    everyone = OURS + KAFKAS
    answer = call(cluster.addresses[KAFKAS[1]], ElectLeadersRequest(election_type=0, topic_partitions=[
        ElectTopicPartitions(topic=TOPIC, partitions=[1, 2])], timeout_ms=10_000), api_version=2)
    assert all(r.error_code in (Errors.NONE, Errors.ELECTION_NOT_NEEDED) for t in answer.replica_election_results
               for r in t.partition_result), answer
    cluster.wait_until(lambda: all(cluster.partitions(n).get(2, [0])[0] == OURS[1]
                                   and cluster.partitions(n).get(1, [0])[0] == KAFKAS[0] for n in everyone),
                       "partition 2 led by kafkawire 3, partition 1 by Kafka 4")
    for leaving, partition, successor in ((OURS[1], 2, KAFKAS[1]), (KAFKAS[0], 1, OURS[0])):
        if leaving in OURS:
            assert cluster.quorum.stop(leaving, timeout_s=30) == 0
            assert "the controller has allowed us to shut down" in cluster.quorum.log_tail(leaving, 60)
        else:
            # the JVM exits with 128 + SIGTERM once its shutdown hooks ran (None: it had to be killed)
            assert cluster.kafkas[leaving].stop(timeout_s=60) == 128 + signal.SIGTERM
            assert "The controller has asked us to exit controlled shutdown" in cluster.kafkas[leaving].log_text()
        live = [n for n in everyone if n != leaving]
        cluster.wait_until(lambda: cluster.in_sync(replicas, live, down=[leaving]) and all(
            cluster.partitions(n)[partition][0] == successor for n in live),
            f"broker {leaving} out of every ISR, partition {partition} led by {successor}")
        producer.wait_acknowledged_more(cluster, f"without broker {leaving}")
        if leaving in OURS:
            cluster.quorum.start(leaving)
        else:
            cluster.kafkas[leaving].start()
        cluster.wait_until(lambda: cluster.in_sync(replicas, everyone), f"broker {leaving} back in every ISR",
                           timeout_s=90)
        cluster.mark(f"controlled_shutdown_{leaving}_back")


def test_two_brokers_of_each_kind_lose_nothing_through_reassignment_kills_and_shutdowns(cluster):
    create_topics(cluster)
    everyone = OURS + KAFKAS
    cluster.wait_until(lambda: cluster.in_sync(ASSIGNMENT, everyone), "the topics in sync as assigned")
    coordinated = Coordinated(cluster)
    coordinated.write(cluster.bootstrap(everyone), "before")
    cluster.mark("coordinated_before")
    producer = SteadyProducer(cluster.bootstrap(everyone))
    producer.wait_acknowledged_more(cluster, "at first")

    # 1. a reassignment under load, moving partition 0's leadership from kafkawire to Kafka
    replicas = reassign_under_load(cluster, producer)

    # 2. kill -9 of kafkawire broker 3 (leader of partition 2), restarted: back in every ISR
    cluster.quorum.kill(OURS[1])
    live = (OURS[0], *KAFKAS)
    cluster.wait_until(lambda: cluster.in_sync(replicas, live, down=[OURS[1]]), "broker 3 out of every ISR")
    assert cluster.partitions(OURS[0])[2][0] != OURS[1]
    producer.wait_acknowledged_more(cluster, "without broker 3")
    cluster.quorum.start(OURS[1])
    cluster.wait_until(lambda: cluster.in_sync(replicas, everyone), "broker 3 back in every ISR")
    cluster.mark("kafkawire_broker_back")

    # 3. controlled shutdowns of a leader of each kind, each broker restarted
    controlled_shutdowns(cluster, producer, replicas)

    # 4. kill -9 of Kafka broker 5 (leader of partitions 0 and 3), which stays down
    cluster.kafkas[KAFKAS[1]].kill()
    live = (*OURS, KAFKAS[0])
    cluster.wait_until(lambda: cluster.in_sync(replicas, live, down=[KAFKAS[1]]), "broker 5 out of every ISR")
    producer.wait_acknowledged_more(cluster, "without broker 5")
    cluster.mark("kafka_broker_killed")

    acked = producer.stop()
    assert all(len(values) >= 20 for values in acked.values()), {p: len(v) for p, v in acked.items()}
    got, ends = read_all(cluster.bootstrap(live), {p: len(v) for p, v in acked.items()})
    assert got == acked                          # every acknowledged record, once, in order
    assert ends == {p: len(v) for p, v in acked.items()}       # and nothing else in the logs
    # the transactions and groups: their coordinators on brokers 3 and 5 were killed (3 restarted)
    coordinated.check(cluster.bootstrap(live))
    coordinated.write(cluster.bootstrap(live), "after")
    coordinated.check(cluster.bootstrap(live))
    cluster.mark("coordinated_after")
    print(f"\ncoordinators at first: {coordinated.transactional_ids} {coordinated.groups}; "
          f"at the end: {coordinated.coordinators_now(cluster, OURS[0])}")
    for partition, on in replicas.items():
        holders = [n for n in on if n != KAFKAS[1]]
        cluster.wait_until(lambda: len({cluster.log(n, partition) for n in holders}) == 1,
                           f"partition {partition}'s replicas {holders} to hold the same log")
