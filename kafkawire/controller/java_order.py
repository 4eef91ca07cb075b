"""The iteration orders of the Java maps Kafka's metadata image keeps, so records written from
the image come out in the order Kafka writes them.

* java.util.HashMap: by bucket (the key's hashCode spread as HashMap.hash does, masked by the
  table size), then insertion order within a bucket (a resize keeps that order). The table
  size depends on how the map was built; ``grown_capacity`` and ``copied_capacity`` give it.
* pcollections' HashTreePMap (Kafka's ImmutableMap, e.g. TopicsImage.topicsById): by hashCode
  as a signed int, ascending.
* org.apache.kafka.timeline's TimelineHashSet (BaseHashTable): by slot (hashCode times a
  64-bit Fibonacci constant, its top bits for the table size), the last added first in a slot.
"""
from __future__ import annotations

import math
import uuid
from collections import deque

from kafkawire.metadata.java_text import java_string_hash as string_hash

DEFAULT_CAPACITY = 16
LOAD_FACTOR = 0.75


def int_hash(value: int) -> int:
    return value & 0xFFFFFFFF


def uuid_hash(value: uuid.UUID) -> int:
    """org.apache.kafka.common.Uuid.hashCode: the two halves xor-ed, folded to 32 bits."""
    h = (value.int >> 64) ^ (value.int & 0xFFFFFFFFFFFFFFFF)
    return ((h >> 32) ^ h) & 0xFFFFFFFF


def signed(h: int) -> int:
    return h - (1 << 32) if h >> 31 else h


def grown_capacity(size: int, initial: int = DEFAULT_CAPACITY) -> int:
    """The table size after ``size`` puts into ``new HashMap<>(n)`` whose first table is ``initial``
    (16 for ``new HashMap<>()``, 1 for ``new HashMap<>(0)``): it doubles whenever the size passes
    capacity * 0.75."""
    capacity = initial
    while size > int(capacity * LOAD_FACTOR):
        capacity *= 2
    return capacity


def sized_capacity(size: int) -> int:
    """The table size of ``new HashMap<>(size)`` after ``size`` puts (tableSizeFor, then growth)."""
    capacity = 1
    while capacity < size:
        capacity *= 2
    return grown_capacity(size, capacity)


def copied_capacity(size: int, jdk: int = 21) -> int:
    """The table size of ``new HashMap<>(map)`` for a map of ``size`` entries. It changed in
    JDK 19 (JDK-8281631): before, tableSizeFor((int)(size / 0.75 + 1)); since, tableSizeFor(
    ceil(size / 0.75)). So the same Kafka orders some maps differently on Java 17 and Java 21
    (6 supported features: 16 buckets on 17, 8 on 21; both occur in the reference snapshots)."""
    if size == 0:
        return DEFAULT_CAPACITY
    wanted = int(size / LOAD_FACTOR + 1.0) if jdk < 19 else math.ceil(size / LOAD_FACTOR)
    capacity = 1
    while capacity < wanted:
        capacity *= 2
    return capacity


def hashmap_order(keys, hash_of, capacity: int) -> list:
    """``keys`` (in insertion order) as a HashMap of that capacity iterates them."""
    def bucket(key):
        h = hash_of(key)
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(keys, key=bucket)          # sorted() is stable: insertion order within a bucket


def string_hashmap_order(keys, capacity: int | None = None) -> list:
    keys = list(keys)
    return hashmap_order(keys, string_hash, capacity or grown_capacity(len(keys)))


def int_hashmap_order(keys, capacity: int | None = None) -> list:
    keys = list(keys)
    return hashmap_order(keys, int_hash, capacity or grown_capacity(len(keys)))


def uuid_tree_order(keys) -> list:
    """HashTreePMap<Uuid, ?> iteration: ascending signed Uuid.hashCode."""
    return sorted(keys, key=lambda k: signed(uuid_hash(k)))


_FIBONACCI = -7046029254386353131          # BaseHashTable.findSlot's multiplier
_MIN_TIMELINE_CAPACITY = 2


def timeline_hash_set_order(keys, hash_of=string_hash) -> list:
    """``keys`` (added in this order to a TimelineHashSet made with expected size 1, none removed
    since) as the set's current iterator returns them."""
    keys = list(keys)
    capacity = _MIN_TIMELINE_CAPACITY
    for size in range(len(keys)):              # BaseHashTable.baseAddOrReplace grows before adding
        if (size + 1) * LOAD_FACTOR > capacity:
            capacity *= 2
    shift = 65 - capacity.bit_length()

    def slot(key) -> int:
        return ((signed(hash_of(key)) * _FIBONACCI) & 0xFFFFFFFFFFFFFFFF) >> shift
    # a slot holds its keys in insertion order and the iterator takes them from its end
    return [key for _, key in sorted(enumerate(keys), key=lambda ik: (slot(ik[1]), -ik[0]))]


TREEIFY_THRESHOLD = 8          # HashMap: a bin this long is treeified ...
MIN_TREEIFY_CAPACITY = 64      # ... unless the table is smaller: then the table doubles instead


def computed_hashmap_order(keys, hash_of, initial: int = DEFAULT_CAPACITY) -> list:
    """``keys`` (distinct, in the order they were first asked for) as a ``new HashMap<>()`` filled
    by computeIfAbsent iterates them. It differs from put (``hashmap_order``) three ways (OpenJDK
    17's HashMap.computeIfAbsent): a new key goes to the FRONT of its bucket's chain; the table
    doubles BEFORE an insertion when the size already passes capacity * 0.75 (so 13 keys stay in
    16 buckets, where put makes 32); and a bucket reaching 8 keys (7 already there) doubles a
    table of fewer than 64 buckets (treeifyBin). A resize keeps each chain's order. In a table of
    64 or more (past 48 keys, or sooner through treeifyBin's doublings), a bucket of 8 or more
    keys becomes a red-black tree, whose chain order this does not model (it keeps the
    front-insertion order)."""
    table: list[deque] | None = None
    size = 0
    for key in keys:
        h = hash_of(key)
        spread = h ^ (h >> 16)
        if table is None or size > int(len(table) * LOAD_FACTOR):
            table = _doubled(table, initial)
        chain = table[spread & (len(table) - 1)]
        chain.appendleft((spread, key))
        if len(chain) >= TREEIFY_THRESHOLD and len(table) < MIN_TREEIFY_CAPACITY:
            table = _doubled(table, initial)
        size += 1
    return [key for chain in table or [] for _, key in chain]


def _doubled(table: list[deque] | None, initial: int) -> list[deque]:
    """HashMap.resize: each chain splits into the keys staying at index j and those moving to
    j + old capacity, both keeping their order."""
    if table is None:
        return [deque() for _ in range(initial)]
    capacity = len(table)
    grown: list[deque] = [deque() for _ in range(2 * capacity)]
    for j, chain in enumerate(table):
        for spread, key in chain:
            grown[j + (spread & capacity)].append((spread, key))
    return grown


def string_computed_hashmap_order(keys) -> list:
    return computed_hashmap_order(list(keys), string_hash)
