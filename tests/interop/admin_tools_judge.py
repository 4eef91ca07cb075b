"""Kafka 4.3.1's own admin tools run against a kafkawire broker, by hand (issue 29, "Judges"):
a combined node (kafkawire.testing.EmbeddedBroker) gets a classic consumer group with committed
offsets, a live KIP-848 member, a committed transaction and one left open, then each tool's
output is printed for a reader to compare with what a Kafka broker would print.

    PYTHONPATH=$PWD .venv/bin/python -m tests.interop.admin_tools_judge

Not a test (no assertions, ~1-2 minutes, one Kafka JVM at a time with -Xmx256m): the outputs it
printed on 2026-11-29 matched Kafka's, see the issue 29 report.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from kafkawire.testing import EmbeddedBroker
from tests.interop.kafka_procs import run_kafka_tool

GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
PROPERTIES = {"offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
              "transaction.state.log.min.isr": "1", "group.initial.rebalance.delay.ms": "0"}


def make_traffic(bootstrap: str):
    """The state the tools describe; returns the clients that must stay alive meanwhile."""
    import confluent_kafka
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka.admin import NewTopic
    KafkaAdminClient(bootstrap_servers=bootstrap).create_topics([NewTopic("orders", 3, 1), NewTopic("tx", 1, 1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for i in range(30):
        producer.send("orders", key=b"%d" % i, value=b"v%d" % i)
    producer.flush()
    classic = KafkaConsumer("orders", bootstrap_servers=bootstrap, group_id="billing", consumer_timeout_ms=4000,
                            auto_offset_reset="earliest", enable_auto_commit=False)
    sum(1 for _ in classic)
    classic.commit()
    classic.close()
    committed = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": "tid-1"})
    committed.init_transactions(30)
    committed.begin_transaction()
    for i in range(5):
        committed.produce("tx", b"t%d" % i)
    committed.commit_transaction(30)
    left_open = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": "tid-open",
                                          "transaction.timeout.ms": 900000})
    left_open.init_transactions(30)
    left_open.begin_transaction()
    left_open.produce("tx", b"open")
    left_open.flush(30)
    member = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "g848",
                                       "group.protocol": "consumer", "client.id": "c848"})
    member.subscribe(["orders"])
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.5)
    return left_open, member


def invocations(bootstrap: str, directory: Path) -> list[tuple[str, list[str]]]:
    delete = directory / "delete-records.json"
    delete.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 1, "offset": 4}, {"topic": "orders", "partition": 0, "offset": 99},
        {"topic": "__consumer_offsets", "partition": 0, "offset": -1}]}))
    server = ["--bootstrap-server", bootstrap]
    runs = [(GROUPS, ["--list", "--state"]), (GROUPS, ["--describe", "--all-groups", "--offsets", "--verbose"]),
            (GROUPS, ["--describe", "--all-groups", "--members", "--verbose"]),
            (GROUPS, ["--describe", "--all-groups", "--state", "--verbose"]),
            (GROUPS, ["--group", "billing", "--reset-offsets", "--to-earliest", "--topic", "orders", "--dry-run"]),
            (GROUPS, ["--group", "billing", "--reset-offsets", "--to-offset", "2", "--topic", "orders:1",
                      "--execute"]),
            (GROUPS, ["--group", "g848", "--reset-offsets", "--to-earliest", "--all-topics", "--execute"]),
            (GROUPS, ["--group", "billing", "--delete-offsets", "--topic", "orders:0"]),
            (GROUPS, ["--group", "g848", "--delete-offsets", "--topic", "orders"]),
            (GROUPS, ["--delete", "--group", "g848", "--group", "billing", "--group", "nosuch"]),
            (TRANSACTIONS, ["list"]), (TRANSACTIONS, ["describe", "--transactional-id", "tid-open"]),
            (TRANSACTIONS, ["describe-producers", "--topic", "tx", "--partition", "0"]),
            (TRANSACTIONS, ["find-hanging", "--broker-id", "1"]),
            (TRANSACTIONS, ["abort", "--topic", "tx", "--partition", "0", "--start-offset", "6"]),
            (TRANSACTIONS, ["describe-producers", "--topic", "tx", "--partition", "0"]),
            ("org.apache.kafka.tools.TopicCommand", ["--describe", "--topic", "orders"]),
            ("kafka.admin.ConfigCommand", ["--describe", "--entity-type", "topics", "--entity-name", "tx", "--all"]),
            ("kafka.admin.ConfigCommand", ["--describe", "--entity-type", "brokers", "--entity-default"]),
            ("org.apache.kafka.tools.LogDirsCommand", ["--describe", "--topic-list", "orders,tx"]),
            ("org.apache.kafka.tools.DeleteRecordsCommand", ["--offset-json-file", str(delete)])]
    runs += [("org.apache.kafka.tools.GetOffsetShell", ["--topic-partitions", "tx:0,orders:0,orders:1", "--time", t])
             for t in ("-1", "-2", "-3", "-4", "-5", "-6")]
    return [(main_class, server + args) for main_class, args in runs]


def main() -> None:
    with tempfile.TemporaryDirectory() as directory, EmbeddedBroker(Path(directory) / "node",
                                                                    properties=PROPERTIES) as broker:
        clients = make_traffic(broker.bootstrap_servers)
        for main_class, args in invocations(broker.bootstrap_servers, Path(directory)):
            result = run_kafka_tool(main_class, *args, timeout=120)
            errors = [line for line in result.stderr.splitlines() if "WARN" not in line]
            print(f"$ {main_class.rsplit('.', 1)[-1]} {' '.join(args[2:])}  (exit {result.returncode})")
            print(result.stdout.rstrip() + ("\n" + "\n".join(errors[:5]) if errors else "") + "\n", flush=True)
        del clients


if __name__ == "__main__":
    main()
