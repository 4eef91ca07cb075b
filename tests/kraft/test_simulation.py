"""The simulator in CI: the named scenarios, and a few thousand random seeds.

A longer soak is the same thing from the command line:
``python -m raft.simulate --seeds 20000 --events 3000``.
"""
from __future__ import annotations

import pytest

from raft.simulate import InvariantViolation, run_seed
from raft.simulate.scenarios import SCENARIOS, settings_for_seed

CHUNKS = 20
SEEDS_PER_CHUNK = 100
EVENTS = 800


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_named_scenario(name, seed):
    SCENARIOS[name](seed)


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_seeds(chunk):
    """Seeds chunk*100+1 .. (chunk+1)*100, each with random faults, then the liveness check."""
    first = chunk * SEEDS_PER_CHUNK + 1
    for seed in range(first, first + SEEDS_PER_CHUNK):
        try:
            run_seed(seed, EVENTS, settings_for_seed(seed))
        except InvariantViolation as exc:
            pytest.fail(f"seed {seed}: {exc}\nreplay: python -m raft.simulate --first-seed {seed} --seeds 1 "
                        f"--events {EVENTS}")
