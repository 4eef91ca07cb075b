"""An embedded Kafka broker for tests: one combined kafkawire node (process.roles=broker,controller,
docs/broker.md) in a temporary directory, on free ports of 127.0.0.1, as a child process.

    from kafkawire.testing import EmbeddedBroker

    with EmbeddedBroker() as broker:                  # formatted, started, registered and unfenced
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers)
        ...
        broker.log_dir                                 # the partitions' directories (Spark, dump-log)

With pytest the fixtures ``kafkawire_broker`` (one node per session) and
``kafkawire_broker_per_test`` (one per test) come from kafkawire.testing.pytest_plugin, which
installing kafkawire registers (docs/testing-with-kafkawire.md).

The node is the ``kafkawire server-start`` command a user runs, started with this interpreter;
its output goes to ``node.log`` in the directory. Start-up waits, bounded by ``start_timeout_s``,
until the broker lists itself in Metadata (registered with the quorum and unfenced, so a
produce is accepted); a node that exits meanwhile raises EmbeddedBrokerError with the tail of
its log. ``stop()`` kills the process by its pid (SIGKILL: the data is thrown away with the
directory, so nothing needs a clean shutdown) and removes a directory it created.

Importing this module costs only the standard library: it is imported in every pytest run of
every user who installed kafkawire (through the plugin), so the node's modules are imported only
when a broker starts.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

from kafkawire.single_broker import SINGLE_BROKER_PROPERTIES

__all__ = ["EmbeddedBroker", "EmbeddedBrokerError", "DEFAULT_PROPERTIES"]

# The node's settings besides its ports and directories (the rest are Kafka's defaults, so an
# idle session node costs little); a user's ``properties`` win. One broker's internal topics and
# no initial rebalance delay: kafkawire.single_broker.
DEFAULT_PROPERTIES = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    **SINGLE_BROKER_PROPERTIES,
}
POLL_S = 0.01              # how often start-up asks the broker whether it is unfenced


class EmbeddedBrokerError(RuntimeError):
    """The node could not be formatted or started, or was not ready in time; says why."""


class EmbeddedBroker:
    """One combined node (broker and controller) as a child process; see the module docstring.

    ``directory``: where its config, data and log go (default: a new temporary directory,
    removed by ``stop()``); ``properties``: server.properties keys that replace the defaults.
    """

    def __init__(self, directory: str | os.PathLike | None = None, *, properties: dict | None = None,
                 start_timeout_s: float = 60, python: str | None = None):
        self._own_directory = directory is None
        self.directory = os.fspath(directory) if directory is not None else tempfile.mkdtemp(prefix="kafkawire-")
        self.properties = {k: str(v) for k, v in (properties or {}).items()}
        self.start_timeout_s = start_timeout_s
        self.python = python or sys.executable
        self.process: subprocess.Popen | None = None
        os.makedirs(self.directory, exist_ok=True)
        self.broker_port = self.controller_port = 0

    # --- where things are ----------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the broker listener, for any Kafka client."""
        return f"127.0.0.1:{self.broker_port}"

    @property
    def log_dir(self) -> str:
        """The node's log.dirs: ``<topic>-<partition>/`` directories in Kafka's layout."""
        return os.path.join(self.directory, "data")

    @property
    def config_path(self) -> str:
        return os.path.join(self.directory, "server.properties")

    @property
    def node_log(self) -> str:
        return os.path.join(self.directory, "node.log")

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    # --- start and stop --------------------------------------------------------------------------
    def start(self) -> EmbeddedBroker:
        """Format, launch and wait until the broker accepts produces; returns self."""
        self.format()
        self.launch()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def format(self) -> None:
        """Pick free ports, write server.properties and run ``kafkawire storage format --standalone``."""
        from kafkawire.raft.node.local_quorum import free_ports        # lazy: see the module docstring
        from kafkawire.storage.state_files import random_uuid, uuid_to_kafka
        self.broker_port, self.controller_port = free_ports(2)
        props = dict(DEFAULT_PROPERTIES, **{
            "listeners": f"PLAINTEXT://127.0.0.1:{self.broker_port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "log.dirs": self.log_dir,
        })
        props.update(self.properties)
        with open(self.config_path, "w", encoding="utf-8") as f:
            f.write("".join(f"{k}={v}\n" for k, v in props.items()))
        result = subprocess.run([self.python, "-m", "kafkawire.tools.cli", "storage", "format", "--standalone",
                                 "--cluster-id", uuid_to_kafka(random_uuid()), "--config", self.config_path],
                                capture_output=True, text=True, timeout=self.start_timeout_s)
        if result.returncode != 0:
            raise EmbeddedBrokerError(f"kafkawire storage format failed ({result.returncode}): "
                                      f"{(result.stderr or result.stdout).strip()}")

    def launch(self) -> None:
        """Start ``kafkawire server-start`` (it dies with this process on Linux)."""
        from kafkawire.raft.node.local_quorum import _terminate_with_parent     # lazy
        with open(self.node_log, "ab") as log:
            self.process = subprocess.Popen([self.python, "-m", "kafkawire.tools.cli", "server-start", self.config_path],
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=dict(os.environ, PYTHONUNBUFFERED="1"),
                                            preexec_fn=_terminate_with_parent)

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Until Metadata lists this broker (registered and unfenced), at most ``timeout_s``."""
        timeout_s = self.start_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise EmbeddedBrokerError(f"the node exited with {self.process and self.process.returncode}:\n"
                                          f"{self.log_tail()}")
            if self.is_ready():
                return
            time.sleep(POLL_S)
        raise EmbeddedBrokerError(f"the broker was not registered and unfenced within {timeout_s} s:\n{self.log_tail()}")

    def is_ready(self) -> bool:
        """Whether the broker lists itself in Metadata now (registered and unfenced)."""
        return _lists_itself(self.broker_port)

    def stop(self) -> None:
        """Kill the node by its pid and remove the directory if this object made it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        if self._own_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            with open(self.node_log, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"EmbeddedBroker(bootstrap_servers={self.bootstrap_servers!r}, pid={self.pid}, log_dir={self.log_dir!r})"


def _lists_itself(port: int) -> bool:
    """Whether the broker on ``port`` answers Metadata with itself among the brokers (it does
    only once the controller unfenced it); False while it is not listening yet."""
    import asyncio
    from kafkawire.messages.metadata_request import MetadataRequest
    from kafkawire.net.client import NetworkClient, TransportError

    async def ask():
        async with NetworkClient(client_id="kafkawire-testing", request_timeout_ms=2000,
                                 connect_timeout_ms=1000) as client:
            return await client.send(("127.0.0.1", port), MetadataRequest(topics=[]), api_version=12)
    try:
        return bool(asyncio.run(ask()).brokers)
    except (TransportError, OSError):
        return False
