"""Real clients on real Kafka 4.3.1 brokers whose controller quorum is three kafkawire
controllers (issue 16, scenarios 2 and 3): kafka-python, confluent-kafka and kcat produce and
consume, a consumer group commits offsets, a transactional producer commits and aborts and a
read_committed consumer sees only what was committed; then failover: a broker leading
partitions is killed (our controller fences it after the session timeout and moves leadership
within the ISR; it restarts and rejoins the ISRs through AlterPartition), and the active
controller is killed during steady produce.

Every acknowledged record is counted and found exactly once; each test prints what it
produced, consumed and lost, and the failover tests print the times they measured.

The tests share one cluster (a cluster start is ~15 s of the module's time), each with topics
of its own: every broker or controller a test kills or stops, it starts again, and each test
first makes sure every process runs and every broker is unfenced. The JBOD test alone starts
its own cluster, whose brokers have two log directories.
"""
from __future__ import annotations

import asyncio
import collections
import shutil
import subprocess
import threading
import time

import pytest

from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.net.client import NetworkClient, TransportError
from tests.interop.kafka_on_kafkawire import ClusterError

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")
kafka = pytest.importorskip("kafka")

SESSION_TIMEOUT_MS = 3000            # broker.session.timeout.ms on our controllers
BROKER_PROPERTIES = {
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "broker.heartbeat.interval.ms": "500",       # at most half the session timeout, as Kafka requires
}
CONTROLLER_PROPERTIES = {"broker.session.timeout.ms": str(SESSION_TIMEOUT_MS)}


def start_cluster(kafka_on_kafkawire):
    """A cluster of its own with this module's settings (tests/interop/test_spark_on_kafka_brokers.py)."""
    return kafka_on_kafkawire(3, 3, controller_properties=CONTROLLER_PROPERTIES,
                              broker_properties=BROKER_PROPERTIES)


@pytest.fixture(scope="module")
def shared_cluster(kafka_libs, tmp_path_factory):
    from tests.interop.kafka_on_kafkawire import KafkaOnKafkawire
    cluster = KafkaOnKafkawire(tmp_path_factory.mktemp("kafka-on-kafkawire"), 3, 3,
                               controller_properties=CONTROLLER_PROPERTIES, broker_properties=BROKER_PROPERTIES)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(shared_cluster, request):
    """The module's cluster, whole: a controller or broker an earlier test left down (it failed
    before restarting it) is started again, then every broker is unfenced. A failed test prints
    every process's log tail."""
    for controller in shared_cluster.controller_ids:
        if controller not in shared_cluster.quorum.running():
            shared_cluster.quorum.start(controller)
    for broker in shared_cluster.broker_ids:
        if not shared_cluster.brokers[broker].alive():
            shared_cluster.start_broker(broker)
    shared_cluster.wait_for_controller_leader(60)
    shared_cluster.wait_for_unfenced(shared_cluster.broker_ids, timeout_s=90)
    yield shared_cluster
    if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
        print(f"\n{shared_cluster.log_tails(60)}")


# --- asking a broker -------------------------------------------------------------------------------
async def _metadata(address, topic: str, timeout_ms: int):
    async with NetworkClient(client_id="kafka-clients-on-kafkawire", request_timeout_ms=timeout_ms,
                             connect_timeout_ms=timeout_ms) as client:
        response = await client.send(address, MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                                              allow_auto_topic_creation=False))
    (t,) = response.topics
    if t.error_code:
        return None
    return {p.partition_index: (p.leader_id, sorted(p.isr_nodes)) for p in t.partitions}


def partitions(cluster, topic: str, asked: int | None = None):
    """{partition: (leader, isr)} as a live broker sees ``topic``, or None if none answers."""
    ids = [asked] if asked is not None else [b for b in cluster.broker_ids if cluster.brokers[b].alive()]
    for b in ids:
        try:
            view = asyncio.run(_metadata(("127.0.0.1", cluster.brokers[b].broker_port), topic, 2000))
        except (TransportError, OSError, ValueError):
            continue
        if view is not None:
            return view
    return None


def isrs_all(cluster, topic: str, rule) -> bool:
    """``rule(isr)`` holds for every partition of ``topic`` as a live broker sees it."""
    view = partitions(cluster, topic)
    return view is not None and all(rule(isr) for _, isr in view.values())


def create_topic(cluster, name: str, partitions_: int, *configs: str) -> None:
    args = ["--create", "--topic", name, "--partitions", partitions_, "--replication-factor", "3"]
    for config in configs:
        args += ["--config", config]
    cluster.topics(*args)
    cluster.wait_until(lambda: (lambda v: v is not None and len(v) == partitions_ and
                                all(leader >= 0 and len(isr) == 3 for leader, isr in v.values()))(
        partitions(cluster, name)), 60, f"{name}'s partitions led, ISR 3 (as every broker sees it)")


# --- consuming ---------------------------------------------------------------------------------------
def consume_values(cluster, topic: str, expected: int, *, isolation: str = "read_uncommitted",
                   group: str | None = None, idle_s: float = 5, timeout_s: float = 90) -> list[bytes]:
    """Every value of ``topic`` from the beginning (confluent-kafka), until ``expected`` were read
    and either the consumer has read every partition to its high watermark (nothing more can come:
    the producers are done) or nothing more came for ``idle_s`` (when the position stops short of
    the high watermark, behind a transaction marker)."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": cluster.bootstrap_servers([b for b in cluster.broker_ids if cluster.brokers[b].alive()]),
        "group.id": group or f"reader-{topic}-{isolation}-{time.monotonic_ns()}",
        "auto.offset.reset": "earliest", "enable.auto.commit": False, "isolation.level": isolation})
    values: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        last_new = time.monotonic()
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                if len(values) >= expected and (time.monotonic() - last_new >= idle_s or _read_to_the_end(consumer)):
                    break
                continue
            if message.error():
                continue
            values.append(message.value())
            last_new = time.monotonic()
        if group is not None and values:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def _read_to_the_end(consumer) -> bool:
    """Every partition assigned to ``consumer`` has been read up to its high watermark."""
    assigned = consumer.assignment()
    if not assigned:
        return False
    try:
        for tp in consumer.position(assigned):
            low, high = consumer.get_watermark_offsets(tp, timeout=5, cached=False)
            if tp.offset < high and not (tp.offset < 0 and low == high):
                return False
    except confluent_kafka.KafkaException:      # a broker not answering now: ask again later
        return False
    return True


def exactly_once_report(label: str, acked, consumed) -> tuple[int, int, int]:
    """Print and return (lost, duplicated, unexpected) of ``acked`` values among ``consumed``."""
    counts = collections.Counter(consumed)
    acked = set(acked)
    lost = sum(1 for v in acked if counts[v] == 0)
    duplicated = sum(1 for v in acked if counts[v] > 1)
    unexpected = sum(1 for v in counts if v not in acked)
    print(f"\n[{label}] produced (acknowledged): {len(acked)}, consumed: {len(consumed)} "
          f"({len(counts)} distinct), lost: {lost}, duplicated: {duplicated}, not acknowledged but read: {unexpected}")
    return lost, duplicated, unexpected


# --- producing steadily in the background ------------------------------------------------------------
class SteadyProducer:
    """confluent-kafka, acks=all with idempotence, one record every ``interval_s`` until stopped;
    the time of every acknowledgement is kept."""

    def __init__(self, cluster, topic: str, prefix: str, interval_s: float = 0.005):
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": cluster.bootstrap_servers(), "acks": "all", "enable.idempotence": True,
            "message.timeout.ms": 120000, "linger.ms": 5})
        self.topic, self.prefix, self.interval_s = topic, prefix, interval_s
        self.acked: list[tuple[float, bytes]] = []
        self.failed: list[tuple[bytes, str]] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, error, message):
        if error is None:
            self.acked.append((time.monotonic(), message.value()))
        else:
            self.failed.append((message.value(), str(error)))

    def _run(self):
        while not self._stop.is_set():
            value = f"{self.prefix}-{self.sent}".encode()
            try:
                self.producer.produce(self.topic, value=value, key=value, on_delivery=self._delivered)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(self.interval_s)

    def __enter__(self):
        self._thread.start()
        return self

    def stop(self, flush_s: float = 120) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(10)
            remaining = self.producer.flush(flush_s)
            if remaining:
                self.producer.purge()     # close() would wait until they time out (message.timeout.ms)
            self.producer.close()         # librdkafka's threads would go on reconnecting after the test
            assert remaining == 0, f"{remaining} records still unacknowledged after {flush_s} s"

    def __exit__(self, *exc):
        self.stop()

    def acked_values(self) -> list[bytes]:
        return [v for _, v in self.acked]

    def longest_gap(self, since: float, until: float) -> float:
        """The longest time without an acknowledgement within [since, until]."""
        times = [since] + sorted(t for t, _ in self.acked if since <= t <= until) + [until]
        return max(b - a for a, b in zip(times, times[1:]))

    def wait_acked(self, cluster, count: int, timeout_s: float = 60) -> None:
        cluster.wait_until(lambda: len(self.acked) >= count, timeout_s, f"{count} acknowledged records")


def metadata_batches(metadata_dir) -> list[list]:
    """The metadata records of a controller's __cluster_metadata log, batch by batch."""
    from pathlib import Path

    from kafkawire.metadata import decode_metadata_record
    from kafkawire.records import iter_batches
    batches = []
    for segment in sorted(Path(metadata_dir).glob("*.log")):
        for batch in iter_batches(segment.read_bytes()):
            if not batch.is_control:
                batches.append([decode_metadata_record(bytes(r.value)).message for r in batch.records()])
    return batches


def directory_changes(metadata_dir) -> list:
    """The PartitionChangeRecords with Directories in a controller's __cluster_metadata log."""
    return [m for batch in metadata_batches(metadata_dir) for m in batch
            if type(m).NAME == "PartitionChangeRecord" and m.directories is not None]


# First, so that its own cluster is gone before the module's shared one starts.
def test_brokers_with_two_log_directories_assign_their_replicas_through_our_controller(kafka_on_kafkawire):
    from kafkawire.metadata.registrations import MIGRATING, UNASSIGNED
    from kafkawire.metadata.replay import replay_directory

    cluster = kafka_on_kafkawire(3, 3, start=False, controller_properties=CONTROLLER_PROPERTIES,
                                 broker_properties=BROKER_PROPERTIES)
    for node in cluster.brokers.values():          # JBOD: a second log directory on every broker
        node.extra["log.dirs"] = f"{node.data_dir},{node.directory / 'data-2'}"
    cluster.start()

    def image():
        return replay_directory(cluster.quorum.metadata_partition_dir(cluster.wait_for_controller_leader(10).leader_id)
                                ).image

    registered = image().brokers
    assert all(len(registered[b].directories) == 2 for b in cluster.broker_ids)
    cluster.topics("--create", "--topic", "jbod", "--partitions", "6", "--replication-factor", "3")

    def assigned():
        topic = image().topics_by_name.get("jbod")
        if topic is None or len(topic.partitions) != 6:
            return False
        placed = [(r, d) for p in topic.partitions.values() for r, d in zip(p.replicas, p.directories)]
        return all(d not in (UNASSIGNED, MIGRATING) and d in registered[r].directories for r, d in placed) and placed
    placed = cluster.wait_until(assigned, 60, "every replica of jbod assigned to one of its broker's directories "
                                              "(AssignReplicasToDirs)")
    used = collections.Counter(d for _, d in placed)
    moves = directory_changes(cluster.quorum.metadata_partition_dir(cluster.wait_for_controller_leader(10).leader_id))
    assert moves, "no PartitionChangeRecord with Directories: the replicas were not assigned by the brokers"
    print(f"\n[JBOD] 18 replicas placed over {len(used)} directories by AssignReplicasToDirs "
          f"({len(moves)} PartitionChangeRecords with Directories)")

    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers(), "acks": "all",
                                         "enable.idempotence": True})
    delivered = []
    for i in range(200):
        producer.produce("jbod", value=f"jbod-{i}",
                         on_delivery=lambda err, msg: delivered.append(msg.value()) if err is None else None)
    assert producer.flush(60) == 0
    producer.close()
    consumed = consume_values(cluster, "jbod", len(delivered))
    assert len(delivered) == 200
    assert exactly_once_report("JBOD", delivered, consumed) == (0, 0, 0)


# --- the scenarios -------------------------------------------------------------------------------------
def test_clients_produce_and_consume_a_group_commits_and_transactions_commit_and_abort(cluster):
    create_topic(cluster, "orders", 6, "min.insync.replicas=2")
    servers = cluster.bootstrap_servers()

    # kafka-python, acks=all with idempotence (InitProducerId: the brokers allocate producer ids from us)
    python_producer = kafka.KafkaProducer(bootstrap_servers=servers, acks="all", enable_idempotence=True)
    futures = {f"kafka-python-{i}".encode(): python_producer.send("orders", key=str(i).encode(),
                                                                   value=f"kafka-python-{i}".encode())
               for i in range(300)}
    python_producer.flush(60)
    python_producer.close()
    acked = [v for v, f in futures.items() if f.succeeded()]
    assert len(acked) == 300, [f.exception for f in futures.values() if f.failed()][:3]

    # confluent-kafka, acks=all with idempotence
    delivered = []
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True})
    for i in range(300):
        producer.produce("orders", key=str(i), value=f"confluent-{i}",
                         on_delivery=lambda err, msg: delivered.append(msg.value()) if err is None else None)
    assert producer.flush(60) == 0
    assert len(delivered) == 300
    acked += delivered

    # kcat -P (acks=all); it exits non-zero if a record is not delivered
    kcat = shutil.which("kcat")
    if kcat:
        lines = "".join(f"kcat-{i}\n" for i in range(200))
        result = subprocess.run([kcat, "-P", "-b", servers, "-t", "orders", "-X", "acks=all"], input=lines,
                                text=True, capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr
        acked += [f"kcat-{i}".encode() for i in range(200)]

    # Kafka's own Java producer (ConsoleProducer: idempotent, acks=all), its producer id allocated
    # by the brokers from our controller; it flushes before it exits, and a record it failed to
    # send would be missing below (every one of them is looked for)
    lines = "".join(f"console-{i}\n" for i in range(200))
    result = cluster.tool("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", servers, "--topic",
                          "orders", "--command-property", "acks=all", input=lines, timeout=120)
    assert "ERROR" not in result.stderr and "Exception" not in result.stderr, result.stderr[-3000:]
    acked += [f"console-{i}".encode() for i in range(200)]

    # a consumer group reads everything and commits; the group's next member starts after it
    consumed = consume_values(cluster, "orders", len(acked), group="audit")
    lost, duplicated, unexpected = exactly_once_report("clients", acked, consumed)
    assert (lost, duplicated, unexpected) == (0, 0, 0)
    again = consume_values(cluster, "orders", 0, group="audit", idle_s=3, timeout_s=20)
    assert again == [], f"the group re-read {len(again)} records after committing"
    member = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "audit"})
    committed = member.committed([confluent_kafka.TopicPartition("orders", p) for p in range(6)], timeout=30)
    member.close()
    assert sum(tp.offset for tp in committed) == len(acked)       # one offset per record, from 0

    if kcat:     # kcat -C reads the same records back
        result = subprocess.run([kcat, "-C", "-b", servers, "-t", "orders", "-o", "beginning", "-e", "-q",
                                 "-f", "%s\n"], capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr
        read = result.stdout.split(b"\n")[:-1]
        assert collections.Counter(read) == collections.Counter(acked)
        print(f"[kcat -C] read {len(read)} records")

    # Kafka's ConsoleConsumer reads the same records back
    result = cluster.tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", servers,
                          "--topic", "orders", "--from-beginning", "--max-messages", str(len(acked)),
                          "--timeout-ms", "30000", timeout=120)
    read = [line.encode() for line in result.stdout.splitlines()]
    assert collections.Counter(read) == collections.Counter(acked), (len(read), len(acked))
    print(f"[ConsoleConsumer] read {len(read)} records")

    # transactions: commit 50, abort 50, commit 50 (__transaction_state created on demand)
    create_topic(cluster, "ledger", 3, "min.insync.replicas=2")
    transactional = confluent_kafka.Producer({"bootstrap.servers": servers, "transactional.id": "ledger-writer",
                                              "acks": "all"})
    transactional.init_transactions(60)
    committed_values, aborted_values = [], []
    for batch, outcome in enumerate(("commit", "abort", "commit")):
        transactional.begin_transaction()
        values = [f"tx{batch}-{i}".encode() for i in range(50)]
        for value in values:
            transactional.produce("ledger", value=value)
        if outcome == "commit":
            transactional.commit_transaction(60)
            committed_values += values
        else:
            transactional.flush(60)
            transactional.abort_transaction(60)
            aborted_values += values
    read_committed = consume_values(cluster, "ledger", len(committed_values), isolation="read_committed")
    read_uncommitted = consume_values(cluster, "ledger", len(committed_values) + len(aborted_values))
    assert exactly_once_report("read_committed", committed_values, read_committed) == (0, 0, 0)
    assert collections.Counter(read_uncommitted) == collections.Counter(committed_values + aborted_values)
    transactional.close()
    print(f"[transactions] committed: {len(committed_values)}, aborted: {len(aborted_values)}, "
          f"read_committed saw {len(read_committed)}, read_uncommitted saw {len(read_uncommitted)}")
    # The brokers asked for the internal topics themselves (FindCoordinator: a plain CreateTopics).
    assert partitions(cluster, "__transaction_state") is not None
    assert partitions(cluster, "__consumer_offsets") is not None

    # A topic nobody created: the broker's auto-creation forwards CreateTopics in an Envelope.
    auto = []
    producer.produce("auto-created", value="first", on_delivery=lambda err, msg: auto.append(err))
    assert producer.flush(60) == 0 and auto == [None], auto
    producer.close()
    assert consume_values(cluster, "auto-created", 1) == [b"first"]


def test_a_killed_broker_is_fenced_its_partitions_move_within_the_isr_and_it_rejoins(cluster):
    create_topic(cluster, "steady", 3, "min.insync.replicas=2")
    before = partitions(cluster, "steady")
    victim = before[0][0]
    led = sorted(p for p, (leader, _) in before.items() if leader == victim)
    survivors = [b for b in cluster.broker_ids if b != victim]
    with SteadyProducer(cluster, "steady", "broker-failover") as producer:
        producer.wait_acked(cluster, 200)
        killed_at = time.monotonic()
        cluster.kill_broker(victim)

        def moved():
            view = partitions(cluster, "steady")
            return view is not None and all(view[p][0] not in (victim, -1) and view[p][0] in before[p][1]
                                            for p in led) and view
        after = cluster.wait_until(moved, 60, f"new leaders for the partitions broker {victim} led")
        new_leader_s = time.monotonic() - killed_at
        cluster.wait_until(lambda: isrs_all(cluster, "steady", lambda isr: victim not in isr),
                           30, f"broker {victim} out of every ISR")
        cluster.wait_until(lambda: cluster.describe_cluster(survivors[0]).get(victim) is True, 30,
                           f"broker {survivors[0]} seeing broker {victim} fenced")
        acked_at_move = len(producer.acked)
        producer.wait_acked(cluster, acked_at_move + 200)     # producing goes on

        restarted_at = time.monotonic()
        cluster.start_broker(victim)
        cluster.wait_for_unfenced([victim], timeout_s=90)
        cluster.wait_until(lambda: isrs_all(cluster, "steady", lambda isr: victim in isr),
                           90, f"broker {victim} back in every ISR (AlterPartition from the leaders)")
        rejoin_s = time.monotonic() - restarted_at
        producer.wait_acked(cluster, len(producer.acked) + 200)
        producer.stop()
    print(f"\n[broker failover] broker {victim} killed; new leaders {({p: after[p][0] for p in led})} "
          f"{new_leader_s:.2f} s after the kill (broker.session.timeout.ms={SESSION_TIMEOUT_MS}); "
          f"restarted broker back in every ISR {rejoin_s:.2f} s after its start; "
          f"producer's longest gap without an acknowledgement: "
          f"{producer.longest_gap(killed_at, killed_at + new_leader_s + 5):.2f} s")
    assert new_leader_s < SESSION_TIMEOUT_MS / 1000 + 15
    consumed = consume_values(cluster, "steady", len(producer.acked))
    assert exactly_once_report("broker failover", producer.acked_values(), consumed) == (0, 0, 0)
    assert producer.failed == []


def first_topic_created(admin, since: float, timeout_s: float) -> float:
    """Seconds from ``since`` until a CreateTopics through the brokers (forwarded to the active
    controller) succeeds, trying a new topic name each time."""
    deadline = since + timeout_s
    attempt = 0
    while time.monotonic() < deadline:
        attempt += 1
        topic = confluent_admin.NewTopic(f"probe-{attempt}", num_partitions=1, replication_factor=3)
        future = admin.create_topics([topic], request_timeout=2.0, operation_timeout=2.0)[topic.topic]
        try:
            future.result(timeout=5)
            return time.monotonic() - since
        except (confluent_kafka.KafkaException, TimeoutError, ValueError):
            time.sleep(0.1)
    raise AssertionError(f"no CreateTopics succeeded within {timeout_s} s of the controller's kill")


def test_the_active_controller_killed_during_steady_produce_loses_no_acknowledged_record(cluster):
    create_topic(cluster, "steady-controller-failover", 3, "min.insync.replicas=2")
    with SteadyProducer(cluster, "steady-controller-failover", "controller-failover") as producer:
        producer.wait_acked(cluster, 200)
        old = cluster.quorum.wait_for_leader(10).leader_id
        admin = confluent_admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
        killed_at = time.monotonic()
        cluster.quorum.kill(old)
        new = cluster.quorum.wait_for_leader(120, exclude=[old])
        elected_s = time.monotonic() - killed_at
        created_s = first_topic_created(admin, killed_at, timeout_s=60)
        del admin                         # no close(); its threads end with the last reference
        # The brokers follow the new controller: still registered and unfenced after more than a
        # session timeout, and a topic can be created through it.
        time.sleep(SESSION_TIMEOUT_MS / 1000 + 2)
        cluster.wait_for_unfenced(cluster.broker_ids, timeout_s=30)
        create_topic(cluster, "after-failover", 3)
        window_end = time.monotonic()
        producer.wait_acked(cluster, len(producer.acked) + 200)
        cluster.quorum.start(old)
        producer.stop()
    gap = producer.longest_gap(killed_at, window_end)
    print(f"\n[controller failover] active controller {old} killed; controller {new.leader_id} leads "
          f"(epoch {new.leader_epoch}) {elected_s:.2f} s later; the producer's longest gap without an "
          f"acknowledgement from the kill until {window_end - killed_at:.1f} s after it: {gap:.3f} s; "
          f"the first CreateTopics through the brokers that succeeded after the kill: {created_s:.2f} s")
    consumed = consume_values(cluster, "steady-controller-failover", len(producer.acked))
    assert exactly_once_report("controller failover", producer.acked_values(), consumed) == (0, 0, 0)
    assert producer.failed == []


def shut_down_as_seen_by(cluster, asked: int, topic: str, leaving: int, led) -> bool:
    """Whether broker ``asked`` sees ``leaving`` fenced, in no ISR of ``topic``, and leading none
    of the partitions ``led`` (each led by some other broker)."""
    view = partitions(cluster, topic, asked=asked)
    if view is None or any(view[p][0] in (leaving, -1) for p in led) or any(leaving in isr for _, isr in view.values()):
        return False
    try:
        return cluster.describe_cluster(asked).get(leaving) is True
    except ClusterError:            # not answering this time: ask again
        return False


def test_sigterm_is_a_controlled_shutdown_leaders_move_before_the_broker_exits(cluster):
    topic = "steady-controlled-shutdown"
    create_topic(cluster, topic, 3, "min.insync.replicas=2")
    before = partitions(cluster, topic)
    leaving = before[1][0]
    led = sorted(p for p, (leader, _) in before.items() if leader == leaving)
    survivors = [b for b in cluster.broker_ids if b != leaving]
    with SteadyProducer(cluster, topic, "controlled-shutdown") as producer:
        producer.wait_acked(cluster, 200)
        logged_before = len(cluster.brokers[leaving].log_text())      # its log holds earlier tests' lines
        asked_at = time.monotonic()
        cluster.stop_broker(leaving, timeout_s=60)       # SIGTERM; returns once the JVM has exited
        exited_s = time.monotonic() - asked_at
        assert not cluster.brokers[leaving].alive(), f"broker {leaving} did not exit within 60 s of SIGTERM"
        # BrokerHeartbeat(wantShutDown): our controller moved its leaderships and took it out of
        # every ISR before telling it to shut down (SHUTDOWN_NOW fences it). Those records were
        # committed before the answer, but a survivor shows them once it has fetched and replayed
        # them, which may be after the leaving JVM exits: wait for its view, bounded.
        cluster.wait_until(lambda: shut_down_as_seen_by(cluster, survivors[0], topic, leaving, led), 30,
                           f"broker {survivors[0]} seeing broker {leaving} fenced, out of every ISR, "
                           f"and {led} led by others")
        assert "controlled shutdown" in cluster.brokers[leaving].log_text()[logged_before:].lower()
        producer.wait_acked(cluster, len(producer.acked) + 200)
        gap = producer.longest_gap(asked_at, asked_at + exited_s)
        cluster.start_broker(leaving)
        cluster.wait_for_unfenced([leaving], timeout_s=90)
        cluster.wait_until(lambda: isrs_all(cluster, topic, lambda isr: leaving in isr), 90,
                           f"broker {leaving} back in every ISR")
        producer.stop()
    print(f"\n[controlled shutdown] broker {leaving} (leading {led}) exited {exited_s:.2f} s after SIGTERM; "
          f"the producer's longest gap without an acknowledgement meanwhile: {gap:.3f} s")
    consumed = consume_values(cluster, topic, len(producer.acked))
    assert exactly_once_report("controlled shutdown", producer.acked_values(), consumed) == (0, 0, 0)
    assert producer.failed == []


def test_a_killed_follower_below_min_insync_replicas_becomes_an_eligible_leader_replica(cluster):
    """KIP-966 with real brokers (ELR is on at 4.3-IV0): with min.insync.replicas=3, a killed
    follower leaves the ISR for the ELR; Kafka's own tools show the ELR our controller wrote. Its
    restart after kill -9 is an unclean shutdown, which takes it out of the ELR in the registration's
    batch; the leader takes it back into the ISR, which empties the ELR."""
    from kafkawire.metadata.replay import replay_directory

    create_topic(cluster, "strict", 1, "min.insync.replicas=3")
    leader, isr = partitions(cluster, "strict")[0]
    victim = next(b for b in isr if b != leader)

    def controller_partition():
        active = cluster.wait_for_controller_leader(10).leader_id
        return replay_directory(cluster.quorum.metadata_partition_dir(active)).image.topics_by_name["strict"].partitions[0]

    def described_elr() -> str:
        out = cluster.topics("--describe", "--topic", "strict").stdout
        return out.split("Elr:")[1].split()[0] if "Elr:" in out else ""

    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers(), "acks": "all",
                                         "enable.idempotence": True, "message.timeout.ms": 60000})
    acked = []

    def produce(prefix, count):
        for i in range(count):
            producer.produce("strict", value=f"{prefix}-{i}",
                             on_delivery=lambda err, msg: acked.append(msg.value()) if err is None else None)
        assert producer.flush(90) == 0

    def registrations_of_victim() -> list[list]:
        """The batches of the active controller's log that register broker ``victim``."""
        return [batch for batch in metadata_batches(cluster.quorum.metadata_partition_dir(
            cluster.wait_for_controller_leader(10).leader_id))
            if any(type(m).NAME == "RegisterBrokerRecord" and m.broker_id == victim for m in batch)]

    produce("before", 50)
    incarnations = len(registrations_of_victim())      # 1 unless an earlier test of the module restarted it
    cluster.kill_broker(victim)
    cluster.wait_until(lambda: isrs_all(cluster, "strict", lambda isr: victim not in isr), 30,
                       f"broker {victim} out of the ISR")
    fenced = controller_partition()
    assert (fenced.leader, victim in fenced.isr, fenced.elr) == (leader, False, (victim,)), fenced
    # the brokers replayed our ELR (Kafka's tool may ask a broker that has not replayed it yet)
    cluster.wait_until(lambda: described_elr() == str(victim), 60, f"kafka-topics describing ELR {victim}")

    cluster.start_broker(victim)
    cluster.wait_for_unfenced([victim], timeout_s=90)
    cluster.wait_until(lambda: isrs_all(cluster, "strict", lambda isr: victim in isr), 90,
                       f"broker {victim} back in the ISR")
    back = controller_partition()
    assert (back.leader, sorted(back.isr), back.elr, back.last_known_elr) == (leader, sorted(isr), (), ()), back
    registrations = registrations_of_victim()
    assert incarnations >= 1 and len(registrations) == incarnations + 1, "one registration per incarnation"
    # unclean: out of the ELR first, in the registration's batch; on the module's shared cluster the
    # victim may also be in the ELR of an earlier test's partitions, which the batch changes too
    # (the controller pipelines its writes, so the raft log may put the next ones, a NoOpRecord,
    # in the same batch, after the registration, as Kafka's batch accumulator does)
    batch = registrations[-1]
    end = next(i for i, m in enumerate(batch) if type(m).NAME == "RegisterBrokerRecord")
    changes = [m for m in batch[:end] if type(m).NAME != "NoOpRecord"]
    assert [(type(m).NAME, m.eligible_leader_replicas) for m in changes] == [("PartitionChangeRecord", [])] * len(changes)
    strict_id = replay_directory(cluster.quorum.metadata_partition_dir(
        cluster.wait_for_controller_leader(10).leader_id)).image.topics_by_name["strict"].id
    assert [m.partition_id for m in changes if m.topic_id == strict_id] == [0]
    produce("after", 50)                              # acks=all needs all three again
    producer.close()
    consumed = consume_values(cluster, "strict", len(acked))
    print(f"\n[ELR] broker {victim} killed: ELR {list(fenced.elr)} with ISR {list(fenced.isr)}; "
          f"after its restart ISR {list(back.isr)}, ELR {list(back.elr)}")
    assert len(acked) == 100
    assert exactly_once_report("ELR", acked, consumed) == (0, 0, 0)
