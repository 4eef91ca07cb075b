"""kafkawire.net.backoff.ExponentialBackoff against the waits Kafka's ExponentialBackoff gives."""
from __future__ import annotations

import random

import pytest

from kafkawire.net.backoff import ExponentialBackoff


def test_the_wait_doubles_to_the_cap_within_the_jitter():
    backoff = ExponentialBackoff(100, 2, 1000, 0.2, random.Random(3))
    for attempts, term in enumerate([100, 200, 400, 800, 1000, 1000]):
        wait = backoff.backoff_ms(attempts)
        assert int(0.8 * term) <= wait <= min(1.2 * term, 1000)


def test_without_jitter_exact_and_an_initial_wait_at_the_cap_or_zero_stays():
    assert [ExponentialBackoff(50, 2, 1000, 0).backoff_ms(a) for a in range(6)] == [50, 100, 200, 400, 800, 1000]
    assert [ExponentialBackoff(2000, 2, 1000, 0.2).backoff_ms(a) for a in range(3)] == [1000] * 3
    assert [ExponentialBackoff(0, 2, 1000, 0.2).backoff_ms(a) for a in range(3)] == [0] * 3


def test_a_jitter_outside_0_to_1_is_refused():
    with pytest.raises(ValueError, match="jitter must be between 0 and 1, but got 1.5"):
        ExponentialBackoff(100, 2, 1000, 1.5)
