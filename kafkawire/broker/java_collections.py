"""The orders of Java's collections that Kafka's group coordinator lets show through: where its
streams assignor breaks ties and its topology configuration picks the first of several topics, the
choice follows java.util.HashMap's iteration order (String.hashCode buckets) and
java.util.PriorityQueue's heap. kafkawire reproduces them so that it chooses as Kafka does.

    java_hash_map_order(["b", "a"])     # ["a", "b"]: the order a new HashMap<String, ?> iterates them in
"""
from __future__ import annotations

__all__ = ["java_string_hash", "java_order", "java_hash_map_order", "JavaPriorityQueue", "TIMELINE_INITIAL_CAPACITY",
           "timeline_capacity", "timeline_hash_map_order"]


def java_string_hash(text: str) -> int:
    """String.hashCode over the UTF-16 code units, as an unsigned 32-bit value."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def java_order(text: str) -> bytes:
    """String.compareTo's order (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size <<= 1
    return size


def java_hash_map_order(keys: list, initial_capacity: int = 16) -> list:
    """The iteration order of a java.util.HashMap(initial_capacity) into which ``keys`` (distinct
    strings) were put in this order: by bucket, then by insertion within a bucket. The table
    doubles when the size passes 3/4 of it, or when a bucket reaches 9 entries in a table under
    64 (a bucket that large in a larger table becomes a tree with its own order, not modelled: only
    deliberately colliding ids get there; checked against java.util.HashMap, every difference in
    400 random key sets was such a bucket)."""
    spread = [h ^ (h >> 16) for h in map(java_string_hash, keys)]
    table = _table_size_for(initial_capacity)
    buckets: dict = {}
    for size, value in enumerate(spread, 1):
        index = value & (table - 1)
        buckets[index] = buckets.get(index, 0) + 1
        grown = table
        if buckets[index] >= 9 and grown < 64:         # treeifyBin resizes a small table instead
            grown <<= 1
        if size > grown * 3 // 4:
            grown <<= 1
        if grown != table:
            table, buckets = grown, {}
            for v in spread[:size]:
                buckets[v & (table - 1)] = buckets.get(v & (table - 1), 0) + 1
    order = sorted(range(len(keys)), key=lambda i: (spread[i] & (table - 1), i))
    return [keys[i] for i in order]


class JavaPriorityQueue:
    """java.util.PriorityQueue's binary heap (siftUp on add, siftDown of the last on poll), so that
    equal keys come out in the order Kafka's queue gives them."""

    def __init__(self, key):
        self.key, self.items = key, []

    def add(self, item) -> None:
        items, key = self.items, self.key
        k, wanted = len(items), key(item)
        items.append(item)
        while k > 0:
            parent = (k - 1) >> 1
            if wanted >= key(items[parent]):
                break
            items[k] = items[parent]
            k = parent
        items[k] = item

    def poll(self):
        items, key = self.items, self.key
        if not items:
            return None
        first, last = items[0], items.pop()
        if items:
            k, size, wanted = 0, len(items), key(last)
            while k < size >> 1:
                child = 2 * k + 1
                if child + 1 < size and key(items[child]) > key(items[child + 1]):
                    child += 1
                if wanted <= key(items[child]):
                    break
                items[k] = items[child]
                k = child
            items[k] = last
        return first

    def __bool__(self) -> bool:
        return bool(self.items)


# -- org.apache.kafka.timeline.TimelineHashMap (the group coordinator's maps, e.g. a group's members) --

TIMELINE_INITIAL_CAPACITY = 2       # TimelineHashMap(registry, 0): BaseHashTable's smallest table


def timeline_capacity(size: int, capacity: int) -> int:
    """The table after a put (new key or replaced value) into a TimelineHashMap of ``size`` keys:
    BaseHashTable.baseAddOrReplace doubles it first when (size + 1) * 0.75 exceeds it."""
    return capacity * 2 if (size + 1) * 0.75 > capacity else capacity


def timeline_hash_map_order(keys: list, capacity: int) -> list:
    """The iteration order of a TimelineHashMap whose table has ``capacity`` slots and whose
    ``keys`` (strings) were put in this order since each was last removed: by slot (the top bits
    of String.hashCode times Knuth's 64-bit Fibonacci constant), then the latest put first within
    a slot (its iterator takes a slot's entries from the end)."""
    shift = 64 - (capacity.bit_length() - 1)

    def slot(key: str) -> int:
        h = java_string_hash(key)
        signed = h - (1 << 32) if h & 0x80000000 else h
        return ((signed * -7046029254386353131) & 0xFFFFFFFFFFFFFFFF) >> shift
    order = sorted(range(len(keys)), key=lambda i: (slot(keys[i]), -i))
    return [keys[i] for i in order]
