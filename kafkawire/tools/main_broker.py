"""`kafkawire main`'s broker step: a one-node combined kafkawire (process.roles=broker,controller,
docs/broker.md) that kafka-python produces to and consumes from, Python only.

1. formats one node with `kafkawire storage format --standalone` and starts it with
   `kafkawire server-start` (its broker listener beside its controller listener), right after
   the main job's quorum, so that it starts while the quorum steps run;
2. kafka-python's idempotent producer (acks=all) produces a few records to a topic the broker
   creates on first use;
3. a kafka-python consumer in a group (the classic protocol) reads them back from the beginning
   and commits its offsets, which the group coordinator keeps in `__consumer_offsets`;
4. a transactional producer commits one transaction and aborts another; a read_committed
   consumer reads the committed records only;
5. lists the partition's directory (Kafka's layout: what `kafkawire dump-log` and Spark read)
   and stops the node (SIGTERM: controlled shutdown).

kafka-python is the `kafka-brokers` extra: without it the step says how to get it and is skipped.
"""
from __future__ import annotations

import os
import socket
import time

TOPIC = "demo-orders"
RECORDS = 5
GROUP = "demo-billing"
TXN_TOPIC = "demo-payments"
WAIT_S = 60
# One node cannot hold Kafka's default 3 replicas of __consumer_offsets and __transaction_state
# (FindCoordinator would answer COORDINATOR_NOT_AVAILABLE for ever), and a demo wants its group at
# once, not after the 3 s initial rebalance delay: the settings Kafka's own one-broker config uses.
SINGLE_NODE_PROPERTIES = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.num.partitions": "1",
    "transaction.state.log.min.isr": "1",
}


def is_listening(port: int) -> bool:
    """Whether 127.0.0.1:``port`` accepts a connection."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _combined_node(base: str):
    """A LocalQuorum of one combined node under ``base``, formatted (not started)."""
    from kafkawire.raft.node.local_quorum import LocalQuorum, free_ports
    broker_port, = free_ports(1)
    quorum = LocalQuorum(base, voters=1, properties={
        "process.roles": "broker,controller",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        **SINGLE_NODE_PROPERTIES,
    })
    quorum.node_properties[1] = {"listeners": f"PLAINTEXT://127.0.0.1:{broker_port},"
                                              f"CONTROLLER://127.0.0.1:{quorum.ports[1]}"}
    quorum.format(mode="standalone")
    return quorum, broker_port


def _poll(consumer, count: int) -> list:
    """Up to ``count`` records from ``consumer``, within WAIT_S."""
    got: list = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < count and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            got += batch
    return got


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


def _transactions(bootstrap: str) -> None:
    """One transaction committed, one aborted; a read_committed consumer reads the first only."""
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


def start_combined_node(base: str):
    """Format and start the node in ``base`` (a new directory), to run while the quorum steps
    run; None when kafka-python is missing (run_broker_step says so)."""
    try:
        import kafka  # noqa: F401
    except ImportError:
        return None
    quorum, broker_port = _combined_node(base)
    quorum.start(1)
    return quorum, broker_port


def run_broker_step(node, say) -> None:
    """The step on the node start_combined_node started (None: skipped); stops it."""
    say("a combined node: broker and controller in one process (process.roles=broker,controller)")
    if node is None:
        print("skipped: it uses kafka-python, which is not installed (pip install 'kafkawire[kafka-brokers]')")
        return
    quorum, broker_port = node
    print(f"$ kafkawire storage format --standalone --config {quorum.config_path(1)}\n"
          f"$ kafkawire server-start {quorum.config_path(1)}    (started with the quorum above)")
    try:
        quorum.wait_until(lambda: quorum._check_alive([1]) or is_listening(broker_port), WAIT_S, "the broker listener")
        bootstrap = f"127.0.0.1:{broker_port}"
        print(f"broker listening on {bootstrap}; kafka-python produces (idempotent, acks=all, {TOPIC} created on "
              f"first use), a consumer in group {GROUP} reads from the beginning and commits, a transactional "
              f"producer commits and aborts")
        from kafka.errors import KafkaError
        try:
            _produce_and_consume(bootstrap)
            _transactions(bootstrap)
        except KafkaError as exc:
            raise RuntimeError(f"kafka-python against the combined node: {exc!r}") from None
        partition = os.path.join(quorum.data_dir(1), f"{TOPIC}-0")
        print(f"{partition}: {' '.join(sorted(os.listdir(partition)))}")
    finally:
        print(f"node stopped with {quorum.stop(1)}")
        quorum.kill(1)
