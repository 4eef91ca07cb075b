"""The character classes of RE2 (Kafka 4.3.1's com.google.re2j 1.8) that Python's ``re`` lacks,
as the ASCII characters they hold: a topic name is ASCII (Kafka's legal characters), so a class
written as its ASCII characters matches a topic name as RE2 matches it.

- Unicode classes (``\\pL``, ``\\p{Lu}``, ``\\p{Greek}``, ``\\P{...}``, ``\\p{^...}``, ``\\p{Any}``):
  RE2J's general categories and scripts (of ASCII, Latin has the letters and Common the rest).
- POSIX classes inside brackets (``[[:alpha:]]``, ``[[:^digit:]]``): the fourteen RE2 defines, all ASCII.
- Perl classes (``\\d``, ``\\s``, ``\\w`` and their negations): ASCII in RE2, Unicode in Python's ``re``.

Under case folding (``(?i)``) RE2 folds a class before negating it, so ``(?i)[[:^upper:]]`` holds
no letter (``signed``); a POSIX or Perl class, a character and a range take their whole case
orbits, a Unicode class only what RE2J 1.8's fold table for it adds (``\\p{Lu}`` the lower case
letters, ``\\p{Ll}`` only K and S of the upper case ones: ``(?i)\\p{Ll}`` matches ``K``, not ``A``).
The sets are exact, so the translation has Python match them without its own folding.
"""
from __future__ import annotations

import string
import unicodedata

__all__ = ["ASCII", "unicode_members", "posix_members", "perl_members", "range_members", "signed"]

ASCII = frozenset(chr(c) for c in range(128))
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
_LETTERS = frozenset(string.ascii_letters)


def _spans(*bounds: tuple[int, int]) -> frozenset[str]:
    return frozenset(chr(c) for low, high in bounds for c in range(low, high + 1))


_DIGIT, _UPPER, _LOWER = _spans((0x30, 0x39)), _spans((0x41, 0x5A)), _spans((0x61, 0x7A))
# The POSIX classes as RE2 defines them (its perl_groups: ASCII only)
_POSIX = {
    "alnum": _DIGIT | _UPPER | _LOWER, "alpha": _UPPER | _LOWER, "ascii": ASCII,
    "blank": _spans((0x09, 0x09), (0x20, 0x20)), "cntrl": _spans((0x00, 0x1F), (0x7F, 0x7F)), "digit": _DIGIT,
    "graph": _spans((0x21, 0x7E)), "lower": _LOWER, "print": _spans((0x20, 0x7E)),
    "punct": _spans((0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)),
    "space": _spans((0x09, 0x0D), (0x20, 0x20)), "upper": _UPPER, "word": _DIGIT | _UPPER | _LOWER | {"_"},
    "xdigit": _DIGIT | _spans((0x41, 0x46), (0x61, 0x66)),
}
# What RE2J 1.8's fold tables (UnicodeTables.FOLD_CATEGORIES, FOLD_SCRIPT) add in ASCII; other names have none
_FOLD_TABLES = {"Lu": frozenset(string.ascii_lowercase), "Ll": frozenset("KS")}
# The non-ASCII characters whose case orbit holds ASCII letters: long s and the Kelvin sign
_ORBITS_INTO_ASCII = {0x17F: frozenset("sS"), 0x212A: frozenset("kK")}
_PERL = {"d": _DIGIT, "s": _spans((0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)), "w": _POSIX["word"]}


def unicode_members(name: str, fold: bool = False) -> frozenset[str] | None:
    """The ASCII characters of RE2J's Unicode class ``name`` (with what its fold table adds under
    ``fold``), or None for a name RE2J does not know."""
    members = _unicode_members(name)
    return members | _FOLD_TABLES.get(name, frozenset()) if fold and members is not None else members


def _unicode_members(name: str) -> frozenset[str] | None:
    if name == "Any":
        return ASCII
    if name in _CATEGORIES or name in ("L", "M", "N", "P", "S", "Z"):
        return frozenset(c for c in ASCII if unicodedata.category(c).startswith(name))
    if name == "C":                   # Go's and RE2J's Other: Cc, Cf, Co and Cs, not Cn
        return frozenset(c for c in ASCII if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs"))
    if name in _SCRIPTS:
        return _LETTERS if name == "Latin" else ASCII - _LETTERS if name == "Common" else frozenset()
    return None


def posix_members(name: str) -> tuple[frozenset[str], bool] | None:
    """A bracketed POSIX class (``[:alpha:]``, ``[:^alpha:]``): its characters and whether it is
    negated, or None for a name RE2 does not define."""
    inner = name[2:-2]
    negated = inner.startswith("^")
    members = _POSIX.get(inner[1:] if negated else inner)
    return None if members is None else (members, negated)


def perl_members(letter: str) -> tuple[frozenset[str], bool] | None:
    """``\\d``, ``\\s``, ``\\w`` (``\\D``, ``\\S``, ``\\W`` negated): its characters and whether it is
    negated, or None for another letter."""
    members = _PERL.get(letter.lower())
    return None if members is None else (members, letter.isupper())


def range_members(low: int, high: int, fold: bool) -> frozenset[str]:
    """The ASCII characters of the range ``low``-``high`` (code points), with their case orbits
    under ``fold``."""
    members = frozenset(chr(c) for c in range(low, min(high, 127) + 1))
    if not fold:
        return members
    members = members | {c.swapcase() for c in members & _LETTERS}
    return members.union(*(letters for code, letters in _ORBITS_INTO_ASCII.items() if low <= code <= high))


def signed(members: frozenset[str], negated: bool, fold: bool) -> frozenset[str]:
    """A class's ASCII characters as RE2 matches them: folded first under ``fold`` (whole case
    orbits), then negated."""
    if fold:
        members = members | {c.swapcase() for c in members & _LETTERS}
    return ASCII - members if negated else members
