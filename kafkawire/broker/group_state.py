"""A classic consumer group's state, as Kafka 4.3.1's ClassicGroup and ClassicGroupMember keep it:
the states and their allowed transitions, the members with their protocols, the members waiting
for a JoinGroup or SyncGroup answer, the pending members of KIP-394 and the generation.

No I/O and no clocks: a parked JoinGroup or SyncGroup is a ``respond`` callable the member holds
until the coordinator (kafkawire.broker.group_coordinator) answers it; timers are the
coordinator's caller's.

    group = ClassicGroup("orders-app", now_ms=0)
    group.add(Member("m-1", client_id="c", ...), respond=answers.append)
    group.transition_to(PREPARING_REBALANCE, now_ms)
"""
from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import Callable

from kafkawire.protocol.error_codes import Errors

__all__ = ["ClassicGroup", "Member", "EMPTY", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE", "DEAD",
           "InvalidTransition"]

EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD = (
    "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
# ClassicGroupState: the states a group may enter each state from.
VALID_PREVIOUS_STATES = {
    EMPTY: frozenset((PREPARING_REBALANCE,)),
    PREPARING_REBALANCE: frozenset((STABLE, COMPLETING_REBALANCE, EMPTY)),
    COMPLETING_REBALANCE: frozenset((PREPARING_REBALANCE,)),
    STABLE: frozenset((COMPLETING_REBALANCE,)),
    DEAD: frozenset((STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD)),
}

Respond = Callable[[object], None]
CONSUMER_PROTOCOL_TYPE = "consumer"
_INT16, _INT32 = struct.Struct(">h"), struct.Struct(">i")


class InvalidTransition(RuntimeError):
    """A transition ClassicGroupState does not allow: a bug in the coordinator, never the client's."""


@dataclass(eq=False)
class Member:
    """A member of a classic group: its protocols are (name, metadata) pairs in its order of preference."""
    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list
    group_instance_id: str | None = None
    assignment: bytes = b""
    join_waiter: Respond | None = None
    sync_waiter: Respond | None = None
    is_new: bool = False

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def has_satisfied_heartbeat(self) -> bool:
        """A member waiting for a rebalance's answer counts as alive; a new one never does."""
        return not self.is_new and (self.awaiting_join or self.awaiting_sync)

    def matches(self, protocols: list) -> bool:
        return protocols == self.protocols

    def metadata(self, protocol_name: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        return b""

    def vote(self, candidates: set) -> str:
        """The first of its protocols, in its order, that every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise InvalidTransition(f"member {self.member_id} supports none of {sorted(candidates)}")


def protocol_names(protocols: list) -> set:
    return {name for name, _ in protocols}


def subscription_topics(metadata: bytes) -> list:
    """The topics of a ConsumerProtocolSubscription, read as its version 0, the prefix of every
    version (as Kafka's coordinator reads it); raises ValueError on bytes that do not decode."""
    try:
        _INT16.unpack_from(metadata, 0)
        count, = _INT32.unpack_from(metadata, 2)
        if count < 0 or count > len(metadata):
            raise ValueError(f"{count} topics")
        pos, topics = 6, []
        for _ in range(count):
            size, = _INT16.unpack_from(metadata, pos)
            if size < 0 or pos + 2 + size > len(metadata):
                raise ValueError("a topic name past the end")
            topics.append(metadata[pos + 2:pos + 2 + size].decode("utf-8"))
            pos += 2 + size
        return topics
    except (struct.error, UnicodeDecodeError) as exc:
        raise ValueError(str(exc)) from None


@dataclass(eq=False)
class ClassicGroup:
    """A classic group, its members by id (insertion ordered, as Kafka's leader re-election takes
    the first remaining member) and its bookkeeping of who has joined and synced."""
    group_id: str
    now_ms: int
    state: str = EMPTY
    previous_state: str = DEAD
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict = field(default_factory=dict)
    static_members: dict = field(default_factory=dict)        # group instance id -> member id
    pending_join_members: set = field(default_factory=set)
    pending_sync_members: set = field(default_factory=set)
    supported_protocols: dict = field(default_factory=dict)   # protocol name -> members supporting it
    awaiting_join_count: int = 0
    new_member_added: bool = False
    state_timestamp_ms: int = -1

    def __post_init__(self):
        if self.state_timestamp_ms < 0:
            self.state_timestamp_ms = self.now_ms

    # -- states --

    def transition_to(self, state: str, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise InvalidTransition(f"group {self.group_id} cannot go from {self.state} to {state}")
        self.previous_state, self.state = self.state, state
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[PREPARING_REBALANCE]

    def is_empty(self) -> bool:
        return self.state == EMPTY

    # -- members --

    def add(self, member: Member, respond: Respond | None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, 1)
        member.join_waiter = respond
        if member.awaiting_join:
            self.awaiting_join_count += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member, -1)
            if member.awaiting_join:
                self.awaiting_join_count -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(self, member: Member, protocols: list, rebalance_timeout_ms: int, session_timeout_ms: int,
                      respond: Respond | None) -> None:
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if respond is not None and not member.awaiting_join:
            self.awaiting_join_count += 1
        elif respond is None and member.awaiting_join:
            self.awaiting_join_count -= 1
        member.join_waiter = respond

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> tuple[Member, Member]:
        """KIP-345: the member of ``instance_id`` takes ``new_id``, keeping its place (leadership
        included), protocols, timeouts and assignment; (the old member, the new one). The old
        one's parked answers are the caller's to fence."""
        old = self.members.pop(old_id)
        new = Member(new_id, client_id=old.client_id, client_host=old.client_host,
                     rebalance_timeout_ms=old.rebalance_timeout_ms, session_timeout_ms=old.session_timeout_ms,
                     protocol_type=old.protocol_type, protocols=old.protocols, group_instance_id=instance_id,
                     assignment=old.assignment)
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return old, new

    def validate_member(self, member_id: str, instance_id: str | None) -> int:
        """ClassicGroup.validateMember: UNKNOWN_MEMBER_ID for an unknown id or instance id,
        FENCED_INSTANCE_ID when the instance id now belongs to another member id, else NONE."""
        if instance_id is not None:
            current = self.static_members.get(instance_id)
            if current is None:
                return Errors.UNKNOWN_MEMBER_ID
            if current != member_id:
                return Errors.FENCED_INSTANCE_ID
        return Errors.NONE if member_id in self.members else Errors.UNKNOWN_MEMBER_ID

    def _count_protocols(self, member: Member, delta: int) -> None:
        for name in protocol_names(member.protocols):
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + delta

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id if group_instance_id is not None else client_id}-{uuid.uuid4()}"

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.awaiting_join_count and not self.pending_join_members

    def not_yet_rejoined_dynamic(self) -> list:
        """The members a join phase's end drops: a static member stays until its session ends."""
        return [m for m in self.members.values() if not m.awaiting_join and m.group_instance_id is None]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else take the first member that did; False if none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # -- protocols --

    def supports_protocols(self, protocol_type: str, protocols: list) -> bool:
        names = protocol_names(protocols)
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        count = len(self.members)
        return self.protocol_type == protocol_type and any(self.supported_protocols.get(n, 0) == count for n in names)

    def select_protocol(self) -> str:
        """The protocol every member supports that most members vote for (ties: the first counted)."""
        count = len(self.members)
        candidates = {name for name, n in self.supported_protocols.items() if n == count}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=votes.get)

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def subscribed_topics(self) -> set | None:
        """ClassicGroup.computeSubscribedTopics: the topics the members subscribe to (consumer
        protocol only), None when unknown (another protocol, or a subscription that does not decode)."""
        if not self.uses_consumer_protocol():
            return None
        topics: set = set()
        try:
            for member in self.members.values():
                topics.update(subscription_topics(member.metadata(self.protocol_name)))
        except ValueError:
            return None
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        subscribed = self.subscribed_topics()
        return self.uses_consumer_protocol() if subscribed is None else topic in subscribed

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(EMPTY, now_ms)
        self.pending_sync_members.clear()

    # -- answering parked requests --

    def complete_join(self, member: Member, response) -> bool:
        if not member.awaiting_join:
            return False
        respond, member.join_waiter = member.join_waiter, None
        self.awaiting_join_count -= 1
        respond(response)
        return True

    @staticmethod
    def complete_sync(member: Member, response) -> bool:
        if not member.awaiting_sync:
            return False
        respond, member.sync_waiter = member.sync_waiter, None
        respond(response)
        return True
