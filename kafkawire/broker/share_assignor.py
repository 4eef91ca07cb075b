"""Kafka 4.3.1's simple share-group assignor (SimpleAssignor), by its rules: sticky to the
group's current target assignment, each partition shared by ceil(members / partitions) members.

    targets = simple_assign({"m1": ("orders",), "m2": ("orders",)}, view, assignable, old_targets)

When every member subscribes to the same topics (SimpleHomogeneousAssignmentBuilder) the
partitions of all of them are shared together: each member's desired count is its part of
``sharing * partitions`` (Kafka's ceil steps over the members in order); else
(SimpleHeterogeneousAssignmentBuilder) each topic's partitions are shared so among its own
subscribers. Then, in Kafka's order: a member keeps the partitions it had that are still
assignable and subscribed, gives back those above its desired count, a partition held by more
than ``sharing`` members is given back by the first of them, and the partitions still short of
``sharing`` members go round the members short of their count (a round over them that gives
nothing ends the assigning, as Kafka's iterator does).

Where Kafka's order comes from its hash maps (member ids, topic ids, partitions of several
topics), kafkawire takes the members by id, the topics by name and the partitions by number, so
among equal choices the member or partition picked can differ from Kafka's; the counts do not.
A member's old partitions that are no longer assignable are dropped first (Kafka's builders
count them until they are revoked). Work: linear in members and partitions but for the last
step's rounds, O(partitions * members) at worst (members are at most group.share.max.size).
"""
from __future__ import annotations

import math

__all__ = ["simple_assign"]


def simple_assign(subscriptions: dict, view, assignable: dict | None = None, old: dict | None = None) -> dict:
    """``subscriptions``: member id -> its subscribed topic names; ``view``: the topics (a
    TopicsView, ``by_name``: name -> (topic id, partition count)); ``assignable``: {topic id:
    partitions} (None: all); ``old``: member id -> its current target ({topic id: partitions}).
    Each member's new target: {topic id: frozenset(partitions)}."""
    old = old or {}
    members = sorted(subscriptions)
    if not members:
        return {}

    def topic_ids(names) -> list:
        return [view.by_name[name][0] for name in sorted(names) if name in view.by_name]

    counts = dict(view.by_name.values())

    def partitions(topic_id) -> list[int]:
        return [p for p in range(counts[topic_id]) if assignable is None or p in assignable.get(topic_id, ())]
    kept = {i: {t: set(ps) for t, ps in old.get(m, {}).items()} for i, m in enumerate(members)}
    new: dict[int, dict] = {i: {} for i in range(len(members))}
    if len({frozenset(names) for names in subscriptions.values()}) == 1:
        topics = topic_ids(subscriptions[members[0]])
        _share(list(range(len(members))), [(t, p) for t in topics for p in partitions(t)], kept, new)
    else:
        subscribers: dict = {}
        for i, m in enumerate(members):
            for t in topic_ids(subscriptions[m]):
                subscribers.setdefault(t, []).append(i)
        names = {t: name for name, (t, _) in view.by_name.items()}
        for t in sorted(subscribers, key=lambda topic: names[topic]):
            _share(subscribers[t], [(t, p) for p in partitions(t)], kept, new, topic=t)
    return {m: {t: frozenset(ps) for t, ps in new[i].items() if ps} for i, m in enumerate(members)}


def _desired_counts(members: list[int], sharing: int, partitions: int) -> dict[int, int]:
    """Each member's part of ``sharing * partitions`` assignments, as Kafka spreads it (doubles)."""
    precise = sharing * partitions / len(members)
    return {i: math.ceil(precise * (k + 1)) - math.ceil(precise * k) for k, i in enumerate(members)}


def _share(members: list[int], targets: list[tuple], kept: dict, new: dict, topic=None) -> None:
    """One builder's pass: ``members`` (indices) share ``targets`` ((topic id, partition), in
    order), starting from ``kept`` (the members' old targets); the result added to ``new``.
    ``topic``: the heterogeneous builder's topic (only its partitions are considered)."""
    if not targets or not members:
        return
    sharing = -(-len(members) // len(targets))
    desired = _desired_counts(members, sharing, len(targets))
    by_partition: dict[tuple, dict] = {tp: {} for tp in targets}     # ordered sets of member indices
    by_member: dict[int, dict] = {}
    topic_order = {t: k for k, (t, _) in reversed(list(enumerate(targets)))}
    for i in sorted(kept):                                           # the partitions each member keeps
        for t in sorted(kept[i], key=lambda t: topic_order.get(t, len(targets))):
            if topic is not None and t != topic:
                continue
            for p in sorted(kept[i][t]):
                if (t, p) in by_partition:
                    by_partition[(t, p)][i] = None
                    by_member.setdefault(i, {})[(t, p)] = None
    for i, mine in by_member.items():                                # over their desired count: give back
        while len(mine) > desired.get(i, 0):
            tp = next(iter(mine))
            del mine[tp], by_partition[tp][i]
    for tp, holders in by_partition.items():                         # shared too widely: the first give back
        while len(holders) > sharing:
            i = next(iter(holders))
            del holders[i], by_member[i][tp]
    unfilled = [i for i in members if len(by_member.get(i, ())) < desired[i]]
    _assign_remaining(by_partition, by_member, unfilled, sharing, desired)
    for i, mine in by_member.items():
        for t, p in mine:
            new[i].setdefault(t, set()).add(p)


def _assign_remaining(by_partition: dict, by_member: dict, unfilled: list[int], sharing: int,
                      desired: dict) -> None:
    """assignRemainingPartitions: the partitions short of ``sharing`` members, in order, each
    given to the next members of a round over ``unfilled`` that do not hold it; a member at its
    desired count leaves the round; a whole round that gave nothing ends it."""
    at, gave_this_round = 0, False
    for tp, holders in by_partition.items():
        if not unfilled:
            return
        need = sharing - len(holders)
        while need > 0:
            if at >= len(unfilled):
                if not gave_this_round or not unfilled:
                    break
                at, gave_this_round = 0, False
            i = unfilled[at]
            at += 1
            if i in holders:
                continue
            holders[i] = None
            mine = by_member.setdefault(i, {})
            mine[tp] = None
            need -= 1
            gave_this_round = True
            if len(mine) >= desired[i]:
                at -= 1
                del unfilled[at]
