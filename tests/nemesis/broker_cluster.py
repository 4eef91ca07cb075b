"""Three combined kafkawire nodes (each ``process.roles=broker,controller``, one of three voters)
for the replication nemesis, and its faults: kill -9 of a partition's leader, of a follower, of
the active controller (then a restart), a kill -9 that leaves a torn write at the end of the
partition's newest segment, SIGSTOP, and network partitions through the proxies of netsplit.py
(a node cut from every other one, or two nodes' inter-broker links cut). One node at a time is faulted, and the next fault waits
(bounded) until every replica is back in the ISR, so a replication-factor-3 topic with
min.insync.replicas=2 can keep acknowledging through every fault.
"""
from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections import Counter, defaultdict

from kafkawire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from kafkawire.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kafkawire.messages.produce_request import PartitionProduceData, ProduceRequest, TopicProduceData
from kafkawire.net.client import NetworkClient, TransportError
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import build_batch
from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError, describe_quorum, free_ports

from .netsplit import Netsplit
from .runnable_clock import RunnableClock

NODES = (1, 2, 3)


def ask(address, request, api_version=None, timeout_ms: int = 2000):
    """One request to one node; None when it does not answer (down, paused, electing)."""
    async def go():
        client = NetworkClient(client_id="nemesis-replication", request_timeout_ms=timeout_ms,
                               connect_timeout_ms=timeout_ms)
        try:
            return await asyncio.wait_for(client.send(address, request, api_version=api_version),
                                          timeout_ms / 1000 + 1)
        finally:
            await client.close()
    try:
        return asyncio.run(go())
    except (TransportError, OSError, asyncio.TimeoutError, QuorumError):
        return None


class BrokerCluster:
    """Three combined nodes under ``base``; ``faults`` counts the faults injected by kind."""

    def __init__(self, base, *, rng: random.Random, properties: dict | None = None):
        self.broker_ports = dict(zip(NODES, free_ports(len(NODES))))
        self.replication_ports = dict(zip(NODES, free_ports(len(NODES))))
        self.quorum = LocalQuorum(base, voters=len(NODES), properties={
            "process.roles": "broker,controller",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "REPLICATION",
            "broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300",   # replication_run.run passes its own
            "replica.fetch.backoff.ms": "100", "replica.lag.time.max.ms": "3000",
            "offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1",
            **(properties or {})})
        # the other nodes reach a node's inter-broker and controller listeners through its proxies
        self.netsplit = Netsplit({"REPLICATION": self.replication_ports, "CONTROLLER": self.quorum.ports})
        self.rng = rng
        self.faults = Counter()
        self.down: set[int] = set()
        self.kill_times: list[tuple] = []     # (monotonic time, node, partition) of each kill -9 right after an ack
        self.nudges = 0
        self.network_effects = defaultdict(list)   # kind -> seconds from each cut to its effect seen

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.broker_ports.values())

    def broker(self, node_id: int) -> tuple[str, int]:
        return ("127.0.0.1", self.broker_ports[node_id])

    def start(self) -> None:
        self.netsplit.start()
        q = self.quorum
        for i in NODES:
            q.node_properties[i] = {
                "listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[i]},"
                             f"REPLICATION://127.0.0.1:{self.replication_ports[i]},CONTROLLER://127.0.0.1:{q.ports[i]}",
                # the raft followers fetch from the endpoint their leader announces: its proxy too
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.broker_ports[i]},"
                                        f"REPLICATION://127.0.0.1:{self.netsplit.port('REPLICATION', i)},"
                                        f"CONTROLLER://127.0.0.1:{self.netsplit.port('CONTROLLER', i)}",
                "controller.quorum.voters": ",".join(
                    f"{j}@127.0.0.1:{q.ports[j] if j == i else self.netsplit.port('CONTROLLER', j)}" for j in NODES)}
        q.format(mode="static")          # each node its own view of the voters' addresses
        q.start_all()

    def stop(self) -> None:
        for i in NODES:
            self._signal(i, signal.SIGCONT)
            self.quorum.kill(i)
        self.netsplit.stop()

    def partition_dir(self, node_id: int, topic: str, index: int) -> str:
        return os.path.join(self.quorum.data_dir(node_id), f"{topic}-{index}")

    # -- what the cluster says --

    def partitions(self, topic: str, nodes=NODES) -> dict | None:
        """index -> the partition's metadata, asked of the live ``nodes`` in turn."""
        for i in nodes:
            if i in self.down:
                continue
            reply = ask(self.broker(i), MetadataRequest(topics=[MetadataRequestTopic(name=topic)],
                                                        allow_auto_topic_creation=False), 12)
            if reply is not None and reply.topics and reply.topics[0].error_code == Errors.NONE:
                return {p.partition_index: p for p in reply.topics[0].partitions}
        return None

    def partition_seen_by(self, node_id: int, topic: str, index: int):
        """The partition's metadata as ``node_id`` has it (a node cut from the controller: stale)."""
        return (self.partitions(topic, nodes=(node_id,)) or {}).get(index)

    def leader(self, topic: str, index: int) -> int | None:
        p = (self.partitions(topic) or {}).get(index)
        return None if p is None or p.leader_id < 0 else p.leader_id

    def settled(self, topic: str, count: int) -> dict[int, tuple] | None:
        """index -> (leader, leader epoch, ISR) of each of the ``count`` partitions, when every node
        answers and every one says the same: the controller's committed state as each broker has
        replayed it. None while a node is down, paused or restarted and catching up (it does not
        answer), or has not replayed a change yet (it disagrees): the first answering node's view
        alone can be a stale one (a node killed, its leaderships and ISR places not yet moved)."""
        states = []
        for i in NODES:
            parts = None if i in self.down else self.partitions(topic, nodes=(i,))
            if parts is None or len(parts) != count:
                return None
            states.append({index: (p.leader_id, p.leader_epoch, tuple(sorted(p.isr_nodes)))
                           for index, p in parts.items()})
        if any(state != states[0] for state in states) or any(leader < 0 for leader, _, _ in states[0].values()):
            return None
        return states[0]

    def all_in_sync(self, topic: str, count: int) -> bool:
        """Every replica in the ISR of every partition, as every node says (``settled``)."""
        state = self.settled(topic, count)
        return state is not None and all(list(isr) == list(NODES) for _, _, isr in state.values())

    def high_watermark(self, topic: str, index: int, isolation_level: int = 0) -> int | None:
        """The leader's high watermark (ListOffsets latest, read_uncommitted), or with
        ``isolation_level`` 1 its last stable offset."""
        leader = self.leader(topic, index)
        if leader is None:
            return None
        reply = ask(self.broker(leader), ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
            ListOffsetsTopic(name=topic, partitions=[ListOffsetsPartition(partition_index=index, timestamp=-1)])]), 7)
        if reply is None:
            return None
        p = reply.topics[0].partitions[0]
        return p.offset if p.error_code == Errors.NONE else None

    def active_controller(self) -> int | None:
        for i in NODES:
            if i in self.down:
                continue
            try:
                view = asyncio.run(describe_quorum(self.quorum.address(i), timeout_ms=1000))
            except (TransportError, QuorumError, OSError, asyncio.TimeoutError):
                continue
            if view.leader_id == i:
                return i
        return None

    def pids(self) -> list[int]:
        """This driver's process and every node's running now."""
        return [os.getpid()] + [p.pid for p in self.quorum.processes.values() if p.poll() is None]

    def wait_until(self, predicate, bound_s: float, what: str):
        """``predicate()``'s first true value within ``bound_s`` of the time the cluster could
        run (runnable_clock.py: the time its most starved process waited for a core does not
        count; a loaded machine is no failure of the cluster, a slow or hung node is)."""
        clock = RunnableClock(self.pids)
        while True:
            value = predicate()
            if value:
                return value
            if clock.elapsed() > bound_s:
                raise QuorumError(f"timed out after {bound_s} s ({clock.describe()}) waiting for {what}")
            time.sleep(0.2)

    # -- faults --

    def _signal(self, node_id: int, sig) -> None:
        proc = self.quorum.processes.get(node_id)
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, sig)

    def kill(self, node_id: int, kind: str) -> None:
        self.faults[kind] += 1
        self.quorum.kill(node_id)
        self.down.add(node_id)

    def restart(self, node_id: int) -> None:
        self.quorum.start(node_id)
        self.down.discard(node_id)

    def tear_tail(self, node_id: int, topic: str, index: int) -> None:
        """A torn write at the end of the (killed) node's newest segment of the partition."""
        directory = self.partition_dir(node_id, topic, index)
        segments = sorted(n for n in os.listdir(directory) if n.endswith(".log")) if os.path.isdir(directory) else []
        if segments:
            with open(os.path.join(directory, segments[-1]), "ab") as f:
                f.write(os.urandom(self.rng.randint(1, 120)))

    def isolate(self, node_id: int, kind: str) -> None:
        """A network partition: no connection between ``node_id`` and any other node (clients
        still reach it)."""
        self.faults[kind] += 1
        for other in NODES:
            if other != node_id:
                self.netsplit.cut(node_id, other)

    def cut_replication(self, a: int, b: int, kind: str) -> None:
        """No inter-broker connection between nodes ``a`` and ``b`` (each still reaches the third,
        and the controller): neither fetches from the other."""
        self.faults[kind] += 1
        self.netsplit.cut(a, b, listeners=("REPLICATION",))

    def heal(self) -> None:
        self.netsplit.heal()

    def nudge(self, node_id: int, topic: str, index: int) -> None:
        """One record (acks=1, never checked) written to the partition at ``node_id``, its leader:
        a follower falls out of the ISR only when the leader's log moves past it, and the
        nemesis's producers may be held up elsewhere (a full queue of another partition's)."""
        self.nudges += 1
        ask(self.broker(node_id), ProduceRequest(acks=1, timeout_ms=2000, topic_data=[TopicProduceData(
            name=topic, partition_data=[PartitionProduceData(index=index, records=build_batch(
                [(None, f"nemesis-nudge-{self.nudges}".encode())]))])]), 11)

    def pause(self, node_id: int, paused_s: float) -> None:
        self.faults["SIGSTOP"] += 1
        self._signal(node_id, signal.SIGSTOP)
        time.sleep(paused_s)
        self._signal(node_id, signal.SIGCONT)
