"""The heartbeat storm of issue 28, small (CI): a three-voter quorum of in-process controller
nodes (static voters, fsync on) on a thread's event loop, 30 fake brokers heartbeating every
500 ms at 3,000 partitions for 3 s while a client creates a topic every 250 ms. Every heartbeat is
answered NONE, the leadership does not move, and every CreateTopics is answered NONE within
CREATE_BOUND_MS; the active controller's own request metrics (scraped from its Prometheus
endpoint around the storm, when prometheus_client is installed) counted every heartbeat the
client had answered. At scale, by hand: `python -m tests.nemesis.paced_storm --partitions 100000`
(real processes; figures in benchmarks/README.md)."""
import asyncio
import importlib.util
import io
import os
import threading

from kafkawire.controller.factory import controller_factory
from kafkawire.net.config import PROMETHEUS_REPORTER, parse_server_config
from kafkawire.raft.node.controller_node import ControllerNode
from kafkawire.tools.storage import format_storage
from tests.controller.harness import CLUSTER_ID
from tests.controller.test_node_integration import free_port, wait_for
from tests.nemesis.paced_storm import STORM_PROPERTIES, problems, storm_at_scale

BROKERS, PARTITIONS, STORM_S = 30, 3000, 3


METRICS = importlib.util.find_spec("prometheus_client") is not None   # the endpoint's extra


def _configs(tmp_path, metrics_ports: dict):
    ports = {i: free_port() for i in (1, 2, 3)}
    voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
    extra = "".join(f"{k}={v}\n" for k, v in STORM_PROPERTIES.items())
    endpoint = {i: f"metric.reporters={PROMETHEUS_REPORTER}\nkafkawire.metrics.prometheus.listener=http://127.0.0.1:{p}\n"
                for i, p in metrics_ports.items()}
    return ports, {i: parse_server_config(f"""
node.id={i}
process.roles=controller
controller.quorum.voters={voters}
listeners=CONTROLLER://127.0.0.1:{port}
controller.listener.names=CONTROLLER
log.dirs={tmp_path}/node-{i}
{extra}{endpoint.get(i, "")}""") for i, port in ports.items()}


def test_brokers_heartbeating_every_500_ms_are_all_answered_and_the_leader_stays(tmp_path):
    metrics_ports = {i: free_port() for i in (1, 2, 3)} if METRICS else {}
    ports, configs = _configs(tmp_path, metrics_ports)
    for config in configs.values():
        format_storage(config, CLUSTER_ID, mode=None, out=io.StringIO())
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def on_nodes(coroutine, timeout=60):
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result(timeout)

    nodes = [ControllerNode(config, state_machine_factory=controller_factory, fsync=True) for config in configs.values()]
    try:
        for node in nodes:
            on_nodes(node.start())

        async def an_active_controller():
            await wait_for(lambda: any(n.state_machine.is_active() for n in nodes), "an active controller", 30)
            return next(i for i, n in zip(ports, nodes) if n.state_machine.is_active())
        leader = on_nodes(an_active_controller())
        metrics_url = f"http://127.0.0.1:{metrics_ports[leader]}" if METRICS else None
        report = asyncio.run(asyncio.wait_for(storm_at_scale(
            ("127.0.0.1", ports[leader]), CLUSTER_ID, os.getpid(), BROKERS, PARTITIONS, STORM_S, idle=False,
            metrics_url=metrics_url), 60))
    finally:
        # Not gracefully: a voter's graceful shutdown waits for the others' EndQuorumEpoch answers.
        async def stop_all():
            await asyncio.gather(*(node.stop(graceful=False) for node in nodes))
        on_nodes(stop_all())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
    print(report.lines())
    assert report.beats.sent >= BROKERS * STORM_S, report.beats      # every broker kept its pace (2 a second)
    assert report.storm_creates_ms, "no CreateTopics was answered under the storm"
    assert problems(report, min_answered=1.0) == []
    if METRICS:
        # the server counts a heartbeat as its answer is written, so before the client reads it
        counted = report.server_side.after["count"] - report.server_side.before["count"]
        received = sum(n for answer, n in report.beats.answers.items() if answer != "no answer")
        assert received <= counted <= report.beats.sent, (counted, report.beats)
        total = report.server_side.after["totaltimems"]
        assert 0 <= total["0.50"] <= total["0.99"] <= total["0.999"], total
