"""The requests whose error answers (kafkawire.net.error_responses, Kafka's getErrorResponse) the
tests compare: for every API key a broker or a controller serves, at each version, a default
request and one with every field filled, hypothesis-free and deterministic.

A filled request has every field its version carries: two entries in each array (so per-entry
answers show their order), distinct numbers and names (so entries a Java map would merge stay
apart), a few values Kafka's request classes check when they parse (FILLED_OVERRIDES), and
``b""`` records (what Kafka's Produce getErrorResponse reads is the partitions, not the batches).
"""
from __future__ import annotations

import itertools
import uuid

from kafkawire.protocol.apis import api_table

__all__ = ["SERVED_KEYS", "CONTROLLER_ONLY_KEYS", "cases", "filled"]

# Kafka 4.3.1's broker listener (tests/broker/broker_api_table.py), without ApiVersions, which
# the connection answers itself; and what only a controller serves (its ControllerApis, and the
# raft APIs).
BROKER_KEYS = frozenset({
    0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
    32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 55, 57, 60, 61, 64, 65, 66,
    68, 69, 74, 75, 76, 77, 78, 79, 80, 81, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92})
CONTROLLER_ONLY_KEYS = frozenset({52, 53, 54, 56, 58, 59, 62, 63, 67, 70, 73, 82})
SERVED_KEYS = BROKER_KEYS | CONTROLLER_ONLY_KEYS

_INT_BITS = {"int8": 7, "int16": 15, "uint16": 16, "int32": 31, "uint32": 32, "int64": 63}

# (request name, field name) -> the value a filled request carries there: one Kafka's request
# class reads while it parses or answers (an isolation level, acks), where a counter's value
# would make it throw.
FILLED_OVERRIDES = {
    ("FetchRequest", "isolation_level"): 1,
    ("ListOffsetsRequest", "isolation_level"): 1,
    ("ProduceRequest", "acks"): -1,
    ("FindCoordinatorRequest", "key_type"): 1,
    ("ShareFetchRequest", "isolation_level"): 0,
    # ANY resource type, pattern type, operation and permission: DescribeAclsRequest refuses UNKNOWN ones
    **{("DescribeAclsRequest", name): 1 for name in ("resource_type_filter", "pattern_type_filter", "operation",
                                                    "permission_type")},
}


def filled(cls, version: int, counter=None):
    """An instance of ``cls`` with every field of ``version`` set (see the module's docstring)."""
    counter = counter if counter is not None else itertools.count(1)
    obj = cls()
    for f in cls._FIELDS:
        if not f.present(version):
            continue
        override = FILLED_OVERRIDES.get((cls.NAME, f.py_name))
        if override is not None:
            setattr(obj, f.py_name, override)
        elif f.kind == "struct":
            setattr(obj, f.py_name, filled(f.struct, version, counter))
        elif f.kind == "array":
            setattr(obj, f.py_name, [_element(f, version, counter) for _ in range(2)])
        else:
            setattr(obj, f.py_name, _scalar(f.kind, f.py_name, next(counter)))
    return obj


def _element(f, version, counter):
    if f.element == "struct":
        return filled(f.struct, version, counter)
    return _scalar(f.element, f.py_name, next(counter))


def _scalar(kind: str, name: str, n: int):
    if kind in _INT_BITS:
        return n % (1 << min(_INT_BITS[kind], 15))
    if kind == "bool":
        return True
    if kind == "float64":
        return n + 0.5
    if kind == "string":
        return f"{name.split('_')[0]}-{n}"
    if kind == "uuid":
        return uuid.UUID(int=n)
    if kind == "bytes":
        return bytes([n % 256])
    if kind == "records":
        return b""
    raise ValueError(f"no filled value for a field of kind {kind}")


def versions(api_key: int) -> range:
    api = api_table()[api_key]
    return range(api.min_version, api.max_version + 1)


def with_nulls(request, version: int):
    """``request`` with each of its top-level fields that ``version`` lets be null set to null,
    or None when it has none (Metadata's all topics, ElectLeaders' all partitions...)."""
    nullable = [f for f in type(request)._FIELDS if f.present(version) and f.nullable(version)]
    for f in nullable:
        setattr(request, f.py_name, None)
    return request if nullable else None


def cases(api_key: int, version: int) -> list[tuple[str, object]]:
    """(name, request) for ``api_key`` at ``version``: the default request, the filled one, the
    filled one with its nullable top-level fields null if it has any (Produce also with acks 0,
    which Kafka answers with nothing)."""
    cls = api_table()[api_key].request
    out = [("default", cls()), ("filled", filled(cls, version))]
    nulls = with_nulls(filled(cls, version), version)
    if nulls is not None:
        out.append(("nulls", nulls))
    if cls.NAME == "ProduceRequest":
        zero = filled(cls, version)
        zero.acks = 0
        out.append(("acks 0", zero))
    return out
