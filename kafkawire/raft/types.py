"""Small value types shared by every part of the raft core.

They mirror Kafka's raft value classes (ReplicaKey, OffsetAndEpoch, LeaderAndEpoch, Endpoints,
ElectionState) so that a reader of Kafka's code finds the same names here.
"""
from __future__ import annotations

import base64

import uuid
from dataclasses import dataclass, field

# Kafka's Uuid.ZERO_UUID: "no directory id" on the wire.
NO_DIRECTORY_ID = uuid.UUID(int=0)
NO_LEADER = -1
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
# The topic id Kafka gives __cluster_metadata (Uuid.METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ").
METADATA_TOPIC_ID = uuid.UUID(int=1)


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A replica: its node id and, since KIP-853, the id of its metadata log directory.

    ``directory_id`` None means "unknown" (kraft.version 0, or a peer that did not send one);
    Kafka writes that as the zero uuid on the wire.
    """

    id: int
    directory_id: uuid.UUID | None = None

    @classmethod
    def of(cls, node_id: int, directory_id: uuid.UUID | None) -> ReplicaKey:
        return cls(node_id, None if directory_id in (None, NO_DIRECTORY_ID) else directory_id)

    @property
    def wire_directory_id(self) -> uuid.UUID:
        return self.directory_id or NO_DIRECTORY_ID

    def matches(self, other: ReplicaKey) -> bool:
        """The same replica, where an unknown directory id matches any (Kafka's voter key check)."""
        return self.id == other.id and (self.directory_id is None or other.directory_id is None
                                        or self.directory_id == other.directory_id)

    def __str__(self) -> str:
        if self.directory_id is None:
            return str(self.id)
        # Kafka's Uuid.toString (URL-safe base64, no padding), as the tools print directory ids.
        directory = base64.urlsafe_b64encode(self.directory_id.bytes).decode("ascii").rstrip("=")
        return f"{self.id}:{directory}"


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """A log position: ordered by epoch first, then offset (the raft up-to-date rule)."""

    epoch: int
    offset: int

    def __str__(self) -> str:
        return f"(epoch={self.epoch}, offset={self.offset})"


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int | None
    epoch: int

    def __str__(self) -> str:
        return f"leader={self.leader_id if self.leader_id is not None else 'none'} epoch={self.epoch}"


@dataclass(frozen=True, slots=True)
class Endpoints:
    """A node's listeners: listener name -> (host, port), in the order the node gave them."""

    listeners: tuple[tuple[str, str, int], ...] = ()

    @classmethod
    def of(cls, mapping: dict[str, tuple[str, int]]) -> Endpoints:
        return cls(tuple((name, host, port) for name, (host, port) in mapping.items()))

    def address(self, listener: str) -> tuple[str, int] | None:
        for name, host, port in self.listeners:
            if name == listener:
                return host, port
        return None

    def __len__(self) -> int:
        return len(self.listeners)

    def __bool__(self) -> bool:
        return bool(self.listeners)

    def __str__(self) -> str:
        return ",".join(f"{name}://{host}:{port}" for name, host, port in self.listeners)


EMPTY_ENDPOINTS = Endpoints()


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What quorum-state persists: the epoch, the leader if known, the vote if cast.

    Factories name the meaning, as Kafka's do: ``elected``, ``voted``, ``unknown``.
    """

    epoch: int
    leader_id: int | None = None
    voted_key: ReplicaKey | None = None
    voters: frozenset[int] = field(default_factory=frozenset)   # only written at data version 0

    @classmethod
    def elected(cls, epoch: int, leader_id: int, voted_key: ReplicaKey | None = None) -> ElectionState:
        return cls(epoch, leader_id, voted_key)

    @classmethod
    def voted(cls, epoch: int, voted_key: ReplicaKey) -> ElectionState:
        return cls(epoch, None, voted_key)

    @classmethod
    def unknown(cls, epoch: int) -> ElectionState:
        return cls(epoch)

    def is_leader(self, node_id: int) -> bool:
        return self.leader_id == node_id

    def __str__(self) -> str:
        parts = [f"epoch={self.epoch}"]
        if self.leader_id is not None:
            parts.append(f"leader={self.leader_id}")
        if self.voted_key is not None:
            parts.append(f"voted={self.voted_key}")
        return "Election(" + ", ".join(parts) + ")"
