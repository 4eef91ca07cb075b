"""A clock for the nemesis's liveness bounds that counts only the time its processes could run.

On the shared 2-core machine at a load average of 20-30 a restarted node took 51 s to log its
first line (its imports waiting for a core), and a wait for every replica back in the ISR ran
out its 60 s without anything being wrong but the load. Such a wait is bounded here by the time
the cluster had: the wall time since the wait began, less the longest time any one of its
processes (a node's event loop, the nemesis's own driver) spent runnable but waiting for a core
meanwhile, as the kernel counts it (the second field of /proc/<pid>/schedstat). A node that is
slow or hung by itself (running, or asleep) gets no more time than the bound.

    clock = RunnableClock(lambda: [os.getpid(), *node_pids])
    while not condition():
        if clock.elapsed() > bound_s:
            raise ...(f"... ({clock.describe()})")
"""
from __future__ import annotations

import time


def waiting_for_a_core(pid: int) -> float | None:
    """Seconds the process's main thread (a node's event loop) has spent runnable but not
    running; None for a process gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


class RunnableClock:
    """Seconds since it was made, less the longest time one of ``pids()`` waited for a core
    since (a process first seen later counts from then)."""

    def __init__(self, pids, *, read=waiting_for_a_core, now=time.monotonic):
        self.pids, self.read, self.now = pids, read, now
        self.started = now()
        self.first: dict[int, float] = {}
        self.waited: dict[int, float] = {}
        self._sample()

    def _sample(self) -> None:
        for pid in self.pids():
            value = self.read(pid)
            if value is not None:
                self.waited[pid] = value - self.first.setdefault(pid, value)

    @property
    def starved(self) -> float:
        return max(self.waited.values(), default=0.0)

    def elapsed(self) -> float:
        self._sample()
        return self.now() - self.started - self.starved

    def describe(self) -> str:
        return (f"{self.now() - self.started:.0f} s of wall time, of which the most starved process "
                f"waited {self.starved:.0f} s for a core")
