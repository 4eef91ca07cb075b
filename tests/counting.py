"""Counting the work a request does instead of timing it (issue 24): a name that counts how often
it is compared for equality. A dict or set lookup compares only names of equal hash (so about
once per equal name); a list scan (list.count, ``x in list``, list.remove) compares every
element, so quadratic work shows as ~n*n/2 comparisons."""
from __future__ import annotations


class CountedName(str):
    comparisons = 0

    def __eq__(self, other):
        CountedName.comparisons += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def counted_names(count: int, prefix: str = "t") -> list[CountedName]:
    """``count`` distinct names, the comparison count reset."""
    CountedName.comparisons = 0
    return [CountedName(f"{prefix}{i}") for i in range(count)]
