"""The share-partition state machine (kafkawire.broker.share_partition), in process: acquisition,
the acquisition lock's timeout, RELEASE, REJECT, ACCEPT, the delivery count limit, the start
offset moving past what is done, and the in-flight window's bound, as Kafka 4.3.1's SharePartition;
and the share sessions' epochs and bound (kafkawire.broker.share_sessions)."""
from __future__ import annotations

import uuid

from kafkawire.broker.share_partition import (ACCEPT, ACKNOWLEDGED, ACQUIRED, ARCHIVED, AVAILABLE, GAP, REJECT,
                                              RELEASE, RENEW, SharePartition, ShareSettings)
from kafkawire.broker.share_errors import message_of
from kafkawire.protocol.error_codes import Errors

SETTINGS = ShareSettings(record_lock_duration_ms=1_000, delivery_count_limit=3, max_record_locks=100)
BATCHES = [(0, 4, False), (5, 9, False)]          # two batches of five records
TOPIC = uuid.UUID(int=7)                          # tests/broker/test_share_coordinator.py's


def acquire(sp, member="m1", batches=BATCHES, now=0, max_records=500, settings=SETTINGS):
    return sp.acquire(member, batches, max_records=max_records, now_ms=now, settings=settings)


def ack(sp, first, last, types, member="m1", now=0, **kwargs):
    return sp.acknowledge(member, first, last, types, now_ms=now, settings=SETTINGS, **kwargs)


def states(sp):
    return {o: e.state for o, e in sp.entries.items()}


def test_acquired_records_are_not_acquired_again_until_acknowledged():
    sp = SharePartition(0)
    assert acquire(sp) == [(0, 9, 1)]
    assert acquire(sp, member="m2") == []                  # all locked by m1
    assert ack(sp, 0, 9, [ACCEPT]) == Errors.NONE
    assert (sp.start_offset, sp.next_offset, sp.entries) == (10, 10, {})
    assert acquire(sp, member="m2") == []                  # nothing new in the log


def test_an_expired_lock_makes_the_records_available_with_a_higher_delivery_count():
    sp = SharePartition(0)
    acquire(sp, now=0)
    assert sp.first_available(999, SETTINGS) == 10           # the lock still holds at 999 ms
    assert sp.first_available(1_000, SETTINGS) == 0          # and expires at 1000 ms
    assert set(states(sp).values()) == {AVAILABLE}
    assert acquire(sp, member="m2", now=1_000) == [(0, 9, 2)]
    assert ack(sp, 0, 0, [ACCEPT], member="m1", now=1_000) == Errors.INVALID_RECORD_STATE   # m1's lock is gone
    assert ack(sp, 0, 9, [ACCEPT], member="m2", now=1_000) == Errors.NONE


def test_release_reject_and_gap_per_offset():
    sp = SharePartition(0)
    acquire(sp)
    types = [ACCEPT, RELEASE, REJECT, GAP, ACCEPT]
    assert ack(sp, 0, 4, types) == Errors.NONE
    assert sp.start_offset == 1                               # offset 1 released: the start stops there
    assert states(sp)[1] == AVAILABLE and states(sp)[2] == ARCHIVED and states(sp)[3] == ARCHIVED
    assert states(sp)[4] == ACKNOWLEDGED
    assert acquire(sp, member="m2") == [(1, 1, 2)]            # the released record only, delivered again
    assert ack(sp, 1, 1, [ACCEPT], member="m2") == Errors.NONE
    assert sp.start_offset == 5                               # past 1-4, done; 5-9 still held by m1


def test_the_delivery_count_limit_archives_a_record():
    sp = SharePartition(0)
    for delivery in (1, 2, 3):
        assert acquire(sp, batches=[(0, 0, False)], now=delivery * 10) == [(0, 0, delivery)]
        assert ack(sp, 0, 0, [RELEASE], now=delivery * 10) == Errors.NONE
    assert sp.start_offset == 1 and sp.entries == {}          # archived at the third delivery: gone
    sp = SharePartition(0)
    now = 0
    for delivery in (1, 2, 3):                                # the same through lock timeouts
        assert acquire(sp, batches=[(0, 0, False)], now=now) == [(0, 0, delivery)]
        now += SETTINGS.record_lock_duration_ms
    sp.expire(now, SETTINGS)
    assert sp.start_offset == 1


def test_control_batches_are_archived_and_never_delivered():
    sp = SharePartition(0)
    assert acquire(sp, batches=[(0, 2, False), (3, 3, True), (4, 5, False)]) == [(0, 2, 1), (4, 5, 1)]
    assert ack(sp, 0, 2, [ACCEPT]) == Errors.NONE and ack(sp, 4, 5, [ACCEPT]) == Errors.NONE
    assert sp.start_offset == 6


def test_max_records_and_the_window_bound():
    sp = SharePartition(0)
    assert acquire(sp, max_records=3) == [(0, 4, 1)]          # batch_optimized: whole batches
    assert acquire(sp, max_records=3, member="m2") == [(5, 9, 1)]
    sp = SharePartition(0)                                    # record_limit: exactly max_records
    assert sp.acquire("m1", BATCHES, max_records=3, now_ms=0, settings=SETTINGS, strict=True) == [(0, 2, 1)]
    assert sp.acquire("m2", BATCHES, max_records=3, now_ms=0, settings=SETTINGS, strict=True) == [(3, 5, 1)]
    small = ShareSettings(record_lock_duration_ms=1_000, delivery_count_limit=3, max_record_locks=5)
    sp = SharePartition(0)
    assert acquire(sp, settings=small) == [(0, 4, 1)]         # the second batch would pass 5 in flight
    assert acquire(sp, settings=small, member="m2") == []
    assert sp.acknowledge("m1", 0, 4, [ACCEPT], now_ms=0, settings=small) == Errors.NONE
    assert acquire(sp, settings=small, member="m2") == [(5, 9, 1)]


def test_bad_acknowledgements_change_nothing():
    sp = SharePartition(0)
    acquire(sp)
    before = states(sp)
    assert ack(sp, 0, 9, [ACCEPT], member="m2") == Errors.INVALID_RECORD_STATE     # not m2's
    assert ack(sp, 8, 12, [ACCEPT]) == Errors.INVALID_REQUEST       # 10-12 never acquired: as Kafka's findSubMap
    assert ack(sp, 0, 2, [ACCEPT, ACCEPT]) == Errors.INVALID_REQUEST               # 2 types for 3 offsets
    assert ack(sp, 0, 0, [9]) == Errors.INVALID_REQUEST                            # no such type
    assert ack(sp, 0, 0, [RENEW]) == Errors.INVALID_REQUEST                        # RENEW only in v2
    assert ack(sp, 5, 2, [ACCEPT]) == Errors.INVALID_REQUEST
    assert states(sp) == before and sp.start_offset == 0


def test_renew_extends_the_lock():
    sp = SharePartition(0)
    acquire(sp, now=0)
    assert ack(sp, 0, 9, [RENEW], now=900, renew_allowed=True) == Errors.NONE
    assert sp.first_available(1_500, SETTINGS) == 10          # renewed until 1900
    assert sp.first_available(1_900, SETTINGS) == 0


def test_renew_in_a_group_with_renew_acknowledge_disabled_is_invalid_record_state_and_changes_nothing():
    """share.renew.acknowledge.enable=false (SharePartition: "Renewing acquisition locks is not
    enabled for the group."): a RENEW, for the batch or for one offset of it, is refused and no
    offset's state or lock moves; the other types are acknowledged as ever."""
    disabled = ShareSettings(record_lock_duration_ms=1_000, delivery_count_limit=3, max_record_locks=100,
                             renew_acknowledge_enabled=False)
    sp = SharePartition(0)
    acquire(sp, now=0)
    before = {o: (e.state, e.deadline_ms) for o, e in sp.entries.items()}
    for types in ([RENEW], [ACCEPT, RENEW, ACCEPT, ACCEPT, ACCEPT]):
        assert sp.acknowledge("m1", 0, 4, types, now_ms=900, settings=disabled,
                              renew_allowed=True) == Errors.INVALID_RECORD_STATE
    assert {o: (e.state, e.deadline_ms) for o, e in sp.entries.items()} == before
    assert sp.acknowledge("m1", 0, 4, [ACCEPT], now_ms=900, settings=disabled, renew_allowed=True) == Errors.NONE
    assert sp.start_offset == 5


def test_a_member_leaving_releases_its_records_and_the_log_start_moves_the_window():
    sp = SharePartition(0)
    acquire(sp, batches=[(0, 4, False)], member="m1")
    acquire(sp, batches=[(5, 9, False)], member="m2")
    assert sp.release_member("m1", SETTINGS) == 5
    assert acquire(sp, member="m3") == [(0, 4, 2)]
    sp.move_start(7)                                          # retention deleted 0-6
    assert sp.start_offset == 7 and sorted(sp.entries) == [7, 8, 9]
    assert ack(sp, 7, 9, [ACCEPT], member="m2") == Errors.NONE
    assert sp.start_offset == 10 and sp.acquired_count == 0


def test_offsets_below_the_start_offset_are_skipped_as_kafkas_share_partition_skips_them():
    """SharePartition.acknowledge: a batch wholly below the start offset acknowledges nothing and
    succeeds; one across it acknowledges its offsets from the start on (per-offset types kept
    aligned) and refuses as ever for those; the records below are done already, whoever sends them."""
    sp = SharePartition(0)
    acquire(sp, member="m2")                                  # 0-9 held by m2
    sp.move_start(4)                                          # DeleteRecords / retention passed 0-3
    assert ack(sp, 0, 3, [REJECT], member="m1") == Errors.NONE      # not m1's either: done already
    assert ack(sp, 0, 3, [RENEW], member="m2", renew_allowed=True) == Errors.NONE
    assert sorted(sp.entries) == list(range(4, 10)) and sp.acquired_count == 6
    # across the start: 0-3 skipped, 4-6 checked, m1 holds none of them: refused, nothing changes
    refused = ack(sp, 2, 6, [ACCEPT], member="m1")
    assert refused == Errors.INVALID_RECORD_STATE and message_of(refused) == "Member is not the owner of offset"
    assert set(states(sp).values()) == {ACQUIRED}
    types = [RELEASE, RELEASE, ACCEPT, REJECT, ACCEPT]       # offsets 2..6: the first two are below the start
    assert ack(sp, 2, 6, types, member="m2") == Errors.NONE
    assert sp.start_offset == 7 and states(sp) == {7: ACQUIRED, 8: ACQUIRED, 9: ACQUIRED}
    assert ack(sp, 0, 6, [RELEASE], member="m2") == Errors.NONE and sp.start_offset == 7   # done: stay done
    assert ack(sp, 5, 12, [ACCEPT], member="m2") == Errors.INVALID_REQUEST     # past the acquired ones: as ever
    # a lock expiry archiving the front (delivery limit) moves the start before the acknowledgement looks
    last = SharePartition(0)
    for delivery in range(1, SETTINGS.delivery_count_limit + 1):
        assert acquire(last, batches=[(0, 1, False)], now=delivery * 1_000) == [(0, 1, delivery)]
    assert ack(last, 0, 1, [ACCEPT], now=9_000) == Errors.NONE and last.start_offset == 2
    assert last.lock_timeouts == 2 * SETTINGS.delivery_count_limit               # two records, each lock


def test_an_acknowledgement_below_the_start_offset_keeps_the_requests_other_batches():
    """ShareApis applies a partition's batches as one transition: a batch below the start offset
    is skipped and the next batches apply; a refused batch still undoes the whole partition's."""
    from types import SimpleNamespace

    from .test_share_groups import share_apis
    share = share_apis()
    share._led = lambda topic_id, index, may_read: (Errors.NONE, SimpleNamespace(leader_epoch=-1))
    held = ShareSettings(record_lock_duration_ms=10**13, delivery_count_limit=3, max_record_locks=100)  # no expiry
    sp = share.partitions[("g", TOPIC, 0)] = SharePartition(0)
    acquire(sp, batches=[(0, 4, False), (5, 9, False), (10, 14, False)], settings=held)
    assert ack(sp, 0, 4, [ACCEPT]) == Errors.NONE and sp.start_offset == 5

    def acknowledge(*ranges):
        changed = []
        batches = [SimpleNamespace(first_offset=f, last_offset=t, acknowledge_types=[ACCEPT]) for f, t in ranges]
        code = share._acknowledge("g", "m1", TOPIC, 0, batches, held, 1, False, None, changed)
        sp.commit(changed)                                    # as a successful write does
        return code
    assert acknowledge((0, 4), (5, 6)) == Errors.NONE and sp.start_offset == 7     # 0-4 skipped, 5-6 kept
    refused = acknowledge((3, 8), (20, 20))                   # 7-8 acknowledged, then 20 never acquired
    assert refused == Errors.INVALID_REQUEST and message_of(refused) == (
        "Batch record not found. The first offset in request is past acquired records.")
    assert sp.start_offset == 7 and states(sp)[7] == states(sp)[8] == ACQUIRED       # undone with it


def test_share_sessions_epochs_limit_and_idle_eviction():
    from kafkawire.broker.share_sessions import ShareSessionError, ShareSessions
    now = [0.0]
    sessions = ShareSessions(max_sessions=2, clock=lambda: now[0])

    def code_of(call):
        try:
            call()
        except ShareSessionError as exc:
            return exc.code
        return Errors.NONE
    first = sessions.open_or_advance("g", "m1", 0, [("t", 0)])
    assert first.epoch == 1 and list(first.partitions) == [("t", 0)]
    assert code_of(lambda: sessions.open_or_advance("g", "m1", 2, [])) == Errors.INVALID_SHARE_SESSION_EPOCH
    assert sessions.open_or_advance("g", "m1", 1, [("t", 1)], [("t", 0)]).partitions == {("t", 1): None}
    assert code_of(lambda: sessions.open_or_advance("g", "nobody", 1, [])) == Errors.SHARE_SESSION_NOT_FOUND
    sessions.open_or_advance("g", "m2", 0, [])
    now[0] = 59.0
    assert code_of(lambda: sessions.open_or_advance("g", "m3", 0, [])) == Errors.SHARE_SESSION_LIMIT_REACHED
    sessions.open_or_advance("g", "m2", 1, [])                 # m2 in use: m1 is now the least recent
    now[0] = 61.0
    assert code_of(lambda: sessions.open_or_advance("g", "m3", 0, [])) == Errors.NONE    # m1, idle, evicted
    assert sessions.get("g", "m1") is None and sessions.get("g", "m2") is not None


def test_the_start_offsets_checkpoint_round_trips_and_an_unreadable_one_is_ignored(tmp_path, caplog):
    import uuid
    from kafkawire.broker.share_checkpoint import ShareStarts
    path = str(tmp_path / "starts.json")
    starts = ShareStarts(path)
    key = ("g", uuid.UUID(int=7), 3)
    assert starts.get(key) is None
    starts.update({key: 42})
    starts.save()
    assert ShareStarts(path).get(key) == 42
    old = ShareStarts(path)              # an old checkpoint's entry is taken once, then the file retired
    assert (old.take(key), old.take(key)) == (42, None)
    old.save()
    assert not (tmp_path / "starts.json").exists()
    (tmp_path / "starts.json").write_text("[[\"g\", \"not-a-uuid\", 3, 1]]")
    assert ShareStarts(path).starts == {} and "cannot be read" in caplog.text


def test_the_durable_state_read_back_keeps_acknowledgements_and_delivery_counts():
    """What the leader writes to the share coordinator (the batches that changed, a released
    record as available with its delivery count) and the share-partition a new leader makes of it."""
    settings = ShareSettings()
    sp = SharePartition(0)
    assert sp.acquire("m", [(0, 9, False)], max_records=500, now_ms=0, settings=settings) == [(0, 9, 1)]
    changed = []
    assert sp.acknowledge("m", 0, 2, [ACCEPT], now_ms=0, settings=settings, changed=changed) == Errors.NONE
    assert sp.acknowledge("m", 5, 6, [REJECT, RELEASE], now_ms=0, settings=settings, changed=changed) == Errors.NONE
    assert changed == [0, 1, 2, 5, 6] and not sp.dirty
    assert sp.take_changes(changed) == ([(0, 2, ACKNOWLEDGED, 1), (5, 5, ARCHIVED, 1), (6, 6, AVAILABLE, 1)], set())
    assert sp.start_offset == 0                       # not past records whose change is not written yet
    sp.commit(changed)
    assert sp.start_offset == 3
    again = SharePartition.restored(3, [(5, 5, ARCHIVED, 1), (6, 6, AVAILABLE, 1), (12, 12, ACKNOWLEDGED, 1)], 1,
                                    settings.max_record_locks)
    assert again.acquire("n", [(0, 14, False)], max_records=500, now_ms=0, settings=settings) == [
        (3, 4, 1), (6, 6, 2), (7, 11, 1), (13, 14, 1)]  # 3-4, 7-11: acquired only, not written (as Kafka's)
    small = SharePartition.restored(3, [(3, 4, AVAILABLE, 1), (5, 5, ARCHIVED, 1)], 1, max_record_locks=2)  # the limit
    assert (small.start_offset, small.next_offset) == (3, 5)


def test_a_transition_is_undone_when_its_write_fails():
    """Kafka's InFlightState transitions: while an acknowledgement's write is pending its records
    are in their new state, taken by nobody else; a failed write gives them back to their
    member (or, the lock passed meanwhile, makes them available, archived at the limit)."""
    sp = SharePartition(0)
    acquire(sp, now=0)
    pending = []
    assert ack(sp, 0, 4, [RELEASE], changed=pending) == Errors.NONE
    assert acquire(sp, member="m2") == []                   # released, but not written yet
    assert ack(sp, 0, 0, [ACCEPT]) == Errors.INVALID_RECORD_STATE
    sp.rollback(pending, 500, SETTINGS)                     # the write failed, the locks still held
    assert all(sp.entries[o].state == ACQUIRED and sp.entries[o].member_id == "m1" for o in range(5))
    assert sp.acquired_count == 10 and not sp.unwritten
    assert ack(sp, 0, 4, [ACCEPT]) == Errors.NONE and sp.start_offset == 5      # acknowledged again
    accepted = []
    assert ack(sp, 5, 9, [ACCEPT], changed=accepted) == Errors.NONE and sp.start_offset == 5
    sp.rollback(accepted, 1_000, SETTINGS)                  # failed after the locks passed: released
    assert [sp.entries[o].state for o in range(5, 10)] == [AVAILABLE] * 5 and set(range(5, 10)) <= sp.unwritten
    assert acquire(sp, member="m2", now=1_000) == [(5, 9, 2)]
    assert acquire(sp, member="m2", now=2_000) == [(5, 9, 3)]       # the third delivery: the limit
    at_limit = []
    assert ack(sp, 5, 9, [ACCEPT], member="m2", now=2_000, changed=at_limit) == Errors.NONE
    sp.rollback(at_limit, 3_000, SETTINGS)                  # the lock passed: archived, never delivered again
    assert sp.start_offset == 10 and not sp.entries and sp.acquired_count == 0
    assert sp.unwritten and sp.take_changes() == ([], set())     # below the start: written as the start offset


def whole_window(sp):
    """The whole in-flight window as the leader wrote it before issue 29's change: every offset's
    (first, last, state, count) run, an acquired record as available."""
    runs = []
    for offset in range(sp.start_offset, sp.next_offset):
        entry = sp.entries[offset]
        state = AVAILABLE if entry.state == ACQUIRED else entry.state
        if runs and runs[-1][1] == offset - 1 and runs[-1][2:] == [state, entry.delivery_count]:
            runs[-1][1] = offset
        else:
            runs.append([offset, offset, state, entry.delivery_count])
    return [tuple(r) for r in runs]


def test_the_coordinator_keeps_the_same_state_from_changed_batches_as_from_whole_windows():
    """The same random history written both ways (the whole window at each change, and the
    batches that changed, as Kafka's SharePartition writes them) through the share coordinator's
    WriteShareGroupState: once no record is acquired, the same state, offset by offset."""
    import random
    from .test_share_coordinator import Log, coordinator, write
    settings = ShareSettings(record_lock_duration_ms=100, delivery_count_limit=3, max_record_locks=60)
    for seed in range(20):
        rng = random.Random(seed)
        sp, whole, changed = SharePartition(0), coordinator(Log()), coordinator(Log())
        for c in (whole, changed):
            c.initialize("g", TOPIC, 0, 0, 0)
        now, end = 0, 0

        def written(moved=()):
            batches, _ = sp.take_changes(moved)
            sp.commit(moved)
            assert write(whole, start=sp.start_offset, batches=whole_window(sp))[0] == Errors.NONE
            assert write(changed, start=sp.start_offset, batches=batches)[0] == Errors.NONE
        for _ in range(60):
            now += rng.choice((10, 60, 150))
            step = rng.random()
            if step < 0.35:
                size = rng.randint(1, 6)
                sp.acquire(rng.choice("ab"), [(end, end + size - 1, rng.random() < 0.1)], max_records=8,
                           now_ms=now, settings=settings)
                end += size
            elif step < 0.75:
                held = [o for o, e in sp.entries.items() if e.state == ACQUIRED]
                if held:
                    first = rng.choice(held)
                    member = sp.entries[first].member_id
                    last = first
                    while sp.entries.get(last + 1) is not None and sp.entries[last + 1].state == ACQUIRED and \
                            sp.entries[last + 1].member_id == member:
                        last += 1
                    moved = []
                    sp.acknowledge(member, first, last, [rng.choice((ACCEPT, RELEASE, REJECT))], now_ms=now,
                                   settings=settings, changed=moved)
                    written(moved)
            elif step < 0.85:
                moved = []
                sp.release_member(rng.choice("ab"), settings, moved)
                written(moved)
            else:
                sp.expire(now, settings)
                written()
        sp.expire(now + 1_000, settings)                   # quiescent: nothing acquired
        written()
        assert per_offset(whole, end) == per_offset(changed, end), seed


def per_offset(c, end):
    """The coordinator's start offset and each offset's (state, delivery count) from it to ``end``
    (an offset without a batch: never delivered, available with count 0)."""
    state = c.states[("g", TOPIC, 0)]
    table = {o: (AVAILABLE, 0) for o in range(state.start_offset, end)}
    for b in state.batches:
        for o in range(max(b.first_offset, state.start_offset), b.last_offset + 1):
            table[o] = (b.delivery_state, b.delivery_count)
    return state.start_offset, table


def test_read_committed_skips_the_batches_of_aborted_transactions_and_the_markers():
    """share_batches: each batch's header read in place, and Kafka's filter of aborted
    transactions (producer 7 aborts, producer 8 commits, interleaved)."""
    from kafkawire.broker.share_batches import batch_bounds, deliverable
    from kafkawire.records.builder import build_batch, build_control_batch
    from kafkawire.storage.txn_index import AbortedTxn

    def txn(producer, base, count):
        return build_batch([(None, b"x", (), 0)] * count, base_offset=base, producer_id=producer, producer_epoch=0,
                           base_sequence=0, is_transactional=True)

    def marker(producer, base, commit):
        return build_control_batch(1 if commit else 0, b"\x00\x00\x00\x00\x00\x00", base_offset=base,
                                   producer_id=producer, producer_epoch=0)
    data = txn(7, 0, 2) + txn(8, 2, 2) + build_batch([(None, b"plain", (), 0)], base_offset=4) + \
        marker(7, 5, commit=False) + marker(8, 6, commit=True) + txn(7, 7, 1)
    bounds = list(batch_bounds(data))
    assert [(b.first, b.last, b.is_control, b.producer_id, b.transactional) for b in bounds] == [
        (0, 1, False, 7, True), (2, 3, False, 8, True), (4, 4, False, -1, False), (5, 5, True, 7, True),
        (6, 6, True, 8, True), (7, 7, False, 7, True)]
    assert deliverable(bounds) == [(0, 1, False), (2, 3, False), (4, 4, False), (5, 5, True), (6, 6, True),
                                   (7, 7, False)]                         # read_uncommitted: markers only
    aborted = [AbortedTxn(0, 7, 0, 5, 0)]
    assert deliverable(bounds, aborted) == [(0, 1, True), (2, 3, False), (4, 4, False), (5, 5, True),
                                            (6, 6, True), (7, 7, False)]  # 7's next transaction is delivered
    sp = SharePartition(0)
    assert acquire(sp, batches=deliverable(bounds, aborted)) == [(2, 4, 1), (7, 7, 1)]


class _Persister:
    """The share coordinator as the keeper sees it: each write answered by the next code given."""

    def __init__(self, *codes):
        self.codes, self.writes = list(codes), []

    async def write(self, group_id, topic_id, partition, leader_epoch, state_epoch, start, batches, complete=-1):
        self.writes.append((start, batches, complete))
        return self.codes.pop(0)


def test_a_failed_write_rolls_the_acknowledgement_back_and_a_fenced_one_drops_the_state():
    """kafkawire.broker.share_state_keeper as Kafka's rollbackOrProcessStateUpdates: the write
    carries the changed batches; its error is the acknowledgement's and undoes it in memory."""
    import asyncio
    import time
    from types import SimpleNamespace
    from kafkawire.broker.share_state_keeper import ShareStateKeeper
    settings = ShareSettings(record_lock_duration_ms=60_000, delivery_count_limit=3, max_record_locks=100)
    key, sp = ("g", TOPIC, 0), SharePartition(0)
    share = SimpleNamespace(partitions={key: sp}, settings=lambda group: settings, broker=SimpleNamespace(node_id=1))
    keeper = ShareStateKeeper(share)
    keeper.persister = _Persister(Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NONE, Errors.NONE,
                                  Errors.REQUEST_TIMED_OUT, Errors.FENCED_STATE_EPOCH)
    now = int(time.time() * 1000)
    sp.acquire("m1", BATCHES, max_records=500, now_ms=now, settings=settings)

    async def acknowledge(first, last):
        changed = []
        assert sp.acknowledge("m1", first, last, [ACCEPT], now_ms=now, settings=settings, changed=changed) == 0
        return (await keeper.write_changes({key: changed}))[key]
    assert asyncio.run(acknowledge(0, 4)) == Errors.COORDINATOR_NOT_AVAILABLE      # Kafka's fetchPersisterError
    assert [sp.entries[o].state for o in range(5)] == [ACQUIRED] * 5 and sp.start_offset == 0
    assert asyncio.run(acknowledge(0, 4)) == Errors.NONE                        # the member acknowledges again
    assert keeper.persister.writes[1] == (0, [(0, 4, ACKNOWLEDGED, 1)], 5) and sp.start_offset == 5
    changed = []
    assert sp.release_member("m1", settings, changed) == 5
    assert asyncio.run(keeper.write_changes({key: changed})) == {key: Errors.NONE}
    assert keeper.persister.writes[2] == (5, [(5, 9, AVAILABLE, 1)], 0)
    sp.acquire("m1", BATCHES, max_records=500, now_ms=now, settings=settings)
    assert asyncio.run(acknowledge(5, 9)) == Errors.UNKNOWN_SERVER_ERROR
    assert asyncio.run(acknowledge(5, 9)) == Errors.NOT_LEADER_OR_FOLLOWER       # another state epoch: read again
    assert key not in share.partitions


class _Unread:
    """A share coordinator with no state for the share-partition, as Kafka's refuses its read."""

    def __init__(self):
        self.asked: list = []

    async def read(self, group_id, topic_id, partition, leader_epoch):
        self.asked.append("read")
        return Errors.INVALID_REQUEST, None

    async def initialize(self, *args):
        self.asked.append("initialize")
        return Errors.NONE


def test_a_share_partition_no_group_coordinator_initialized_fails_its_fetch_as_kafkas_leader_does():
    """A share-partition the share coordinator has no state for (its group coordinator never
    initialized it: the member fetching it was not assigned it) is not initialized by its
    leader: the read's INVALID_REQUEST is the fetch's UNKNOWN_SERVER_ERROR (fetchPersisterError),
    nothing is kept, and the next fetch reads again."""
    import asyncio
    from types import SimpleNamespace
    from kafkawire.broker.share_state_keeper import ShareStateKeeper
    key = ("g", TOPIC, 0)
    share = SimpleNamespace(partitions={}, broker=SimpleNamespace(node_id=1))
    keeper = ShareStateKeeper(share)
    keeper.persister = _Unread()
    partition = SimpleNamespace(leader_epoch=4)
    settings = ShareSettings(record_lock_duration_ms=60_000, delivery_count_limit=3, max_record_locks=100)
    assert asyncio.run(keeper.load(key, partition, settings)) == Errors.UNKNOWN_SERVER_ERROR
    assert keeper.persister.asked == ["read"] and share.partitions == {} and keeper.needs_load(key, partition)


def test_a_start_offset_past_the_log_end_is_kept_as_kafkas_share_partition_keeps_it():
    """An altered start offset past the log end: the leader starts there, the records before it
    are never delivered (Kafka's SharePartition takes the persisted start offset as it is)."""
    import asyncio
    from types import SimpleNamespace
    from kafkawire.broker.share_state_keeper import ShareStateKeeper

    class Altered:
        async def read(self, group_id, topic_id, partition, leader_epoch):
            return Errors.NONE, (2, 50, [])
    key = ("g", TOPIC, 0)
    share = SimpleNamespace(partitions={}, broker=SimpleNamespace(node_id=1))
    keeper = ShareStateKeeper(share)
    keeper.persister = Altered()
    partition = SimpleNamespace(leader_epoch=4, log=SimpleNamespace(log_start_offset=0, log_end_offset=6))
    settings = ShareSettings(record_lock_duration_ms=60_000, delivery_count_limit=3, max_record_locks=100)
    assert asyncio.run(keeper.load(key, partition, settings)) == Errors.NONE
    sp = share.partitions[key]
    assert (sp.start_offset, sp.first_available(0, settings), keeper.state_epochs[key]) == (50, 50, 2)
