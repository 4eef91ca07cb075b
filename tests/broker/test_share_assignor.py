"""Kafka 4.3.1's simple share-group assignor (kafkawire/broker/share_assignor.py), in process:
sticky to the current target, each partition shared by ceil(members / partitions) members, the
homogeneous builder (one subscription) sharing all partitions together and the heterogeneous one
topic by topic."""
from __future__ import annotations

import math
import random
import uuid

from kafkawire.broker.consumer_coordinator import TopicsView
from kafkawire.broker.share_assignor import simple_assign

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
VIEW = TopicsView.of([("orders", T1, 4), ("audit", T2, 3)])


def counts(targets, topic):
    per_partition: dict = {}
    for target in targets.values():
        for p in target.get(topic, ()):
            per_partition[p] = per_partition.get(p, 0) + 1
    return per_partition


def test_a_joining_member_takes_partitions_only_from_those_above_their_share():
    old = simple_assign({"a": ("orders",), "b": ("orders",)}, VIEW)
    assert old == {"a": {T1: frozenset({0, 2})}, "b": {T1: frozenset({1, 3})}}      # a round over the members
    new = simple_assign({"a": ("orders",), "b": ("orders",), "c": ("orders",)}, VIEW, old=old)
    # sharing 1, desired counts 2, 1, 1 (Kafka's ceil steps of 4/3): a keeps both, b gives back
    # its first partition, c takes it
    assert new == {"a": {T1: frozenset({0, 2})}, "b": {T1: frozenset({3})}, "c": {T1: frozenset({1})}}
    left = simple_assign({"b": ("orders",), "c": ("orders",)}, VIEW, old=new)
    assert left["b"][T1] >= {3} and left["c"][T1] >= {1}                          # nobody loses what it kept
    assert sorted(counts(left, T1).items()) == [(0, 1), (1, 1), (2, 1), (3, 1)]


def test_members_outnumbering_partitions_share_each_and_a_member_keeps_its_partition():
    old = {"m0": {T2: frozenset({2})}}
    members = {f"m{i}": ("audit",) for i in range(7)}
    targets = simple_assign(members, VIEW, old=old)
    assert counts(targets, T2) == {0: 3, 1: 3, 2: 3}                    # ceil(7 / 3) members each
    assert 2 in targets["m0"][T2]
    assert sorted(len(t[T2]) for t in targets.values()) == [1, 1, 1, 1, 1, 2, 2]


def test_different_subscriptions_share_each_topic_among_its_subscribers():
    targets = simple_assign({"a": ("orders",), "b": ("orders", "audit"), "c": ("audit",)}, VIEW)
    assert counts(targets, T1) == {0: 1, 1: 1, 2: 1, 3: 1} and counts(targets, T2) == {0: 1, 1: 1, 2: 1}
    assert not targets["a"].get(T2) and not targets["c"].get(T1)
    unsubscribed = simple_assign({"a": ("orders",), "b": ("audit",), "c": ("audit",)}, VIEW, old=targets)
    assert not unsubscribed["b"].get(T1) and counts(unsubscribed, T1) == {0: 1, 1: 1, 2: 1, 3: 1}
    assert unsubscribed["c"][T2] >= targets["c"][T2]                     # c keeps what it had
    only_assignable = simple_assign({"a": ("orders",)}, VIEW, assignable={T1: {1, 3}})
    assert only_assignable == {"a": {T1: frozenset({1, 3})}}
    assert simple_assign({"a": ("missing",)}, VIEW) == {"a": {}} and simple_assign({}, VIEW) == {}


def test_random_histories_stay_within_kafkas_bounds():
    """Whatever the history: no partition shared by more than ceil(members / partitions) members
    (all the group's partitions when every member subscribes to the same topics, else the
    topic's among its subscribers); from nothing, every partition shared by exactly that many."""
    rng = random.Random(29)
    for _ in range(300):
        members = {f"m{i}": tuple(rng.sample(["orders", "audit"], rng.randint(1, 2)))
                   for i in range(rng.randint(1, 9))}
        old = {m: {T1: frozenset(rng.sample(range(4), rng.randint(0, 4)))} for m in members if rng.random() < 0.5}
        for start in ({}, old):
            targets = simple_assign(members, VIEW, old=start)
            same = len({frozenset(names) for names in members.values()}) == 1
            together = sum(4 if name == "orders" else 3 for name in next(iter(members.values())))
            for topic, name, partitions in ((T1, "orders", 4), (T2, "audit", 3)):
                subscribers = [m for m, names in members.items() if name in names]
                if not subscribers:
                    continue
                sharing = math.ceil(len(subscribers) / (together if same else partitions))
                shared = counts(targets, topic)
                assert all(n <= sharing for n in shared.values()), (members, start, targets)
                if not start:
                    assert shared == {p: sharing for p in range(partitions)}, (members, targets)
