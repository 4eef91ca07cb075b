"""The leader's rules on its followers, ISR and high watermark (kafkawire.broker.replica_state),
sans I/O with a fake clock: each test names the rule of Kafka's Partition/Replica it checks."""
from __future__ import annotations

import pytest

from kafkawire.broker.replica_state import LeaderReplicas, StaleBrokerEpoch
from kafkawire.protocol.error_codes import Errors

LAG = 30_000
EPOCHS = {2: 20, 3: 30}          # the metadata's broker epochs of the followers


def leader(isr=(1, 2, 3), *, min_isr=1, leo=100, now=1_000, fenced=(), shutting_down=()) -> LeaderReplicas:
    replicas = LeaderReplicas(1, max_lag_ms=LAG, min_isr=min_isr, local_broker_epoch=lambda: 10,
                              broker_epoch=lambda b: None if b in fenced else EPOCHS.get(b),
                              eligible=lambda b: b in EPOCHS and b not in fenced and b not in shutting_down)
    replicas.make_leader(replicas=[1, 2, 3], isr=list(isr), leader_epoch=5, partition_epoch=7, log_end_offset=leo,
                         now_ms=now, is_new_leader=True)
    return replicas


def fetch(replicas, follower, offset, now, leo=100, epoch=None):
    replicas.follower_fetched(follower, fetch_offset=offset, log_start_offset=0, now_ms=now, leader_end_offset=leo,
                              broker_epoch=EPOCHS[follower] if epoch is None else epoch)


def test_a_new_leader_knows_no_followers_log_end_so_the_high_watermark_waits_for_their_fetches():
    """makeLeader/resetReplicaState: a new leader's followers' log ends are unknown (-1) until they fetch."""
    replicas = leader()
    assert replicas.high_watermark_candidate(100, 1_000) == -1
    fetch(replicas, 2, 100, 1_001)
    assert replicas.high_watermark_candidate(100, 1_001) == -1
    fetch(replicas, 3, 90, 1_002)
    assert replicas.high_watermark_candidate(100, 1_002) == 90


def test_the_high_watermark_is_the_least_log_end_of_the_leader_and_the_isr():
    """maybeIncrementLeaderHW: the least log end offset over the (maximal) ISR."""
    replicas = leader(isr=(1, 2))
    fetch(replicas, 2, 80, 1_001)
    assert replicas.high_watermark_candidate(100, 1_001) == 80
    assert replicas.high_watermark_candidate(70, 1_001) == 70      # the leader's own log end bounds it too


def test_a_caught_up_follower_out_of_the_isr_holds_the_high_watermark_until_it_joins():
    """maybeIncrementLeaderHW's shouldWaitForReplicaToJoinIsr: an eligible follower caught up within the
    lag time holds the high watermark even out of the ISR; once it lags longer it no longer does."""
    replicas = leader(isr=(1, 2))
    fetch(replicas, 2, 100, 1_000)
    fetch(replicas, 3, 100, 1_000)               # caught up at 1000 with the log end then
    assert replicas.high_watermark_candidate(150, 1_000 + LAG) == 100
    assert replicas.high_watermark_candidate(150, 1_001 + LAG) == 100    # 2 is in the ISR and at 100
    fetch(replicas, 2, 150, 1_001 + LAG, leo=150)
    assert replicas.high_watermark_candidate(150, 1_001 + LAG) == 150    # 3 lags longer than the lag time


def test_the_high_watermark_does_not_move_while_the_isr_is_below_the_effective_min_isr():
    """isUnderMinIsr (KIP-966): no high watermark while the committed ISR is smaller than min.insync.replicas."""
    replicas = leader(isr=(1,), min_isr=2)
    assert replicas.under_min_isr
    assert replicas.high_watermark_candidate(100, 1_000) is None


def test_the_effective_min_isr_is_at_most_the_replication_factor():
    """effectiveMinIsr: min(min.insync.replicas, replicas) — min.insync.replicas=5 on three replicas is 3."""
    replicas = leader(isr=(1, 2, 3), min_isr=5)
    assert replicas.effective_min_isr == 3 and not replicas.under_min_isr


def test_a_follower_at_the_high_watermark_and_the_epoch_start_joins_the_isr_and_counts_at_once():
    """maybeExpandIsr/isFollowerInSync and PendingExpandIsr: the follower joins the maximal ISR before the
    controller answers; the committed ISR (the produce check) waits for the answer."""
    replicas = leader(isr=(1, 2), leo=100)
    fetch(replicas, 3, 99, 1_001)
    assert replicas.expand_for(3, high_watermark=100) is None          # below the high watermark
    fetch(replicas, 3, 100, 1_002)
    change = replicas.expand_for(3, high_watermark=100)
    assert change.isr_with_epochs == ((1, 10), (2, -1), (3, 30))      # own epoch, fetched epoch, -1 unknown
    assert (change.leader_epoch, change.partition_epoch) == (5, 7)
    assert replicas.state.maximal == {1, 2, 3} and replicas.state.isr == {1, 2}
    assert replicas.high_watermark_candidate(120, 1_003) == -1       # 2 has not fetched: -1 holds it


def test_a_follower_below_the_start_of_the_leader_epoch_does_not_join():
    """isFollowerInSync: the follower must have reached the leader epoch's start offset too."""
    replicas = leader(isr=(1, 2), leo=100)              # epoch 5 starts at 100; the high watermark is older
    fetch(replicas, 3, 95, 1_001)
    assert replicas.expand_for(3, high_watermark=90) is None


@pytest.mark.parametrize("kwargs, fetched_epoch", [({"fenced": (3,)}, 30), ({"shutting_down": (3,)}, 30),
                                                   ({}, 31)])
def test_a_fenced_shutting_down_or_other_epoch_follower_is_not_isr_eligible(kwargs, fetched_epoch):
    """isReplicaIsrEligible: not fenced, not in controlled shutdown, its fetches' broker epoch the metadata's
    (a fetch with a newer epoch than the metadata knows yet is recorded, but does not join)."""
    replicas = leader(isr=(1, 2), **kwargs)
    fetch(replicas, 3, 100, 1_001, epoch=fetched_epoch)
    assert replicas.expand_for(3, high_watermark=100) is None


def test_a_fetch_with_an_older_broker_epoch_than_the_metadatas_is_refused():
    """Replica.updateFetchStateOrThrow: a stale broker epoch is NOT_LEADER_OR_FOLLOWER; -1 is not checked."""
    replicas = leader()
    with pytest.raises(StaleBrokerEpoch):
        fetch(replicas, 2, 100, 1_001, epoch=19)
    fetch(replicas, 2, 100, 1_001, epoch=-1)
    assert replicas.followers[2].log_end_offset == 100


def test_a_follower_not_caught_up_for_the_lag_time_leaves_the_isr_but_counts_until_the_answer():
    """getOutOfSyncReplicas/maybeShrinkIsr and PendingShrinkIsr: a follower of the ISR whose last catch-up is
    older than replica.lag.time.max.ms is dropped; the maximal ISR keeps it until the controller answers."""
    replicas = leader(isr=(1, 2, 3), leo=100, now=1_000)     # in the ISR: caught up "now" at makeLeader
    fetch(replicas, 2, 100, 1_500)
    fetch(replicas, 3, 100, 1_500)
    assert replicas.shrink(120, 1_500 + LAG) is None
    fetch(replicas, 2, 120, 2_000 + LAG, leo=120)
    change = replicas.shrink(120, 1_501 + LAG)
    assert [b for b, _ in change.isr_with_epochs] == [1, 2]
    assert replicas.state.maximal == {1, 2, 3}
    assert replicas.shrink(120, 9_999_999) is None           # one change in flight at a time
    assert replicas.altered(change, leader_epoch=5, isr=[1, 2], partition_epoch=8)
    assert replicas.state.isr == replicas.state.maximal == {1, 2} and replicas.partition_epoch == 8


def test_a_fetch_reaching_the_previous_fetchs_log_end_counts_as_caught_up_at_that_fetch():
    """Replica.updateFetchStateOrThrow: catching up to the leader's log end of the previous fetch sets the
    last caught-up time to that fetch's time."""
    replicas = leader(isr=(1, 2), leo=100, now=0)
    fetch(replicas, 2, 50, 1_000, leo=100)
    fetch(replicas, 2, 100, 5_000, leo=130)
    assert replicas.followers[2].last_caught_up_time_ms == 1_000
    assert replicas.out_of_sync(130, 1_000 + LAG) == set()
    assert replicas.out_of_sync(130, 1_001 + LAG) == {2}


def test_an_answer_for_another_leader_epoch_or_an_older_partition_epoch_is_ignored():
    """handleAlterPartitionUpdate: a stale answer leaves the change pending."""
    replicas = leader(isr=(1, 2))
    fetch(replicas, 3, 100, 1_001)
    change = replicas.expand_for(3, high_watermark=100)
    assert not replicas.altered(change, leader_epoch=6, isr=[1, 2, 3], partition_epoch=8)
    assert not replicas.altered(change, leader_epoch=5, isr=[1, 2, 3], partition_epoch=6)
    assert replicas.state.pending == "expand"


@pytest.mark.parametrize("error, retry, back_to_committed", [
    (Errors.OPERATION_NOT_ATTEMPTED, False, True), (Errors.INELIGIBLE_REPLICA, False, True),
    (Errors.FENCED_LEADER_EPOCH, False, False), (Errors.INVALID_UPDATE_VERSION, False, False),
    (Errors.UNKNOWN_TOPIC_OR_PARTITION, False, False), (Errors.NEW_LEADER_ELECTED, False, False),
    (Errors.NOT_CONTROLLER, True, False), (Errors.UNKNOWN_SERVER_ERROR, True, False)])
def test_alter_partition_errors_are_handled_as_kafka_handles_them(error, retry, back_to_committed):
    """handleAlterPartitionError: back to the committed state, stay pending until the metadata, or retry."""
    replicas = leader(isr=(1, 2))
    fetch(replicas, 3, 100, 1_001)
    change = replicas.expand_for(3, high_watermark=100)
    assert replicas.alter_failed(change, error) is retry
    assert (not replicas.state.in_flight) is back_to_committed


def test_the_metadata_with_an_older_partition_epoch_than_an_answer_gave_is_ignored():
    """makeLeader: a partition epoch older than the current one (set by an AlterPartition answer) is skipped;
    a newer one replaces a pending change."""
    replicas = leader(isr=(1, 2))
    fetch(replicas, 3, 100, 1_001)
    change = replicas.expand_for(3, high_watermark=100)
    replicas.altered(change, leader_epoch=5, isr=[1, 2, 3], partition_epoch=8)
    assert not replicas.make_leader(replicas=[1, 2, 3], isr=[1, 2], leader_epoch=5, partition_epoch=7,
                                    log_end_offset=100, now_ms=1_002, is_new_leader=False)
    assert replicas.state.isr == {1, 2, 3}
    assert replicas.make_leader(replicas=[1, 2, 3], isr=[1], leader_epoch=5, partition_epoch=9, log_end_offset=100,
                                now_ms=1_002, is_new_leader=False)
    assert replicas.state.isr == {1}
    assert replicas.followers[3].log_end_offset == 100     # the same leader epoch keeps what fetches showed


def test_acks_all_completes_at_the_high_watermark_and_says_not_enough_replicas_after_append_below_min_isr():
    """checkEnoughReplicasReachOffset: done once the high watermark reaches the batch end; the error is
    NOT_ENOUGH_REPLICAS_AFTER_APPEND when the maximal ISR is then below the effective min ISR."""
    replicas = leader(isr=(1, 2, 3), min_isr=2)
    assert replicas.enough_replicas(99, 100) == (False, Errors.NONE)
    assert replicas.enough_replicas(100, 100) == (True, Errors.NONE)
    replicas.make_leader(replicas=[1, 2, 3], isr=[1], leader_epoch=5, partition_epoch=8, log_end_offset=100,
                         now_ms=1_000, is_new_leader=False)
    assert replicas.enough_replicas(100, 100) == (True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
