"""Membership changes in a simulation: an operator with kafka-metadata-quorum and
kafka-features (AddRaftVoter, RemoveRaftVoter, the kraft.version upgrade) and disks that die
and come back empty under the same node id (KIP-853's disk failure recovery).

A mixin of Simulation: it uses the simulation's clock, random stream, nodes and ``_step``.
"""
from __future__ import annotations

import dataclasses
import random
import uuid
from collections import Counter
from typing import TYPE_CHECKING

from kafkawire.messages.update_features_request import FeatureUpdateKey, UpdateFeaturesRequest
from kafkawire.protocol.apis import api_table
from kafkawire.raft.io import RequestReceived

from .node import LISTENER, SimNode, address_of
from .store import MemoryLogStore
from kafkawire.messages import add_raft_voter_request as add_req, remove_raft_voter_request as rm_req

if TYPE_CHECKING:
    from .world import SimSettings


class MembershipChanges:
    # What the mixin uses of Simulation, the class it is mixed into:
    settings: SimSettings
    rng: random.Random
    now: int
    nodes: dict[int, SimNode]
    stats: Counter
    faults_enabled: bool

    if TYPE_CHECKING:
        def log(self, line: str) -> None: ...
        def _push(self, time: int, kind: str, *data: object) -> None: ...
        def _step(self, node: SimNode, event: object) -> None: ...
        def leaders(self) -> list[SimNode]: ...

    def _on_admin(self) -> None:
        if self.faults_enabled:
            self.admin_change()
        self._push(self.now + max(1, int(self.rng.expovariate(1.0 / self.settings.admin_every_ms))), "admin")

    def admin_change(self, kind: str | None = None, node_id: int | None = None) -> None:
        """Ask a leader to add an observer as a voter, remove a voter, or replace a node's
        disk (same id, new directory id: an auto-joining replica must evict its old self); on
        a cluster still at kraft.version 0, mostly to upgrade it to 1 (`kafka-features upgrade
        --feature kraft.version=1`)."""
        leaders = self.leaders()
        if not leaders:
            return
        leader = self.rng.choice(leaders)
        voters = leader.running.voters()
        kinds = ["add", "remove", "replace_disk"]
        if leader.running.kraft_version() < 1:
            kinds += ["upgrade"] * 3
        kind = kind or self.rng.choice(kinds)
        if kind == "upgrade":
            self.admin_request(leader, kraft_version_upgrade_request(), "kraft.version=1")
            return
        if kind == "add":
            candidates = [n for n in self.nodes.values() if n.alive and voters.node(n.node_id) is None
                          and n.config.directory_id is not None and n.config.can_become_voter]
            if not candidates:
                return
            node = self.rng.choice(candidates) if node_id is None else self.nodes[node_id]
            if node.config.directory_id is None:
                raise ValueError(f"node {node.node_id} has no directory id: AddRaftVoter names one (KIP-853)")
            body: add_req.AddRaftVoterRequest | rm_req.RemoveRaftVoterRequest = add_req.AddRaftVoterRequest(
                cluster_id="simcluster", timeout_ms=10_000, voter_id=node.node_id,
                voter_directory_id=node.config.directory_id,
                listeners=[add_req.Listener(name=LISTENER, host=address_of(node.node_id)[0],
                                            port=address_of(node.node_id)[1])])
        elif kind == "remove":
            if len(voters) <= 1:
                return
            if node_id is None:
                # Random runs never remove the leader itself: if it crashes before that removal
                # commits, it restarts as an observer of the uncommitted set while the remaining
                # voters may lack the record and cannot win its vote (KIP-853 applies voter sets
                # uncommitted); the quiet named scenario "remove_leader" covers that path.
                others = [v for v in voters if v.key.id != leader.node_id]
                if not others:
                    return
                victim = self.rng.choice(others)
            else:
                victim = voters.node(node_id)
            if not self._keeps_majority(voters.remove(victim.key)):
                return
            body = rm_req.RemoveRaftVoterRequest(cluster_id="simcluster", voter_id=victim.key.id,
                                                 voter_directory_id=victim.key.wire_directory_id)
        else:
            if self.settings.kraft_version == 0 and not self._upgrade_reached_every_static_voter():
                return
            node = self.rng.choice(list(self.nodes.values())) if node_id is None else self.nodes[node_id]
            # The latest voter set may be uncommitted, and lost with the leader's log: the voter
            # set in force at the high watermark must keep an intact majority too. (Seed 1018021
            # replaced the leader's disk while its AddRaftVoter was uncommitted: the committed
            # {1, 3} was left with voter 3 alone, a quorum lost for good, in Kafka too.)
            committed = leader.running.control.voter_set_at((leader.running.high_watermark() or 0) - 1)
            if any(s.node(node.node_id) is not None and not self._keeps_majority(s, lost=node.node_id)
                   for s in (voters, committed)):
                return
            # An auto-joining observer's AddRaftVoter, with the directory id it has now, may be
            # in flight: once the leader appends it, the new set must keep an intact majority
            # too. (Seed 3300082 replaced observer 2's disk while its AddRaftVoter to the lone
            # voter 1 travelled; {1, 2} with the dead directory id could never elect again.)
            if node.config.auto_join and voters.node(node.node_id) is None \
                    and not self._keeps_majority_with(voters, node.node_id):
                return
            self.replace_disk(node)
            return
        self.admin_request(leader, body, str(body.voter_id))

    def admin_request(self, leader: SimNode, body, what: str) -> int:
        """Hand an admin client's request to ``leader`` at the highest version; the answer is
        counted by type and error (``admin_<Response>_<ERROR>``) and kept in
        ``admin_answers`` under the returned sequence number."""
        self._admin_seq = getattr(self, "_admin_seq", 0) + 1
        self.log(f"admin {self._admin_seq}: {type(body).__name__} {what} to leader {leader.node_id}")
        version = api_table()[body.API_KEY].max_version
        self._step(leader, RequestReceived(self.now, ("admin", self._admin_seq), version, body, "admin"))
        return self._admin_seq

    def _upgrade_reached_every_static_voter(self) -> bool:
        """When a disk may be replaced in a cluster formatted with controller.quorum.voters.

        A voter with a new disk has forgotten its log and its votes; only the directory ids of
        kraft.version 1 let the others tell it from its old self (a Vote for the old directory
        id gets INVALID_VOTER_KEY). A replica still counting the static voters (no directory
        ids) would ask it for a vote and could win with a log that lacks committed records. So
        the operator waits until every node configured with controller.quorum.voters is up and
        has committed the upgrade (as `kafka-metadata-quorum describe --replication` shows)."""
        static = [n for n in self.nodes.values()
                  if n.config.static_voters is not None and n.node_id in n.config.static_voters.ids]
        return all(n.alive and self._committed_kraft_version(n) >= 1 for n in static)

    @staticmethod
    def _committed_kraft_version(node: SimNode) -> int:
        hw = node.running.high_watermark()
        return node.running.control.kraft_version_at((hw or 0) - 1)

    def _keeps_majority(self, voters, lost: int | None = None) -> bool:
        """Whether the voters whose disks are intact (their directory id is the node's current
        one) would still form a majority. Losing the disks of a majority loses the quorum for
        good (KIP-853 leaves that to an operator), which is not what the runs test."""
        intact = sum(1 for v in voters if v.key.id != lost and v.key.id in self.nodes
                     and v.key.directory_id in (None, self.nodes[v.key.id].config.directory_id))
        return intact >= voters.majority_size()

    def _keeps_majority_with(self, voters, joining: int) -> bool:
        """Whether ``voters`` plus ``joining`` would keep an intact majority without it."""
        intact = sum(1 for v in voters if v.key.id != joining and v.key.id in self.nodes
                     and v.key.directory_id in (None, self.nodes[v.key.id].config.directory_id))
        return intact >= (len(voters) + 1) // 2 + 1

    def replace_disk(self, node: SimNode) -> None:
        """The node's disk died: same node id, an empty new directory (new directory id), and
        auto-join on so that it takes its place in the voter set again (KIP-853)."""
        if node.config.directory_id is None:
            return
        if node.alive:
            node.crash()
        new_directory = uuid.UUID(int=self.rng.getrandbits(128))
        voters = [n.node_id for n in self.nodes.values()]
        # The new disk is formatted for a dynamic quorum (no controller.quorum.voters): the
        # node learns the voters from the log, as an observer until it joins.
        node.config = dataclasses.replace(node.config, directory_id=new_directory, static_voters=None,
                                          auto_join=node.config.can_become_voter,
                                          bootstrap_servers=tuple(address_of(i) for i in voters if i != node.node_id))
        node.store = MemoryLogStore()
        self.stats["disk_replacements"] += 1
        self.log(f"{node.node_id}: disk replaced (new directory {str(new_directory)[:8]}), restart in 1000 ms")
        self._push(self.now + 1000, "restart", node.node_id)


def kraft_version_upgrade_request() -> UpdateFeaturesRequest:
    """What `kafka-features upgrade --feature kraft.version=1` sends; built here so that the
    simulator does not import the command line (tests/kraft checks it equals what
    tools/features.py builds)."""
    return UpdateFeaturesRequest(timeout_ms=10_000, validate_only=False, feature_updates=[
        FeatureUpdateKey(feature="kraft.version", max_version_level=1, upgrade_type=1)])      # 1: UPGRADE
