"""What the named scenarios share: a quiet simulation, bounded waits that fail with the
cluster's state, and small questions about it (the leader, its voters, a commit)."""
from __future__ import annotations

from .invariants import InvariantViolation
from .world import SimSettings, Simulation


def expect(condition: bool, what: str, sim: Simulation) -> None:
    if not condition:
        raise InvariantViolation("scenario", f"{what}\n{sim.describe()}")


def _quiet(seed: int, **settings) -> Simulation:
    sim = Simulation(seed, SimSettings(drop_rate=0.0, duplicate_rate=0.0, **settings))
    sim.faults_enabled = False
    sim.start()
    return sim


def _run_until(sim: Simulation, ms: int, predicate, what: str) -> None:
    expect(sim.run_until(sim.now + ms, predicate), f"{what} within {ms} ms", sim)


def _leader(sim: Simulation):
    leaders = [n for n in sim.leaders()]
    return max(leaders, key=lambda n: n.running.epoch) if leaders else None


def _voter_ids(node) -> set[int]:
    return set(node.core.voters().ids)


def _commit_one(sim: Simulation, what: str, ms: int = 10_000) -> None:
    state: dict[str, object] = {}

    def done():
        token = state.get("token")
        if token is None or token in sim.failed_tokens:
            state["token"] = sim.propose()
            return False
        return token in sim.committed_tokens
    _run_until(sim, ms, done, what)
