"""The replication nemesis (tests/nemesis/replication_run.py) on a mixed cluster, by hand (issue 29,
scope 5): its three replicas nodes 1 and 2, kafkawire brokers (process.roles=broker), and node 3,
an Apache Kafka 4.3.1 broker (one JVM, -Xmx256m), on kafkawire's controller (node 4, alone,
process.roles=controller). Every fault of the nemesis hits either kind: kill -9 of a partition's
leader or follower (a Kafka broker restarted is a new JVM), of the controller, a torn segment
tail (Kafka recovers its own), SIGSTOP, a leader cut from the others and from the controller
(netsplit.py's proxies in front of every replication listener and of the controller's), a
follower cut from its leader. The checks are the nemesis's: nothing acknowledged lost, misplaced
or duplicated, the replicas alike below the high watermarks, the transactions and the consumer's
reads, the last offset commit kept.

    python -m tests.interop.mixed_replication_nemesis --duration 240 [--seed N] [--dir DIR] [--kinds K1,K2]

The nemesis builds its cluster itself (``replication_run.BrokerCluster``): this module has it
build this one instead."""
from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter, defaultdict
from pathlib import Path

from kafkawire.net.client import TransportError
from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError, describe_quorum, free_ports
from tests.interop.kafka_procs import KafkaNode
from tests.nemesis import replication_run
from tests.nemesis.broker_cluster import NODES, BrokerCluster
from tests.nemesis.netsplit import Netsplit

KAFKA, CONTROLLER = 3, 4
OURS = tuple(n for n in NODES if n != KAFKA)
# the nemesis's settings (BrokerCluster's), Kafka's broker given them too
SESSIONS = {"broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300"}
BROKERS = {"broker.heartbeat.interval.ms": "300", "replica.fetch.backoff.ms": "100", "replica.lag.time.max.ms": "3000",
           "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
           "offsets.topic.replication.factor": "3", "transaction.state.log.replication.factor": "3",
           "transaction.state.log.min.isr": "2", "inter.broker.listener.name": "REPLICATION"}
PROTOCOLS = "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT"


class MixedBrokerCluster(BrokerCluster):
    """The nemesis's cluster with node 3 a Kafka broker and the controller apart (node 4)."""

    def __init__(self, base, *, rng, properties: dict | None = None):
        base = Path(base)
        self.broker_ports = dict(zip(NODES, free_ports(len(NODES))))
        self.replication_ports = dict(zip(NODES, free_ports(len(NODES))))
        # the controller, node 4: LocalQuorum's node 1 under another node id
        self.controller = LocalQuorum(base / "controller", voters=1, properties={**SESSIONS, **(properties or {})})
        controller_port = self.controller.ports[1]
        # kafkawire's brokers, nodes 1 and 2 (their LocalQuorum has no voter)
        self.quorum = LocalQuorum(base / "kafkawire", voters=0, extra_nodes=len(OURS), cluster_id=self.controller.cluster_id,
                                  properties={"process.roles": "broker", "listener.security.protocol.map": PROTOCOLS,
                                              **BROKERS})
        self.kafka = KafkaNode(base / "kafka", KAFKA, "broker", broker_port=self.broker_ports[KAFKA], properties=BROKERS)
        # a cut from or to a broker on CONTROLLER names its (unused) proxy: every node has one
        self.netsplit = Netsplit({"REPLICATION": self.replication_ports,
                                  "CONTROLLER": {n: controller_port for n in (*NODES, CONTROLLER)}})
        self._nemesis_state(rng)

    def _nemesis_state(self, rng) -> None:
        """What BrokerCluster.__init__ sets besides its nodes."""
        self.rng = rng
        self.faults = Counter()
        self.down: set[int] = set()
        self.kill_times: list[tuple] = []
        self.nudges = 0
        self.network_effects = defaultdict(list)

    def _listeners(self, node_id: int) -> dict:
        voters = f"{CONTROLLER}@127.0.0.1:{self.netsplit.port('CONTROLLER', CONTROLLER)}"
        return {"listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[node_id]},"
                             f"REPLICATION://127.0.0.1:{self.replication_ports[node_id]}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[node_id]},"
                                        f"REPLICATION://127.0.0.1:{self.netsplit.port('REPLICATION', node_id)}",
                "controller.quorum.voters": voters, "controller.quorum.bootstrap.servers": ""}

    def start(self) -> None:
        self.netsplit.start()
        port = self.controller.ports[1]
        self.controller.node_properties[1] = {"node.id": str(CONTROLLER),
                                              "controller.quorum.voters": f"{CONTROLLER}@127.0.0.1:{port}"}
        self.controller.format(mode="static")
        for node_id in OURS:
            self.quorum.node_properties[node_id] = self._listeners(node_id)
        self.quorum.format(mode="static")
        self.kafka.extra.update(self._listeners(KAFKA), **{"listener.security.protocol.map": PROTOCOLS,
                                                           "controller.quorum.bootstrap.servers": None})
        self.kafka.format(self.quorum.cluster_id)
        self.controller.start(1)
        self.kafka.start()
        for node_id in OURS:
            self.quorum.start(node_id)

    def stop(self) -> None:
        for node_id in (*NODES, CONTROLLER):
            self._signal(node_id, signal.SIGCONT)
        for node_id in OURS:
            self.quorum.kill(node_id)
        self.kafka.kill()
        self.controller.kill(1)
        self.netsplit.stop()

    def log_tails(self) -> str:
        return "\n".join([f"--- Kafka broker {KAFKA}:\n{self.kafka.log_tail(40)}",
                          f"--- kafkawire controller {CONTROLLER}:\n{self.controller.log_tail(1, 30)}"]
                         + [f"--- kafkawire broker {n}:\n{self.quorum.log_tail(n, 40)}" for n in OURS])

    def partition_dir(self, node_id: int, topic: str, index: int) -> str:
        if node_id == KAFKA:
            return os.path.join(self.kafka.data_dir, f"{topic}-{index}")
        return super().partition_dir(node_id, topic, index)

    def active_controller(self) -> int | None:
        """4 when it answers DescribeQuorum as the leader (it is the only voter)."""
        if CONTROLLER in self.down:
            return None
        try:
            view = asyncio.run(describe_quorum(self.controller.address(1), timeout_ms=1000))
        except (TransportError, QuorumError, OSError, asyncio.TimeoutError):
            return None
        return CONTROLLER if view.leader_id == CONTROLLER else None

    def all_in_sync(self, topic: str, count: int) -> bool:
        """BrokerCluster's, once the controller leads again: while the only controller is down or
        restarting (many seconds on a loaded machine) the brokers' metadata stands still, and says
        every replica is in sync whatever happened meanwhile (seed 29 isolated a leader then, and
        waited in vain for its leadership to move: the controller, back, fenced it and the other
        ISR member, and kept the partition leaderless for its last ELR member, the isolated one)."""
        return self.active_controller() is not None and super().all_in_sync(topic, count)

    def _process(self, node_id: int):
        if node_id == KAFKA:
            return self.kafka.process
        if node_id == CONTROLLER:
            return self.controller.processes.get(1)
        return self.quorum.processes.get(node_id)

    def pids(self) -> list[int]:
        """BrokerCluster's (for its runnable clock), with the Kafka broker and the controller."""
        procs = (self._process(node_id) for node_id in (*NODES, CONTROLLER))
        return [os.getpid()] + [p.pid for p in procs if p is not None and p.poll() is None]

    def _signal(self, node_id: int, sig) -> None:
        proc = self._process(node_id)
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, sig)

    def kill(self, node_id: int, kind: str) -> None:
        self.faults[kind] += 1
        if node_id == KAFKA:
            self.kafka.kill()
        elif node_id == CONTROLLER:
            self.controller.kill(1)
        else:
            self.quorum.kill(node_id)
        self.down.add(node_id)

    def restart(self, node_id: int) -> None:
        if node_id == KAFKA:
            self.kafka.start()
        elif node_id == CONTROLLER:
            self.controller.start(1)
        else:
            self.quorum.start(node_id)
        self.down.discard(node_id)

    def isolate(self, node_id: int, kind: str) -> None:
        """Cut from the other brokers and from the controller (clients still reach it)."""
        self.faults[kind] += 1
        for other in NODES:
            if other != node_id:
                self.netsplit.cut(node_id, other, listeners=("REPLICATION",))
        self.netsplit.cut(node_id, CONTROLLER, listeners=("CONTROLLER",))


def main(argv=None) -> int:
    from tests.interop import kafka_dist
    kafka_dist.ensure()
    # replication_run.run builds its cluster by this name
    replication_run.BrokerCluster = MixedBrokerCluster
    return replication_run.main(argv)


if __name__ == "__main__":
    sys.exit(main())
