"""`kafkawire main --with-kafka-brokers N`: real Apache Kafka brokers on kafkawire controllers.

The main job stays Python-only; with this flag it also starts N Kafka 4.3.1 brokers
(``process.roles=broker``, one JVM each, -Xmx256m) whose controller quorum is the kafkawire
controllers, creates a topic through them, produces and consumes a few records with
kafka-python, prints what it did and stops everything.

It downloads nothing. The brokers run from a Kafka distribution's jars (a ``libs/`` folder
holding ``kafka_2.13-*.jar``): ``--kafka-dist DIR`` names it (DIR or DIR/libs), else
``$KAFKAWIRE_KAFKA_DIST``, else the repository's ``.kafka-dist/``, which the test suite
materialises with ``python -m tests.interop.kafka_dist`` (Java 17 and Maven). Without Java or
the jars the job stops before starting anything, saying which is missing and how to get it.
"""
from __future__ import annotations

import ctypes
import glob
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafkawire._extras import require
from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError, free_ports

__all__ = ["KafkaDistributionMissing", "find_kafka_libs", "java_executable", "KafkaBroker", "run_with_brokers"]

KAFKA_SERVER = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
_SERVER_JAR = "kafka_2.13-*.jar"
# Brokers log to stdout, which goes to the broker's own log file.
_LOG4J = """status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.requestlogger.name = kafka.request.logger
logger.requestlogger.level = WARN
"""
_HOW_TO_GET = ("materialise it with `python -m tests.interop.kafka_dist` in a kafkawire checkout (Java 17 and "
               "Maven bring Apache Kafka 4.3.1's jars from Maven Central into .kafka-dist/), or give "
               "--kafka-dist DIR naming a Kafka distribution (its libs/ folder)")



def _killed_with_parent() -> None:
    """In the broker JVM's child before exec: SIGKILL it when the job that started it dies (a
    `kill -9` of the job leaves no broker behind; Linux's PR_SET_PDEATHSIG, elsewhere nothing).
    SIGKILL, not SIGTERM: a broker's controlled shutdown would wait for controllers that die
    with the same job."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


class KafkaDistributionMissing(RuntimeError):
    """Java or the Kafka jars are not there; the message says which and how to get them."""


def _repo_dist() -> Path:
    return Path(__file__).resolve().parents[2] / ".kafka-dist"


def find_kafka_libs(kafka_dist: str | None = None) -> Path:
    """The folder of Kafka's jars: ``kafka_dist`` (or its libs/), $KAFKAWIRE_KAFKA_DIST, or
    the repository's .kafka-dist/."""
    if kafka_dist:
        where, source = Path(kafka_dist), "--kafka-dist"
    elif os.environ.get("KAFKAWIRE_KAFKA_DIST"):
        where, source = Path(os.environ["KAFKAWIRE_KAFKA_DIST"]), "$KAFKAWIRE_KAFKA_DIST"
    else:
        where, source = _repo_dist(), "the repository's Kafka distribution"
    for libs in (where / "libs", where):
        if glob.glob(str(libs / _SERVER_JAR)):
            return libs
    raise KafkaDistributionMissing(f"no Kafka jars ({_SERVER_JAR}) in {where} or {where / 'libs'} "
                                   f"({source}); {_HOW_TO_GET}")


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and Path(home, "bin", "java").exists():
        return str(Path(home, "bin", "java"))
    found = shutil.which("java")
    if found is None:
        raise KafkaDistributionMissing("no Java runtime: `java` is not on PATH and $JAVA_HOME/bin/java does not "
                                       "exist; Kafka 4.3.1's brokers need Java 17 or newer (install a JDK or "
                                       "set JAVA_HOME)")
    return found


class KafkaBroker:
    """One Kafka broker JVM in ``directory``: its server.properties, data/ and kafka.log."""

    def __init__(self, directory, node_id: int, port: int, bootstrap_controllers: str, libs: Path, java: str,
                 *, replication: int):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.node_id, self.port = node_id, port
        self.libs, self.java = libs, java
        self.log_path = self.directory / "kafka.log"
        self.config_path = self.directory / "server.properties"
        self.log4j_path = self.directory / "log4j2.properties"
        self.process: subprocess.Popen | None = None
        props = {
            "process.roles": "broker", "node.id": node_id,
            "listeners": f"PLAINTEXT://127.0.0.1:{port}", "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "inter.broker.listener.name": "PLAINTEXT", "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.quorum.bootstrap.servers": bootstrap_controllers,
            "log.dirs": self.directory / "data", "metadata.log.dir": self.directory / "data",
            "num.network.threads": 1, "num.io.threads": 2, "background.threads": 2,
            "offsets.topic.replication.factor": replication, "offsets.topic.num.partitions": 3,
            "transaction.state.log.replication.factor": replication,
            "transaction.state.log.min.isr": min(replication, 2),
            "share.coordinator.state.topic.replication.factor": replication,
            "share.coordinator.state.topic.min.isr": min(replication, 2), "group.initial.rebalance.delay.ms": 0,
        }
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.log4j_path.write_text(_LOG4J)

    def _java(self, main_class: str, *args: str) -> list[str]:
        return [self.java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                f"-Dlog4j2.configurationFile={self.log4j_path}", "-cp", str(self.libs / "*"), main_class, *args]

    def format(self, cluster_id: str) -> None:
        """Kafka's StorageTool: a broker's data directory for the cluster, with no controllers of its own."""
        result = subprocess.run(self._java(STORAGE_TOOL, "format", "--config", str(self.config_path),
                                           "--cluster-id", cluster_id, "--no-initial-controllers"),
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RuntimeError(f"formatting broker {self.node_id} failed ({result.returncode}):\n"
                               f"{(result.stdout + result.stderr)[-2000:]}")

    def start(self) -> None:
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(self._java(KAFKA_SERVER, str(self.config_path)), stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True, preexec_fn=_killed_with_parent)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "".join(self.log_path.read_text(errors="replace").splitlines(keepends=True)[-lines:])
        except OSError:
            return ""

    def wait_started(self, deadline: float) -> None:
        """Kafka logs 'Kafka Server started' once registered with the controllers and unfenced."""
        while time.monotonic() < deadline:
            if "Kafka Server started" in self.log_path.read_text(errors="replace"):
                return
            if not self.alive():
                raise RuntimeError(f"Kafka broker {self.node_id} exited with {self.process.returncode} before it "
                                   f"started; see {self.log_path}")
            time.sleep(0.3)
        raise RuntimeError(f"Kafka broker {self.node_id} did not start in time; see {self.log_path}")

    def stop(self, timeout_s: float = 30) -> int | None:
        """SIGTERM (a controlled shutdown), then SIGKILL of its process group after ``timeout_s``."""
        if not self.alive():
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        if self.alive():
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=20)


# --- the demonstration ---------------------------------------------------------------------------
TOPIC = "demo-orders"
RECORDS = 10


_received: list[str] = []          # the signals _interrupt was given


def _say(text: str) -> None:
    """A step's heading; a signal whose KeyboardInterrupt Python dropped is raised again here."""
    if _received:
        raise KeyboardInterrupt(_received[0])
    print(f"\n=== {text}", flush=True)


def _interrupt(signum, frame):
    # Raised while Python runs a finalizer (a weakref callback, __del__), the KeyboardInterrupt is
    # printed as "Exception ignored in ..." and dropped; _say raises it again at the next step.
    _received.append(signal.Signals(signum).name)
    raise KeyboardInterrupt(_received[-1])


def _create_topic(bootstrap: str, partitions: int, replication: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kafkawire-main", request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=partitions, replication_factor=replication)],
                            timeout_ms=30000)
    finally:
        admin.close()


def _produce(bootstrap: str) -> list[tuple[int, int, bytes]]:
    """RECORDS records, acks=all with idempotence (the brokers get producer ids from our
    controllers); each acknowledged as (partition, offset, value)."""
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True,
                             retries=10, request_timeout_ms=30000)
    try:
        futures = [(producer.send(TOPIC, key=f"key-{i % 3}".encode(), value=f"order-{i}".encode()), i)
                   for i in range(RECORDS)]
        producer.flush(60)
        return [(f.get(timeout=60).partition, f.get(timeout=60).offset, f"order-{i}".encode()) for f, i in futures]
    finally:
        producer.close(10)


def _consume(bootstrap: str, expected: int, timeout_s: float = 60) -> list[tuple[int, int, bytes]]:
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id="kafkawire-main",
                             auto_offset_reset="earliest", consumer_timeout_ms=1000)
    got: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(got) < expected and time.monotonic() < deadline:
            got += [(m.partition, m.offset, m.value) for m in consumer]
        consumer.commit()
    finally:
        consumer.close()
    return got


def _demonstrate(quorum: LocalQuorum, brokers: list[KafkaBroker]) -> int:
    _say(f"formatting {len(quorum.voter_ids)} kafkawire controllers and {len(brokers)} Kafka brokers "
         f"(cluster id {quorum.cluster_id})")
    quorum.format()
    for broker in brokers:
        broker.format(quorum.cluster_id)
        print(f"broker {broker.node_id}: {broker.config_path} (Kafka's StorageTool, --no-initial-controllers)")
    _say("starting the controllers (kafkawire server-start)")
    began = time.monotonic()
    quorum.start_all()
    view = quorum.wait_for_leader(60)
    print(f"controller {view.leader_id} leads in epoch {view.leader_epoch} ({time.monotonic() - began:.1f} s)")
    _say(f"starting the brokers (kafka.Kafka, process.roles=broker, "
         f"controller.quorum.bootstrap.servers={quorum.bootstrap_servers()})")
    began = time.monotonic()
    for broker in brokers:
        broker.start()
    deadline = time.monotonic() + 120
    for broker in brokers:
        broker.wait_started(deadline)
    bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in brokers)
    print(f"brokers {[b.node_id for b in brokers]} registered and unfenced ({time.monotonic() - began:.1f} s); "
          f"bootstrap servers {bootstrap}")

    replication = min(len(brokers), 3)
    _say(f"creating topic {TOPIC} through the brokers (3 partitions, replication factor {replication})")
    _create_topic(bootstrap, 3, replication)
    _say(f"producing {RECORDS} records with kafka-python (acks=all, idempotent)")
    produced = _produce(bootstrap)
    for partition, offset, value in produced:
        print(f"  {TOPIC}-{partition} offset {offset}: {value.decode()}")
    _say("consuming them from the beginning with kafka-python (group kafkawire-main)")
    consumed = _consume(bootstrap, len(produced))
    print(f"produced {len(produced)}, consumed {len(consumed)}")
    if sorted(consumed) != sorted(produced):
        print(f"kafkawire main: the consumer read {sorted(consumed)}, not what was acknowledged", file=sys.stderr)
        return 1

    _say("stopping the brokers (SIGTERM: controlled shutdown), then the controllers")
    for broker in brokers:
        print(f"broker {broker.node_id} exited with {broker.stop()}")
    quorum.stop_all()
    return 0


def run_with_brokers(base: str, voters: int, count: int, kafka_dist: str | None) -> int:
    """The main job with ``count`` Kafka brokers on ``voters`` kafkawire controllers in ``base``."""
    # first, before anything starts: its producer and consumer are kafka-python's (the extra kafka-brokers)
    require("kafka", "kafka-brokers", "--with-kafka-brokers")
    try:
        java = java_executable()
        libs = find_kafka_libs(kafka_dist)
    except KafkaDistributionMissing as exc:
        print(f"kafkawire main --with-kafka-brokers: {exc}", file=sys.stderr)
        return 1
    quorum = LocalQuorum(os.path.join(base, "controllers"), voters=voters)
    ids = range(voters + 1, voters + count + 1)
    brokers = [KafkaBroker(os.path.join(base, f"broker-{i}"), i, port, quorum.bootstrap_servers(), libs, java,
                           replication=min(count, 3)) for i, port in zip(ids, free_ports(count))]
    # SIGTERM and SIGHUP end the job as Ctrl-C does: every process is stopped on the way out.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    try:
        status = _demonstrate(quorum, brokers)
        if _received:
            raise KeyboardInterrupt(_received[0])
        print(f"done; the data stays in {base}")
        return status
    except KeyboardInterrupt:
        print("\n=== interrupted: stopping the brokers and the controllers", flush=True)
        for broker in brokers:
            broker.stop(10)
        quorum.stop_all()
        return 130
    except (QuorumError, RuntimeError, OSError, subprocess.TimeoutExpired) as exc:   # kafka-python's errors too
        print(f"kafkawire main --with-kafka-brokers: {type(exc).__name__}: {exc}", file=sys.stderr)
        for i in quorum.node_ids:
            print(f"--- controller {i}: {quorum.log_path(i)}\n{quorum.log_tail(i, 10)}", file=sys.stderr)
        for broker in brokers:
            print(f"--- broker {broker.node_id}: {broker.log_path}\n{broker.log_tail(10)}", file=sys.stderr)
        return 1
    finally:
        for broker in brokers:
            broker.kill()
        for i in quorum.node_ids:
            quorum.kill(i)
