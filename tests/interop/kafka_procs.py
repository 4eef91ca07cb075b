"""Real Apache Kafka processes and tools for the tests: a controller or broker per properties
file, each with its own directory, log file and ports; readiness waits bounded in time; killed
by pid. No Kafka code is here: only command lines for Kafka's own main classes.

    node = KafkaNode(tmp_path / "k1", node_id=1, roles="controller")
    node.format(cluster_id, "--standalone")            # kafka.tools.StorageTool format
    node.start(); node.wait_ready()
    run_kafka_tool("org.apache.kafka.tools.MetadataQuorumCommand",
                   "--bootstrap-controller", node.bootstrap, "describe", "--status")
    node.kill()
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from tests.interop import kafka_dist, tool_runs
from kafkawire.raft.node.local_quorum import free_ports

STORAGE_TOOL = "kafka.tools.StorageTool"
KAFKA_SERVER = "kafka.Kafka"
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"
METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"
METADATA_SHELL = "org.apache.kafka.shell.MetadataShell"
CONFIGS = "kafka.admin.ConfigCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
# Tools the tests run many times that read nothing but their arguments and leave no state in the
# JVM between runs: one JVM for all their runs (a JVM start is 1-4 s of CPU).
SHARED_JVM_TOOLS = {STORAGE_TOOL, DUMP_LOG_SEGMENTS, METADATA_QUORUM, FEATURES, TOPICS, CONFIGS, REASSIGN, ELECTION}


class KafkaProcessError(RuntimeError):
    pass


def free_port() -> int:
    """One port reserved as free_ports reserves them (no other process's bind(0) takes it)."""
    port, = free_ports(1)
    return port


def run_kafka_tool(main_class: str, *args: str, timeout: float = 120, input: str | None = None,
                   check: bool = False) -> subprocess.CompletedProcess:
    """Run one of Kafka's tools to completion; stdout is its output, logging goes to stderr.
    The tools of SHARED_JVM_TOOLS run in the process's shared tool JVM (tool_runs.run_in_shared_jvm)
    instead of a JVM of their own, unless they read stdin or a --command-config (whose JAAS or SSL
    settings a JVM keeps)."""
    result = None
    if main_class in SHARED_JVM_TOOLS and input is None and "--command-config" not in args:
        try:
            result = tool_runs.run_in_shared_jvm(main_class, *args, timeout=timeout)
        except tool_runs.ToolRunsUnavailable as exc:
            raise KafkaProcessError(f"{main_class} {' '.join(map(str, args))} in the shared tool JVM: {exc}") from None
    if result is None:
        result = run_in_own_jvm(main_class, args, timeout, input)
    if check and result.returncode != 0:
        raise KafkaProcessError(f"{main_class} {' '.join(map(str, args))} exited {result.returncode}:\n"
                                f"{result.stderr[-3000:]}\n{result.stdout[-2000:]}")
    return result


def run_in_own_jvm(main_class: str, args, timeout: float, input: str | None) -> subprocess.CompletedProcess:
    command = kafka_dist.java_command(main_class, *map(str, args))
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, input=input,
                              stdin=None if input is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise KafkaProcessError(f"{main_class} {' '.join(map(str, args))} did not finish within {timeout} s; "
                                f"stderr tail:\n{(exc.stderr or b'')[-2000:]!r}") from None


class KafkaNode:
    """One `kafka.Kafka` process: process.roles controller, broker or both."""

    def __init__(self, directory, node_id: int, roles: str = "controller", *, controller_port: int | None = None,
                 broker_port: int | None = None, properties: dict | None = None, heap: str = "256m"):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.node_id = node_id
        self.roles = roles
        self.heap = heap
        self.controller_port = controller_port or (free_port() if "controller" in roles else None)
        self.broker_port = broker_port or (free_port() if "broker" in roles else None)
        self.extra = dict(properties or {})
        self.process: subprocess.Popen | None = None

    # --- files ---------------------------------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def metadata_dir(self) -> Path:
        return self.data_dir / "__cluster_metadata-0"

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.directory / "kafka.log"

    @property
    def controller_address(self) -> str:
        return f"127.0.0.1:{self.controller_port}"

    @property
    def broker_address(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    def properties(self) -> dict:
        listeners, protocols = [], []
        if self.broker_port:
            listeners.append(f"PLAINTEXT://127.0.0.1:{self.broker_port}")
            protocols.append("PLAINTEXT:PLAINTEXT")
        if self.controller_port:
            listeners.append(f"CONTROLLER://127.0.0.1:{self.controller_port}")
        # A broker too must map controller.listener.names to a protocol (it connects to them).
        protocols.append("CONTROLLER:PLAINTEXT")
        props = {
            "process.roles": self.roles,
            "node.id": str(self.node_id),
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners),
            "listener.security.protocol.map": ",".join(protocols),
            "log.dirs": str(self.data_dir),
            "metadata.log.dir": str(self.data_dir),
            # one small JVM per node on a 2-core machine
            "num.network.threads": "1",
            "num.io.threads": "2",
            "background.threads": "2",
            "log.cleaner.enable": "false",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        if self.broker_port:
            props["inter.broker.listener.name"] = "PLAINTEXT"
            props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{self.broker_port}"
        props.update(self.extra)
        if self.controller_port and not props.get("controller.quorum.voters") \
                and not props.get("controller.quorum.bootstrap.servers"):
            props["controller.quorum.bootstrap.servers"] = self.controller_address   # a quorum of its own
        return {k: v for k, v in props.items() if v is not None}

    def write_config(self, **overrides) -> Path:
        self.extra.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return self.config_path

    def format(self, cluster_id: str, *args: str) -> subprocess.CompletedProcess:
        """kafka.tools.StorageTool format --config ... --cluster-id ... ARGS."""
        self.write_config()
        return run_kafka_tool(STORAGE_TOOL, "format", "--config", self.config_path, "--cluster-id", cluster_id,
                              *args, check=True)

    # --- process -------------------------------------------------------------------------------
    def start(self) -> subprocess.Popen:
        if self.process is not None and self.process.poll() is None:
            raise KafkaProcessError(f"Kafka node {self.node_id} is already running")
        if not self.config_path.exists():
            self.write_config()
        command = kafka_dist.java_command(KAFKA_SERVER, str(self.config_path), heap=self.heap,
                                          log4j=kafka_dist.LOG4J_SERVER)
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        return self.process

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "".join(self.log_text().splitlines(keepends=True)[-lines:])

    def wait_for_log(self, pattern: str, timeout_s: float = 60) -> re.Match:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            match = regex.search(self.log_text())
            if match:
                return match
            if not self.alive():
                raise KafkaProcessError(f"Kafka node {self.node_id} exited ({self.process.returncode}) before "
                                        f"logging /{pattern}/; log tail:\n{self.log_tail()}")
            time.sleep(0.2)
        raise KafkaProcessError(f"Kafka node {self.node_id} did not log /{pattern}/ within {timeout_s} s; "
                                f"log tail:\n{self.log_tail()}")

    def wait_ready(self, timeout_s: float = 90) -> None:
        """Kafka logs 'Kafka Server started' once every role of the process is up."""
        self.wait_for_log(r"Kafka Server started", timeout_s)

    def kill(self) -> None:
        """SIGKILL by pid (the whole session, so no JVM is left behind)."""
        if self.alive():
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.process is not None:
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass

    def stop(self, timeout_s: float = 30) -> int | None:
        """SIGTERM (Kafka's controlled shutdown), then SIGKILL after ``timeout_s``."""
        if not self.alive():
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
