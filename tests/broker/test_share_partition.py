"""The share-partition state machine (kafkawire.broker.share_partition), in process: acquisition,
the acquisition lock's timeout, RELEASE, REJECT, ACCEPT, the delivery count limit, the start
offset moving past what is done, and the in-flight window's bound, as Kafka 4.3.1's SharePartition;
and the share sessions' epochs and bound (kafkawire.broker.share_sessions)."""
from __future__ import annotations

from kafkawire.broker.share_partition import (ACCEPT, ACKNOWLEDGED, ARCHIVED, AVAILABLE, GAP, REJECT, RELEASE,
                                              RENEW, SharePartition, ShareSettings)
from kafkawire.protocol.error_codes import Errors

SETTINGS = ShareSettings(record_lock_duration_ms=1_000, delivery_count_limit=3, max_record_locks=100)
BATCHES = [(0, 4, False), (5, 9, False)]          # two batches of five records


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
    assert ack(sp, 8, 12, [ACCEPT]) == Errors.INVALID_RECORD_STATE                # 10-12 never acquired
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
    """What the leader writes to the share coordinator (acquired records as available, their
    delivery counts kept) and the share-partition a new leader makes of it."""
    settings = ShareSettings()
    sp = SharePartition(0)
    assert sp.acquire("m", [(0, 9, False)], max_records=500, now_ms=0, settings=settings) == [(0, 9, 1)]
    assert sp.acknowledge("m", 0, 2, [ACCEPT], now_ms=0, settings=settings) == Errors.NONE
    assert sp.acknowledge("m", 5, 5, [REJECT], now_ms=0, settings=settings) == Errors.NONE
    assert sp.dirty
    durable = sp.durable_batches()
    assert (sp.start_offset, durable) == (3, [(3, 4, AVAILABLE, 1), (5, 5, ARCHIVED, 1), (6, 9, AVAILABLE, 1)])
    again = SharePartition.restored(3, durable + [(12, 12, ACKNOWLEDGED, 1)], 1, settings.max_record_locks)
    assert again.acquire("n", [(0, 14, False)], max_records=500, now_ms=0, settings=settings) == [
        (3, 4, 2), (6, 9, 2), (10, 11, 1), (13, 14, 1)]      # 10-11: between the batches, never delivered
    small = SharePartition.restored(3, durable, 1, max_record_locks=2)     # at most the window's limit
    assert (small.start_offset, small.next_offset) == (3, 5)


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
