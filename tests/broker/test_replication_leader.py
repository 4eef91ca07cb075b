"""The leader side's moving parts without a node: acks=all answers waiting for the high watermark
(kafkawire.broker.delayed_produce, Kafka's DelayedProduce), the AlterPartition sender
(kafkawire.broker.alter_partition, DefaultAlterPartitionManager), and a LeaderPartition's high
watermark with followers (kept from the checkpoint at becoming leader, never backwards)."""
from __future__ import annotations

import asyncio
import uuid

from kafkawire.broker.alter_partition import AlterPartitionSender
from kafkawire.broker.delayed_produce import AcksPurgatory
from kafkawire.broker.partition import LeaderPartition
from kafkawire.broker.replica_state import LeaderReplicas
from kafkawire.messages.alter_partition_response import AlterPartitionResponse, PartitionData, TopicData
from kafkawire.messages.produce_response import PartitionProduceResponse
from kafkawire.protocol.error_codes import Errors
from kafkawire.records import iter_batches
from kafkawire.records.builder import build_batch

TOPIC_ID = uuid.UUID(int=5)
KEY = ("t", 0)


def values(records: bytes) -> list[bytes]:
    """The record values in ``records`` (counting bytes would also count a CRC or timestamp byte)."""
    return [bytes(record.value) for batch in iter_batches(records) for record in batch]


class FakePartition:
    """What the purgatory reads of a partition: its high watermark and replicas."""

    def __init__(self, hw: int, replicas=None):
        self.hw, self.replicas = hw, replicas

    def high_watermark(self) -> int:
        return self.hw


def answer(base_offset: int = 7) -> PartitionProduceResponse:
    return PartitionProduceResponse(index=0, error_code=0, base_offset=base_offset, log_append_time_ms=-1,
                                    log_start_offset=0)


def test_an_acks_all_answer_waits_for_the_high_watermark_to_reach_its_batch_end():
    """DelayedProduce.tryComplete: complete once the high watermark reaches the required offset."""
    async def go():
        acks, partition, response = AcksPurgatory(), FakePartition(5), answer()
        waiting = asyncio.ensure_future(acks.wait([(KEY, partition, response, 10)], 10_000))
        await asyncio.sleep(0)
        partition.hw = 9
        acks.check(KEY, partition)
        await asyncio.sleep(0)
        assert not waiting.done() and response.error_code == Errors.REQUEST_TIMED_OUT
        partition.hw = 10
        acks.check(KEY, partition)
        await asyncio.wait_for(waiting, 5)
        assert (response.error_code, response.base_offset) == (Errors.NONE, 7)
        assert acks.waiting == {}
    asyncio.run(go())


def test_an_acks_all_answer_not_replicated_in_time_is_request_timed_out_with_its_offsets():
    """DelayedProduce: a partition still waiting at timeout_ms answers REQUEST_TIMED_OUT, its base offset kept."""
    async def go():
        acks, response = AcksPurgatory(), answer()
        await acks.wait([(KEY, FakePartition(0), response, 10)], 10)
        assert (response.error_code, response.base_offset) == (Errors.REQUEST_TIMED_OUT, 7)
    asyncio.run(go())


def test_acks_all_answers_of_a_partition_no_longer_led_are_not_leader_or_follower():
    """checkEnoughReplicasReachOffset without a leader log: NOT_LEADER_OR_FOLLOWER at once."""
    async def go():
        acks, partition, response = AcksPurgatory(), FakePartition(0), answer()
        waiting = asyncio.ensure_future(acks.wait([(KEY, partition, response, 10)], 10_000))
        await asyncio.sleep(0)
        acks.step_down({KEY: FakePartition(0)})          # another partition object: led again, or deleted
        await asyncio.wait_for(waiting, 5)
        assert response.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    asyncio.run(go())


def test_expired_answers_leave_the_heap_so_it_stays_bounded():
    """A partition whose high watermark never moves keeps no more entries than the answers waiting."""
    async def go():
        acks, partition = AcksPurgatory(), FakePartition(0)
        for _ in range(50):
            await acks.wait([(KEY, partition, answer(), 10)], 0)
        assert len(acks.waiting.get(KEY).heap if KEY in acks.waiting else []) <= 1
    asyncio.run(go())


def change(isr=((1, 10), (2, 20))):
    from kafkawire.broker.replica_state import IsrState, PendingChange
    state = IsrState(frozenset({1}), frozenset({1, 2}), "expand")
    return PendingChange(state, IsrState(frozenset({1}), frozenset({1})), 4, 6, isr)


def test_alter_partition_sends_the_waiting_changes_with_broker_epochs_and_one_request_in_flight():
    """DefaultAlterPartitionManager: v3 request with topic ids and BrokerState epochs; a second change of the
    same partition while one waits is OPERATION_NOT_ATTEMPTED; each partition's answer completes its change."""
    async def go():
        sent, results, gate = [], [], asyncio.Event()

        async def send(request, timeout_ms):
            sent.append(request)
            await gate.wait()
            return AlterPartitionResponse(topics=[TopicData(topic_id=TOPIC_ID, partitions=[PartitionData(
                partition_index=p.partition_index, leader_id=1, leader_epoch=4, isr=[1, 2], partition_epoch=7)
                for p in request.topics[0].partitions])])
        sender = AlterPartitionSender(1, send=send, broker_epoch=lambda: 10)
        first, second = change(), change()
        sender.submit(TOPIC_ID, 0, first, lambda c, r: results.append((0, r)))
        sender.submit(TOPIC_ID, 0, second, lambda c, r: results.append(("again", r)))
        sender.submit(TOPIC_ID, 1, change(), lambda c, r: results.append((1, r)))
        await asyncio.sleep(0)
        assert results == [("again", Errors.OPERATION_NOT_ATTEMPTED)]
        assert len(sent) == 1 and sent[0].broker_epoch == 10
        [p0] = sent[0].topics[0].partitions
        assert (p0.leader_epoch, p0.partition_epoch) == (4, 6)
        assert [(b.broker_id, b.broker_epoch) for b in p0.new_isr_with_epochs] == [(1, 10), (2, 20)]
        gate.set()
        for _ in range(20):
            await asyncio.sleep(0)
        assert sorted(r for r in results if r[0] != "again") == [(0, (4, [1, 2], 7)), (1, (4, [1, 2], 7))]
        assert len(sent) == 2 and sender.unsent == {}
        sender.close()
    asyncio.run(go())


def test_a_top_level_error_keeps_the_changes_and_sends_them_again():
    """handleAlterPartitionResponse: NOT_CONTROLLER (or an unreachable controller) retries after 50 ms."""
    async def go():
        answers = [AlterPartitionResponse(error_code=Errors.NOT_CONTROLLER),
                   AlterPartitionResponse(topics=[TopicData(topic_id=TOPIC_ID, partitions=[PartitionData(
                       partition_index=0, error_code=Errors.INELIGIBLE_REPLICA)])])]
        results, done = [], asyncio.Event()

        async def send(request, timeout_ms):
            return answers.pop(0)
        sender = AlterPartitionSender(1, send=send, broker_epoch=lambda: 10)
        sender.submit(TOPIC_ID, 0, change(), lambda c, r: (results.append(r), done.set()))
        await asyncio.wait_for(done.wait(), 5)
        assert results == [Errors.INELIGIBLE_REPLICA] and answers == []
        sender.close()
    asyncio.run(go())


def test_a_new_leader_keeps_its_checkpointed_high_watermark_until_the_isr_has_the_data(tmp_path):
    """Partition.makeLeader keeps the high watermark (from replication-offset-checkpoint); it moves to the
    least log end of the ISR once the followers fetched, and never backwards."""
    partition = LeaderPartition.open(str(tmp_path), "t", 0, TOPIC_ID, leader_epoch=0, high_watermark=0)
    for i in range(4):
        partition.log.append(build_batch([(None, b"v%d" % i)]), assign_offsets=True)
    partition.close()
    partition = LeaderPartition.open(str(tmp_path), "t", 0, TOPIC_ID, leader_epoch=1, high_watermark=2)
    replicas = partition.replicas = LeaderReplicas(1, max_lag_ms=30_000, broker_epoch=lambda b: 20)
    replicas.make_leader(replicas=[1, 2], isr=[1, 2], leader_epoch=1, partition_epoch=0, log_end_offset=4,
                         now_ms=0, is_new_leader=True)
    assert not partition.maybe_increment_high_watermark(0) and partition.high_watermark() == 2
    assert values(partition.read(0, 1 << 20, min_one_batch=True)) == [b"v0", b"v1"]      # consumers: below it only
    assert len(values(partition.read(0, 1 << 20, min_one_batch=True, upper=4))) == 4
    replicas.follower_fetched(2, fetch_offset=1, log_start_offset=0, now_ms=1, leader_end_offset=4, broker_epoch=20)
    assert not partition.maybe_increment_high_watermark(1) and partition.high_watermark() == 2
    replicas.follower_fetched(2, fetch_offset=3, log_start_offset=0, now_ms=2, leader_end_offset=4, broker_epoch=20)
    assert partition.maybe_increment_high_watermark(2) and partition.high_watermark() == 3
    partition.close()


def test_the_checkpointed_high_watermark_is_read_once_and_only_for_the_directory_it_was_written_for(tmp_path):
    """Partition.createLog: the replication-offset-checkpoint value; 0 for another topic id's directory."""
    from .test_log_retention import FakeBroker
    broker = FakeBroker(tmp_path)
    partition = broker.open("t", topic_id=TOPIC_ID)
    for i in range(3):
        partition.log.append(build_batch([(None, b"x")]), assign_offsets=True)
    broker.log_manager.checkpoint_high_watermarks()
    broker.close()
    again = FakeBroker(tmp_path)
    assert again.log_manager.checkpointed_high_watermark("t", 0, uuid.UUID(int=99)) == 0
    again = FakeBroker(tmp_path)
    assert again.log_manager.checkpointed_high_watermark("t", 0, TOPIC_ID) == 3
    assert again.log_manager.checkpointed_high_watermark("t", 0, TOPIC_ID) == 0


class FollowerFetchBroker:
    """What kafkawire.broker.replication.Replication reads of the broker, for a follower's fetch."""

    def __init__(self):
        from types import SimpleNamespace
        self.node_id = 1
        self.config = SimpleNamespace(replica_lag_time_max_ms=30_000)
        self.lifecycle = SimpleNamespace(broker_epoch=10)
        self.brokers = {2: SimpleNamespace(fenced=False, epoch=20, in_controlled_shutdown=False)}
        self.partitions = {}
        self.woken = 0

    def image(self):
        from types import SimpleNamespace
        return SimpleNamespace(brokers=self.brokers)

    async def send_to_controller(self, request, timeout_ms):
        raise OSError("no controller here")

    def data_appended(self):
        self.woken += 1


def two_epoch_partition(tmp_path):
    """A log of offsets 0-1 in leader epoch 0 and 2-3 in epoch 2, led in epoch 2 with follower 2."""
    partition = LeaderPartition.open(str(tmp_path), "t", 0, TOPIC_ID, leader_epoch=0, high_watermark=0)
    for epoch in (0, 2):
        partition.leader_epoch = epoch
        for _ in range(2):
            partition.log.append(build_batch([(None, b"v")]), assign_offsets=True, leader_epoch=epoch)
    partition.replicas = LeaderReplicas(1, max_lag_ms=30_000, broker_epoch=lambda b: 20)
    partition.replicas.make_leader(replicas=[1, 2], isr=[1, 2], leader_epoch=2, partition_epoch=0,
                                   log_end_offset=4, now_ms=0, is_new_leader=True)
    return partition


def follower_read(replication, partition, replica_id=2, epoch=20, **fields):
    from kafkawire.messages.fetch_request import FetchPartition
    p = FetchPartition(partition=0, **{"current_leader_epoch": 2, "log_start_offset": 0, **fields})
    return replication.read_for_follower(partition, p, replica_id, epoch, limit=1 << 20, min_one=True,
                                         update_state=True)


def test_a_follower_fetch_reads_to_the_log_end_and_answers_the_high_watermark_before_it_moved(tmp_path):
    """Partition.fetchRecords for a follower (FetchIsolation.LOG_END) and readRecords' initial high watermark;
    the fetch offset becomes the follower's log end, which moves the high watermark and wakes long polls."""
    from kafkawire.broker.replication import Replication
    broker = FollowerFetchBroker()
    replication = Replication(broker)
    partition = two_epoch_partition(tmp_path)
    data = follower_read(replication, partition, fetch_offset=0)
    assert (data.error_code, data.high_watermark, len(values(data.records))) == (0, 0, 4)
    data = follower_read(replication, partition, fetch_offset=4, last_fetched_epoch=2)
    assert (data.error_code, data.high_watermark, data.records) == (0, 0, b"")
    assert partition.high_watermark() == 4 and broker.woken == 1


def test_a_follower_fetch_from_a_diverged_epoch_gets_the_diverging_epoch_and_no_records(tmp_path):
    """readRecords: a last fetched epoch the leader ended earlier answers DivergingEpoch (epoch, end offset)
    and does not move the follower's state."""
    from kafkawire.broker.replication import Replication
    replication = Replication(FollowerFetchBroker())
    partition = two_epoch_partition(tmp_path)
    data = follower_read(replication, partition, fetch_offset=3, last_fetched_epoch=1)
    assert (data.error_code, data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (0, 0, 2)
    assert data.records == b"" and partition.replicas.followers[2].log_end_offset == -1


def test_follower_fetch_refusals_are_kafkas(tmp_path):
    """followerReplicaOrThrow (UNKNOWN_LEADER_EPOCH with a leader epoch, NOT_LEADER_OR_FOLLOWER without),
    OFFSET_OUT_OF_RANGE past the log end, NOT_LEADER_OR_FOLLOWER for a stale broker epoch."""
    from kafkawire.broker.replication import Replication
    replication = Replication(FollowerFetchBroker())
    partition = two_epoch_partition(tmp_path)
    assert follower_read(replication, partition, replica_id=3, fetch_offset=0).error_code == \
        Errors.UNKNOWN_LEADER_EPOCH
    assert follower_read(replication, partition, replica_id=3, fetch_offset=0, current_leader_epoch=-1).error_code \
        == Errors.NOT_LEADER_OR_FOLLOWER
    assert follower_read(replication, partition, fetch_offset=5).error_code == Errors.OFFSET_OUT_OF_RANGE
    stale = follower_read(replication, partition, epoch=19, fetch_offset=0)
    assert (stale.error_code, stale.records) == (Errors.NOT_LEADER_OR_FOLLOWER, b"")
