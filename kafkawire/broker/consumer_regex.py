"""KIP-848's SubscribedTopicRegex: Kafka 4.3.1 reads it with RE2 (com.google.re2j 1.8) and matches
it whole against topic names; kafkawire reads it as RE2J parses it and hands Python's ``re`` an
equivalent pattern, so that what Kafka refuses is refused here too, with RE2J's description, and
what it takes matches the topic names RE2J's matches.

The translation walks the regex as RE2J's Parser does:
- RE2's constructs Python lacks are written in Python's terms: ``\\Q...\\E`` (literal text, to
  the end of the regex without ``\\E``); ``\\x{..}`` and octal escapes as the character; ``\\z``
  as Python's ``\\Z``; named groups as plain groups (RE2's names are not all Python's); flags set
  inside the regex (``a(?i)b``, ``(?-i)``) as groups of Python's scoped flags, reopened after each
  ``|``; RE2's non-greedy flag ``U`` by swapping each repetition's greediness; a ``{`` that is no
  RE2 repetition as a literal; a repeated assertion or repetition as a group.
- Every class (a bracket expression, ``\\p{..}``, ``\\d``) is written as the exact set of the
  ASCII characters RE2J matches with it (kafkawire.broker.consumer_regex_classes: POSIX classes,
  RE2J's fold tables; a topic name is ASCII), kept from Python's own case folding.
- Python's constructs RE2 lacks are refused with RE2J's description: lookarounds, atomic groups,
  backreferences, possessive quantifiers, conditionals, comments, Python's own flags.
"""
from __future__ import annotations

import functools
import re

from .consumer_regex_classes import ASCII, perl_members, posix_members, range_members, signed, unicode_members
from .consumer_regex_match import MAX_DEPTH, TOO_DEEP, Matcher, TooLarge, group_depth

__all__ = ["compiled", "regex_error", "translated", "Refused"]

# RE2J's descriptions (PatternSyntaxException.getDescription) of what it refuses
INVALID_RANGE = "invalid character class range"
INVALID_ESCAPE = "invalid escape sequence"
INVALID_NAMED_CAPTURE = "invalid named capture"
INVALID_PERL_OP = "invalid or unsupported Perl syntax"
INVALID_REPEAT_OP = "invalid nested repetition operator"
INVALID_REPEAT_SIZE = "invalid repeat count"
MISSING_BRACKET = "missing closing ]"
MISSING_PAREN = "missing closing )"
UNEXPECTED_PAREN = "regexp/syntax: internal error"      # RE2J's for a ')' without its '('
DUPLICATE_NAME = "duplicate capture group name"
MISSING_REPEAT_ARGUMENT = "missing argument to repetition operator"
TRAILING_BACKSLASH = "trailing backslash at end of expression"

_NO_ASCII = "\\uffff"          # stands for a class without ASCII characters (no topic name has it)
_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")
_CAPTURE_NAME = re.compile(r"\w+", re.ASCII)
_RE2_FLAGS, _PYTHON_FLAGS = "imsU", "ims"       # Python has no U (non-greedy by default)
_CHAR_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_ANCHORS = {"A": "\\A", "b": "\\b", "B": "\\B", "z": "\\Z"}      # RE2's \z is Python's \Z


class Refused(Exception):
    """RE2J refuses the regex; the argument is its description."""


def _literal(code: int) -> str:
    """One character as Python reads it anywhere (in a class or out): itself or an escape."""
    c = chr(code)
    if c.isascii() and c.isalnum():
        return c
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _class_text(members: frozenset[str], fold: bool) -> str:
    """A class as the exact set of its ASCII characters, which Python does not fold again."""
    text = "[" + ("".join(_literal(ord(c)) for c in sorted(members)) or _NO_ASCII) + "]"
    return f"(?-i:{text})" if fold else text


def _char_escape(regex: str, i: int) -> tuple[int, int]:
    """Parser.parseEscape at ``regex[i]`` (a backslash): the character and the index after it."""
    if i + 1 >= len(regex):
        raise Refused(TRAILING_BACKSLASH)
    c = regex[i + 1]
    if c in "01234567":                  # octal; \1-\7 alone would be a backreference
        j = i + 2
        while j < min(i + 4, len(regex)) and regex[j] in "01234567":
            j += 1
        if c != "0" and j == i + 2:
            raise Refused(INVALID_ESCAPE)
        return int(regex[i + 1:j], 8), j
    if c == "x":                         # \xHH or \x{H...}
        braced = regex.startswith("{", i + 2)
        end = regex.find("}", i + 3) if braced else i + 4
        digits = regex[i + 3:end] if braced else regex[i + 2:end]
        if (end >= 0 if braced else len(digits) == 2) and digits and \
                all(d in "0123456789abcdefABCDEF" for d in digits) and int(digits, 16) <= 0x10FFFF:
            return int(digits, 16), end + 1 if braced else end
        raise Refused(INVALID_ESCAPE)
    if c in _CHAR_ESCAPES:
        return _CHAR_ESCAPES[c], i + 2
    if c.isascii() and not c.isalnum():  # escaped punctuation
        return ord(c), i + 2
    raise Refused(INVALID_ESCAPE)


def _unicode_class(regex: str, i: int, fold: bool) -> tuple[frozenset[str], int]:
    """Parser.parseUnicodeClass at ``regex[i]`` (a backslash before p or P): the class's ASCII
    characters as RE2J matches them and the index after it."""
    negated = regex[i + 1] == "P"
    j = i + 2
    if j >= len(regex):
        raise Refused(INVALID_RANGE)
    if regex[j] != "{":
        name, j = regex[j], j + 1
    else:
        end = regex.find("}", j)
        if end < 0:
            raise Refused(INVALID_RANGE)
        name, j = regex[j + 1:end], end + 1
    if name.startswith("^"):
        negated, name = not negated, name[1:]
    members = unicode_members(name, fold)
    if members is None:
        raise Refused(INVALID_RANGE)
    return signed(members, negated, False), j


def _class_group(regex: str, j: int, fold: bool) -> tuple[frozenset[str] | None, int]:
    """A class inside a bracket expression at ``regex[j]`` (POSIX, Unicode or Perl): its ASCII
    characters as RE2 matches them and the index after it; (None, j) when none starts there."""
    if regex.startswith("[:", j):
        end = regex.find(":]", j)        # searched from the '[', as RE2J: "[:]" is a name too
        if end >= 0:
            found = posix_members(regex[j:end + 2])
            if found is None:
                raise Refused(INVALID_RANGE)
            return signed(*found, fold), end + 2
    if regex.startswith("\\", j) and j + 1 < len(regex):
        if regex[j + 1] in "pP":
            return _unicode_class(regex, j, fold)
        perl = perl_members(regex[j + 1])
        if perl is not None:
            return signed(*perl, fold), j + 2
    return None, j


def _class_char(regex: str, j: int) -> tuple[int, int]:
    """Parser.parseClassChar: one character of a bracket expression and the index after it."""
    if j >= len(regex):
        raise Refused(MISSING_BRACKET)
    if regex[j] == "\\":
        return _char_escape(regex, j)
    return ord(regex[j]), j + 1


def _bracket(regex: str, i: int, fold: bool) -> tuple[frozenset[str], int]:
    """Parser.parseClass at ``regex[i]`` (a '['): the class's ASCII characters as RE2J matches
    them and the index after it."""
    n, j = len(regex), i + 1
    negated = j < n and regex[j] == "^"
    j += negated
    members: frozenset[str] = frozenset()
    first = True                          # a first ']' is a literal
    while j >= n or regex[j] != "]" or first:
        first = False
        group, j = _class_group(regex, j, fold)
        if group is not None:
            members |= group
            continue
        low, j = _class_char(regex, j)
        high = low
        if j + 1 < n and regex[j] == "-" and regex[j + 1] != "]":      # [a-] is a and -
            high, j = _class_char(regex, j + 1)
            if high < low:
                raise Refused(INVALID_RANGE)
        members |= range_members(low, high, fold)
    return (ASCII - members if negated else members), j + 1


def _repeat_at(regex: str, i: int):
    """The ``{n}``, ``{n,}`` or ``{n,m}`` RE2 reads as a repetition at ``regex[i]``, else None
    (RE2 reads the '{' as a literal; its numbers have no leading zero)."""
    found = _REPEAT.match(regex, i)
    if found is None or any(n and len(n) > 1 and n[0] == "0" for n in (found.group(1), found.group(3))):
        return None
    low = int(found.group(1)) if len(found.group(1)) <= 8 else 10**9
    high = low if found.group(2) is None else -1 if not found.group(3) else \
        int(found.group(3)) if len(found.group(3)) <= 8 else 10**9
    if low > 1000 or high > 1000 or 0 <= high < low:
        raise Refused(INVALID_REPEAT_SIZE)
    return found


def _flag_text(before: frozenset[str], after: frozenset[str]) -> str:
    """Python's scoped flags taking ``before`` to ``after`` (``i``, ``-i``, ``im-s``), U left out."""
    on = "".join(f for f in _PYTHON_FLAGS if f in after and f not in before)
    off = "".join(f for f in _PYTHON_FLAGS if f in before and f not in after)
    return on + ("-" + off if off else "")


class _Level:
    """An open group: its flags, the scoped flag groups a ``(?flags)`` opened in it, where its
    text starts in the output."""
    __slots__ = ("flags", "opened", "start")

    def __init__(self, flags: frozenset[str], start: int = 0):
        self.flags, self.opened, self.start = flags, [], start


class _Translation:
    """One walk over a regex, as RE2J's Parser.parse walks it, writing Python's pattern."""

    def __init__(self, regex: str):
        self.regex, self.i, self.out = regex, 0, []
        self.levels = [_Level(frozenset())]
        self.after_repeat = False         # the last item was a repetition (another one is nested)
        self.atom = False                 # there is something a repetition may apply to
        self.atom_start = 0               # where the last item starts in the output
        self.wrap = False                 # Python repeats the last item only as a group (an assertion, a repetition)
        self.pending: list[str] = []      # scoped flag groups of a (?flags), opened before the next item
        self.names: set[str] = set()

    def run(self) -> str:
        regex = self.regex
        while self.i < len(regex):
            c = regex[self.i]
            if c in "*+?" or (c == "{" and _repeat_at(regex, self.i)):
                self._repeat()
                continue
            self.after_repeat = False
            if c == "\\":
                self._escape()
            elif c == "[":
                fold = "i" in self.levels[-1].flags
                members, after = _bracket(regex, self.i, fold)
                self._atom(_class_text(members, fold), after)
            elif c == "(":
                self._open()
            elif c == ")":
                self._close()
            elif c in "^$":
                self._anchor(c, self.i + 1)
            elif c == "|":
                self._open_pending()
                level = self.levels[-1]
                self.out.append(")" * len(level.opened) + "|" + "".join(level.opened))
                self.i, self.atom = self.i + 1, False
            else:
                self._atom("\\{" if c == "{" else c, self.i + 1)
                self.after_repeat = c == "{"          # RE2J's Parser counts a literal '{' as one
        self._open_pending()
        if len(self.levels) > 1:
            raise Refused(MISSING_PAREN)
        self.out.append(")" * len(self.levels[0].opened))
        return "".join(self.out)

    def _atom(self, text: str, after: int, wrap: bool = False) -> None:
        self._open_pending()
        self.atom_start = len(self.out)
        self.out.append(text)
        self.i, self.atom, self.wrap = after, True, wrap

    def _anchor(self, text: str, after: int) -> None:
        """RE2 repeats an empty-width assertion, Python only a group of it."""
        self._atom(text, after, wrap=True)

    def _open_pending(self) -> None:
        """A (?flags) applies from the next item on: a repetition right after it repeats the
        item before it, as in RE2, so its Python group opens only before the next item."""
        self.out.extend(self.pending)
        self.levels[-1].opened.extend(self.pending)
        self.pending.clear()

    def _repeat(self) -> None:
        regex, i = self.regex, self.i
        if self.after_repeat:
            raise Refused(INVALID_REPEAT_OP)
        if not self.atom:
            raise Refused(MISSING_REPEAT_ARGUMENT)
        found = _repeat_at(regex, i) if regex[i] == "{" else None
        text = found.group(0) if found else regex[i]
        j = i + len(text)
        lazy = regex.startswith("?", j)
        non_greedy = lazy != ("U" in self.levels[-1].flags)       # (?U) swaps greediness
        if self.wrap:           # a(?i)** or a*\Q\E*: RE2 repeats the repetition
            self.out[self.atom_start:] = ["(?:" + "".join(self.out[self.atom_start:]) + ")"]
        self.out.append(text + ("?" if non_greedy else ""))
        self.i, self.after_repeat, self.wrap = j + lazy, True, True

    def _escape(self) -> None:
        regex, i = self.regex, self.i
        c = regex[i + 1] if i + 1 < len(regex) else ""
        fold = "i" in self.levels[-1].flags
        if c == "Q":                      # literal text up to \E, or to the end
            end = regex.find("\\E", i + 2)
            for ch in regex[i + 2:] if end < 0 else regex[i + 2:end]:
                self._atom(_literal(ord(ch)), i)
            self.i = len(regex) if end < 0 else end + 2
        elif c in _ANCHORS:
            self._anchor(_ANCHORS[c], i + 2)
        elif c in ("p", "P"):
            members, after = _unicode_class(regex, i, fold)
            self._atom(_class_text(members, fold), after)
        elif c and perl_members(c) is not None:
            self._atom(_class_text(signed(*perl_members(c), fold), fold), i + 2)
        else:
            code, after = _char_escape(regex, i)
            self._atom(_literal(code), after)

    def _open(self) -> None:
        regex, i, level = self.regex, self.i, self.levels[-1]
        if not regex.startswith("(?", i):
            return self._push("(", i + 1, level.flags)
        if regex.startswith("(?P<", i) or regex.startswith("(?<", i):
            begin = i + (4 if regex[i + 2] == "P" else 3)
            end = regex.find(">", begin)
            if end < 0 or not _CAPTURE_NAME.fullmatch(regex, begin, end):
                raise Refused(INVALID_NAMED_CAPTURE)
            if regex[begin:end] in self.names:
                raise Refused(DUPLICATE_NAME)
            self.names.add(regex[begin:end])
            return self._push("(", end + 1, level.flags)      # its name (RE2's, not always Python's) unused here
        flags, j = self._flags(i + 2)
        text = _flag_text(level.flags, flags)
        if regex[j] == ":":
            return self._push(f"(?{text}:", j + 1, flags)
        if text:                          # (?flags): to the end of the group, scoped for Python
            self.pending.append(f"(?{text}:")
        level.flags, self.i = flags, j + 1
        return None

    def _flags(self, j: int) -> tuple[frozenset[str], int]:
        """Parser.parsePerlFlags after ``(?``: the group's flags and the index of its ':' or ')'."""
        regex, flags = self.regex, set(self.levels[-1].flags)
        clearing = saw_flag = False
        while j < len(regex):
            c = regex[j]
            if c in _RE2_FLAGS:
                (flags.discard if clearing else flags.add)(c)
                saw_flag = True
            elif c == "-" and not clearing:
                clearing, saw_flag = True, False
            elif c in ":)" and (saw_flag or not clearing):
                return frozenset(flags), j
            else:
                break
            j += 1
        raise Refused(INVALID_PERL_OP)

    def _push(self, text: str, after: int, flags: frozenset[str]) -> None:
        self._open_pending()
        self.levels.append(_Level(flags, len(self.out)))
        self.out.append(text)
        self.i, self.atom = after, False

    def _close(self) -> None:
        if len(self.levels) == 1:
            raise Refused(UNEXPECTED_PAREN)
        self._open_pending()
        level = self.levels.pop()
        self._atom(")" * (len(level.opened) + 1), self.i + 1)
        self.atom_start = level.start


def translated(regex: str) -> str:
    """``regex`` (RE2's syntax) as Python's ``re`` pattern matching the same topic names; raises
    Refused with RE2J's description for what RE2J refuses."""
    return _Translation(regex).run()


@functools.lru_cache(maxsize=256)
def compiled(regex: str) -> Matcher | None:
    """The regex's matcher (``fullmatch(name)``, linear in the name as RE2's, never backtracking
    as Python's ``re``), or None when it does not compile (refused at the heartbeat)."""
    try:
        return _matcher(regex)
    except (re.error, Refused, TooLarge):
        return None


def _matcher(regex: str) -> Matcher:
    pattern = translated(regex)
    if group_depth(pattern) > MAX_DEPTH:      # before ``re``, whose parser recurses per group
        raise TooLarge(TOO_DEEP)
    re.compile(pattern)                       # what Python refuses of a translation, with its reason
    return Matcher(pattern)


def regex_error(regex: str) -> str | None:
    """Why ``regex`` is not a valid RE2 expression, or None: RE2J's description for what the
    translation refuses (RE2J's rules), Go's for a regex too large or too deeply nested to match
    in bounded memory (kafkawire.broker.consumer_regex_match), else Python's reason for what its
    ``re`` refuses."""
    try:
        if compiled(regex) is not None:       # built once: the resolution reuses it
            return None
        _matcher(regex)
    except (Refused, TooLarge, re.error) as exc:
        return str(exc)
    return None
