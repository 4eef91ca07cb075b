"""`kafkawire main`'s broker step: a one-node combined kafkawire (process.roles=broker,controller,
docs/broker.md) that kafka-python produces to and consumes from, Python only.

1. formats one node with `kafkawire storage format --standalone` and starts it with
   `kafkawire server-start` (its broker listener beside its controller listener), right after
   the main job's quorum, so that it starts while the quorum steps run;
2. kafka-python produces a few records to a topic the broker creates on first use (acks=1);
3. a kafka-python consumer assigned to the partition by hand (no consumer groups yet) reads
   them back from the beginning;
4. lists the partition's directory (Kafka's layout: what `kafkawire dump-log` and Spark read)
   and stops the node (SIGTERM: controlled shutdown).

kafka-python is the `kafka-brokers` extra: without it the step says how to get it and is skipped.
"""
from __future__ import annotations

import os
import socket
import time

TOPIC = "demo-orders"
RECORDS = 5
WAIT_S = 60


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
    })
    quorum.node_properties[1] = {"listeners": f"PLAINTEXT://127.0.0.1:{broker_port},"
                                              f"CONTROLLER://127.0.0.1:{quorum.ports[1]}"}
    quorum.format(mode="standalone")
    return quorum, broker_port


def _produce_and_consume(bootstrap: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", max_block_ms=WAIT_S * 1000)   # idempotent
    for i in range(RECORDS):
        metadata = producer.send(TOPIC, key=b"order-%d" % i, value=b"%d items" % (i + 1)).get(timeout=WAIT_S)
        print(f"produced order-{i} to {metadata.topic}-{metadata.partition} at offset {metadata.offset}")
    producer.close(timeout=10)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    consumer.assign([TopicPartition(TOPIC, 0)])
    got = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < RECORDS and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            got += batch
    consumer.close()
    for message in got:
        print(f"consumed offset {message.offset}: {message.key.decode()} = {message.value.decode()}")
    if len(got) < RECORDS:
        raise RuntimeError(f"the consumer read {len(got)} of {RECORDS} records within {WAIT_S} s")


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
        print(f"broker listening on {bootstrap}; kafka-python produces (acks=1, {TOPIC} created on first use) "
              f"and a consumer assigned to {TOPIC}-0 reads from the beginning")
        from kafka.errors import KafkaError
        try:
            _produce_and_consume(bootstrap)
        except KafkaError as exc:
            raise RuntimeError(f"kafka-python against the combined node: {exc!r}") from None
        partition = os.path.join(quorum.data_dir(1), f"{TOPIC}-0")
        print(f"{partition}: {' '.join(sorted(os.listdir(partition)))}")
    finally:
        print(f"node stopped with {quorum.stop(1)}")
        quorum.kill(1)
