"""The mixed cluster of tests/interop/test_mixed_cluster_with_kafka.py (issue 29, scope 5): a
controller (kafkawire's, or a Kafka 4.3.1 controller JVM), a kafkawire broker and a Kafka 4.3.1
broker holding replicas of the same partitions, and the helpers its tests share: producing with
acks=all (confluent-kafka), reading back, comparing the replicas' segments, giving a leader a tail
its paused follower never fetches, and the coordinators' keys that land on each broker."""
from __future__ import annotations

import concurrent.futures
import glob
import os
import signal
import time

import confluent_kafka

from kafkawire.broker.group_records import partition_for
from kafkawire.messages.alter_partition_reassignments_request import (AlterPartitionReassignmentsRequest,
                                                                     ReassignablePartition, ReassignableTopic)
from kafkawire.messages.consumer_group_describe_request import ConsumerGroupDescribeRequest
from kafkawire.messages.describe_groups_request import DescribeGroupsRequest
from kafkawire.messages.describe_topic_partitions_request import DescribeTopicPartitionsRequest, TopicRequest
from kafkawire.messages.find_coordinator_request import FindCoordinatorRequest
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.protocol.error_codes import Errors
from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
from kafkawire.records import CorruptRecordError, iter_batches
from kafkawire.records.builder import build_batch
from tests.broker.wire import call
from tests.interop.kafka_procs import KafkaNode

TOPIC = "mixed"
CONTROLLER, OURS, KAFKA = 1, 2, 3
LEADERS = {0: KAFKA, 1: OURS}            # partition -> its first leader
WAIT_S = 60
# __transaction_state and __consumer_offsets on both brokers, one partition led by each: each broker
# coordinates a transaction and a group
INTERNAL_TOPICS = {"transaction.state.log.num.partitions": "2", "transaction.state.log.replication.factor": "2",
                   "transaction.state.log.min.isr": "1",
                   "offsets.topic.num.partitions": "2", "offsets.topic.replication.factor": "2",
                   "group.initial.rebalance.delay.ms": "0",
                  # KIP-939's two-phase commit on both brokers (InitProducerId v6, unstable in 4.3.1)
                  "unstable.api.versions.enable": "true", "transaction.two.phase.commit.enable": "true",
                  # the cleaners of both brokers at work soon after a segment rolls (Kafka's at 2 MB)
                  "log.cleaner.enable": "true", "log.cleaner.backoff.ms": "200",
                  "log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)}


class WaitsShowingLogs:
    """``wait_until`` for a cluster of processes: a bounded wait whose failure shows the processes'
    log tails (``log_tails()``)."""

    def wait_until(self, condition, what: str, timeout_s: float = WAIT_S):
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            last = condition()
            if last:
                return last
            time.sleep(0.1)
        raise AssertionError(f"not within {timeout_s} s: {what} (last: {last!r})\n{self.log_tails()}")

    def log_tails(self) -> str:
        raise NotImplementedError


CONTROLLERS = ("kafkawire", "kafka")


def chosen_controllers() -> list[str]:
    """The controllers a mixed-cluster module runs its cluster on: both, or the one that
    ``KAFKAWIRE_MIXED_CONTROLLER`` names (by hand)."""
    chosen = os.environ.get("KAFKAWIRE_MIXED_CONTROLLER")
    if chosen is None:
        return list(CONTROLLERS)
    assert chosen in CONTROLLERS, f"KAFKAWIRE_MIXED_CONTROLLER={chosen!r}: kafkawire or kafka"
    return [chosen]


class OnEitherController(WaitsShowingLogs):
    """The controller of a mixed cluster: node 1, kafkawire's controller, or with
    ``controller="kafka"`` a Kafka 4.3.1 controller JVM; the kafkawire brokers are nodes 2.. of
    ``self.quorum`` (process.roles=broker, set by the caller)."""

    def _controller_and_quorum(self, base, controller: str, kafkawire_brokers: int, properties: dict,
                               sessions: dict) -> str:
        """Sets ``self.quorum`` and ``self.kafka_controller``; the controllers' bootstrap servers."""
        assert controller in CONTROLLERS, f"controller {controller!r}: kafkawire or kafka"
        self.kafka_controller = None
        if controller == "kafkawire":
            self.quorum = LocalQuorum(base / "kafkawire", voters=1, extra_nodes=kafkawire_brokers,
                                      properties=properties)
            return self.quorum.bootstrap_servers()
        self.kafka_controller = KafkaNode(base / "kafka-controller", CONTROLLER, "controller", properties=sessions)
        # node 1 of this LocalQuorum is formatted but never started: node ids are the cluster's
        self.quorum = LocalQuorum(base / "kafkawire", voters=0, extra_nodes=1 + kafkawire_brokers, properties={
            **properties, "process.roles": "broker",
            "controller.quorum.bootstrap.servers": self.kafka_controller.controller_address})
        self.quorum.node_properties[CONTROLLER] = {"listeners": f"PLAINTEXT://127.0.0.1:{self.quorum.ports[1]}"}
        return self.kafka_controller.controller_address

    def _format_controller_and_quorum(self, pool, format_args=()) -> list:
        """The formats of kafkawire's nodes and of Kafka's controller, submitted to ``pool``."""
        formats = [pool.submit(self.quorum.format, extra_args=format_args)]
        if self.kafka_controller:
            # the SCRAM credential too: the controller's bootstrap records are the cluster's
            formats.append(pool.submit(self.kafka_controller.format, self.quorum.cluster_id, "--standalone",
                                       *format_args))
        return formats

    def _start_controller(self) -> None:
        if self.kafka_controller:
            self.kafka_controller.start()
        else:
            self.quorum.start(CONTROLLER)

    def _wait_for_controller(self) -> None:
        if self.kafka_controller:
            self.kafka_controller.wait_ready(90)
        else:
            self.quorum.wait_for_leader(timeout_s=WAIT_S)

    def _kill_controller_and_quorum(self) -> None:
        if self.kafka_controller:
            self.kafka_controller.kill()
        for node_id in list(self.quorum.processes):
            self.quorum.kill(node_id)

    def _controller_log_tail(self, lines: int) -> str:
        kind = "Kafka" if self.kafka_controller else "kafkawire"
        tail = self.kafka_controller.log_tail(lines) if self.kafka_controller else self.quorum.log_tail(CONTROLLER, lines)
        return f"--- {kind} controller {CONTROLLER}:\n{tail}"


class MixedCluster(OnEitherController):
    """Node 1 the controller (kafkawire's, or with ``controller="kafka"`` a Kafka 4.3.1 controller
    JVM), node 2 a kafkawire broker, node 3 a Kafka 4.3.1 broker."""

    def __init__(self, base, controller: str = "kafkawire", inter_broker: str = "plaintext"):
        self.began = time.monotonic()
        self.timings: dict[str, float] = {}
        broker_port, = free_ports(1)
        sessions = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
        properties = {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                      # fenced 3 s after its last heartbeat, so a killed broker's partitions move soon
                      **sessions, "replica.fetch.backoff.ms": "200", **INTERNAL_TOPICS}
        bootstrap_controllers = self._controller_and_quorum(base, controller, 1, properties, sessions)
        self.quorum.node_properties[OURS] = {"process.roles": "broker",
                                             "listeners": f"PLAINTEXT://127.0.0.1:{broker_port}"}
        self.ours = ("127.0.0.1", broker_port)
        self.kafka = KafkaNode(base / "kafka-broker", KAFKA, "broker", properties={
            "controller.quorum.bootstrap.servers": bootstrap_controllers,
            "broker.heartbeat.interval.ms": "500", "replica.fetch.backoff.ms": "200", **INTERNAL_TOPICS})
        self.kafka_address = ("127.0.0.1", self.kafka.broker_port)
        self.format_args: list[str] = []
        # a broker's client port -> the port its followers fetch from
        self.inter_broker_ports = {port: port for port in (broker_port, self.kafka.broker_port)}
        if inter_broker in ("sasl", "sasl_ssl"):
            self._inter_broker_over_sasl(base, tls=inter_broker == "sasl_ssl")

    def _inter_broker_over_sasl(self, base, tls: bool) -> None:
        """Replication (and every inter-broker request) on a listener BROKER of SASL_PLAINTEXT (or
        SASL_SSL, both brokers with one certificate for 127.0.0.1 and the CA that signed it) with
        SCRAM-SHA-256 (user ``broker``, from ``storage format --add-scram``) on both brokers; the
        clients stay on PLAINTEXT."""
        ours_port, kafka_port = free_ports(2)
        protocol = "SASL_SSL" if tls else "SASL_PLAINTEXT"
        sasl = {"listener.security.protocol.map": f"BROKER:{protocol},PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "BROKER", "sasl.enabled.mechanisms": "SCRAM-SHA-256",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256",
                "listener.name.broker.scram-sha-256.sasl.jaas.config":
                    'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" '
                    'password="broker-secret";'}
        if tls:
            from tests.net.tls_certs import make_pki
            pki = make_pki(base / "pki")
            sasl.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_pem),
                         "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca_pem)})
        self.quorum.node_properties[OURS].update(sasl, listeners=f"BROKER://127.0.0.1:{ours_port},"
                                                                 f"PLAINTEXT://127.0.0.1:{self.ours[1]}")
        self.kafka.extra.update(sasl, listeners=f"BROKER://127.0.0.1:{kafka_port},PLAINTEXT://127.0.0.1:"
                                               f"{self.kafka.broker_port}",
                                **{"advertised.listeners": f"BROKER://127.0.0.1:{kafka_port},"
                                                           f"PLAINTEXT://127.0.0.1:{self.kafka.broker_port}"})
        self.format_args = ["--add-scram", "SCRAM-SHA-256=[name=broker,password=broker-secret]"]
        self.inter_broker_ports = {self.ours[1]: ours_port, self.kafka.broker_port: kafka_port}

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ours[1]},{self.kafka.broker_address}"

    def start(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:      # three formats at once
            formats = [*self._format_controller_and_quorum(pool, self.format_args),
                       pool.submit(self.kafka.format, self.quorum.cluster_id, "--no-initial-controllers")]
            for done in formats:
                done.result()
        self.mark("formatted")
        # all at once: each broker retries until the controller answers
        self._start_controller()
        self.kafka.start()
        self.quorum.start(OURS)
        self._wait_for_controller()
        self.mark("controller_leader")
        self.kafka.wait_ready(90)
        self.mark("kafka_started")
        self.wait_until(lambda: self.brokers_seen(self.ours) == {OURS, KAFKA}, "both brokers unfenced")
        self.mark("brokers_unfenced")

    def mark(self, what: str) -> None:
        self.timings[what] = round(time.monotonic() - self.began, 1)

    def kill(self) -> None:
        self.kafka.kill()
        self._kill_controller_and_quorum()

    def log_tails(self) -> str:
        return (f"--- Kafka broker {KAFKA}:\n{self.kafka.log_tail(60)}\n--- kafkawire broker {OURS}:\n"
                f"{self.quorum.log_tail(OURS, 60)}\n{self._controller_log_tail(30)}")

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


def replica_records(cluster: MixedCluster, node_id: int, topic: str, partition: int) -> dict | None:
    """{offset: (key, value)} of every record in the replica's segments (None while a segment
    ends in a batch being written or a segment is being swapped by the cleaner)."""
    root = cluster.kafka.data_dir if node_id == KAFKA else cluster.quorum.data_dir(OURS)
    records = {}
    try:
        for path in sorted(glob.glob(f"{root}/{topic}-{partition}/*.log")):
            with open(path, "rb") as f:
                batches = iter_batches(f.read())
                for batch in batches:
                    records.update((r.offset, (bytes(r.key), bytes(r.value))) for r in batch)
            if batches.tail:
                return None
    except (OSError, CorruptRecordError):
        return None
    return records


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
        fetched_at = cluster.inter_broker_ports[leader[1]]
        cluster.wait_until(lambda: answered_while_paused(follower_pid, fetched_at), "the paused follower's Fetch answered",
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


def in_sync_everywhere(cluster: MixedCluster, leaders: dict[int, int]) -> bool:
    wanted = {p: (leader, [OURS, KAFKA], [OURS, KAFKA]) for p, leader in leaders.items()}
    return all(cluster.partitions(a) == wanted for a in (cluster.ours, cluster.kafka_address))


def followers_hold_leaders_bytes(cluster: MixedCluster) -> bool:
    return all(cluster.segment(KAFKA, p) is not None and cluster.segment(KAFKA, p) == cluster.segment(OURS, p)
               for p in LEADERS)


def add_acked(acked: dict[int, list[bytes]], more: dict[int, list[bytes]]) -> None:
    for partition, values in more.items():
        acked[partition] += values


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


def reassign(cluster: MixedCluster, address, replicas: dict[int, list[int]]) -> None:
    """AlterPartitionReassignments through the broker at ``address`` (forwarded to the controller)."""
    answer = call(address, AlterPartitionReassignmentsRequest(timeout_ms=10_000, topics=[ReassignableTopic(
        name=TOPIC, partitions=[ReassignablePartition(partition_index=p, replicas=r) for p, r in replicas.items()])]),
        api_version=0)
    assert answer.error_code == Errors.NONE and all(
        p.error_code == Errors.NONE for t in answer.responses for p in t.partitions), answer


def live_member(cluster: MixedCluster, coordinator_id: int, protocol: str):
    """A member (librdkafka, ``group.protocol`` classic or consumer) of a group that broker
    ``coordinator_id`` coordinates, subscribed to TOPIC and holding both partitions; (consumer, group)."""
    candidates = [f"live-{protocol}-{n}" for n in range(20)]
    answer = call(cluster.ours, FindCoordinatorRequest(key_type=0, coordinator_keys=candidates), api_version=4)
    group = next(c.key for c in answer.coordinators if c.error_code == Errors.NONE and c.node_id == coordinator_id)
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                                         "group.protocol": protocol, "enable.auto.commit": False,
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + WAIT_S
    while len(consumer.assignment()) < len(LEADERS) and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert len(consumer.assignment()) == len(LEADERS), consumer.assignment()
    return consumer, group


def member_view(address, group: str) -> tuple:
    """What a coordinator says of a live group: a KIP-848 group's state, group and assignment epochs
    and (member id, member epoch)s (ConsumerGroupDescribe), else a classic group's state, protocol
    and member ids (DescribeGroups: a member that had to join again has a new id)."""
    if group.startswith("live-consumer"):
        described, = call(address, ConsumerGroupDescribeRequest(group_ids=[group]), api_version=0).groups
        assert described.error_code == Errors.NONE, described
        return (described.group_state, described.group_epoch, described.assignment_epoch,
                sorted((m.member_id, m.member_epoch) for m in described.members))
    described, = call(address, DescribeGroupsRequest(groups=[group]), api_version=5).groups
    assert described.error_code == Errors.NONE, described
    return described.group_state, described.protocol_data, sorted(m.member_id for m in described.members)


def commit_as_member(consumer) -> None:
    """OffsetCommit by the member (its member id and epoch checked by the coordinator: a member the
    coordinator does not know, or at another epoch, is refused) of offset 1 on both partitions."""
    consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, p, 1) for p in LEADERS], asynchronous=False)
