"""Broker sessions on the active controller: Kafka's BrokerHeartbeatManager.

It exists only while the controller is active and starts, as Kafka's does on activation,
with every registered broker freshly touched. A broker whose last heartbeat is older than the
session timeout (broker.session.timeout.ms, 9 s) is stale and gets fenced; ``next_state`` is
calculateNextBrokerState, the FENCED / UNFENCED / CONTROLLED_SHUTDOWN / SHUTDOWN_NOW machine a
heartbeat drives.
"""
from __future__ import annotations

import enum
import sys
from collections.abc import Callable
from dataclasses import dataclass

SESSION_TIMEOUT_MS = 9000
HEARTBEAT_INTERVAL_MS = 2000             # broker.heartbeat.interval.ms (KRaftConfigs)


class BrokerState(enum.Enum):
    FENCED = (True, False)
    UNFENCED = (False, False)
    CONTROLLED_SHUTDOWN = (False, True)
    SHUTDOWN_NOW = (True, True)

    @property
    def fenced(self) -> bool:
        return self.value[0]

    @property
    def in_controlled_shutdown(self) -> bool:
        return self is BrokerState.CONTROLLED_SHUTDOWN

    @property
    def should_shut_down(self) -> bool:
        return self is BrokerState.SHUTDOWN_NOW


def current_state(registration) -> BrokerState:
    if registration.in_controlled_shutdown:
        return BrokerState.CONTROLLED_SHUTDOWN
    return BrokerState.FENCED if registration.fenced else BrokerState.UNFENCED


@dataclass
class _Session:
    last_contact_ms: int
    metadata_offset: int = -1
    controlled_shutdown_offset: int = -1


class BrokerHeartbeatManager:
    def __init__(self, session_timeout_ms: int = SESSION_TIMEOUT_MS):
        self.session_timeout_ms = session_timeout_ms
        self._sessions: dict[int, _Session] = {}

    def activate(self, broker_ids, now_ms: int) -> None:
        self._sessions = {b: _Session(now_ms) for b in broker_ids}

    def touch(self, broker_id: int, now_ms: int | None, metadata_offset: int | None = None) -> None:
        """Contact from the broker at ``now_ms`` (None: the contact was noted already, as for a
        heartbeat that timed out, and a broker without a session is left alone), and the
        metadata offset it reported."""
        if now_ms is None:
            session = self._sessions.get(broker_id)
            if session is None:
                return
        else:
            session = self._sessions.setdefault(broker_id, _Session(now_ms))
            session.last_contact_ms = now_ms
        if metadata_offset is not None:
            session.metadata_offset = metadata_offset

    def new_registration(self, broker_id: int, now_ms: int) -> None:
        """A new incarnation: the old one's session goes (BrokerHeartbeatManager.remove) and a
        fresh one starts, fenced, with no offsets."""
        self._sessions[broker_id] = _Session(now_ms)

    def amended_registration(self, broker_id: int, fenced: bool) -> None:
        """BrokerHeartbeatManager.register for the same incarnation again: the session stays,
        its last contact untouched (Kafka keeps contact times by broker epoch, which an
        amendment keeps). An amendment keeps the broker's fencing, so the session forgets its
        metadata offset (Kafka carries it only across a fencing change) and, when fenced, any
        controlled shutdown offset."""
        session = self._sessions.get(broker_id)
        if session is None:
            return
        session.metadata_offset = -1
        if fenced:
            session.controlled_shutdown_offset = -1

    def has_valid_session(self, broker_id: int, fenced: bool, now_ms: int) -> bool:
        session = self._sessions.get(broker_id)
        return session is not None and not fenced and session.last_contact_ms + self.session_timeout_ms >= now_ms

    def note_controlled_shutdown(self, broker_id: int, offset: int) -> None:
        """maybeUpdateControlledShutdownOffset: the end of the batch that began the shutdown."""
        session = self._sessions.get(broker_id)
        if session is not None and session.controlled_shutdown_offset < 0:
            session.controlled_shutdown_offset = offset

    def lowest_active_offset(self, active_ids) -> int:
        offsets = [self._sessions[b].metadata_offset for b in active_ids if b in self._sessions]
        return min(offsets) if offsets else sys.maxsize

    def stale_broker(self, unfenced_ids, now_ms: int) -> int | None:
        """The unfenced broker heard from longest ago, if its session has expired."""
        candidates = [(self._sessions[b].last_contact_ms, b) for b in unfenced_ids if b in self._sessions]
        if not candidates:
            return None
        last, broker = min(candidates)
        return broker if last + self.session_timeout_ms < now_ms else None

    def next_expiry_ms(self, unfenced_ids) -> int | None:
        times = [self._sessions[b].last_contact_ms for b in unfenced_ids if b in self._sessions]
        return min(times) + self.session_timeout_ms + 1 if times else None

    def next_state(self, broker_id: int, current: BrokerState, *, want_fence: bool, want_shut_down: bool,
                   metadata_offset: int, register_offset: int, has_leaderships: Callable[[], bool],
                   lowest_active_offset: Callable[[], int]) -> BrokerState:
        """calculateNextBrokerState. ``has_leaderships`` and ``lowest_active_offset`` are called
        only in the states that need them, as Kafka calls its Supplier."""
        if current is BrokerState.FENCED:
            if want_shut_down:
                return BrokerState.SHUTDOWN_NOW
            if not want_fence and metadata_offset >= register_offset:
                return BrokerState.UNFENCED
            return BrokerState.FENCED
        if current is BrokerState.UNFENCED:
            if want_fence:
                return BrokerState.SHUTDOWN_NOW if want_shut_down else BrokerState.FENCED
            if want_shut_down:
                return BrokerState.CONTROLLED_SHUTDOWN if has_leaderships() else BrokerState.SHUTDOWN_NOW
            return BrokerState.UNFENCED
        if current is BrokerState.CONTROLLED_SHUTDOWN:
            if has_leaderships():
                return BrokerState.CONTROLLED_SHUTDOWN
            session = self._sessions.get(broker_id)
            shutdown_offset = session.controlled_shutdown_offset if session is not None else -1
            if shutdown_offset <= lowest_active_offset():     # -1 (unknown after a failover) passes, as in Kafka
                return BrokerState.SHUTDOWN_NOW
            return BrokerState.CONTROLLED_SHUTDOWN
        return current
