"""`kafkawire main`'s broker step: a one-node combined kafkawire (process.roles=broker,controller,
docs/broker.md), or with `--brokers 3` three of them, that kafka-python produces to and consumes
from, Python only.

1. formats one node with `kafkawire storage format --standalone` (three: `--initial-controllers`,
   a three-voter quorum whose voters are each also a broker) and starts it with
   `kafkawire server-start` (its broker listener beside its controller listener), right after
   the main job's quorum, so that it starts while the quorum steps run;
2. kafka-python's idempotent producer (acks=all) produces a few records to a topic the broker
   creates on first use (three nodes: that kafka-python's admin client creates with replication
   factor 3 once the three brokers are registered);
3. a kafka-python consumer in a group (the classic protocol) reads them back from the beginning
   and commits its offsets, which the group coordinator keeps in `__consumer_offsets`;
4. a transactional producer commits one transaction and aborts another; a read_committed
   consumer reads the committed records only;
5. lists the partition's directory (Kafka's layout: what `kafkawire dump-log` and Spark read)
   and stops the node (SIGTERM: controlled shutdown);
6. reads the transactions' topic from the log directory (the partition leader's) as Spark does,
   read_committed, and checks it holds what the read_committed consumer read (main_read.py).

kafka-python is the `kafka-brokers` extra: without it the step says how to get it and is skipped.
"""
from __future__ import annotations

import os
import socket
import time

from kafkawire.single_broker import SINGLE_BROKER_PROPERTIES

TOPIC = "demo-orders"
RECORDS = 5
GROUP = "demo-billing"
TXN_TOPIC = "demo-payments"
WAIT_S = 60
# Three nodes keep Kafka's 3 replicas of the internal topics; one partition each (not 50) and no
# initial rebalance delay keep the demonstration quick.
THREE_NODE_PROPERTIES = {
    "inter.broker.listener.name": "PLAINTEXT",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "min.insync.replicas": "2",
}


def is_listening(port: int) -> bool:
    """Whether 127.0.0.1:``port`` accepts a connection."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class BrokerNodes:
    """The step's combined nodes: a LocalQuorum whose voters are also brokers, and each node's
    broker port."""

    def __init__(self, quorum, broker_ports: dict[int, int]):
        self.quorum = quorum
        self.broker_ports = broker_ports

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.broker_ports.values())

    def stop(self) -> None:
        self.quorum.stop_all()       # SIGTERM to all at once: a lone last voter has no quorum to leave
        for i in self.quorum.node_ids:
            print(f"node {i} stopped with {self.quorum.processes[i].returncode}")

    def kill(self) -> None:
        self.quorum.kill_all()


def _combined_nodes(base: str, count: int) -> BrokerNodes:
    """``count`` (1 or 3) combined nodes under ``base``, formatted (not started)."""
    from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
    quorum = LocalQuorum(base, voters=count, properties={
        "process.roles": "broker,controller",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        **(SINGLE_BROKER_PROPERTIES if count == 1 else THREE_NODE_PROPERTIES),
    })
    broker_ports = dict(zip(quorum.node_ids, free_ports(count)))
    for i in quorum.node_ids:
        quorum.node_properties[i] = {"listeners": f"PLAINTEXT://127.0.0.1:{broker_ports[i]},"
                                                  f"CONTROLLER://127.0.0.1:{quorum.ports[i]}"}
    quorum.format(mode="standalone" if count == 1 else "initial-controllers")
    return BrokerNodes(quorum, broker_ports)


def _poll(consumer, count: int) -> list:
    """Up to ``count`` records from ``consumer``, within WAIT_S."""
    got: list = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < count and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            got += batch
    return got


def _replicated_topics(nodes: BrokerNodes) -> None:
    """Three nodes: wait for the three brokers, then create both topics with replication factor 3."""
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=nodes.bootstrap)
    try:
        nodes.quorum.wait_until(lambda: len(admin.describe_cluster()["brokers"]) == len(nodes.broker_ports),
                                WAIT_S, "every broker to register", interval_s=0.5, watch=nodes.quorum.node_ids)
        admin.create_topics([NewTopic(topic, 1, len(nodes.broker_ports)) for topic in (TOPIC, TXN_TOPIC)])
        for topic in _describe(admin, (TOPIC, TXN_TOPIC)):
            part = topic["partitions"][0]
            print(f"created {topic['name']}: 1 partition, replicas {sorted(part['replica_nodes'])}, "
                  f"leader {part['leader_id']}, in sync {sorted(part['isr_nodes'])}")
    finally:
        admin.close()


def _describe(admin, topics) -> list:
    """describe_topics once every partition has a leader and a full ISR (within WAIT_S)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        described = admin.describe_topics(list(topics))
        parts = [p for t in described for p in t["partitions"]]
        if parts and all(p["leader_id"] >= 0 and len(p["isr_nodes"]) == len(p["replica_nodes"]) for p in parts) \
                or time.monotonic() > deadline:
            return described
        time.sleep(0.2)


def _txn_leader(nodes: BrokerNodes) -> int:
    """The node leading TXN_TOPIC-0: its directory holds every record and marker."""
    if len(nodes.broker_ports) == 1:
        return nodes.quorum.node_ids[0]
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=nodes.bootstrap)
    try:
        return admin.describe_topics([TXN_TOPIC])[0]["partitions"][0]["leader_id"]
    finally:
        admin.close()


def _produce_and_consume(bootstrap: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", max_block_ms=WAIT_S * 1000)   # idempotent
    for i in range(RECORDS):
        metadata = producer.send(TOPIC, key=b"order-%d" % i, value=b"%d items" % (i + 1)).get(timeout=WAIT_S)
        print(f"produced order-{i} to {metadata.topic}-{metadata.partition} at offset {metadata.offset}")
    producer.close(timeout=10)
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    got = _poll(consumer, RECORDS)
    consumer.commit()
    consumer.close()
    for message in got:
        print(f"consumed offset {message.offset}: {message.key.decode()} = {message.value.decode()}")
    if len(got) < RECORDS:
        raise RuntimeError(f"the consumer read {len(got)} of {RECORDS} records within {WAIT_S} s")
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    print(f"group {GROUP} committed offset {reader.committed(TopicPartition(TOPIC, 0))} of {TOPIC}-0")
    reader.close()


def _transactions(bootstrap: str) -> list[bytes]:
    """One transaction committed, one aborted; a read_committed consumer reads the first only
    (the values it read)."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="demo-payer", max_block_ms=WAIT_S * 1000)
    producer.init_transactions()
    for outcome, values in (("committed", [b"paid-1", b"paid-2"]), ("aborted", [b"cancelled-3"])):
        producer.begin_transaction()
        for value in values:
            producer.send(TXN_TOPIC, value, partition=0)
        producer.flush(WAIT_S)
        if outcome == "committed":
            producer.commit_transaction()
        else:
            producer.abort_transaction()
        print(f"transaction {outcome}: {b', '.join(values).decode()}")
    producer.close(timeout=10)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", isolation_level="read_committed")
    consumer.assign([TopicPartition(TXN_TOPIC, 0)])
    got = _poll(consumer, 2)
    consumer.close()
    print(f"read_committed consumer read: {', '.join(m.value.decode() for m in got)}")
    if [m.value for m in got] != [b"paid-1", b"paid-2"]:
        raise RuntimeError(f"read_committed read {[m.value for m in got]}, not the committed transaction's records")
    return [m.value for m in got]


def start_combined_nodes(base: str, count: int = 1) -> BrokerNodes | None:
    """Format and start ``count`` (1 or 3) nodes in ``base`` (a new directory), to run while the
    quorum steps run; None when kafka-python is missing (run_broker_step says so)."""
    try:
        import kafka  # noqa: F401
    except ImportError:
        return None
    nodes = _combined_nodes(base, count)
    nodes.quorum.start_all()
    return nodes


def run_broker_step(nodes: BrokerNodes | None, say, spark) -> None:
    """The step on the nodes start_combined_nodes started (None: skipped); stops them, then reads
    what they wrote (main_read.py; ``spark``: its SparkStart)."""
    count = 1 if nodes is None else len(nodes.broker_ports)
    say("a combined node: broker and controller in one process (process.roles=broker,controller)" if count == 1 else
        f"{count} combined nodes: a {count}-voter quorum whose voters are also brokers (process.roles=broker,controller)")
    if nodes is None:
        print("skipped: it uses kafka-python, which is not installed (pip install 'kafkawire[kafka-brokers]')")
        return
    quorum = nodes.quorum
    how = "--standalone" if count == 1 else "--initial-controllers ..."
    for i in quorum.node_ids:
        print(f"$ kafkawire storage format {how} --config {quorum.config_path(i)}\n"
              f"$ kafkawire server-start {quorum.config_path(i)}    (started with the quorum above)")
    try:
        quorum.wait_until(lambda: all(is_listening(p) for p in nodes.broker_ports.values()), WAIT_S,
                          "the broker listeners", watch=quorum.node_ids)
        created = f"{TOPIC} created on first use" if count == 1 else f"topics of replication factor {count}"
        print(f"brokers listening on {nodes.bootstrap}; kafka-python produces (idempotent, acks=all, {created}), "
              f"a consumer in group {GROUP} reads from the beginning and commits, a transactional producer "
              f"commits and aborts")
        from kafka.errors import KafkaError
        try:
            if count > 1:
                _replicated_topics(nodes)
            _produce_and_consume(nodes.bootstrap)
            consumed = _transactions(nodes.bootstrap)
            leader = _txn_leader(nodes)
        except KafkaError as exc:
            raise RuntimeError(f"kafka-python against the combined nodes: {exc!r}") from None
        partition = os.path.join(quorum.data_dir(leader), f"{TXN_TOPIC}-0")
        print(f"{partition}: {' '.join(sorted(os.listdir(partition)))}")
    finally:
        nodes.stop()
        nodes.kill()
    from kafkawire.tools.main_read import run_read_step
    run_read_step(quorum.data_dir(leader), TXN_TOPIC, consumed, say, spark)
