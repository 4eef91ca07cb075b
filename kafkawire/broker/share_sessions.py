"""Share sessions (KIP-932), Kafka 4.3.1's ShareSessionCache and ShareSessionContext: like a fetch
session, a share consumer's session with one broker names the partitions it fetches, so that each
ShareFetch need only carry what changed.

    sessions = ShareSessions(max_sessions=2000)
    session = sessions.open_or_advance(group_id, member_id, epoch, added, forgotten)

Epochs: 0 opens a session (replacing the member's previous one on this broker), -1 closes it
after the request is served, any other must be the session's next epoch
(INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without a session). A new session beyond
``max_sessions`` (``group.share.max.share.sessions``, Kafka's default 2000) is
SHARE_SESSION_LIMIT_REACHED.
"""
from __future__ import annotations

from kafkawire.protocol.error_codes import Errors

__all__ = ["ShareSession", "ShareSessions", "ShareSessionError", "INITIAL_EPOCH", "FINAL_EPOCH"]

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
MAX_SESSIONS = 2000
EPOCH_MAX = 2**31 - 1


class ShareSessionError(Exception):
    def __init__(self, code: int, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


class ShareSession:
    __slots__ = ("group_id", "member_id", "epoch", "partitions")

    def __init__(self, group_id: str, member_id: str):
        self.group_id, self.member_id = group_id, member_id
        self.epoch = 1                    # the epoch the next request must carry
        self.partitions: dict = {}        # (topic id, partition) -> None, in the order first named


class ShareSessions:
    def __init__(self, max_sessions: int = MAX_SESSIONS):
        self.max_sessions = max_sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def open_or_advance(self, group_id: str, member_id: str, epoch: int, added, forgotten=()) -> ShareSession:
        """The request's session with ``added`` (topic id, partition) pairs in it and
        ``forgotten`` ones out of it; its epoch moved to the next. Raises ShareSessionError."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if key not in self.sessions and len(self.sessions) >= self.max_sessions:
                raise ShareSessionError(Errors.SHARE_SESSION_LIMIT_REACHED)
            session = self.sessions[key] = ShareSession(group_id, member_id)
        else:
            session = self.sessions.get(key)
            if session is None:
                raise ShareSessionError(Errors.SHARE_SESSION_NOT_FOUND)
            if epoch != FINAL_EPOCH:
                if epoch != session.epoch:
                    raise ShareSessionError(Errors.INVALID_SHARE_SESSION_EPOCH)
                session.epoch = 1 if session.epoch == EPOCH_MAX else session.epoch + 1
        for pair in forgotten:
            session.partitions.pop(pair, None)
        for pair in added:
            session.partitions.setdefault(pair, None)
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def check_epoch(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """ShareAcknowledge's check: a session at ``epoch`` (moved on) or closing (-1)."""
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(Errors.INVALID_SHARE_SESSION_EPOCH)
        return self.open_or_advance(group_id, member_id, epoch, ())
