"""``sasl.kerberos.principal.to.local.rules`` (BrokerSecurityConfigs, default ``DEFAULT``), read and
applied as Kafka 4.3.1's KerberosShortNamer and KerberosRule do to the Kerberos principal a
SASL/GSSAPI client authenticated as: the result is the name of its ``User:`` principal
(DefaultKafkaPrincipalBuilder).

* A principal is ``first[/second]@REALM`` (at most two components); a name without ``@`` is taken
  as it is.
* The rules are a list (Kafka's LIST type: comma-separated, blanks around the commas dropped, no
  duplicates), tried in order, the first that gives a name winning:

  - ``DEFAULT``: the first component, when the realm is the default realm (the ``default_realm``
    of krb5.conf; the empty realm when there is none, as Kafka falls back to);
  - ``RULE:[n:format](match)s/pattern/replacement/g/L``: for a principal of ``n`` components,
    ``format`` with ``$0`` the realm, ``$1`` the first component, ``$2`` the second; when that
    matches ``match`` whole (if given), it is the result, after ``s/pattern/replacement/`` (the
    first match replaced, every match with ``g``; Java's replacement syntax, ``$1``); ``/L`` or
    ``/U`` lower or upper cases it. ``match`` and ``pattern`` are read by Python's ``re``.

* A result holding ``/`` or ``@`` fails the connection, as does a principal no rule applies to
  (NoMatchingRule); a rule that does not parse stops the node at start, naming the key.
"""
from __future__ import annotations

import re

from .config_values import ConfigError
from .ssl_principal_mapper import _JAVA_NAMED_GROUP, _replacement_parts

__all__ = ["KerberosName", "KerberosShortNamer", "NoMatchingRule", "PRINCIPAL_TO_LOCAL_RULES_KEY"]

PRINCIPAL_TO_LOCAL_RULES_KEY = "sasl.kerberos.principal.to.local.rules"
_NAME = re.compile(r"([^/@]*)(/([^/@]*))?@([^/@]*)")
_RULE = re.compile(r"(DEFAULT)|RULE:\[(\d*):([^\]]*)](\(([^)]*)\))?(s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?")
_PARAMETER = re.compile(r"([^$]*)(\$(\d*))?")
_NON_SIMPLE = re.compile(r"[/@]")


class NoMatchingRule(Exception):
    """No rule gives a name for a principal, or a rule gives one with ``/`` or ``@`` in it."""


class KerberosName:
    """A principal's parts: ``service`` (its first component), ``host`` (its second, or None)
    and ``realm`` (None for a name without ``@``)."""

    def __init__(self, service: str, host: str | None, realm: str | None):
        self.service, self.host, self.realm = service, host, realm

    @classmethod
    def parse(cls, principal: str) -> "KerberosName":
        match = _NAME.fullmatch(principal)
        if match is None:
            if "@" in principal:
                raise NoMatchingRule(f"Malformed Kerberos name: {principal}")
            return cls(principal, None, None)
        return cls(match.group(1), match.group(3), match.group(4))

    def __str__(self) -> str:
        return self.service + (f"/{self.host}" if self.host is not None else "") + \
            (f"@{self.realm}" if self.realm is not None else "")


class _Rule:
    def __init__(self, text: str, default_realm: str, match: re.Match | None = None):
        self.text, self.default_realm = text, default_realm
        self.is_default, self.case = match is None, ""
        if match is None:
            return
        self.components = int(match.group(2)) if match.group(2) else _missing_components(text)
        self.format = match.group(3)
        self.match = None if match.group(5) is None else re.compile(_java_pattern(match.group(5)))
        self.pattern = None if match.group(7) is None else re.compile(_java_pattern(match.group(7)))
        self.parts = [] if self.pattern is None else _replacement_parts(match.group(8), self.pattern)
        self.repeat = match.group(9) == "g"
        self.case = match.group(10) or ""

    def apply(self, parameters: list[str]) -> str | None:
        if self.is_default:
            result = parameters[1] if parameters[0] == self.default_realm else None
        elif len(parameters) - 1 != self.components:
            result = None
        else:
            base = _with_parameters(self.format, parameters, self.text)
            if self.match is not None and self.match.fullmatch(base) is None:
                result = None
            elif self.pattern is None:
                result = base
            else:
                result = self.pattern.sub(self._replacement, base, count=0 if self.repeat else 1)
        if result is not None and _NON_SIMPLE.search(result):
            raise NoMatchingRule(f"Non-simple name {result} after auth_to_local rule {self.text}")
        if result is not None and self.case:
            # Locale.ENGLISH: the ASCII letters' case rules, which str.lower/upper follow for them.
            result = result.lower() if self.case == "L" else result.upper()
        return result

    def _replacement(self, found: re.Match) -> str:
        return "".join(p if isinstance(p, str) else (found.group(p) or "") for p in self.parts)


def _missing_components(text: str) -> int:
    # Kafka's Integer.parseInt("") fails: a NumberFormatException out of the rule's parsing.
    raise re.error(f"no component count in `{text}`")


def _java_pattern(pattern: str) -> str:
    """Java names a group (?<name>...), Python (?P<name>...)."""
    return _JAVA_NAMED_GROUP.sub(r"\1(?P<", pattern)


def _with_parameters(format_: str, parameters: list[str], rule: str) -> str:
    """KerberosRule.replaceParameters: each ``$n`` of the format is parameter n; an index out of
    range, or a ``$`` without digits, fails the name."""
    out, start = [], 0
    while start < len(format_):
        found = _PARAMETER.match(format_, start)
        out.append(found.group(1))
        number = found.group(3)
        if number == "":
            raise NoMatchingRule(f"bad format in username mapping in {format_} (rule {rule})")
        if number is not None:
            index = int(number)
            if index >= len(parameters):
                raise NoMatchingRule(f"index {index} from {format_} is outside of the valid range 0 to "
                                     f"{len(parameters) - 1} (rule {rule})")
            out.append(parameters[index])
        if found.end() == start:       # cannot happen: each match takes a character or more
            break
        start = found.end()
    return "".join(out)


class KerberosShortNamer:
    """One node's rules; ``short_name(principal)`` gives the name or raises NoMatchingRule."""

    def __init__(self, rules: str | None, default_realm: str, key: str = PRINCIPAL_TO_LOCAL_RULES_KEY):
        self.default_realm = default_realm
        items = ["DEFAULT"] if rules is None else [r for r in re.split(r"\s*,\s*", rules.strip()) if r]
        if len(set(items)) != len(items):
            raise ConfigError(key, rules, "values must not be duplicated")
        self.rules = [self._parse(rule, rules, key) for rule in items]

    def _parse(self, rule: str, rules: str | None, key: str) -> _Rule:
        match = _RULE.match(rule)
        if match is None:
            raise ConfigError(key, rules, f"has an invalid rule: {rule}")
        if match.end() != len(rule):
            raise ConfigError(key, rules, f"has an invalid rule: `{rule}`, unmatched substring: "
                                          f"`{rule[match.end():]}`")
        try:
            return _Rule(rule, self.default_realm, None if match.group(1) else match)
        except re.error as exc:
            raise ConfigError(key, rules, f"has a rule that does not compile: `{rule}`: {exc}") from None

    def short_name(self, principal: str) -> str:
        name = KerberosName.parse(principal)
        if name.host is None:
            if name.realm is None:
                return name.service
            parameters = [name.realm, name.service]
        else:
            parameters = [name.realm, name.service, name.host]
        for rule in self.rules:
            result = rule.apply(parameters)
            if result is not None:
                return result
        raise NoMatchingRule(f"No rules apply to {name}, rules [{', '.join(r.text for r in self.rules)}]")
