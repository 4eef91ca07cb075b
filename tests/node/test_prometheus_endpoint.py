"""The Prometheus endpoint's bounds and its setting, without Java and without a quorum:
only ``GET /metrics`` is answered (anything else is 404), a request head larger than
MAX_REQUEST_BYTES is answered 431 and closed, every connection is closed after its one answer,
connections beyond MAX_CONNECTIONS and requests not complete within REQUEST_TIMEOUT_S are
closed unanswered; metric.reporters turns the endpoint
on (off by default) and refuses a reporter kafkawire does not have; without prometheus_client
an enabled endpoint fails with the message naming the extra to install."""
from __future__ import annotations

import asyncio
import math
import sys

import pytest

from kafkawire.net.config import ConfigError, parse_server_config
from kafkawire.raft.node import prometheus
from kafkawire.raft.node.metrics import CounterRate, LatencyWindow
from kafkawire.net import metrics_http
from kafkawire.net.metrics_http import MAX_CONNECTIONS, MAX_REQUEST_BYTES, MetricsEndpoint

BASE = ("process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:9093\n"
        "controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers=127.0.0.1:9093\n")


async def _exchange(port: int, request: bytes) -> bytes:
    """Send ``request`` and read until the server closes the connection (bounded)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()


def _served(*requests: bytes) -> list[bytes]:
    async def run():
        endpoint = MetricsEndpoint("127.0.0.1", 0, lambda: b"up 1\n")
        await endpoint.start()
        try:
            return [await _exchange(endpoint.port, r) for r in requests]
        finally:
            await endpoint.close()
    return asyncio.run(run())


def test_only_get_metrics_is_answered_and_every_connection_closes_after_its_answer():
    ok, query, root, post, head, junk = _served(
        b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /metrics?name[]=up HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n", b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
        b"HEAD /metrics HTTP/1.1\r\n\r\n", b"\x00\x01\x02\r\n\r\n")
    for answer in (ok, query):
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nup 1\n")
        assert b"Connection: close\r\n" in answer and b"text/plain; version=0.0.4" in answer
    for answer in (root, post, head, junk):
        assert answer.startswith(b"HTTP/1.1 404 Not Found\r\n")


def test_a_request_head_beyond_the_bound_is_answered_431_and_closed():
    (answer,) = _served(b"GET /metrics HTTP/1.1\r\nX-Pad: " + b"a" * (MAX_REQUEST_BYTES + 1))
    assert answer.startswith(b"HTTP/1.1 431 ")


def test_a_request_that_never_completes_is_closed_unanswered_after_the_timeout(monkeypatch):
    monkeypatch.setattr(metrics_http, "REQUEST_TIMEOUT_S", 0.2)
    (answer,) = _served(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")     # no blank line: a slow client
    assert answer == b""


def test_connections_beyond_the_bound_are_closed_unanswered():
    async def run():
        endpoint = MetricsEndpoint("127.0.0.1", 0, lambda: b"up 1\n")
        await endpoint.start()
        idle = [await asyncio.open_connection("127.0.0.1", endpoint.port) for _ in range(MAX_CONNECTIONS)]
        try:
            await asyncio.wait_for(_until(lambda: len(endpoint._connections) == MAX_CONNECTIONS), 10)
            return await _exchange(endpoint.port, b"GET /metrics HTTP/1.1\r\n\r\n")
        finally:
            for _, writer in idle:
                writer.close()
            await endpoint.close()
    assert asyncio.run(run()) == b""


async def _until(condition) -> None:
    while not condition():
        await asyncio.sleep(0.01)


def test_a_render_failure_is_a_500_not_a_dead_endpoint():
    def broken() -> bytes:
        raise RuntimeError("boom")

    async def run():
        endpoint = MetricsEndpoint("127.0.0.1", 0, broken)
        await endpoint.start()
        try:
            return await _exchange(endpoint.port, b"GET /metrics HTTP/1.1\r\n\r\n")
        finally:
            await endpoint.close()
    assert asyncio.run(run()).startswith(b"HTTP/1.1 500 ")


def test_the_endpoint_is_off_by_default_and_metric_reporters_turns_it_on():
    assert parse_server_config(BASE).prometheus_listener is None
    assert parse_server_config(BASE).metric_reporters == ("org.apache.kafka.common.metrics.JmxReporter",)
    on = parse_server_config(BASE + "metric.reporters=kafkawire.metrics.PrometheusReporter\n")
    assert on.prometheus_listener == (None, 9404)
    at = parse_server_config(BASE + "metric.reporters=org.apache.kafka.common.metrics.JmxReporter, "
                             "kafkawire.metrics.PrometheusReporter\n"
                             "kafkawire.metrics.prometheus.listener=http://127.0.0.1:9500\n")
    assert at.prometheus_listener == ("127.0.0.1", 9500)


@pytest.mark.parametrize("line, message", [
    ("metric.reporters=io.example.Reporter", "names a class that could not be found: io.example.Reporter"),
    ("kafkawire.metrics.prometheus.listener=127.0.0.1:9404", "is not http://HOST:PORT"),
    ("kafkawire.metrics.prometheus.listener=http://:70000", "outside 0..65535"),
    ("metrics.num.samples=0", "must be at least 1"),
    ("metrics.sample.window.ms=0", "must be at least 1"),
])
def test_a_wrong_metrics_setting_is_refused_naming_the_key(line, message):
    with pytest.raises(ConfigError, match=line.split("=")[0]) as caught:
        parse_server_config(BASE + line + "\n")
    assert message in str(caught.value)


def test_without_prometheus_client_an_enabled_endpoint_fails_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)    # import prometheus_client raises ImportError
    with pytest.raises(prometheus.MetricsUnavailable) as caught:
        prometheus.exposition(lambda: [])
    assert str(caught.value) == ("the metrics endpoint needs prometheus_client: "
                                 "pip install 'kafkawire[metrics]'")


def test_sensors_are_kafka_s_sampled_windows():
    """Avg and Max cover samples x window (NaN with nothing in it, as Kafka's); a rate counts at
    least samples - 1 full windows (Rate.windowSize), so 30 records in the first 10 s of two
    30 s windows is 30 / 40 s."""
    now = [0.0]
    window = LatencyWindow(samples=2, window_ms=30_000, clock=lambda: now[0])
    assert math.isnan(window.avg()) and math.isnan(window.max())
    window.record(10)
    now[0] = 30_000
    window.record(30)
    assert (window.avg(), window.max()) == (20, 30)
    now[0] = 60_001
    assert (window.avg(), window.max()) == (30, 30)          # the first sample left the 60 s span
    rate = CounterRate(samples=2, window_ms=30_000, clock=lambda: now[0])
    rate.observe(100)
    now[0] += 10_000
    assert rate.rate(130) == pytest.approx(30 / 40)
    assert rate.rate(130) == pytest.approx(30 / 40)     # reading it resets nothing (a scrape, the JSON file)


def _node_with_endpoint_at(tmp_path, listener: str):
    """A formatted one-voter node whose configuration turns the endpoint on at ``listener``."""
    from kafkawire.net.config import PROMETHEUS_REPORTER, load_server_config
    from kafkawire.raft.node.controller_node import ControllerNode
    from kafkawire.raft.node.local_quorum import LocalQuorum
    q = LocalQuorum(tmp_path, voters=1, properties={"metric.reporters": PROMETHEUS_REPORTER,
                                                    "kafkawire.metrics.prometheus.listener": listener})
    q.format()
    return ControllerNode(load_server_config(q.config_path(1)), fsync=False)


def _start_error(node) -> str:
    from kafkawire.raft.node.controller_node import NodeStartError

    async def run():
        try:
            await node.start()
        except NodeStartError as exc:
            return str(exc)
        finally:
            await node.stop(graceful=False)
        return "started"
    return asyncio.run(run())


def test_a_node_without_prometheus_client_refuses_to_start_naming_the_extra(tmp_path, monkeypatch):
    node = _node_with_endpoint_at(tmp_path, "http://127.0.0.1:0")
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    assert _start_error(node) == prometheus.MISSING_CLIENT


def test_a_node_whose_metrics_port_is_taken_refuses_to_start_naming_the_setting(tmp_path):
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        node = _node_with_endpoint_at(tmp_path, f"http://127.0.0.1:{port}")
        error = _start_error(node)
    assert error.startswith(f"kafkawire.metrics.prometheus.listener http://127.0.0.1:{port}: cannot bind: ")
