"""The active controller's periodic duties, run between requests by the controller's loop
(MetadataController._lead): a NoOpRecord every metadata.max.idle.interval.ms, the delegation
token expiry sweep, the unclean leader elections, the automatic leader balancing, fencing a broker whose session expired, and
one event of the partition moves in progress at a time (fencing.py); and when the loop must next
wake for them. Kafka's QuorumController schedules the same duties as periodic tasks beside its
event handlers.

They live here, apart from controller.py, because they are one concern with its own timers
(``_next_noop_ms``, ``_next_token_sweep_ms``, set when the controller activates) and controller.py
would otherwise pass the project's module-size limit. PeriodicDuties is a base class of
MetadataController, not a separate object: the duties write through the controller's own write
path (``_write``, ``_generate``, ``_append_ahead``) and read its state, so they stay its methods.
"""
from __future__ import annotations

import asyncio
import logging
import time

from . import cluster, fence_timeline
from .delegation_tokens import MAX_RECORDS_PER_EXPIRATION, expired_token_records
from .errors import ApiError
from .frames import frame

log = logging.getLogger(__name__)


def _counted(records: list[bytes]):
    return records, len(records)


class PeriodicDuties:
    """The periodic duties of MetadataController (its base class; every attribute used here is
    the controller's)."""
    def _seconds_to_next_duty(self) -> float | None:
        if not self.is_active():
            return None
        if self.moves:
            return 0
        now = self.clock()
        due = [self._next_noop_ms] if self.max_idle_interval_ms > 0 else []
        if self.state.image.delegation_tokens:     # a sweep of no tokens writes nothing: no need to wake
            due.append(self._next_token_sweep_ms)
        for task in (self.unclean_elections, self.leader_balance):
            if task.next_due_ms(self.state) is not None:
                due.append(task.due_ms)
        expiry = self.sessions.next_expiry_ms(self._unfenced_brokers())
        if expiry is not None:
            due.append(expiry)
        return max(min(due) - now, 0) / 1000 if due else None

    def _unfenced_brokers(self) -> list[int]:
        return [b.id for b in self.state.image.brokers.values() if not b.fenced]

    async def _periodic_duties(self) -> None:
        now = self.clock()
        if self.max_idle_interval_ms > 0 and now >= self._next_noop_ms:
            # Kafka writes one every metadata.max.idle.interval.ms while active, busy or not.
            self._next_noop_ms = now + self.max_idle_interval_ms
            try:
                await self._write(lambda: ([frame("NoOpRecord")], None))
            except ApiError:
                return
        if now >= self._next_token_sweep_ms and self.state.image.delegation_tokens:
            await self._sweep_expired_tokens(now)
        await self.unclean_elections.run_if_due(self, now)
        await self.leader_balance.run_if_due(self, now)
        stale = self.sessions.stale_broker(self._unfenced_brokers(), self.clock())
        if stale is not None:
            log.info("controller %d: fencing broker %d, whose session expired", self.node_id, stale)
            try:
                await self._write(lambda: (cluster.fence_records(self.state, stale,
                                                                 self.moves), None))
            except ApiError:
                return

    async def _move_partitions(self) -> None:
        """One event of the partition moves in progress (fencing.py), appended without waiting
        for its commit (the pipeline bounds how many wait), then the loop is yielded, so the
        requests that came meanwhile run before the next event."""
        await self._turn(None)
        if self.is_active() and self.moves:
            called_ms = self.clock()
            cpu_started = time.process_time() if fence_timeline.enabled() else 0.0
            records, _ = self._generate(lambda: (self.moves.next_records(self.state),
                                                 None), called_ms)
            write = None
            if records:
                try:
                    write = self._append_ahead(records)
                except ApiError:
                    return
                if fence_timeline.enabled():
                    fence_timeline.step(self.node_id, write.last_offset - len(records) + 1, len(records),
                                        time.process_time() - cpu_started, self.moves.leaderships_left())
            self.moves.log_when_leaderships_committed(self.node_id, self.pipeline.last_answer() if write is None
                                                      else write.answer)
        await asyncio.sleep(0)

    async def _sweep_expired_tokens(self, now: int) -> None:
        """QuorumController's expireDelegationTokens task: every delegation.token.expiry.check.interval.ms,
        and again at once while a sweep hit its batch limit."""
        self._next_token_sweep_ms = now + self.delegation_tokens.expiry_check_interval_ms
        try:
            count, _ = await self._write(lambda: _counted(expired_token_records(self.state.image, self.wall_clock_ms())))
        except ApiError:
            return
        if count >= MAX_RECORDS_PER_EXPIRATION:
            self._next_token_sweep_ms = now
