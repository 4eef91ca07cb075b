"""Share sessions (KIP-932), Kafka 4.3.1's ShareSessionCache and ShareSessionContext: like a fetch
session, a share consumer's session with one broker names the partitions it fetches, so that each
ShareFetch need only carry what changed.

    sessions = ShareSessions(max_sessions=2000)
    session = sessions.open_or_advance(group_id, member_id, epoch, added, forgotten)

Epochs: 0 opens a session (replacing the member's previous one on this broker), -1 closes it
after the request is served, any other must be the session's next epoch
(INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without a session). A new session beyond
``max_sessions`` (``group.share.max.share.sessions``, Kafka's default 2000) is
SHARE_SESSION_LIMIT_REACHED, unless a session idle for longer than ``IDLE_EVICTION_MS`` can make
room (a client that vanished without closing its session; Kafka removes the sessions of a
connection when it closes, kafkawire when they sit idle past the longest share session timeout).
"""
from __future__ import annotations

import time

from kafkawire.protocol.error_codes import Errors

__all__ = ["ShareSession", "ShareSessions", "ShareSessionError", "INITIAL_EPOCH", "FINAL_EPOCH"]

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
MAX_SESSIONS = 2000
EPOCH_MAX = 2**31 - 1
IDLE_EVICTION_MS = 60_000            # group.share.max.session.timeout.ms: its member is gone by then


class ShareSessionError(Exception):
    def __init__(self, code: int, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


class ShareSession:
    __slots__ = ("group_id", "member_id", "epoch", "partitions", "last_used")

    def __init__(self, group_id: str, member_id: str, now: float):
        self.group_id, self.member_id, self.last_used = group_id, member_id, now
        self.epoch = 1                    # the epoch the next request must carry
        self.partitions: dict = {}        # (topic id, partition) -> None, in the order first named


class ShareSessions:
    def __init__(self, max_sessions: int = MAX_SESSIONS, clock=time.monotonic):
        self.max_sessions = max_sessions
        self.clock = clock
        self.sessions: dict[tuple[str, str], ShareSession] = {}     # least recently used first

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def open_or_advance(self, group_id: str, member_id: str, epoch: int, added, forgotten=()) -> ShareSession:
        """The request's session with ``added`` (topic id, partition) pairs in it and
        ``forgotten`` ones out of it; its epoch moved to the next. Raises ShareSessionError."""
        key, now = (group_id, member_id), self.clock()
        if epoch == INITIAL_EPOCH:
            self.sessions.pop(key, None)
            if len(self.sessions) >= self.max_sessions and not self._evict_idle(now):
                raise ShareSessionError(Errors.SHARE_SESSION_LIMIT_REACHED)
            session = self.sessions[key] = ShareSession(group_id, member_id, now)
        else:
            session = self.sessions.pop(key, None)
            if session is None:
                raise ShareSessionError(Errors.SHARE_SESSION_NOT_FOUND)
            self.sessions[key] = session                  # now the most recently used
            session.last_used = now
            if epoch != FINAL_EPOCH:
                if epoch != session.epoch:
                    raise ShareSessionError(Errors.INVALID_SHARE_SESSION_EPOCH)
                session.epoch = 1 if session.epoch == EPOCH_MAX else session.epoch + 1
        for pair in forgotten:
            session.partitions.pop(pair, None)
        for pair in added:
            session.partitions.setdefault(pair, None)
        return session

    def _evict_idle(self, now: float) -> bool:
        """Drop the least recently used session if it has been idle long enough: whether one was."""
        key, oldest = next(iter(self.sessions.items()))
        if (now - oldest.last_used) * 1000 < IDLE_EVICTION_MS:
            return False
        del self.sessions[key]
        return True

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def check_epoch(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """ShareAcknowledge's check: a session at ``epoch`` (moved on) or closing (-1)."""
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(Errors.INVALID_SHARE_SESSION_EPOCH)
        return self.open_or_advance(group_id, member_id, epoch, ())
