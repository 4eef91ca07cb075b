"""Spark's pushed-down filters, turned into what planning and reading can use.

Accepted (and then applied exactly, so Spark does not evaluate them again):

* ``topic`` =, IN; ``partition`` =, IN, <, <=, >, >=: which topic-partitions are read;
* ``offset`` =, IN, <, <=, >, >=: where each partition's read starts and ends (found in the
  offset index) and, exactly, which rows come out;
* ``timestamp`` =, <, <=, >, >=: a lower bound starts each segment's read at the time
  index (and skips batches whose max timestamp is below it); every bound is applied to
  each row. Kafka timestamps are not ordered, so an upper bound cannot end a read early.

Anything else (NOT, OR, IS NULL, other columns) is handed back for Spark to evaluate.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

__all__ = ["PushedFilters", "push_filters"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_US = _dt.timedelta(microseconds=1)
_COMPARE = {"GreaterThan": "greater", "GreaterThanOrEqual": "greater_equal",
            "LessThan": "less", "LessThanOrEqual": "less_equal"}


def _micros(value) -> int | None:
    if isinstance(value, _dt.datetime) and value.tzinfo is not None:
        return (value - _EPOCH) // _US
    return None   # a naive datetime has no instant: leave it to Spark


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass
class PushedFilters:
    topics: set | None = None
    partition_tests: list = field(default_factory=list)   # (op, value) / ("in", set)
    offset_min: int | None = None
    offset_end: int | None = None                          # exclusive
    offset_in: frozenset | None = None
    timestamp_bounds: list = field(default_factory=list)   # (Arrow compute op, us)

    def keeps_partition(self, topic: str, partition: int) -> bool:
        if self.topics is not None and topic not in self.topics:
            return False
        for op, value in self.partition_tests:
            if op == "in":
                if partition not in value:
                    return False
            elif not _OPS[op](partition, value):
                return False
        return True

    @property
    def timestamp_lower_us(self) -> int | None:
        lows = [us + (op == "greater") for op, us in self.timestamp_bounds
                if op in ("greater", "greater_equal")]
        return max(lows) if lows else None

    def _narrow_offsets(self, low: int | None = None, end: int | None = None) -> None:
        if low is not None:
            self.offset_min = low if self.offset_min is None else max(self.offset_min, low)
        if end is not None:
            self.offset_end = end if self.offset_end is None else min(self.offset_end, end)

    def _take(self, f) -> bool:
        """Record a filter if we can apply it exactly; False hands it back to Spark."""
        kind = type(f).__name__
        attribute = getattr(f, "attribute", None)   # NOT wraps a child and has none
        if attribute is None or len(attribute) != 1:
            return False
        column = attribute[0]
        value = getattr(f, "value", None)
        if column == "topic":
            if kind == "EqualTo" and isinstance(value, str):
                values = {value}
            elif kind == "In" and all(isinstance(v, str) for v in value):
                values = set(value)
            else:
                return False
            self.topics = values if self.topics is None else self.topics & values
            return True
        if column == "partition":
            if kind == "EqualTo" and _is_int(value):
                self.partition_tests.append(("in", {value}))
            elif kind == "In" and all(_is_int(v) for v in value):
                self.partition_tests.append(("in", set(value)))
            elif kind in _COMPARE and _is_int(value):
                self.partition_tests.append((_COMPARE[kind], value))
            else:
                return False
            return True
        if column == "offset":
            if kind == "EqualTo" and _is_int(value):
                self._narrow_offsets(value, value + 1)
            elif kind == "In" and value and all(_is_int(v) for v in value):
                found = frozenset(value)
                self.offset_in = found if self.offset_in is None else self.offset_in & found
                self._narrow_offsets(min(value), max(value) + 1)
            elif kind in _COMPARE and _is_int(value):
                op = _COMPARE[kind]
                if op == "greater":
                    self._narrow_offsets(low=value + 1)
                elif op == "greater_equal":
                    self._narrow_offsets(low=value)
                elif op == "less":
                    self._narrow_offsets(end=value)
                else:
                    self._narrow_offsets(end=value + 1)
            else:
                return False
            return True
        if column == "timestamp":
            us = _micros(value)
            if us is None:
                return False
            if kind == "EqualTo":
                self.timestamp_bounds += [("greater_equal", us), ("less_equal", us)]
            elif kind in _COMPARE:
                self.timestamp_bounds.append((_COMPARE[kind], us))
            else:
                return False
            return True
        return False


_OPS = {"greater": lambda a, b: a > b, "greater_equal": lambda a, b: a >= b,
        "less": lambda a, b: a < b, "less_equal": lambda a, b: a <= b}


def push_filters(filters) -> tuple[PushedFilters, list]:
    """(what we apply, the filters handed back to Spark)."""
    pushed = PushedFilters()
    rejected = [f for f in filters if not pushed._take(f)]
    return pushed, rejected
