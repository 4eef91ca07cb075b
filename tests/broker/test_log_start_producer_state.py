"""The producer state when the log start offset moves (DeleteRecords, retention deleting segments, a
follower following its leader's log start), as Kafka 4.3.1's UnifiedLog.maybeIncrementLogStartOffset
and ProducerStateManager.onLogStartOffsetIncremented keep it: the completed transactions whose marker
is below the new start are stable, the producers stay (DescribeProducers still lists them, a retry is
still a duplicate, the next sequence still in order), an open transaction below the start keeps the
last stable offset at the log start. Only a load without a snapshot above the log start rebuilds
from the log start, from the batch holding it (Kafka's truncateAndReload and rebuildProducerState).
In process, fake clocks, no node."""
from __future__ import annotations

import asyncio
import os
import uuid
from types import SimpleNamespace

import pytest

from kafkawire.broker.delete_records import DeleteRecordsApi
from kafkawire.broker.describe_producers import DescribeProducersApi
from kafkawire.broker.follower import FollowerReplica
from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.producer_snapshots import snapshot_offsets
from kafkawire.broker.producer_state import BatchInfo, CompletedTxn, ProducerState
from kafkawire.broker.validation import validate_produce
from kafkawire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic
from kafkawire.messages.describe_producers_request import DescribeProducersRequest, TopicRequest
from kafkawire.protocol.error_codes import Errors
from kafkawire.records.builder import build_batch
from kafkawire.storage.log import OffsetOutOfRangeError
from kafkawire.storage.state_files import read_offset_checkpoint

from .test_log_retention import HOUR, NOW, FakeBroker

TOPIC_ID = uuid.UUID(int=7)


def produce(partition, pid: int, seq: int, count: int = 1, *, txn: bool = False, timestamp: int = NOW) -> int:
    data = build_batch([(b"k", b"v", [], timestamp)] * count, producer_id=pid, producer_epoch=0, base_sequence=seq,
                       is_transactional=txn)
    validated = validate_produce(data, topic_partition=partition.name, max_message_bytes=1 << 20,
                                 log_append_time=False, now_ms=NOW)
    return partition.append(validated, now_ms=NOW)[0]


def led_broker(tmp_path, **keys):
    image = SimpleNamespace(configs={}, topics_by_name={"t": SimpleNamespace(
        name="t", id=TOPIC_ID, partitions={0: SimpleNamespace(leader=1)})})
    broker = FakeBroker(tmp_path, image=image, **keys)
    return broker, broker.open("t", topic_id=TOPIC_ID)


def delete_records(broker, offset: int):
    request = DeleteRecordsRequest(timeout_ms=1000, topics=[DeleteRecordsTopic(name="t", partitions=[
        DeleteRecordsPartition(partition_index=0, offset=offset)])])
    response = asyncio.run(DeleteRecordsApi(broker).delete_records(None, request))
    return [(r.error_code, r.low_watermark) for t in response.topics for r in t.partitions]


def described(broker):
    request = DescribeProducersRequest(topics=[TopicRequest(name="t", partition_indexes=[0])])
    [[answer]] = [t.partitions for t in asyncio.run(DescribeProducersApi(broker).describe_producers(None, request)).topics]
    assert answer.error_code == Errors.NONE
    return sorted((p.producer_id, p.last_sequence, p.current_txn_start_offset) for p in answer.active_producers)


# -- the producer state alone --

def test_the_log_start_stabilises_completed_transactions_below_it_and_keeps_producers_and_open_ones():
    state = ProducerState("t-0")
    state.apply(BatchInfo(1, 0, 0, 0, NOW, True), first_offset=0)        # producer 1: txn [0, marker 2]
    state.apply(BatchInfo(2, 0, 0, 0, NOW, True), first_offset=1)        # producer 2: txn open at 1
    state.apply(BatchInfo(3, 0, 0, 0, NOW, True), first_offset=3)        # producer 3: txn [3, marker 5]
    for pid, first, marker in ((1, 0, 2), (3, 3, 5)):
        completed = state.apply_marker(pid, 0, 0, marker, NOW, aborted=False)
        assert completed == CompletedTxn(pid, first, marker, False)
        state.complete(completed)
    assert state.first_unstable_offset() == 0            # no high watermark passed any marker yet
    state.on_log_start_offset_incremented(3)             # marker 2 is below: stable; marker 5 is not
    assert state.unreplicated == {3: 5}
    assert state.ongoing == {1: 2}                       # the open transaction stays, below the start
    assert state.first_unstable_offset() == 1
    assert sorted(state.producers) == [1, 2, 3]          # no producer forgotten
    state.on_log_start_offset_incremented(6)
    assert state.unreplicated == {} and state.first_unstable_offset() == 1


# -- DeleteRecords on a led partition --

def test_after_delete_records_describe_producers_still_lists_the_producers_below_the_log_start(tmp_path):
    """Kafka's DescribeProducers answers UnifiedLog.activeProducers, which the log start does not
    touch: a producer whose every batch is below it is listed as before, and is still in sequence."""
    broker, p = led_broker(tmp_path)
    produce(p, 7, 0, 3)                                  # offsets 0-2
    produce(p, 8, 0, 2)                                  # 3-4
    produce(p, 9, 0, 1)                                  # 5
    before = described(broker)
    assert before == [(7, 2, -1), (8, 1, -1), (9, 0, -1)]
    assert delete_records(broker, 4) == [(Errors.NONE, 4)]   # inside producer 8's batch
    assert described(broker) == before
    assert produce(p, 7, 0, 3) == 0                      # a retry of its last batch: the duplicate's offset
    assert produce(p, 7, 3) == 6                         # the next sequence is in order (no OUT_OF_ORDER)
    assert described(broker) == [(7, 3, -1), (8, 1, -1), (9, 0, -1)]
    broker.close()


def test_an_open_transaction_below_the_log_start_keeps_the_last_stable_offset_at_the_log_start(tmp_path):
    """UnifiedLog.maybeIncrementFirstUnstableOffset: the first unstable offset, never below the
    log start; the transaction stays open (DescribeProducers shows its start) until its marker."""
    broker, p = led_broker(tmp_path)
    produce(p, 7, 0, txn=True)                           # 0: producer 7's transaction opens
    produce(p, 8, 0, 3)                                  # 1-3
    assert p.last_stable_offset() == 0
    assert delete_records(broker, 2) == [(Errors.NONE, 2)]
    assert p.last_stable_offset() == 2
    assert described(broker) == [(7, 0, 0), (8, 2, -1)]
    marker = p.append_marker(producer_id=7, producer_epoch=0, coordinator_epoch=0, commit=True, now_ms=NOW)
    assert marker == 4
    assert p.last_stable_offset() == p.high_watermark() == 5
    assert described(broker) == [(7, 0, -1), (8, 2, -1)]
    broker.close()


def test_the_log_start_never_moves_down_nor_above_the_high_watermark(tmp_path):
    broker, p = led_broker(tmp_path)
    produce(p, 7, 0, 3)
    assert p.maybe_increment_log_start_offset(2) is True
    assert p.maybe_increment_log_start_offset(1) is False and p.log.log_start_offset == 2
    with pytest.raises(OffsetOutOfRangeError, match="larger than the high watermark 3"):
        p.maybe_increment_log_start_offset(4)
    assert p.log.log_start_offset == 2
    broker.close()


def test_the_recovery_point_checkpoint_is_never_below_the_log_start(tmp_path):
    """UnifiedLog.updateLogStartOffset moves the recovery point up to the new log start."""
    broker, p = led_broker(tmp_path)
    produce(p, 7, 0, 3)
    broker.log_manager.checkpoint_recovery_points()
    assert read_offset_checkpoint(os.path.join(broker.log_dir, "recovery-point-offset-checkpoint")) == {("t", 0): 0}
    delete_records(broker, 2)                     # inside the active segment
    broker.log_manager.checkpoint_recovery_points()
    assert read_offset_checkpoint(os.path.join(broker.log_dir, "recovery-point-offset-checkpoint")) == {("t", 0): 2}
    broker.close()


# -- retention --

def test_retention_deleting_an_open_transactions_first_segment_keeps_it_open_and_the_lso_at_the_log_start(tmp_path):
    broker, p = led_broker(tmp_path, log_retention_hours=1, log_segment_bytes=100)   # a segment a batch
    produce(p, 7, 0, txn=True, timestamp=NOW - 3 * HOUR)          # 0, expired
    produce(p, 8, 0, timestamp=NOW - 2 * HOUR)                    # 1, expired
    produce(p, 8, 1)                                              # 2
    produce(p, 8, 2)                                              # 3
    broker.state_writes.wait(p.log.directory)
    assert broker.log_manager.cleanup_logs() == 2
    assert p.log.log_start_offset == 2
    assert p.epochs.entries[0].start_offset == 2
    assert described(broker) == [(7, 0, 0), (8, 2, -1)]           # both still known, 7's transaction open
    assert p.last_stable_offset() == 2
    assert 1 not in snapshot_offsets(p.log.directory)             # the deleted segment's snapshot went with it
    broker.close()


# -- a follower following its leader's log start --

def test_a_followers_log_start_moves_through_the_same_path_and_its_producers_stay(tmp_path):
    partition = LeaderPartition.open(str(tmp_path), "t", 0, TOPIC_ID, leader_epoch=-1, segment_bytes=1 << 20,
                                     now_ms=NOW)
    follower = FollowerReplica(partition, leader_id=2, leader_epoch=1)
    for offset, (pid, txn) in enumerate(((7, True), (8, False), (8, False))):
        follower.append(build_batch([(b"k", b"v", [], NOW)], base_offset=offset, partition_leader_epoch=1,
                                    producer_id=pid, producer_epoch=0, base_sequence=offset if pid == 8 else 0,
                                    is_transactional=txn), now_ms=NOW)
    follower.update_from_leader(high_watermark=3, log_start_offset=2)
    assert partition.log.log_start_offset == 2
    assert sorted(partition.producers.producers) == [7, 8]
    assert partition.last_stable_offset() == 2                  # producer 7's transaction, open below the start
    follower.update_from_leader(high_watermark=3, log_start_offset=5)     # above the high watermark: not followed
    assert partition.log.log_start_offset == 2
    partition.close()


# -- a restart after DeleteRecords --

def reopen(tmp_path, log_start: int):
    return LeaderPartition.open(str(tmp_path), "t", 0, TOPIC_ID, leader_epoch=0, segment_bytes=1 << 20, now_ms=NOW,
                                log_start_offset=log_start)


def test_a_restart_keeps_the_producers_the_snapshot_above_the_log_start_holds(tmp_path):
    """The clean stop's snapshot at the log end holds every producer, those below the log start too."""
    broker, p = led_broker(tmp_path)
    produce(p, 7, 0, 3)
    produce(p, 8, 0, 2)
    delete_records(broker, 4)
    broker.close()
    partition = reopen(tmp_path, 4)
    assert sorted(partition.producers.producers) == [7, 8]
    partition.close()


def test_a_restart_without_snapshot_rebuilds_from_the_batch_holding_the_log_start(tmp_path):
    """Snapshots at or below the log start are deleted at load; without one above it the state is
    replayed from the log start, which is inside producer 8's batch: 8 is known, 7 (wholly below) is
    not, as Kafka's rebuild reads from the first batch ending at or after the log start."""
    broker, p = led_broker(tmp_path)
    produce(p, 7, 0, 3)                                   # 0-2
    produce(p, 8, 0, 2)                                   # 3-4
    delete_records(broker, 4)
    directory = p.log.directory
    broker.close()
    for offset in snapshot_offsets(directory):           # as after a crash before any snapshot
        os.remove(os.path.join(directory, f"{offset:020d}.snapshot"))
    partition = reopen(tmp_path, 4)
    assert sorted(partition.producers.producers) == [8]
    assert partition.producers.producers[8].last_seq == 1
    partition.close()
