"""KIP-848's SubscribedTopicRegex: Kafka 4.3.1 reads it with RE2 (com.google.re2j) and matches it
whole against topic names; kafkawire reads it with Python's ``re``, refusing first the Perl
constructs RE2 does not have (lookarounds, atomic groups, backreferences, possessive
quantifiers), so that what Kafka refuses is refused here too. (RE2's ``\\p{...}`` classes are
not Python's: such a regex is refused here.)
"""
from __future__ import annotations

import functools
import re

__all__ = ["compiled", "regex_error"]


@functools.lru_cache(maxsize=256)
def compiled(regex: str):
    """The compiled regex, or None when it does not compile (refused at the heartbeat)."""
    try:
        return re.compile(regex)
    except re.error:
        return None


# What Python's re takes and RE2 (Kafka's com.google.re2j) refuses: lookarounds, atomic groups,
# backreferences and possessive quantifiers.
_PERL_GROUPS = ("(?<=", "(?<!", "(?=", "(?!", "(?>", "(?P=")


def _perl_only(regex: str) -> str | None:
    """The first construct of ``regex`` outside character classes that RE2 refuses, or None."""
    i, n = 0, len(regex)
    while i < n:
        c = regex[i]
        if c == "\\":
            if i + 1 < n and regex[i + 1] in "123456789":
                return regex[i:i + 2]
            i += 2
            continue
        if c == "[":                         # skip the class: a first ']' (after an optional '^') is literal
            j = i + 1
            j += 1 if j < n and regex[j] == "^" else 0
            j += 1 if j < n and regex[j] == "]" else 0
            while j < n and regex[j] != "]":
                j += 2 if regex[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            found = next((g for g in _PERL_GROUPS if regex.startswith(g, i)), None)
            if found:
                return found
        elif c in "*+?}" and regex.startswith("+", i + 1):
            return regex[i:i + 2]
        i += 1
    return None


def regex_error(regex: str) -> str | None:
    """Why ``regex`` is not a valid RE2 expression, or None: Python's reason, or RE2J's for the
    Perl constructs RE2 leaves out."""
    unsupported = _perl_only(regex)
    if unsupported:
        return f"invalid or unsupported Perl syntax: `{unsupported}`"
    try:
        re.compile(regex)
    except re.error as exc:
        return str(exc)
    return None
