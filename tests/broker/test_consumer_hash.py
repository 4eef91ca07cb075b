"""The metadata hash of KIP-848 groups (kafkawire.broker.consumer_hash) is Kafka 4.3.1's: XXH3-64
as the ``xxhash`` package computes it on every length path, and topic and group hashes equal to
the values Kafka's own code (hash4j's stream, Utils.computeGroupHash) printed for the same input.
"""
from __future__ import annotations

import uuid

import pytest

from kafkawire.broker.consumer_hash import group_hash, topic_hash, xxh3_64

xxhash = pytest.importorskip("xxhash")


def test_xxh3_64_matches_the_reference_on_every_length_path():
    """0, 1-3, 4-8, 9-16, 17-128, 129-240 and the long path (several 1 KiB blocks and a tail)."""
    for n in [*range(0, 260), 1023, 1024, 1025, 2048, 3000]:
        data = bytes((i * 7 + n) % 251 for i in range(n))
        expected = xxhash.xxh3_64_intdigest(data)
        assert xxh3_64(data) == (expected - (1 << 64) if expected >> 63 else expected), n


def test_topic_and_group_hashes_are_the_values_kafka_computes():
    # hash4j: putByte(0).putLong(1).putLong(2).putString("orders").putInt(3).putInt(0).putInt(1).putInt(2)
    assert topic_hash("orders", uuid.UUID(int=(1 << 64) | 2), 3) == 2779785129666336701
    assert topic_hash("a-much-longer-topic-name-for-the-long-input-path", uuid.UUID(int=1), 300) == \
        -5569751947174628179
    # Utils.computeGroupHash({zeta=5, alpha=-7, Beta=123456789012345}): in Java's String order
    assert group_hash({"zeta": 5, "alpha": -7, "Beta": 123456789012345}) == -8941126903359207535
    assert group_hash({}) == 0
    # ... with partition 0's replicas on racks r2 and r1 (sorted, each as its length then the string)
    assert topic_hash("t", uuid.UUID(int=1), 2, racks=(("r2", "r1"), ())) == -2679195134313721803
