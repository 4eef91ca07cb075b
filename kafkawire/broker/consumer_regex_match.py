"""Matching a translated SubscribedTopicRegex in time linear in the topic name, as RE2 matches.

Python's ``re`` backtracks: ``(a+)+$``, ``(a|a)*b`` or ``.*.*.*.*b`` against a topic name of 30
``a``s runs for hours, and resolving a group's regexes runs on the coordinator's loop. RE2J
(Kafka's) never backtracks. So a regex is matched here as RE2 matches it: the translated pattern
(kafkawire.broker.consumer_regex), parsed by the standard library's own parser of ``re``
patterns, becomes a Thompson automaton (a state per character test, repetitions written out)
whose set of live states advances one character at a time; the sets met are kept as the states
of a lazily built DFA, so a name costs one table look-up per character once its steps are known.
A name of n characters costs at most n steps over the automaton's states, whatever the regex.

Two bounds Kafka's RE2J 1.8 does not have, with the descriptions Go's regexp/syntax gives them:
an automaton over ``MAX_STATES`` states (``((a{1000}){1000}){1000}`` writes 10^9 states; RE2J
would exhaust the broker's heap) is refused as "expression too large", and groups nested over
``MAX_DEPTH`` deep (each nesting is a recursion of ``re``'s parser; RE2J's compiler overflows its
stack at some depth too) as "expression nests too deeply" (docs/differences.md).
"""
from __future__ import annotations

import re
from array import array
from re import _constants as sre
from re import _parser as sre_parse      # requires-python >= 3.11: the parser ``re`` itself uses

__all__ = ["Matcher", "TooLarge", "MAX_STATES", "MAX_DEPTH", "TOO_LARGE", "TOO_DEEP", "group_depth"]

MAX_STATES = 20_000                       # automaton states (a state per character test, per split): ~0.2 s to build
MAX_DEPTH = 100                           # nested groups of the translated pattern
TOO_LARGE = "expression too large"        # Go's regexp/syntax ErrLarge
TOO_DEEP = "expression nests too deeply"  # Go's ErrNestingDepth
# What a matcher caches before its cache starts again (as RE2's DFA does when its memory is
# spent): some 2 MB at most, whatever the regex and the names
_KEPT_SET_STATES = 100_000                # automaton states in all the cached sets (4 bytes each)
_KEPT_MOVES = 10_000                      # cached steps, and cached (test, character) answers

_CHAR, _SPLIT, _ASSERT, _MATCH = range(4)
_START, _WORD, _NEWLINE, _OTHER = range(4)      # what precedes a position
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT)     # greediness does not change whether a name matches whole
_CATEGORIES = {sre.CATEGORY_DIGIT: "\\d", sre.CATEGORY_NOT_DIGIT: "\\D", sre.CATEGORY_SPACE: "\\s",
               sre.CATEGORY_NOT_SPACE: "\\S", sre.CATEGORY_WORD: "\\w", sre.CATEGORY_NOT_WORD: "\\W"}


class TooLarge(Exception):
    """The regex is beyond the bounds above; the argument is the description."""


def group_depth(pattern: str) -> int:
    """How deep the groups of a translated pattern nest (its literal parentheses are escapes)."""
    depth = deepest = 0
    escaped = False
    for c in pattern:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth -= 1
    return deepest


def _size(items, limit: int) -> int:
    """The states the automaton of ``items`` will have (at most ``limit + 1``: counted no
    further), from the parse alone, so that a regex too large costs nothing to build."""
    total = 0
    for op, av in items:
        if op is sre.SUBPATTERN:
            total += _size(av[3], limit)
        elif op is sre.BRANCH:
            total += len(av[1]) - 1 + sum(_size(alternative, limit) for alternative in av[1])
        elif op in _REPEATS:
            low, high, sub = av
            copies = low + 1 if high is sre.MAXREPEAT else high      # each optional copy or the loop adds a split
            total += copies * _size(sub, limit) + (high - low if high is not sre.MAXREPEAT else 1)
        else:
            total += 1
        if total > limit:
            return limit + 1
    return total


def _char_text(code: int) -> str:
    return f"\\U{code:08x}"


def _test_text(op, av) -> str:
    """One character test of the parsed pattern as a pattern of its own."""
    if op is sre.LITERAL:
        return _char_text(av)
    if op is sre.NOT_LITERAL:
        return f"[^{_char_text(av)}]"
    if op is sre.ANY:
        return "."
    parts = []
    for item, value in av:              # op is IN
        if item is sre.NEGATE:
            parts.append("^")
        elif item is sre.LITERAL:
            parts.append(_char_text(value))
        elif item is sre.RANGE:
            parts.append(_char_text(value[0]) + "-" + _char_text(value[1]))
        elif item is sre.CATEGORY and value in _CATEGORIES:
            parts.append(_CATEGORIES[value])
        else:
            raise TooLarge(f"unsupported class item {item}")
    return "[" + "".join(parts) + "]"


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _before(c: str) -> int:
    return _WORD if _is_word(c) else _NEWLINE if c == "\n" else _OTHER


def _holds(kind, multiline: bool, before: int, c: str | None) -> bool:
    """An assertion between a character of class ``before`` and ``c`` (None: the end). ``$``
    is RE2's: the end only (Python's also before a last newline, which no topic name has)."""
    if kind is sre.AT_BEGINNING:
        return before == _START or (multiline and before == _NEWLINE)
    if kind is sre.AT_BEGINNING_STRING:
        return before == _START
    if kind is sre.AT_END:
        return c is None or (multiline and c == "\n")
    if kind is sre.AT_END_STRING:
        return c is None
    boundary = (before == _WORD) != (c is not None and _is_word(c))
    if kind is sre.AT_BOUNDARY:
        return boundary
    if kind is sre.AT_NON_BOUNDARY:
        return not boundary
    raise TooLarge(f"unsupported assertion {kind}")


class _Automaton:
    """A Thompson automaton built from the end backwards: each item is compiled knowing the
    state that follows it. State arrays: op, arg (a test's index, an assertion), out, out2."""

    def __init__(self):
        self.op: list = []
        self.arg: list = []
        self.out: list = []
        self.out2: list = []
        self.tests: list = []              # compiled single-character patterns
        self._test_index: dict = {}

    def add(self, op: int, arg=None, out: int = -1, out2: int = -1) -> int:
        if len(self.op) >= MAX_STATES:
            raise TooLarge(TOO_LARGE)
        self.op.append(op)
        self.arg.append(arg)
        self.out.append(out)
        self.out2.append(out2)
        return len(self.op) - 1

    def sequence(self, items, flags: int, follow: int) -> int:
        for op, av in reversed(list(items)):
            follow = self.item(op, av, flags, follow)
        return follow

    def item(self, op, av, flags: int, follow: int) -> int:
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            return self.add(_CHAR, self._test(_test_text(op, av), flags), follow)
        if op is sre.SUBPATTERN:
            _group, on, off, sub = av
            return self.sequence(sub, (flags | on) & ~off, follow)
        if op is sre.BRANCH:
            starts = [self.sequence(alternative, flags, follow) for alternative in av[1]]
            state = starts[-1]
            for start in reversed(starts[:-1]):
                state = self.add(_SPLIT, None, start, state)
            return state
        if op in _REPEATS:
            return self._repeat(*av, flags, follow)
        if op is sre.AT:
            return self.add(_ASSERT, (av, bool(flags & sre.SRE_FLAG_MULTILINE)), follow)
        raise TooLarge(f"unsupported construct {op}")       # the translation refuses the rest

    def _repeat(self, low: int, high, sub, flags: int, follow: int) -> int:
        if high is sre.MAXREPEAT:
            loop = self.add(_SPLIT, None, -1, follow)
            self.out[loop] = self.sequence(sub, flags, loop)
            tail = loop
        else:
            tail = follow
            for _ in range(high - low):     # (x(x)?)?: each optional copy may end the repetition
                tail = self.add(_SPLIT, None, self.sequence(sub, flags, tail), follow)
        for _ in range(low):
            tail = self.sequence(sub, flags, tail)
        return tail

    def _test(self, text: str, flags: int) -> int:
        key = (text, flags & (sre.SRE_FLAG_IGNORECASE | sre.SRE_FLAG_DOTALL))
        index = self._test_index.get(key)
        if index is None:
            index = self._test_index[key] = len(self.tests)
            self.tests.append(re.compile(text, key[1]).fullmatch)
        return index


class Matcher:
    """``fullmatch(name)``: whether the whole name matches, in at most len(name) automaton steps."""

    def __init__(self, pattern: str):
        if group_depth(pattern) > MAX_DEPTH:
            raise TooLarge(TOO_DEEP)
        self.pattern = pattern
        parsed = sre_parse.parse(pattern)
        if _size(parsed, MAX_STATES) + 1 > MAX_STATES:
            raise TooLarge(TOO_LARGE)
        nfa = self._nfa = _Automaton()
        self._start = nfa.sequence(parsed, parsed.state.flags, nfa.add(_MATCH))
        self._contextual = _ASSERT in nfa.op            # else what precedes a position never matters
        self._members: dict = {}                        # (test, character) -> bool
        self._reset()

    def _reset(self) -> None:
        self._ids: dict = {}
        self._sets: list = []
        self._moves: dict = {}                          # (set, before, character) -> set
        self._accepts: dict = {}                        # (set, before) -> bool
        self._set_states = 0
        self._intern(())                                # 0: no state left, no match
        self._intern((self._start,))                    # 1: the start

    def _intern(self, states) -> int:
        """The index of the set ``states``, kept as the bytes of its sorted states (compact)."""
        key = array("i", sorted(states)).tobytes()
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self._sets)
            self._sets.append(key)
            self._set_states += len(key) // 4
        return found

    def fullmatch(self, name: str) -> bool:
        state, before = 1, _START
        contextual = self._contextual
        for c in name:
            following = self._moves.get((state, before, c))
            if following is None:
                following = self._move(state, before, c)
            if following == 0:
                return False
            state = following
            if contextual:
                before = _before(c)
        accepted = self._accepts.get((state, before))
        if accepted is None:
            accepted = self._accepts[(state, before)] = self._closure(self._sets[state], before, None)[1]
        return accepted

    def _closure(self, states, before: int, c: str | None) -> tuple[list, bool]:
        """The character tests live at a position (and whether the match state is), following
        splits and the assertions that hold between ``before`` and ``c``."""
        nfa, seen, tests, matched = self._nfa, set(), [], False
        stack = list(memoryview(states).cast("i"))
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            op = nfa.op[s]
            if op == _CHAR:
                tests.append(s)
            elif op == _SPLIT:
                stack.append(nfa.out2[s])
                stack.append(nfa.out[s])
            elif op == _ASSERT:
                if _holds(*nfa.arg[s], before, c):
                    stack.append(nfa.out[s])
            else:
                matched = True
        return tests, matched

    def _move(self, state: int, before: int, c: str) -> int:
        nfa = self._nfa
        tests, _ = self._closure(self._sets[state], before, c)
        following = {nfa.out[s] for s in tests if self._member(nfa.arg[s], c)}
        if self._set_states >= _KEPT_SET_STATES or len(self._moves) >= _KEPT_MOVES:
            self._reset()                       # RE2's DFA does the same when its cache is full
            return self._intern(following)      # not cached: ``state`` is gone with the cache
        found = self._moves[(state, before, c)] = self._intern(following)
        return found

    def _member(self, test: int, c: str) -> bool:
        key = (test, c)
        found = self._members.get(key)
        if found is None:
            if len(self._members) >= _KEPT_MOVES:
                self._members.clear()
            found = self._members[key] = self._nfa.tests[test](c) is not None
        return found
