"""``ssl.principal.mapping.rules`` (BrokerSecurityConfigs, default DEFAULT), as Kafka 4.3.1's
SslPrincipalMapper reads and applies it to a TLS client certificate's subject (its RFC 2253
name) on an SSL listener (DefaultKafkaPrincipalBuilder):

* a comma-separated list of rules, each ``DEFAULT`` (the name as it is) or
  ``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` after the last slash (lower or
  upper case the result); a backslash escapes a ``/`` or ``,`` inside the pattern or replacement;
* the first rule whose pattern matches the whole name gives the principal: the name with every
  match of the pattern replaced (Java's replaceAll: ``$n`` is group n, a ``$n`` past the
  pattern's groups is literal text, ``\\x`` is x);
* a name no rule matches fails the connection ("Failed to map name for ...");
* a rule that does not parse stops the node at start, naming the key.

The patterns are read with Python's ``re``, which reads the patterns these rules are written with
(anchors, classes, groups, lazy quantifiers) as Java does.
"""
from __future__ import annotations

import re

from .config_values import ConfigError

__all__ = ["SslPrincipalMapper", "NoMatchingRule", "MAPPING_RULES_KEY"]

MAPPING_RULES_KEY = "ssl.principal.mapping.rules"
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")
_JAVA_NAMED_GROUP = re.compile(r"((?:^|[^\\])(?:\\\\)*)\(\?<(?=[A-Za-z])")


class NoMatchingRule(Exception):
    """No rule applies to a name (Kafka's SslPrincipalMapper.NoMatchingRule)."""


class _Rule:
    def __init__(self, pattern: str | None = None, replacement: str = "", case: str = ""):
        # Java names a group (?<name>...), Python (?P<name>...).
        self.pattern = None if pattern is None else re.compile(_JAVA_NAMED_GROUP.sub(r"\1(?P<", pattern))
        self.source = (pattern, replacement, case)
        if self.pattern is not None:
            self.parts = _replacement_parts(_escape_missing_groups(replacement, self.pattern.groups), self.pattern)
        self.case = case

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(lambda m: "".join(p if isinstance(p, str) else (m.group(p) or "")
                                                    for p in self.parts), name)
        # Locale.ENGLISH: the ASCII letters' case rules, which str.lower/upper follow for them.
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result

    def __repr__(self) -> str:
        if self.pattern is None:
            return "DEFAULT"
        pattern, replacement, case = self.source
        return f"RULE:{pattern}/{replacement}/{case}"


class SslPrincipalMapper:
    """The rules of one listener; ``name(dn)`` maps an RFC 2253 name or raises NoMatchingRule."""

    def __init__(self, rules: str | None, key: str = MAPPING_RULES_KEY):
        self.rules = _parse(rules if rules is not None else "DEFAULT", key)

    def name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            mapped = rule.apply(distinguished_name)
            if mapped is not None:
                return mapped
        raise NoMatchingRule(f"No rules apply to {distinguished_name}, rules {self.rules}")

    @property
    def is_default(self) -> bool:
        return bool(self.rules) and self.rules[0].pattern is None


def _parse(rules: str, key: str) -> list[_Rule]:
    parsed = []
    for match in _SPLITTER.finditer(rules.strip()):
        rule = match.group(1)
        parser = _PARSER.match(rule)
        if parser is None or parser.end() != len(rule):
            raise ConfigError(key, rules, f"has an invalid rule: `{rule}`, unmatched substring: "
                                          f"`{rule[parser.end() if parser else 0:]}`")
        if parser.group(1) is not None:
            parsed.append(_Rule())
        elif parser.group(2) is not None:
            try:
                parsed.append(_Rule(parser.group(2), parser.group(4), parser.group(6)))
            except re.error as exc:
                raise ConfigError(key, rules, f"has a rule whose pattern does not compile: `{rule}`: {exc}") from None
        # an empty rule is ignored, as Kafka ignores it
    return parsed


def _escape_missing_groups(replacement: str, groups: int) -> str:
    """Rule.escapeLiteralBackReferences: a ``$n`` past the pattern's groups is literal text
    (its digits cut down from the right while that names a group, as Java reads them)."""
    if groups == 0:
        return replacement
    value = replacement
    for found in list(_BACK_REFERENCE.finditer(replacement)):
        digits = found.group(1)
        if digits.startswith("0"):
            continue
        index = int(digits)
        while index > groups and index >= 10:
            index //= 10
        if index > groups:
            at = value.find("$" + digits)
            value = value[:at] + "\\" + value[at:]
    return value


def _replacement_parts(replacement: str, pattern: re.Pattern) -> list:
    """Java's Matcher.appendReplacement syntax as a list of literal strings and group numbers:
    ``\\x`` is x, ``$n`` the longest group number the pattern has, ``${name}`` a named group."""
    parts: list = []
    i = 0
    while i < len(replacement):
        c = replacement[i]
        if c == "\\" and i + 1 < len(replacement):
            parts.append(replacement[i + 1])
            i += 2
        elif c == "$":
            i = _group_reference(replacement, i + 1, pattern, parts)
        else:
            parts.append(c)
            i += 1
    return parts


def _group_reference(replacement: str, i: int, pattern: re.Pattern, parts: list) -> int:
    if i < len(replacement) and replacement[i] == "{":
        end = replacement.find("}", i)
        name = replacement[i + 1:end] if end > 0 else ""
        if name not in pattern.groupindex:
            raise re.error(f"no group with name {{{name}}} in the replacement")
        parts.append(pattern.groupindex[name])
        return end + 1
    if i >= len(replacement) or not replacement[i].isdigit():
        raise re.error("illegal group reference in the replacement")
    number = int(replacement[i])
    if number > pattern.groups:
        raise re.error(f"no group {number} in the replacement")
    i += 1
    while i < len(replacement) and replacement[i].isdigit() and number * 10 + int(replacement[i]) <= pattern.groups:
        number = number * 10 + int(replacement[i])
        i += 1
    parts.append(number)
    return i
