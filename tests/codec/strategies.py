"""Hypothesis strategies for instances of generated messages, valid for a given version.

Built from each class's _FIELDS table: fields a version lacks keep their defaults (so the
round trip can compare whole objects), nullable fields are None only where the version allows
it, and flexible versions carry random unknown tagged fields above every known tag.
"""
from __future__ import annotations

import functools

from hypothesis import strategies as st

INT_RANGES = {"int8": (-2**7, 2**7 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
              "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1)}
MAX_DEPTH = 3


def _in(rng, version):
    return rng is not None and rng[0] <= version <= rng[1]


# The strategies are built once per (field, version, depth) and kept: building them again for
# every draw (and Hypothesis validating each new one) was a fifth of the codec suites' time, and
# a strategy is a description of values, so sharing one draws exactly what a new copy would.
@functools.lru_cache(maxsize=None)
def _scalar(kind):
    if kind == "bool":
        return st.booleans()
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return st.one_of(st.integers(low, high), st.sampled_from([low, high, 0, -1 if low < 0 else 1]))
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "string":
        return st.text(max_size=12)
    if kind == "uuid":
        return st.one_of(st.uuids(), st.just(__import__("uuid").UUID(int=0)))
    if kind in ("bytes", "records"):
        return st.binary(max_size=24)
    raise ValueError(kind)


@functools.lru_cache(maxsize=None)
def value_strategy(field, version, depth):
    nullable = _in(field.nullable_versions, version)
    if field.kind == "struct":
        base = instances(field.struct, version, depth + 1)
    elif field.kind == "array":
        max_size = 0 if depth >= MAX_DEPTH else 3
        if field.element == "struct":
            element = instances(field.struct, version, depth + 1)
        else:
            element = _scalar(field.element)
        base = st.lists(element, max_size=max_size)
    else:
        base = _scalar(field.kind)
    return st.one_of(st.none(), base) if nullable else base


@functools.lru_cache(maxsize=None)
def unknown_tags(cls):
    known = [f.tag for f in cls._FIELDS if f.tag is not None]
    first = (max(known) + 1) if known else 0
    return st.lists(st.tuples(st.integers(first, first + 40), st.binary(max_size=6)), max_size=2,
                    unique_by=lambda item: item[0]).map(lambda items: sorted(items))


def instances(cls, version, depth=0):
    """Instances of ``cls`` valid for ``version`` (the same strategy object for the same arguments)."""
    return _instances(cls, version, depth)


@functools.lru_cache(maxsize=None)
def _instances(cls, version, depth):
    return _draw_instance(cls, version, depth)


@st.composite
def _draw_instance(draw, cls, version, depth):
    obj = cls()
    for f in cls._FIELDS:
        if _in(f.versions, version):
            setattr(obj, f.py_name, draw(value_strategy(f, version, depth)))
    if _in(cls.FLEXIBLE_VERSIONS, version):
        obj.unknown_tagged_fields = draw(unknown_tags(cls))
    return obj


@st.composite
def mutated_encodings(draw, cls, version, max_mutations=4):
    """The encoding of a random instance, then 1 to max_mutations bytes flipped, cuts and insertions."""
    encoded = bytearray(draw(instances(cls, version)).encode(version))
    for _ in range(draw(st.integers(1, max_mutations))):
        action = draw(st.sampled_from(["flip", "truncate", "insert"]))
        if action == "flip" and encoded:
            i = draw(st.integers(0, len(encoded) - 1))
            encoded[i] = draw(st.integers(0, 255))
        elif action == "truncate":
            del encoded[draw(st.integers(0, len(encoded))):]
        else:
            i = draw(st.integers(0, len(encoded)))
            encoded[i:i] = draw(st.binary(min_size=1, max_size=5))
    return bytes(encoded)


def without_unknown_tags(obj):
    """A copy of a message with every unknown tagged field dropped (what Kafka's JSON form keeps)."""
    import copy
    obj = copy.deepcopy(obj)

    def strip(struct):
        struct.unknown_tagged_fields = ()
        for f in struct._FIELDS:
            value = getattr(struct, f.py_name)
            if f.kind == "struct" and value is not None:
                strip(value)
            elif f.kind == "array" and f.element == "struct" and value is not None:
                for item in value:
                    strip(item)
    strip(obj)
    return obj
