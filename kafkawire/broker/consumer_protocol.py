"""The embedded consumer protocol of classic members (Kafka 4.3.1's ConsumerProtocol): the
ConsumerProtocolSubscription a JoinGroup carries and the ConsumerProtocolAssignment a SyncGroup
answers, as the group coordinator reads and writes them when classic members live in a KIP-848
consumer group (kafkawire.broker.consumer_classic) and when a group is converted between the two
kinds.

    subscription = decode_subscription(metadata)      # raises ValueError on bytes that do not decode
    data = encode_assignment({"t1": [0, 1]}, version)

Both are an int16 version followed by a non-flexible body; a version above the highest known
(3) is read as the highest, as Kafka reads a newer client's bytes.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Subscription", "decode_subscription", "subscription_version", "encode_assignment", "decode_assignment",
           "HIGHEST_VERSION"]

HIGHEST_VERSION = 3
_INT16, _INT32 = struct.Struct(">h"), struct.Struct(">i")


@dataclass(frozen=True)
class Subscription:
    topics: tuple
    user_data: bytes | None = None
    owned: tuple = ()                  # (topic name, (partitions...)) pairs, v1+
    generation_id: int = -1            # v2+
    rack_id: str | None = None         # v3+


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.data):
            raise ValueError(f"the bytes end at {len(self.data)}, a field needs {fmt.size} at {self.pos}")
        value, = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise ValueError(f"a field of {size} bytes at {self.pos} runs past the end ({len(self.data)})")
        self.pos += size
        return self.data[self.pos - size:self.pos]

    def string(self, nullable: bool = False) -> str | None:
        size = self.take(_INT16)
        if size < 0:
            if nullable:
                return None
            raise ValueError(f"a null string at {self.pos - 2}")
        try:
            return self.raw(size).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"a string that is not UTF-8 at {self.pos - size}: {exc.reason}") from None

    def array(self, read_item) -> list:
        count = self.take(_INT32)
        if count < 0 or count > len(self.data) - self.pos:     # bounded by the bytes left
            raise ValueError(f"an array of {count} items at {self.pos - 4}")
        return [read_item() for _ in range(count)]

    def nullable_bytes(self) -> bytes | None:
        size = self.take(_INT32)
        return None if size < 0 else self.raw(size)

    def topic_partitions(self) -> tuple:
        return tuple(self.array(self._topic))

    def _topic(self) -> tuple:
        return self.string(), tuple(self.array(lambda: self.take(_INT32)))


def subscription_version(metadata: bytes) -> int:
    """ConsumerProtocol.deserializeVersion: the int16 version the bytes start with."""
    return _Reader(metadata).take(_INT16)


def decode_subscription(metadata: bytes) -> Subscription:
    reader = _Reader(metadata)
    version = reader.take(_INT16)
    if version < 0:
        raise ValueError(f"version {version}")
    version = min(version, HIGHEST_VERSION)
    topics = tuple(reader.array(reader.string))
    user_data = reader.nullable_bytes()
    owned = reader.topic_partitions() if version >= 1 else ()
    generation = reader.take(_INT32) if version >= 2 else -1
    rack = reader.string(nullable=True) if version >= 3 else None
    return Subscription(topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes) -> tuple[dict, bytes | None]:
    """({topic name: [partitions]}, user data) of a ConsumerProtocolAssignment."""
    reader = _Reader(data)
    if reader.take(_INT16) < 0:
        raise ValueError("a negative version")
    partitions: dict = {}
    for topic, ps in reader.topic_partitions():
        partitions.setdefault(topic, []).extend(ps)
    return partitions, reader.nullable_bytes()


def encode_assignment(partitions: dict, version: int) -> bytes:
    """ConsumerProtocol.serializeAssignment of {topic name: partitions} (no user data) at
    ``version`` (clamped to 0..3: every version has the same body)."""
    parts = [_INT16.pack(max(0, min(version, HIGHEST_VERSION))), _INT32.pack(len(partitions))]
    for topic, ps in partitions.items():
        name = topic.encode("utf-8")
        ordered = sorted(ps)
        parts += [_INT16.pack(len(name)), name, _INT32.pack(len(ordered))]
        parts += [_INT32.pack(p) for p in ordered]
    parts.append(_INT32.pack(-1))
    return b"".join(parts)
