"""kafkawire.net.backoff.ExponentialBackoff against the waits Kafka's ExponentialBackoff gives."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings, strategies as st

from kafkawire.net.backoff import ExponentialBackoff
from kafkawire.net.client import NetworkClient


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


@given(initial_ms=st.integers(0, 5_000), max_ms=st.integers(0, 60_000), attempts=st.integers(0, 80),
       seed=st.integers(0, 2**32))
@settings(max_examples=300, deadline=None)
def test_the_network_clients_reconnect_wait_never_passes_reconnect_backoff_max_ms(initial_ms, max_ms, attempts, seed):
    # The wait before the next connection after ``attempts + 1`` failures in a row: jittered
    # around reconnect.backoff.ms * 2 ** attempts, but at most reconnect.backoff.max.ms (which
    # the client raises to reconnect.backoff.ms when set below it).
    client = NetworkClient(reconnect_backoff_ms=initial_ms, reconnect_backoff_max_ms=max_ms, rng=random.Random(seed))
    cap = max(initial_ms, max_ms)
    wait = client._backoff_ms(attempts + 1)
    assert wait <= cap
    term = min(initial_ms * 2 ** attempts, cap)
    assert wait >= int(0.8 * term) - 1


def test_the_network_clients_reconnect_wait_at_the_cap_is_jittered_below_it_not_above():
    client = NetworkClient(reconnect_backoff_ms=100, reconnect_backoff_max_ms=1000, rng=random.Random(5))
    waits = [client._backoff_ms(20) for _ in range(200)]
    assert max(waits) == 1000 and min(waits) < 1000 and min(waits) >= 800
    # the first failures: 100 and 200 ms give or take 20%, as before
    assert 80 <= client._backoff_ms(1) <= 120 and 160 <= client._backoff_ms(2) <= 240


def test_the_folded_backoffs_never_pass_their_caps():
    # Each backoff that mirrors a Kafka ExponentialBackoff now is one, so its jitter stays under the cap.
    from kafkawire.broker import share_lag
    from kafkawire.tools.admin_client import Admin, AdminConfig
    assert max(share_lag.backoff_ms(attempt) for attempt in range(4, 40) for _ in range(20)) <= share_lag.BACKOFF_MAX_MS
    admin = Admin(AdminConfig.create(bootstrap_server="127.0.0.1:1"), rng=random.Random(2))
    waits = [admin._backoff_ms(tries) for tries in range(1, 30) for _ in range(20)]
    assert max(waits) <= admin.config.retry_backoff_max_ms and min(waits) >= 0.8 * admin.config.retry_backoff_ms
    assert 80 <= admin._backoff_ms(1) <= 120 and 160 <= admin._backoff_ms(2) <= 240
