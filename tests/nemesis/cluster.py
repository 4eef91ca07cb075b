"""A three-voter kafkawire quorum wired through cuttable links, and the faults the nemesis
injects into it.

The quorum is static (controller.quorum.voters, kraft.version 0), and each node's config names
its peers at the ports of its own LinkProxies: node i reaches node j only through link (i, j), so
cutting every link into and out of a node isolates it as a network partition would, while
clients still reach every node directly (a partitioned leader can be asked to write, and must
not acknowledge anything it cannot commit).
"""
from __future__ import annotations

import asyncio
import os
import random
import signal
from collections import Counter
from contextlib import asynccontextmanager

from kafkawire.net.client import TransportError
from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError, describe_quorum, free_ports

from .hostile import fetch_flood, send_hostile_raft_requests
from .proxy import LinkProxy
from .storm import heartbeat_storm
from .tenant import TenantTally, hostile_tenant_round, tenant_properties


BROKER_METADATA_VERSION = 99   # the highest metadata.version the nemesis's brokers say they support


class NemesisCluster:
    def __init__(self, base_dir, *, voters: int = 3, properties: dict | None = None, rng: random.Random):
        self.quorum = LocalQuorum(base_dir, voters=voters, properties=properties)
        self.rng = rng
        self.links: dict[tuple[int, int], LinkProxy] = {}
        self.faults = Counter()
        self.stopped: set[int] = set()          # SIGSTOPped
        self.down: set[int] = set()             # killed, not yet restarted
        self._first_round: list[str] = []
        self._first_round_left: list[str] = []
        self.tenant_ports = dict(zip(self.ids, free_ports(len(self.ids))))
        self.tenant = TenantTally()
        self.topics_created: list[str] = []      # the writer's acknowledged topics, the tenant's victims
        self.storm = Counter()                   # the heartbeat storms' answers, by kind and error
        self.storm_epoch_moves: list[str] = []   # a storm across which the raft epoch moved

    @property
    def ids(self) -> list[int]:
        return self.quorum.voter_ids

    def addresses(self) -> dict[int, tuple[str, int]]:
        return {i: self.quorum.address(i) for i in self.ids}

    async def start(self) -> None:
        q = self.quorum
        for i in self.ids:
            for j in self.ids:
                if i != j:
                    link = LinkProxy(q.ports[j])
                    await link.start()
                    self.links[(i, j)] = link
        q.format(mode="static")
        for i in self.ids:
            voters = ",".join(f"{j}@127.0.0.1:{q.ports[j] if j == i else self.links[(i, j)].port}"
                              for j in self.ids)
            tenant = {key.replace(".", "_"): value for key, value in tenant_properties().items()}
            q.write_config(i, controller_quorum_voters=voters, **tenant,
                           listeners=f"CONTROLLER://127.0.0.1:{q.ports[i]},TENANT://127.0.0.1:{self.tenant_ports[i]}")
        q.start_all()

    async def stop(self) -> None:
        for i in list(self.stopped):
            self._signal(i, signal.SIGCONT)
        self.quorum.stop_all()
        for i in self.ids:
            self.quorum.kill(i)
        for link in self.links.values():
            await link.close()

    def _signal(self, node_id: int, sig) -> None:
        proc = self.quorum.processes.get(node_id)
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, sig)

    # --- faults: each one held for a while, then healed -------------------------------------------
    async def kill_and_restart(self, node_id: int, down_s: float) -> None:
        self.faults["kill -9"] += 1
        self.quorum.kill(node_id)
        self.down.add(node_id)
        await asyncio.sleep(down_s)
        self.quorum.start(node_id)
        self.down.discard(node_id)

    async def torn_tail_and_restart(self, node_id: int, down_s: float) -> None:
        """kill -9, then leave a torn write at the end of its newest segment: the first bytes of
        a batch that never finished (what a crash in the middle of a write leaves)."""
        self.faults["torn tail"] += 1
        self.quorum.kill(node_id)
        self.down.add(node_id)
        directory = self.quorum.metadata_partition_dir(node_id)
        segments = sorted(n for n in os.listdir(directory) if n.endswith(".log"))
        if segments:
            with open(os.path.join(directory, segments[-1]), "ab") as f:
                f.write(os.urandom(self.rng.randint(1, 120)))
        await asyncio.sleep(down_s)
        self.quorum.start(node_id)
        self.down.discard(node_id)

    async def pause(self, node_id: int, paused_s: float) -> None:
        self.faults["SIGSTOP"] += 1
        self._signal(node_id, signal.SIGSTOP)
        self.stopped.add(node_id)
        await asyncio.sleep(paused_s)
        self._signal(node_id, signal.SIGCONT)
        self.stopped.discard(node_id)

    async def partition(self, node_id: int, cut_s: float) -> None:
        self.faults["partition"] += 1
        mine = [link for (a, b), link in self.links.items() if node_id in (a, b)]
        for link in mine:
            link.set_cut(True)
        await asyncio.sleep(cut_s)
        for link in mine:
            link.set_cut(False)

    async def flood(self, node_id: int, flood_s: float, connections: int = 20, pipelined: int = 16) -> None:
        """Hostile clients: pipelined long-poll fetches of __cluster_metadata at one node."""
        self.faults["fetch flood"] += 1
        await fetch_flood(self.quorum.address(node_id), flood_s, connections, pipelined)

    async def hostile_raft(self, node_id: int, hold_s: float) -> None:
        """Votes and BeginQuorumEpoch/EndQuorumEpoch from strangers and spoofers, at one node."""
        self.faults["hostile raft requests"] += 1
        await send_hostile_raft_requests(self.quorum.address(node_id), self.quorum.cluster_id, node_id, self.ids)
        await asyncio.sleep(hold_s)

    async def hostile_tenant(self, node_id: int, hold_s: float) -> None:
        """An authenticated user with no ACLs sends the requests of tenant.py to one node."""
        self.faults["hostile tenant"] += 1
        await hostile_tenant_round(("127.0.0.1", self.tenant_ports[node_id]), self.rng, self.topics_created,
                                   self.tenant)
        await asyncio.sleep(hold_s)

    async def storm_heartbeats(self, node_id: int, hold_s: float) -> int:
        """Brokers heartbeating back to back at the node that says it leads (``node_id`` if none
        does): the only fault at the time, so the epoch must not move across it."""
        self.faults["heartbeat storm"] += 1
        node_id = await self._a_leader() or node_id
        before = await self._epoch_seen_by(node_id)
        self.storm.update(await heartbeat_storm(self.quorum.address(node_id), self.quorum.cluster_id,
                                                BROKER_METADATA_VERSION, hold_s))
        after = await self._epoch_seen_by(node_id)
        if before is not None and after is not None and after != before:
            self.storm_epoch_moves.append(f"epoch {before} -> {after} across a {hold_s:.1f} s storm at node {node_id}")
        return node_id

    async def _a_leader(self) -> int | None:
        """A node whose DescribeQuorum names itself leader (the previous fault is healed, but a
        node it paused may still believe it leads until it hears of the newer epoch)."""
        for node_id in self.ids:
            try:
                if (await describe_quorum(self.quorum.address(node_id), timeout_ms=2000)).leader_id == node_id:
                    return node_id
            except (QuorumError, TransportError, OSError):
                continue
        return None

    async def _epoch_seen_by(self, node_id: int) -> int | None:
        try:
            return (await describe_quorum(self.quorum.address(node_id), timeout_ms=2000)).leader_epoch
        except (QuorumError, TransportError, OSError):
            return None

    @property
    def first_round_pending(self) -> bool:
        """Whether some fault kind has not run yet."""
        return not self._first_round or bool(self._first_round_left)

    async def one_fault(self, leader: int | None) -> str:
        """Pick a fault (aimed at the leader half the time), inject it, hold it, heal it."""
        target = leader if leader is not None and self.rng.random() < 0.5 else self.rng.choice(self.ids)
        kinds = ["kill", "torn", "pause", "partition", "flood", "hostile", "tenant", "storm"]
        # Every kind once first (in a random order), so that even a short run has each; then at random.
        if not self._first_round:
            self._first_round = self.rng.sample(kinds, len(kinds))
            self._first_round_left = list(self._first_round)
        kind = self._first_round_left.pop(0) if self._first_round_left else self.rng.choice(kinds)
        hold = self.rng.uniform(1.0, 5.0)
        if kind == "kill":
            await self.kill_and_restart(target, hold)
        elif kind == "torn":
            await self.torn_tail_and_restart(target, hold)
        elif kind == "pause":
            await self.pause(target, hold)
        elif kind == "partition":
            await self.partition(target, hold)
        elif kind == "flood":
            await self.flood(target, hold)
        elif kind == "tenant":
            await self.hostile_tenant(target, hold)
        elif kind == "storm":
            target = await self.storm_heartbeats(target, hold)
        else:
            await self.hostile_raft(target, hold)
        return f"{kind} node {target} for {hold:.1f} s"


@asynccontextmanager
async def nemesis_cluster(base_dir, *, seed: int, properties: dict | None = None):
    cluster = NemesisCluster(base_dir, properties=properties, rng=random.Random(seed))
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()
