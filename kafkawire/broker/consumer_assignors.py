"""The server-side assignors of KIP-848 consumer groups, as Kafka 4.3.1 names them
(``group.consumer.assignors``, the first is the default): ``uniform`` (UniformAssignor) and
``range`` (RangeAssignor).

    target = ASSIGNORS["uniform"](members, topics, current)

``members`` is ``{member id: MemberSpec}``, ``topics`` ``{topic id: partition count}`` (the
subscribed topics that exist), ``current`` the current target ``{member id: {topic id:
set(partitions)}}``; the answer is the new target for every member (an empty dict for a member
without partitions).

uniform, every member subscribing to the same topics (Kafka's homogeneous case): each member
keeps what it had up to its quota (``partitions // members``, one more for the first
``partitions % members`` members that can use it), and the rest go to the members below quota:
balanced within one partition and sticky, as UniformHomogeneousAssignmentBuilder is. With
different subscriptions kafkawire keeps each member's partitions it still subscribes to, gives
each unowned partition to the subscriber with fewest partitions, then moves partitions from the
fullest subscriber to emptier ones until no move narrows the gap (Kafka's heterogeneous builder
orders its moves differently; both are balanced and sticky, the exact result may differ).

range: per topic, the subscribers sorted by instance id (static members first) then member id
take contiguous ranges, the first ``partitions % subscribers`` one partition more (Kafka's
RangeAssignor, co-partitioned when every member subscribes to the same topics of equal size).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

__all__ = ["MemberSpec", "ASSIGNORS", "uniform", "range_assignor"]


@dataclass(frozen=True)
class MemberSpec:
    instance_id: str | None
    topics: frozenset            # the subscribed topic ids that exist


def _add(target: dict, member_id: str, topic_id, partition: int) -> None:
    target[member_id].setdefault(topic_id, set()).add(partition)


def uniform(members: dict, topics: dict, current: dict) -> dict:
    if not members:
        return {}
    subscriptions = {spec.topics for spec in members.values()}
    if len(subscriptions) == 1:
        return _uniform_homogeneous(sorted(members), next(iter(subscriptions)) & set(topics), topics, current)
    return _uniform_heterogeneous(members, topics, current)


def _uniform_homogeneous(member_ids: list, subscribed: set, topics: dict, current: dict) -> dict:
    target: dict = {m: {} for m in member_ids}
    if not subscribed:
        return target
    held = {(t, p) for m in member_ids for t, ps in current.get(m, {}).items() for p in ps}
    unassigned = [(t, p) for t in sorted(subscribed, key=str) for p in range(topics[t]) if (t, p) not in held]
    total = sum(topics[t] for t in subscribed)
    minimum, extra = divmod(total, len(member_ids))
    room = []
    for index, member_id in enumerate(member_ids):
        quota = minimum + (1 if extra > 0 else 0)
        has_extra = extra > 0
        for topic_id in sorted(current.get(member_id, {}), key=str):
            if topic_id not in subscribed:
                continue
            for partition in sorted(current[member_id][topic_id]):
                if partition >= topics[topic_id]:
                    continue
                if quota > 0:
                    quota -= 1
                    _add(target, member_id, topic_id, partition)
                else:
                    unassigned.append((topic_id, partition))
        # The extra partition is left to a later member unless too few members remain to take them all.
        if quota > 0 and has_extra and len(member_ids) - index > extra:
            quota -= 1
            has_extra = False
        if has_extra:
            extra -= 1
        if quota > 0:
            room.append((member_id, quota))
    position = 0
    for member_id, quota in room:
        for topic_id, partition in unassigned[position:position + quota]:
            _add(target, member_id, topic_id, partition)
        position += quota
    return target


def _uniform_heterogeneous(members: dict, topics: dict, current: dict) -> dict:
    target: dict = {m: {} for m in members}
    subscribers: dict = {}
    for member_id in sorted(members):
        for topic_id in members[member_id].topics:
            if topic_id in topics:
                subscribers.setdefault(topic_id, []).append(member_id)
    counts = _Counts(members, subscribers)
    owner: dict = {}
    for member_id in sorted(members):
        for topic_id, partitions in current.get(member_id, {}).items():
            if topic_id not in members[member_id].topics or topic_id not in topics:
                continue
            for partition in partitions:
                if partition < topics[topic_id] and (topic_id, partition) not in owner:
                    owner[(topic_id, partition)] = member_id
                    counts.add(member_id, 1)
    for topic_id in sorted(subscribers, key=lambda t: (len(subscribers[t]), str(t))):
        for partition in range(topics[topic_id]):
            if (topic_id, partition) not in owner:
                chosen = counts.emptiest(topic_id)
                owner[(topic_id, partition)] = chosen
                counts.add(chosen, 1)
    _balance(owner, counts)
    for (topic_id, partition), member_id in owner.items():
        _add(target, member_id, topic_id, partition)
    return target


class _Counts:
    """Each member's partition count, and per topic its subscriber with the fewest (ties: the
    smallest id) from a heap whose stale entries are dropped when met: log-time picks."""

    def __init__(self, members: dict, subscribers: dict):
        self.count = dict.fromkeys(members, 0)
        self.topics_of = {m: [t for t in spec.topics if t in subscribers] for m, spec in members.items()}
        self.heaps = {t: [(0, m) for m in ms] for t, ms in subscribers.items()}
        for heap in self.heaps.values():
            heapq.heapify(heap)

    def add(self, member_id: str, delta: int) -> None:
        self.count[member_id] += delta
        for topic_id in self.topics_of[member_id]:
            heapq.heappush(self.heaps[topic_id], (self.count[member_id], member_id))

    def emptiest(self, topic_id) -> str:
        heap = self.heaps[topic_id]
        while heap[0][0] != self.count[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][1]


def _balance(owner: dict, counts: _Counts) -> None:
    """Move partitions to a subscriber holding at least two fewer, fullest members first, while
    one such move exists."""
    held: dict = {}
    for key, member_id in owner.items():
        held.setdefault(member_id, []).append(key)
    moved = True
    while moved:
        moved = False
        for holder in sorted(held, key=lambda m: (-counts.count[m], m)):
            keep = []
            for key in sorted(held[holder], key=lambda k: (str(k[0]), k[1])):
                taker = counts.emptiest(key[0])
                if counts.count[taker] + 1 < counts.count[holder]:
                    owner[key] = taker
                    held.setdefault(taker, []).append(key)
                    counts.add(holder, -1)
                    counts.add(taker, 1)
                    moved = True
                else:
                    keep.append(key)
            held[holder] = keep


def range_assignor(members: dict, topics: dict, current: dict) -> dict:
    order = sorted(members, key=lambda m: (members[m].instance_id is None, members[m].instance_id or "", m))
    target: dict = {m: {} for m in members}
    subscribers: dict = {}
    for member_id in order:
        for topic_id in members[member_id].topics:
            if topic_id in topics:
                subscribers.setdefault(topic_id, []).append(member_id)
    for topic_id, taking in subscribers.items():
        minimum, extra = divmod(topics[topic_id], len(taking))
        start = 0
        for index, member_id in enumerate(taking):
            end = start + minimum + (1 if index < extra else 0)
            if end > start:
                target[member_id][topic_id] = set(range(start, end))
            start = end
    return target


ASSIGNORS = {"uniform": uniform, "range": range_assignor}
