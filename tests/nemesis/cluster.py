"""A three-voter kafkawire quorum wired through cuttable proxies, and the faults the nemesis
injects into it.

The quorum is static (controller.quorum.voters, kraft.version 0). Each node's controller
listener has a PeerProxy in front of it (netsplit.py's: it tells the connecting node by the
client id of its first request), and every address one node learns of another goes through it:
controller.quorum.voters and .bootstrap.servers name the proxies, and each node advertises its
controller listener at its proxy's port, since a follower fetches from the endpoint the leader
announces, not from the voters' list (before this, a "cut" follower went on fetching from the
leader directly and a partition only stopped Vote and BeginQuorumEpoch). Cutting a node from
every other one, both ways, isolates it as a network partition would, while clients still reach
every node directly (a partitioned leader can be asked to write, and must not acknowledge
anything it cannot commit). Each partition also asks the leader of the time whether a fetch
crossed the cut (``cut_fetch_leaks``).
"""
from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections import Counter
from contextlib import asynccontextmanager

from kafkawire.net.client import TransportError
from kafkawire.raft.node.local_quorum import LocalQuorum, QuorumError, describe_quorum, free_ports

from .hostile import fetch_flood, send_hostile_raft_requests
from .netsplit import PeerProxy
from .storm import heartbeat_storm
from .tenant import TenantTally, hostile_tenant_round, tenant_properties


BROKER_METADATA_VERSION = 99   # the highest metadata.version the nemesis's brokers say they support
# A fetch the leader records this long after a cut began crossed the cut: one already on its way
# when the proxy dropped the connection is allowed for, however loaded the machine.
CUT_FETCH_GRACE_MS = 1000


class NemesisCluster:
    def __init__(self, base_dir, *, voters: int = 3, properties: dict | None = None, rng: random.Random):
        self.quorum = LocalQuorum(base_dir, voters=voters, properties=properties)
        self.rng = rng
        self.proxies: dict[int, PeerProxy] = {}   # node -> the proxy in front of its controller listener
        self.cut_fetch_checks = 0                 # partitions whose leader was asked late enough in the cut
        self.cut_fetch_leaks: list[str] = []      # a fetch the leader took across a cut
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
            self.proxies[i] = PeerProxy(q.ports[i])
            await self.proxies[i].start()
        q.format(mode="static")
        voters = ",".join(f"{j}@127.0.0.1:{self.proxies[j].port}" for j in self.ids)
        bootstrap = ",".join(f"127.0.0.1:{self.proxies[j].port}" for j in self.ids)
        tenant = {key.replace(".", "_"): value for key, value in tenant_properties().items()}
        for i in self.ids:
            q.write_config(i, controller_quorum_voters=voters, controller_quorum_bootstrap_servers=bootstrap, **tenant,
                           listeners=f"CONTROLLER://127.0.0.1:{q.ports[i]},TENANT://127.0.0.1:{self.tenant_ports[i]}",
                           advertised_listeners=f"CONTROLLER://127.0.0.1:{self.proxies[i].port},"
                                                f"TENANT://127.0.0.1:{self.tenant_ports[i]}")
        q.start_all()

    async def stop(self) -> None:
        for i in list(self.stopped):
            self._signal(i, signal.SIGCONT)
        self.quorum.stop_all()
        for i in self.ids:
            self.quorum.kill(i)
        for proxy in self.proxies.values():
            await proxy.close()

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
        """No connection between ``node_id`` and any other node, either way, for ``cut_s``;
        meanwhile the leader of the cut's start is asked whether a fetch crossed it."""
        self.faults["partition"] += 1
        others = [i for i in self.ids if i != node_id]
        leader = await self._a_leader()
        cut_ms = time.time() * 1000
        for i in others:
            self.proxies[node_id].cut(i)
            self.proxies[i].cut(node_id)
        checked, leaks_before = False, len(self.cut_fetch_leaks)
        while time.time() * 1000 < cut_ms + cut_s * 1000:
            await asyncio.sleep(min(0.5, max(0.0, cut_ms / 1000 + cut_s - time.time())))
            if leader is not None and len(self.cut_fetch_leaks) == leaks_before \
                    and await self._checked_for_fetches_across(leader, node_id, cut_ms):   # (one leak a cut is enough)
                checked = True
        self.cut_fetch_checks += checked
        for i in others:
            self.proxies[node_id].heal(i)
            self.proxies[i].heal(node_id)

    async def _checked_for_fetches_across(self, leader: int, cut_node: int, cut_ms: float) -> bool:
        """Asks ``leader`` (the leader when the cut began) for its voters' last fetches and
        records one it took across the cut, if any; True when it still led and was asked late
        enough for a fetch across the cut to show. The fetches that count come from ``cut_node``
        if that is a follower, from anyone if the leader is the node cut. (A leader cut off steps
        down after its fetch timeout: from then on there is nothing to ask.)"""
        asked_ms = time.time() * 1000
        try:
            view = await describe_quorum(self.quorum.address(leader), timeout_ms=2000)
        except (QuorumError, TransportError, OSError):
            return False
        if view.leader_id != leader:
            return False
        across = [r for r in view.voters if r.replica_id != leader and (leader == cut_node or r.replica_id == cut_node)]
        for replica in across:
            if replica.last_fetch_timestamp > cut_ms + CUT_FETCH_GRACE_MS:
                self.cut_fetch_leaks.append(
                    f"leader {leader} took a fetch from {replica.replica_id} "
                    f"{replica.last_fetch_timestamp - cut_ms:.0f} ms into a cut of node {cut_node}")
        return asked_ms > cut_ms + CUT_FETCH_GRACE_MS

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
                                   self.tenant, node_log=self.quorum.log_path(node_id))
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
