"""Fixtures for the tests against real Apache Kafka 4.3.1 (marked ``kafka``).

Every test below tests/interop is marked ``kafka``: ``pytest -m kafka`` runs just these,
``pytest -m "not kafka"`` everything else. The jars come from Maven Central through
``tests.interop.kafka_dist``; without Java or Maven these tests skip, saying why, except under
CI, where that fails the run.
"""
from __future__ import annotations

import os

import pytest

from tests.interop import kafka_dist
from tests.interop.kafka_procs import KafkaNode, run_kafka_tool


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.kafka)


@pytest.fixture(scope="session")
def kafka_libs():
    try:
        libs = kafka_dist.ensure()
    except kafka_dist.KafkaDistUnavailable as exc:
        from tests.conftest import unavailable
        unavailable(f"Apache Kafka {kafka_dist.KAFKA_VERSION} is not available: {exc}")
    # Made by `python -m tests.interop.kafka_dist` (CI's set-up) or here, once: every Kafka JVM
    # after it starts in about half the CPU (kafka_cds.py).
    from tests.interop.kafka_cds import ensure_archive
    ensure_archive()
    return libs


@pytest.fixture(scope="session")
def kafka_written(kafka_libs, tmp_path_factory):
    """The data directory (and the clients' capture) of a Kafka 4.3.1 node after the work of
    tests/interop/kafka_written.py and a clean shutdown: made once, read by several modules."""
    from tests.interop.kafka_written import write_kafka_data
    return write_kafka_data(tmp_path_factory.mktemp("kafka-written"))


@pytest.fixture
def kafka_tool(kafka_libs):
    """kafka_tool(main_class, *args, timeout=..., input=..., check=...) -> CompletedProcess."""
    return run_kafka_tool


@pytest.fixture
def kafka_node_factory(kafka_libs, tmp_path, request):
    """Make KafkaNodes under tmp_path; every one is killed at teardown, and a failed test
    prints the tail of each node's log."""
    nodes: list[KafkaNode] = []

    def make(node_id: int, roles: str = "controller", **kwargs) -> KafkaNode:
        node = KafkaNode(tmp_path / f"kafka-{roles.replace(',', '-')}-{node_id}", node_id, roles, **kwargs)
        nodes.append(node)
        return node

    yield make
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for node in nodes:
        node.kill()
        if failed:
            print(f"\n--- Kafka node {node.node_id} ({node.roles}) log tail: {node.log_path}\n{node.log_tail(60)}")


@pytest.fixture
def kafka_controller(kafka_node_factory):
    """kafka_controller(node_id, cluster_id, *format_args, **kwargs): format with Kafka's
    StorageTool, start, wait until Kafka says it started, return the KafkaNode."""
    def start(node_id: int, cluster_id: str, *format_args: str, **kwargs) -> KafkaNode:
        node = kafka_node_factory(node_id, "controller", **kwargs)
        node.format(cluster_id, *format_args)
        node.start()
        node.wait_ready()
        return node
    return start


@pytest.fixture
def kafka_broker(kafka_node_factory):
    """kafka_broker(node_id, cluster_id, bootstrap_controllers, **kwargs): a broker on a
    controller quorum (ours or Kafka's)."""
    def start(node_id: int, cluster_id: str, bootstrap_controllers: str, **kwargs) -> KafkaNode:
        props = dict(kwargs.pop("properties", {}) or {})
        props.setdefault("controller.quorum.bootstrap.servers", bootstrap_controllers)
        node = kafka_node_factory(node_id, "broker", properties=props, **kwargs)
        node.format(cluster_id, "--no-initial-controllers")
        node.start()
        node.wait_ready()
        return node
    return start


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


@pytest.fixture
def kafka_on_kafkawire(kafka_libs, tmp_path, request):
    """kafka_on_kafkawire(controllers=3, brokers=3, **kwargs) -> a started KafkaOnKafkawire:
    kafkawire controllers with real Kafka brokers on them, every broker registered and unfenced.
    Everything is killed at teardown; a failed test prints every process's log tail."""
    from tests.interop.kafka_on_kafkawire import KafkaOnKafkawire
    clusters = []

    def make(controllers: int = 3, brokers: int = 3, *, start: bool = True, **kwargs) -> KafkaOnKafkawire:
        cluster = KafkaOnKafkawire(tmp_path / f"cluster-{len(clusters) + 1}", controllers, brokers, **kwargs)
        clusters.append(cluster)
        if start:
            cluster.start()
        return cluster

    yield make
    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for cluster in clusters:
        if failed:
            print(f"\n{cluster.log_tails(60)}")
        cluster.stop()
