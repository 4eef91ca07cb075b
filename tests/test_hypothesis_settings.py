"""The suite's parametrized Hypothesis tests keep their settings flat from case to case.

Hypothesis's pytest plugin wraps a parametrized test's settings once more per case; with every
Kafka schema as a case (~960 with ../shared) that chain overflowed the stack inside Hypothesis.
tests/conftest.py puts the settings back after each case; these cases check that it does."""
import pytest
from hypothesis import given, settings, strategies as st


def chain_length(current: settings) -> int:
    length = 0
    while current is not None:
        current = current._fallback      # Hypothesis's parent link; no public accessor exists
        length += 1
    return length


@pytest.mark.parametrize("case", range(40))
@settings(max_examples=1)
@given(st.none())
def test_settings_chain_stays_short_across_cases(case, _none):
    # decorator settings -> the plugin's one wrapper -> profile -> Hypothesis's default: 4 or so.
    # Without the reset, case k sees about k + 4.
    assert chain_length(settings.default) <= 8, f"case {case}: settings chain of {chain_length(settings.default)}"
