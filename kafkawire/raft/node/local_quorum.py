"""A quorum of `kafkawire server-start` processes on 127.0.0.1, for the main job, the tests
and the benchmark: format, start, stop, kill -9, and ask who leads.

    quorum = LocalQuorum(base_dir, voters=3)
    quorum.format()                       # kafkawire storage format --initial-controllers ...
    quorum.start_all()
    leader = quorum.wait_for_leader(timeout_s=20)
    quorum.kill(leader)                   # SIGKILL
    quorum.stop_all()                     # SIGTERM, then SIGKILL after a grace period

Each node gets a directory ``node-N`` (its metadata.log.dir and log.dirs), a
``controller-N.properties`` and a log file ``node-N.log``. Ports are picked free at
construction. Every wait is bounded; a node that dies early has its log tail in the error.
"""
from __future__ import annotations

import asyncio
import ctypes
from contextlib import contextmanager
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

from kafkawire.messages.describe_quorum_request import DescribeQuorumRequest, PartitionData, TopicData
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.storage.state_files import random_uuid, uuid_to_kafka

METADATA_TOPIC = "__cluster_metadata"


class QuorumError(RuntimeError):
    pass


def _terminate_with_parent() -> None:
    """In the child before exec: SIGTERM it when the process that started it dies, so that no
    node outlives a killed parent (Linux's PR_SET_PDEATHSIG; elsewhere nothing is done)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)       # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports on 127.0.0.1 that no bind to port 0, in this process or any other,
    hands out for about a minute, while a server that binds with SO_REUSEADDR (kafkawire's
    listeners, asyncio's, the JVM's) can still take them.

    Why: a port merely probed free and closed is free for everyone again, so two pytest processes
    side by side, or one test asking twice before its first nodes bind, got the same port and a
    node failed with "address already in use". Each port is therefore left in TCP TIME_WAIT: the
    probe listens, connects to itself, and the accepted side closes first, which leaves a
    TIME_WAIT connection on the port. Linux's bind(0) skips ports with a TIME_WAIT connection on
    them (for 60 s), connect()'s choice of a local port skips ports someone bound, and
    SO_REUSEADDR lets the node bind over TIME_WAIT. Nothing is kept open and nothing to clean up,
    unlike lock files or held sockets."""
    return [_reserved_port() for _ in range(n)]


def _reserved_port() -> int:
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            accepted, _ = listener.accept()
            accepted.close()            # first: the TIME_WAIT is on this side, the port's
            client.recv(1)              # the FIN arrived: the close above was the active one
    return port


@dataclass
class QuorumView:
    """What DescribeQuorum (v2) says, from one node."""
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list      # ReplicaState structs
    observers: list
    nodes: list


async def describe_quorum(address: tuple[str, int], timeout_ms: int = 2000, **client_options) -> QuorumView:
    """``client_options``: NetworkClient's ssl_context and sasl, for a secured listener."""
    async with NetworkClient(client_id="kafkawire-local-quorum", request_timeout_ms=timeout_ms,
                             connect_timeout_ms=timeout_ms, **client_options) as client:
        request = DescribeQuorumRequest(topics=[TopicData(topic_name=METADATA_TOPIC,
                                                          partitions=[PartitionData(partition_index=0)])])
        response = await client.send(address, request)
    if response.error_code:
        raise QuorumError(f"DescribeQuorum to {address[0]}:{address[1]} failed with error {response.error_code} "
                          f"{getattr(response, 'error_message', '')}")
    partition = response.topics[0].partitions[0]
    if partition.error_code:
        raise QuorumError(f"DescribeQuorum to {address[0]}:{address[1]}: partition error {partition.error_code} "
                          f"{getattr(partition, 'error_message', '') or ''}")
    return QuorumView(partition.leader_id, partition.leader_epoch, partition.high_watermark,
                      list(partition.current_voters), list(partition.observers), list(getattr(response, "nodes", [])))


class LocalQuorum:
    """A quorum of ``kafkawire server-start`` processes on 127.0.0.1 under ``base_dir`` (see the
    module docstring): format, start, stop, kill and wait for a leader, every wait bounded.
    """
    def __init__(self, base_dir, voters: int = 3, *, extra_nodes: int = 0, python: str | None = None,
                 properties: dict | None = None, cluster_id: str | None = None, server_args=None,
                 client_options: dict | None = None, node_properties: dict[int, dict] | None = None):
        self.base_dir = os.fspath(base_dir)
        self.voter_ids = list(range(1, voters + 1))
        self.node_ids = list(range(1, voters + extra_nodes + 1))
        self.python = python or sys.executable
        self.ports = dict(zip(self.node_ids, free_ports(len(self.node_ids))))
        self.directory_ids = {i: random_uuid() for i in self.node_ids}
        self.cluster_id = cluster_id or uuid_to_kafka(random_uuid())
        self.properties = dict(properties or {})
        self.node_properties = dict(node_properties or {})     # node id -> keys for that node's file only
        # NetworkClient options (ssl_context, sasl) for asking a quorum with secured listeners.
        self.client_options = dict(client_options or {})
        self.processes: dict[int, subprocess.Popen] = {}
        # The kafkawire arguments that run one node from its config file.
        self.server_args = server_args or (lambda config: ["server-start", config])
        os.makedirs(self.base_dir, exist_ok=True)

    # --- files -------------------------------------------------------------------------------------
    def data_dir(self, node_id: int) -> str:
        return os.path.join(self.base_dir, f"node-{node_id}")

    def config_path(self, node_id: int) -> str:
        return os.path.join(self.base_dir, f"controller-{node_id}.properties")

    def log_path(self, node_id: int) -> str:
        return os.path.join(self.base_dir, f"node-{node_id}.log")

    def metadata_partition_dir(self, node_id: int) -> str:
        return os.path.join(self.data_dir(node_id), "__cluster_metadata-0")

    def address(self, node_id: int) -> tuple[str, int]:
        return ("127.0.0.1", self.ports[node_id])

    def bootstrap_servers(self, ids=None) -> str:
        return ",".join(f"127.0.0.1:{self.ports[i]}" for i in (ids or self.voter_ids))

    def write_config(self, node_id: int, **overrides) -> str:
        props = {
            "process.roles": "controller",
            "node.id": str(node_id),
            "listeners": f"CONTROLLER://127.0.0.1:{self.ports[node_id]}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            "controller.quorum.bootstrap.servers": self.bootstrap_servers(),
            "metadata.log.dir": self.data_dir(node_id),
            "log.dirs": self.data_dir(node_id),
        }
        props.update(self.properties)
        props.update(self.node_properties.get(node_id, {}))
        props.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
        with open(self.config_path(node_id), "w") as f:
            f.write("".join(f"{k}={v}\n" for k, v in props.items()))
        return self.config_path(node_id)

    def _kafkawire(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        result = subprocess.run([self.python, "-m", "kafkawire.tools.cli", *args], capture_output=True, text=True,
                                timeout=timeout)
        if check and result.returncode != 0:
            raise QuorumError(f"kafkawire {' '.join(args)} failed ({result.returncode}): "
                              f"{result.stderr.strip() or result.stdout.strip()}")
        return result

    def format(self, *, mode: str = "initial-controllers", extra_args=()) -> None:
        """Format every node: the voters with --initial-controllers (or the first with
        --standalone), the others as observers (--no-initial-controllers); or, with mode
        "static", every node for controller.quorum.voters (kraft.version 0). ``extra_args`` go to
        every format command (``--add-scram ...``)."""
        initial = ",".join(f"{i}@127.0.0.1:{self.ports[i]}:{uuid_to_kafka(self.directory_ids[i])}"
                           for i in self.voter_ids)
        for i in self.node_ids:
            if mode == "static":
                # kraft.version 0: the voters are configured (controller.quorum.voters), not formatted.
                self.properties["controller.quorum.voters"] = ",".join(f"{v}@127.0.0.1:{self.ports[v]}"
                                                                       for v in self.voter_ids)
                self.properties["controller.quorum.bootstrap.servers"] = ""
            config = self.write_config(i)
            args = ["storage", "format", f"--cluster-id={self.cluster_id}", "--config", config, *extra_args]
            if mode == "static":
                pass
            elif mode == "standalone" and i == self.voter_ids[0]:
                args.append("--standalone")
            elif mode == "initial-controllers" and i in self.voter_ids:
                args += ["--initial-controllers", initial]
            else:
                args.append("--no-initial-controllers")
            self._kafkawire(*args)

    # --- processes -----------------------------------------------------------------------------------
    def start(self, node_id: int, *extra_args: str) -> subprocess.Popen:
        if node_id in self.processes and self.processes[node_id].poll() is None:
            raise QuorumError(f"node {node_id} is already running")
        log = open(self.log_path(node_id), "a")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen([self.python, "-m", "kafkawire.tools.cli", *self.server_args(self.config_path(node_id)),
                                 *extra_args], stdout=log, stderr=subprocess.STDOUT, env=env,
                                preexec_fn=_terminate_with_parent,
                                cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
        log.close()
        self.processes[node_id] = proc
        return proc

    def start_all(self) -> None:
        for i in self.node_ids:
            self.start(i)

    def kill(self, node_id: int) -> None:
        proc = self.processes.get(node_id)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)

    def stop(self, node_id: int, timeout_s: float = 15) -> int | None:
        """SIGTERM (graceful), then SIGKILL if it has not exited within ``timeout_s``."""
        proc = self.processes.get(node_id)
        if proc is None or proc.poll() is not None:
            return None if proc is None else proc.returncode
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            return None

    def stop_all(self) -> None:
        for i in list(self.processes):
            proc = self.processes[i]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in self.processes.values():
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def running(self) -> list[int]:
        return [i for i, p in self.processes.items() if p.poll() is None]

    def log_tail(self, node_id: int, lines: int = 30) -> str:
        try:
            with open(self.log_path(node_id)) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def _check_alive(self, ids) -> None:
        for i in ids:
            proc = self.processes.get(i)
            if proc is not None and proc.poll() is not None:
                raise QuorumError(f"node {i} exited with {proc.returncode}:\n{self.log_tail(i)}")

    # --- asking the quorum -----------------------------------------------------------------------------
    def describe(self, node_id: int, timeout_ms: int = 2000) -> QuorumView:
        return asyncio.run(describe_quorum(self.address(node_id), timeout_ms, **self.client_options))

    def wait_for_leader(self, timeout_s: float = 30, *, among=None, exclude=(), min_epoch: int = 0) -> QuorumView:
        """Poll DescribeQuorum on the running nodes until one answers as the leader."""
        deadline = time.monotonic() + timeout_s
        last_error = None
        while time.monotonic() < deadline:
            ids = [i for i in (among or self.running()) if i not in exclude]
            self._check_alive(ids)
            if not ids and not among:       # every node it could ask has exited: say how, at once
                self._check_alive([i for i in self.processes if i not in exclude])
            for i in ids:
                try:
                    view = self.describe(i, timeout_ms=1000)
                except (TransportError, QuorumError, OSError) as exc:
                    last_error = exc
                    continue
                if view.leader_id == i and view.leader_epoch >= min_epoch and view.high_watermark >= 0:
                    return view
            time.sleep(0.1)
        raise QuorumError(f"no leader among {list(among or self.running())} within {timeout_s} s "
                          f"(last error: {last_error})")

    def wait_until(self, predicate, timeout_s: float, what: str, interval_s: float = 0.1, *, watch=()):
        """``predicate()``'s first true value within ``timeout_s``. ``watch``: ids of nodes that
        must stay up meanwhile; one whose process exits fails the wait at once, with its exit
        code and log tail, instead of after ``timeout_s`` of asking a node that is gone."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            self._check_alive(watch)
            time.sleep(interval_s)
        raise QuorumError(f"timed out after {timeout_s} s waiting for {what}")

    @contextmanager
    def started(self, mode: str = "initial-controllers", *, graceful: bool = True):
        """Format, start every node, and on the way out stop them (SIGTERM, then SIGKILL).
        ``graceful=False``: SIGKILL at once, for a test's teardown that reads nothing the nodes
        leave behind. A quorum of several voters stopped whole takes 5 s: its leader resigns and
        waits for a successor, which none of the other stopping voters becomes, until its
        shutdown timeout (as a Kafka leader does)."""
        self.format(mode=mode)
        self.start_all()
        try:
            yield self
        finally:
            if graceful:
                self.stop_all()
            self.kill_all()

    def kill_all(self) -> None:
        """SIGKILL every node still running."""
        for i in list(self.processes):
            self.kill(i)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill_all()
