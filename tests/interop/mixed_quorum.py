"""A KRaft quorum of Apache Kafka 4.3.1 controllers and kafkawire controllers on 127.0.0.1.

    quorum = MixedQuorum(tmp_path, kinds={1: "kafka", 2: "kafkawire", 3: "kafkawire"})
    quorum.format_static()            # each side with its own storage tool, one cluster id
    quorum.start_all()
    view = quorum.wait_for_leader()   # (leader id, epoch, high watermark), asked over DescribeQuorum
    quorum.kill(view.leader_id)       # kill -9, whichever implementation it is

Kafka's nodes are tests.interop.kafka_procs.KafkaNode processes, ours LocalQuorum processes; the
ports are LocalQuorum's, so both sides name each other alike. Every wait is bounded, and a
failure carries the tail of every node's log.
"""
from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass

from kafkawire.net.client import TransportError
from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError, describe_quorum

from tests.nemesis.checks import batches_below  # noqa: F401 - the tests take it from here

from .kafka_procs import KafkaNode

KAFKA, OURS = "kafka", "kafkawire"


@dataclass(frozen=True)
class LeaderView:
    leader_id: int
    epoch: int
    high_watermark: int
    log_end_offsets: dict


class MixedQuorum:
    def __init__(self, base_dir, kinds: dict[int, str], properties: dict | None = None,
                 node_properties: dict[int, dict] | None = None):
        self.kinds = dict(kinds)
        # Settings both implementations read alike (snapshot intervals, auto-join, ...), and
        # per node on top of them.
        self.properties = dict(properties or {})
        self.node_properties = {i: dict(p) for i, p in (node_properties or {}).items()}
        self.ours = LocalQuorum(os.path.join(base_dir, "kafkawire"), voters=len(kinds),
                                properties=self.properties)
        assert sorted(kinds) == self.ours.voter_ids, "node ids are 1..n"
        self.kafka: dict[int, KafkaNode] = {}
        self.base_dir = base_dir

    @property
    def ids(self) -> list[int]:
        return sorted(self.kinds)

    def static_voters(self) -> str:
        return ",".join(f"{i}@127.0.0.1:{self.ours.ports[i]}" for i in self.ids)

    # --- format and processes -------------------------------------------------------------------
    def format_static(self) -> None:
        """kraft.version 0: controller.quorum.voters names everyone; kafkawire's nodes are
        formatted by `kafkawire storage format`, Kafka's by its StorageTool, with one cluster id."""
        self.ours.format(mode="static")
        for i in self.ids:
            if self.kinds[i] == KAFKA:
                node = KafkaNode(os.path.join(self.base_dir, f"kafka-{i}"), i, "controller",
                                 controller_port=self.ours.ports[i],
                                 properties={**self.properties, **self.node_properties.get(i, {}),
                                             "controller.quorum.voters": self.static_voters(),
                                             "controller.quorum.bootstrap.servers": None})
                node.format(self.ours.cluster_id)
                self.kafka[i] = node
            elif i in self.node_properties:
                self.ours.write_config(i, **self.node_properties[i])

    def format_dynamic(self, standalone: int) -> None:
        """kraft.version 1: node ``standalone`` formatted --standalone, every other node
        --no-initial-controllers (an observer until it is added); each side by its own tool."""
        for i in self.ids:
            mode = "--standalone" if i == standalone else "--no-initial-controllers"
            if self.kinds[i] == KAFKA:
                node = KafkaNode(os.path.join(self.base_dir, f"kafka-{i}"), i, "controller",
                                 controller_port=self.ours.ports[i],
                                 properties={**self.properties, **self.node_properties.get(i, {}),
                                             "controller.quorum.bootstrap.servers": self.ours.bootstrap_servers()})
                node.format(self.ours.cluster_id, mode)
                self.kafka[i] = node
            else:
                config = self.ours.write_config(i, **self.node_properties.get(i, {}))
                self.ours._kafkawire("storage", "format", f"--cluster-id={self.ours.cluster_id}", "--config",
                                     config, mode)

    def config_path(self, node_id: int) -> str:
        return str(self.kafka[node_id].config_path) if self.kinds[node_id] == KAFKA else \
            self.ours.config_path(node_id)

    def address(self, node_id: int) -> str:
        return f"127.0.0.1:{self.ours.ports[node_id]}"

    def voter_ids(self, asked: int) -> list[int]:
        return sorted(r.replica_id for r in self.describe(asked).voters)

    def wait_for_voters(self, expected: list[int], timeout_s: float = 60) -> LeaderView:
        """Until the leader reports exactly ``expected`` as its voters."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            view = self.wait_for_leader(timeout_s=max(deadline - time.monotonic(), 1))
            if sorted(view.log_end_offsets) == sorted(expected):
                return view
            time.sleep(0.2)
        raise QuorumError(f"the voters did not become {expected} within {timeout_s} s\n{self.log_tails()}")

    def wait_for_observers(self, expected: list[int], timeout_s: float = 60) -> None:
        """Until the leader reports each of ``expected`` among its observers: a node formatted
        --no-initial-controllers is up and fetching, so an AddRaftVoter's ApiVersions probe of it
        can be answered (the leader refuses the add when the new voter does not answer)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            leader_id = self.wait_for_leader(timeout_s=max(deadline - time.monotonic(), 1)).leader_id
            try:
                observers = {r.replica_id for r in self.describe(leader_id).observers}
            except (TransportError, QuorumError, OSError):      # it stopped leading meanwhile
                observers = set()
            if set(expected) <= observers:
                return
            time.sleep(0.2)
        raise QuorumError(f"{expected} did not all fetch as observers within {timeout_s} s\n{self.log_tails()}")

    def start(self, node_id: int) -> None:
        if self.kinds[node_id] == KAFKA:
            self.kafka[node_id].start()
        else:
            self.ours.start(node_id)

    def start_all(self) -> None:
        for i in self.ids:
            self.start(i)

    def kill(self, node_id: int) -> None:
        if self.kinds[node_id] == KAFKA:
            self.kafka[node_id].kill()
        else:
            self.ours.kill(node_id)

    def alive(self, node_id: int) -> bool:
        if self.kinds[node_id] == KAFKA:
            return self.kafka[node_id].alive()
        proc = self.ours.processes.get(node_id)
        return proc is not None and proc.poll() is None

    def pid(self, node_id: int) -> int:
        return self.kafka[node_id].process.pid if self.kinds[node_id] == KAFKA else self.ours.processes[node_id].pid

    def pause(self, node_id: int) -> None:
        """SIGSTOP: the process keeps its sockets but answers nothing and its timers stop."""
        os.kill(self.pid(node_id), signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        os.kill(self.pid(node_id), signal.SIGCONT)

    def kill_all(self) -> None:
        for i in self.ids:
            if self.alive(i):
                self.resume(i)          # a paused JVM would not die of its session's SIGKILL otherwise
            self.kill(i)

    def partition_dir(self, node_id: int) -> str:
        if self.kinds[node_id] == KAFKA:
            return str(self.kafka[node_id].metadata_dir)
        return self.ours.metadata_partition_dir(node_id)

    def log_tails(self, lines: int = 25) -> str:
        out = []
        for i in self.ids:
            tail = self.kafka[i].log_tail(lines) if self.kinds[i] == KAFKA else self.ours.log_tail(i, lines)
            out.append(f"--- node {i} ({self.kinds[i]}) ---\n{tail}")
        return "\n".join(out)

    # --- asking the quorum -----------------------------------------------------------------------
    def describe(self, node_id: int):
        return asyncio.run(describe_quorum(self.ours.address(node_id), timeout_ms=2000))

    def wait_for_leader(self, timeout_s: float = 60, *, min_epoch: int = 0, exclude=()) -> LeaderView:
        """A node that says over DescribeQuorum that it leads, in an epoch of at least ``min_epoch``."""
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            for i in self.ids:
                if i in exclude or not self.alive(i):
                    continue
                try:
                    view = self.describe(i)
                except (TransportError, QuorumError, OSError) as exc:
                    last = exc
                    continue
                if view.leader_id == i and view.leader_epoch >= min_epoch and view.high_watermark > 0:
                    return LeaderView(i, view.leader_epoch, view.high_watermark,
                                      {r.replica_id: r.log_end_offset for r in view.voters})
            time.sleep(0.2)
        raise QuorumError(f"no leader of epoch >= {min_epoch} within {timeout_s} s (last error: {last})\n"
                          f"{self.log_tails()}")

    def wait_for_fetch_since(self, node_id: int, since_ms: float, timeout_s: float = 60) -> LeaderView:
        """Until the leader reports a fetch from ``node_id`` at or after ``since_ms`` (wall clock,
        as DescribeQuorum's lastFetchTimestamp) that brought it to the high watermark: a restarted
        node follows again. The leader's view from before a restart does not count, so
        wait_for_catch_up alone would pass at once."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            leader_id = self.wait_for_leader(timeout_s=max(deadline - time.monotonic(), 1)).leader_id
            try:
                described = self.describe(leader_id)
            except (TransportError, QuorumError, OSError):      # it stopped leading meanwhile
                described = None
            replica = None if described is None else \
                next((r for r in described.voters if r.replica_id == node_id), None)
            if replica is not None and described.leader_id == leader_id \
                    and replica.last_fetch_timestamp >= since_ms and replica.log_end_offset >= described.high_watermark:
                return LeaderView(leader_id, described.leader_epoch, described.high_watermark,
                                  {r.replica_id: r.log_end_offset for r in described.voters})
            time.sleep(0.2)
        raise QuorumError(f"node {node_id} did not fetch up to the high watermark within {timeout_s} s\n"
                          f"{self.log_tails()}")

    def wait_for_describe_cluster(self, node_id: int, timeout_s: float = 60) -> None:
        """Until ``node_id`` answers a controller's DescribeCluster without an error: Kafka's
        controller refuses it (UNSUPPORTED_VERSION, "Direct-to-controller communication is not
        supported with the current MetadataVersion") until it has published a metadata version,
        which it may not have done when every voter's log has caught up (right after an election,
        before its bootstrap records commit); Kafka's admin tools ask it first."""
        from kafkawire.messages.describe_cluster_request import DescribeClusterRequest
        from kafkawire.net.client import NetworkClient

        async def ask():
            async with NetworkClient(request_timeout_ms=5_000) as client:
                answer = await client.send(("127.0.0.1", self.ours.ports[node_id]),
                                           DescribeClusterRequest(endpoint_type=2), api_version=1)
            return answer.error_code

        deadline, last = time.monotonic() + timeout_s, None
        while time.monotonic() < deadline:
            try:
                last = asyncio.run(ask())
            except (TransportError, OSError, asyncio.TimeoutError) as exc:
                last = exc
            if last == 0:
                return
            time.sleep(0.2)
        raise QuorumError(f"node {node_id} did not answer DescribeCluster within {timeout_s} s (last: {last!r})\n"
                          f"{self.log_tails()}")

    def wait_for_catch_up(self, timeout_s: float = 60) -> LeaderView:
        """Every voter's log end offset at or past the leader's high watermark."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            view = self.wait_for_leader(timeout_s=max(deadline - time.monotonic(), 1))
            if all(view.log_end_offsets.get(i, -1) >= view.high_watermark for i in self.ids):
                return view
            time.sleep(0.2)
        raise QuorumError(f"the voters did not catch up within {timeout_s} s\n{self.log_tails()}")
