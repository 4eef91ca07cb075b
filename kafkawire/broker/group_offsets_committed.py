"""The committed offsets as OffsetFetch reads them: Kafka 4.3.1's group coordinator applies an
OffsetCommit at the log end (its timeline structures) and reads, for an OffsetFetch without
``require_stable``, the state at the partition's last committed offset (the high watermark). So a
commit not yet replicated, or one whose wait timed out (answered COORDINATOR_NOT_AVAILABLE) and
is not replicated since, is not read: the offset before it is, until the high watermark passes it.

kafkawire keeps one copy of the offsets, the latest; this remembers, per (group, topic, partition),
the offsets that commits replaced and the log end each commit's append reached, as long as the
high watermark is below it.

    writes = UncommittedOffsets(position)      # position(group id): (log end, high watermark) or None
    writes.replaced(group_id, {key: previous}) # after a commit's append, before the new values are in
    value = writes.committed(group_id, key, latest)
    writes.forget(group_id, keys)              # a deletion, or the group's partition loaded again
"""
from __future__ import annotations

__all__ = ["UncommittedOffsets"]


class UncommittedOffsets:
    """What each (group, topic, partition) held before its commits that the high watermark has not
    passed yet: [(the log end after the commit's append, the value before it)], oldest first."""

    def __init__(self, position=None):
        self.position = position
        self._replaced: dict[str, dict[tuple[str, int], list]] = {}

    def replaced(self, group_id: str, previous: dict) -> None:
        """A commit of ``group_id`` was just appended: ``previous`` maps each (topic, partition) it
        wrote to the value it replaced (None: there was none)."""
        where = None if self.position is None else self.position(group_id)
        if where is None:
            return
        log_end, high_watermark = where
        if log_end <= high_watermark:            # committed at once (the leader alone in the ISR)
            return
        by_key = self._replaced.setdefault(group_id, {})
        for key, value in previous.items():
            by_key[key] = self._pending(by_key.get(key, []), high_watermark) + [(log_end, value)]

    def committed(self, group_id: str, key: tuple[str, int], latest):
        """The value of ``key`` at the high watermark, ``latest`` being the newest one."""
        by_key = self._replaced.get(group_id)
        if not by_key or key not in by_key:
            return latest
        where = self.position(group_id)
        pending = [] if where is None else self._pending(by_key[key], where[1])
        if not pending:
            del by_key[key]
            if not by_key:
                del self._replaced[group_id]
            return latest
        by_key[key] = pending
        return pending[0][1]

    def forget(self, group_id: str, keys=None) -> None:
        """Read ``keys`` (all of the group's when None) as they are from now on."""
        by_key = self._replaced.get(group_id)
        if by_key is None:
            return
        for key in list(by_key) if keys is None else keys:
            by_key.pop(key, None)
        if not by_key:
            del self._replaced[group_id]

    @staticmethod
    def _pending(entries: list, high_watermark: int) -> list:
        return [entry for entry in entries if entry[0] > high_watermark]
