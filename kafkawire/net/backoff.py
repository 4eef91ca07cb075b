"""Kafka's ExponentialBackoff (org.apache.kafka.common.utils): the wait before a try after
``attempts`` failed ones grows by ``multiplier`` each time from ``initial_ms`` up to ``max_ms``,
each wait scaled by a random factor within ``jitter`` of 1 (so that many waiters started by one
event do not all try again at once), and never past ``max_ms``.

    backoff = ExponentialBackoff(100, 2, 1000, 0.2)
    backoff.backoff_ms(0)      # 80-120 ms
    backoff.backoff_ms(5)      # 800-1000 ms: at the cap
"""
from __future__ import annotations

import math
import random

__all__ = ["ExponentialBackoff"]


class ExponentialBackoff:
    def __init__(self, initial_ms: float, multiplier: int, max_ms: float, jitter: float, rng=random):
        if not 0 <= jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, but got {jitter}")
        self.initial_ms = min(max_ms, initial_ms)
        self.multiplier = multiplier
        self.max_ms = max_ms
        self.jitter = jitter
        self.rng = rng
        # the exponent at which the wait reaches the cap (0: the initial wait is the cap)
        self._exp_max = math.log(max_ms / max(initial_ms, 1)) / math.log(multiplier) if max_ms > initial_ms else 0

    def backoff_ms(self, attempts: int) -> float:
        """The wait after ``attempts`` failed tries past the first (0: the first retry's)."""
        if self._exp_max == 0:
            return self.initial_ms
        term = self.initial_ms * self.multiplier ** min(attempts, self._exp_max)
        factor = self.rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter > 0 else 1.0
        return min(int(factor * term), self.max_ms)
