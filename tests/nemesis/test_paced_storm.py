"""The heartbeat storm of issue 28, small (CI): a three-voter quorum of in-process controller
nodes (static voters, fsync on) on a thread's event loop, 30 fake brokers heartbeating every
500 ms at 3,000 partitions for 3 s while a client creates a topic every 250 ms. Every heartbeat is
answered NONE, the leadership does not move, and every CreateTopics is answered NONE within
CREATE_BOUND_MS. At scale, by hand: `python -m tests.nemesis.paced_storm --partitions 100000`
(real processes; figures in benchmarks/README.md)."""
import asyncio
import io
import os
import threading

from kafkawire.controller.factory import controller_factory
from kafkawire.net.config import parse_server_config
from kafkawire.raft.node.controller_node import ControllerNode
from kafkawire.tools.storage import format_storage
from tests.controller.harness import CLUSTER_ID
from tests.controller.test_node_integration import free_port, wait_for
from tests.nemesis.paced_storm import STORM_PROPERTIES, problems, storm_at_scale

BROKERS, PARTITIONS, STORM_S = 30, 3000, 3


def _configs(tmp_path):
    ports = {i: free_port() for i in (1, 2, 3)}
    voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
    extra = "".join(f"{k}={v}\n" for k, v in STORM_PROPERTIES.items())
    return ports, {i: parse_server_config(f"""
node.id={i}
process.roles=controller
controller.quorum.voters={voters}
listeners=CONTROLLER://127.0.0.1:{port}
controller.listener.names=CONTROLLER
log.dirs={tmp_path}/node-{i}
{extra}""") for i, port in ports.items()}


def test_brokers_heartbeating_every_500_ms_are_all_answered_and_the_leader_stays(tmp_path):
    ports, configs = _configs(tmp_path)
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
        report = asyncio.run(asyncio.wait_for(storm_at_scale(
            ("127.0.0.1", ports[leader]), CLUSTER_ID, os.getpid(), BROKERS, PARTITIONS, STORM_S, idle=False), 60))
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
