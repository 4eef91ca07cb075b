"""KIP-848's SubscribedTopicRegex: Kafka 4.3.1 reads it with RE2 (com.google.re2j) and matches it
whole against topic names; kafkawire reads it with Python's ``re``, refusing first the Perl
constructs RE2 does not have (lookarounds, atomic groups, backreferences, possessive
quantifiers), so that what Kafka refuses is refused here too, with RE2J's description.

RE2's Unicode classes (``\\pL``, ``\\p{Lu}``, ``\\p{Greek}``, ``\\P{...}``, ``\\p{^...}``, ``\\p{Any}``),
which Python's ``re`` lacks, are translated to the ASCII characters of the class: a topic name is
ASCII (Kafka's legal characters), so the match is RE2's. The names are RE2J 1.8's: its general
categories and its scripts (of ASCII, Latin has the letters and Common the rest); another name is
RE2J's "invalid character class range".
"""
from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["compiled", "regex_error"]

_ASCII = [chr(c) for c in range(128)]
_CATEGORIES = ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Me", "Mc", "Nd", "Nl", "No", "Zs", "Zl", "Zp", "Cc", "Cf", "Co",
               "Cs", "Pd", "Ps", "Pe", "Pc", "Po", "Sm", "Sc", "Sk", "So", "Pi", "Pf")
# RE2J 1.8's UnicodeTables.SCRIPTS (of which only Latin and Common hold ASCII characters)
_SCRIPTS = frozenset((
    "Common Inherited Bamum Arabic Lisu Armenian Bengali Old_South_Arabian Bopomofo Cherokee Coptic Cyrillic Deseret "
    "Devanagari Ethiopic Georgian Gothic Greek Gujarati Gurmukhi Han Hangul Hebrew Hiragana Kannada Katakana Khmer "
    "Lao Latin Malayalam Mongolian Myanmar Ogham Old_Italic Oriya Runic Sinhala Syriac Tamil Telugu Thaana Thai "
    "Tibetan Canadian_Aboriginal Yi Tagalog Hanunoo Buhid Tagbanwa Braille Cypriot Limbu Linear_B Osmanya Shavian "
    "Tai_Le Ugaritic Buginese Glagolitic Kharoshthi Syloti_Nagri New_Tai_Lue Tifinagh Old_Persian Balinese Batak "
    "Brahmi Cham Egyptian_Hieroglyphs Javanese Kayah_Li Lepcha Mandaic Nko Old_Turkic Phags_Pa Phoenician Vai "
    "Cuneiform Unknown Carian Tai_Tham Lycian Lydian Ol_Chiki Rejang Saurashtra Sundanese Meetei_Mayek "
    "Imperial_Aramaic Avestan Kaithi Inscriptional_Pahlavi Inscriptional_Parthian Samaritan Tai_Viet").split())
_INVALID_RANGE = "invalid character class range"
_NO_ASCII = "\\uffff"          # stands for a class without ASCII characters (no topic name has it)


def _members(name: str) -> frozenset[str] | None:
    """The ASCII characters of RE2J's class ``name``, or None for a name RE2J does not know."""
    if name == "Any":
        return frozenset(_ASCII)
    if name in _CATEGORIES or name in ("L", "M", "N", "P", "S", "Z"):
        return frozenset(c for c in _ASCII if unicodedata.category(c).startswith(name))
    if name == "C":                   # Go's and RE2J's Other: Cc, Cf, Co and Cs, not Cn
        return frozenset(c for c in _ASCII if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs"))
    if name in _SCRIPTS:
        latin = frozenset(c for c in _ASCII if c.isalpha())
        return latin if name == "Latin" else frozenset(_ASCII) - latin if name == "Common" else frozenset()
    return None


class _InvalidClass(Exception):
    """RE2J's refusal of a ``\\p`` class."""


def _unicode_class(regex: str, i: int) -> tuple[frozenset[str], int]:
    """Parser.parseUnicodeClass at ``regex[i]`` (a backslash before p or P): the class's ASCII
    characters and the index after it."""
    negated = regex[i + 1] == "P"
    j = i + 2
    if j >= len(regex):
        raise _InvalidClass()
    if regex[j] != "{":
        name, j = regex[j], j + 1
    else:
        end = regex.find("}", j)
        if end < 0:
            raise _InvalidClass()
        name, j = regex[j + 1:end], end + 1
    if name.startswith("^"):
        negated, name = not negated, name[1:]
    members = _members(name)
    if members is None:
        raise _InvalidClass()
    return (frozenset(_ASCII) - members if negated else members), j


def _class_text(members: frozenset[str]) -> str:
    return "".join(re.escape(c) if c.isalnum() else f"\\x{ord(c):02x}" for c in sorted(members)) or _NO_ASCII


def translated(regex: str) -> str:
    """``regex`` with each RE2 Unicode class written as its ASCII characters (in a bracket
    expression or as one); raises _InvalidClass for a class RE2J refuses."""
    out, i, n, in_class = [], 0, len(regex), False
    while i < n:
        c = regex[i]
        if c == "\\" and i + 1 < n and regex[i + 1] in "pP":
            members, i = _unicode_class(regex, i)
            text = _class_text(members)
            out.append(text if in_class else f"[{text}]")
            continue
        if c == "\\":
            out.append(regex[i:i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            j = i + 1
            j += 1 if j < n and regex[j] == "^" else 0
            j += 1 if j < n and regex[j] == "]" else 0        # a first ']' is literal
            out.append(regex[i:j])
            i = j
            continue
        if c == "]" and in_class:
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=256)
def compiled(regex: str):
    """The compiled regex, or None when it does not compile (refused at the heartbeat)."""
    try:
        return re.compile(translated(regex))
    except (re.error, _InvalidClass):
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
            if regex.startswith("{", i + 2) and regex[i + 1] in "pP":      # \p{Name}: its brace is no repeat
                i = regex.find("}", i) + 1 or n
                continue
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
    """Why ``regex`` is not a valid RE2 expression, or None: Python's reason, or RE2J's
    description for the Perl constructs RE2 leaves out and for a Unicode class it does not know."""
    if _perl_only(regex):
        return "invalid or unsupported Perl syntax"          # PatternSyntaxException.getDescription
    try:
        re.compile(translated(regex))
    except _InvalidClass:
        return _INVALID_RANGE
    except re.error as exc:
        return str(exc)
    return None
