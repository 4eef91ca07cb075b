"""The schedule of the active controller's periodic election tasks, as Kafka 4.3.1's
PeriodicTaskControlManager runs its "electUnclean" and "electPreferred" tasks: the first run one
period after the controller became active, the next one period after each run's start, or
IMMEDIATE_PERIOD_MS after a run that wrote its batch limit (MAX_ELECTIONS_PER_IMBALANCE
records) or, kafkawire's own, stopped short of the partitions it had to look at (``unfinished``),
as a PeriodicTask whose operation answers "more to do" is put back at once. No run
while the controller is not active: periodic_duties.py looks at the tasks only then, and a new
activation starts the period again (Kafka cancels every periodic task on losing the
leadership and schedules them afresh on winning it).

A subclass says which records one run writes (``records``) and whether a run could write any
(``pending``, which keeps the controller's loop from waking for a run that has nothing to do;
it must not walk the partitions: the loop asks it at every wake).
"""
from __future__ import annotations

from .errors import ApiError
from .state import ControllerState

MAX_ELECTIONS_PER_IMBALANCE = 1000          # ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE
IMMEDIATE_PERIOD_MS = 10                    # PeriodicTask.DEFAULT_IMMEDIATE_PERIOD_NS


class PeriodicElectionTask:
    """One periodic election task's schedule on the active controller. ``enabled`` False: the
    task is not registered (Kafka registers electPreferred only with auto.leader.rebalance.enable),
    so it never runs."""

    def __init__(self, interval_ms: int, enabled: bool = True):
        self.interval_ms = interval_ms
        self.enabled = enabled
        self.max_elections = MAX_ELECTIONS_PER_IMBALANCE
        self.due_ms = 0
        self.checked_ms = None      # the time of the last look at whether a run was due
        self.runs = 0               # the runs whose write completed

    def records(self, state: ControllerState, limit: int) -> list[bytes]:
        """One run's records, at most about ``limit`` of them."""
        raise NotImplementedError

    def pending(self, state: ControllerState) -> bool:
        """Whether a run might write something, told in constant time."""
        raise NotImplementedError

    def unfinished(self) -> bool:
        """Whether the last run left work it had looked at no more of (then the next run comes
        IMMEDIATE_PERIOD_MS later, as after a run that hit its limit)."""
        return False

    def activate(self, now: int) -> None:
        self.due_ms = now + self.interval_ms

    def next_due_ms(self, state: ControllerState) -> int | None:
        """When the controller must wake for it; None while disabled or while a run would write
        nothing (the change that gives it work wakes the controller anyway)."""
        return self.due_ms if self.enabled and self.pending(state) else None

    async def run_if_due(self, controller, now: int) -> None:
        """One run, through ``controller.write`` (a write's ApiError, leadership lost, ends it)."""
        self.checked_ms = now
        if not self.enabled or now < self.due_ms:
            return
        self.due_ms = now + self.interval_ms

        def generate():
            records = self.records(controller.state, self.max_elections)
            return records, len(records)
        try:
            count, _ = await controller.write(generate)
        except ApiError:
            return
        self.runs += 1
        if count >= self.max_elections or self.unfinished():
            self.due_ms = now + IMMEDIATE_PERIOD_MS
