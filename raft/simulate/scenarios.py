"""Named scenarios from the seeds (KIP-595, KIP-853), and the random settings of a seed."""
from __future__ import annotations

import random

from .world import SimSettings


def settings_for_seed(seed: int) -> SimSettings:
    """Vary the cluster and the network per seed, reproducibly."""
    rng = random.Random(seed * 7919)
    return SimSettings(
        voters=rng.choice([1, 3, 3, 3, 5, 5]),
        observers=rng.choice([0, 0, 1, 2]),
        kraft_version=rng.choice([0, 1, 1]),
        drop_rate=rng.choice([0.0, 0.01, 0.05, 0.1]),
        duplicate_rate=rng.choice([0.0, 0.01, 0.05]),
        max_delay_ms=rng.choice([5, 40, 150]),
        fault_every_ms=rng.choice([1000, 3000, 8000]),
        snapshot_every=rng.choice([20, 60, 200]),
        pre_vote=rng.random() < 0.9,
        old_vote_version_nodes=rng.choice([0, 0, 0, 1]),
        auto_join_observers=rng.random() < 0.5,
        admin_every_ms=rng.choice([0, 0, 3000, 8000]),
    )


SCENARIOS: dict = {}
