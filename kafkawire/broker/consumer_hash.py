"""The metadata hash of a KIP-848 group (ConsumerGroupMetadataValue.MetadataHash) as Kafka 4.3.1
computes it (Utils.computeTopicHash and computeGroupHash): XXH3-64 (seed 0) over hash4j's stream
encoding (a byte as is; int and long little-endian; a string as its UTF-16LE chars then its
length as an int) of, per topic: a magic byte 0, the topic id's two longs, its name, its
partition count, then each partition's index and the sorted racks of its replicas (each as its
length and the string); the group's hash is XXH3-64 over the topic hashes in topic-name order,
0 without topics. The same hash as Kafka's, so a Kafka broker loading kafkawire's records sees
no metadata change.

    group_hash({"orders": topic_hash("orders", topic_id, 3, racks=())})

XXH3 is written out here (the ``xxhash`` package is not a dependency); the tests check it
against ``xxhash`` for every length path and against values hash4j gave.
"""
from __future__ import annotations

import struct

__all__ = ["xxh3_64", "topic_hash", "group_hash"]

_M64 = (1 << 64) - 1
P32_1, P32_2, P32_3 = 0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D
P64_1, P64_2, P64_3, P64_4, P64_5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                                     0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)
PRIME_MX1, PRIME_MX2 = 0x165667919E3779F9, 0x9FB21C651E98DF25
SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671fcb79e64eccc0e578825ad07dccff7221"
    "b8084674f743248ee03590e6813a264c3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364eac5ac8334d3ebc3c581a0fffa1363eb"
    "170ddd51b7f0da49d316552629d4689e2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e")
_U64, _U32 = struct.Struct("<Q"), struct.Struct("<I")
_STRIPE, _STRIPES_PER_BLOCK = 64, (len(SECRET) - 64) // 8


def _r64(data, at: int) -> int:
    return _U64.unpack_from(data, at)[0]


def _r32(data, at: int) -> int:
    return _U32.unpack_from(data, at)[0]


def _fold(a: int, b: int) -> int:
    product = a * b
    return (product ^ (product >> 64)) & _M64


def _avalanche(h: int) -> int:
    h ^= h >> 37
    h = (h * PRIME_MX1) & _M64
    return h ^ (h >> 32)


def _xxh64_avalanche(h: int) -> int:
    h ^= h >> 33
    h = (h * P64_2) & _M64
    h ^= h >> 29
    h = (h * P64_3) & _M64
    return h ^ (h >> 32)


def _mix16(data, at: int, secret_at: int) -> int:
    return _fold(_r64(data, at) ^ _r64(SECRET, secret_at), _r64(data, at + 8) ^ _r64(SECRET, secret_at + 8))


def _short(data: bytes, n: int) -> int:
    if n == 0:
        return _xxh64_avalanche(_r64(SECRET, 56) ^ _r64(SECRET, 64))
    if n <= 3:
        combined = (data[0] << 16) | (data[n >> 1] << 24) | data[n - 1] | (n << 8)
        return _xxh64_avalanche(combined ^ (_r32(SECRET, 0) ^ _r32(SECRET, 4)))
    if n <= 8:
        keyed = ((_r32(data, n - 4) + (_r32(data, 0) << 32)) & _M64) ^ (_r64(SECRET, 8) ^ _r64(SECRET, 16))
        keyed ^= ((keyed << 49 | keyed >> 15) & _M64) ^ ((keyed << 24 | keyed >> 40) & _M64)
        keyed = (keyed * PRIME_MX2) & _M64
        keyed ^= (keyed >> 35) + n
        keyed = (keyed * PRIME_MX2) & _M64
        return keyed ^ (keyed >> 28)
    low = _r64(data, 0) ^ (_r64(SECRET, 24) ^ _r64(SECRET, 32))
    high = _r64(data, n - 8) ^ (_r64(SECRET, 40) ^ _r64(SECRET, 48))
    swapped = int.from_bytes(low.to_bytes(8, "little"), "big")
    return _avalanche((n + swapped + high + _fold(low, high)) & _M64)


def _medium(data: bytes, n: int) -> int:
    acc = n * P64_1
    if n <= 128:
        for i in range((n - 1) // 32, -1, -1):       # pairs from the outside in, as XXH3_len_17to128
            acc += _mix16(data, 16 * i, 32 * i) + _mix16(data, n - 16 * (i + 1), 32 * i + 16)
        return _avalanche(acc & _M64)
    for i in range(8):
        acc += _mix16(data, 16 * i, 16 * i)
    acc = _avalanche(acc & _M64)
    for i in range(8, n // 16):
        acc += _mix16(data, 16 * i, 16 * (i - 8) + 3)
    acc += _mix16(data, n - 16, 136 - 17)
    return _avalanche(acc & _M64)


def _accumulate(acc: list, data: bytes, at: int, secret_at: int) -> None:
    for i in range(8):
        value = _r64(data, at + 8 * i)
        key = value ^ _r64(SECRET, secret_at + 8 * i)
        acc[i ^ 1] = (acc[i ^ 1] + value) & _M64
        acc[i] = (acc[i] + (key & 0xFFFFFFFF) * (key >> 32)) & _M64


def _long(data: bytes, n: int) -> int:
    acc = [P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1]
    block = _STRIPE * _STRIPES_PER_BLOCK
    blocks = (n - 1) // block
    for b in range(blocks):
        for s in range(_STRIPES_PER_BLOCK):
            _accumulate(acc, data, b * block + s * _STRIPE, 8 * s)
        for i in range(8):                              # scramble
            value = acc[i] ^ (acc[i] >> 47) ^ _r64(SECRET, len(SECRET) - 64 + 8 * i)
            acc[i] = (value * P32_1) & _M64
    for s in range(((n - 1) - block * blocks) // _STRIPE):
        _accumulate(acc, data, blocks * block + s * _STRIPE, 8 * s)
    _accumulate(acc, data, n - _STRIPE, len(SECRET) - 64 - 7)
    result = n * P64_1
    for i in range(4):
        result += _fold(acc[2 * i] ^ _r64(SECRET, 11 + 16 * i), acc[2 * i + 1] ^ _r64(SECRET, 11 + 16 * i + 8))
    return _avalanche(result & _M64)


def xxh3_64(data: bytes) -> int:
    """XXH3-64 with seed 0, as a signed long (Java's ``getAsLong``)."""
    n = len(data)
    h = _short(data, n) if n <= 16 else _medium(data, n) if n <= 240 else _long(data, n)
    return h - (1 << 64) if h >> 63 else h


def _string(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass") + struct.pack("<i", len(text.encode("utf-16-le", "surrogatepass")) // 2)


def topic_hash(name: str, topic_id, partitions: int, racks=()) -> int:
    """Utils.computeTopicHash; ``racks[i]`` the racks of partition i's replicas (may be empty)."""
    parts = [b"\x00", struct.pack("<QQ", topic_id.int >> 64, topic_id.int & _M64), _string(name),
             struct.pack("<i", partitions)]
    for index in range(partitions):
        parts.append(struct.pack("<i", index))
        for rack in sorted(racks[index]) if index < len(racks) else ():
            parts.append(struct.pack("<i", len(rack.encode("utf-16-le", "surrogatepass")) // 2) + _string(rack))
    return xxh3_64(b"".join(parts))


def group_hash(topic_hashes: dict) -> int:
    """Utils.computeGroupHash: the topic hashes in name order (Java's String order: UTF-16 units)."""
    if not topic_hashes:
        return 0
    ordered = sorted(topic_hashes, key=lambda name: name.encode("utf-16-be", "surrogatepass"))
    return xxh3_64(b"".join(struct.pack("<q", topic_hashes[name]) for name in ordered))
