"""kafkawire.testing, used as a user would: the pytest fixtures of the plugin that installing
kafkawire registers (kafkawire_broker for the session, kafkawire_broker_per_test for one
test) give a combined node that kafka-python produces to and consumes from; the per-test node
is killed by pid at teardown; a node that cannot start is a clear error; and the plugin,
loaded in every pytest run, imports nothing heavy.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from kafkawire.testing import EmbeddedBroker, EmbeddedBrokerError

# What the entry point does for an installed kafkawire; harmless on top of it (same name).
pytest_plugins = ["kafkawire.testing.pytest_plugin"]

kafka = pytest.importorskip("kafka")
REPO = Path(__file__).resolve().parents[2]
WAIT_S = 60


def round_trip(bootstrap: str, topic: str, values: list[bytes]) -> list[tuple[int, bytes]]:
    """Produce ``values`` (acks=1, the topic auto-created) and read them back with a consumer
    assigned to partition 0: (offset, value) in order."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, enable_idempotence=False)
    for value in values:
        producer.send(topic, value, partition=0).get(timeout=30)
    producer.close(timeout=10)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                             group_id=None)
    consumer.assign([TopicPartition(topic, 0)])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < len(values) and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            got += [(m.offset, m.value) for m in batch]
    consumer.close()
    return got


def test_the_session_fixture_is_a_broker_kafka_python_produces_to_and_consumes_from(kafkawire_broker):
    values = [b"first", b"second", b"third"]
    assert round_trip(kafkawire_broker.bootstrap_servers, "fixture-orders", values) == list(enumerate(values))
    segment = os.path.join(kafkawire_broker.log_dir, "fixture-orders-0", "00000000000000000000.log")
    assert os.path.getsize(segment) > 0          # the log directory is the broker's: Spark and dump-log read it


def test_the_session_fixture_serves_a_consumer_group_at_once(kafkawire_broker):
    """The embedded node's defaults let a group form on one node: __consumer_offsets with one
    replica (Kafka's default of 3 could never be met, and FindCoordinator would refuse for ever)
    and no initial rebalance delay; the group's commit is read back by the next member."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    bootstrap = kafkawire_broker.bootstrap_servers
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, enable_idempotence=False)
    for value in (b"a", b"b"):
        producer.send("fixture-group", value, partition=0).get(timeout=30)
    producer.close(timeout=10)
    member = KafkaConsumer(bootstrap_servers=bootstrap, group_id="fixture-members", auto_offset_reset="earliest",
                           enable_auto_commit=False)
    assert member.partitions_for_topic("fixture-group")     # metadata first: see tests/broker/test_consumer_groups.py
    member.subscribe(["fixture-group"])
    got: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < 2 and time.monotonic() < deadline:
        for batch in member.poll(timeout_ms=500).values():
            got += [m.value for m in batch]
    assert got == [b"a", b"b"]
    member.commit()
    member.close()
    reader = KafkaConsumer(bootstrap_servers=bootstrap, group_id="fixture-members", enable_auto_commit=False)
    assert reader.committed(TopicPartition("fixture-group", 0)) == 2
    reader.close()


@pytest.fixture
def node_gone_after_teardown():
    """Requested before kafkawire_broker_per_test, so torn down after it: the node's process
    must be dead by then."""
    seen = {}
    yield seen
    with pytest.raises(ProcessLookupError):
        os.kill(seen["pid"], 0)


def test_the_per_test_fixture_is_a_node_of_its_own_killed_by_pid_at_teardown(
        node_gone_after_teardown, kafkawire_broker_per_test, kafkawire_broker):
    node_gone_after_teardown["pid"] = kafkawire_broker_per_test.pid
    assert kafkawire_broker_per_test.pid != kafkawire_broker.pid
    assert kafkawire_broker_per_test.bootstrap_servers != kafkawire_broker.bootstrap_servers
    assert round_trip(kafkawire_broker_per_test.bootstrap_servers, "fixture-orders", [b"fresh"]) == [(0, b"fresh")]


def test_a_node_that_cannot_start_is_an_error_with_its_log_and_its_directory_is_removed():
    broker = EmbeddedBroker(properties={"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                                        "super.users": "User:admin"}, start_timeout_s=WAIT_S)
    with pytest.raises(EmbeddedBrokerError, match="authorizer.class.name.*is not supported"):
        broker.start()
    assert broker.process.poll() is not None and not os.path.exists(broker.directory)


def test_the_plugin_imports_only_the_standard_library_and_kafkawire_testing():
    """Every pytest run of every user loads it: nothing of the node is imported until a test
    asks for a broker."""
    code = ("import sys; import kafkawire.testing.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m.startswith('kafkawire')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO))).stdout
    assert out.strip() == str(["kafkawire", "kafkawire._lazy", "kafkawire.single_broker", "kafkawire.testing",
                               "kafkawire.testing.pytest_plugin"])


def test_the_pytest11_entry_point_is_named_as_its_module():
    """So that `-p kafkawire.testing.pytest_plugin` or pytest_plugins on top of the installed
    entry point is the same plugin, not a second registration (a pytest error)."""
    with open(REPO / "pyproject.toml", "rb") as f:
        entry_points = tomllib.load(f)["project"]["entry-points"]["pytest11"]
    assert entry_points == {"kafkawire.testing.pytest_plugin": "kafkawire.testing.pytest_plugin"}
