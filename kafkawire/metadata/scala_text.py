"""Text as Kafka's Scala code prints it: how a Scala 2.13 immutable Set of listener names iterates
and shows itself (kafkawire.metadata.dynamic_reconfiguration words DynamicListenerConfig's and
KafkaConfig's messages with them)."""
from __future__ import annotations

from .java_text import java_string_hash

__all__ = ["scala_set", "scala_set_order"]


def scala_set_order(names: list[str]) -> list[str]:
    """How a Scala 2.13 immutable Set of these listener names (ListenerName's hash is its name's
    String.hashCode) iterates: insertion order up to four elements (Set1-Set4), then a CHAMP
    HashSet's order (by the improved hash's 5-bit fragments, a node's own elements before its
    sub-nodes)."""
    unique = list(dict.fromkeys(names))
    if len(unique) <= 4:
        return unique
    return _champ_order([(_scala_improve(java_string_hash(n)), n) for n in unique], 0)


def _scala_improve(code: int) -> int:
    """scala.collection.Hashing.improve, on a 32-bit int (kept unsigned here)."""
    h = (code + (~(code << 9) & 0xFFFFFFFF)) & 0xFFFFFFFF
    h ^= h >> 14
    h = (h + (h << 4)) & 0xFFFFFFFF
    return h ^ (h >> 10)


def _champ_order(entries: list[tuple[int, str]], shift: int) -> list[str]:
    by_fragment: dict[int, list[tuple[int, str]]] = {}
    for entry in entries:
        by_fragment.setdefault((entry[0] >> shift) & 31, []).append(entry)
    own = [group[0][1] for _, group in sorted(by_fragment.items()) if len(group) == 1]
    if shift >= 30:                     # a full hash collision: a collision node keeps insertion order
        return own + [n for _, group in sorted(by_fragment.items()) if len(group) > 1 for _, n in group]
    nested = [n for _, group in sorted(by_fragment.items()) if len(group) > 1 for n in _champ_order(group, shift + 5)]
    return own + nested


def scala_set(names: list[str]) -> str:
    order = scala_set_order(names)
    kind = "Set" if len(order) <= 4 else "HashSet"
    return f"{kind}({', '.join(f'ListenerName({n})' for n in order)})"
