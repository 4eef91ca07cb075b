"""The server-side assignors of KIP-848 groups (kafkawire.broker.consumer_assignors): uniform is
balanced within one partition and sticky, as Kafka 4.3.1's UniformAssignor; range gives
contiguous ranges in member order, static members first, as its RangeAssignor.
"""
from __future__ import annotations

import uuid

import pytest

from kafkawire.broker.consumer_assignors import MemberSpec, range_assignor, uniform

A, B = uuid.UUID(int=10), uuid.UUID(int=11)


def specs(*members, topics=(A,), instance=None):
    return {m: MemberSpec(instance, frozenset(topics)) for m in members}


def sizes(target) -> dict:
    return {m: sum(len(ps) for ps in t.values()) for m, t in target.items()}


def every_partition_once(target, topics: dict) -> bool:
    owned = [(t, p) for parts in target.values() for t, ps in parts.items() for p in ps]
    return sorted(owned, key=str) == sorted(((t, p) for t, n in topics.items() for p in range(n)), key=str)


@pytest.mark.parametrize("members, partitions", [(1, 4), (3, 10), (4, 3), (5, 17)])
def test_uniform_is_balanced_within_one_partition(members, partitions):
    names = [f"m{i}" for i in range(members)]
    target = uniform(specs(*names), {A: partitions}, {})
    counts = sizes(target).values()
    assert max(counts) - min(counts) <= 1 and every_partition_once(target, {A: partitions})


def test_uniform_is_sticky_when_a_member_joins_and_when_one_leaves():
    """A joining member takes only from the others' surplus; a leaving member's partitions go
    to the rest while everyone keeps what it had."""
    first = uniform(specs("a", "b"), {A: 6}, {})
    second = uniform(specs("a", "b", "c"), {A: 6}, first)
    for m in ("a", "b"):
        assert second[m][A] <= first[m][A] and len(second[m][A]) == 2
    third = uniform(specs("a", "c"), {A: 6}, second)
    for m in ("a", "c"):
        assert second[m][A] <= third[m][A]
    assert every_partition_once(third, {A: 6})


def test_uniform_with_different_subscriptions_assigns_each_topic_to_its_subscribers_only():
    members = {"a": MemberSpec(None, frozenset((A,))), "b": MemberSpec(None, frozenset((A, B))),
               "c": MemberSpec(None, frozenset((B,)))}
    target = uniform(members, {A: 4, B: 2}, {})
    assert B not in target["a"] and A not in target["c"]
    assert every_partition_once(target, {A: 4, B: 2})
    counts = sizes(target).values()
    assert max(counts) - min(counts) <= 1
    again = uniform(members, {A: 4, B: 2}, target)
    assert again == target                                     # nothing moves without a reason


def test_range_gives_contiguous_ranges_co_partitioned_and_static_members_first():
    target = range_assignor(specs("m2", "m1", topics=(A, B)), {A: 3, B: 3}, {})
    assert target == {"m1": {A: {0, 1}, B: {0, 1}}, "m2": {A: {2}, B: {2}}}
    members = {"z": MemberSpec("i-0", frozenset((A,))), "a": MemberSpec(None, frozenset((A,)))}
    assert range_assignor(members, {A: 3}, {}) == {"z": {A: {0, 1}}, "a": {A: {2}}}
