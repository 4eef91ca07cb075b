"""``metric.reporters`` changed through IncrementalAlterConfigs starts and stops the node's
reporters, as Kafka 4.3.1's DynamicMetricsReporters does (kafkawire.tools.metric_reporters): an
in-process combined node started with Kafka's default JmxReporter; PrometheusReporter added
opens the node's Prometheus endpoint on ``kafkawire.metrics.prometheus.listener`` (read at
start), removed closes it; ClientTelemetryExporter added lists GetTelemetrySubscriptions and
PushTelemetry in ApiVersions (and keeps them listed once removed, as Kafka does); a class
kafkawire does not have is refused by the broker with Kafka's message. About 3 s."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kafkawire.net.client import NetworkClient
from kafkawire.net.config import parse_server_config
from kafkawire.protocol.error_codes import Errors

from .test_authorizer_node import free_port, wait_for
from .test_controller_client_ssl_reload import started

REPORTERS = "metric.reporters"
PROMETHEUS, TELEMETRY = "kafkawire.metrics.PrometheusReporter", "kafkawire.metrics.ClientTelemetryExporter"
JMX = "org.apache.kafka.common.metrics.JmxReporter"
TELEMETRY_APIS = {71, 72}


def _config(directory: Path, metrics_port: int, controller_port: int, broker_port: int):
    return parse_server_config(f"""
node.id=1
process.roles=broker,controller
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=CONTROLLER://127.0.0.1:{controller_port},CLIENT://127.0.0.1:{broker_port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=CLIENT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,CLIENT:PLAINTEXT
log.dirs={directory}/data
controller.quorum.election.timeout.ms=200
broker.heartbeat.interval.ms=200
kafkawire.metrics.prometheus.listener=http://127.0.0.1:{metrics_port}
""")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    directory, metrics_port = tmp_path_factory.mktemp("node"), free_port()
    with started(lambda controller, broker: _config(directory, metrics_port, controller, broker)) as combined:
        combined.metrics_port = metrics_port
        yield combined


async def _scrape(port: int) -> bytes | None:
    """GET /metrics, or None when nothing listens on the port."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except ConnectionRefusedError:
        return None
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = await reader.read()         # the endpoint closes every connection after its answer
    writer.close()
    return answer


async def _listed(node) -> set[int]:
    """The API keys the broker listener's ApiVersions lists, on a new connection."""
    async with NetworkClient(request_timeout_ms=15_000) as client:
        return set(await client.connect(("127.0.0.1", node.broker_port)))


def _applied(node, changes: int):
    """Wait until the node has applied ``changes`` reporter sets in all."""
    reload = node.node.metric_reporters_reload
    return wait_for(lambda: reload.changes >= changes, f"{changes} reporter changes applied", 30)


def test_reporters_added_and_removed_dynamically_start_and_stop(node):
    async def scenario():
        seen = {"at start": (await _scrape(node.metrics_port), await _listed(node) & TELEMETRY_APIS)}
        for step, value in (("prometheus", f"{JMX},{PROMETHEUS}"), ("telemetry", f"{PROMETHEUS},{TELEMETRY}"),
                            ("default", None)):                      # None: back to the default, JmxReporter
            assert await node.alter(REPORTERS, value) == [(0, None)]
            await _applied(node, len(seen))
            scraped = await _scrape(node.metrics_port)
            seen[step] = (scraped and scraped[:15], await _listed(node) & TELEMETRY_APIS)
            if step == "prometheus":
                assert b"kafka_server_raftmetrics_current_state" in scraped, scraped[:300]
        return seen, node.broker.telemetry.exporters

    seen, exporters = node.call(scenario())
    assert seen == {"at start": (None, set()), "prometheus": (b"HTTP/1.1 200 OK", set()),
                    "telemetry": (b"HTTP/1.1 200 OK", TELEMETRY_APIS),
                    "default": (None, TELEMETRY_APIS)}                  # as Kafka: still listed
    assert exporters == []


def test_a_reporter_class_kafkawire_does_not_have_is_refused_with_kafkas_message(node):
    assert node.call(node.alter(REPORTERS, "io.example.Reporter")) == [(
        Errors.INVALID_REQUEST, "Invalid value org.apache.kafka.common.config.ConfigException: Validation of dynamic "
        "config update of Set(metric.reporters) failed with class class kafka.server.DynamicMetricsReporters for "
        "configuration Invalid dynamic configuration")]


def test_a_list_naming_a_class_kafkawire_lacks_is_logged_and_the_running_reporters_stay(caplog):
    """A value no broker checked (one a controller took, or the cluster default's): nothing of it
    is applied, as a DynamicBrokerConfig whose validation of the reconfigurable fails; a later
    valid value is. In process, on a stand-in node (a controller-only one: no broker)."""
    from types import SimpleNamespace

    from kafkawire.tools.metric_reporters import MetricReportersReload
    calls = []

    async def opened():
        calls.append("open")

    node = SimpleNamespace(config=SimpleNamespace(properties=(), node_id=1, metric_reporters=(JMX,)),
                           open_metrics_endpoint=opened)

    def image(value):
        return SimpleNamespace(configs={(4, "1"): {REPORTERS: value}})    # a new map: a record arrived

    async def scenario():
        reload = MetricReportersReload(node, None)
        reload.on_metadata(image(f"{PROMETHEUS},io.example.Reporter"))
        reload.on_metadata(image(f" {PROMETHEUS} , {JMX}"))
        await reload.close()
        return reload.running
    assert asyncio.run(scenario()) == {PROMETHEUS, JMX} and calls == ["open"]
    assert "no class io.example.Reporter in kafkawire" in caplog.text
