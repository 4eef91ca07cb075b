"""Real Apache Kafka 4.3.1 brokers (process.roles=broker) on a quorum of kafkawire controllers.

    cluster = KafkaOnKafkawire(tmp_path, controllers=3, brokers=3)
    cluster.start()                                  # format both sides, start, wait until unfenced
    cluster.topics("--create", "--topic", "t", "--partitions", "6", "--replication-factor", "3")
    cluster.configs("--alter", "--entity-type", "topics", "--entity-name", "t", "--add-config", "retention.ms=1000")
    cluster.describe_cluster()                       # {broker id: fenced?} from a broker, over DescribeCluster
    cluster.stop()                                   # kill -9 every broker JVM (process group) and controller

The controllers are `kafkawire server-start` processes (LocalQuorum, ids 1..N, formatted with
`kafkawire storage format --initial-controllers`); the brokers are KafkaNode JVMs (ids N+1..N+M,
-Xmx256m, each with its own directory and log file), formatted by Kafka's StorageTool with the
same cluster id and --no-initial-controllers, with controller.quorum.bootstrap.servers naming our
controllers. Every wait is bounded; a failed wait carries the tail of every process's log.
"""
from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError

from .kafka_procs import CONFIGS, REASSIGN, TOPICS, KafkaNode, KafkaProcessError, run_kafka_tool

BROKER_ENDPOINT_TYPE = 1


class ClusterError(RuntimeError):
    pass


class KafkaOnKafkawire:
    def __init__(self, base_dir, controllers: int = 3, brokers: int = 3, *,
                 controller_properties: dict | None = None, broker_properties: dict | None = None,
                 heap: str = "256m"):
        self.base_dir = Path(base_dir)
        self.quorum = LocalQuorum(self.base_dir / "kafkawire", voters=controllers,
                                  properties=dict(controller_properties or {}))
        self.broker_properties = dict(broker_properties or {})
        self.brokers: dict[int, KafkaNode] = {}
        for broker_id in range(controllers + 1, controllers + brokers + 1):
            props = {
                "controller.quorum.bootstrap.servers": self.quorum.bootstrap_servers(),
                # replicated internal topics once there are enough brokers
                "offsets.topic.replication.factor": str(min(brokers, 3)),
                "transaction.state.log.replication.factor": str(min(brokers, 3)),
                "transaction.state.log.min.isr": str(min(brokers, 2)),
                **self.broker_properties,
            }
            self.brokers[broker_id] = KafkaNode(self.base_dir / f"broker-{broker_id}", broker_id, "broker",
                                                properties=props, heap=heap)
        self.timings: dict[str, float] = {}       # what start() measured, in seconds

    # --- addresses -------------------------------------------------------------------------------
    @property
    def cluster_id(self) -> str:
        return self.quorum.cluster_id

    @property
    def controller_ids(self) -> list[int]:
        return list(self.quorum.voter_ids)

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    def bootstrap_servers(self, ids=None) -> str:
        return ",".join(self.brokers[i].broker_address for i in (ids or self.broker_ids))

    def bootstrap_controllers(self) -> str:
        return self.quorum.bootstrap_servers()

    # --- lifecycle -------------------------------------------------------------------------------
    def format(self) -> None:
        self.quorum.format()
        for broker in self.brokers.values():
            broker.format(self.cluster_id, "--no-initial-controllers")

    def start(self, timeout_s: float = 120) -> None:
        """Format, start the controllers, wait for an active one, start the brokers, and wait
        until every broker is registered and unfenced (Kafka logs 'Kafka Server started' only
        after its first unfencing; DescribeCluster then lists it as not fenced)."""
        self.format()
        began = time.monotonic()
        self.quorum.start_all()
        self.wait_for_controller_leader(timeout_s=min(timeout_s, 60))
        self.timings["controller_leader_s"] = time.monotonic() - began
        began = time.monotonic()
        for broker in self.brokers.values():
            broker.start()
        self.wait_for_brokers_ready(timeout_s)
        self.timings["brokers_started_s"] = time.monotonic() - began
        self.wait_for_unfenced(self.broker_ids, timeout_s=max(timeout_s - (time.monotonic() - began), 10))
        self.timings["brokers_unfenced_s"] = time.monotonic() - began

    def wait_for_controller_leader(self, timeout_s: float = 60):
        try:
            return self.quorum.wait_for_leader(timeout_s=timeout_s)
        except QuorumError as exc:
            raise ClusterError(f"{exc}\n{self.log_tails()}") from None

    def wait_for_brokers_ready(self, timeout_s: float = 120, ids=None) -> None:
        deadline = time.monotonic() + timeout_s
        for broker_id in ids or self.broker_ids:
            try:
                self.brokers[broker_id].wait_ready(max(deadline - time.monotonic(), 1))
            except KafkaProcessError as exc:
                raise ClusterError(f"{exc}\n{self.log_tails()}") from None

    def start_broker(self, broker_id: int) -> None:
        self.brokers[broker_id].start()

    def kill_broker(self, broker_id: int) -> None:
        self.brokers[broker_id].kill()

    def stop_broker(self, broker_id: int, timeout_s: float = 30) -> int | None:
        """SIGTERM: Kafka's controlled shutdown."""
        return self.brokers[broker_id].stop(timeout_s)

    def stop(self) -> None:
        """Kill every broker (its process group) and every controller; safe to call twice."""
        for broker in self.brokers.values():
            broker.kill()
        for i in list(self.quorum.processes):
            try:
                self.quorum.kill(i)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # --- asking the cluster ----------------------------------------------------------------------
    def describe_cluster(self, broker_id: int | None = None, timeout_ms: int = 3000) -> dict[int, bool]:
        """{broker id: is_fenced} as a broker sees the cluster (DescribeCluster v2 with fenced
        brokers included). Without ``broker_id``, the first broker that answers."""
        ids = [broker_id] if broker_id is not None else [i for i in self.broker_ids if self.brokers[i].alive()]
        last: Exception | None = None
        for i in ids:
            try:
                return asyncio.run(_describe_cluster(("127.0.0.1", self.brokers[i].broker_port), timeout_ms))
            except (TransportError, OSError, ClusterError) as exc:
                last = exc
        raise ClusterError(f"no broker of {ids} answered DescribeCluster: {last}")

    def wait_for_unfenced(self, ids, timeout_s: float = 60, *, asked=None) -> dict[int, bool]:
        """Until every live broker asked (or ``asked``) lists each of ``ids`` as registered and
        not fenced."""
        ids = sorted(ids)
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            views = []
            try:
                for i in asked or [b for b in self.broker_ids if self.brokers[b].alive()]:
                    views.append(self.describe_cluster(i))
            except ClusterError as exc:
                last = exc
            else:
                if views and all(all(v.get(b) is False for b in ids) for v in views):
                    return views[0]
                last = views
            time.sleep(0.2)
        raise ClusterError(f"brokers {ids} were not all registered and unfenced within {timeout_s} s "
                           f"(last view: {last})\n{self.log_tails()}")

    def wait_until(self, predicate, timeout_s: float, what: str, interval_s: float = 0.2):
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(interval_s)
        raise ClusterError(f"timed out after {timeout_s} s waiting for {what} (last: {last!r})\n{self.log_tails()}")

    # --- Kafka's tools ---------------------------------------------------------------------------
    def tool(self, main_class: str, *args, timeout: float = 120, check: bool = True,
             input: str | None = None) -> subprocess.CompletedProcess:
        """Run a Kafka tool; with ``check`` a failure carries its output and the log tails."""
        try:
            result = run_kafka_tool(main_class, *map(str, args), timeout=timeout, input=input)
        except KafkaProcessError as exc:
            raise ClusterError(f"{exc}\n{self.log_tails()}") from None
        if check and result.returncode != 0:
            raise ClusterError(f"{main_class} {' '.join(map(str, args))} exited {result.returncode}:\n"
                               f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}\n"
                               f"{self.log_tails()}")
        return result

    def topics(self, *args, **kwargs) -> subprocess.CompletedProcess:
        """kafka-topics.sh --bootstrap-server <the brokers> ARGS."""
        return self.tool(TOPICS, "--bootstrap-server", self.bootstrap_servers(), *args, **kwargs)

    def configs(self, *args, **kwargs) -> subprocess.CompletedProcess:
        """kafka-configs.sh --bootstrap-server <the brokers> ARGS."""
        return self.tool(CONFIGS, "--bootstrap-server", self.bootstrap_servers(), *args, **kwargs)

    def reassign(self, *args, **kwargs) -> subprocess.CompletedProcess:
        """kafka-reassign-partitions.sh --bootstrap-server <the brokers> ARGS."""
        return self.tool(REASSIGN, "--bootstrap-server", self.bootstrap_servers(), *args, **kwargs)

    def kafkawire(self, *args, timeout: float = 60) -> subprocess.CompletedProcess:
        """Our own command (e.g. metadata-shell on a controller's metadata directory)."""
        return self.quorum._kafkawire(*map(str, args), timeout=timeout)

    # --- logs ------------------------------------------------------------------------------------
    def log_tails(self, lines: int = 30) -> str:
        out = []
        for i in self.controller_ids:
            out.append(f"--- kafkawire controller {i}: {self.quorum.log_path(i)}\n{self.quorum.log_tail(i, lines)}")
        for i, broker in sorted(self.brokers.items()):
            out.append(f"--- Kafka broker {i}: {broker.log_path}\n{broker.log_tail(lines)}")
        return "\n".join(out)


async def _describe_cluster(address, timeout_ms: int) -> dict[int, bool]:
    async with NetworkClient(client_id="kafka-on-kafkawire", request_timeout_ms=timeout_ms,
                             connect_timeout_ms=timeout_ms) as client:
        response = await client.send(address, DescribeClusterRequest(endpoint_type=BROKER_ENDPOINT_TYPE,
                                                                     include_fenced_brokers=True))
    if response.error_code:
        raise ClusterError(f"DescribeCluster to {address[0]}:{address[1]}: error {response.error_code} "
                           f"{response.error_message}")
    return {b.broker_id: bool(b.is_fenced) for b in response.brokers}
