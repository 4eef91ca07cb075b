"""The deterministic simulator of the raft core: ``python -m kafkawire.raft.simulate``."""
from .invariants import Invariants, InvariantViolation
from .world import SimSettings, Simulation, run_seed

__all__ = ["Simulation", "SimSettings", "run_seed", "Invariants", "InvariantViolation"]
