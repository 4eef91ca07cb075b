"""The voter set and the quorum arithmetic that depends only on it.

A VoterSet is immutable: a membership change (KIP-853) makes a new one, and the control
record history (control.py) keeps each set at the offset of the VotersRecord that made it.
The functions at the bottom are pure quorum arithmetic, tested against brute force.
"""
from __future__ import annotations

from dataclasses import dataclass

from .types import EMPTY_ENDPOINTS, Endpoints, ReplicaKey
from kafkawire.messages.voters_record import Endpoint, KRaftVersionFeature, Voter, VotersRecord


@dataclass(frozen=True, slots=True)
class VoterNode:
    key: ReplicaKey
    endpoints: Endpoints = EMPTY_ENDPOINTS
    # The kraft.version range the voter supports (VotersRecord.KRaftVersionFeature).
    min_kraft_version: int = 0
    max_kraft_version: int = 0

    def supports_kraft_version(self, version: int) -> bool:
        return self.min_kraft_version <= version <= self.max_kraft_version


@dataclass(frozen=True, slots=True)
class VoterSet:
    nodes: tuple[VoterNode, ...]

    @classmethod
    def of(cls, nodes) -> VoterSet:
        nodes = tuple(sorted(nodes, key=lambda n: n.key.id))
        ids = [n.key.id for n in nodes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"a voter set cannot hold the same node id twice: {ids}")
        return cls(nodes)

    @classmethod
    def static(cls, voters: dict[int, Endpoints]) -> VoterSet:
        """controller.quorum.voters (kraft.version 0): ids and endpoints, no directory ids."""
        return cls.of(VoterNode(ReplicaKey(i), e) for i, e in voters.items())

    # --- queries ----------------------------------------------------------------------------
    @property
    def ids(self) -> frozenset[int]:
        return frozenset(n.key.id for n in self.nodes)

    @property
    def keys(self) -> tuple[ReplicaKey, ...]:
        return tuple(n.key for n in self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self):
        return iter(self.nodes)

    def node(self, node_id: int) -> VoterNode | None:
        for n in self.nodes:
            if n.key.id == node_id:
                return n
        return None

    def is_voter(self, key: ReplicaKey) -> bool:
        """Kafka's VoterSet.isVoter: the id is a voter and the directory ids agree (an unknown
        directory id on either side agrees with anything)."""
        node = self.node(key.id)
        return node is not None and node.key.matches(key)

    def is_only_voter(self, key: ReplicaKey) -> bool:
        return len(self.nodes) == 1 and self.is_voter(key)

    def endpoints(self, node_id: int) -> Endpoints:
        node = self.node(node_id)
        return node.endpoints if node else EMPTY_ENDPOINTS

    def majority_size(self) -> int:
        return majority_size(len(self.nodes))

    # --- changes (KIP-853: one voter at a time) ---------------------------------------------
    def add(self, node: VoterNode) -> VoterSet:
        if self.node(node.key.id) is not None:
            raise ValueError(f"node {node.key.id} is already a voter")
        return VoterSet.of(self.nodes + (node,))

    def remove(self, key: ReplicaKey) -> VoterSet:
        if not self.is_voter(key):
            raise ValueError(f"{key} is not a voter")
        return VoterSet.of(n for n in self.nodes if n.key.id != key.id)

    def update(self, node: VoterNode) -> VoterSet:
        return VoterSet.of(node if n.key.id == node.key.id else n for n in self.nodes)

    def differs_by_at_most_one(self, other: VoterSet) -> bool:
        """KIP-853's safety rule for a change: the two majorities must overlap."""
        return len(self.ids ^ other.ids) <= 1

    def __str__(self) -> str:
        return "{" + ", ".join(str(n.key) for n in self.nodes) + "}"

    # --- the VotersRecord control record ----------------------------------------------------
    @classmethod
    def from_voters_record(cls, record) -> VoterSet:
        nodes = []
        for v in record.voters:
            endpoints = Endpoints(tuple((e.name, e.host, e.port) for e in v.endpoints))
            feature = v.k_raft_version_feature
            nodes.append(VoterNode(ReplicaKey.of(v.voter_id, v.voter_directory_id), endpoints,
                                   feature.min_supported_version, feature.max_supported_version))
        return cls.of(nodes)

    def to_voters_record(self):
        return VotersRecord(version=0, voters=[
            Voter(voter_id=n.key.id, voter_directory_id=n.key.wire_directory_id,
                  endpoints=[Endpoint(name=name, host=host, port=port) for name, host, port in n.endpoints.listeners],
                  k_raft_version_feature=KRaftVersionFeature(min_supported_version=n.min_kraft_version,
                                                             max_supported_version=n.max_kraft_version))
            for n in self.nodes])


def majority_size(voter_count: int) -> int:
    return voter_count // 2 + 1


def majority_offset(offsets: list[int]) -> int | None:
    """The largest offset that a majority of the given voters have reached, or None if there
    are no voters. The leader's HW candidate, before the own-epoch rule (leader.py)."""
    if not offsets:
        return None
    ordered = sorted(offsets, reverse=True)
    return ordered[len(ordered) // 2]
