"""Runs every datadriven file in tests/kraft/testdata (see datadriven.py and interaction.py).

If one fails after an intended change, run ``pytest tests/kraft/test_interactions.py --rewrite``
and read the diff of the .txt files: commit it only if every changed line is what you meant.
"""
from pathlib import Path

import pytest

from .datadriven import parse, render
from .interaction import InteractionEnv

TESTDATA = Path(__file__).parent / "testdata"
FILES = sorted(TESTDATA.glob("*.txt"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_interaction(path, request):
    rewrite = request.config.getoption("--rewrite")
    cases, trailer = parse(path)
    env = InteractionEnv()
    failures = []
    for case in cases:
        got = env.handle(case)
        if rewrite:
            case.expected = got
        elif got != case.expected:
            failures.append(f"{path.name}:{case.line}: {case.text}\n--- expected\n{case.expected}\n--- got\n{got}")
            break   # later cases depend on this one
    if rewrite:
        path.write_text(render(cases, trailer))
    assert not failures, failures[0]


def test_there_are_interaction_files():
    assert len(FILES) >= 5
