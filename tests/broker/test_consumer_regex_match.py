"""A SubscribedTopicRegex matched without backtracking (kafkawire.broker.consumer_regex_match), as
RE2J matches it in Kafka: regexes on which Python's ``re`` runs for hours answer in a step per
character; what is too large or too deeply nested to match in bounded memory is refused at the
heartbeat; a resolution over many topics runs in slices of the loop. In-process, on a manual clock.
"""
from __future__ import annotations

import re
import time
import uuid

from kafkawire.broker import consumer_regex_refresh
from kafkawire.broker.consumer_coordinator import TopicsView
from kafkawire.broker.consumer_regex import Refused, compiled, regex_error, translated
from kafkawire.protocol.error_codes import Errors

from tests.interop.test_re2j_regex_vs_java import TOPICS, generated
from .test_consumer_regex import harness, regex_beat

LONG = "a" * 248                       # a topic name is at most 249 characters

# Regexes Python's ``re`` backtracks on exponentially (or as n^10): (regex, name, matches whole?)
BACKTRACKING = [
    ("(a+)+$", LONG + "-", False),
    ("(a+)+$", LONG + "a", True),
    ("(a*)*b", LONG + "-", False),
    ("(a|a)*b", LONG + "-", False),
    ("(a|aa)*(b|-)", LONG + "-", True),
    ("(.*a){20}", LONG + "-", False),
    (".*.*.*.*.*.*.*.*.*.*b", LONG + "-", False),
    ("(x+x+)+y", "x" * 248 + "-", False),
    ("[a-z]*a[a-z]{200}", "b" + LONG, True),
    ("(?i)(A+)+\\z", LONG + "-", False),
    ("\\b(a+)+\\b-", LONG + "-", True),
]


def test_regexes_python_backtracks_on_answer_in_a_step_per_character():
    started = time.process_time()
    for regex, name, matches in BACKTRACKING:
        assert regex_error(regex) is None, regex
        assert compiled(regex).fullmatch(name) is matches, regex
    # Python's ``re`` takes hours for any one of them; the matcher a few ms for all (CPU time).
    assert time.process_time() - started < 2.0


def test_the_matcher_answers_as_pythons_re_on_generated_regexes():
    """The translation's pattern, matched as an automaton, against Python's ``re`` on the same
    pattern: the tokens of tests/interop/test_re2j_regex_vs_java.py (which checks the translation
    against RE2J's jar), from fixed seeds."""
    names = TOPICS + ("", "aaaa", "a-b", "ab-", "Kk", "_a_", "9-")
    checked = 0
    for regex in generated(5, 900):
        try:
            python = re.compile(translated(regex))
        except (Refused, re.error):
            assert compiled(regex) is None, regex
            continue
        matcher = compiled(regex)
        assert matcher is not None, regex
        checked += 1
        for name in names:
            assert matcher.fullmatch(name) is (python.fullmatch(name) is not None), (regex, name)
    assert checked > 300


def test_regexes_too_large_or_too_deep_to_match_in_bounded_memory_are_refused_at_the_heartbeat():
    """Go's regexp/syntax descriptions; RE2J 1.8 has neither bound (docs/differences.md). 500
    nested groups made Python's parser overflow its recursion (a RecursionError at the heartbeat)."""
    cases = {
        "(a{1000}){1000}": "expression too large",
        "((a{100}){100}){100}": "expression too large",
        "(" * 500 + "a" + ")" * 500: "expression nests too deeply",
        "(?:" * 101 + "a" + ")" * 101: "expression nests too deeply",
    }
    h = harness()
    for i, (regex, reason) in enumerate(cases.items()):
        assert regex_error(regex) == reason and compiled(regex) is None
        response = regex_beat(h, f"m{i}", 0, regex)
        assert response.error_code == Errors.INVALID_REGULAR_EXPRESSION, regex
        assert response.error_message.endswith(f"is not a valid regular expression: {reason}."), regex
    # Within both bounds: a list of 600 topics, groups 100 deep.
    listed = "|".join(f"orders-region-{i:04d}" for i in range(600))
    assert regex_error(listed) is None and compiled(listed).fullmatch("orders-region-0599")
    assert regex_error("(?:" * 100 + "a" + ")" * 100) is None


def test_a_resolution_over_many_topics_runs_in_slices_of_the_loop_over_the_image_it_started_with(monkeypatch):
    h = harness()
    topics = tuple((f"t{i:04d}", uuid.UUID(int=100 + i), 1) for i in range(300))
    h.view = TopicsView.of(topics, version=7)
    monkeypatch.setattr(consumer_regex_refresh, "SCAN_SLICE_S", 0.0)     # a slice per 64 names
    slices = []
    real_advance = consumer_regex_refresh.Scan.advance

    def advance(scan, deadline):
        done = real_advance(scan, deadline)
        if not slices or slices[-1] != done:
            h.view = TopicsView.of(topics + (("t9999", uuid.UUID(int=99), 1),), version=8)   # later image
        slices.append(done)
        return done
    monkeypatch.setattr(consumer_regex_refresh.Scan, "advance", advance)
    regex_beat(h, "m1", 0, "t0.*[13579]")
    h.timer.advance(0)
    assert slices == [False] * 4 + [True]                  # 300 names, 64 a slice
    expected = {name for name, _, _ in topics if name.startswith("t0") and name[-1] in "13579"}
    assert h.group.resolved["t0.*[13579]"].topics == expected and "t9999" not in expected
    assert h.coordinator.regexes.pending == set()


def test_a_matcher_whose_cache_fills_starts_it_again_and_answers_the_same(monkeypatch):
    """RE2's DFA when its memory is spent: the cache (sets of automaton states, steps) starts
    again, bounded whatever the regex and names; the answers do not change."""
    import random

    from kafkawire.broker import consumer_regex_match
    monkeypatch.setattr(consumer_regex_match, "_KEPT_SET_STATES", 60)
    regex = "[ab]*a[ab]{12}(-[0-9]+)?"            # a DFA of 2^13 states: every name a new path
    matcher, python = consumer_regex_match.Matcher(translated(regex)), re.compile(regex)
    rnd = random.Random(29)
    names = ["".join(rnd.choice("ab") for _ in range(rnd.randint(1, 60))) + rnd.choice(("", "-7", "-")) for _ in range(300)]
    assert [matcher.fullmatch(n) for n in names] == [python.fullmatch(n) is not None for n in names]
    assert any(python.fullmatch(n) for n in names) and not all(python.fullmatch(n) for n in names)
    assert matcher._set_states <= 60 + 40 and len(matcher._sets) < 20       # started again, many times
