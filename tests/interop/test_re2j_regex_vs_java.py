"""kafkawire.broker.consumer_regex against RE2J itself (the re2j jar of Kafka 4.3.1's libs, which
Kafka's group coordinator reads a SubscribedTopicRegex with): for generated regexes, from
tokens of RE2's syntax and Python's, the same topic names match, and a regex RE2J refuses is
refused, with RE2J's description wherever kafkawire finds the refusal (Python's own reason
only where Python's ``re`` refuses the translation). The regexes are drawn from a fixed seed.
"""
from __future__ import annotations

import random
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from kafkawire.broker.consumer_regex import Refused, compiled, regex_error, translated

SOURCE = Path(__file__).parent / "java" / "re2j" / "Re2jMatch.java"
TOPICS = ("orders", "Orders-1", "ORDERS", "a.b_c-9", "a", "A", "b", "-", "_", "0", "ab", "aB", "aa", "AAA", "a-z",
          "k", "K", "s", "S", "Q", "E", "x1", "topic.v2", "__consumer_offsets")
TOKENS = ("a", "b", "A", "s", "k", "K", "0", "9", "_", "-", ".", "^", "$", "|", "*", "+", "?", "*?", "??", "{2}", "{1,2}",
          "{2,}?", "{,2}", "{01}", "{", "}", "[", "]", ":", "(", ")", "(?:", "(?i)", "(?-i)", "(?i:", "(?i-s:", "(?U)",
          "(?U:", "(?s)", "(?m)", "(?P<n>", "(?<m>", "(?P<", "(?=", "(?#", "(?x)", "[:alpha:]", "[:^upper:]", "[:foo:]",
          "\\Q", "\\E", "\\", "\\-", "\\]", "\\[", "\\.", "\\d", "\\W", "\\pL", "\\P{Lu}", "\\p{^Ll}", "\\x41", "\\x{61}",
          "\\x{212A}", "\\x{17f}", "\\101", "\\012", "\\1", "\\z", "\\Z", "\\b", "\\C", "\\u0041", "&&", "~", "--")
CLASS_ITEMS = ("a", "z", "A", "K", "s", "-", "^", "]", "[", ":", "[:alpha:]", "[:^lower:]", "[:upper:]", "[:xdigit:]",
               "[:punct:]", "[:space:]", "[:cntrl:]", "[:print:]", "[:graph:]", "[:blank:]", "[:ascii:]", "[:^word:]",
               "[:alnum:]", "[:digit:]", "[:]", "[:x", "\\d", "\\D", "\\w", "\\S", "\\pL", "\\p{Ll}", "\\p{^Lu}", "\\PN",
               "\\x{17F}", "\\x{212A}", "\\x41", "\\-", "\\]", "\\\\", "&", "~", "|", "a-z", "0-9", "!-/", "\\Q", "\\b",
               "_", ".", "9")


def generated(seed: int, count: int) -> list[str]:
    rnd = random.Random(seed)
    regexes = ["".join(rnd.choice(TOKENS) for _ in range(rnd.randint(1, 7))) for _ in range(count)]
    for _ in range(count // 2):                          # bracket expressions, inside out
        prefix = rnd.choice(["", "(?i)", "^", "(?i:", "x"])
        body = "".join(rnd.choice(CLASS_ITEMS) for _ in range(rnd.randint(1, 5)))
        regexes.append(prefix + "[" + rnd.choice(["", "^"]) + body + "]" + rnd.choice(["", "+", "*", "]", "{2}"])
                       + (")" if prefix == "(?i:" else ""))
    return regexes


@pytest.fixture(scope="module")
def re2j(kafka_libs, tmp_path_factory):
    """re2j(regexes) -> RE2J's answer for each: a tuple of matches over TOPICS, or its description."""
    if not shutil.which("javac"):
        from tests.conftest import unavailable
        unavailable("javac is needed to ask RE2J how it reads regexes")
    jar = next(Path(kafka_libs).glob("re2j-*.jar"))
    classes = tmp_path_factory.mktemp("re2j-classes")
    subprocess.run(["javac", "-cp", str(jar), "-d", str(classes), str(SOURCE)], check=True, capture_output=True,
                   timeout=120)

    def ask(regexes: list[str]) -> list:
        lines = ",".join(t.encode().hex() for t in TOPICS) + "\n" + "".join(r.encode().hex() + "\n" for r in regexes)
        result = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", f"{jar}:{classes}", "Re2jMatch"],
                                input=lines, capture_output=True, text=True, timeout=120, check=True)
        answers = result.stdout.split("\n")[:-1]
        assert len(answers) == len(regexes), result.stderr[-2000:]
        return [a[1:] if a.startswith("!") else tuple(c == "1" for c in a) for a in answers]
    return ask


def ours(regex: str):
    """Our answer: matches over TOPICS (as kafkawire.broker.consumer_regex_match's automaton
    matches the translation), RE2J's description, or ("python", reason)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")               # a FutureWarning would mean Python reads a class otherwise
            re.compile(translated(regex))
    except Refused as exc:
        return str(exc)
    except (re.error, FutureWarning) as exc:
        return ("python", str(exc))
    matcher = compiled(regex)                            # what the resolution matches with: an automaton, not ``re``
    if matcher is None:
        return regex_error(regex)
    return tuple(matcher.fullmatch(t) for t in TOPICS)


def test_generated_regexes_match_and_are_refused_as_re2j_does(re2j):
    regexes = generated(29, 3000)
    differences = []
    refused = 0
    for regex, theirs in zip(regexes, re2j(regexes)):
        mine = ours(regex)
        refused += isinstance(theirs, str)
        agree = isinstance(theirs, str) if isinstance(mine, tuple) and mine[0] == "python" else mine == theirs
        if not agree:
            differences.append(f"{regex!r}: ours {mine}, RE2J {theirs}")
    print(f"\n{len(regexes)} regexes, {refused} refused by RE2J, {len(differences)} answered otherwise")
    assert refused and refused < len(regexes)              # both kinds of answer are compared
    assert not differences, "\n".join(differences[:20])
