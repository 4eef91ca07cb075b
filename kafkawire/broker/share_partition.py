"""One share-partition of a share group (KIP-932) without I/O: which records of a topic partition
are available, acquired (locked to one member until a deadline), acknowledged or archived, as
Kafka 4.3.1's SharePartition keeps them on the partition's leader.

    sp = SharePartition(start_offset=0)
    acquired = sp.acquire("member-1", [(0, 9, False)], max_records=500, now_ms=now, settings=s)
    code = sp.acknowledge("member-1", 0, 9, [ACCEPT], now_ms=now, settings=s)

The in-flight window is [``start_offset``, ``next_offset``): each offset in it has an entry
(state, delivery count, owner, lock deadline); offsets below ``start_offset`` are done (every
record acknowledged or archived) and offsets from ``next_offset`` on were never delivered. A
record is acquired with its delivery count raised by one; when its lock expires or it is released
it becomes available again, unless its delivery count reached ``delivery_count_limit``: then it
is archived (never delivered again, as Kafka's). ACCEPT acknowledges, REJECT archives, GAP
(offsets without a record: control batches) archives. The start offset moves past every
acknowledged or archived record at the front of the window.

The window holds at most ``max_record_locks`` offsets (``share.partition.max.record.locks``):
no new records are acquired beyond it, so every call's work is bounded by that limit and the
size of the request.

The durable part (start offset, each record's state and delivery count; not who holds it) is
read from and written to the share coordinator by kafkawire.broker.share_state_keeper, as
Kafka's SharePartition writes it: each write carries the batches that changed (``take_changes``),
not the whole window. An acknowledgement or a member's release is a transition, as Kafka's
InFlightState makes it: given a ``changed`` list, the records take their new state at once (no
other request may change them meanwhile, and the start offset does not move past them) and the
change is kept by ``commit`` once written or undone by ``rollback`` when the write failed (the
records acquired again by their member, or released when their lock passed meanwhile). Changes
without a transition (lock timeouts, skipped batches, a call without ``changed``) are kept at once
and written with the next write (``unwritten``, ``dirty``).
"""
from __future__ import annotations

from dataclasses import dataclass

from kafkawire.protocol.error_codes import Errors

from .share_errors import (FIRST_PAST_ACQUIRED, LAST_PAST_ACQUIRED, NOT_ACQUIRED, NOT_IN_CACHE, NOT_OWNER,
                           RENEW_DISABLED, with_message)

__all__ = ["SharePartition", "ShareSettings", "AVAILABLE", "ACQUIRED", "ACKNOWLEDGED", "ARCHIVED",
           "GAP", "ACCEPT", "RELEASE", "REJECT", "RENEW"]

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4          # Kafka's RecordState ids
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4                # AcknowledgeType ids
ACK_TYPES = frozenset((GAP, ACCEPT, RELEASE, REJECT))
RENEW_TYPES = ACK_TYPES | {RENEW}                                   # KIP-1222, ShareFetch/ShareAcknowledge v2


@dataclass(frozen=True)
class ShareSettings:
    """A share group's settings (its GROUP configs over the broker's, Kafka's defaults)."""
    record_lock_duration_ms: int = 30_000        # share.record.lock.duration.ms
    delivery_count_limit: int = 5                # share.delivery.count.limit
    max_record_locks: int = 2_000                # share.partition.max.record.locks
    renew_acknowledge_enabled: bool = True       # share.renew.acknowledge.enable (no broker setting)


class _Entry:
    __slots__ = ("state", "delivery_count", "member_id", "deadline_ms", "before")

    def __init__(self):
        self.state, self.delivery_count, self.member_id, self.deadline_ms = AVAILABLE, 0, None, 0
        self.before = None          # (member id, lock deadline) while a transition from ACQUIRED awaits its write


class SharePartition:
    """The delivery state of one (group, topic partition)."""

    def __init__(self, start_offset: int, leader_epoch: int = -1):
        self.leader_epoch = leader_epoch           # of the partition when this state was made
        self.start_offset = start_offset
        self.next_offset = start_offset
        self.entries: dict[int, _Entry] = {}       # offset -> entry, for start <= offset < next
        self.acquired_count = 0                    # entries ACQUIRED, for a cheap "anything to expire?"
        self.dirty = False                         # a change not yet written (the start offset, ``unwritten``)
        self.unwritten: set[int] = set()           # offsets changed without a transition, not yet written
        self.lock_timeouts = 0                     # records released as their lock passed (AcquisitionLockTimeoutPerSec)

    # -- the window --

    def move_start(self, log_start_offset: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) leave the window."""
        if log_start_offset <= self.start_offset:
            return
        for offset in range(self.start_offset, min(log_start_offset, self.next_offset)):
            entry = self.entries.pop(offset, None)
            if entry is not None and entry.state == ACQUIRED:
                self.acquired_count -= 1
        self.start_offset = log_start_offset
        self.next_offset = max(self.next_offset, log_start_offset)
        self.dirty = True
        self._advance_start()

    def _advance_start(self) -> None:
        while self.start_offset < self.next_offset:
            entry = self.entries.get(self.start_offset)
            if entry is None or entry.state not in (ACKNOWLEDGED, ARCHIVED) or entry.before is not None:
                return
            del self.entries[self.start_offset]
            self.start_offset += 1

    def first_available(self, now_ms: int, settings: ShareSettings) -> int:
        """The first offset a fetch may acquire: an available record in the window, else the
        next new one (expired locks released first)."""
        self.expire(now_ms, settings)
        for offset in range(self.start_offset, self.next_offset):
            entry = self.entries[offset]
            if entry.state == AVAILABLE and entry.before is None:
                return offset
        return self.next_offset

    def expire(self, now_ms: int, settings: ShareSettings) -> int:
        """Release the records whose acquisition lock has passed: how many."""
        if not self.acquired_count:
            return 0
        released = 0
        for offset, entry in self.entries.items():
            if entry.state == ACQUIRED and entry.deadline_ms <= now_ms:
                self._release(entry, settings)
                self._unwritten(offset)
                released += 1
        self.lock_timeouts += released
        self._advance_start()
        return released

    def _release(self, entry: _Entry, settings: ShareSettings) -> None:
        self.acquired_count -= 1
        entry.member_id = None
        entry.state = ARCHIVED if entry.delivery_count >= settings.delivery_count_limit else AVAILABLE

    def _unwritten(self, offset: int) -> None:
        self.unwritten.add(offset)
        self.dirty = True

    # -- acquiring --

    def acquire(self, member_id: str, batches, *, max_records: int, now_ms: int, settings: ShareSettings,
                strict: bool = False) -> list[tuple[int, int, int]]:
        """Acquire for ``member_id`` the available and new offsets of ``batches`` ((first
        offset, last offset, skip) in log order, as read from the log; skip: a control batch or
        one of an aborted transaction under read_committed, archived): the acquired
        ranges as (first, last, delivery count). New records are taken whole batch by whole
        batch (ShareAcquireMode batch_optimized) until ``max_records`` are acquired or the
        window holds ``max_record_locks`` offsets, or record by record up to ``max_records``
        exactly when ``strict`` (record_limit, KIP-1206); skipped batches are archived, never
        delivered."""
        self.expire(now_ms, settings)
        acquired: list[list[int]] = []
        count = 0
        deadline = now_ms + settings.record_lock_duration_ms
        for first, last, skip in batches:
            if count >= max_records:
                break
            if last < self.start_offset:
                continue
            if first > self.next_offset:                  # a hole in the log (compaction): skip it
                if self.next_offset - self.start_offset + (first - self.next_offset) > settings.max_record_locks:
                    break
                for offset in range(self.next_offset, first):
                    entry = self.entries[offset] = _Entry()
                    entry.state = ARCHIVED
                    self._unwritten(offset)
                self.next_offset = first
            for offset in range(max(first, self.start_offset), min(last + 1, self.next_offset)):
                entry = self.entries[offset]
                if entry.state == AVAILABLE and entry.before is None and not skip and count < max_records:
                    self._take(entry, member_id, deadline)
                    count += 1
                    _append(acquired, offset, entry.delivery_count)
            if last >= self.next_offset:
                if last + 1 - self.start_offset > settings.max_record_locks and self.next_offset > self.start_offset:
                    break
                end = last + 1 if skip or not strict else min(last + 1, self.next_offset + max_records - count)
                for offset in range(self.next_offset, end):
                    entry = self.entries[offset] = _Entry()
                    if skip:
                        entry.state = ARCHIVED
                        self._unwritten(offset)
                    else:
                        self._take(entry, member_id, deadline)
                        count += 1
                        _append(acquired, offset, entry.delivery_count)
                self.next_offset = end
        self._advance_start()
        return [tuple(r) for r in acquired]

    def _take(self, entry: _Entry, member_id: str, deadline_ms: int) -> None:
        entry.state, entry.member_id, entry.deadline_ms = ACQUIRED, member_id, deadline_ms
        entry.delivery_count += 1
        self.acquired_count += 1

    # -- acknowledging --

    def acknowledge(self, member_id: str, first: int, last: int, types, *, now_ms: int,
                    settings: ShareSettings, renew_allowed: bool = False, changed: list | None = None) -> int:
        """Acknowledge offsets ``first``..``last`` acquired by ``member_id``: ``types`` holds one
        type for the whole range or one per offset. An error code; nothing changes on an error
        (INVALID_RECORD_STATE: an offset not acquired by this member, its lock expired meanwhile; a
        RENEW in a group with share.renew.acknowledge.enable=false, as Kafka's SharePartition;
        INVALID_REQUEST: offsets past all ever acquired here), with Kafka's message.
        Offsets below the start offset (acknowledged or archived already, or passed by the log
        start or an offsets reset) are skipped, a range wholly below it acknowledges nothing and
        succeeds, as Kafka's SharePartition.acknowledge skips them.
        The changed offsets are appended to ``changed`` as a transition (``commit``/``rollback``
        once written); without it they are kept at once and written with the next write."""
        allowed = RENEW_TYPES if renew_allowed else ACK_TYPES
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1) or \
                any(t not in allowed for t in types):
            return Errors.INVALID_REQUEST
        self.expire(now_ms, settings)                        # an expiry archiving records moves the start
        if last < self.start_offset:
            return Errors.NONE
        kept = max(first, self.start_offset)                 # the first offset not done yet
        if last - kept + 1 > settings.max_record_locks:      # more than the window can hold
            return Errors.INVALID_RECORD_STATE
        if last >= self.next_offset:              # past what was ever acquired: SharePartition.findSubMap's
            return with_message(Errors.INVALID_REQUEST, FIRST_PAST_ACQUIRED if first >= self.next_offset
                                else LAST_PAST_ACQUIRED)
        for offset in range(kept, last + 1):
            entry = self.entries.get(offset)
            refusal = NOT_IN_CACHE if entry is None else NOT_ACQUIRED if entry.state != ACQUIRED else \
                NOT_OWNER if entry.member_id != member_id else None
            if refusal is not None:                      # with Kafka's SharePartition's message
                return with_message(Errors.INVALID_RECORD_STATE, refusal)
        if RENEW in (types if len(types) == 1 else types[kept - first:]) and not settings.renew_acknowledge_enabled:
            return with_message(Errors.INVALID_RECORD_STATE, RENEW_DISABLED)
        moved = []
        for offset in range(kept, last + 1):
            entry = self.entries[offset]
            kind = types[0] if len(types) == 1 else types[offset - first]
            if kind == RENEW:
                entry.deadline_ms = now_ms + settings.record_lock_duration_ms
                continue
            entry.before = (entry.member_id, entry.deadline_ms)
            if kind == RELEASE:
                self._release(entry, settings)
            else:
                self.acquired_count -= 1
                entry.member_id = None
                entry.state = ACKNOWLEDGED if kind == ACCEPT else ARCHIVED
            moved.append(offset)
        self._keep(moved, changed)
        return Errors.NONE

    def release_member(self, member_id: str, settings: ShareSettings, changed: list | None = None) -> int:
        """Every record ``member_id`` holds becomes available again (its share session closed or
        it left the group), archived at the delivery limit: how many. A transition as
        ``acknowledge``'s."""
        if not self.acquired_count:
            return 0
        moved = []
        for offset, entry in self.entries.items():
            if entry.state == ACQUIRED and entry.member_id == member_id:
                entry.before = (entry.member_id, entry.deadline_ms)
                self._release(entry, settings)
                moved.append(offset)
        self._keep(moved, changed)
        return len(moved)

    # -- transitions (Kafka's InFlightState.startStateTransition / completeStateTransition) --

    def _keep(self, moved: list, changed: list | None) -> None:
        if changed is not None:
            changed.extend(moved)
            return
        self.commit(moved)
        for offset in moved:
            self._unwritten(offset)

    def commit(self, offsets) -> None:
        """The write of ``offsets``' transition succeeded: their new states stay."""
        for offset in offsets:
            entry = self.entries.get(offset)
            if entry is not None:
                entry.before = None
        self._advance_start()

    def rollback(self, offsets, now_ms: int, settings: ShareSettings) -> None:
        """The write of ``offsets``' transition failed: each is acquired again by its member,
        or, its lock having passed meanwhile, released (archived at the delivery limit; written
        with the next write, as a lock timeout is). Offsets that left the window are skipped."""
        for offset in offsets:
            entry = self.entries.get(offset)
            if entry is None or entry.before is None:
                continue
            member_id, deadline_ms = entry.before
            entry.before = None
            if deadline_ms > now_ms:
                entry.state, entry.member_id, entry.deadline_ms = ACQUIRED, member_id, deadline_ms
                self.acquired_count += 1
            else:
                entry.state = ARCHIVED if entry.delivery_count >= settings.delivery_count_limit else AVAILABLE
                entry.member_id = None
                self._unwritten(offset)
        self._advance_start()

    # -- the durable state (kafkawire.broker.share_persister) --

    def take_changes(self, changed=()) -> tuple[list[tuple[int, int, int, int]], set[int]]:
        """What a write carries, as Kafka's SharePartition writes it: the batches that changed,
        (first, last, state, delivery count) runs of ``changed`` (a transition's offsets: their
        new states) and of the offsets changed without one (``unwritten``, taken: an acquired
        record written AVAILABLE with its delivery count, as after a restart it is delivered
        again). Returns the batches and the unwritten offsets taken (given back with
        ``give_back`` when the write fails)."""
        # offsets below the start offset now are done with: not written, not kept (the set stays
        # within the window however long writes fail)
        taken = {offset for offset in self.unwritten if offset in self.entries}
        self.unwritten, self.dirty = set(), False
        new = set(changed)
        runs: list[list[int]] = []
        for offset in sorted(new | taken):
            entry = self.entries.get(offset)
            if entry is None:
                continue
            state = entry.state
            if offset not in new and (entry.before is not None or state == ACQUIRED):
                state = AVAILABLE                          # not yet (or not) durable: as if released
            if runs and runs[-1][1] == offset - 1 and runs[-1][2:] == [state, entry.delivery_count]:
                runs[-1][1] = offset
            else:
                runs.append([offset, offset, state, entry.delivery_count])
        return [tuple(r) for r in runs], taken

    def give_back(self, taken: set[int]) -> None:
        """A write failed: what it took is written with the next write."""
        self.unwritten |= taken
        self.dirty = True

    def delivery_complete_count(self) -> int:
        """Records acknowledged or archived above the start offset (Kafka's deliveryCompleteCount)."""
        return sum(1 for e in self.entries.values() if e.state in (ACKNOWLEDGED, ARCHIVED))

    @classmethod
    def restored(cls, start_offset: int, batches, leader_epoch: int, max_record_locks: int) -> "SharePartition":
        """The state read from the share coordinator: its start offset, and its batches as the
        window (offsets between them never delivered: available, count 0), at most
        ``max_record_locks`` offsets of it (the rest are delivered again as new, none lost)."""
        sp = cls(start_offset, leader_epoch)
        limit = start_offset + max_record_locks
        for first, last, state, count in sorted(batches):
            first, last = max(first, sp.next_offset), min(last, limit - 1)
            if first > last:
                continue
            for offset in range(sp.next_offset, last + 1):
                entry = sp.entries[offset] = _Entry()
                if offset >= first:
                    entry.state = state if state in (ACKNOWLEDGED, ARCHIVED) else AVAILABLE
                    entry.delivery_count = count
            sp.next_offset = last + 1
        sp._advance_start()
        return sp


def _append(ranges: list, offset: int, delivery_count: int) -> None:
    """Extend the last range when ``offset`` follows it with the same delivery count."""
    if ranges and ranges[-1][1] == offset - 1 and ranges[-1][2] == delivery_count:
        ranges[-1][1] = offset
    else:
        ranges.append([offset, offset, delivery_count])
